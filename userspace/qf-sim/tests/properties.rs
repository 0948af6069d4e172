//! Properties of EDF + CBS the simulator must show on random task sets (issue 2):
//! temporal isolation of hard tasks, the CBS bandwidth bound, deadline-miss callbacks at the
//! missed deadline and only then, period-overrun statuses exactly when a cycle overruns,
//! independence from the tick rate when the tick divides every time, and independence from
//! where Zephyr's 32-bit deadline counter wraps.

use proptest::prelude::*;
use qf_sched::EventKind;
use qf_sim::engine::{Outcome, Report};
use qf_sim::taskset::{Task, TaskKind, TaskSet};
use qf_sim::{simulate, Options};

const MS: u64 = 1_000_000;
const HORIZON_MS: u64 = 120;

fn task_set(tasks: Vec<Task>, tick_hz: u64) -> TaskSet {
    TaskSet {
        unit_ns: MS,
        unit_name: "1ms".into(),
        tick_hz,
        horizon_ns: HORIZON_MS * MS,
        admission_bound_ppm: None,
        tasks,
    }
}

fn periodic(name: String, wcet: u64, period: u64, offset: u64) -> Task {
    Task {
        name,
        priority: 0,
        kind: TaskKind::Periodic {
            wcet_ns: wcet * MS,
            period_ns: period * MS,
            deadline_ns: period * MS,
            offset_ns: offset * MS,
        },
    }
}

fn cbs(name: String, budget: u64, period: u64, jobs: &[(u64, u64)], hard: bool) -> Task {
    Task {
        name,
        priority: 0,
        kind: TaskKind::Cbs {
            budget_ns: budget * MS,
            period_ns: period * MS,
            jobs: jobs.iter().map(|&(a, e)| (a * MS, e * MS)).collect(),
            hard_reservation: hard,
        },
    }
}

/// CBS jobs: arrivals from cumulative gaps, any execution time (they may overload the server).
fn cbs_jobs() -> impl Strategy<Value = Vec<(u64, u64)>> {
    proptest::collection::vec((0u64..25, 1u64..30), 1..7).prop_map(|raw| {
        let mut at = 0;
        raw.into_iter()
            .map(|(gap, exec)| {
                at += gap;
                (at, exec)
            })
            .collect()
    })
}

/// A task set whose hard utilisation plus Σ Q/T is at most 1: weights share the processor,
/// each task takes the whole number of ms its share allows (at least 1).
fn feasible_set() -> impl Strategy<Value = TaskSet> {
    let hard = proptest::collection::vec((2u64..20, 1u64..10, 0u64..6), 1..4);
    let servers = proptest::collection::vec((2u64..20, 1u64..10, cbs_jobs(), any::<bool>()), 1..3);
    (hard, servers)
        .prop_map(|(hard, servers)| {
            let total: u64 = hard
                .iter()
                .map(|h| h.1)
                .chain(servers.iter().map(|s| s.1))
                .sum();
            let mut tasks = Vec::new();
            for (i, (period, weight, offset)) in hard.into_iter().enumerate() {
                let wcet = (weight * period / total).max(1);
                tasks.push(periodic(format!("hard{i}"), wcet, period, offset));
            }
            for (i, (period, weight, jobs, hard)) in servers.into_iter().enumerate() {
                let budget = (weight * period / total).max(1);
                tasks.push(cbs(format!("cbs{i}"), budget, period, &jobs, hard));
            }
            task_set(tasks, 10_000)
        })
        .prop_filter("utilisation at most 1", |set| {
            // Exact: Σ C_i/T_i ≤ 1 with all periods below 20, over their product-free LCM.
            let lcm: u128 = 232_792_560; // lcm(1..=20)
            let demand: u128 = set
                .tasks
                .iter()
                .map(|t| match t.kind {
                    TaskKind::Periodic {
                        wcet_ns, period_ns, ..
                    } => (wcet_ns as u128) * lcm / period_ns as u128,
                    TaskKind::Cbs {
                        budget_ns,
                        period_ns,
                        ..
                    } => (budget_ns as u128) * lcm / period_ns as u128,
                })
                .sum();
            demand <= lcm
        })
}

fn hard_task_indices(set: &TaskSet) -> Vec<usize> {
    (0..set.tasks.len())
        .filter(|&i| matches!(set.tasks[i].kind, TaskKind::Periodic { .. }))
        .collect()
}

