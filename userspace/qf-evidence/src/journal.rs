//! The decision journal: append-only JSON lines, one record per controller decision, each with a
//! schema version, run id, monotonic time, inputs, outcome and reason code, hash-chained to the
//! previous record and fsync'd before the decision takes effect.
//!
//! A line is `{"schema":1,"run_id":…,"seq":…,"monotonic_ns":…,"prev":HEX,"entry":{…},"hash":HEX}`
//! where `hash = SHA-256(prev ‖ "\n" ‖ body)` and `body` is the line's text without the trailing
//! `,"hash":HEX` member, byte for byte as written (re-serialising parsed JSON would not do: float
//! formatting does not round-trip exactly through a parse). The first record's `prev` is 64
//! zeros. A **keyed** journal (see [`JournalOptions::key`]) uses HMAC-SHA256 under a secret key
//! instead and says so in every record (`"mac":"hmac-sha256"` in the body).
//!
//! Opening a journal takes an exclusive lock (a second writer fails at once, naming the holder's
//! pid) and verifies the whole chain. A torn last record (no final newline: a crash or a full disk
//! mid-write) is expected in any append-only log: it is cut off, saved next to the journal
//! (`JOURNAL.torn-SECONDS`) and the cut is journaled. Anything else that does not verify (a
//! damaged record, a broken chain, a record after a torn one) is reported with its line number
//! and never silently accepted. An **anchor** (see [`JournalOptions::anchor`]) keeps the chain's
//! head outside the file, so a shortened, emptied or re-hashed journal no longer verifies.
//! Reading is bounded: the journal must be a regular file (a FIFO is refused, not waited on), a
//! record is at most [`RECORD_MAX`] bytes (a longer line followed by others is corrupt), a torn
//! tail is copied aside through a buffer, and the key and the anchor are read only as small
//! regular files ([`crate::files`]).
//!
//! What each mode detects:
//! * plain chain: any changed, inserted, deleted or reordered record *followed by intact ones*;
//!   not a deleted tail, an emptied file, nor an edit whose author recomputed every later hash;
//! * plus anchor: also a deleted tail, an emptied or replaced file and any re-hashed edit up to
//!   the anchored head, unless the anchor was rewritten as well;
//! * keyed: also a re-hashed edit anywhere, by anyone without the key (and a keyed journal
//!   rewritten as a plain one); with the anchor, also a deleted tail. No mode protects against
//!   someone who holds the key and can write the anchor.

use crate::files::{open_regular, read_regular};
use hmac::{Hmac, Mac};
use qf_execution::qfabric_dev::monotonic_ns;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Version of the record layout.
pub const SCHEMA_VERSION: u32 = 1;
const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";
/// The `mac` a keyed journal's records carry.
pub const KEYED_MAC: &str = "hmac-sha256";
/// Shortest journal key accepted, in bytes.
pub const MIN_KEY_LEN: usize = 32;
/// Longest journal key read, in bytes.
pub const KEY_MAX: u64 = 4096;
/// Longest record read, in bytes: a longer line followed by others is corrupt (the daemon's
/// records are a few KiB at most).
pub const RECORD_MAX: u64 = 1 << 20;
/// Longest anchor read, in bytes (one line of JSON: a count and a hash).
const ANCHOR_MAX: u64 = 4096;

/// Why a journal cannot be trusted or written.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("journal {path}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("journal {path} line {line}: truncated tail (no final newline or incomplete record); opening it for appending cuts the torn record off")]
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
    #[error("journal {path} line {line}: {detail}")]
    Mode {
        path: PathBuf,
        line: usize,
        detail: String,
    },
    #[error("journal {path} does not match its anchor {anchor}: {detail}; to start a new journal on purpose, move the journal and the anchor away")]
    Anchor {
        path: PathBuf,
        anchor: PathBuf,
        detail: String,
    },
    #[error("cannot take the lock {path}")]
    Lock {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is locked by another process{holder}; one writer at a time")]
    Locked { path: PathBuf, holder: String },
    #[error("journal key {path}: {detail}")]
    Key { path: PathBuf, detail: String },
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mac: Option<String>,
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

fn chain_hash(key: Option<&[u8]>, prev: &str, body: &str) -> String {
    match key {
        None => {
            let mut hasher = Sha256::new();
            hasher.update(prev.as_bytes());
            hasher.update(b"\n");
            hasher.update(body.as_bytes());
            hex::encode(hasher.finalize())
        }
        Some(key) => {
            // HMAC accepts keys of any length; `new_from_slice` cannot fail for it.
            let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key)
                .unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
            mac.update(prev.as_bytes());
            mac.update(b"\n");
            mac.update(body.as_bytes());
            hex::encode(mac.finalize().into_bytes())
        }
    }
}

