//! Simulator throughput on 10⁶ jobs: three hard periodic tasks and one CBS whose jobs overrun
//! their budget (so B_ROUT, preemptions and timers all occur), traced out. Reports simulator
//! events per second (completions, timer expiries, context switches) as criterion's
//! throughput. Run: `cargo bench -p qf-sim`.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use qf_sim::taskset::{Task, TaskKind, TaskSet};
use qf_sim::{simulate, Options};

const MS: u64 = 1_000_000;
const JOBS: u64 = 1_000_000;

/// Jobs per ms: 1/5 + 1/10 + 1/20 + 1/8 = 0.475, so the horizon holds 10⁶ jobs.
fn million_jobs() -> TaskSet {
    let horizon_ms = JOBS * 1000 / 475;
    let periodic = |name: &str, wcet: u64, period: u64| Task {
        name: name.into(),
        priority: 0,
        kind: TaskKind::Periodic {
            wcet_ns: wcet * MS,
            period_ns: period * MS,
            deadline_ns: period * MS,
            offset_ns: 0,
        },
    };
    let cbs_jobs = (0..horizon_ms / 8)
        .map(|k| (k * 8 * MS + MS, 3 * MS))
        .collect();
    TaskSet {
        unit_ns: MS,
        unit_name: "1ms".into(),
        tick_hz: 10_000,
        horizon_ns: horizon_ms * MS,
        admission_bound_ppm: None,
        tasks: vec![
            periodic("hard5", 1, 5),
            periodic("hard10", 2, 10),
            periodic("hard20", 3, 20),
            Task {
                name: "cbs".into(),
                priority: 0,
                kind: TaskKind::Cbs {
                    budget_ns: 2 * MS,
                    period_ns: 8 * MS,
                    jobs: cbs_jobs,
                    hard_reservation: false,
                },
            },
        ],
    }
}

fn throughput(c: &mut Criterion) {
    let set = million_jobs();
    let options = Options {
        origin_ticks: 0,
        discard_trace: true,
    };
    let probe = simulate(&set, options);
    let jobs: u64 = probe.stats.iter().map(|s| s.jobs).sum();
    println!(
        "workload: {jobs} jobs, {} simulator events per run",
        probe.sim_events
    );
    let mut group = c.benchmark_group("qf-sim");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(8));
    group.throughput(Throughput::Elements(probe.sim_events));
    group.bench_function("1e6 jobs (events/s)", |b| {
        b.iter(|| simulate(&set, options))
    });
    group.finish();
}

criterion_group!(benches, throughput);
criterion_main!(benches);
