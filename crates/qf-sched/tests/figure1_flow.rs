//! The `deadline_set` flow of the paper's Figure 1, one path per test, plus the CBS hooks and
//! the extensions beyond the paper (admission control, hard reservation, overrun callback),
//! checked against exactly what the scheduler asks of the kernel.

mod recording_kernel;

use std::cell::RefCell;

use qf_sched::{Bandwidth, Callback, Error, EventKind, Notice, Scheduler, ThreadId};
use recording_kernel::{RecordingKernel, Request};

const T0: ThreadId = ThreadId(0);
const T1: ThreadId = ThreadId(1);

type Sched = Scheduler<4, 64>;

thread_local! {
    static NOTICES: RefCell<Vec<Notice>> = const { RefCell::new(Vec::new()) };
}

fn remember(notice: &Notice) {
    NOTICES.with(|n| n.borrow_mut().push(*notice));
}

fn notices() -> Vec<Notice> {
    NOTICES.with(|n| std::mem::take(&mut *n.borrow_mut()))
}

fn callback(arg: usize) -> Option<Callback> {
    Some(Callback {
        func: remember,
        arg,
    })
}

fn kinds(sched: &mut Sched) -> Vec<(u64, EventKind, u64, u64)> {
    sched
        .events()
        .drain()
        .map(|e| (e.time, e.kind, e.budget, e.deadline))
        .collect()
}

fn setup(threads: &[ThreadId]) -> (Sched, RecordingKernel) {
    let mut sched = Sched::new();
    for &t in threads {
        sched.attach(t).expect("free slot");
    }
    (sched, RecordingKernel::default())
}

#[test]
fn without_period_or_callback_deadline_set_only_sets_the_absolute_deadline() {
    let (mut sched, mut k) = setup(&[T0]);
    k.now = 100;
    assert_eq!(sched.deadline_set(&mut k, T0, 30), Ok(()));
    assert_eq!(k.take(), vec![Request::Deadline(T0, 130)]);
    k.now = 110;
    assert_eq!(sched.deadline_set(&mut k, T0, 5), Ok(()));
    assert_eq!(k.take(), vec![Request::Deadline(T0, 115)]);
}

#[test]
fn with_a_miss_callback_the_timer_is_armed_at_the_deadline_and_rearmed_at_each_cycle_end() {
    let (mut sched, mut k) = setup(&[T0]);
    sched.deadline_miss_callback_set(T0, callback(7)).unwrap();
    k.now = 10;
    sched.deadline_set(&mut k, T0, 20).unwrap();
    assert_eq!(
        k.take(),
        vec![Request::Deadline(T0, 30), Request::TimerArm(T0, 30)]
    );
    // The cycle ends before its deadline: the old check is dropped, the new one armed.
    k.now = 25;
    sched.deadline_set(&mut k, T0, 20).unwrap();
    assert_eq!(
        k.take(),
        vec![Request::Deadline(T0, 45), Request::TimerArm(T0, 45)]
    );
    assert!(notices().is_empty());
}

#[test]
fn a_cycle_running_at_its_deadline_fires_the_miss_callback_once_with_that_deadline() {
    let (mut sched, mut k) = setup(&[T0]);
    sched.deadline_miss_callback_set(T0, callback(42)).unwrap();
    sched.deadline_set(&mut k, T0, 20).unwrap();
    k.now = 20;
    sched.timer_expired(&mut k, T0).unwrap();
    let fired = notices();
    assert_eq!(fired.len(), 1);
    assert_eq!(
        (
            fired[0].thread,
            fired[0].time,
            fired[0].deadline,
            fired[0].arg
        ),
        (T0, 20, 20, 42)
    );
    // No second report for the same cycle.
    k.now = 21;
    sched.timer_expired(&mut k, T0).unwrap();
    assert!(notices().is_empty());
    let events = kinds(&mut sched);
    assert_eq!(
        events
            .iter()
            .filter(|e| e.1 == EventKind::DeadlineMiss)
            .count(),
        1
    );
}