/// Summary of a verified journal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub records: u64,
    pub last_hash: String,
    /// Whether the records are keyed (HMAC-SHA256).
    pub keyed: bool,
}

/// What a scan found besides the verified records.
#[derive(Debug, Default)]
struct Scan {
    /// Bytes of the complete, verified records.
    complete_len: u64,
    /// A torn last record: its line number.
    torn_line: Option<usize>,
    /// The hash of record `seq` (asked for by an anchor), if the journal has it.
    hash_at: Option<String>,
}

/// Verifies every record of an existing journal (plain or keyed: a keyed journal needs `key`).
pub fn verify(path: &Path) -> Result<Verified, JournalError> {
    verify_with(path, None)
}

/// [`verify`] with the key of a keyed journal.
pub fn verify_with(path: &Path, key: Option<&[u8]>) -> Result<Verified, JournalError> {
    let (verified, scan) = scan(path, key, None)?;
    match scan.torn_line {
        Some(line) => Err(JournalError::TruncatedTail {
            path: path.to_owned(),
            line,
        }),
        None => Ok(verified),
    }
}

fn scan(
    path: &Path,
    key: Option<&[u8]>,
    want_hash_of: Option<u64>,
) -> Result<(Verified, Scan), JournalError> {
    let io = |source| JournalError::Io {
        path: path.to_owned(),
        source,
    };
    let (file, _) = open_regular(path).map_err(io)?;
    let mut reader = BufReader::new(file);
    let mut prev = GENESIS.to_owned();
    let mut records = 0u64;
    let mut line_number = 0usize;
    let mut found = Scan::default();
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = (&mut reader)
            .take(RECORD_MAX + 1)
            .read_until(b'\n', &mut line)
            .map_err(io)?;
        if read == 0 {
            break;
        }
        line_number += 1;
        let corrupt = |detail: String| JournalError::Corrupt {
            path: path.to_owned(),
            line: line_number,
            detail,
        };
        if line.last() != Some(&b'\n') {
            if line.len() as u64 > RECORD_MAX && newline_ahead(&mut reader).map_err(io)? {
                return Err(corrupt(format!(
                    "longer than {RECORD_MAX} bytes, the limit of a record"
                )));
            }
            // Only the last line can lack its newline: a torn record.
            found.torn_line = Some(line_number);
            break;
        }
        let Ok(text) = std::str::from_utf8(&line) else {
            // Bytes that are not UTF-8 on the last line are a torn record too.
            if newline_ahead(&mut reader).map_err(io)? {
                return Err(corrupt("not UTF-8".into()));
            }
            found.torn_line = Some(line_number);
            break;
        };
        let text = text.trim_end_matches('\n');
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
        let mode = |detail: &str| JournalError::Mode {
            path: path.to_owned(),
            line: line_number,
            detail: detail.to_owned(),
        };
        match (record.mac.as_deref(), key) {
            (None, None) => {}
            (Some(KEYED_MAC), Some(_)) => {}
            (Some(KEYED_MAC), None) => {
                return Err(mode(
                    "a keyed record (hmac-sha256); verifying it needs the key",
                ))
            }
            (None, Some(_)) => {
                return Err(mode(
                    "an unkeyed record where the journal is keyed (rewritten without the key?)",
                ))
            }
            (Some(_), _) => return Err(mode("an unknown \"mac\"")),
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
        let expected = chain_hash(key, &prev, &body_text);
        if stored_hash != expected {
            return Err(broken(format!(
                "stored hash {stored_hash} but the record hashes to {expected}"
            )));
        }
        if want_hash_of == Some(records) {
            found.hash_at = Some(expected.clone());
        }
        prev = expected;
        records += 1;
        found.complete_len += line.len() as u64;
    }
    Ok((
        Verified {
            records,
            last_hash: prev,
            keyed: key.is_some(),
        },
        found,
    ))
}

