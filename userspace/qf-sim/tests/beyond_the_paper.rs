//! The three extensions beyond the paper, each off by default, seen through the simulator:
//! hard reservation, admission control and the budget-overrun callback.

use std::path::{Path, PathBuf};

use qf_sim::engine::Report;
use qf_sim::{parse, simulate, Options, Outcome, TaskSet};

fn set(text: &str) -> TaskSet {
    parse(Path::new("inline.toml"), text).unwrap_or_else(|e| panic!("{e}"))
}

fn slices(set: &TaskSet, outcome: &Outcome) -> Vec<(u64, u64, String)> {
    outcome
        .slices
        .iter()
        .map(|s| {
            (
                s.start_ns / set.unit_ns,
                s.end_ns / set.unit_ns,
                set.tasks[s.task].name.clone(),
            )
        })
        .collect()
}

fn lone_server(hard: bool) -> TaskSet {
    set(&format!(
        "horizon = 20\n[[task]]\nname = \"cbs\"\nkind = \"cbs\"\nbudget = 2\nperiod = 5\n\
         jobs = [[0, 5]]\nhard_reservation = {hard}\n"
    ))
}

#[test]
fn a_soft_cbs_alone_uses_the_idle_cpu_by_postponing_its_deadline() {
    let set = lone_server(false);
    let outcome = simulate(&set, Options::default());
    assert_eq!(slices(&set, &outcome), vec![(0, 5, "cbs".into())]);
}

#[test]
fn a_hard_reservation_leaves_the_cpu_idle_rather_than_exceed_q_per_t() {
    // Q = 2, T = 5, one 5-unit job at 0: B_COND d = 5; exhausted at 2 → throttled until 5
    // (d = 10); refilled at 5, exhausted at 7 → throttled until 10 (d = 15); done at 11.
    let set = lone_server(true);
    let outcome = simulate(&set, Options::default());
    assert_eq!(
        slices(&set, &outcome),
        vec![
            (0, 2, "cbs".into()),
            (5, 7, "cbs".into()),
            (10, 11, "cbs".into())
        ]
    );
    let throttles: Vec<u64> = outcome
        .events
        .iter()
        .filter(|e| e.event.kind == qf_sched::EventKind::Throttle)
        .map(|e| e.time_ns / set.unit_ns)
        .collect();
    assert_eq!(throttles, vec![2, 7]);
}

fn test_case_1(extra: &str) -> TaskSet {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/test-case-1.toml");
    let text = std::fs::read_to_string(&path).expect("example readable");
    parse(&path, &format!("{extra}\n{text}")).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn admission_control_refuses_the_server_that_would_exceed_the_bound() {
    // hard1 4/7 ≈ 0.571 + cbs1 3/8 = 0.375 → 0.946 > 0.9.
    let set = test_case_1("admission_bound = 0.9");
    let outcome = second_refused(
        &set,
        "375000 ppm on top of 571429 ppm exceeds the bound of 900000 ppm",
    );
    assert!(slices(&set, &outcome).iter().all(|s| s.2 == "hard1"));
}

/// Simulates `set`, whose second task admission control refuses with `message` before its
/// first job, and the first not.
fn second_refused(set: &TaskSet, message: &str) -> Outcome {
    let outcome = simulate(set, Options::default());
    let rejection = outcome.stats[1].rejected.clone().expect("refused");
    assert!(rejection.contains(message), "{rejection}");
    assert_eq!(outcome.stats[0].rejected, None);
    assert_eq!(outcome.stats[1].jobs, 0);
    outcome
}

#[test]
fn admission_control_refuses_the_periodic_task_that_would_exceed_the_bound() {
    // 0.6 + 0.6 of one CPU: qf-sched admits WCET/period where the WCET is declared, so the
    // second task is refused there and never runs; the first keeps its whole CPU share.
    let set = set("horizon = 20\nadmission_bound = 1.0\n\
         [[task]]\nname = \"a\"\nkind = \"periodic\"\nwcet = 6\nperiod = 10\n\
         [[task]]\nname = \"b\"\nkind = \"periodic\"\nwcet = 6\nperiod = 10\n");
    let outcome = second_refused(
        &set,
        "600000 ppm on top of 600000 ppm exceeds the bound of 1000000 ppm",
    );
    assert_eq!(outcome.stats[0].deadline_misses, 0);
    assert_eq!(
        slices(&set, &outcome),
        vec![(0, 6, "a".into()), (10, 16, "a".into())]
    );
}

#[test]
fn admission_control_refuses_a_server_whose_next_arrival_is_too_close() {
    // Q = 3 with the next arrival 2 after the release: the period the task sets for it asks
    // for 3/2 of a CPU, which qf-sched refuses; the task stops at that call.
    let set = set("horizon = 20\nadmission_bound = 1.0\n\
         [[task]]\nname = \"s\"\nkind = \"cbs\"\nbudget = 3\nperiod = 8\n\
         jobs = [[0, 1], [2, 1]]\n");
    let outcome = simulate(&set, Options::default());
    let rejection = outcome.stats[0].rejected.clone().expect("s refused");
    assert!(rejection.contains("1500000 ppm"), "{rejection}");
    assert_eq!(outcome.stats[0].jobs, 1);
    assert_eq!(slices(&set, &outcome), vec![(0, 1, "s".into())]);
}

#[test]
fn admission_control_within_the_bound_changes_nothing() {
    let plain = test_case_1("");
    let bounded = test_case_1("admission_bound = 1.0");
    let (a, b) = (
        simulate(&plain, Options::default()),
        simulate(&bounded, Options::default()),
    );
    assert_eq!(a.slices, b.slices);
    assert!(b.stats.iter().all(|s| s.rejected.is_none()));
}

#[test]
fn the_budget_overrun_callback_runs_at_each_exhaustion_with_work_left() {
    let set = test_case_1("");
    let outcome = simulate(&set, Options::default());
    let overruns: Vec<(u64, u64)> = outcome
        .reports
        .iter()
        .filter_map(|r| match r {
            Report::BudgetOverrun(n) => Some((n.time / 10, n.deadline / 10)),
            Report::DeadlineMiss(_) => None,
        })
        .collect();
    // Test Case 1: B_ROUT at 7 (d → 19) and at 15 (d → 27), in ms at 10 ticks per ms.
    assert_eq!(overruns, vec![(7, 19), (15, 27)]);
    assert_eq!(outcome.stats[1].budget_overruns, 2);
}
