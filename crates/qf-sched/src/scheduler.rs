//! The scheduler: a fixed pool of per-thread control blocks, the event ring, admission control,
//! and the entry points a kernel calls — the thread API (`deadline_set`, `period_set`, ...), the
//! context-switch hooks and the timer-expiry handler. Figure 1's lower path (cycle end, period
//! check, suspension) lives in [`Scheduler::deadline_set`]; the per-thread steps are in
//! [`crate::ControlBlock`].

use crate::control::{Callback, ControlBlock, Expiry, Reservation, NO_TIMER};
use crate::event::{Event, EventKind, EventRing};
use crate::{Bandwidth, Error, Kernel, ThreadId};

/// Periodic EDF and per-thread CBS for up to `THREADS` threads, tracing into a ring of `EVENTS`
/// events. No allocation: size it once (Zephyr: `CONFIG_QFABRIC_MAX_THREADS`) and keep it in a
/// static behind the kernel's scheduler lock.
///
/// Every method takes the thread by [`ThreadId`] and returns an [`Error`] status rather than
/// panicking, whatever the input. Methods that act take the [`Kernel`] they act on.
#[derive(Clone, Debug)]
// In declaration order, the trace first: its slots then sit at the scheduler's own address, so
// every traced hook addresses them without a register of their own.
#[repr(C)]
pub struct Scheduler<const THREADS: usize, const EVENTS: usize> {
    events: EventRing<EVENTS>,
    threads: [ControlBlock; THREADS],
    admission_bound: Option<Bandwidth>,
    /// The bandwidth admitted, but for the one block a release admitted last (`unsettled`),
    /// whose share is computed only when something else needs it ([`Self::settle`]).
    admitted_total: Bandwidth,
    /// The slot whose admitted bandwidth is not in `admitted_total` yet (see
    /// [`ControlBlock::admitted_unsettled`]), as its index plus one; 0 for none, so that a
    /// static scheduler is all zeros and stays in .bss (see [`ControlBlock::DETACHED`]; an
    /// `Option` costs the window test seven instructions more on the M33).
    unsettled: usize,
}

impl<const THREADS: usize, const EVENTS: usize> Default for Scheduler<THREADS, EVENTS> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const THREADS: usize, const EVENTS: usize> Scheduler<THREADS, EVENTS> {
    /// A scheduler with every slot detached, admission control off and an empty trace.
    pub const fn new() -> Self {
        Self {
            threads: [ControlBlock::DETACHED; THREADS],
            events: EventRing::new(),
            admission_bound: None,
            admitted_total: Bandwidth::ZERO,
            unsettled: 0,
        }
    }

    /// Computes the bandwidth a release admitted without dividing and adds it to the total.
    /// Every admission but a release's, `detach` and turning admission on or off start with it.
    fn settle(&mut self) {
        if let Some(block) = self
            .unsettled
            .checked_sub(1)
            .and_then(|index| self.threads.get_mut(index))
        {
            block.admitted = block.admitted();
            block.admitted_unsettled = false;
            self.admitted_total = self.admitted_total.saturating_add(block.admitted);
        }
        self.unsettled = 0;
    }

    /// The admission test of a release: a CBS thread without a period whose relative deadline
    /// `rel` (its server period, so the window of its reservation) changed. Decided by
    /// multiplication ([`Bandwidth::admits`]): an admitted window is recorded in the block with
    /// its bandwidth left to compute ([`Self::settle`]) when the next admission, a detach or a
    /// reader needs it, so the release divides nothing. A refusal changes nothing (settling
    /// another block changes no figure anyone reads). Out of line and cold: it runs only when
    /// the window changes.
    #[cold]
    #[inline(never)]
    fn admit_window(&mut self, index: usize, rel: u64) -> Result<(), Error> {
        // `index` is a slot's (checked by the caller), so `index + 1` does not overflow.
        let mark = index.wrapping_add(1);
        if self.unsettled != 0 && self.unsettled != mark {
            self.settle();
        }
        let (Some(bound), Some(block)) = (self.admission_bound, self.threads.get_mut(index)) else {
            return Ok(());
        };
        let terms = (block.server.budget_max, rel);
        // The total leaves out an unsettled block: this one, if its last window came so.
        let own = if self.unsettled == mark {
            Bandwidth::ZERO
        } else {
            block.admitted
        };
        // The total holds every settled block's share, so it is at least this one's.
        let others = self.admitted_total.wrapping_sub(own);
        match bound.checked_sub(others) {
            Some(room) if room.admits(terms.0, terms.1) => {}
            _ => return Err(refusal(block.requested_bandwidth(terms), others, bound)),
        }
        block.admitted_for = Some(terms);
        block.admitted_unsettled = true;
        self.admitted_total = others;
        self.unsettled = mark;
        Ok(())
    }

