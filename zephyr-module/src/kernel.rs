//! [`qf_sched::Kernel`] over Zephyr. Called with the qfabric lock held, so whatever would block
//! or switch context (sleeping until the next period, throttling, rescheduling) is recorded in
//! [`Deferred`] and carried out by [`Deferred::run`] once the lock is released.

use core::cell::Cell;

use qf_sched::{Kernel, ThreadId};

use crate::port::{self, Thread};
use crate::threads::Registry;

/// Where the scheduler was entered from; decides what a deferred action may do.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Context {
    /// A thread's own API call (may block).
    Api,
    /// A timer expiry (interrupt context: must not block).
    Timer,
    /// Inside the kernel's scheduler: a context-switch hook or a thread's exit. May neither
    /// block nor suspend nor reschedule.
    Scheduler,
}

/// Actions to carry out after the lock is released.
#[derive(Default, Debug)]
pub struct Deferred {
    sleep_until: Option<u64>,
    throttle: Option<(ThreadId, Thread, u64)>,
    reschedule: bool,
}

/// The Zephyr kernel as `qf-sched` sees it, for one locked entry.
pub struct ZephyrKernel<'a> {
    threads: &'a Registry,
    context: Context,
    caller: Thread,
    /// The tick of this entry: the clock is read once, with the lock held, on first use.
    now: Cell<Option<u64>>,
    pub deferred: Deferred,
}

impl<'a> ZephyrKernel<'a> {
    /// An entry from `context` on behalf of thread `caller` (the running thread).
    pub fn new(threads: &'a Registry, context: Context, caller: Thread) -> Self {
        ZephyrKernel {
            threads,
            context,
            caller,
            now: Cell::new(None),
            deferred: Deferred::default(),
        }
    }

    /// An entry whose time is already known (read by the other hook of the same switch).
    pub fn at(mut self, tick: u64) -> Self {
        self.now = Cell::new(Some(tick));
        self
    }
}

impl Kernel for ZephyrKernel<'_> {
    fn now(&self) -> u64 {
        match self.now.get() {
            Some(tick) => tick,
            None => {
                let tick = port::now();
                self.now.set(Some(tick));
                tick
            }
        }
    }

    fn timer_arm(&mut self, thread: ThreadId, at: u64) {
        port::timer_arm(thread.0, at);
    }

    fn timer_cancel(&mut self, thread: ThreadId) {
        port::timer_cancel(thread.0);
    }

    fn deadline_set(&mut self, thread: ThreadId, deadline: u64) {
        let handle = self.threads.thread(thread);
        if !handle.0.is_null() {
            port::deadline_set(handle, deadline);
            // A later deadline for the running thread must let an earlier one run now, not at
            // the next scheduling point (upstream's deadline_set waits for one).
            self.deferred.reschedule = true;
        }
    }

    fn suspend_until(&mut self, thread: ThreadId, at: u64) {
        let handle = self.threads.thread(thread);
        if self.context == Context::Api && handle == self.caller {
            // The thread waits for its next periodic activation: it sleeps right after the call.
            self.deferred.sleep_until = Some(at);
        } else if !handle.0.is_null() {
            self.deferred.throttle = Some((thread, handle, at));
        }
    }

    fn reschedule(&mut self) {
        self.deferred.reschedule = true;
    }
}

impl Deferred {
    /// Carries the recorded actions out; call with the lock released.
    ///
    /// Inside the scheduler nothing can be done: the kernel is already choosing the next
    /// thread, and qf-sched only throttles from a switch hook in hard-reservation mode, which
    /// the Zephyr API does not offer.
    pub fn run(self, context: Context) {
        if context == Context::Scheduler {
            return;
        }
        if let Some((id, thread, until)) = self.throttle {
            port::throttle(id.0, thread, until);
        }
        match self.sleep_until {
            // Going to sleep switches to the best ready thread anyway. Rescheduling first would
            // switch away while the thread is still ready, and it would only come back (two
            // more switches) to reach its sleep, possibly after its release was due: then the
            // sleep ends a tick late.
            Some(at) => port::sleep_until(at),
            None if self.reschedule => port::reschedule(),
            None => {}
        }
    }
}
