//! Whatever a kernel or application feeds the scheduler — unknown ids, zero or huge values,
//! a clock that jumps or goes backwards, hooks in any order — it returns a status and never
//! panics (overflow checks are on in test builds, so an overflow would panic here).

mod recording_kernel;

use proptest::prelude::*;
use qf_sched::{Bandwidth, Callback, Notice, Scheduler, ThreadId};
use recording_kernel::RecordingKernel;

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
    let id = 0u16..6;
    prop_oneof![
        id.clone().prop_map(Call::Attach),
        id.clone().prop_map(Call::Detach),
        (id.clone(), value()).prop_map(|(i, v)| Call::Period(i, v)),
        (id.clone(), value()).prop_map(|(i, v)| Call::Budget(i, v)),
        (id.clone(), any::<bool>()).prop_map(|(i, v)| Call::Hard(i, v)),
        (id.clone(), value()).prop_map(|(i, v)| Call::Wcet(i, v)),
        (id.clone(), any::<bool>()).prop_map(|(i, v)| Call::Miss(i, v)),
        (id.clone(), any::<bool>()).prop_map(|(i, v)| Call::Overrun(i, v)),
        proptest::option::of((value(), value())).prop_map(Call::Admission),
        (id.clone(), value()).prop_map(|(i, v)| Call::Deadline(i, v)),
        id.clone().prop_map(Call::CycleEnd),
        id.clone().prop_map(Call::In),
        id.clone().prop_map(Call::Out),
        id.prop_map(Call::Timer),
        value().prop_map(Call::Clock),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn no_call_sequence_panics(calls in proptest::collection::vec(call(), 0..80)) {
        let mut sched = Scheduler::<4, 8>::new();
        let mut k = RecordingKernel::default();
        let cb = |on: bool| on.then_some(Callback { func: ignore, arg: 1 });
        for c in calls {
            let _ = match c {
                Call::Attach(i) => sched.attach(ThreadId(i)),
                Call::Detach(i) => sched.detach(&mut k, ThreadId(i)),
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
                Call::Deadline(i, v) => sched.deadline_set(&mut k, ThreadId(i), v),
                Call::CycleEnd(i) => sched.cycle_end(&mut k, ThreadId(i)),
                Call::In(i) => sched.switched_in(&mut k, ThreadId(i)),
                Call::Out(i) => sched.switched_out(&mut k, ThreadId(i)),
                Call::Timer(i) => sched.timer_expired(&mut k, ThreadId(i)),
                Call::Clock(v) => { k.now = v; Ok(()) }
            };
            k.requests.clear();
        }
        let drained = sched.events().drain().count();
        prop_assert!(drained <= 8);
    }
}
