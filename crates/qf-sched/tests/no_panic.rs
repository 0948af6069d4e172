//! Whatever a kernel or application feeds the scheduler — unknown ids, zero or huge values,
//! a clock that jumps or goes backwards, hooks in any order — it returns a status and never
//! panics (overflow checks are on in test builds, so an overflow would panic here), and its
//! admission accounting stays exact.

mod recording_kernel;

use proptest::prelude::*;
use qf_sched::{Bandwidth, Callback, Notice, Scheduler, ThreadId};
use recording_kernel::{RecordingKernel, Request};

#[derive(Clone, Debug)]
enum Call {
    Attach(u16),
    Detach(u16),
    Period(u16, u64),
    Budget(u16, u64),
    Hard(u16, bool),
    Wcet(u16, u64),
    Miss(u16, bool),
    Overrun(u16, bool),
    Admission(Option<(u64, u64)>),
    Deadline(u16, u64),
    CycleEnd(u16),
    In(u16),
    Out(u16),
    Timer(u16),
    Clock(u64),
}

fn ignore(_: &Notice) {}

fn value() -> impl Strategy<Value = u64> {
    prop_oneof![0u64..20, any::<u64>(), Just(u64::MAX), Just(u64::MAX - 1)]
}

fn call() -> impl Strategy<Value = Call> {
    call_over(0..6, value().boxed())
}

/// Calls on threads `ids` with values drawn from `value`.
fn call_over(ids: std::ops::Range<u16>, value: BoxedStrategy<u64>) -> impl Strategy<Value = Call> {
    let id = ids;
    prop_oneof![
        id.clone().prop_map(Call::Attach),
        id.clone().prop_map(Call::Detach),
        (id.clone(), value.clone()).prop_map(|(i, v)| Call::Period(i, v)),
        (id.clone(), value.clone()).prop_map(|(i, v)| Call::Budget(i, v)),
        (id.clone(), any::<bool>()).prop_map(|(i, v)| Call::Hard(i, v)),
        (id.clone(), value.clone()).prop_map(|(i, v)| Call::Wcet(i, v)),
        (id.clone(), any::<bool>()).prop_map(|(i, v)| Call::Miss(i, v)),
        (id.clone(), any::<bool>()).prop_map(|(i, v)| Call::Overrun(i, v)),
        proptest::option::of((value.clone(), value.clone())).prop_map(Call::Admission),
        (id.clone(), value.clone()).prop_map(|(i, v)| Call::Deadline(i, v)),
        id.clone().prop_map(Call::CycleEnd),
        id.clone().prop_map(Call::In),
        id.clone().prop_map(Call::Out),
        id.prop_map(Call::Timer),
        value.prop_map(Call::Clock),
    ]
}

