//! One thread's control block and the per-thread half of the Figure 1 flow: ending a cycle,
//! starting the next one (with the CBS arrival rule), pausing/resuming the budget on context
//! switches, and reacting to the thread's one-shot timer (deadline miss, budget exhaustion).
//!
//! The thread's single kernel timer is multiplexed: it is armed at the earlier of the pending
//! deadline-miss check and the budget exhaustion instant, and `rearm` keeps it so.
//!
//! The steps that run inside a context-switch or timer hook are `#[inline]`, so each hook is
//! one function (`benches/hook_instructions.rs` counts its instructions per call); `record`
//! and `rearm`, called from many places, are left to the compiler, which keeps the MCU image
//! smaller and counted no more instructions. The switch hooks skip `rearm`'s general case when
//! they have just stopped or started the budget clock: `switched_out` aims the timer at the miss
//! check, `switched_in` at the earlier of it and `now + budget`, from values already at hand.
//! `exhaust` is inlined into the timer expiry, where budgets run out (B_ROUT); a budget found
//! empty when the clock starts takes a cold out-of-line copy. `start_cycle` has one caller and
//! is always inlined into it; what `deadline_set` reaches only rarely (a budget exhausted right
//! at the release, admission control, 128-bit CBS products) is `#[cold]` and out of line, so
//! the common cycle edge saves fewer registers.

use crate::cbs::Server;
use crate::event::{Event, EventKind, EventRing};
use crate::{Bandwidth, Kernel, ThreadId};

/// [`ControlBlock::timer_at`] when the thread's timer is aimed nowhere.
pub(crate) const NO_TIMER: u64 = 0;

/// [`ControlBlock::miss_at`] when no deadline-miss check is pending: never. No instant reaches
/// `u64::MAX` (the scheduler's saturating sums already use it for "never"), so `now >= miss_at`
/// needs no test of its own for the missing check, and the earlier of the check and a budget
/// exhaustion is a plain `min`. Set by `attach` (see [`ControlBlock::DETACHED`]).
pub(crate) const NO_MISS_CHECK: u64 = u64::MAX;

/// Signature of deadline-miss and budget-overrun callbacks: a plain function, so no
/// allocation or closure capture is needed; per-registration context travels in
/// [`Notice::arg`].
pub type CallbackFn = fn(&Notice);

/// A callback and the opaque argument it is registered with.
#[derive(Copy, Clone, Debug)]
pub struct Callback {
    /// Function to call.
    pub func: CallbackFn,
    /// Opaque value handed back in [`Notice::arg`] (an index, or a pointer cast to `usize`).
    pub arg: usize,
}

/// What a callback is told. It runs inside the timer-expiry entry point (interrupt context in
/// Zephyr, scheduler state locked), so it must be short and must not call the scheduler.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    /// The thread concerned.
    pub thread: ThreadId,
    /// When the callback runs (`Kernel::now`).
    pub time: u64,
    /// Deadline miss: the absolute deadline that was missed. Budget overrun: the server
    /// deadline after the overrun was handled.
    pub deadline: u64,
    /// The registered argument.
    pub arg: usize,
}

/// A timer aim as the API shows it: [`NO_TIMER`] is `None`.
const fn timer_target_of(timer_at: u64) -> Option<u64> {
    if timer_at == NO_TIMER {
        None
    } else {
        Some(timer_at)
    }
}

/// What one timer expiry found, beyond what it did.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Expiry {
    /// The pending deadline-miss check fired: DEADLINE_MISS was recorded and the miss callback
    /// has run. A port whose own callbacks must wait (Zephyr's run after the scheduler lock is
    /// released) runs them when it reads this.
    pub deadline_missed: bool,
    /// Where the expiry left the thread's timer aimed, [`NO_TIMER`] for nowhere (see
    /// [`Self::timer_target`]).
    timer_at: u64,
}

impl Expiry {
    /// Where the expiry left the thread's timer aimed (`None`: nowhere), as
    /// [`ControlBlock::timer_target`] then says. The expiring kernel timer has fired, so a port
    /// may arm it again for this instant after the expiry instead of inside
    /// [`Kernel::timer_arm`](crate::Kernel::timer_arm), which it may then leave alone for the
    /// expiring thread; the report comes in registers, the block would have to be read again.
    pub const fn timer_target(&self) -> Option<u64> {
        timer_target_of(self.timer_at)
    }
}