/// Whether a newline follows in what is left of `reader` (read through, never kept).
fn newline_ahead(reader: &mut impl BufRead) -> std::io::Result<bool> {
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return Ok(false);
        }
        if chunk.contains(&b'\n') {
            return Ok(true);
        }
        let len = chunk.len();
        reader.consume(len);
    }
}

/// An exclusive `flock` on a file holding the holder's pid, released when dropped (or when the
/// process dies, however it dies).
#[derive(Debug)]
pub struct PidLock {
    _lock: nix::fcntl::Flock<File>,
    path: PathBuf,
}

impl PidLock {
    /// Takes the lock on `path` (created if missing) without waiting; if another process holds
    /// it, fails at once naming that process's pid.
    pub fn acquire(path: &Path) -> Result<PidLock, JournalError> {
        let io = |source| JournalError::Lock {
            path: path.to_owned(),
            source,
        };
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(io)?;
        let mut lock =
            match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
                Ok(lock) => lock,
                Err((mut file, nix::errno::Errno::EWOULDBLOCK)) => {
                    let mut pid = String::new();
                    let _ = file.read_to_string(&mut pid);
                    let pid = pid.trim();
                    return Err(JournalError::Locked {
                        path: path.to_owned(),
                        holder: if pid.is_empty() {
                            String::new()
                        } else {
                            format!(" (pid {pid})")
                        },
                    });
                }
                Err((_, errno)) => return Err(io(errno.into())),
            };
        let write = |file: &mut File| -> std::io::Result<()> {
            file.set_len(0)?;
            file.seek(SeekFrom::Start(0))?;
            writeln!(file, "{}", std::process::id())?;
            file.sync_data()
        };
        write(&mut lock).map_err(io)?;
        Ok(PidLock {
            _lock: lock,
            path: path.to_owned(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The chain's head kept outside the journal: `{"records":N,"head":HEX}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Anchor {
    pub records: u64,
    pub head: String,
}

impl Anchor {
    /// Reads an anchor; `None` if the file does not exist.
    pub fn read(path: &Path) -> Result<Option<Anchor>, JournalError> {
        match read_regular(path, ANCHOR_MAX) {
            Ok(text) => {
                serde_json::from_slice(&text)
                    .map(Some)
                    .map_err(|e| JournalError::Corrupt {
                        path: path.to_owned(),
                        line: 1,
                        detail: format!("not a journal anchor: {e}"),
                    })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(JournalError::Io {
                path: path.to_owned(),
                source,
            }),
        }
    }

    /// Writes the anchor durably (a temporary file, fsync'd, renamed over the old one).
    pub fn write(&self, path: &Path) -> Result<(), JournalError> {
        let temporary = path.with_extension("tmp");
        let write = || -> std::io::Result<()> {
            let mut file = File::create(&temporary)?;
            writeln!(file, "{}", serde_json::to_string(self)?)?;
            file.sync_all()?;
            std::fs::rename(&temporary, path)
        };
        write().map_err(|source| JournalError::Io {
            path: path.to_owned(),
            source,
        })
    }
}

/// Reads a journal key: at least [`MIN_KEY_LEN`] and at most [`KEY_MAX`] bytes, in a regular
/// file no one but its owner may read or write (mode 0600 or 0400).
pub fn read_key(path: &Path) -> Result<Vec<u8>, JournalError> {
    use std::os::unix::fs::PermissionsExt;
    let key_error = |detail: String| JournalError::Key {
        path: path.to_owned(),
        detail,
    };
    let meta = std::fs::metadata(path).map_err(|e| key_error(e.to_string()))?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(key_error(format!(
            "mode {mode:04o} lets others read or write it; chmod 600 it"
        )));
    }
    let key = read_regular(path, KEY_MAX).map_err(|e| key_error(e.to_string()))?;
    if key.len() < MIN_KEY_LEN {
        return Err(key_error(format!(
            "{} bytes; a key has at least {MIN_KEY_LEN} (e.g. head -c 32 /dev/urandom)",
            key.len()
        )));
    }
    Ok(key)
}

/// How a journal is opened.
#[derive(Debug, Clone, Default)]
pub struct JournalOptions {
    /// The HMAC-SHA256 key of a keyed journal (see [`read_key`]).
    pub key: Option<Vec<u8>>,
    /// Where the chain's head is kept outside the journal, updated after every append.
    pub anchor: Option<PathBuf>,
}

/// An open journal, positioned after its last verified record.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: File,
    run_id: String,
    next_seq: u64,
    last_hash: String,
    /// Bytes of verified records (where the next record starts).
    len: u64,
    options: JournalOptions,
    /// Records the journal held when its anchor was found missing (see
    /// [`Journal::anchor_missing`]).
    anchor_missing: Option<u64>,
    _lock: PidLock,
}

/// What a missing anchor means, in words: `records` records were not checked against it.
pub fn anchor_missing_warning(anchor: &Path, records: u64) -> String {
    format!(
        "WARNING: the journal's anchor {} was missing while the journal held {records} record(s): those records were not checked against it, so a deleted tail or re-hashed records before it would go unnoticed (the anchor has been written again from the journal as it is)",
        anchor.display()
    )
}

impl Journal {
    /// Opens (or creates) a plain journal for appending (see [`Journal::open_with`]).
    pub fn open(path: &Path, run_id: &str) -> Result<Journal, JournalError> {
        Self::open_with(path, run_id, JournalOptions::default())
    }

    /// Opens (or creates) a journal for appending: takes the lock (`JOURNAL.lock`), verifies
    /// everything already in it (against the anchor, if any), and cuts off a torn last record,
    /// saving it to `JOURNAL.torn-SECONDS` and journaling the cut.
    pub fn open_with(
        path: &Path,
        run_id: &str,
        options: JournalOptions,
    ) -> Result<Journal, JournalError> {
        let mut lock_path = path.as_os_str().to_owned();
        lock_path.push(".lock");
        let lock = PidLock::acquire(Path::new(&lock_path))?;
        let io = |source| JournalError::Io {
            path: path.to_owned(),
            source,
        };
        let anchor = match &options.anchor {
            Some(anchor) => Anchor::read(anchor)?,
            None => None,
        };
        let key = options.key.as_deref();
        let (verified, found) = if path.exists() {
            scan(
                path,
                key,
                anchor.as_ref().and_then(|a| a.records.checked_sub(1)),
            )?
        } else {
            let verified = Verified {
                records: 0,
                last_hash: GENESIS.to_owned(),
                keyed: key.is_some(),
            };
            (verified, Scan::default())
        };
        if let (Some(anchor), Some(anchor_path)) = (&anchor, &options.anchor) {
            let mismatch = |detail: String| JournalError::Anchor {
                path: path.to_owned(),
                anchor: anchor_path.clone(),
                detail,
            };
            if verified.records < anchor.records {
                return Err(mismatch(format!(
                    "the journal holds {} records but the anchor vouches for {} (records deleted, or the file emptied or replaced)",
                    verified.records, anchor.records
                )));
            }
            let head = if anchor.records == 0 {
                Some(GENESIS.to_owned())
            } else {
                found.hash_at.clone()
            };
            if head.as_deref() != Some(anchor.head.as_str()) {
                return Err(mismatch(format!(
                    "record {} hashes to {} but the anchor says {} (records rewritten)",
                    anchor.records,
                    head.unwrap_or_default(),
                    anchor.head
                )));
            }
        }
        // An anchored journal with records but no anchor: someone removed it (or the journal
        // came from elsewhere); what it vouched for cannot be checked any more.
        let anchor_missing = (options.anchor.is_some() && anchor.is_none() && verified.records > 0)
            .then_some(verified.records);
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(path)
            .map_err(io)?;
        let mut torn = None;
        if let Some(line) = found.torn_line {
            let copy = cut_torn_tail(path, &mut file, found.complete_len).map_err(io)?;
            torn = Some((line, copy));
        }
        let mut journal = Journal {
            path: path.to_owned(),
            file,
            run_id: run_id.to_owned(),
            next_seq: verified.records,
            last_hash: verified.last_hash,
            len: found.complete_len,
            options,
            anchor_missing,
            _lock: lock,
        };
        if let (Some(records), Some(anchor)) = (anchor_missing, &journal.options.anchor) {
            let anchor = anchor.clone();
            journal.append(&serde_json::json!({
                "event": "anchor_missing",
                "anchor": anchor,
                "records": records,
            }))?;
        }
        if let Some((line, (copy, bytes))) = torn {
            journal.append(&serde_json::json!({
                "event": "torn_tail_recovered",
                "line": line,
                "bytes": bytes,
                "saved_to": copy,
            }))?;
        }
        Ok(journal)
    }

    /// Appends one record and fsyncs it (then the anchor, if any); returns the record's hash. A
    /// record that could not be written whole is cut off again, so a failed append (a full
    /// disk) leaves the journal as it was.
    pub fn append(&mut self, entry: &impl Serialize) -> Result<String, JournalError> {
        let key = self.options.key.as_deref();
        let body = Body {
            schema: SCHEMA_VERSION,
            run_id: self.run_id.clone(),
            seq: self.next_seq,
            monotonic_ns: monotonic_ns(),
            mac: key.map(|_| KEYED_MAC.to_owned()),
            prev: self.last_hash.clone(),
            entry: serde_json::to_value(entry)?,
        };
        let body_text = serde_json::to_string(&body)?;
        let hash = chain_hash(key, &self.last_hash, &body_text);
        let mut line = join_hash(&body_text, &hash);
        line.push('\n');
        let written = self
            .file
            .write_all(line.as_bytes())
            .and_then(|()| self.file.sync_data());
        if let Err(source) = written {
            let _ = self.file.set_len(self.len);
            return Err(JournalError::Io {
                path: self.path.clone(),
                source,
            });
        }
        self.len += line.len() as u64;
        self.next_seq += 1;
        self.last_hash = hash.clone();
        if let Some(anchor) = &self.options.anchor {
            // Written after every append, so only a removal since then makes it missing.
            if self.anchor_missing.is_none()
                && self.next_seq > 1
                && std::fs::symlink_metadata(anchor).is_err()
            {
                self.anchor_missing = Some(self.next_seq - 1);
            }
            Anchor {
                records: self.next_seq,
                head: hash.clone(),
            }
            .write(anchor)?;
        }
        Ok(hash)
    }

    pub fn records(&self) -> u64 {
        self.next_seq
    }

    /// With an anchor: `Some(N)` when the anchor was missing, at open or removed since, while
    /// the journal held `N` records, which therefore were not checked against it (see
    /// [`anchor_missing_warning`]). The anchor is written again at every append.
    pub fn anchor_missing(&self) -> Option<u64> {
        self.anchor_missing
    }

    /// The hash of the last record (the chain's head).
    pub fn head(&self) -> &str {
        &self.last_hash
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Saves the bytes after `keep` to `JOURNAL.torn-SECONDS` (fsync'd) and truncates the journal
/// to `keep`; returns the copy's path and the number of bytes cut.
fn cut_torn_tail(path: &Path, file: &mut File, keep: u64) -> std::io::Result<(PathBuf, u64)> {
    file.seek(SeekFrom::Start(keep))?;
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut copy = path.as_os_str().to_owned();
    copy.push(format!(".torn-{seconds}"));
    let copy = PathBuf::from(copy);
    let mut saved = OpenOptions::new().create(true).append(true).open(&copy)?;
    // Copied through a buffer: a torn tail can be as long as the disk allowed.
    let torn = std::io::copy(file, &mut saved)?;
    saved.sync_all()?;
    file.set_len(keep)?;
    file.sync_all()?;
    Ok((copy, torn))
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

    /// A torn last record (a crash or a full disk mid-write) is cut off when the journal is
    /// opened for appending, saved next to it and the cut journaled; `verify` still reports it.
    /// Before, every later start failed with "truncated tail ... refusing to append".
    #[test]
    fn a_torn_tail_is_cut_saved_and_journaled_on_open() {
        let (dir, path) = journal_with(2);
        let text = std::fs::read_to_string(&path).unwrap();
        let torn = "{\"schema\":1,\"run_id\":\"run-1\",\"seq\":2,\"monot";
        std::fs::write(&path, format!("{text}{torn}")).unwrap();
        let err = verify(&path).unwrap_err();
        assert!(
            matches!(err, JournalError::TruncatedTail { line: 3, .. }),
            "{err}"
        );
        let mut journal = Journal::open(&path, "run-2").unwrap();
        assert_eq!(journal.records(), 3, "two records and the recovery record");
        journal.append(&json!({"action": "switch"})).unwrap();
        drop(journal);
        assert_eq!(verify(&path).unwrap().records, 4);
        let now = std::fs::read_to_string(&path).unwrap();
        let recovery: serde_json::Value =
            serde_json::from_str(now.lines().nth(2).unwrap()).unwrap();
        assert_eq!(recovery["entry"]["event"], "torn_tail_recovered");
        assert_eq!(recovery["entry"]["line"], 3);
        assert_eq!(recovery["entry"]["bytes"], torn.len());
        let copy = PathBuf::from(recovery["entry"]["saved_to"].as_str().unwrap());
        assert!(copy.starts_with(dir.path()));
        assert_eq!(std::fs::read_to_string(copy).unwrap(), torn);
    }

    /// Torn bytes that are not even UTF-8 are a torn tail too; a damaged record in the middle
    /// still refuses, as before.
    #[test]
    fn torn_binary_is_cut_but_a_damaged_middle_record_refuses() {
        let (_dir, path) = journal_with(2);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend_from_slice(&[0xff, 0xfe, b'{']);
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(Journal::open(&path, "run-2").unwrap().records(), 3);
        let (_dir, path) = journal_with(3);
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines: Vec<&str> = text.lines().collect();
        let half = &lines[1][..lines[1].len() / 2];
        lines[1] = half;
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let err = Journal::open(&path, "run-2").unwrap_err();
        assert!(
            matches!(err, JournalError::Corrupt { line: 2, .. }),
            "{err}"
        );
    }

    /// Two writers on one journal broke the chain; the second now fails at once, by pid.
    #[test]
    fn a_second_writer_is_refused_naming_the_holder() {
        let (_dir, path) = journal_with(1);
        let first = Journal::open(&path, "run-2").unwrap();
        let err = Journal::open(&path, "run-3").unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, JournalError::Locked { .. }), "{text}");
        assert!(
            text.contains(&format!("(pid {})", std::process::id())),
            "{text}"
        );
        drop(first);
        Journal::open(&path, "run-3").unwrap();
    }

    fn anchored(dir: &Path, key: Option<Vec<u8>>) -> JournalOptions {
        JournalOptions {
            key,
            anchor: Some(dir.join("journal.anchor")),
        }
    }

    /// Deleting the last records, emptying the file, or editing a record and recomputing every
    /// hash after it verifies as a plain chain; the anchor catches all three.
    #[test]
    fn the_anchor_catches_a_deleted_tail_an_emptied_file_and_a_rehashed_edit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("decisions.jsonl");
        let mut journal = Journal::open_with(&path, "run-1", anchored(dir.path(), None)).unwrap();
        for i in 0..4 {
            journal.append(&json!({"window": i})).unwrap();
        }
        drop(journal);
        let original = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = original.lines().collect();
        // The tail deleted.
        std::fs::write(&path, lines[..2].join("\n") + "\n").unwrap();
        assert!(verify(&path).is_ok(), "a plain chain cannot see it");
        let err = Journal::open_with(&path, "r", anchored(dir.path(), None)).unwrap_err();
        assert!(matches!(err, JournalError::Anchor { .. }), "{err}");
        assert!(err
            .to_string()
            .contains("holds 2 records but the anchor vouches for 4"));
        // The file emptied.
        std::fs::write(&path, "").unwrap();
        let err = Journal::open_with(&path, "r", anchored(dir.path(), None)).unwrap_err();
        assert!(matches!(err, JournalError::Anchor { .. }), "{err}");
        // A record edited and every later hash recomputed.
        std::fs::write(
            &path,
            rehash(&original, "\"window\":1", "\"window\":9", None),
        )
        .unwrap();
        assert!(verify(&path).is_ok(), "a plain chain cannot see it");
        let err = Journal::open_with(&path, "r", anchored(dir.path(), None)).unwrap_err();
        assert!(err.to_string().contains("records rewritten"), "{err}");
        // The intact journal still opens and continues.
        std::fs::write(&path, &original).unwrap();
        let journal = Journal::open_with(&path, "r", anchored(dir.path(), None)).unwrap();
        assert_eq!(journal.records(), 4);
    }

    /// A removed anchor went unnoticed: the journal reopened and the anchor was written anew,
    /// vouching for whatever the journal held. It is now reported (and journaled) with the
    /// number of records nothing vouched for, at open and when removed while the journal is open.
    #[test]
    fn a_removed_anchor_is_reported_and_journaled() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("decisions.jsonl");
        let anchor = dir.path().join("journal.anchor");
        let mut journal = Journal::open_with(&path, "run-1", anchored(dir.path(), None)).unwrap();
        assert_eq!(
            journal.anchor_missing(),
            None,
            "a new journal has no anchor yet"
        );
        for i in 0..3 {
            journal.append(&json!({"window": i})).unwrap();
        }
        assert_eq!(journal.anchor_missing(), None);
        drop(journal);
        std::fs::remove_file(&anchor).unwrap();
        let mut journal = Journal::open_with(&path, "run-2", anchored(dir.path(), None)).unwrap();
        assert_eq!(journal.anchor_missing(), Some(3));
        assert_eq!(journal.records(), 4, "the three and the report");
        let last = std::fs::read_to_string(&path).unwrap();
        let last: serde_json::Value = serde_json::from_str(last.lines().last().unwrap()).unwrap();
        assert_eq!(last["entry"]["event"], "anchor_missing");
        assert_eq!(last["entry"]["records"], 3);
        assert!(anchor.exists(), "written again");
        let warning = anchor_missing_warning(&anchor, 3);
        assert!(
            warning.contains(&anchor.display().to_string())
                && warning.contains("3 record(s)")
                && warning.contains("not checked"),
            "{warning}"
        );
        journal.append(&json!({"window": 3})).unwrap();
        drop(journal);
        // With the anchor in place, nothing is reported.
        let mut journal = Journal::open_with(&path, "run-3", anchored(dir.path(), None)).unwrap();
        assert_eq!(journal.anchor_missing(), None);
        // Removed while the journal is open: noticed at the next append.
        std::fs::remove_file(&anchor).unwrap();
        journal.append(&json!({"window": 4})).unwrap();
        assert_eq!(journal.anchor_missing(), Some(5));
        assert!(anchor.exists(), "written again");
    }

    /// Recomputes every hash of `text` after replacing `from` with `to` (what a tamperer with
    /// the file, and with `key` if given, can do).
    fn rehash(text: &str, from: &str, to: &str, key: Option<&[u8]>) -> String {
        let mut prev = GENESIS.to_owned();
        let mut out = String::new();
        for line in text.lines() {
            let (body, _) = split_hash(line).unwrap();
            let body = body.replacen(from, to, 1);
            let mut record: Body = serde_json::from_str(&body).unwrap();
            record.prev = prev.clone();
            let body = serde_json::to_string(&record).unwrap();
            let hash = chain_hash(key, &prev, &body);
            out += &join_hash(&body, &hash);
            out.push('\n');
            prev = hash;
        }
        out
    }

    /// A keyed chain: an edit re-hashed without the key, or the journal rewritten as a plain
    /// one, is caught; the key file must be the daemon's alone.
    #[test]
    fn a_keyed_chain_catches_a_rehash_without_the_key() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let key_path = dir.path().join("journal.key");
        std::fs::write(&key_path, [7u8; 32]).unwrap();
        std::fs::set_permissions(&key_path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = read_key(&key_path).unwrap_err().to_string();
        assert!(err.contains("0644") && err.contains("chmod 600"), "{err}");
        std::fs::set_permissions(&key_path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let key = read_key(&key_path).unwrap();
        let path = dir.path().join("decisions.jsonl");
        let keyed = || JournalOptions {
            key: Some(key.clone()),
            anchor: None,
        };
        let mut journal = Journal::open_with(&path, "run-1", keyed()).unwrap();
        for i in 0..3 {
            journal.append(&json!({"window": i})).unwrap();
        }
        drop(journal);
        let original = std::fs::read_to_string(&path).unwrap();
        assert!(original.contains("\"mac\":\"hmac-sha256\""));
        assert_eq!(verify_with(&path, Some(&key)).unwrap().records, 3);
        assert!(matches!(
            verify(&path).unwrap_err(),
            JournalError::Mode { line: 1, .. }
        ));
        // Re-hashed with a guessed key: the chain breaks at the edited record.
        let guessed = rehash(&original, "\"window\":1", "\"window\":9", Some(&[1u8; 32]));
        std::fs::write(&path, guessed).unwrap();
        let err = Journal::open_with(&path, "r", keyed()).unwrap_err();
        assert!(
            matches!(err, JournalError::ChainBroken { line: 1, .. }),
            "{err}"
        );
        // Rewritten as a plain chain: refused as unkeyed.
        let plain = rehash(&original, "\"mac\":\"hmac-sha256\",", "", None);
        std::fs::write(&path, plain).unwrap();
        let err = Journal::open_with(&path, "r", keyed()).unwrap_err();
        assert!(matches!(err, JournalError::Mode { line: 1, .. }), "{err}");
        // With the key, the original opens.
        std::fs::write(&path, &original).unwrap();
        assert_eq!(
            Journal::open_with(&path, "r", keyed()).unwrap().records(),
            3
        );
    }

    /// A journal key or an anchor that is a FIFO blocked the daemon in open() for good, and a
    /// key of mode 0600 that is a huge file was read whole; both are refused by kind or size.
    #[test]
    fn a_key_or_anchor_that_is_not_a_small_regular_file_is_refused() {
        use crate::files::within;
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("journal.key");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let key = fifo.clone();
        let error = within(move || read_key(&key)).unwrap_err().to_string();
        assert!(error.contains("a FIFO, not a regular file"), "{error}");
        let big = dir.path().join("big.key");
        std::fs::write(&big, vec![7u8; 4097]).unwrap();
        std::fs::set_permissions(&big, std::fs::Permissions::from_mode(0o600)).unwrap();
        let error = read_key(&big).unwrap_err().to_string();
        assert!(
            error.contains("4097 bytes, over the limit of 4096 bytes"),
            "{error}"
        );
        let error = within(move || Anchor::read(&fifo)).unwrap_err();
        assert!(error.to_string().contains("journal.key"), "{error}");
        let error = format!("{error:?}");
        assert!(error.contains("a FIFO, not a regular file"), "{error}");
    }

    /// A line was read whole, however long: a record over the limit followed by others is
    /// corrupt, named with the limit; a torn tail of any length is cut and saved through a
    /// buffer; a journal that is a FIFO is refused instead of blocking in open().
    #[test]
    fn records_are_read_within_the_limit_and_a_fifo_journal_is_refused() {
        use crate::files::within;
        let (_dir, path) = journal_with(2);
        let text = std::fs::read_to_string(&path).unwrap();
        let over = usize::try_from(RECORD_MAX).unwrap() + 1;
        let long = "x".repeat(over);
        let lines: Vec<&str> = text.lines().collect();
        std::fs::write(&path, format!("{}\n{long}\n{}\n", lines[0], lines[1])).unwrap();
        let err = Journal::open(&path, "run-2").unwrap_err();
        assert!(
            matches!(err, JournalError::Corrupt { line: 2, .. })
                && err.to_string().contains("longer than 1048576 bytes"),
            "{err}"
        );
        let torn = "y".repeat(2 * over);
        std::fs::write(&path, format!("{text}{torn}")).unwrap();
        let journal = Journal::open(&path, "run-2").unwrap();
        assert_eq!(journal.records(), 3, "two records and the recovery record");
        drop(journal);
        let now = std::fs::read_to_string(&path).unwrap();
        let recovery: serde_json::Value =
            serde_json::from_str(now.lines().nth(2).unwrap()).unwrap();
        assert_eq!(recovery["entry"]["bytes"], torn.len());
        let copy = PathBuf::from(recovery["entry"]["saved_to"].as_str().unwrap());
        assert_eq!(std::fs::read_to_string(copy).unwrap(), torn);
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("decisions.jsonl");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let err = within(move || Journal::open(&fifo, "run-1").map(|_| ())).unwrap_err();
        assert!(
            format!("{err:?}").contains("a FIFO, not a regular file"),
            "{err:?}"
        );
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
