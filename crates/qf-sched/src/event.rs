//! The trace of scheduling decisions: a fixed-size ring of [`Event`]s that the scheduler appends
//! to and a consumer (simulator, Zephyr logging thread, tests) drains. When full it overwrites
//! the oldest entry and counts the loss, so tracing never blocks or fails a scheduling path.
//! A ring of no entries is tracing compiled out: its pushes cost nothing.

use crate::ThreadId;

/// What happened. Names follow the paper's trace (B_COND, B_ROUT, SWT_TO, SWT_AY).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum EventKind {
    /// A cycle of a thread without a CBS started: `deadline` is its new absolute deadline.
    Release = 0,
    /// A cycle (job) of a CBS-served thread arrived at its server; followed by
    /// [`EventKind::BudgetCondition`] when the CBS rule replenished, else the server kept its
    /// budget and deadline (both reported here).
    Arrival = 1,
    /// B_COND: at a job arrival `c·T ≥ (d − r)·Q` held, so `d = r + T` and `c = Q`.
    BudgetCondition = 2,
    /// B_ROUT: the budget ran out with work left, so `c = Q` and `d = d + T` (soft reservation),
    /// or, in hard-reservation mode, the budget was refilled after throttling.
    BudgetReplenish = 3,
    /// SWT_TO: a CBS thread with an active job was switched in; its budget timer restarted.
    SwitchedTo = 4,
    /// SWT_AY: a CBS thread with an active job was switched away; budget charged and paused.
    SwitchedAway = 5,
    /// The thread ended its cycle (called `deadline_set` again, or `cycle_end`).
    Complete = 6,
    /// The thread's cycle was still running at its absolute deadline (`deadline`).
    DeadlineMiss = 7,
    /// `deadline_set` found the previous cycle overran its period (an error, see
    /// [`crate::Error::PeriodOverrun`]).
    PeriodOverrun = 8,
    /// Hard-reservation mode: the budget ran out with work left; the thread is suspended until
    /// `deadline` (the old server deadline), when its budget is refilled.
    Throttle = 9,
}

impl EventKind {
    /// The name used in traces and CSV files (the paper's spelling where it has one).
    pub const fn name(self) -> &'static str {
        match self {
            EventKind::Release => "RELEASE",
            EventKind::Arrival => "ARRIVAL",
            EventKind::BudgetCondition => "B_COND",
            EventKind::BudgetReplenish => "B_ROUT",
            EventKind::SwitchedTo => "SWT_TO",
            EventKind::SwitchedAway => "SWT_AY",
            EventKind::Complete => "COMPLETE",
            EventKind::DeadlineMiss => "DEADLINE_MISS",
            EventKind::PeriodOverrun => "PERIOD_OVERRUN",
            EventKind::Throttle => "THROTTLE",
        }
    }
}

/// One trace record. `budget` and `deadline` are the thread's CBS budget and absolute deadline
/// right after the event (budget is 0 for threads without a CBS).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Event {
    /// When, in the adapter's time unit.
    pub time: u64,
    /// Which thread.
    pub thread: ThreadId,
    /// What happened.
    pub kind: EventKind,
    /// Remaining CBS budget after the event.
    pub budget: u64,
    /// Absolute deadline after the event.
    pub deadline: u64,
}

const EMPTY: Event = Event {
    time: 0,
    thread: ThreadId(0),
    kind: EventKind::Release,
    budget: 0,
    deadline: 0,
};

/// Fixed-capacity FIFO of events; overwrites the oldest when full. `N` may be 0: tracing off,
/// pushes are dropped and not counted (Zephyr's `CONFIG_QFABRIC_TRACE=n`, where the count
/// would be the only work left on every hook's path).
///
/// A push is on every scheduling hook's path, so it only stores the event and bumps one
/// counter: the slot is `pushed % N` (a mask when `N` is a power of two, as the Zephyr and
/// simulator rings are) and overwritten events are worked out from the counters when read,
/// not counted at push time. The counters are 64-bit so they never wrap.
#[derive(Clone, Debug)]
pub struct EventRing<const N: usize> {
    slots: [Event; N],
    /// Events ever pushed; the next one goes to slot `pushed % N`.
    pushed: u64,
    /// Sequence number (count of pushes before it) of the oldest event not yet popped or
    /// counted as lost. Waiting events are those from `max(oldest, pushed - N)` on.
    oldest: u64,
    /// Events overwritten before a pop skipped past them (the ones not yet skipped are
    /// `pushed - oldest - N` when positive).
    lost_skipped: u64,
}

impl<const N: usize> Default for EventRing<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> EventRing<N> {
    /// An empty ring.
    pub const fn new() -> Self {
        Self {
            slots: [EMPTY; N],
            pushed: 0,
            oldest: 0,
            lost_skipped: 0,
        }
    }