/// Per-thread scheduling state. Read it through the accessors; change it only through the
/// [`Scheduler`](crate::Scheduler) API.
#[derive(Copy, Clone, Debug, Default)]
pub struct ControlBlock {
    pub(crate) attached: bool,
    // Configuration, changed by the setters; none takes effect before the next deadline_set.
    pub(crate) period: u64,
    pub(crate) wcet: u64,
    pub(crate) hard_reservation: bool,
    pub(crate) miss_callback: Option<Callback>,
    pub(crate) overrun_callback: Option<Callback>,
    pub(crate) server: Server,
    // The current cycle (one job of the thread, from deadline_set to the next).
    pub(crate) cycle_active: bool,
    /// The current cycle's job arrived at the thread's CBS (so its budget clock may run).
    pub(crate) cycle_served: bool,
    pub(crate) release: u64,
    pub(crate) period_at_release: u64,
    pub(crate) deadline: u64,
    /// The deadline the pending miss check watches, or [`NO_MISS_CHECK`]. A plain `u64` for
    /// the reason given at `timer_at`: the timer expiry and the switch-in hook both take the
    /// earlier of it and the budget exhaustion.
    pub(crate) miss_at: u64,
    // Budget accounting and kernel-facing state.
    pub(crate) budget_running_since: Option<u64>,
    pub(crate) throttled_until: Option<u64>,
    pub(crate) on_cpu: bool,
    /// Where the kernel timer is aimed; [`NO_TIMER`] (tick 0) for nowhere. A plain `u64`, not
    /// an `Option`: every switch and budget exhaustion compares and stores it, and on 32-bit
    /// MCUs an `Option<u64>` carries a 64-bit tag (two more stores and a test each time). Tick 0
    /// is never a target: a deadline is at least one unit after its release, and an exhaustion
    /// at least one unit after the budget clock started (a running budget is never empty).
    pub(crate) timer_at: u64,
    pub(crate) admitted: Bandwidth,
    /// The (numerator, denominator) `admitted` was computed from: a thread that keeps its
    /// budget and relative deadline asks for the same bandwidth every cycle, and the division
    /// need not be done again.
    pub(crate) admitted_for: Option<(u64, u64)>,
    /// Admission control is on and this is a CBS thread without a period: its reservation's
    /// window is the relative deadline, admitted by `deadline_set` when it changes.
    pub(crate) admit_on_release: bool,
    /// `admitted_for` was admitted by a release, which decides without dividing: `admitted` is
    /// not computed yet and the scheduler's total leaves it out until it is (see
    /// [`Scheduler`](crate::Scheduler)'s `settle`).
    pub(crate) admitted_unsettled: bool,
}

/// The part of a control block a reservation is computed from: what a setter changes, tried
/// on its own (24 bytes) before the block is, so a refused change needs no copy of the block.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Reservation {
    pub(crate) period: u64,
    pub(crate) wcet: u64,
    pub(crate) budget_max: u64,
}

impl Reservation {
    /// The reservation asked for, as the ratio (numerator, denominator): `Q/period` for a
    /// periodic CBS, `WCET/period` for a periodic thread with a declared WCET, none (0/1)
    /// otherwise; `None` for a CBS without a period, whose window is the relative deadline of
    /// each `deadline_set`.
    pub(crate) fn terms(self) -> Option<(u64, u64)> {
        if self.budget_max > 0 {
            (self.period > 0).then_some((self.budget_max, self.period))
        } else if self.period > 0 && self.wcet > 0 {
            Some((self.wcet, self.period))
        } else {
            Some((0, 1))
        }
    }
}

