//! A client's identity towards an MCU: the epoch its requests carry and invocation ids no other
//! client uses.
//!
//! The MCU keeps one replay window per task (`qf_abi::ReplayWindow`): a request from an older
//! epoch is STALE, one from a newer epoch clears the window, and an id already in the window is
//! DUPLICATE. The kernel dispatch device matches a reply to its caller by (task, invocation id),
//! across every process that shares the channel. So a client that started its ids at 1 and its
//! epoch at 0 in every process collided with the window a previous process left behind (its
//! first requests were DUPLICATE, or STALE forever once a daemon had switched epochs), and two
//! processes at once collided in the kernel (`EBUSY`).
//!
//! A [`Session`] fixes both from the client side, with no change to the MCU:
//! * **Invocation ids** are time stamps: `(CLOCK_REALTIME µs << 12) | (pid mod 4096)`, strictly
//!   increasing within the process. A later process's ids are larger than any id an earlier one
//!   issued (a process cannot issue more than one id per µs per tag value), and two processes
//!   alive at once differ in the low 12 bits unless their pids are equal mod 4096 *and* they
//!   invoke in the same µs. They run out in the year 2112.
//! * **The epoch** starts at a floor no earlier client has passed: the wall clock's seconds since
//!   1970 (fits `u32` until 2106), or a persistent counter ([`EpochFile`]) when the client keeps
//!   state (the daemon), whichever is larger. The first request of a new client therefore
//!   carries a newer epoch than any client before it, and the MCU drops the old client's window.
//!   A routing epoch (the daemon's quiescent switches) is added on top.
//!
//! Concurrent clients: the newest epoch wins a task's window, so an older client that is still
//! running gets STALE. [`Session::rebase`] moves it to `max(now, current + 1)` between
//! invocations (quiescent by construction), after which both share one epoch and are told
//! apart by their ids; clients that start in the same second share the epoch from the start.
//! [`Session::invoke`] does that for a one-shot client (`qf run`, `qf profile`): after STALE it
//! re-establishes the session and sends once more, and a refusal is never taken for a result.

use crate::domain::{Domain, Invocation};
use crate::workload::{encode_request, Request};
use anyhow::{Context, Result};
use qf_abi::{Status, MAX_FRAME_LEN};
use qf_tasks::Task;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Low bits of an invocation id that carry the process tag.
const TAG_BITS: u32 = 12;

/// Seconds since 1970 by the wall clock, saturated to `u32`.
fn wall_seconds() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u32::try_from(d.as_secs()).unwrap_or(u32::MAX))
        .unwrap_or(0)
}

/// Microseconds since 1970 by the wall clock.
fn wall_micros() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// One client's epoch base and invocation-id source.
#[derive(Debug, Clone)]
pub struct Session {
    epoch_base: u32,
    tag: u64,
    last_id: u64,
}

impl Session {
    /// A session whose epoch is at least `floor` and at least the wall clock's seconds.
    pub fn new(floor: u32) -> Session {
        Session {
            epoch_base: floor.max(wall_seconds()),
            tag: u64::from(std::process::id()) & ((1 << TAG_BITS) - 1),
            last_id: 0,
        }
    }

    /// A session for a client that keeps no state: its epoch is the wall clock's seconds.
    pub fn from_clock() -> Session {
        Session::new(0)
    }

    /// The epoch a request routed under `routing_epoch` carries.
    pub fn epoch(&self, routing_epoch: u32) -> u32 {
        self.epoch_base.saturating_add(routing_epoch)
    }

    /// The epoch base (the epoch of routing epoch 0).
    pub fn base(&self) -> u32 {
        self.epoch_base
    }

    /// A fresh invocation id, larger than every id this session issued.
    pub fn next_id(&mut self) -> u64 {
        let now = wall_micros().saturating_mul(1 << TAG_BITS) | self.tag;
        let next = now.max(self.last_id.saturating_add(1 << TAG_BITS));
        self.last_id = next;
        next
    }

    /// After a STALE reply (another client moved the MCU to a newer epoch): start a newer epoch
    /// for routing epoch 0, `max(wall clock, current epoch at routing_epoch + 1)`. Call only
    /// between invocations. Returns the new base.
    pub fn rebase(&mut self, routing_epoch: u32) -> u32 {
        let newer = self.epoch(routing_epoch).saturating_add(1);
        self.epoch_base = newer.max(wall_seconds()).saturating_sub(routing_epoch);
        self.epoch_base
    }
}

/// A request the MCU refused without running it: never a result, never a deadline miss.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// The id is already in the task's window for this epoch.
    #[error("the MCU refused invocation {invocation_id} of `{task}` as a duplicate (it already holds that id for epoch {epoch}); the task did not run")]
    Duplicate {
        task: &'static str,
        invocation_id: u64,
        epoch: u32,
    },
    /// Stale, and stale again after the session moved to a newer epoch: another client keeps
    /// the MCU at a newer epoch still.
    #[error("the MCU refused invocation {invocation_id} of `{task}` as stale twice (epoch {first_epoch}, then {epoch} after re-establishing the session): another client keeps the task at a newer epoch; the task did not run")]
    StaleTwice {
        task: &'static str,
        invocation_id: u64,
        first_epoch: u32,
        epoch: u32,
    },
}

