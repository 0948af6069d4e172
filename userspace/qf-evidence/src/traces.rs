//! Trace files: one CSV per task × domain named `TASK.DOMAIN.csv`, header `latency_us,ok`
//! (`ok` is 1 or 0), rows in measured order. Used for ordered replay and as profiles.

use crate::stats::percentile;
use anyhow::{bail, Context, Result};
use qf_decision::model::{DomainEvidence, DomainId};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// One measured invocation as replay sees it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub latency_us: f64,
    pub ok: bool,
}

/// A trace in measured order, remembering where it came from for error messages.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    pub path: PathBuf,
    pub samples: Vec<Sample>,
}

#[derive(Deserialize)]
struct Row {
    latency_us: f64,
    ok: u8,
}

/// The file name of a trace.
pub fn trace_file_name(task: &str, domain: DomainId) -> String {
    format!("{task}.{domain}.csv")
}

impl Trace {
    /// Reads a trace; errors name the file, the line and the field.
    pub fn load(path: &Path) -> Result<Trace> {
        let file = std::fs::File::open(path)
            .with_context(|| format!("opening trace {}", path.display()))?;
        let mut reader = csv::ReaderBuilder::new()
            .trim(csv::Trim::All)
            .from_reader(file);
        let headers = reader
            .headers()
            .with_context(|| format!("trace {}: reading the header", path.display()))?;
        if headers.iter().collect::<Vec<_>>() != ["latency_us", "ok"] {
            bail!(
                "trace {}: header must be `latency_us,ok`, found `{}`",
                path.display(),
                headers.iter().collect::<Vec<_>>().join(",")
            );
        }
        let mut samples = Vec::new();
        for (index, row) in reader.deserialize::<Row>().enumerate() {
            let line = index + 2;
            let row = row.with_context(|| format!("trace {} line {line}", path.display()))?;
            if !(row.latency_us >= 0.0 && row.latency_us.is_finite()) {
                bail!(
                    "trace {} line {line}: field `latency_us` = {} must be a non-negative number",
                    path.display(),
                    row.latency_us
                );
            }
            if row.ok > 1 {
                bail!(
                    "trace {} line {line}: field `ok` = {} must be 0 or 1",
                    path.display(),
                    row.ok
                );
            }
            samples.push(Sample {
                latency_us: row.latency_us,
                ok: row.ok == 1,
            });
        }
        Ok(Trace {
            path: path.to_owned(),
            samples,
        })
    }

    /// Writes samples in the trace format.
    pub fn write(path: &Path, samples: &[Sample]) -> Result<()> {
        let mut text = String::with_capacity(16 * samples.len() + 16);
        text.push_str("latency_us,ok\n");
        for sample in samples {
            text.push_str(&format!("{},{}\n", sample.latency_us, u8::from(sample.ok)));
        }
        std::fs::write(path, text).with_context(|| format!("writing trace {}", path.display()))
    }

    /// Loads `DIR/TASK.DOMAIN.csv` if it exists.
    pub fn load_optional(dir: &Path, task: &str, domain: DomainId) -> Result<Option<Trace>> {
        let path = dir.join(trace_file_name(task, domain));
        if path.exists() {
            Trace::load(&path).map(Some)
        } else {
            Ok(None)
        }
    }

    pub fn latencies(&self) -> Vec<f64> {
        self.samples.iter().map(|s| s.latency_us).collect()
    }

    /// Profile evidence: sample count and p95 latency.
    pub fn evidence(&self) -> DomainEvidence {
        DomainEvidence {
            samples: self.samples.len(),
            q95_us: percentile(&self.latencies(), 0.95).unwrap_or(f64::NAN),
        }
    }

    /// p99 latency (for the deadline rule).
    pub fn p99_us(&self) -> Option<f64> {
        percentile(&self.latencies(), 0.99)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_bad_rows_with_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(trace_file_name("add", DomainId::Linux));
        let samples = [
            Sample {
                latency_us: 75.5,
                ok: true,
            },
            Sample {
                latency_us: 80.0,
                ok: false,
            },
        ];
        Trace::write(&path, &samples).unwrap();
        assert_eq!(Trace::load(&path).unwrap().samples, samples);

        std::fs::write(&path, "latency_us,ok\n1,1\n2,2\n").unwrap();
        let err = format!("{:#}", Trace::load(&path).unwrap_err());
        assert!(err.contains("line 3") && err.contains("`ok`"), "{err}");
        std::fs::write(&path, "latency,ok\n1,1\n").unwrap();
        assert!(format!("{:#}", Trace::load(&path).unwrap_err()).contains("header"));
        std::fs::write(&path, "latency_us,ok\nabc,1\n").unwrap();
        assert!(format!("{:#}", Trace::load(&path).unwrap_err()).contains("line 2"));
    }
}