impl ControlBlock {
    /// A detached, unconfigured block (what every pool slot starts as). All zeros, `miss_at`
    /// too, though zero is not [`NO_MISS_CHECK`]: a detached block's state means nothing until
    /// `attach` starts it from [`Self::ATTACHED`], and all zeros keeps a static scheduler in
    /// .bss (any other value puts the whole of it in .data, whose image the MCU's boot memory
    /// must also hold: 1.6 KiB in the Zephyr image).
    pub const DETACHED: ControlBlock = ControlBlock {
        attached: false,
        period: 0,
        wcet: 0,
        hard_reservation: false,
        miss_callback: None,
        overrun_callback: None,
        server: Server {
            budget_max: 0,
            period: 0,
            budget: 0,
            deadline: 0,
        },
        cycle_active: false,
        cycle_served: false,
        release: 0,
        period_at_release: 0,
        deadline: 0,
        miss_at: 0,
        budget_running_since: None,
        throttled_until: None,
        on_cpu: false,
        timer_at: NO_TIMER,
        admitted: Bandwidth::ZERO,
        admitted_for: None,
        admit_on_release: false,
        admitted_unsettled: false,
    };

    /// What `attach` gives a slot: attached, unconfigured, no check pending.
    pub(crate) const ATTACHED: ControlBlock = ControlBlock {
        attached: true,
        miss_at: NO_MISS_CHECK,
        ..Self::DETACHED
    };

    /// Whether the slot is attached to a thread.
    pub const fn is_attached(&self) -> bool {
        self.attached
    }
    /// Configured period (0: not periodic).
    pub const fn period(&self) -> u64 {
        self.period
    }
    /// CBS maximum budget `Q` (0: no CBS).
    pub const fn budget_max(&self) -> u64 {
        self.server.budget_max
    }
    /// CBS remaining budget `c` as of the last accounting point (switch, timer, cycle edge).
    pub const fn budget(&self) -> u64 {
        self.server.budget
    }
    /// CBS server period `T` (the last relative deadline given to `deadline_set`).
    pub const fn server_period(&self) -> u64 {
        self.server.period
    }
    /// The absolute deadline the kernel currently schedules this thread by.
    pub const fn deadline(&self) -> u64 {
        self.deadline
    }
    /// Where the thread's one-shot timer is aimed (`None`: nowhere). A kernel timer that fires
    /// before this instant fired early (it was aimed later since): no check of
    /// [`crate::Scheduler::timer_expired`] is due before this instant (every change that brings
    /// one earlier aims the timer again), so an adapter may just set its timer again for it.
    pub const fn timer_target(&self) -> Option<u64> {
        timer_target_of(self.timer_at)
    }
    /// The absolute deadline the pending deadline-miss check watches: the cycle's deadline as
    /// set when it started (a CBS postponement does not move it). `None` once the cycle ended,
    /// the check fired, or no miss callback is set.
    pub const fn miss_check_at(&self) -> Option<u64> {
        if self.attached {
            self.pending_miss_check()
        } else {
            None
        }
    }

    /// [`Self::miss_check_at`] of an attached block.
    const fn pending_miss_check(&self) -> Option<u64> {
        if self.miss_at == NO_MISS_CHECK {
            None
        } else {
            Some(self.miss_at)
        }
    }
    /// The current cycle's activation time.
    pub const fn release(&self) -> u64 {
        self.release
    }
    /// True between the start of a cycle and its end.
    pub const fn cycle_active(&self) -> bool {
        self.cycle_active
    }
    /// `Some(t)` while throttled by a hard reservation, until `t`.
    pub const fn throttled_until(&self) -> Option<u64> {
        self.throttled_until
    }
    /// Bandwidth currently admitted for this thread (counted only with admission control on).
    pub const fn admitted(&self) -> Bandwidth {
        match self.admitted_for {
            Some((numerator, denominator)) if self.admitted_unsettled => {
                match Bandwidth::ratio(numerator, denominator) {
                    Some(admitted) => admitted,
                    None => Bandwidth::ZERO,
                }
            }
            _ => self.admitted,
        }
    }

    /// The configuration a reservation is computed from.
    pub(crate) const fn reservation(&self) -> Reservation {
        Reservation {
            period: self.period,
            wcet: self.wcet,
            budget_max: self.server.budget_max,
        }
    }

    /// Takes a reservation's terms (what [`Scheduler`](crate::Scheduler)'s setters change).
    pub(crate) fn set_reservation(&mut self, reservation: Reservation) {
        self.period = reservation.period;
        self.wcet = reservation.wcet;
        self.server.budget_max = reservation.budget_max;
    }