/// An invocation the domain answered (with any status but DUPLICATE or STALE).
#[derive(Debug, Clone, Copy)]
pub struct Answered {
    pub invocation: Invocation,
    pub invocation_id: u64,
    pub epoch: u32,
    /// The first attempt's `(invocation id, epoch)` when it was refused as stale and this is the
    /// one retry in a re-established session.
    pub stale_first: Option<(u64, u32)>,
}

impl Session {
    /// Sends one `task` request (routing epoch 0) on `endpoint` and returns the answer. A STALE
    /// reply means the task did not run and another client moved the MCU to a newer epoch: the
    /// session is re-established ([`Session::rebase`]) and the request sent once more with a new
    /// id; DUPLICATE, or STALE again, is a [`Refused`] error.
    pub fn invoke(
        &mut self,
        endpoint: &mut dyn Domain,
        task: Task,
        request: &Request,
    ) -> Result<Answered> {
        let mut frame = [0u8; MAX_FRAME_LEN];
        let mut stale_first = None;
        loop {
            let (invocation_id, epoch) = (self.next_id(), self.epoch(0));
            let len = encode_request(task, request, invocation_id, epoch, &mut frame)?;
            let invocation = endpoint.invoke(&frame[..len])?;
            let status = qf_abi::decode_frame(invocation.frame()).map(|f| f.header.status);
            match (status, stale_first) {
                (Ok(Status::Stale), None) => {
                    stale_first = Some((invocation_id, epoch));
                    self.rebase(0);
                }
                (Ok(Status::Stale), Some((_, first_epoch))) => {
                    return Err(Refused::StaleTwice {
                        task: task.name(),
                        invocation_id,
                        first_epoch,
                        epoch,
                    }
                    .into())
                }
                (Ok(Status::Duplicate), _) => {
                    return Err(Refused::Duplicate {
                        task: task.name(),
                        invocation_id,
                        epoch,
                    }
                    .into())
                }
                _ => {
                    return Ok(Answered {
                        invocation,
                        invocation_id,
                        epoch,
                        stale_first,
                    })
                }
            }
        }
    }
}

/// A persistent record of the highest epoch a client used, so its next run starts above it even
/// when the wall clock went back (a board without a battery-backed clock boots in 1970).
#[derive(Debug)]
pub struct EpochFile {
    path: PathBuf,
    used: u32,
}