    fn slot(&mut self, id: ThreadId) -> Result<&mut ControlBlock, Error> {
        self.slot_and_trace(id).map(|(block, _)| block)
    }

    /// The attached control block of `id` together with the trace, borrowed apart.
    fn slot_and_trace(
        &mut self,
        id: ThreadId,
    ) -> Result<(&mut ControlBlock, &mut EventRing<EVENTS>), Error> {
        let Self {
            threads, events, ..
        } = self;
        match threads.get_mut(id.index()) {
            Some(block) if block.attached => Ok((block, events)),
            _ => Err(Error::UnknownThread),
        }
    }

    /// Read-only view of a thread's control block (`None` if out of range or detached).
    pub fn thread(&self, id: ThreadId) -> Option<&ControlBlock> {
        self.threads.get(id.index()).filter(|block| block.attached)
    }

    /// The trace: drain it regularly (it overwrites the oldest entries when full).
    pub fn events(&mut self) -> &mut EventRing<EVENTS> {
        &mut self.events
    }

    /// Claims slot `id` for a thread. Until configured otherwise the thread behaves like plain
    /// Zephyr EDF: `deadline_set` only sets its absolute deadline.
    pub fn attach(&mut self, id: ThreadId) -> Result<(), Error> {
        match self.threads.get_mut(id.index()) {
            None => Err(Error::UnknownThread),
            Some(block) if block.attached => Err(Error::AlreadyAttached),
            Some(block) => {
                *block = ControlBlock::ATTACHED;
                Ok(())
            }
        }
    }

    /// Releases slot `id` (thread exit): cancels its timer and returns its admitted bandwidth.
    pub fn detach<K: Kernel>(&mut self, kernel: &mut K, id: ThreadId) -> Result<(), Error> {
        self.slot(id)?;
        self.settle();
        let block = self.slot(id)?;
        let admitted = block.admitted;
        if block.timer_at != NO_TIMER {
            kernel.timer_cancel(id);
        }
        *block = ControlBlock::DETACHED;
        self.admitted_total = self.admitted_total.saturating_sub(admitted);
        Ok(())
    }

    /// `k_thread_period_set`: sets (0: clears) the thread's period. A setter only: it is
    /// enforced by the next `deadline_set`, which computes the next activation from the period
    /// current at that moment (so a mid-cycle change takes effect at once).
    ///
    /// With admission control on, a period that changes the thread's reservation (`Q/period`
    /// with a CBS, `WCET/period` with a declared WCET) is admitted here, or refused with
    /// [`Error::AdmissionRejected`] changing nothing.
    pub fn period_set(&mut self, id: ThreadId, period: u64) -> Result<(), Error> {
        self.reconfigure(id, |reservation| reservation.period = period)
            .map(drop)
    }

    /// `k_thread_deadline_miss_callback_set`: sets or clears the callback run when a cycle is
    /// still running at its absolute deadline. A setter only: the check is armed by the next
    /// `deadline_set`.
    pub fn deadline_miss_callback_set(
        &mut self,
        id: ThreadId,
        callback: Option<Callback>,
    ) -> Result<(), Error> {
        self.slot(id)?.miss_callback = callback;
        Ok(())
    }