    /// The reservation the configuration asks for (see [`Reservation::terms`]).
    pub(crate) fn reservation_terms(&self) -> Option<(u64, u64)> {
        self.reservation().terms()
    }

    /// The bandwidth [`Self::reservation_terms`] stand for (the admitted one if they are the
    /// terms it was computed from). Called where every block is settled, or with terms other
    /// than an unsettled block's (a refused window), so `admitted` is read as it is.
    pub(crate) fn requested_bandwidth(&self, terms: (u64, u64)) -> Bandwidth {
        if self.admitted_for == Some(terms) && !self.admitted_unsettled {
            return self.admitted;
        }
        Bandwidth::ratio(terms.0, terms.1).unwrap_or(Bandwidth::ZERO)
    }

    fn record<const E: usize>(
        &self,
        ring: &mut EventRing<E>,
        id: ThreadId,
        time: u64,
        kind: EventKind,
    ) {
        ring.push(Event {
            time,
            thread: id,
            kind,
            budget: self.server.budget,
            deadline: self.deadline(),
        });
    }

    /// Stops the budget clock, charging the time run since it started. Returns whether it ran.
    #[inline]
    fn pause_budget(&mut self, now: u64) -> bool {
        // Tested before it is cleared: a stopped clock (the common case at a cycle end under a
        // non-blocking adapter) then costs no store.
        let Some(since) = self.budget_running_since else {
            return false;
        };
        self.budget_running_since = None;
        self.server.charge(now.saturating_sub(since));
        true
    }

    /// Ends the current cycle at `now`: the CBS job ends (budget charged, clock stopped) and
    /// the deadline-miss check is dropped so no false miss fires.
    #[inline]
    pub(crate) fn end_cycle<const E: usize>(
        &mut self,
        ring: &mut EventRing<E>,
        id: ThreadId,
        now: u64,
    ) {
        if !self.cycle_active {
            return;
        }
        self.pause_budget(now);
        self.miss_at = NO_MISS_CHECK;
        self.cycle_active = false;
        self.record(ring, id, now, EventKind::Complete);
    }

    /// Starts a cycle released at `release` with relative deadline `rel` (Figure 1's upper
    /// path): CBS arrival rule, new absolute deadline, deadline-miss check, budget clock.
    // Always inlined: with one caller, a separate function only adds a call and a second set
    // of saved registers to every `deadline_set` (the compiler's own choice varied with
    // unrelated edits, by up to 30 instructions per call).
    #[inline(always)]
    pub(crate) fn start_cycle<K: Kernel, const E: usize>(
        &mut self,
        kernel: &mut K,
        ring: &mut EventRing<E>,
        id: ThreadId,
        release: u64,
        rel: u64,
        now: u64,
    ) {
        self.cycle_active = true;
        self.release = release;
        self.period_at_release = self.period;
        self.cycle_served = self.server.enabled();
        let replenished = if self.cycle_served {
            let replenished = self.server.arrive(release, rel);
            self.deadline = self.server.deadline;
            self.record(ring, id, release, EventKind::Arrival);
            replenished
        } else {
            self.deadline = release.saturating_add(rel);
            self.record(ring, id, release, EventKind::Release);
            false
        };
        if replenished {
            self.record(ring, id, release, EventKind::BudgetCondition);
        }
        // A later deadline for the caller must let an earlier one run now, not at the next
        // scheduling point (Zephyr's own deadline_set waits for one), so the kernel decides
        // again; a thread about to sleep until its release switches away anyway, and the
        // adapter knows which comes first.
        kernel.deadline_set(id, self.deadline);
        // No check is pending here (the previous cycle's was dropped by `end_cycle`, or there
        // was no previous cycle), so only a thread with a callback has anything to set.
        if self.miss_callback.is_some() {
            self.miss_at = self.deadline;
        }
        // A blocking adapter returns from the suspension already switched back in (now ≥
        // release): the budget clock starts here. A non-blocking one calls this before the
        // thread sleeps; the clock then starts at the switch-in after the release.
        if self.on_cpu && now >= release {
            self.resume_budget_at_release(kernel, ring, id, now);
        }
        self.rearm(kernel, id);
    }