#[test]
fn an_early_timer_expiry_reports_nothing_and_rearms() {
    let (mut sched, mut k) = setup(&[T0]);
    sched.deadline_miss_callback_set(T0, callback(0)).unwrap();
    sched.deadline_set(&mut k, T0, 20).unwrap();
    k.take();
    k.now = 19;
    sched.timer_expired(&mut k, T0).unwrap();
    assert!(notices().is_empty());
    assert_eq!(k.take(), vec![Request::TimerArm(T0, 20)]);
}

#[test]
fn a_periodic_thread_suspends_for_the_rest_of_its_period_then_starts_the_next_cycle() {
    let (mut sched, mut k) = setup(&[T0]);
    sched.period_set(T0, 7).unwrap();
    sched.deadline_set(&mut k, T0, 7).unwrap();
    k.take();
    k.now = 4;
    assert_eq!(sched.deadline_set(&mut k, T0, 7), Ok(()));
    assert_eq!(
        k.take(),
        vec![Request::Suspend(T0, 7), Request::Deadline(T0, 14),]
    );
    assert_eq!(sched.thread(T0).map(|b| b.release()), Some(7));
}

#[test]
fn a_cycle_ending_exactly_at_the_period_boundary_starts_the_next_without_suspension() {
    let (mut sched, mut k) = setup(&[T0]);
    sched.period_set(T0, 7).unwrap();
    sched.deadline_set(&mut k, T0, 7).unwrap();
    k.take();
    k.now = 7;
    assert_eq!(sched.deadline_set(&mut k, T0, 7), Ok(()));
    assert_eq!(k.take(), vec![Request::Deadline(T0, 14)]);
}

#[test]
fn a_mid_cycle_period_change_takes_effect_at_once() {
    let (mut sched, mut k) = setup(&[T0]);
    sched.period_set(T0, 10).unwrap();
    sched.deadline_set(&mut k, T0, 10).unwrap();
    k.now = 2;
    sched.period_set(T0, 5).unwrap();
    k.take();
    k.now = 3;
    sched.deadline_set(&mut k, T0, 10).unwrap();
    assert_eq!(
        k.take(),
        vec![Request::Suspend(T0, 5), Request::Deadline(T0, 15),]
    );
}

#[test]
fn a_period_overrun_is_reported_and_the_next_cycle_starts_at_once() {
    let (mut sched, mut k) = setup(&[T0]);
    sched.period_set(T0, 7).unwrap();
    sched.deadline_set(&mut k, T0, 7).unwrap();
    k.take();
    k.now = 9;
    assert_eq!(
        sched.deadline_set(&mut k, T0, 7),
        Err(Error::PeriodOverrun { late_by: 2 })
    );
    assert_eq!(k.take(), vec![Request::Deadline(T0, 16)]);
    let events = kinds(&mut sched);
    assert!(events.contains(&(9, EventKind::PeriodOverrun, 0, 7)));
}

#[test]
fn shortening_the_period_below_the_execution_time_is_not_an_overrun() {
    let (mut sched, mut k) = setup(&[T0]);
    sched.period_set(T0, 10).unwrap();
    sched.deadline_set(&mut k, T0, 10).unwrap();
    k.now = 6;
    sched.period_set(T0, 4).unwrap();
    k.take();
    assert_eq!(sched.deadline_set(&mut k, T0, 10), Ok(()));
    // No suspension at all: the next cycle starts now.
    assert_eq!(k.take(), vec![Request::Deadline(T0, 16)]);
}

#[test]
fn shortening_the_period_does_not_excuse_overrunning_the_original_period_too() {
    let (mut sched, mut k) = setup(&[T0]);
    sched.period_set(T0, 10).unwrap();
    sched.deadline_set(&mut k, T0, 10).unwrap();
    sched.period_set(T0, 4).unwrap();
    k.now = 12;
    assert_eq!(
        sched.deadline_set(&mut k, T0, 10),
        Err(Error::PeriodOverrun { late_by: 8 })
    );
}

/// A CBS thread (Q = 3) whose job arrives at 3 with relative deadline (server period) 8.
fn cbs_thread_started_at_3() -> (Sched, RecordingKernel) {
    let (mut sched, mut k) = setup(&[T0, T1]);
    sched.cbs_budget_set(T1, 3).unwrap();
    k.now = 3;
    sched.switched_in(&mut k, T1).unwrap();
    sched.deadline_set(&mut k, T1, 8).unwrap();
    (sched, k)
}