impl EpochFile {
    /// Reads `path` (a missing file is 0; anything but one decimal `u32` is an error naming it).
    pub fn open(path: &Path) -> Result<EpochFile> {
        let used = match std::fs::read_to_string(path) {
            Ok(text) => text.trim().parse::<u32>().with_context(|| {
                format!(
                    "epoch file {}: `{}` is not an epoch (a decimal u32); delete the file to start from the wall clock",
                    path.display(),
                    text.trim()
                )
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        Ok(EpochFile {
            path: path.to_owned(),
            used,
        })
    }

    /// The floor for a new session: one above the highest epoch used.
    pub fn floor(&self) -> u32 {
        self.used.saturating_add(1)
    }

    /// Records that `epoch` is about to be used (durably: written to a temporary file, fsync'd
    /// and renamed over the old one). Does nothing if a higher epoch is already recorded.
    pub fn record(&mut self, epoch: u32) -> Result<()> {
        if epoch <= self.used && self.path.exists() {
            return Ok(());
        }
        let temporary = self.path.with_extension("tmp");
        let write = || -> std::io::Result<()> {
            let mut file = std::fs::File::create(&temporary)?;
            writeln!(file, "{epoch}")?;
            file.sync_all()?;
            std::fs::rename(&temporary, &self.path)
        };
        write().with_context(|| format!("recording epoch {epoch} in {}", self.path.display()))?;
        self.used = self.used.max(epoch);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_increase_and_a_later_session_starts_above_an_earlier_one() {
        let mut first = Session::from_clock();
        let a: Vec<u64> = (0..1000).map(|_| first.next_id()).collect();
        assert!(a.windows(2).all(|w| w[0] < w[1]));
        assert!(a.iter().all(|&id| id != 0));
        std::thread::sleep(std::time::Duration::from_millis(2));
        let mut second = Session::from_clock();
        assert!(second.next_id() > *a.last().unwrap());
        assert!(second.epoch(0) >= first.epoch(0));
    }

    #[test]
    fn the_epoch_starts_above_the_floor_and_routing_adds_to_it() {
        let session = Session::new(u32::MAX - 5);
        assert_eq!(session.epoch(0), u32::MAX - 5);
        assert_eq!(session.epoch(3), u32::MAX - 2);
        assert_eq!(session.epoch(10), u32::MAX);
        assert!(Session::new(0).epoch(0) > 1_700_000_000);
    }

    #[test]
    fn rebase_moves_past_the_current_epoch() {
        let mut session = Session::new(4_000_000_000);
        let before = session.epoch(2);
        session.rebase(2);
        assert_eq!(session.epoch(2), before + 1);
    }

    /// A domain serving requests here with the dispatcher (one replay window per task, as on
    /// the MCU), counting what it was sent.
    struct Served {
        replay: qf_tasks::Replay,
        sent: usize,
    }

    impl Domain for Served {
        fn id(&self) -> qf_decision::model::DomainId {
            qf_decision::model::DomainId::Mcu
        }
        fn invoke(&mut self, request: &[u8]) -> Result<Invocation> {
            self.sent += 1;
            let mut response = [0u8; MAX_FRAME_LEN];
            let served = qf_tasks::serve(request, &mut response, &|| 0u64, &mut self.replay)
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            Ok(Invocation {
                response,
                len: served.len,
                latency: std::time::Duration::ZERO,
                compute: None,
                dispatch: None,
            })
        }
    }

    /// Moves `task`'s window on `mcu` to `epoch`, as another client would.
    fn another_client_at(mcu: &mut Served, task: Task, epoch: u32) {
        let mut frame = [0u8; MAX_FRAME_LEN];
        let request = crate::workload::random_request(task, 1);
        let len = encode_request(task, &request, 1, epoch, &mut frame).unwrap();
        mcu.invoke(&frame[..len]).unwrap();
    }

    /// `qf run` errored on STALE; now it re-establishes its session and sends once more.
    #[test]
    fn a_stale_reply_is_retried_once_in_a_newer_epoch() {
        let mut mcu = Served {
            replay: qf_tasks::Replay::new(),
            sent: 0,
        };
        let newer = 4_000_000_000;
        another_client_at(&mut mcu, Task::Add, newer);
        let request = crate::workload::random_request(Task::Add, 7);
        let mut session = Session::new(newer - 1);
        let answered = session.invoke(&mut mcu, Task::Add, &request).unwrap();
        assert_eq!(mcu.sent, 3);
        let first = answered.stale_first.unwrap();
        assert_eq!(first.1, newer - 1);
        assert_eq!(answered.epoch, newer);
        assert!(answered.invocation_id > first.0);
        assert!(
            crate::workload::outcome_ok(Task::Add, &request, answered.invocation.frame()).unwrap()
        );
        // The session stays at the newer epoch: the next call is not refused.
        let again = session.invoke(&mut mcu, Task::Add, &request).unwrap();
        assert_eq!((again.stale_first, again.epoch, mcu.sent), (None, newer, 4));
    }

    /// Bounded: STALE again after the retry is an error that says so, after two requests.
    #[test]
    fn stale_twice_and_duplicate_are_errors_never_results() {
        let mut mcu = Served {
            replay: qf_tasks::Replay::new(),
            sent: 0,
        };
        another_client_at(&mut mcu, Task::Add, u32::MAX - 1);
        let request = crate::workload::random_request(Task::Add, 7);
        let error = Session::new(0)
            .invoke(&mut mcu, Task::Add, &request)
            .unwrap_err();
        assert_eq!(mcu.sent, 3, "one request and one retry");
        assert!(matches!(
            error.downcast_ref::<Refused>(),
            Some(Refused::StaleTwice { .. })
        ));
        let message = error.to_string();
        assert!(
            message.contains("stale twice") && message.contains("did not run"),
            "{message}"
        );
        // A duplicate is not retried: the MCU holds that id (it may have run it). The session's
        // next id is made one the MCU already holds.
        let held = u64::MAX / 2;
        let mut frame = [0u8; MAX_FRAME_LEN];
        let len =
            encode_request(Task::Crc32, &request_crc(), held, u32::MAX - 1, &mut frame).unwrap();
        mcu.invoke(&frame[..len]).unwrap();
        let mut session = Session::new(u32::MAX - 1);
        session.last_id = held - (1 << TAG_BITS);
        let sent = mcu.sent;
        let error = session
            .invoke(&mut mcu, Task::Crc32, &request_crc())
            .unwrap_err();
        assert_eq!(mcu.sent, sent + 1, "not retried");
        assert!(matches!(
            error.downcast_ref::<Refused>(),
            Some(Refused::Duplicate { invocation_id, .. }) if *invocation_id == held
        ));
        assert!(error.to_string().contains("duplicate"), "{error}");
    }

    fn request_crc() -> Request {
        crate::workload::random_request(Task::Crc32, 3)
    }

    #[test]
    fn the_epoch_file_survives_a_restart_and_names_garbage() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("epoch");
        let mut file = EpochFile::open(&path).unwrap();
        assert_eq!(file.floor(), 1);
        file.record(4_000_000_007).unwrap();
        file.record(12).unwrap();
        let again = EpochFile::open(&path).unwrap();
        assert_eq!(again.floor(), 4_000_000_008);
        assert_eq!(Session::new(again.floor()).epoch(0), 4_000_000_008);
        std::fs::write(&path, "soon\n").unwrap();
        let error = format!("{:#}", EpochFile::open(&path).unwrap_err());
        assert!(
            error.contains("`soon`") && error.contains("epoch"),
            "{error}"
        );
    }
}