    /// Gives the thread a private CBS with maximum budget `budget` (0 removes it). The server
    /// period is the relative deadline passed to each `deadline_set`. A new server starts with
    /// `c = 0, d = 0`, so its first job always replenishes. Like the other setters it takes
    /// effect from the next cycle (a changed `Q` at the next job arrival), except that removing
    /// the server stops its budget clock at once.
    ///
    /// With admission control on, the new reservation is admitted here (`Q/period` for a
    /// periodic thread; a thread without a period is admitted at its next `deadline_set`, whose
    /// relative deadline is its server period), or refused with [`Error::AdmissionRejected`]
    /// changing nothing.
    pub fn cbs_budget_set(&mut self, id: ThreadId, budget: u64) -> Result<(), Error> {
        let before = self.reconfigure(id, |reservation| reservation.budget_max = budget)?;
        if budget == 0 || before.budget_max == 0 {
            // The server is removed or new: no budget, deadline or running clock of before.
            let block = self.slot(id)?;
            block.server.budget = 0;
            block.server.deadline = 0;
            block.budget_running_since = None;
            block.cycle_served = false;
        }
        Ok(())
    }

    /// Hard-reservation mode (off by default, beyond the paper): on budget exhaustion with work
    /// left, the thread is suspended until its server deadline and refilled then, instead of
    /// getting a postponed deadline at once. Limits a CBS thread to `Q` per server period even
    /// when the CPU is otherwise idle.
    pub fn hard_reservation_set(&mut self, id: ThreadId, enabled: bool) -> Result<(), Error> {
        self.slot(id)?.hard_reservation = enabled;
        Ok(())
    }

    /// Sets or clears the callback run whenever the thread's CBS budget is exhausted with work
    /// left (beyond the paper; off by default).
    pub fn budget_overrun_callback_set(
        &mut self,
        id: ThreadId,
        callback: Option<Callback>,
    ) -> Result<(), Error> {
        self.slot(id)?.overrun_callback = callback;
        Ok(())
    }

    /// Declares a periodic thread's worst-case execution time, used only by admission control
    /// (`WCET/period`). A periodic thread without a declared WCET is not accounted.
    pub fn wcet_set(&mut self, id: ThreadId, wcet: u64) -> Result<(), Error> {
        self.reconfigure(id, |reservation| reservation.wcet = wcet)
            .map(drop)
    }

    /// Applies a setter to the block's [`Reservation`] (period, WCET, budget): with admission
    /// control on, the new reservation is admitted before the block takes it, so a refused
    /// change changes nothing and no copy of the block is made. Returns the reservation as it
    /// was. The one place reservations are admitted, apart from a period-less
    /// CBS thread's relative deadline.
    fn reconfigure(
        &mut self,
        id: ThreadId,
        reserve: impl FnOnce(&mut Reservation),
    ) -> Result<Reservation, Error> {
        self.slot(id)?;
        self.settle();
        let (bound, total) = (self.admission_bound, self.admitted_total);
        let block = self.slot(id)?;
        let before = block.reservation();
        let mut reservation = before;
        reserve(&mut reservation);
        let mut admitted_total = total;
        if let Some(bound) = bound {
            // `admit` records the admitted bandwidth in the block only once it is admitted.
            let admit_on_release;
            (admitted_total, admit_on_release) = match reservation.terms() {
                Some(terms) => (admit(block, terms, bound, total)?, false),
                // A CBS without a period: its window is the next relative deadline.
                None => (total, true),
            };
            block.admit_on_release = admit_on_release;
        }
        block.set_reservation(reservation);
        self.admitted_total = admitted_total;
        Ok(before)
    }

    /// Admission control (off by default, beyond the paper): with `Some(bound)`, a change of
    /// reservation that would raise the total admitted bandwidth above `bound` is refused with
    /// [`Error::AdmissionRejected`] and changes nothing. Bandwidth is `Q/period` for a periodic
    /// CBS thread, `Q/rel` for a CBS thread without a period (admitted by `deadline_set` when
    /// `rel` changes), `WCET/period` for a periodic thread with a declared WCET. Reservations
    /// are tested where they change (the setters), so a release with admission on tests
    /// nothing, except a period-less CBS thread's release with a new `rel`, which decides by
    /// multiplication and leaves the division to the next setter, detach or reader. Turning it on accounts the attached threads as they are now
    /// (even above the bound: they run already); turning it off forgets the accounting.
    pub fn admission_bound_set(&mut self, bound: Option<Bandwidth>) {
        self.settle();
        self.admission_bound = bound;
        let mut total = Bandwidth::ZERO;
        for block in self.threads.iter_mut().filter(|block| block.attached) {
            let terms = match (bound, block.reservation_terms()) {
                (None, _) => (0, 1),
                (Some(_), Some(terms)) => terms,
                (Some(_), None) => (block.server.budget_max, block.server.period),
            };
            block.admit_on_release = bound.is_some() && block.reservation_terms().is_none();
            block.admitted = block.requested_bandwidth(terms);
            block.admitted_for = Some(terms);
            total = total.saturating_add(block.admitted);
        }
        self.admitted_total = total;
    }

