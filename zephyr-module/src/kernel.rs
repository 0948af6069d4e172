//! [`qf_sched::Kernel`] over Zephyr. Called with the qfabric lock held, so whatever would block
//! or switch context (sleeping until the next period, throttling, rescheduling) is recorded in
//! [`Deferred`] and carried out by [`Deferred::run`] once the lock is released.

use qf_sched::{Kernel, ThreadId};

use crate::port::{self, Thread};
use crate::threads::Registry;

/// Actions to carry out after the lock is released.
#[derive(Default, Debug)]
pub struct Deferred {
    sleep_until: Option<u64>,
    throttle: Option<(ThreadId, Thread, u64)>,
    reschedule: bool,
}

/// The Zephyr kernel as `qf-sched` sees it, for one locked entry: a thread's API call (which
/// may block), a timer expiry (interrupt context: must not block) or an entry from inside the
/// kernel's scheduler (a context-switch hook or a thread's exit: may neither block nor suspend
/// nor reschedule).
///
/// Built on every context switch and timer expiry, which are counted in instructions, so it is
/// small: the entry's tick is read before (once, lock held), and the deferred actions go to
/// the caller's [`Deferred`], which outlives the lock (one carried out by value would be
/// copied on every entry). Entries from inside the scheduler have none: nothing they could
/// defer may run there (see [`Deferred::run`]).
pub struct ZephyrKernel<'a> {
    threads: &'a Registry,
    /// The running thread whose API call this is (`None`: a timer or the scheduler).
    caller: Option<Thread>,
    now: u64,
    deferred: Option<&'a mut Deferred>,
}

impl<'a> ZephyrKernel<'a> {
    /// An API call of the running thread `caller` at tick `now`, recording what must wait for
    /// the lock's release in `deferred`.
    pub fn api_call(
        threads: &'a Registry,
        caller: Thread,
        now: u64,
        deferred: &'a mut Deferred,
    ) -> Self {
        ZephyrKernel {
            threads,
            caller: Some(caller),
            now,
            deferred: Some(deferred),
        }
    }

    /// A timer expiry at tick `now`, recording what must wait for the lock's release in
    /// `deferred`.
    pub fn timer(threads: &'a Registry, now: u64, deferred: &'a mut Deferred) -> Self {
        ZephyrKernel {
            threads,
            caller: None,
            now,
            deferred: Some(deferred),
        }
    }

    /// An entry from inside the kernel's scheduler at tick `now`.
    pub fn in_scheduler(threads: &'a Registry, now: u64) -> Self {
        ZephyrKernel {
            threads,
            caller: None,
            now,
            deferred: None,
        }
    }

    /// Where to record a deferred action (`None` inside the scheduler: it is dropped).
    fn deferred(&mut self) -> Option<&mut Deferred> {
        self.deferred.as_deref_mut()
    }
}

impl Kernel for ZephyrKernel<'_> {
    fn now(&self) -> u64 {
        self.now
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
            self.reschedule();
        }
    }

    fn suspend_until(&mut self, thread: ThreadId, at: u64) {
        let handle = self.threads.thread(thread);
        let own_call = self.caller == Some(handle);
        let Some(deferred) = self.deferred() else {
            return;
        };
        if own_call {
            // The thread waits for its next periodic activation: it sleeps right after the call.
            deferred.sleep_until = Some(at);
        } else if !handle.0.is_null() {
            deferred.throttle = Some((thread, handle, at));
        }
    }

    fn reschedule(&mut self) {
        if let Some(deferred) = self.deferred() {
            deferred.reschedule = true;
        }
    }
}

impl Deferred {
    /// Carries the recorded actions out; call with the lock released. Only API calls and timer
    /// expiries have any: inside the scheduler nothing can be done (the kernel is already
    /// choosing the next thread, and qf-sched only throttles from a switch hook in
    /// hard-reservation mode, which the Zephyr API does not offer), so those entries record none
    /// ([`ZephyrKernel::in_scheduler`]).
    // Inlined into its two callers: a budget exhaustion (B_ROUT, counted) otherwise pays a call
    // and a register save for three tests.
    #[inline(always)]
    pub fn run(&self) {
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