    /// Appends `event`, overwriting the oldest one if the ring is full.
    #[inline]
    pub fn push(&mut self, event: Event) {
        // A constant test, folded away: with tracing off a push compiles to nothing.
        if N == 0 {
            return;
        }
        // `checked_rem` is `None` only for `N == 0`, excluded above; no panic path either way.
        if let Some(slot) = self
            .pushed
            .checked_rem(N as u64)
            .and_then(|index| self.slots.get_mut(index as usize))
        {
            *slot = event;
        }
        self.pushed = self.pushed.wrapping_add(1);
    }

    /// Pushes not yet popped, including those overwritten since.
    #[inline]
    const fn unread(&self) -> u64 {
        self.pushed.wrapping_sub(self.oldest)
    }

    /// Overwritten events not yet counted in `lost_skipped`.
    #[inline]
    const fn overwritten(&self) -> u64 {
        self.unread().saturating_sub(N as u64)
    }

    /// Slot of the `i`-th oldest waiting event.
    #[inline]
    fn slot(&self, i: usize) -> Option<&Event> {
        let sequence = self
            .pushed
            .wrapping_sub(self.len() as u64)
            .wrapping_add(i as u64);
        let index = sequence.checked_rem(N as u64)?;
        self.slots.get(index as usize)
    }

    /// Removes and returns the oldest event.
    #[inline]
    pub fn pop(&mut self) -> Option<Event> {
        let overwritten = self.overwritten();
        self.lost_skipped = self.lost_skipped.wrapping_add(overwritten);
        self.oldest = self.oldest.wrapping_add(overwritten);
        if self.is_empty() {
            return None;
        }
        let event = *self.slot(0)?;
        self.oldest = self.oldest.wrapping_add(1);
        Some(event)
    }

    /// Number of events waiting.
    pub const fn len(&self) -> usize {
        let unread = self.unread();
        if unread < N as u64 {
            unread as usize
        } else {
            N
        }
    }

    /// True when no event is waiting.
    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Events overwritten because nobody drained the ring in time (always 0 for `N == 0`,
    /// whose pushes are dropped uncounted).
    pub const fn lost(&self) -> u64 {
        self.lost_skipped.wrapping_add(self.overwritten())
    }

    /// Iterates over the waiting events, oldest first, without removing them.
    pub fn iter(&self) -> impl Iterator<Item = &Event> + '_ {
        (0..self.len()).filter_map(move |i| self.slot(i))
    }

    /// Removes every waiting event, oldest first.
    pub fn drain(&mut self) -> impl Iterator<Item = Event> + '_ {
        core::iter::from_fn(move || self.pop())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(time: u64) -> Event {
        Event { time, ..EMPTY }
    }

    #[test]
    fn ring_is_fifo_and_overwrites_the_oldest_when_full() {
        let mut ring = EventRing::<3>::new();
        for t in 0..5 {
            ring.push(at(t));
        }
        assert_eq!(ring.lost(), 2);
        let times: [u64; 3] = core::array::from_fn(|_| ring.pop().map_or(99, |e| e.time));
        assert_eq!(times, [2, 3, 4]);
        assert!(ring.pop().is_none());
    }

    #[test]
    fn losses_are_counted_across_pops_and_later_overwrites() {
        let mut ring = EventRing::<3>::new();
        for t in 0..5 {
            ring.push(at(t));
        }
        assert_eq!(ring.pop().map(|e| e.time), Some(2));
        assert_eq!((ring.len(), ring.lost()), (2, 2));
        ring.push(at(5));
        ring.push(at(6));
        assert_eq!((ring.len(), ring.lost()), (3, 3));
        let times: [u64; 3] = core::array::from_fn(|_| ring.pop().map_or(99, |e| e.time));
        assert_eq!(times, [4, 5, 6]);
        assert_eq!((ring.len(), ring.lost()), (0, 3));
    }

    #[test]
    fn zero_capacity_ring_drops_pushes_without_counting_them() {
        let mut ring = EventRing::<0>::new();
        ring.push(at(1));
        ring.push(at(2));
        assert_eq!((ring.len(), ring.lost()), (0, 0));
        assert!(ring.pop().is_none());
        assert_eq!(ring.iter().count(), 0);
    }

    #[test]
    fn iter_does_not_consume_and_drain_does() {
        let mut ring = EventRing::<4>::new();
        ring.push(at(7));
        ring.push(at(8));
        assert_eq!(ring.iter().map(|e| e.time).sum::<u64>(), 15);
        assert_eq!(ring.len(), 2);
        assert_eq!(ring.drain().count(), 2);
        assert!(ring.is_empty());
    }
}
