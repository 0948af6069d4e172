//! The rows of `/dev/qfabricN`'s error table that need a second party, for `dev-abuse`: `EBUSY`
//! (a second caller with the same (task, invocation) id while the first waits), `EINTR` (a
//! signal to a waiting caller) and `ETIMEDOUT` (a timeout shorter than the round trip). Each is
//! a race with the MCU's reply, so each is tried many times: an attempt may lose the race (the
//! reply came first) but must never end any other way, and the counters the contract names
//! (`interrupted`, `timeouts`, `late_replies`) must account for every attempt that won it.
#![allow(unsafe_code)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use nix::errno::Errno;
use qf_abi::MAX_FRAME_LEN;
use qf_execution::qfabric_dev::{DevError, Device, QfStats};

use crate::traffic::Mirror;

/// Attempts per race.
pub const ATTEMPTS: u64 = 100;
/// Invocation ids of the races, apart from every other command's.
const RACE_IDS: u64 = 0x00ae_0000_0000;
/// How long a late reply may take to be counted.
const SETTLE: Duration = Duration::from_millis(500);
/// How long one abandoned caller's late reply is awaited before the next attempt.
const REPLY_WAIT: Duration = Duration::from_millis(200);

/// How one race went.
#[derive(Debug, Default)]
pub struct Race {
    /// Attempts that ended with the errno the race provokes.
    pub provoked: u64,
    pub attempts: u64,
    /// What contradicts the contract.
    pub wrong: Vec<String>,
}

impl Race {
    /// One attempt's outcome: `Ok` (the reply won) or the provoked errno; anything else is wrong.
    fn record(&mut self, name: &str, expected: Errno, outcome: Result<(), DevError>) {
        self.attempts += 1;
        match outcome {
            Ok(()) => {}
            Err(error) if error.errno() == Some(expected) => self.provoked += 1,
            Err(error) => self.wrong.push(format!("{name}: {error}")),
        }
    }

    pub fn summary(&self, errno: Errno) -> String {
        format!("{errno:?} {}/{}", self.provoked, self.attempts)
    }
}

/// `after.counter - before.counter` for the counters the races check.
fn grew(before: &QfStats, after: &QfStats) -> (u64, u64, u64) {
    (
        after.interrupted - before.interrupted,
        after.timeouts - before.timeouts,
        after.late_replies - before.late_replies,
    )
}

