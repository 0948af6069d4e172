//! The switch log (CONFIG_QFABRIC_TRACE_SWITCHES): every switch in and out of a thread with a
//! control block, so a run's schedule can be rebuilt slice by slice. The event ring only keeps
//! the switches that start or stop a CBS budget. When full, the oldest entry is overwritten.
//! Only the ring lives here: the state holds one (`State::switches`), the switch hooks write it
//! and C reads it through `qf_switch_pop` (trace.rs, beside the event ring's readers).

use qf_sched::ThreadId;

use crate::config::TRACE_SWITCHES;

/// `struct qf_switch` (include/qfabric/api.h, generated).
pub use crate::sys::qf_switch as QfSwitch;

/// A ring of the last `N` switches (`N` = 0: nothing is kept and recording costs nothing).
pub struct SwitchLog<const N: usize> {
    entries: [QfSwitch; N],
    oldest: usize,
    len: usize,
}

impl<const N: usize> SwitchLog<N> {
    pub const fn new() -> Self {
        SwitchLog {
            entries: [QfSwitch {
                time: 0,
                thread: 0,
                switched_in: 0,
            }; N],
            oldest: 0,
            len: 0,
        }
    }

    /// Logs a switch of `thread` at the tick `now()` returns (not called when `N` is 0).
    #[inline]
    pub fn record(&mut self, now: impl FnOnce() -> u64, thread: ThreadId, switched_in: bool) {
        if N == 0 {
            return;
        }
        let entry = QfSwitch {
            time: now(),
            thread: thread.0,
            switched_in: u8::from(switched_in),
        };
        if self.len == N {
            self.entries[self.oldest] = entry;
            self.oldest = (self.oldest + 1) % N;
        } else {
            self.entries[(self.oldest + self.len) % N] = entry;
            self.len += 1;
        }
    }

    /// Takes the oldest entry.
    pub fn pop(&mut self) -> Option<QfSwitch> {
        if self.len == 0 {
            return None;
        }
        let entry = self.entries[self.oldest];
        self.oldest = (self.oldest + 1) % N;
        self.len -= 1;
        Some(entry)
    }
}

/// The log the switch hooks write (sized by Kconfig).
pub type Log = SwitchLog<TRACE_SWITCHES>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_log_keeps_the_newest_switches_in_order() {
        let mut log = SwitchLog::<2>::new();
        for t in 1..=3 {
            log.record(|| t, ThreadId(t as u16), t % 2 == 1);
        }
        assert_eq!(log.pop().map(|s| (s.time, s.switched_in)), Some((2, 0)));
        assert_eq!(log.pop().map(|s| (s.time, s.switched_in)), Some((3, 1)));
        assert_eq!(log.pop(), None);
    }

    #[test]
    fn a_zero_sized_log_records_nothing_and_never_reads_the_clock() {
        let mut log = SwitchLog::<0>::new();
        log.record(|| panic!("the clock must not be read"), ThreadId(0), true);
        assert_eq!(log.pop(), None);
    }
}
