//! Fault knobs of the emulated MCU: added latency, dropping every Nth reply, answering nothing.
//! Crash and restart are lifecycle commands of the board (see `board`); the Unix endpoint
//! obeys the crashed state through [`crate::mcu::Mcu`].

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// What to do with a computed reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Send it after `delay`.
    Reply { delay: Duration },
    /// Throw it away (the `drop-every` knob).
    Drop,
    /// Do not answer at all (the `silent` knob).
    Silent,
}

/// The knobs, changeable at run time from the control socket.
#[derive(Debug, Default)]
pub struct Faults {
    latency_us: AtomicU64,
    drop_every: AtomicU64,
    silent: AtomicBool,
    replies: AtomicU64,
    dropped: AtomicU64,
}

impl Faults {
    /// Knobs set from the command line.
    pub fn new(latency_us: u64, drop_every: u64, silent: bool) -> Faults {
        let faults = Faults::default();
        faults.set_latency_us(latency_us);
        faults.set_drop_every(drop_every);
        faults.set_silent(silent);
        faults
    }

    /// Microseconds added before every reply.
    pub fn set_latency_us(&self, us: u64) {
        self.latency_us.store(us, Ordering::Relaxed);
    }

    /// Drop every `n`th reply from now on (0 = never); the count starts again at this call.
    pub fn set_drop_every(&self, n: u64) {
        self.drop_every.store(n, Ordering::Relaxed);
        self.replies.store(0, Ordering::Relaxed);
    }

    /// Stop (true) or resume (false) answering.
    pub fn set_silent(&self, silent: bool) {
        self.silent.store(silent, Ordering::Relaxed);
    }

    /// Current knob values: (latency µs, drop every, silent).
    pub fn knobs(&self) -> (u64, u64, bool) {
        (
            self.latency_us.load(Ordering::Relaxed),
            self.drop_every.load(Ordering::Relaxed),
            self.silent.load(Ordering::Relaxed),
        )
    }

    /// Replies dropped so far by `drop-every`.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Decides the fate of the next reply (counting it for `drop-every`).
    pub fn verdict(&self) -> Verdict {
        let (latency_us, drop_every, silent) = self.knobs();
        if silent {
            return Verdict::Silent;
        }
        let n = self.replies.fetch_add(1, Ordering::Relaxed) + 1;
        if drop_every != 0 && n % drop_every == 0 {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return Verdict::Drop;
        }
        Verdict::Reply {
            delay: Duration::from_micros(latency_us),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drop_every_3_drops_the_3rd_and_6th_reply() {
        let faults = Faults::new(0, 3, false);
        let verdicts: Vec<_> = (0..6).map(|_| faults.verdict()).collect();
        let dropped: Vec<_> = verdicts.iter().map(|v| *v == Verdict::Drop).collect();
        assert_eq!(dropped, [false, false, true, false, false, true]);
        assert_eq!(faults.dropped(), 2);
    }

    #[test]
    fn latency_is_applied_to_every_reply_and_silence_wins_over_everything() {
        let faults = Faults::new(250, 0, false);
        assert_eq!(
            faults.verdict(),
            Verdict::Reply {
                delay: Duration::from_micros(250)
            }
        );
        faults.set_silent(true);
        assert_eq!(faults.verdict(), Verdict::Silent);
        faults.set_silent(false);
        faults.set_latency_us(0);
        assert_eq!(
            faults.verdict(),
            Verdict::Reply {
                delay: Duration::ZERO
            }
        );
    }
}