/// CPU time task `task` received in [from, to), ns.
fn cpu_time(outcome: &Outcome, task: usize, from: u64, to: u64) -> u64 {
    outcome
        .slices
        .iter()
        .filter(|s| s.task == task)
        .map(|s| s.end_ns.min(to).saturating_sub(s.start_ns.max(from)))
        .sum()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Temporal isolation: whatever the CBS jobs do (overruns included), no hard deadline is
    /// missed when hard utilisation + Σ Q/T ≤ 1.
    #[test]
    fn hard_deadlines_hold_whatever_the_cbs_jobs_do(set in feasible_set()) {
        let outcome = simulate(&set, Options::default());
        let clock = qf_sim::clock::Clock { tick_hz: set.tick_hz, unit_ns: set.unit_ns, origin_ticks: 0 };
        for i in hard_task_indices(&set) {
            prop_assert_eq!(outcome.stats[i].deadline_misses, 0, "task {}", set.tasks[i].name);
            for job in outcome.jobs.iter().filter(|j| j.task == i) {
                let deadline_ns = clock.ns_of_tick(job.deadline_ticks);
                if deadline_ns < set.horizon_ns {
                    prop_assert!(job.completion_ns.is_some_and(|c| c <= deadline_ns),
                        "{} job released at tick {} (deadline {}) completed at {:?}",
                        set.tasks[i].name, job.release_ticks, deadline_ns, job.completion_ns);
                }
            }
        }
    }

    /// Bandwidth: each server period [d − T, d] (opened by B_COND, B_ROUT or a throttle)
    /// serves at most (Q/T)·(its length until the next period opens), so over any span of
    /// consecutive server periods the CBS never gets more than Q/T of it.
    #[test]
    fn a_cbs_never_gets_more_than_its_bandwidth(set in feasible_set()) {
        let outcome = simulate(&set, Options::default());
        let clock = qf_sim::clock::Clock { tick_hz: set.tick_hz, unit_ns: set.unit_ns, origin_ticks: 0 };
        for (i, task) in set.tasks.iter().enumerate() {
            let TaskKind::Cbs { budget_ns, period_ns, .. } = task.kind else { continue };
            // (opened at, period start s = d − T, deadline d), all ns.
            let periods: Vec<(u64, u64, u64)> = outcome
                .events
                .iter()
                .filter(|e| e.event.thread.index() == i)
                .filter(|e| matches!(e.event.kind,
                    EventKind::BudgetCondition | EventKind::BudgetReplenish | EventKind::Throttle))
                .map(|e| {
                    let d = clock.ns_of_tick(e.event.deadline);
                    (e.time_ns, d - period_ns, d)
                })
                // A hard reservation's refill after throttling continues the period the
                // throttle opened (same deadline).
                .fold(Vec::new(), |mut periods, p| {
                    if periods.last().is_none_or(|last: &(u64, u64, u64)| last.2 != p.2) {
                        periods.push(p);
                    }
                    periods
                });
            let mut served_total: u128 = 0;
            for (k, &(opened, start, deadline)) in periods.iter().enumerate() {
                let (next_opened, end) = match periods.get(k + 1) {
                    Some(&(next_opened, next_start, _)) => {
                        prop_assert!(next_start >= start, "server periods go forward");
                        (next_opened, deadline.min(next_start))
                    }
                    None => (set.horizon_ns, deadline),
                };
                let served = cpu_time(&outcome, i, opened, next_opened) as u128;
                prop_assert!(served * period_ns as u128 <= budget_ns as u128 * (end - start) as u128,
                    "{}: {} ns served in server period [{}, {}] (Q = {}, T = {})",
                    task.name, served, start, end, budget_ns, period_ns);
                served_total += served;
                let span = (end - periods[0].1) as u128;
                prop_assert!(served_total * period_ns as u128 <= budget_ns as u128 * span);
            }
        }
    }

    /// Deadline-miss callbacks run exactly at the missed absolute deadline, once per late job,
    /// and for no job that finished in time.
    #[test]
    fn miss_callbacks_fire_exactly_at_missed_deadlines(
        wcet in 1u64..12, period in 3u64..12, jobs in cbs_jobs(), budget in 1u64..6, server in 3u64..12,
    ) {
        // Overload is allowed here, so misses do happen.
        let set = task_set(vec![
            periodic("hard".into(), wcet, period, 0),
            cbs("soft".into(), budget, server, &jobs, false),
        ], 10_000);
        let outcome = simulate(&set, Options::default());
        let clock = qf_sim::clock::Clock { tick_hz: set.tick_hz, unit_ns: set.unit_ns, origin_ticks: 0 };
        let mut fired = Vec::new();
        for report in &outcome.reports {
            if let Report::DeadlineMiss(n) = report {
                prop_assert_eq!(n.time, n.deadline, "callback ran at the missed deadline");
                fired.push((n.thread.index(), n.deadline));
            }
        }
        let mut late = Vec::new();
        for job in &outcome.jobs {
            let deadline_ns = clock.ns_of_tick(job.deadline_ticks);
            let in_time = job.completion_ns.is_some_and(|c| c <= deadline_ns);
            if !in_time && deadline_ns < set.horizon_ns {
                late.push((job.task, job.deadline_ticks));
            }
        }
        fired.sort_unstable();
        late.sort_unstable();
        prop_assert_eq!(fired, late);
    }

    /// `deadline_set` reports a period overrun exactly for the cycles that ended after their
    /// period had elapsed (periods never change here, so no overrun is excused).
    #[test]
    fn period_overruns_are_reported_exactly_when_a_cycle_overruns(
        tasks in proptest::collection::vec((1u64..10, 2u64..10, 0u64..4), 1..4),
    ) {
        let set = task_set(
            tasks.iter().enumerate().map(|(i, &(c, t, o))| periodic(format!("p{i}"), c, t, o)).collect(),
            10_000,
        );
        let outcome = simulate(&set, Options::default());
        let period_ticks = |i: usize| match set.tasks[i].kind {
            TaskKind::Periodic { period_ns, .. } => period_ns / MS * 10,
            TaskKind::Cbs { .. } => u64::MAX,
        };
        for i in 0..set.tasks.len() {
            let overran = outcome
                .jobs
                .iter()
                .filter(|j| j.task == i)
                .filter(|j| j.completion_ticks.is_some_and(|c| c > j.release_ticks + period_ticks(i)))
                .count() as u64;
            prop_assert_eq!(outcome.stats[i].period_overruns, overran, "task {}", i);
        }
    }

    /// With every time a whole number of ticks, the tick rate changes nothing, and neither does
    /// the point where the scheduler's 32-bit deadline view wraps.
    #[test]
    fn results_do_not_depend_on_tick_rate_or_the_deadline_wrap(set in feasible_set()) {
        let trace = |tick_hz: u64, origin_ticks: u64| {
            let set = TaskSet { tick_hz, ..set.clone() };
            let clock = qf_sim::clock::Clock { tick_hz, unit_ns: set.unit_ns, origin_ticks };
            let outcome = simulate(&set, Options { origin_ticks, discard_trace: false });
            let events: Vec<_> = outcome
                .events
                .iter()
                .map(|e| (e.time_ns, e.event.thread, e.event.kind,
                          e.event.budget * 1_000_000_000 / tick_hz,
                          clock.ns_of_tick(e.event.deadline)))
                .collect();
            (outcome.slices, events, outcome.stats)
        };
        let reference = trace(10_000, 0);
        prop_assert_eq!(&trace(1_000, 0), &reference);
        prop_assert_eq!(&trace(250_000, 0), &reference);
        // The 32-bit deadline counter wraps 40 ms into the run.
        prop_assert_eq!(&trace(10_000, (1 << 32) - 400), &reference);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// The trace is handed over as it is produced, yet in time order: events stamped with a
    /// cycle's future release wait until time reaches them, equal times keep the order they
    /// happened in, and what a trace receiver gets equals the statistics-only run's counts.
    #[test]
    fn the_streamed_trace_is_in_time_order(set in feasible_set()) {
        let outcome = simulate(&set, Options::default());
        prop_assert!(outcome.events.windows(2).all(|w| w[0].time_ns <= w[1].time_ns));
        prop_assert!(outcome.slices.windows(2).all(|w| w[0].end_ns <= w[1].start_ns));
        let quiet = simulate(&set, Options { origin_ticks: 0, discard_trace: true });
        prop_assert_eq!(&quiet.stats, &outcome.stats);
        prop_assert_eq!(quiet.sim_events, outcome.sim_events);
    }
}