    /// The bound admission control keeps the total under (`None`: off).
    pub fn admission_bound(&self) -> Option<Bandwidth> {
        self.admission_bound
    }

    /// Sum of the bandwidth currently admitted (only maintained while admission control is on).
    pub fn admitted_total(&self) -> Bandwidth {
        match self
            .unsettled
            .checked_sub(1)
            .and_then(|index| self.threads.get(index))
        {
            Some(block) => self.admitted_total.saturating_add(block.admitted()),
            None => self.admitted_total,
        }
    }

    /// `k_thread_deadline_set`, Figure 1. Called by thread `id` itself with its relative
    /// deadline `rel` (also its CBS server period). In order:
    ///
    /// 1. Admission control, only for a CBS thread without a period (its server period is
    ///    `rel`) when `rel` changed: refuse (and change nothing) if its bandwidth would push the
    ///    total above the bound, decided by multiplication, no division. Every other
    ///    reservation was admitted by its setter.
    /// 2. End the current cycle, if one is running: stop and charge the CBS budget, drop the
    ///    pending deadline-miss check (so no false miss fires), record COMPLETE.
    /// 3. With a period and a cycle just ended: if the cycle ended on time, suspend (via
    ///    [`Kernel::suspend_until`]) until `release + period`, using the period current now; if
    ///    it ended late, start at once and report [`Error::PeriodOverrun`] — unless the overrun
    ///    only exists because the period was shortened during the cycle (below the time the
    ///    cycle took), which the application did on purpose and is not an error.
    /// 4. Start the next cycle at its activation `r`: with a CBS apply the arrival rule
    ///    (B_COND), set the absolute deadline (`r + rel`, or the server deadline), arm the
    ///    deadline-miss check if a callback is set, start the budget clock.
    ///
    /// `Err(PeriodOverrun)` is a report: the new cycle has started. Every other error means
    /// nothing changed.
    // Always inlined: a port calls it from exactly one place (its deadline_set entry point),
    // so this costs no code size and saves a call layer, its saved registers and a status
    // passed through memory.
    #[inline(always)]
    pub fn deadline_set<K: Kernel>(
        &mut self,
        kernel: &mut K,
        id: ThreadId,
        rel: u64,
    ) -> Result<(), Error> {
        if rel == 0 {
            self.slot(id)?;
            return Err(Error::ZeroDeadline);
        }
        let index = id.index();
        match self.threads.get(index) {
            Some(block) if block.attached => {
                if block.admit_on_release
                    && self.admission_bound.is_some()
                    && block.admitted_for != Some((block.server.budget_max, rel))
                {
                    self.admit_window(index, rel)?;
                }
            }
            _ => return Err(Error::UnknownThread),
        }
        let Self {
            threads, events, ..
        } = self;
        let Some(block) = threads.get_mut(index) else {
            return Err(Error::UnknownThread);
        };

        let now = kernel.now();
        // The caller is the running thread, whatever the switch hooks reported so far.
        block.on_cpu = true;
        // How late the previous cycle ended; 0 means on time (an overrun is at least one unit
        // late). One integer carried to the end is cheaper than a whole `Result`.
        let mut late_by = 0;
        let release = if block.cycle_active {
            block.end_cycle(events, id, now);
            let period = block.period;
            if period > 0 {
                let activation = block.release.saturating_add(period);
                if now <= activation {
                    if now < activation {
                        kernel.suspend_until(id, activation);
                    }
                    activation
                } else {
                    let shortened_on_purpose = period < block.period_at_release
                        && (block.period_at_release == 0
                            || now <= block.release.saturating_add(block.period_at_release));
                    if !shortened_on_purpose {
                        late_by = now - activation;
                        events.push(Event {
                            time: now,
                            thread: id,
                            kind: EventKind::PeriodOverrun,
                            budget: block.server.budget,
                            deadline: block.deadline,
                        });
                    }
                    now
                }
            } else {
                now
            }
        } else {
            now
        };
        // A blocking adapter has slept until `release` by now; read the clock again.
        let now = kernel.now();
        block.start_cycle(kernel, events, id, release, rel, now);
        if late_by == 0 {
            Ok(())
        } else {
            Err(Error::PeriodOverrun { late_by })
        }
    }