    /// [`Self::resume_budget`] for a cycle that starts with the thread on the CPU (a blocking
    /// adapter back from its suspension). Out of line and cold for `deadline_set`'s sake: what
    /// it may call (exhaustion, callbacks) would otherwise keep registers saved on every call.
    #[cold]
    #[inline(never)]
    fn resume_budget_at_release<K: Kernel, const E: usize>(
        &mut self,
        kernel: &mut K,
        ring: &mut EventRing<E>,
        id: ThreadId,
        now: u64,
    ) {
        self.resume_budget(kernel, ring, id, now);
    }

    /// Starts the budget clock if this thread has a CBS job released and is not throttled.
    /// Returns whether it started with budget left (so it runs out at `now + budget`).
    #[inline]
    fn resume_budget<K: Kernel, const E: usize>(
        &mut self,
        kernel: &mut K,
        ring: &mut EventRing<E>,
        id: ThreadId,
        now: u64,
    ) -> bool {
        if !self.cycle_served
            || !self.cycle_active
            || now < self.release
            || self.throttled_until.is_some()
            || self.budget_running_since.is_some()
        {
            return false;
        }
        self.budget_running_since = Some(now);
        self.record(ring, id, now, EventKind::SwitchedTo);
        if self.server.budget == 0 {
            self.exhaust_at_resume(kernel, ring, id, now);
            return false;
        }
        true
    }

    /// [`Self::exhaust`] for a budget found empty when the clock starts: rare, so out of line
    /// and cold, leaving `exhaust` inlined into the timer expiry, its common caller (B_ROUT).
    #[cold]
    #[inline(never)]
    fn exhaust_at_resume<K: Kernel, const E: usize>(
        &mut self,
        kernel: &mut K,
        ring: &mut EventRing<E>,
        id: ThreadId,
        now: u64,
    ) {
        let _ = self.exhaust(kernel, ring, id, now);
    }

    /// SWT_TO: the thread got the CPU.
    #[inline]
    pub(crate) fn switched_in<K: Kernel, const E: usize>(
        &mut self,
        kernel: &mut K,
        ring: &mut EventRing<E>,
        id: ThreadId,
        now: u64,
    ) {
        self.on_cpu = true;
        if let Some(until) = self.throttled_until {
            if now < until {
                return;
            }
            // Hard reservation: the throttling period is over, refill (the deadline already
            // moved when the thread was throttled).
            self.throttled_until = None;
            self.server.budget = self.server.budget_max;
            self.record(ring, id, now, EventKind::BudgetReplenish);
        }
        if self.resume_budget(kernel, ring, id, now) {
            // `rearm` with the clock just started at `now`, from the values at hand.
            let exhaustion = now.saturating_add(self.server.budget);
            self.aim_timer(kernel, id, Some(self.miss_at.min(exhaustion)));
        } else {
            self.rearm(kernel, id);
        }
    }

    /// SWT_AY: the thread lost the CPU.
    #[inline]
    pub(crate) fn switched_out<K: Kernel, const E: usize>(
        &mut self,
        kernel: &mut K,
        ring: &mut EventRing<E>,
        id: ThreadId,
        now: u64,
    ) {
        self.on_cpu = false;
        if self.pause_budget(now) {
            self.record(ring, id, now, EventKind::SwitchedAway);
            // `rearm` with the clock just stopped: only the miss check is left to watch.
            self.aim_timer(kernel, id, self.pending_miss_check());
        }
    }