#[test]
fn a_new_cbs_replenishes_on_its_first_job_and_starts_the_budget_clock() {
    let (mut sched, mut k) = cbs_thread_started_at_3();
    assert_eq!(
        k.take(),
        vec![Request::Deadline(T1, 11), Request::TimerArm(T1, 6)]
    );
    assert_eq!(
        kinds(&mut sched),
        vec![
            (3, EventKind::Arrival, 3, 11),
            (3, EventKind::BudgetCondition, 3, 11),
            (3, EventKind::SwitchedTo, 3, 11),
        ]
    );
}

#[test]
fn switching_away_charges_the_time_run_and_switching_back_resumes_with_the_rest() {
    let (mut sched, mut k) = cbs_thread_started_at_3();
    k.take();
    kinds(&mut sched);
    k.now = 4;
    sched.switched_out(&mut k, T1).unwrap();
    assert_eq!(k.take(), vec![Request::TimerCancel(T1)]);
    k.now = 10;
    sched.switched_in(&mut k, T1).unwrap();
    assert_eq!(k.take(), vec![Request::TimerArm(T1, 12)]);
    assert_eq!(
        kinds(&mut sched),
        vec![
            (4, EventKind::SwitchedAway, 2, 11),
            (10, EventKind::SwitchedTo, 2, 11)
        ]
    );
}

#[test]
fn after_an_exhaustion_the_timer_watches_a_deadline_miss_due_before_the_next_one() {
    // Q = 3, job at 3 with deadline 11 and a miss callback: the budget runs out at 6 and 9;
    // after the second refill the miss check at 11 comes before the next exhaustion at 12.
    let (mut sched, mut k) = setup(&[T1]);
    sched.cbs_budget_set(T1, 3).unwrap();
    sched.deadline_miss_callback_set(T1, callback(5)).unwrap();
    k.now = 3;
    sched.switched_in(&mut k, T1).unwrap();
    sched.deadline_set(&mut k, T1, 8).unwrap();
    assert_eq!(k.armed(T1), Some(6));
    k.now = 6;
    let exhausted = sched.timer_expired(&mut k, T1).unwrap();
    assert!(!exhausted.deadline_missed);
    assert_eq!(k.armed(T1), Some(9));
    k.now = 9;
    sched.timer_expired(&mut k, T1).unwrap();
    assert_eq!(
        k.armed(T1),
        Some(11),
        "the miss check, not the exhaustion at 12"
    );
    assert!(notices().is_empty());
    k.now = 11;
    let missed = sched.timer_expired(&mut k, T1).unwrap();
    assert!(
        missed.deadline_missed,
        "the expiry reports the miss it found"
    );
    let fired = notices();
    assert_eq!((fired.len(), fired[0].deadline, fired[0].arg), (1, 11, 5));
    assert_eq!(k.armed(T1), Some(12));
}

#[test]
fn budget_exhaustion_with_work_left_postpones_the_deadline_and_refills() {
    let (mut sched, mut k) = cbs_thread_started_at_3();
    sched.budget_overrun_callback_set(T1, callback(9)).unwrap();
    k.take();
    kinds(&mut sched);
    k.now = 6;
    sched.timer_expired(&mut k, T1).unwrap();
    assert_eq!(
        k.take(),
        vec![Request::Deadline(T1, 19), Request::TimerArm(T1, 9)]
    );
    assert_eq!(
        kinds(&mut sched),
        vec![(6, EventKind::BudgetReplenish, 3, 19)]
    );
    let fired = notices();
    assert_eq!((fired.len(), fired[0].deadline, fired[0].arg), (1, 19, 9));
}

