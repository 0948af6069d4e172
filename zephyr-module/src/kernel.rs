//! [`qf_sched::Kernel`] over Zephyr. Called with the qfabric lock held, so in a thread's API call
//! whatever would block or switch context (sleeping until the next period, throttling,
//! rescheduling) is recorded in [`Deferred`] and carried out by [`Deferred::run`] once the lock
//! is released. A timer expiry runs in the timer interrupt, where none of these switches
//! context, and does them at once.

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
/// small: the entry's tick is read before (once, lock held), and an API call's deferred actions
/// go to the caller's [`Deferred`], which outlives the lock (one carried out by value would be
/// copied on every entry). A timer expiry acts at once instead: it runs in the timer interrupt,
/// where neither suspending a thread nor `k_reschedule` switches context (the switch happens
/// when the interrupt returns), so nothing needs to wait for the lock's release, and the
/// budget exhaustion (B_ROUT) carries no record of deferred actions. Entries from inside the
/// scheduler have none: nothing they could defer may run there (see [`Deferred::run`]).
pub struct ZephyrKernel<'a> {
    threads: &'a Registry,
    now: u64,
    context: Context<'a>,
}

/// Which entry a [`ZephyrKernel`] serves, and so what it may do.
enum Context<'a> {
    /// The running thread's API call: sleeping, throttling and rescheduling wait in `deferred`.
    ApiCall {
        caller: Thread,
        deferred: &'a mut Deferred,
    },
    /// A timer expiry, in the timer interrupt: throttling and rescheduling happen at once.
    Timer,
    /// Inside the kernel's scheduler: nothing is done.
    Scheduler,
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
            now,
            context: Context::ApiCall { caller, deferred },
        }
    }

    /// A timer expiry at tick `now` (the timer interrupt).
    pub fn timer(threads: &'a Registry, now: u64) -> Self {
        ZephyrKernel {
            threads,
            now,
            context: Context::Timer,
        }
    }

    /// An entry from inside the kernel's scheduler at tick `now`.
    pub fn in_scheduler(threads: &'a Registry, now: u64) -> Self {
        ZephyrKernel {
            threads,
            now,
            context: Context::Scheduler,
        }
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
            // qf-sched asks for the reschedule a moved deadline needs right after this.
            port::deadline_set(handle, deadline);
        }
    }

    fn suspend_until(&mut self, thread: ThreadId, at: u64) {
        let handle = self.threads.thread(thread);
        match &mut self.context {
            // The thread waits for its next periodic activation: it sleeps right after the call.
            Context::ApiCall { caller, deferred } if *caller == handle => {
                deferred.sleep_until = Some(at);
            }
            Context::ApiCall { deferred, .. } if !handle.0.is_null() => {
                deferred.throttle = Some((thread, handle, at));
            }
            Context::Timer if !handle.0.is_null() => port::throttle(thread.0, handle, at),
            _ => {}
        }
    }

    fn reschedule(&mut self) {
        match &mut self.context {
            Context::ApiCall { deferred, .. } => deferred.reschedule = true,
            Context::Timer => port::reschedule(),
            Context::Scheduler => {}
        }
    }
}

impl Deferred {
    /// Carries the recorded actions out; call with the lock released. Only API calls have any:
    /// a timer expiry acts at once, and inside the scheduler nothing can be done (the kernel is
    /// already choosing the next thread, and qf-sched only throttles from a switch hook in
    /// hard-reservation mode, which the Zephyr API does not offer), so those entries record none.
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