/// Waits (at most `REPLY_WAIT`) until the kernel has counted `want` late replies since
/// `before`: each abandoned caller's reply is awaited before the next attempt, so abandoned
/// slots never pile up. With the MCU holding each reply 2 ms, attempts that come faster than
/// the replies used to leave more than `MAX_WAITERS` (32) slots abandoned at once; the oldest
/// were then reused and their replies, arriving after, counted as unsolicited, not late.
fn await_late_replies(device: &Device, before: &QfStats, want: u64) -> Result<()> {
    let deadline = std::time::Instant::now() + REPLY_WAIT;
    while grew(before, &device.stats()?).2 < want && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

/// Runs `first` on a thread and `second` once the kernel counts a caller in flight (or
/// `first` is done); returns `first`'s outcome and `second`'s.
fn while_in_flight<A: Send, B>(
    device: &Device,
    first: impl FnOnce() -> A + Send,
    second: impl FnOnce(libc::pthread_t) -> B,
) -> Result<(A, B)> {
    let done = AtomicBool::new(false);
    let thread = OnceLock::new();
    std::thread::scope(|scope| {
        let waiter = scope.spawn(|| {
            // SAFETY: pthread_self has no preconditions.
            thread.get_or_init(|| unsafe { libc::pthread_self() });
            let outcome = first();
            done.store(true, Ordering::SeqCst);
            outcome
        });
        let start = Instant::now();
        while !done.load(Ordering::SeqCst)
            && (thread.get().is_none() || device.stats()?.in_flight == 0)
        {
            if start.elapsed() > Duration::from_secs(10) {
                bail!("no caller in flight after 10 s");
            }
            std::hint::spin_loop();
        }
        let other = second(*thread.get().context("the waiting thread never started")?);
        let outcome = waiter
            .join()
            .map_err(|_| anyhow::anyhow!("the waiting thread panicked"))?;
        Ok((outcome, other))
    })
}

/// A second caller with the id a first caller waits for gets `EBUSY`.
pub fn busy(device: &Device, epoch: u32, tick: &dyn Fn(&str)) -> Result<Race> {
    let mut mirror = Mirror::starting_at(epoch, RACE_IDS);
    let mut race = Race::default();
    for attempt in 0..ATTEMPTS {
        tick(&format!("EBUSY attempt {attempt}"));
        let mut request = [0u8; MAX_FRAME_LEN];
        let len = mirror.request(0, &mut request)?;
        let request = &request[..len];
        let (first, second) = while_in_flight(
            device,
            || device.invoke(request, Duration::from_secs(5)).map(drop),
            // The same frame again: the same (task, invocation) id.
            |_| device.invoke(request, Duration::from_secs(5)).map(drop),
        )?;
        if let Err(error) = first {
            race.wrong
                .push(format!("EBUSY attempt {attempt}, first caller: {error}"));
        }
        race.record(&format!("EBUSY attempt {attempt}"), Errno::EBUSY, second);
    }
    if race.provoked == 0 {
        race.wrong.push(format!(
            "EBUSY never provoked in {ATTEMPTS} attempts: the reply always came first"
        ));
    }
    Ok(race)
}

extern "C" fn ignore(_: libc::c_int) {}

/// A signal to a waiting caller ends its wait with `EINTR`; its reply is counted late.
pub fn interrupted(device: &Device, epoch: u32, tick: &dyn Fn(&str)) -> Result<Race> {
    // SAFETY: a handler that does nothing, without SA_RESTART so the wait is not restarted.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = ignore as extern "C" fn(libc::c_int) as usize;
        libc::sigemptyset(&mut action.sa_mask);
        if libc::sigaction(libc::SIGUSR1, &action, std::ptr::null_mut()) != 0 {
            bail!("sigaction SIGUSR1: {}", std::io::Error::last_os_error());
        }
    }
    let mut mirror = Mirror::starting_at(epoch, RACE_IDS + ATTEMPTS);
    let mut race = Race::default();
    let before = device.stats()?;
    for attempt in 0..ATTEMPTS {
        tick(&format!("EINTR attempt {attempt}"));
        let mut request = [0u8; MAX_FRAME_LEN];
        let len = mirror.request(0, &mut request)?;
        let request = &request[..len];
        let (first, ()) = while_in_flight(
            device,
            || device.invoke(request, Duration::from_secs(5)).map(drop),
            |waiter| {
                // SAFETY: the waiting thread is alive until it is joined after this returns.
                unsafe { libc::pthread_kill(waiter, libc::SIGUSR1) };
            },
        )?;
        race.record(&format!("EINTR attempt {attempt}"), Errno::EINTR, first);
        await_late_replies(device, &before, race.provoked)?;
    }
    std::thread::sleep(SETTLE);
    let (interrupted, _, late) = grew(&before, &device.stats()?);
    if interrupted != race.provoked || late != race.provoked {
        race.wrong.push(format!(
            "{} callers interrupted, but interrupted +{interrupted}, late_replies +{late}",
            race.provoked
        ));
    }
    if race.provoked == 0 {
        race.wrong.push(format!(
            "EINTR never provoked in {ATTEMPTS} attempts: the reply always came first"
        ));
    }
    Ok(race)
}

/// A 1 ms timeout: `ETIMEDOUT` whenever the reply takes longer, each counted in `timeouts` and
/// its reply in `late_replies`. Whether any round trip takes that long depends on the machine,
/// so no timeout at all is no error.
pub fn timed_out(device: &Device, epoch: u32, tick: &dyn Fn(&str)) -> Result<Race> {
    let mut mirror = Mirror::starting_at(epoch, RACE_IDS + 2 * ATTEMPTS);
    let mut race = Race::default();
    let before = device.stats()?;
    for attempt in 0..ATTEMPTS {
        tick(&format!("ETIMEDOUT attempt {attempt}"));
        let mut request = [0u8; MAX_FRAME_LEN];
        let len = mirror.request(0, &mut request)?;
        let outcome = device
            .invoke(&request[..len], Duration::from_millis(1))
            .map(drop);
        race.record(
            &format!("ETIMEDOUT attempt {attempt}"),
            Errno::ETIMEDOUT,
            outcome,
        );
        await_late_replies(device, &before, race.provoked)?;
    }
    std::thread::sleep(SETTLE);
    let (_, timeouts, late) = grew(&before, &device.stats()?);
    if timeouts != race.provoked || late != race.provoked {
        race.wrong.push(format!(
            "{} callers timed out, but timeouts +{timeouts}, late_replies +{late}",
            race.provoked
        ));
    }
    Ok(race)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_race_counts_provoked_attempts_and_reports_any_other_outcome() {
        let mut race = Race::default();
        let kernel = |errno| DevError::Kernel {
            path: "/dev/qfabric0".into(),
            op: "invoke",
            errno,
            meaning: "",
        };
        race.record("a", Errno::EBUSY, Ok(()));
        race.record("b", Errno::EBUSY, Err(kernel(Errno::EBUSY)));
        race.record("c", Errno::EBUSY, Err(kernel(Errno::EINVAL)));
        assert_eq!((race.provoked, race.attempts), (1, 3));
        assert_eq!(race.wrong.len(), 1);
        assert!(
            race.wrong[0].starts_with("c: /dev/qfabric0: invoke"),
            "{:?}",
            race.wrong
        );
        assert_eq!(race.summary(Errno::EBUSY), "EBUSY 1/3");
    }
}