#[test]
fn a_job_arriving_with_budget_that_fits_before_the_deadline_keeps_both() {
    let (mut sched, mut k) = cbs_thread_started_at_3();
    // Runs 1 unit, the job ends at 4 (c = 2, d = 11); the next arrives at 5:
    // c·T = 2·8 = 16 < (d − r)·Q = (11 − 5)·3 = 18, so c and d are kept (no B_COND).
    k.now = 4;
    sched.cycle_end(&mut k, T1).unwrap();
    k.now = 5;
    kinds(&mut sched);
    sched.deadline_set(&mut k, T1, 8).unwrap();
    assert_eq!(
        kinds(&mut sched),
        vec![
            (5, EventKind::Arrival, 2, 11),
            (5, EventKind::SwitchedTo, 2, 11)
        ]
    );
    // Had it arrived one unit later (ending this job at once, c = 2), the same rule
    // replenishes: 16 ≥ (11 − 6)·3 = 15.
    sched.cycle_end(&mut k, T1).unwrap();
    k.now = 6;
    sched.deadline_set(&mut k, T1, 8).unwrap();
    assert!(kinds(&mut sched).contains(&(6, EventKind::BudgetCondition, 3, 14)));
}

#[test]
fn hard_reservation_throttles_until_the_server_deadline_then_refills() {
    let (mut sched, mut k) = cbs_thread_started_at_3();
    sched.hard_reservation_set(T1, true).unwrap();
    k.take();
    kinds(&mut sched);
    k.now = 6;
    sched.timer_expired(&mut k, T1).unwrap();
    // The one-shot timer has fired, so nothing is left to cancel.
    assert_eq!(
        k.take(),
        vec![Request::Deadline(T1, 19), Request::Suspend(T1, 11),]
    );
    assert_eq!(sched.thread(T1).and_then(|b| b.throttled_until()), Some(11));
    sched.switched_out(&mut k, T1).unwrap();
    // A switch-in before the throttle ends does not run the budget.
    k.now = 10;
    sched.switched_in(&mut k, T1).unwrap();
    assert_eq!(sched.thread(T1).map(|b| b.budget()), Some(0));
    k.now = 11;
    sched.switched_in(&mut k, T1).unwrap();
    assert_eq!(k.take(), vec![Request::TimerArm(T1, 14)]);
    assert_eq!(
        kinds(&mut sched),
        vec![
            (6, EventKind::Throttle, 0, 19),
            (11, EventKind::BudgetReplenish, 3, 19),
            (11, EventKind::SwitchedTo, 3, 19),
        ]
    );
}

#[test]
fn admission_control_is_off_by_default() {
    let (mut sched, mut k) = setup(&[T0]);
    sched.cbs_budget_set(T0, 10).unwrap();
    assert_eq!(sched.deadline_set(&mut k, T0, 5), Ok(()));
}

#[test]
fn admission_control_refuses_a_thread_that_would_exceed_the_bound_and_changes_nothing() {
    let (mut sched, mut k) = setup(&[T0, T1]);
    sched.admission_bound_set(Bandwidth::ratio(1, 1));
    sched.period_set(T0, 7).unwrap();
    sched.wcet_set(T0, 4).unwrap();
    assert_eq!(sched.deadline_set(&mut k, T0, 7), Ok(()));
    sched.cbs_budget_set(T1, 4).unwrap();
    k.take();
    let refused = sched.deadline_set(&mut k, T1, 8);
    assert_eq!(
        refused,
        Err(Error::AdmissionRejected {
            requested_ppm: 500_000,
            others_ppm: 571_429,
            bound_ppm: 1_000_000
        })
    );
    assert!(k.take().is_empty());
    assert!(!sched.thread(T1).is_some_and(|b| b.cycle_active()));
    // Q = 3 fits: 4/7 + 3/8 ≈ 0.946.
    sched.cbs_budget_set(T1, 3).unwrap();
    assert_eq!(sched.deadline_set(&mut k, T1, 8), Ok(()));
    assert_eq!(sched.admitted_total().ppm(), 946_429);
    sched.detach(&mut k, T1).unwrap();
    assert_eq!(sched.admitted_total().ppm(), 571_429);
}

