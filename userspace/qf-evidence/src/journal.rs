//! The decision journal: append-only JSON lines, one record per controller decision, each with a
//! schema version, run id, monotonic time, inputs, outcome and reason code, hash-chained to the
//! previous record (SHA-256) and fsync'd before the decision takes effect.
//!
//! A line is `{"schema":1,"run_id":…,"seq":…,"monotonic_ns":…,"prev":HEX,"entry":{…},"hash":HEX}`
//! where `hash = SHA-256(prev ‖ "\n" ‖ body)` and `body` is the line's text without the trailing
//! `,"hash":HEX` member, byte for byte as written (re-serialising parsed JSON would not do: float
//! formatting does not round-trip exactly through a parse). The
//! first record's `prev` is 64 zeros. Opening a journal verifies the whole chain; a corrupt record
//! or a truncated tail is reported with its line number and never silently accepted.

use qf_execution::qfabric_dev::monotonic_ns;
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
    #[error("journal {path}")]
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

const HASH_MEMBER: &str = ",\"hash\":\"";

/// A line is the body's JSON object with `"hash":HEX` appended as its last member.
fn join_hash(body_text: &str, hash: &str) -> String {
    let open = body_text.strip_suffix('}').unwrap_or(body_text);
    format!("{open}{HASH_MEMBER}{hash}\"}}")
}

/// Inverse of [`join_hash`]: the body text exactly as it was hashed, and the stored hash.
fn split_hash(line: &str) -> Option<(String, &str)> {
    let without_close = line.strip_suffix("\"}")?;
    let split = without_close.len().checked_sub(64 + HASH_MEMBER.len())?;
    if !without_close.is_char_boundary(split) {
        return None;
    }
    let (open, member) = without_close.split_at(split);
    let hash = member.strip_prefix(HASH_MEMBER)?;
    hash.bytes()
        .all(|b| b.is_ascii_hexdigit())
        .then(|| (format!("{open}}}"), hash))
}

fn chain_hash(prev: &str, body: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(prev.as_bytes());
    hasher.update(b"\n");
    hasher.update(body.as_bytes());
    hex::encode(hasher.finalize())
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
        let text = line.trim_end_matches('\n');
        let corrupt = |detail: String| JournalError::Corrupt {
            path: path.to_owned(),
            line: line_number,
            detail,
        };
        // The hash covers the body exactly as written: the line minus its trailing hash member.
        let (body_text, stored_hash) =
            split_hash(text).ok_or_else(|| corrupt("no trailing \"hash\" member".into()))?;
        let record: Body = serde_json::from_str(&body_text).map_err(|e| corrupt(e.to_string()))?;
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
        let expected = chain_hash(&prev, &body_text);
        if stored_hash != expected {
            return Err(broken(format!(
                "stored hash {stored_hash} but the record hashes to {expected}"
            )));
        }
        prev = expected;
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
        let mut line = join_hash(&body_text, &hash);
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

    /// Floats are hashed as written, so values whose text does not survive a parse/print round
    /// trip still verify (this failed under load before the hash covered the written bytes).
    #[test]
    fn awkward_floats_verify() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("decisions.jsonl");
        let mut journal = Journal::open(&path, "run-1").unwrap();
        let mut x = 0.1f64;
        for i in 0..300 {
            x = x * 1.000_000_7 + 0.000_013 * f64::from(i);
            journal
                .append(&json!({"latency_us": x, "tiny": x * 1e-300, "sum": 0.1 + 0.2}))
                .unwrap();
        }
        assert_eq!(verify(&path).unwrap().records, 300);
        let text = std::fs::read_to_string(&path).unwrap();
        let first = text.lines().next().unwrap();
        assert!(
            first.starts_with("{\"schema\":1,") && first.contains(",\"hash\":\""),
            "{first}"
        );
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
