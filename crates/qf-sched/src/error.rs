//! Error statuses of the scheduler API. Every entry point returns one of these instead of
//! panicking; the Zephyr adapter maps them to negative errno values.

use crate::Bandwidth;

/// Why a scheduler call did not (fully) succeed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// The thread id is outside the pool, or its slot is not attached.
    UnknownThread,
    /// The slot is already attached to another thread.
    AlreadyAttached,
    /// A relative deadline of zero was passed to `deadline_set`.
    ZeroDeadline,
    /// The previous cycle ended `late_by` units after its period had elapsed, and that was not
    /// because the thread shortened its period mid-cycle. The next cycle has started anyway
    /// (immediately, without suspension): this is a report, not a refusal.
    PeriodOverrun {
        /// How long after the end of its period the cycle ended.
        late_by: u64,
    },
    /// Admission control refused the thread's new bandwidth; nothing changed and no cycle
    /// started. `requested` is the thread's bandwidth, `others` the sum already admitted for the
    /// other threads, `bound` the configured limit.
    AdmissionRejected {
        /// What this thread asked for (`Q/T` for a CBS, `WCET/period` for a periodic thread).
        requested: Bandwidth,
        /// Bandwidth already admitted to all other threads.
        others: Bandwidth,
        /// The configured bound on the total.
        bound: Bandwidth,
    },
}

impl Error {
    /// A negative errno-style code for C callers (`-EINVAL`, `-EBUSY`, `-ETIMEDOUT`, `-ENOSPC`).
    pub const fn errno(self) -> i32 {
        match self {
            Error::UnknownThread | Error::ZeroDeadline => -22,
            Error::AlreadyAttached => -16,
            Error::PeriodOverrun { .. } => -116,
            Error::AdmissionRejected { .. } => -28,
        }
    }
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Error::UnknownThread => write!(f, "unknown thread (not attached or out of range)"),
            Error::AlreadyAttached => write!(f, "thread slot already attached"),
            Error::ZeroDeadline => write!(f, "relative deadline must be greater than zero"),
            Error::PeriodOverrun { late_by } => {
                write!(
                    f,
                    "period overrun: previous cycle ended {late_by} units late"
                )
            }
            Error::AdmissionRejected {
                requested,
                others,
                bound,
            } => write!(
                f,
                "admission control: bandwidth {} ppm on top of {} ppm exceeds the bound of {} ppm",
                requested.ppm(),
                others.ppm(),
                bound.ppm()
            ),
        }
    }
}
