//! The emulated MCU's side of `qf-sched`'s kernel interface ([`qf_sched::Kernel`]), for the
//! thread of a resident chain: what the Zephyr port does with kernel timeouts and `k_sleep`,
//! done here with one one-shot `timerfd` on the MCU clock.
//!
//! Each chain thread of the MCU's one `qf-sched` scheduler has its own `McuKernel` (the scheduler
//! calls a thread's kernel only for that thread), and jobs run to completion in the board loop,
//! so the interface comes down to two instants per thread: when the thread may run again
//! (its next activation, from `suspend_until`) and when its scheduler timer is due (the
//! deadline-miss check or the budget exhaustion, from `timer_arm`). The timerfd is kept at the
//! earlier of the two. Deadlines and rescheduling have nothing to order or pick between: the
//! board loop decides again after every event anyway.
//!
//! Time is in microseconds since the chain started (the MCU clock, `CLOCK_MONOTONIC`), read
//! once per entry like the Zephyr port's tick.

use std::os::fd::{AsFd, BorrowedFd};

use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
use nix::time::clock_gettime;
use qf_sched::{Kernel, ThreadId};

/// The MCU clock and the chain thread's two pending instants.
pub struct McuKernel {
    /// `CLOCK_MONOTONIC` when the MCU clock read 0.
    origin: TimeSpec,
    timer: TimerFd,
    /// The current entry's time (µs).
    now: u64,
    /// When the thread may run its next job; `None` while it runs one.
    runnable_at: Option<u64>,
    /// When the scheduler's one-shot timer for the thread is due.
    timer_at: Option<u64>,
}

