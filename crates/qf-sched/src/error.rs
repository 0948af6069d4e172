//! Error statuses of the scheduler API. Every entry point returns one of these instead of
//! panicking. Errno numbers differ between C libraries (newlib, picolibc, glibc on native_sim),
//! so this portable crate has none: an adapter with a C side maps [`Error`] to the numbers of
//! its own `<errno.h>` (the Zephyr module does it once, in `zephyr-module/src/api.rs` over the
//! values `port.c` exports). Kept to 16 bytes so a `Result<(), Error>` stays cheap to return
//! on the hot paths.

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
    /// started. Values are parts per million of one CPU (see [`crate::Bandwidth::ppm`],
    /// saturated to `u32`); the decision itself was made on exact fixed-point values.
    AdmissionRejected {
        /// What this thread asked for (`Q/T` for a CBS, `WCET/period` for a periodic thread).
        requested_ppm: u32,
        /// Bandwidth already admitted to all other threads.
        others_ppm: u32,
        /// The configured bound on the total.
        bound_ppm: u32,
    },
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
                requested_ppm,
                others_ppm,
                bound_ppm,
            } => write!(
                f,
                "admission control: bandwidth {requested_ppm} ppm on top of {others_ppm} ppm \
                 exceeds the bound of {bound_ppm} ppm"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_status_fits_in_two_registers() {
        assert!(core::mem::size_of::<Result<(), super::Error>>() <= 16);
    }
}
