//! The time source a caller lends to the tasks so each can report its own compute time.
//!
//! The crate has no clock of its own (it runs on Linux, in the MCU emulator and on Zephyr); the
//! executor passes whatever monotonic counter its domain has (`CLOCK_MONOTONIC`, `k_cycle_get`
//! scaled to ns, ...).

/// A monotonic clock in nanoseconds. Only differences between two readings are used.
pub trait Clock {
    /// Current time in nanoseconds since an arbitrary origin.
    fn now_ns(&self) -> u64;
}

/// Any `Fn() -> u64` is a clock, e.g. `|| start.elapsed().as_nanos() as u64`.
impl<F: Fn() -> u64> Clock for F {
    fn now_ns(&self) -> u64 {
        self()
    }
}

/// Runs `work` and returns its result with the nanoseconds it took on `clock`
/// (0 if the clock went backwards).
pub fn timed<C: Clock + ?Sized, T>(clock: &C, work: impl FnOnce() -> T) -> (T, u64) {
    let start = clock.now_ns();
    let value = work();
    let end = clock.now_ns();
    (value, end.saturating_sub(start))
}
