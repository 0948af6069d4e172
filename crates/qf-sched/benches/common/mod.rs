//! The scenarios the hook benchmarks share: a kernel that only stores what it is told, and a
//! scheduler with one periodic CBS thread in the state each hook meets on its hot path.
#![allow(dead_code)]

use qf_sched::{Bandwidth, Kernel, Scheduler, ThreadId};

pub const THREAD: ThreadId = ThreadId(1);
/// CBS budget Q and server period T (= relative deadline) of the benchmarked thread.
pub const BUDGET: u64 = 30;
pub const PERIOD: u64 = 100;

/// The traced configuration (a 64-event ring) the benchmarks use unless they say otherwise.
pub type BenchScheduler = Scheduler<8, 64>;

/// A kernel port that does the least a real one must: remember requests.
#[derive(Default, Clone)]
pub struct StoreKernel {
    pub now: u64,
    pub timer: u64,
    pub deadline: u64,
    pub wake: u64,
}

impl Kernel for StoreKernel {
    #[inline]
    fn now(&self) -> u64 {
        self.now
    }
    #[inline]
    fn timer_arm(&mut self, _: ThreadId, at: u64) {
        self.timer = at;
    }
    #[inline]
    fn timer_cancel(&mut self, _: ThreadId) {
        self.timer = u64::MAX;
    }
    #[inline]
    fn deadline_set(&mut self, _: ThreadId, deadline: u64) {
        self.deadline = deadline;
    }
    #[inline]
    fn suspend_until(&mut self, _: ThreadId, at: u64) {
        self.wake = at;
    }
}

/// A periodic CBS thread (period = server period = 100, Q = 30) that has just started a cycle
/// at t = 0 and is running with its budget clock on.
pub fn running_cbs_thread() -> (BenchScheduler, StoreKernel) {
    running_cbs_thread_with::<64>()
}

/// [`running_cbs_thread`] with an event ring of `EVENTS` entries (0: tracing compiled out).
pub fn running_cbs_thread_with<const EVENTS: usize>() -> (Scheduler<8, EVENTS>, StoreKernel) {
    configured_cbs_thread(Scheduler::<8, EVENTS>::new())
}

/// [`running_cbs_thread_with`] with admission control on (bound: one CPU), so every reservation
/// change is tested against the admitted total.
pub fn admitted_cbs_thread_with<const EVENTS: usize>() -> (Scheduler<8, EVENTS>, StoreKernel) {
    let mut sched = Scheduler::<8, EVENTS>::new();
    sched.admission_bound_set(Some(Bandwidth::ONE));
    configured_cbs_thread(sched)
}

fn configured_cbs_thread<const EVENTS: usize>(
    mut sched: Scheduler<8, EVENTS>,
) -> (Scheduler<8, EVENTS>, StoreKernel) {
    let mut kernel = StoreKernel::default();
    let _ = sched.attach(THREAD);
    let _ = sched.period_set(THREAD, PERIOD);
    let _ = sched.cbs_budget_set(THREAD, BUDGET);
    let _ = sched.switched_in(&mut kernel, THREAD);
    let _ = sched.deadline_set(&mut kernel, THREAD, PERIOD);
    (sched, kernel)
}
