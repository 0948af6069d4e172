//! The Constant Bandwidth Server's arithmetic (Abeni & Buttazzo), as pure functions over
//! integers: the replenishment condition checked at each job arrival, the postponement on
//! budget exhaustion and the charge for time run. Products that overflow `u64` are redone in
//! `u128`, so no input can overflow; sums saturate.

/// The server state one thread's CBS carries between jobs.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct Server {
    /// Maximum budget `Q` (0: the thread has no CBS).
    pub budget_max: u64,
    /// Server period `T`: the relative deadline passed to the latest `deadline_set`.
    pub period: u64,
    /// Remaining budget `c`.
    pub budget: u64,
    /// Server (absolute) deadline `d`.
    pub deadline: u64,
}

impl Server {
    /// True when the thread is served by a CBS.
    #[inline]
    pub const fn enabled(&self) -> bool {
        self.budget_max > 0
    }

    /// B_COND: a job arrives at `release` with server period `period`. If the remaining budget
    /// cannot be used up before the current deadline without exceeding the bandwidth —
    /// `c·T ≥ (d − r)·Q`, always true once `d ≤ r` — the server takes a fresh deadline
    /// `d = r + T` and a full budget `c = Q` and this returns `true`; otherwise both are kept
    /// (the job is served at the old deadline with the budget left) and this returns `false`.
    #[inline]
    pub fn arrive(&mut self, release: u64, period: u64) -> bool {
        self.period = period;
        // A budget left over from before `Q` was lowered counts only up to the new `Q`.
        let budget = self.budget.min(self.budget_max);
        let replenish = match self.deadline.checked_sub(release) {
            None | Some(0) => true,
            // Both products fit in u64 for realistic values; widening to u128 (a multi-word
            // multiply on 32-bit MCUs) is only needed when one overflows.
            Some(laxity) => match (
                budget.checked_mul(period),
                laxity.checked_mul(self.budget_max),
            ) {
                (Some(left), Some(right)) => left >= right,
                _ => wide_condition(budget, period, laxity, self.budget_max),
            },
        };
        if replenish {
            self.deadline = release.saturating_add(period);
            self.budget = self.budget_max;
        } else {
            self.budget = budget;
        }
        replenish
    }

    /// B_ROUT (soft reservation): the budget ran out with work left, so the server gets a full
    /// budget and its deadline moves one server period later: `c = Q`, `d = d + T`.
    #[inline]
    pub fn postpone(&mut self) {
        self.budget = self.budget_max;
        self.deadline = self.deadline.saturating_add(self.period);
    }

    /// Charges `ran` units of execution; the budget stops at zero.
    #[inline]
    pub fn charge(&mut self, ran: u64) {
        self.budget = self.budget.saturating_sub(ran);
    }
}

/// `c·T ≥ (d − r)·Q` in 128 bits, for the rare inputs whose products overflow `u64`. Out of
/// line and cold: on a 32-bit MCU it is a long multi-word multiply the common path should not
/// carry.
#[cold]
#[inline(never)]
fn wide_condition(budget: u64, period: u64, laxity: u64, budget_max: u64) -> bool {
    budget as u128 * period as u128 >= laxity as u128 * budget_max as u128
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn server(q: u64, c: u64, d: u64) -> Server {
        Server {
            budget_max: q,
            period: 0,
            budget: c,
            deadline: d,
        }
    }

    #[test]
    fn first_job_always_replenishes_from_c_zero_d_zero() {
        let mut cbs = server(3, 0, 0);
        assert!(cbs.arrive(3, 8));
        assert_eq!((cbs.budget, cbs.deadline), (3, 11));
    }

    #[test]
    fn too_little_budget_left_for_the_remaining_time_keeps_deadline_and_budget() {
        // Test Case 1 at t = 13: c = 2, d = 19, Q = 3, T = 8: 2·8 = 16 < (19 − 13)·3 = 18.
        let mut cbs = server(3, 2, 19);
        assert!(!cbs.arrive(13, 8));
        assert_eq!((cbs.budget, cbs.deadline), (2, 19));
    }

    #[test]
    fn condition_is_inclusive() {
        // c·T == (d − r)·Q replenishes: 2·6 = 12 == (14 − 8)·2.
        let mut cbs = server(2, 2, 14);
        assert!(cbs.arrive(8, 6));
        assert_eq!((cbs.budget, cbs.deadline), (2, 14));
    }

    #[test]
    fn a_lowered_budget_caps_what_is_left_at_the_next_arrival() {
        // Q lowered from 5 to 2 with c = 5 left: c counts as 2, so 2·50 < (100 − 10)·2 keeps
        // d (with c = 5 it would have replenished).
        let mut cbs = server(2, 5, 100);
        assert!(!cbs.arrive(10, 50));
        assert_eq!((cbs.budget, cbs.deadline), (2, 100));
    }

    #[test]
    fn exhaustion_postpones_by_one_server_period() {
        let mut cbs = server(3, 0, 11);
        cbs.period = 8;
        cbs.postpone();
        assert_eq!((cbs.budget, cbs.deadline), (3, 19));
    }

    /// Values whose products fit in u64 as often as ones that overflow it.
    fn small_or_any() -> impl Strategy<Value = u64> {
        prop_oneof![0u64..1_000_000, any::<u64>()]
    }

    proptest! {
        #[test]
        fn replenishment_condition_is_the_exact_inequality(q in small_or_any(), c in small_or_any(),
                                                           d in small_or_any(), r in small_or_any(),
                                                           t in small_or_any()) {
            // Whether or not the u64 products overflow, the decision is c·T ≥ (d − r)·Q
            // evaluated without overflow.
            let exact = d <= r || (c.min(q) as u128) * (t as u128) >= ((d - r) as u128) * (q as u128);
            let mut cbs = server(q, c, d);
            prop_assert_eq!(cbs.arrive(r, t), exact);
        }

        #[test]
        fn arithmetic_never_overflows(q in any::<u64>(), c in any::<u64>(), d in any::<u64>(),
                                      r in any::<u64>(), t in any::<u64>(), ran in any::<u64>()) {
            let mut cbs = server(q, c, d);
            let replenished = cbs.arrive(r, t);
            prop_assert!(!replenished || cbs.budget == q);
            cbs.postpone();
            cbs.charge(ran);
            prop_assert!(cbs.budget <= q);
        }
    }
}