impl McuKernel {
    /// A clock reading 0 now and a disarmed timer.
    pub fn new() -> nix::Result<McuKernel> {
        let timer = TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_CLOEXEC | TimerFlags::TFD_NONBLOCK,
        )?;
        Ok(McuKernel {
            origin: clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)?,
            timer,
            now: 0,
            runnable_at: None,
            timer_at: None,
        })
    }

    /// Nanoseconds on the MCU clock.
    pub fn clock_ns(&self) -> u64 {
        clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
            .map(|t| duration_ns(t - self.origin))
            .unwrap_or(0)
    }

    /// Starts an entry: reads the clock once (µs), as every `Kernel::now` of the entry returns.
    pub fn enter(&mut self) -> u64 {
        self.now = self.clock_ns() / 1000;
        self.now
    }

    /// Readable when the earlier of the two instants is due.
    pub fn timer_fd(&self) -> BorrowedFd<'_> {
        self.timer.as_fd()
    }

    /// Consumes the timerfd's expiry, if any (it is non-blocking; the instants are checked
    /// against the clock, not against the expiry, so a missed or spurious wake-up is harmless).
    pub fn acknowledge(&self) -> nix::Result<()> {
        match self.timer.wait() {
            Ok(()) | Err(nix::Error::EAGAIN) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// The scheduler's timer, if it was due by `clock_now`: it is consumed, and the entry's time
    /// becomes the instant it was due, as the Zephyr port reports a timer expiry at its
    /// timeout's tick (so a budget runs out exactly at its end, however late the board loop got
    /// there). The caller hands it to `Scheduler::timer_expired`, which re-arms it if it must.
    pub fn take_timer_due_by(&mut self, clock_now: u64) -> Option<u64> {
        let at = self.timer_at.filter(|&at| at <= clock_now)?;
        self.timer_at = None;
        self.now = at;
        Some(at)
    }

    /// Whether the thread may run its next job at this entry; if so it now runs.
    pub fn take_runnable(&mut self) -> bool {
        let runnable = self.runnable_at.is_some_and(|at| at <= self.now);
        if runnable {
            self.runnable_at = None;
        }
        runnable
    }

    /// After a `deadline_set` that did not suspend the thread (its first cycle, or one that
    /// started at once after an overrun): it may run again at once.
    pub fn runnable_now_unless_suspended(&mut self) {
        self.runnable_at.get_or_insert(self.now);
    }

    /// The thread's next activation (`None` while it runs a job).
    pub fn runnable_at(&self) -> Option<u64> {
        self.runnable_at
    }

    /// The scheduler's pending timer instant.
    pub fn timer_at(&self) -> Option<u64> {
        self.timer_at
    }

    /// The earlier of the two instants as a `CLOCK_MONOTONIC` time (`None`: neither is set),
    /// so a board loop can wait for the earliest of several chains' kernels.
    pub fn due(&self) -> Option<TimeSpec> {
        let earliest = match (self.runnable_at, self.timer_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        earliest
            .map(|at| self.origin + TimeSpec::from_duration(std::time::Duration::from_micros(at)))
    }

    /// Points the timerfd at the earlier of the two instants (disarms it if neither is set).
    /// An instant already past fires at once.
    pub fn arm(&self) -> nix::Result<()> {
        match self.due() {
            Some(at) => self.timer.set(
                Expiration::OneShot(at),
                TimerSetTimeFlags::TFD_TIMER_ABSTIME,
            ),
            None => self.timer.unset(),
        }
    }
}

/// A non-negative `TimeSpec` difference in nanoseconds (0 if negative).
fn duration_ns(t: TimeSpec) -> u64 {
    let ns = i128::from(t.tv_sec()) * 1_000_000_000 + i128::from(t.tv_nsec());
    u64::try_from(ns).unwrap_or(0)
}

// One kernel per chain thread: the scheduler only calls it for that thread's `ThreadId`.
impl Kernel for McuKernel {
    fn now(&self) -> u64 {
        self.now
    }

    fn timer_arm(&mut self, _: ThreadId, at: u64) {
        self.timer_at = Some(at);
    }

    fn timer_cancel(&mut self, _: ThreadId) {
        self.timer_at = None;
    }

    // One thread: there is no run queue for its deadline to order (the scheduler's control
    // block keeps the deadline).
    fn deadline_set(&mut self, _: ThreadId, _: u64) {}

    fn suspend_until(&mut self, _: ThreadId, at: u64) {
        self.runnable_at = Some(at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the kernel's timerfd fires within `ms` milliseconds.
    fn fires_within(kernel: &McuKernel, ms: u16) -> bool {
        let mut fds = [nix::poll::PollFd::new(
            kernel.timer_fd(),
            nix::poll::PollFlags::POLLIN,
        )];
        nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(ms)).unwrap() == 1
    }

    #[test]
    fn the_timerfd_fires_at_the_earlier_instant_and_each_is_taken_once() {
        let mut kernel = McuKernel::new().unwrap();
        kernel.enter();
        kernel.suspend_until(ThreadId(0), kernel.now + 200_000);
        kernel.timer_arm(ThreadId(0), kernel.now + 2_000);
        kernel.arm().unwrap();
        assert!(fires_within(&kernel, 1000));
        kernel.acknowledge().unwrap();
        let started = kernel.now;
        let now = kernel.enter();
        assert!(now >= started + 2_000, "{now} µs");
        assert_eq!(
            kernel.take_timer_due_by(now),
            Some(started + 2_000),
            "the 2 ms timer fired first"
        );
        assert_eq!(kernel.now(), started + 2_000, "reported at its own instant");
        assert_eq!(kernel.take_timer_due_by(now), None, "and only once");
        kernel.enter();
        assert!(!kernel.take_runnable(), "the 200 ms activation is not due");
        assert_eq!(kernel.timer_at(), None);
        assert!(kernel.runnable_at().is_some());
    }

    #[test]
    fn nothing_pending_disarms_the_timerfd() {
        let mut kernel = McuKernel::new().unwrap();
        kernel.enter();
        kernel.timer_arm(ThreadId(0), 0);
        kernel.arm().unwrap();
        kernel.timer_cancel(ThreadId(0));
        kernel.arm().unwrap();
        assert!(!fires_within(&kernel, 50));
    }
}
