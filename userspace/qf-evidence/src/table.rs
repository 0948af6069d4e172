//! The tables every report writes: rows of cells rendered to Markdown and CSV, the millisecond
//! unit they share, and the CSV reader for their raw inputs. Used by [`crate::report`] and by
//! the Section VIII-A tables of [`crate::boundary`] and [`crate::dispatch`].

use anyhow::{Context, Result};
use std::fmt::Write as _;
use std::path::Path;

/// A table kept as rows of cells, rendered to both Markdown and CSV.
#[derive(Debug, Clone, Default)]
pub struct Table {
    pub title: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub(crate) fn new(title: &str, header: &[&str]) -> Self {
        Self {
            title: title.into(),
            header: header.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    pub fn markdown(&self) -> String {
        let mut text = format!(
            "## {}\n\n| {} |\n|{}\n",
            self.title,
            self.header.join(" | "),
            " --- |".repeat(self.header.len())
        );
        for row in &self.rows {
            let _ = writeln!(text, "| {} |", row.join(" | "));
        }
        text
    }

    pub fn csv(&self) -> Result<String> {
        let mut writer = csv::Writer::from_writer(Vec::new());
        writer.write_record(&self.header)?;
        for row in &self.rows {
            writer.write_record(row)?;
        }
        Ok(String::from_utf8(writer.into_inner()?)?)
    }
}

/// Microseconds shown as milliseconds with three decimals, the unit of every table.
pub(crate) fn ms(us: f64) -> String {
    format!("{:.3}", us / 1000.0)
}

/// Every row of a CSV file with a header, each error naming the file and line.
pub(crate) fn read_csv<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>> {
    let mut reader =
        csv::Reader::from_path(path).with_context(|| format!("opening {}", path.display()))?;
    reader
        .deserialize()
        .enumerate()
        .map(|(index, row)| row.with_context(|| format!("{} line {}", path.display(), index + 2)))
        .collect()
}
