//! The decision journal: append-only JSON lines, one record per controller decision, each with a
//! schema version, run id, monotonic time, inputs, outcome and reason code, hash-chained to the
//! previous record (SHA-256) and fsync'd before the decision takes effect.
//!
//! A line is `{"schema":1,"run_id":…,"seq":…,"monotonic_ns":…,"prev":HEX,"entry":{…},"hash":HEX}`
//! where `hash = SHA-256(prev ‖ "\n" ‖ body)` and `body` is the line's JSON without `hash`. The
//! first record's `prev` is 64 zeros. Opening a journal verifies the whole chain; a corrupt record
//! or a truncated tail is reported with its line number and never silently accepted.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

/// Version of the record layout.
pub const SCHEMA_VERSION: u32 = 1;
const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Why a journal cannot be trusted or written.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("journal {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("journal {path} line {line}: truncated tail (no final newline or incomplete record); refusing to append")]
    TruncatedTail { path: PathBuf, line: usize },
    #[error("journal {path} line {line}: not a journal record ({detail})")]
    Corrupt {
        path: PathBuf,
        line: usize,
        detail: String,
    },
    #[error("journal {path} line {line}: hash chain broken ({detail})")]
    ChainBroken {
        path: PathBuf,
        line: usize,
        detail: String,
    },
    #[error(
        "journal {path} line {line}: schema version {found}, this build reads {SCHEMA_VERSION}"
    )]
    Schema {
        path: PathBuf,
        line: usize,
        found: u32,
    },
    #[error("journal entry does not serialize: {0}")]
    Encode(#[from] serde_json::Error),
}

/// The part of a line that is hashed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct Body {
    schema: u32,
    run_id: String,
    seq: u64,
    monotonic_ns: u64,
    prev: String,
    entry: serde_json::Value,
}

/// A full line.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Record {
    pub schema: u32,
    pub run_id: String,
    pub seq: u64,
    pub monotonic_ns: u64,
    pub prev: String,
    pub entry: serde_json::Value,
    pub hash: String,
}

fn chain_hash(prev: &str, body: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(prev.as_bytes());
    hasher.update(b"\n");
    hasher.update(body.as_bytes());
    hex::encode(hasher.finalize())
}

/// CLOCK_MONOTONIC in nanoseconds.
pub fn monotonic_ns() -> u64 {
    let now = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .unwrap_or(nix::sys::time::TimeSpec::new(0, 0));
    (now.tv_sec() as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(now.tv_nsec() as u64)
}

/// Summary of a verified journal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub records: u64,
    pub last_hash: String,
}

/// Verifies every record of an existing journal.
pub fn verify(path: &Path) -> Result<Verified, JournalError> {
    let io = |source| JournalError::Io {
        path: path.to_owned(),
        source,
    };
    let file = File::open(path).map_err(io)?;
    let mut reader = BufReader::new(file);
    let mut prev = GENESIS.to_owned();
    let mut records = 0u64;
    let mut line_number = 0usize;
    let mut line = String::new();
    loop {
        line.clear();
        let read = reader.read_line(&mut line).map_err(io)?;
        if read == 0 {
            break;
        }
        line_number += 1;
        if !line.ends_with('\n') {
            return Err(JournalError::TruncatedTail {
                path: path.to_owned(),
                line: line_number,
            });
        }
        let record: Record =
            serde_json::from_str(line.trim_end()).map_err(|e| JournalError::Corrupt {
                path: path.to_owned(),
                line: line_number,
                detail: e.to_string(),
            })?;
        if record.schema != SCHEMA_VERSION {
            return Err(JournalError::Schema {
                path: path.to_owned(),
                line: line_number,
                found: record.schema,
            });
        }
        let broken = |detail: String| JournalError::ChainBroken {
            path: path.to_owned(),
            line: line_number,
            detail,
        };
        if record.prev != prev {
            return Err(broken(format!(
                "prev {} does not match the previous record's hash {prev}",
                record.prev
            )));
        }
        if record.seq != records {
            return Err(broken(format!(
                "seq {} where {records} was expected",
                record.seq
            )));
        }
        let body = Body {
            schema: record.schema,
            run_id: record.run_id.clone(),
            seq: record.seq,
            monotonic_ns: record.monotonic_ns,
            prev: record.prev.clone(),
            entry: record.entry.clone(),
        };
        let expected = chain_hash(&prev, &serde_json::to_string(&body)?);
        if record.hash != expected {
            return Err(broken(format!(
                "stored hash {} but the record hashes to {expected}",
                record.hash
            )));
        }
        prev = record.hash;
        records += 1;
    }
    Ok(Verified {
        records,
        last_hash: prev,
    })
}