    /// Ends the thread's current cycle without starting another (the thread stops being
    /// periodic, or exits): charges the CBS budget, drops the deadline-miss check.
    pub fn cycle_end<K: Kernel>(&mut self, kernel: &mut K, id: ThreadId) -> Result<(), Error> {
        let now = kernel.now();
        let (block, events) = self.slot_and_trace(id)?;
        block.end_cycle(events, id, now);
        block.rearm(kernel, id);
        Ok(())
    }

    /// Context-switch hook for the incoming thread (`z_cbs_switched_in`): restarts its budget
    /// clock with the remaining budget (SWT_TO), or refills it after a hard-reservation
    /// throttle. Cheap for threads without a CBS. Call with the scheduler lock held.
    #[inline]
    pub fn switched_in<K: Kernel>(&mut self, kernel: &mut K, id: ThreadId) -> Result<(), Error> {
        let now = kernel.now();
        let (block, events) = self.slot_and_trace(id)?;
        block.switched_in(kernel, events, id, now);
        Ok(())
    }

    /// Context-switch hook for the outgoing thread (`z_cbs_switched_out`): stops its budget
    /// clock and charges the time it ran (SWT_AY). Cheap for threads without a CBS.
    #[inline]
    pub fn switched_out<K: Kernel>(&mut self, kernel: &mut K, id: ThreadId) -> Result<(), Error> {
        let now = kernel.now();
        let (block, events) = self.slot_and_trace(id)?;
        block.switched_out(kernel, events, id, now);
        Ok(())
    }

    /// Timer-expiry entry point: the adapter calls it when thread `id`'s one-shot timer fires.
    /// Runs the deadline-miss check (DEADLINE_MISS + callback) and the budget check (B_ROUT,
    /// or THROTTLE in hard-reservation mode, + overrun callback + reschedule request), then
    /// re-arms the timer. A stale or early expiry is harmless. The [`Expiry`] says whether a
    /// deadline miss was reported.
    #[inline]
    pub fn timer_expired<K: Kernel>(
        &mut self,
        kernel: &mut K,
        id: ThreadId,
    ) -> Result<Expiry, Error> {
        let now = kernel.now();
        let (block, events) = self.slot_and_trace(id)?;
        Ok(block.timer_expired(kernel, events, id, now))
    }
}

/// [`Error::AdmissionRejected`] with its figures in parts per million.
#[cold]
fn refusal(requested: Bandwidth, others: Bandwidth, bound: Bandwidth) -> Error {
    let ppm = |b: Bandwidth| u32::try_from(b.ppm()).unwrap_or(u32::MAX);
    Error::AdmissionRejected {
        requested_ppm: ppm(requested),
        others_ppm: ppm(others),
        bound_ppm: ppm(bound),
    }
}

/// The admission test of a setter: the new total if the reservation `terms` (numerator,
/// denominator) of `block` fits under `bound` with everything else admitted (recording it in
/// the block), else the refusal. Every block is settled when it runs.
#[cold]
#[inline(never)]
fn admit(
    block: &mut ControlBlock,
    terms: (u64, u64),
    bound: Bandwidth,
    total: Bandwidth,
) -> Result<Bandwidth, Error> {
    let requested = block.requested_bandwidth(terms);
    let others = total.saturating_sub(block.admitted);
    if others.saturating_add(requested) > bound {
        return Err(refusal(requested, others, bound));
    }
    block.admitted = requested;
    block.admitted_for = Some(terms);
    Ok(others.saturating_add(requested))
}