    /// The thread's timer fired: check the deadline and the budget, then re-arm.
    ///
    /// What the common budget exhaustion (B_ROUT) does not need — a deadline miss, a hard
    /// reservation's throttling, an overrun callback — is out of line and cold, so the expiry
    /// keeps few values live and saves few registers; B_ROUT then re-aims the timer from the
    /// values at hand (as `switched_in` does) instead of through `rearm`.
    ///
    /// A stale expiry (the timer was aimed later, or the clock started, since the kernel timer
    /// was set) finds nothing due: the budget test asks whether `now` is at least one budget
    /// past the instant the clock started, so an expiry from before that instant charges
    /// nothing, and the timer is aimed again.
    #[inline]
    pub(crate) fn timer_expired<K: Kernel, const E: usize>(
        &mut self,
        kernel: &mut K,
        ring: &mut EventRing<E>,
        id: ThreadId,
        now: u64,
    ) -> Expiry {
        // A miss takes its own (cold) copy of the checks, so the common expiry's report is a
        // constant: an adapter's test of it vanishes instead of joining two paths.
        if now >= self.miss_at {
            return Expiry {
                deadline_missed: true,
                timer_at: self.timer_expired_at_miss(kernel, ring, id, now),
            };
        }
        Expiry {
            deadline_missed: false,
            timer_at: self.check_budget(kernel, ring, id, now, true),
        }
    }

    /// [`Self::timer_expired`] when the deadline-miss check is due: the cycle is still running
    /// at its deadline, so DEADLINE_MISS and the callback, then the budget check as usual.
    /// Returns the timer's new aim as [`Self::check_budget`] does.
    #[cold]
    #[inline(never)]
    fn timer_expired_at_miss<K: Kernel, const E: usize>(
        &mut self,
        kernel: &mut K,
        ring: &mut EventRing<E>,
        id: ThreadId,
        now: u64,
    ) -> u64 {
        let missed = self.miss_at;
        self.miss_at = NO_MISS_CHECK;
        ring.push(Event {
            time: now,
            thread: id,
            kind: EventKind::DeadlineMiss,
            budget: self.server.budget,
            deadline: missed,
        });
        if let Some(callback) = self.miss_callback {
            (callback.func)(&Notice {
                thread: id,
                time: now,
                deadline: missed,
                arg: callback.arg,
            });
        }
        self.check_budget(kernel, ring, id, now, false)
    }

    /// The budget half of a timer expiry: exhaustion if the budget ran out, then the timer
    /// aimed at the next check. `miss_not_due`: the deadline-miss check is not due at `now`.
    /// Returns the timer's new aim (`timer_at`), from registers where it was just worked out.
    #[inline(always)]
    fn check_budget<K: Kernel, const E: usize>(
        &mut self,
        kernel: &mut K,
        ring: &mut EventRing<E>,
        id: ThreadId,
        now: u64,
        miss_not_due: bool,
    ) -> u64 {
        // Only a job that arrived at the server starts the clock (`resume_budget`), and every
        // change that ends that stops it: a running clock needs no test of `cycle_served`.
        debug_assert!(self.budget_running_since.is_none() || self.cycle_served);
        if let Some(since) = self.budget_running_since {
            // While the clock runs the timer points at the earlier of the miss check and the
            // exhaustion (every change to either aims it again): with the miss not due, a timer
            // that fired at its target is the exhaustion. The equality costs less than the
            // budget test, which a port that passes the target as `now` then never runs.
            let used_up = if miss_not_due && now == self.timer_at {
                debug_assert!(now.checked_sub(since) >= Some(self.server.budget));
                true
            } else {
                // One subtraction gives both the time run and, in its borrow, whether `now` is
                // before `since` (a stale expiry, nothing run).
                let (ran, stale) = now.overflowing_sub(since);
                !stale && ran >= self.server.budget
            };
            if used_up && self.exhaust(kernel, ring, id, now) {
                // The clock restarted at `now` on a full budget: `rearm` from the values at hand,
                // and without `aim_timer`'s comparison (the kernel timer just fired: whatever
                // `timer_at` says, it is not armed).
                // The earlier of the miss check and the exhaustion, as `switched_in` takes it,
                // but here the check is not past (a due one was handled first and dropped, to
                // `u64::MAX`), so the exhaustion is the earlier only when it is below `miss_at`,
                // where its sum cannot wrap: no saturating sum, whose carry the 32-bit targets
                // materialise (3 instructions of B_ROUT on the M33).
                debug_assert!(self.miss_at >= now);
                let room = self.miss_at.wrapping_sub(now);
                let target = if self.server.budget < room {
                    now.wrapping_add(self.server.budget)
                } else {
                    self.miss_at
                };
                debug_assert_ne!(target, NO_TIMER);
                self.timer_at = target;
                kernel.timer_arm(id, target);
                return target;
            }
        }
        // The kernel timer fired, so it is no longer armed, whatever it was aimed at.
        self.timer_at = NO_TIMER;
        self.rearm(kernel, id);
        self.timer_at
    }

