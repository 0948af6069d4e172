//! Wall-clock cost of the scheduler hooks on their hot paths (criterion, median per call):
//! switch-in (SWT_TO), switch-out (SWT_AY), `deadline_set` (a periodic CBS cycle end + start)
//! with admission control off and on, and replenish (budget exhaustion through the timer:
//! B_ROUT). Run: `cargo bench -p qf-sched`.

mod common;

use common::{admitted_cbs_thread_with, running_cbs_thread, BUDGET, PERIOD, THREAD};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use std::hint::black_box;

fn hooks(c: &mut Criterion) {
    let mut group = c.benchmark_group("qf-sched hook");

    // Switch-out of a running CBS thread: charge the budget, stop its clock, re-arm the timer.
    group.bench_function("switched_out", |b| {
        b.iter_batched_ref(
            || {
                let (sched, mut kernel) = running_cbs_thread();
                kernel.now = 5;
                (sched, kernel)
            },
            |(sched, kernel)| black_box(sched.switched_out(kernel, black_box(THREAD))),
            BatchSize::SmallInput,
        )
    });

    // Switch-in of a preempted CBS thread: restart the budget clock with what is left.
    group.bench_function("switched_in", |b| {
        b.iter_batched_ref(
            || {
                let (mut sched, mut kernel) = running_cbs_thread();
                kernel.now = 5;
                let _ = sched.switched_out(&mut kernel, THREAD);
                kernel.now = 9;
                (sched, kernel)
            },
            |(sched, kernel)| black_box(sched.switched_in(kernel, black_box(THREAD))),
            BatchSize::SmallInput,
        )
    });

    // deadline_set at the end of each cycle, 10 units in: charge, suspend until the next
    // activation, CBS arrival rule, new deadline, timer.
    group.bench_function("deadline_set", |b| {
        let (mut sched, mut kernel) = running_cbs_thread();
        kernel.now = 10;
        b.iter(|| {
            let status = sched.deadline_set(&mut kernel, black_box(THREAD), PERIOD);
            kernel.now += PERIOD;
            black_box(status)
        })
    });

    // The same cycle edge with admission control on: the reservation was admitted by its
    // setters, so the release should cost what it costs with admission off.
    group.bench_function("deadline_set_admitted", |b| {
        let (mut sched, mut kernel) = admitted_cbs_thread_with::<64>();
        kernel.now = 10;
        b.iter(|| {
            let status = sched.deadline_set(&mut kernel, black_box(THREAD), PERIOD);
            kernel.now += PERIOD;
            black_box(status)
        })
    });

    // Replenish: the budget timer fires while the job still runs (B_ROUT, deadline postponed,
    // clock restarted), once every Q units of execution.
    group.bench_function("replenish", |b| {
        let (mut sched, mut kernel) = running_cbs_thread();
        b.iter(|| {
            kernel.now += BUDGET;
            black_box(sched.timer_expired(&mut kernel, black_box(THREAD)))
        })
    });
    group.finish();
}

criterion_group!(benches, hooks);
criterion_main!(benches);