/// An open journal, positioned after its last verified record.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: File,
    run_id: String,
    next_seq: u64,
    last_hash: String,
}

impl Journal {
    /// Opens (or creates) a journal for appending, after verifying everything already in it.
    pub fn open(path: &Path, run_id: &str) -> Result<Journal, JournalError> {
        let verified = if path.exists() {
            verify(path)?
        } else {
            Verified {
                records: 0,
                last_hash: GENESIS.to_owned(),
            }
        };
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|source| JournalError::Io {
                path: path.to_owned(),
                source,
            })?;
        Ok(Journal {
            path: path.to_owned(),
            file,
            run_id: run_id.to_owned(),
            next_seq: verified.records,
            last_hash: verified.last_hash,
        })
    }

    /// Appends one record and fsyncs it; returns the record's hash.
    pub fn append(&mut self, entry: &impl Serialize) -> Result<String, JournalError> {
        let body = Body {
            schema: SCHEMA_VERSION,
            run_id: self.run_id.clone(),
            seq: self.next_seq,
            monotonic_ns: monotonic_ns(),
            prev: self.last_hash.clone(),
            entry: serde_json::to_value(entry)?,
        };
        let body_text = serde_json::to_string(&body)?;
        let hash = chain_hash(&self.last_hash, &body_text);
        let record = Record {
            schema: body.schema,
            run_id: body.run_id,
            seq: body.seq,
            monotonic_ns: body.monotonic_ns,
            prev: body.prev,
            entry: body.entry,
            hash: hash.clone(),
        };
        let mut line = serde_json::to_string(&record)?;
        line.push('\n');
        let io = |source| JournalError::Io {
            path: self.path.clone(),
            source,
        };
        self.file.write_all(line.as_bytes()).map_err(io)?;
        self.file.sync_data().map_err(io)?;
        self.next_seq += 1;
        self.last_hash = hash.clone();
        Ok(hash)
    }

    pub fn records(&self) -> u64 {
        self.next_seq
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// A run id unique enough for one host: seconds since the epoch, process id, monotonic ns.
pub fn new_run_id() -> String {
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format!(
        "{wall}-{}-{:x}",
        std::process::id(),
        monotonic_ns() & 0xffff_ffff
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn journal_with(records: usize) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("decisions.jsonl");
        let mut journal = Journal::open(&path, "run-1").unwrap();
        for i in 0..records {
            journal
                .append(&json!({"action": "reject", "reason": "active_cooldown", "window": i}))
                .unwrap();
        }
        (dir, path)
    }

    #[test]
    fn a_reopened_journal_continues_the_chain() {
        let (_dir, path) = journal_with(3);
        let mut journal = Journal::open(&path, "run-2").unwrap();
        assert_eq!(journal.records(), 3);
        journal.append(&json!({"action": "switch"})).unwrap();
        assert_eq!(verify(&path).unwrap().records, 4);
    }

    #[test]
    fn tampering_with_any_field_breaks_the_chain() {
        let (_dir, path) = journal_with(3);
        let text = std::fs::read_to_string(&path).unwrap();
        let tampered = text.replacen("\"window\":1", "\"window\":7", 1);
        assert_ne!(text, tampered);
        std::fs::write(&path, tampered).unwrap();
        let err = Journal::open(&path, "run-2").unwrap_err();
        assert!(
            matches!(err, JournalError::ChainBroken { line: 2, .. }),
            "{err}"
        );
    }

    #[test]
    fn deleting_a_record_is_detected() {
        let (_dir, path) = journal_with(3);
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        std::fs::write(&path, format!("{}\n{}\n", lines[0], lines[2])).unwrap();
        assert!(matches!(
            verify(&path).unwrap_err(),
            JournalError::ChainBroken { line: 2, .. }
        ));
    }

    #[test]
    fn a_truncated_tail_is_reported_not_accepted() {
        let (_dir, path) = journal_with(2);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, &text[..text.len() - 10]).unwrap();
        let err = Journal::open(&path, "run-2").unwrap_err();
        assert!(
            matches!(err, JournalError::TruncatedTail { line: 2, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("truncated"));
    }

    #[test]
    fn garbage_is_corrupt_with_its_line() {
        let (_dir, path) = journal_with(1);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("not json\n");
        std::fs::write(&path, text).unwrap();
        assert!(matches!(
            verify(&path).unwrap_err(),
            JournalError::Corrupt { line: 2, .. }
        ));
    }
}