/// Makes the scheduler call `c` names (`Clock` sets the kernel's clock); its status.
fn apply(
    sched: &mut Scheduler<4, 8>,
    k: &mut RecordingKernel,
    c: &Call,
) -> Result<(), qf_sched::Error> {
    let cb = |on: bool| {
        on.then_some(Callback {
            func: ignore,
            arg: 1,
        })
    };
    match *c {
        Call::Attach(i) => sched.attach(ThreadId(i)),
        Call::Detach(i) => sched.detach(k, ThreadId(i)),
        Call::Period(i, v) => sched.period_set(ThreadId(i), v),
        Call::Budget(i, v) => sched.cbs_budget_set(ThreadId(i), v),
        Call::Hard(i, v) => sched.hard_reservation_set(ThreadId(i), v),
        Call::Wcet(i, v) => sched.wcet_set(ThreadId(i), v),
        Call::Miss(i, v) => sched.deadline_miss_callback_set(ThreadId(i), cb(v)),
        Call::Overrun(i, v) => sched.budget_overrun_callback_set(ThreadId(i), cb(v)),
        Call::Admission(b) => {
            sched.admission_bound_set(b.and_then(|(n, d)| Bandwidth::ratio(n, d)));
            Ok(())
        }
        Call::Deadline(i, v) => sched.deadline_set(k, ThreadId(i), v),
        Call::CycleEnd(i) => sched.cycle_end(k, ThreadId(i)),
        Call::In(i) => sched.switched_in(k, ThreadId(i)),
        Call::Out(i) => sched.switched_out(k, ThreadId(i)),
        Call::Timer(i) => sched.timer_expired(k, ThreadId(i)).map(drop),
        Call::Clock(v) => {
            k.now = v;
            Ok(())
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn no_call_sequence_panics(calls in proptest::collection::vec(call(), 0..80)) {
        let mut sched = Scheduler::<4, 8>::new();
        let mut k = RecordingKernel::default();
        for c in calls {
            let _ = apply(&mut sched, &mut k, &c);
            k.requests.clear();
        }
        let drained = sched.events().drain().count();
        prop_assert!(drained <= 8);
    }
}

/// The calls that change what is admitted, on 4 threads with small values (so reservations
/// fit and collide often), releases the most frequent.
fn reservation_call() -> impl Strategy<Value = Call> {
    let (id, v) = (0u16..4, 0u64..12);
    prop_oneof![
        1 => id.clone().prop_map(Call::Attach),
        1 => id.clone().prop_map(Call::Detach),
        2 => (id.clone(), v.clone()).prop_map(|(i, v)| Call::Period(i, v)),
        2 => (id.clone(), v.clone()).prop_map(|(i, v)| Call::Budget(i, v)),
        1 => (id.clone(), v.clone()).prop_map(|(i, v)| Call::Wcet(i, v)),
        // A bound of n/0 turns admission off, which must zero the accounting.
        1 => (v.clone(), v.clone()).prop_map(|b| Call::Admission(Some(b))),
        6 => (id.clone(), v).prop_map(|(i, v)| Call::Deadline(i, v)),
        1 => id.prop_map(Call::CycleEnd),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]
    /// Whatever admits, refuses or forgets a reservation (setters, releases of CBS threads
    /// without a period, detach, the bound turned on and off), the total is the sum of what
    /// each thread has admitted, and a refusal changes neither.
    #[test]
    fn the_admitted_total_is_the_sum_of_the_threads_admitted(
        calls in proptest::collection::vec(reservation_call(), 0..120)
    ) {
        let mut sched = Scheduler::<4, 8>::new();
        let mut k = RecordingKernel::default();
        sched.admission_bound_set(Bandwidth::ratio(1, 1));
        let admitted = |sched: &Scheduler<4, 8>| -> Vec<Option<Bandwidth>> {
            (0..4).map(|t| sched.thread(ThreadId(t)).map(|b| b.admitted())).collect()
        };
        for c in calls {
            let (total, each) = (sched.admitted_total(), admitted(&sched));
            let status = apply(&mut sched, &mut k, &c);
            k.requests.clear();
            if matches!(status, Err(qf_sched::Error::AdmissionRejected { .. })) {
                prop_assert_eq!(sched.admitted_total(), total, "a refusal changed the total: {:?}", c);
                prop_assert_eq!(admitted(&sched), each, "a refusal changed a thread: {:?}", c);
            }
            let sum = admitted(&sched)
                .into_iter()
                .flatten()
                .fold(Bandwidth::ZERO, Bandwidth::saturating_add);
            prop_assert_eq!(sched.admitted_total(), sum, "after {:?}", c);
        }
    }
}

/// Runs `calls` on a kernel that delivers every timer once the clock passes it, with a clock
/// that only moves forward; fails if a timer is ever armed at or before the current time
/// (a kernel would fire it at once, and a scheduler that keeps doing so livelocks).
fn run_with_timer_delivery(calls: &[Call]) -> Result<(), String> {
    let mut sched = Scheduler::<4, 8>::new();
    let mut k = RecordingKernel::default();
    // Checks the requests made since index `from`.
    let check = |k: &RecordingKernel, from: usize, now: u64| -> Result<(), String> {
        for r in &k.requests[from..] {
            if let Request::TimerArm(t, at) = r {
                if *at <= now {
                    return Err(format!("{t:?} armed at {at} when now is {now}"));
                }
            }
        }
        Ok(())
    };
    for c in calls.iter().cloned() {
        let before = k.now;
        let from = k.requests.len();
        let _ = match &c {
            // Timers fire only as the clock passes them, below.
            Call::Admission(_) | Call::Timer(_) => Ok(()),
            Call::Clock(v) => {
                let target = k.now + v;
                // Deliver every timer due up to `target`, in time order, like a kernel.
                for _ in 0..1000 {
                    let due = (0..4u16)
                        .filter_map(|t| k.armed(ThreadId(t)).map(|at| (at, t)))
                        .filter(|&(at, _)| at <= target)
                        .min();
                    let Some((at, t)) = due else { break };
                    k.now = at.max(k.now);
                    let thread = ThreadId(t);
                    k.requests.retain(|r| {
                        !matches!(r, Request::TimerArm(x, _) | Request::TimerCancel(x) if *x == thread)
                    });
                    let mark = k.requests.len();
                    let expiry = sched.timer_expired(&mut k, thread);
                    check(&k, mark, k.now)?;
                    // The report's aim is the one the expiry gave the kernel (a port may arm
                    // from it instead) and the one the block keeps.
                    if let Ok(expiry) = expiry {
                        let block = sched.thread(thread).and_then(|b| b.timer_target());
                        if expiry.timer_target() != k.armed(thread)
                            || expiry.timer_target() != block
                        {
                            return Err(format!(
                                "{thread:?}: expiry reports {:?}, kernel armed {:?}, block {block:?}",
                                expiry.timer_target(),
                                k.armed(thread)
                            ));
                        }
                    }
                }
                k.now = target;
                Ok(())
            }
            other => apply(&mut sched, &mut k, other),
        };
        if !matches!(c, Call::Clock(_)) {
            check(&k, from, before)?;
        }
        // Keep only the latest arm per thread (what `armed` replays).
        k.requests = (0..4u16)
            .filter_map(|t| {
                k.armed(ThreadId(t))
                    .map(|at| Request::TimerArm(ThreadId(t), at))
            })
            .collect();
    }
    Ok(())
}

#[test]
fn removing_a_server_mid_job_does_not_livelock_its_timer() {
    use Call::*;
    let calls = [
        Attach(0),
        Budget(0, 5),
        In(0),
        Deadline(0, 8),
        Budget(0, 0),
        Clock(9),
    ];
    assert_eq!(run_with_timer_delivery(&calls), Ok(()));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    /// No call sequence makes the scheduler arm a timer in the past (see
    /// `run_with_timer_delivery`).
    #[test]
    fn timers_are_armed_in_the_future_and_expiries_settle(
        calls in proptest::collection::vec(call_over(0..2, (0u64..12).boxed()), 0..120),
    ) {
        prop_assert_eq!(run_with_timer_delivery(&calls), Ok(()));
    }
}