#[test]
fn admission_follows_every_change_of_budget_and_relative_deadline() {
    // The admitted bandwidth is reused while budget and relative deadline stay the same, so
    // each change must still be seen: cycles end and begin with the new terms each time.
    let (mut sched, mut k) = setup(&[T0]);
    sched.admission_bound_set(Bandwidth::ratio(1, 1));
    sched.cbs_budget_set(T0, 3).unwrap();
    for (budget, rel, ppm) in [
        (3, 8, 375_000),
        (3, 8, 375_000),
        (2, 8, 250_000),
        (2, 4, 500_000),
        (2, 4, 500_000),
        (3, 8, 375_000),
        (5, 5, 1_000_000),
    ] {
        sched.cbs_budget_set(T0, budget).unwrap();
        assert_eq!(sched.deadline_set(&mut k, T0, rel), Ok(()));
        assert_eq!(sched.admitted_total().ppm(), ppm, "Q = {budget}, T = {rel}");
    }
    // Refused with the same terms as the last admitted ones would be wrong: they fit exactly.
    assert_eq!(sched.deadline_set(&mut k, T0, 5), Ok(()));
    sched.cbs_budget_set(T0, 6).unwrap();
    assert!(matches!(
        sched.deadline_set(&mut k, T0, 5),
        Err(Error::AdmissionRejected { .. })
    ));
    assert_eq!(sched.admitted_total().ppm(), 1_000_000);
}

#[test]
fn a_window_admitted_by_a_release_is_accounted_when_it_changes_again() {
    // A release decides by multiplication and leaves the division to the next setter,
    // detach or reader: windows changed release after release, with a setter between,
    // must each replace the one before.
    let (mut sched, mut k) = setup(&[T0, T1]);
    sched.admission_bound_set(Bandwidth::ratio(1, 1));
    sched.period_set(T1, 8).unwrap();
    sched.cbs_budget_set(T0, 2).unwrap();
    assert_eq!(sched.deadline_set(&mut k, T0, 8), Ok(()));
    // T1's setter settles T0's window (1/8 + 2/8).
    sched.wcet_set(T1, 1).unwrap();
    assert_eq!(sched.admitted_total().ppm(), 375_000);
    for (rel, ppm) in [(4, 500_000), (5, 400_000), (10, 200_000), (3, 666_667)] {
        assert_eq!(sched.deadline_set(&mut k, T0, rel), Ok(()));
        assert_eq!(sched.admitted_total().ppm(), ppm + 125_000, "T = {rel}");
        assert_eq!(sched.thread(T0).map(|b| b.admitted().ppm()), Some(ppm));
    }
    // T1 asks for 3/8 more than fits beside 2/3; T0 shrinks at its release and then it fits.
    sched.wcet_set(T1, 3).unwrap_err();
    assert_eq!(sched.deadline_set(&mut k, T0, 4), Ok(()));
    sched.wcet_set(T1, 3).unwrap();
    assert_eq!(sched.admitted_total().ppm(), 875_000);
    // T0 cannot take more back at its release; its window stays.
    assert!(matches!(
        sched.deadline_set(&mut k, T0, 2),
        Err(Error::AdmissionRejected {
            requested_ppm: 1_000_000,
            others_ppm: 375_000,
            ..
        })
    ));
    assert_eq!(sched.admitted_total().ppm(), 875_000);
    sched.detach(&mut k, T0).unwrap();
    assert_eq!(sched.admitted_total().ppm(), 375_000);
}

#[test]
fn a_periodic_reservation_is_admitted_by_its_setters_and_a_refused_one_changes_nothing() {
    let (mut sched, mut k) = setup(&[T0, T1]);
    sched.admission_bound_set(Bandwidth::ratio(1, 1));
    sched.period_set(T0, 10).unwrap();
    sched.cbs_budget_set(T0, 6).unwrap();
    assert_eq!(
        sched.admitted_total().ppm(),
        600_000,
        "admitted by the setter"
    );
    sched.period_set(T1, 10).unwrap();
    let refused = sched.cbs_budget_set(T1, 5);
    assert_eq!(
        refused,
        Err(Error::AdmissionRejected {
            requested_ppm: 500_000,
            others_ppm: 600_000,
            bound_ppm: 1_000_000
        })
    );
    assert_eq!(sched.thread(T1).map(|b| b.budget_max()), Some(0));
    assert_eq!(sched.admitted_total().ppm(), 600_000);
    // A shorter period raises T0's reservation: refused, the period stays.
    assert!(sched.period_set(T0, 5).is_err());
    assert_eq!(sched.thread(T0).map(|b| b.period()), Some(10));
    sched.cbs_budget_set(T1, 4).unwrap();
    assert_eq!(sched.admitted_total().ppm(), 1_000_000);
    // Releases test nothing: a relative deadline below the period changes no reservation.
    assert_eq!(sched.deadline_set(&mut k, T0, 7), Ok(()));
    assert_eq!(sched.deadline_set(&mut k, T1, 10), Ok(()));
    assert_eq!(sched.admitted_total().ppm(), 1_000_000);
    sched.detach(&mut k, T0).unwrap();
    assert_eq!(sched.admitted_total().ppm(), 400_000);
}

