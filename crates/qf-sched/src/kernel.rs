//! The seam between the scheduling logic and whatever runs it (Zephyr, the simulator, the MCU
//! emulator): a thread identifier and the services `qf-sched` needs from a kernel.

/// Index of a thread's control block in the [`Scheduler`](crate::Scheduler) pool.
///
/// The adapter assigns these (Zephyr: a slot in a static pool of `CONFIG_QFABRIC_MAX_THREADS`)
/// and maps them to its own thread handles. Valid values are `0..THREADS`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ThreadId(pub u16);

impl ThreadId {
    /// The pool index as `usize`.
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

/// What `qf-sched` needs from a kernel. Implemented by the Zephyr adapter (over FFI), the host
/// simulator and the MCU emulator; nothing else in this crate knows where it runs.
///
/// # Time
/// Every time value is a `u64` count of **one unit the adapter chooses** (Zephyr adapter: kernel
/// ticks from `k_uptime_ticks()`; simulator: ticks of the task set's `tick_hz`; nanoseconds would
/// do as well). [`now`](Kernel::now) and every duration passed to the [`Scheduler`] API
/// (relative deadlines, periods, budgets, WCETs) must use that same unit. The clock must be
/// monotonic and must not wrap within the system's lifetime (a 64-bit tick counter does not);
/// the 32-bit view that Zephyr's `prio_deadline` keeps is handled by [`crate::wrap32`].
///
/// # Context
/// Methods are called with the scheduler state locked (Zephyr: interrupts locked / scheduler
/// spinlock held), from the entry point that triggered them: a thread's own API call, a context
/// switch hook, or a timer-expiry handler. None of them may call back into the [`Scheduler`].
///
/// [`Scheduler`]: crate::Scheduler
pub trait Kernel {
    /// Current time in the adapter's unit.
    fn now(&self) -> u64;

    /// Arms (or re-arms, replacing any earlier target) `thread`'s one-shot timer to expire at
    /// absolute time `at`. On expiry the adapter calls
    /// [`Scheduler::timer_expired`](crate::Scheduler::timer_expired) for that thread. If `at` is
    /// already past the timer should expire as soon as possible. Expiring late (tick
    /// granularity) is fine; expiring early is tolerated too (the scheduler re-arms).
    fn timer_arm(&mut self, thread: ThreadId, at: u64);

    /// Disarms `thread`'s one-shot timer; a no-op if it is not armed.
    fn timer_cancel(&mut self, thread: ThreadId);

    /// Sets `thread`'s absolute scheduling deadline, the key the kernel's EDF run queue orders
    /// equal-priority threads by (Zephyr: `thread->base.prio_deadline`, compared as wrapping
    /// 32-bit values; see [`crate::wrap32`]), and has the kernel make its scheduling decision
    /// again at the next opportunity: a later deadline may let another thread ahead of the
    /// running one, which must not wait for the next scheduling point. The adapter repositions
    /// the thread in its run queue if it is queued, and re-decides when it can (Zephyr: at
    /// once in the timer interrupt, where nothing switches before the interrupt returns; after
    /// the lock's release in an API call; simulator: after every event anyway). One call for
    /// both because every deadline change needs the decision, and a kernel can do the two
    /// under one lock (Zephyr's budget exhaustion, B_ROUT, does).
    fn deadline_set(&mut self, thread: ThreadId, deadline: u64);

    /// Makes `thread` not runnable until absolute time `at`, after which it is ready again.
    ///
    /// Called in two situations:
    /// - from [`Scheduler::deadline_set`](crate::Scheduler::deadline_set), for the calling
    ///   thread, to wait for its next periodic activation. The adapter may block right here
    ///   (Zephyr: release the lock and `k_sleep` until `at`) or record the wait and block the
    ///   thread when the API call returns (simulator): the scheduler treats both alike, because
    ///   after this call it uses `at` as the activation time and never infers it from `now`.
    /// - from [`Scheduler::timer_expired`](crate::Scheduler::timer_expired) or a switch-in hook in
    ///   hard-reservation mode, for the running thread whose budget is exhausted (throttling).
    ///   The adapter takes it off the CPU at once or at the next scheduling decision (the
    ///   scheduler has just set its deadline, which asks for one) and makes it ready at `at`; it
    ///   must not block here.
    fn suspend_until(&mut self, thread: ThreadId, at: u64);
}