    /// The budget is used up while the job still runs (the clock is running): B_ROUT, or
    /// throttling in hard-reservation mode when the server deadline is still ahead. Returns
    /// whether the budget clock runs on (B_ROUT: restarted at `now` on a full budget).
    #[inline(always)]
    fn exhaust<K: Kernel, const E: usize>(
        &mut self,
        kernel: &mut K,
        ring: &mut EventRing<E>,
        id: ThreadId,
        now: u64,
    ) -> bool {
        if self.hard_reservation && self.server.deadline > now {
            self.throttle(kernel, ring, id, now);
            return false;
        }
        self.server.postpone();
        self.deadline = self.server.deadline;
        // The clock runs (both callers found it running): it restarts at `now`. Only the
        // instant is written: storing the whole `Option` again also stores its tag (two
        // words on a 32-bit MCU).
        if let Some(since) = self.budget_running_since.as_mut() {
            *since = now;
        }
        kernel.deadline_set(id, self.deadline);
        self.record(ring, id, now, EventKind::BudgetReplenish);
        if self.overrun_callback.is_some() {
            self.notify_overrun(id, now);
        }
        true
    }

    /// [`Self::exhaust`] in hard-reservation mode with the server deadline ahead: the thread is
    /// suspended until that deadline, which moves one server period on (THROTTLE).
    #[cold]
    #[inline(never)]
    fn throttle<K: Kernel, const E: usize>(
        &mut self,
        kernel: &mut K,
        ring: &mut EventRing<E>,
        id: ThreadId,
        now: u64,
    ) {
        let old_deadline = self.server.deadline;
        self.server.budget = 0;
        self.budget_running_since = None;
        self.throttled_until = Some(old_deadline);
        self.server.deadline = old_deadline.saturating_add(self.server.period);
        self.deadline = self.server.deadline;
        kernel.deadline_set(id, self.deadline);
        self.record(ring, id, now, EventKind::Throttle);
        kernel.suspend_until(id, old_deadline);
        self.notify_overrun(id, now);
    }

    /// Runs the budget-overrun callback, if one is set, after an exhaustion was handled.
    #[cold]
    #[inline(never)]
    fn notify_overrun(&self, id: ThreadId, now: u64) {
        if let Some(callback) = self.overrun_callback {
            (callback.func)(&Notice {
                thread: id,
                time: now,
                deadline: self.deadline,
                arg: callback.arg,
            });
        }
    }

    /// Points the thread's one-shot timer at the earliest pending check, talking to the kernel
    /// only when that instant changes.
    // Never inlined: the hooks and the expiry call it off their common paths, where its code
    // inlined only lengthens those paths (the switch-in hook by 5 instructions on the M33, once
    // the Zephyr adapter's kernel became small enough for the compiler to inline it).
    #[inline(never)]
    pub(crate) fn rearm<K: Kernel>(&mut self, kernel: &mut K, id: ThreadId) {
        // Read in this order: the M33 code for the other order came out 8 bytes longer.
        let miss = self.pending_miss_check();
        let exhaustion = self
            .budget_running_since
            .map(|since| since.saturating_add(self.server.budget));
        let target = match (miss, exhaustion) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.aim_timer(kernel, id, target);
    }

    /// Points the timer at `target`, the earliest pending check as `rearm` works it out.
    #[inline]
    fn aim_timer<K: Kernel>(&mut self, kernel: &mut K, id: ThreadId, target: Option<u64>) {
        // Each case tests and stores its own value (one merged `unwrap_or` path selected
        // between them and cost the M33's switch-out hook nine instructions).
        match target {
            Some(at) => {
                debug_assert_ne!(at, NO_TIMER);
                if at != self.timer_at {
                    self.timer_at = at;
                    kernel.timer_arm(id, at);
                }
            }
            None => {
                if self.timer_at != NO_TIMER {
                    self.timer_at = NO_TIMER;
                    kernel.timer_cancel(id);
                }
            }
        }
    }
}