#[test]
fn turning_admission_on_accounts_the_threads_already_configured() {
    let (mut sched, _) = setup(&[T0, T1]);
    sched.period_set(T0, 4).unwrap();
    sched.cbs_budget_set(T0, 1).unwrap();
    sched.period_set(T1, 8).unwrap();
    sched.wcet_set(T1, 2).unwrap();
    assert_eq!(
        sched.admitted_total(),
        Bandwidth::ZERO,
        "off: not accounted"
    );
    sched.admission_bound_set(Bandwidth::ratio(1, 1));
    assert_eq!(sched.admitted_total().ppm(), 500_000);
    assert!(sched.cbs_budget_set(T0, 4).is_err(), "1/1 + 1/4 > 1");
    sched.admission_bound_set(None);
    assert_eq!(sched.admitted_total(), Bandwidth::ZERO);
}

#[test]
fn calls_for_unknown_or_detached_threads_return_an_error() {
    let (mut sched, mut k) = setup(&[T0]);
    assert_eq!(
        sched.deadline_set(&mut k, ThreadId(9), 5),
        Err(Error::UnknownThread)
    );
    assert_eq!(sched.switched_in(&mut k, T1), Err(Error::UnknownThread));
    assert_eq!(sched.attach(T0), Err(Error::AlreadyAttached));
    assert_eq!(sched.deadline_set(&mut k, T0, 0), Err(Error::ZeroDeadline));
    assert_eq!(
        sched.timer_expired(&mut k, ThreadId(u16::MAX)),
        Err(Error::UnknownThread)
    );
}

mod overrun_rule {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// A periodic cycle started at 0 with period `p0`; during it the period becomes `p1`;
        /// it ends at `end`. deadline_set suspends until `p1` if the cycle ended before it,
        /// starts the next cycle at once otherwise, and reports an overrun only if the cycle
        /// also overran the period it started with (or the period was not shortened).
        #[test]
        fn overrun_is_an_error_unless_only_the_shortened_period_was_exceeded(
            p0 in 1u64..50, p1 in 1u64..50, end in 0u64..100,
        ) {
            let (mut sched, mut k) = setup(&[T0]);
            sched.period_set(T0, p0).unwrap();
            sched.deadline_set(&mut k, T0, 10).unwrap();
            sched.period_set(T0, p1).unwrap();
            k.take();
            k.now = end;
            let status = sched.deadline_set(&mut k, T0, 10);
            let requests = k.take();
            if end < p1 {
                prop_assert_eq!(status, Ok(()));
                prop_assert_eq!(&requests[0], &Request::Suspend(T0, p1));
            } else {
                prop_assert!(!requests.iter().any(|r| matches!(r, Request::Suspend(..))));
                let excused = p1 < p0 && end <= p0;
                if end > p1 && !excused {
                    prop_assert_eq!(status, Err(Error::PeriodOverrun { late_by: end - p1 }));
                } else {
                    prop_assert_eq!(status, Ok(()));
                }
            }
        }
    }
}

#[test]
fn removing_the_server_mid_job_stops_its_budget_clock() {
    let (mut sched, mut k) = cbs_thread_started_at_3();
    sched.cbs_budget_set(T1, 0).unwrap();
    k.take();
    // The timer armed for the old exhaustion instant fires: nothing is left to exhaust, and
    // nothing is re-armed for "now" (which a kernel would fire again at once, forever).
    k.now = 6;
    sched.timer_expired(&mut k, T1).unwrap();
    assert!(
        !k.take()
            .iter()
            .any(|r| matches!(r, Request::TimerArm(_, at) if *at <= 6)),
        "re-armed in the past"
    );
    assert!(kinds(&mut sched)
        .iter()
        .all(|e| e.1 != EventKind::BudgetReplenish));
}
