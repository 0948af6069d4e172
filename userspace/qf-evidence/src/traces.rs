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

/// The most rows a trace is read with: 2,000,000, twice the most `qf profile` keeps per cell
/// and `qf evaluate --synthetic` writes per trace (1,000,000 each). At 16 bytes a sample that
/// is 32 MB in memory.
pub const MAX_TRACE_ROWS: usize = 2_000_000;

/// The largest trace file read: 128 MiB, 64 bytes a row at [`MAX_TRACE_ROWS`]; a row
/// `qf profile` writes (`75.5,1`, at most a 17-digit latency) is under 24 bytes.
pub const MAX_TRACE_BYTES: u64 = 128 << 20;

impl Trace {
    /// Reads a trace, streaming: a regular file of at most [`MAX_TRACE_BYTES`] and
    /// [`MAX_TRACE_ROWS`] rows (a FIFO or device is refused without waiting on it); errors name
    /// the file, the line and the field, or the limit.
    pub fn load(path: &Path) -> Result<Trace> {
        Trace::load_within(path, MAX_TRACE_BYTES, MAX_TRACE_ROWS)
    }

    fn load_within(path: &Path, max_bytes: u64, max_rows: usize) -> Result<Trace> {
        let file = crate::files::open_bounded(path, max_bytes)
            .with_context(|| format!("opening trace {}", path.display()))?;
        let mut reader = csv::ReaderBuilder::new()
            .trim(csv::Trim::All)
            .from_reader(file);
        let headers = reader
            .headers()
            .with_context(|| format!("trace {}: reading the header", path.display()))?;
        if headers.iter().collect::<Vec<_>>() != ["latency_us", "ok"] {
            let found = headers.iter().collect::<Vec<_>>().join(",");
            let cut = found
                .char_indices()
                .nth(64)
                .map_or(found.len(), |(at, _)| at);
            bail!(
                "trace {}: header must be `latency_us,ok`, found `{}{}`",
                path.display(),
                &found[..cut],
                if cut < found.len() { "…" } else { "" }
            );
        }
        let mut samples = Vec::new();
        for (index, row) in reader.deserialize::<Row>().enumerate() {
            let line = index + 2;
            if index == max_rows {
                bail!(
                    "trace {} line {line}: more than {max_rows} rows, the limit for a trace",
                    path.display()
                );
            }
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

    /// A FIFO with no writer is refused at once by what it is; a file over the byte limit by
    /// its size, before a byte is read (a sparse 1 TiB file: reading it would never end); a
    /// file with a row past the row limit at that row.
    #[test]
    fn a_fifo_an_oversized_file_and_too_many_rows_are_refused_naming_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("add.linux.csv");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let error = crate::files::within(move || format!("{:#}", Trace::load(&fifo).unwrap_err()));
        assert!(error.contains("add.linux.csv") && error.contains("a FIFO, not a regular file"));

        let huge = dir.path().join("add.mcu.csv");
        std::fs::File::create(&huge)
            .unwrap()
            .set_len(1 << 40)
            .unwrap();
        let error = format!("{:#}", Trace::load(&huge).unwrap_err());
        assert_eq!(
            error,
            format!(
                "opening trace {}: 1099511627776 bytes (1048576 MiB), over the limit of \
                 134217728 bytes (128 MiB)",
                huge.display()
            )
        );

        let rows = dir.path().join("rows.csv");
        std::fs::write(&rows, "latency_us,ok\n1,1\n2,1\n3,1\n").unwrap();
        assert_eq!(
            Trace::load_within(&rows, 1 << 20, 3).unwrap().samples.len(),
            3
        );
        let error = format!("{:#}", Trace::load_within(&rows, 1 << 20, 2).unwrap_err());
        assert_eq!(
            error,
            format!(
                "trace {} line 4: more than 2 rows, the limit for a trace",
                rows.display()
            )
        );
    }
}
