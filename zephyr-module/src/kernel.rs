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

/// The Zephyr kernel as `qf-sched` sees it, for one locked entry of kind `E`: a thread's API
/// call ([`ApiCall`], may block), a timer expiry ([`Timer`], interrupt context: must not block)
/// or an entry from inside the kernel's scheduler ([`InScheduler`], a context-switch hook or a
/// thread's exit: may neither block nor suspend nor reschedule).
///
/// Built on every context switch and timer expiry, which are counted in instructions, so it is
/// small: the entry's tick is read before (once, lock held), and an API call's deferred actions
/// go to the caller's [`Deferred`], which outlives the lock (one carried out by value would be
/// copied on every entry). A timer expiry acts at once instead: it runs in the timer interrupt,
/// where neither suspending a thread nor `k_reschedule` switches context (the switch happens
/// when the interrupt returns), so nothing needs to wait for the lock's release, and the
/// budget exhaustion (B_ROUT) carries no record of deferred actions. Entries from inside the
/// scheduler have none: nothing they could defer may run there (see [`Deferred::run`]). The
/// kind is a type, not a field: the hooks' and the expiry's kernels are then two words and a
/// reference, with no tag to store on every entry.
pub struct ZephyrKernel<'a, E> {
    threads: &'a Registry,
    now: u64,
    entry: E,
}

/// What an entry does with a thread `qf-sched` suspends, with a deadline it sets and with a
/// timer it aims.
pub trait Entry {
    /// `thread`'s timer must fire at tick `at` (never 0, qf-sched's "no timer").
    fn timer_arm(&mut self, thread: ThreadId, at: u64) {
        port::timer_arm(thread.0, at);
    }
    /// `thread`'s timer is no longer wanted.
    fn timer_cancel(&mut self, thread: ThreadId) {
        port::timer_cancel(thread.0);
    }
    /// `thread` (handle `handle`, null if its slot is free) must not run before tick `at`.
    fn suspend_until(&mut self, thread: ThreadId, handle: Thread, at: u64);
    /// `thread` (null if its slot is free) gets deadline `deadline` (a tick), and the
    /// scheduling decision must be made again.
    fn deadline_set(&mut self, thread: Thread, deadline: u64);
}

/// The running thread's API call: sleeping, throttling and rescheduling wait in `deferred`.
pub struct ApiCall<'a> {
    caller: Thread,
    deferred: &'a mut Deferred,
}

/// A timer expiry, in the timer interrupt: throttling and rescheduling happen at once. The
/// expiring timer is not aimed here: port.c, which holds the lock and the timer, arms it again
/// after the checks, for the target their `qf_sched::Expiry` reports (see `qf_rs_timer_expired`).
pub struct Timer {
    expiring: ThreadId,
}

/// Inside the kernel's scheduler: nothing is done.
pub struct InScheduler;

impl<'a> ZephyrKernel<'a, ApiCall<'a>> {
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
            entry: ApiCall { caller, deferred },
        }
    }
}

impl<'a> ZephyrKernel<'a, Timer> {
    /// The expiry of `expiring`'s timer at tick `now` (the timer interrupt).
    pub fn timer(threads: &'a Registry, expiring: ThreadId, now: u64) -> Self {
        ZephyrKernel {
            threads,
            now,
            entry: Timer { expiring },
        }
    }
}

impl<'a> ZephyrKernel<'a, InScheduler> {
    /// An entry from inside the kernel's scheduler at tick `now`.
    pub fn in_scheduler(threads: &'a Registry, now: u64) -> Self {
        ZephyrKernel {
            threads,
            now,
            entry: InScheduler,
        }
    }
}

impl Entry for ApiCall<'_> {
    fn suspend_until(&mut self, thread: ThreadId, handle: Thread, at: u64) {
        if handle == self.caller {
            // The thread waits for its next periodic activation: it sleeps right after the call.
            self.deferred.sleep_until = Some(at);
        } else if !handle.0.is_null() {
            self.deferred.throttle = Some((thread, handle, at));
        }
    }

    fn deadline_set(&mut self, thread: Thread, deadline: u64) {
        deadline_only(thread, deadline);
        self.deferred.reschedule = true;
    }
}

impl Entry for Timer {
    // The expiring timer is out of the timeout queue, and port.c aims it from the expiry's
    // report after the checks. qf-sched aims no other thread's timer from an expiry; if it
    // did, that one would be aimed at once.
    #[inline(always)]
    fn timer_arm(&mut self, thread: ThreadId, at: u64) {
        if thread != self.expiring {
            port::timer_arm(thread.0, at);
        }
    }

    #[inline(always)]
    fn timer_cancel(&mut self, thread: ThreadId) {
        if thread != self.expiring {
            port::timer_cancel(thread.0);
        }
    }

    fn suspend_until(&mut self, thread: ThreadId, handle: Thread, at: u64) {
        if !handle.0.is_null() {
            port::throttle(thread.0, handle, at);
        }
    }

    // Inlined into the expiry, whose every replenishment (B_ROUT) ends here.
    #[inline(always)]
    fn deadline_set(&mut self, thread: Thread, deadline: u64) {
        // Both under one hold of the kernel's scheduler lock: this is B_ROUT's kernel work.
        if thread.0.is_null() {
            port::reschedule();
        } else {
            port::deadline_set_reschedule(thread, deadline);
        }
    }
}

/// Sets the deadline of `thread` (nothing for a free slot's null handle) without rescheduling.
fn deadline_only(thread: Thread, deadline: u64) {
    if !thread.0.is_null() {
        port::deadline_set(thread, deadline);
    }
}

impl Entry for InScheduler {
    fn suspend_until(&mut self, _: ThreadId, _: Thread, _: u64) {}

    // The kernel is choosing the next thread already: the deadline only orders the run queue.
    fn deadline_set(&mut self, thread: Thread, deadline: u64) {
        deadline_only(thread, deadline);
    }
}

impl<E: Entry> Kernel for ZephyrKernel<'_, E> {
    fn now(&self) -> u64 {
        self.now
    }

    #[inline(always)]
    fn timer_arm(&mut self, thread: ThreadId, at: u64) {
        self.entry.timer_arm(thread, at);
    }

    #[inline(always)]
    fn timer_cancel(&mut self, thread: ThreadId) {
        self.entry.timer_cancel(thread);
    }

    #[inline(always)]
    fn deadline_set(&mut self, thread: ThreadId, deadline: u64) {
        let handle = self.threads.thread(thread);
        self.entry.deadline_set(handle, deadline);
    }

    fn suspend_until(&mut self, thread: ThreadId, at: u64) {
        let handle = self.threads.thread(thread);
        self.entry.suspend_until(thread, handle, at);
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
