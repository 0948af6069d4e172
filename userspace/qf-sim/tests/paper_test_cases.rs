//! The paper's Test Case 1 and Test Case 2 (Task-Based CBS in Zephyr, Section 5), simulated
//! from `examples/` and checked slice by slice against schedules worked out by hand from CBS
//! theory (Abeni & Buttazzo): EDF on absolute deadlines; a CBS job arriving at r replenishes
//! (B_COND: d = r + T, c = Q) iff c·T ≥ (d − r)·Q; an exhausted budget with work left is
//! refilled with the deadline postponed (B_ROUT: c = Q, d = d + T). The CBS starts at c = d = 0.

use std::path::PathBuf;

use qf_sched::EventKind;
use qf_sim::cli::{simulate_file, Simulated};

fn example(name: &str) -> Simulated {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name);
    match simulate_file(&path) {
        Ok(simulated) => simulated,
        Err(e) => panic!("{e}"),
    }
}

/// The schedule as (start, end, task) in the set's unit.
fn slices(sim: &Simulated) -> Vec<(u64, u64, &str)> {
    let unit = sim.set.unit_ns;
    sim.outcome
        .slices
        .iter()
        .map(|s| {
            (
                s.start_ns / unit,
                s.end_ns / unit,
                sim.set.tasks[s.task].name.as_str(),
            )
        })
        .collect()
}

/// The CBS budget events as (time, event, budget, deadline) in the set's unit.
fn budget_events(sim: &Simulated) -> Vec<(u64, &'static str, u64, u64)> {
    let unit = sim.set.unit_ns;
    let per_unit = sim.set.tick_hz * unit / 1_000_000_000;
    sim.outcome
        .events
        .iter()
        .filter(|e| {
            matches!(
                e.event.kind,
                EventKind::BudgetCondition | EventKind::BudgetReplenish
            )
        })
        .map(|e| {
            (
                e.time_ns / unit,
                e.event.kind.name(),
                e.event.budget / per_unit,
                sim.clock.ns_of_tick(e.event.deadline) / unit,
            )
        })
        .collect()
}

fn misses(sim: &Simulated, task: &str) -> u64 {
    let index = sim
        .set
        .tasks
        .iter()
        .position(|t| t.name == task)
        .expect("task exists");
    sim.outcome.stats[index].deadline_misses
}

/// Test Case 1: hard1 (C, T) = (4, 7); cbs1 (Q, T) = (3, 8), J1 (C = 4) at 3, J2 (C = 3) at 13.
///
/// | t     | what happens                                                       | c | d  |
/// |-------|--------------------------------------------------------------------|---|----|
/// | 0     | hard1 job 1 released, d = 7; runs 0–4                             | 0 | 0  |
/// | 3     | J1 arrives: d = 0 ≤ r → B_COND, d = 3 + 8 = 11, c = 3              | 3 | 11 |
/// | 4     | hard1 done; cbs1 (d = 11) runs                                     | 3 | 11 |
/// | 7     | budget exhausted, 1 unit of J1 left → B_ROUT, d = 19, c = 3;       | 3 | 19 |
/// |       | hard1 job 2 released (d = 14 < 19) preempts, runs 7–11             |   |    |
/// | 11    | cbs1 runs; J1 done at 12 (c = 2)                                   | 2 | 19 |
/// | 13    | J2 arrives: c·T = 16 < (19 − 13)·3 = 18 → keep c = 2, d = 19       | 2 | 19 |
/// | 13–15 | cbs1 runs (d = 19 < hard1's 21 from t = 14) until the budget ends  |   |    |
/// | 15    | 1 unit of J2 left → B_ROUT, d = 27, c = 3; hard1 (d = 21) runs     | 3 | 27 |
/// | 19    | hard1 done (d = 21 met); cbs1 finishes J2 at 20 (c = 2)            | 2 | 27 |
/// | 21…   | hard1 alone: 21–25, 28–32                                          |   |    |
#[test]
fn test_case_1_matches_the_cbs_schedule_worked_by_hand() {
    let sim = example("test-case-1.toml");
    assert_eq!(
        slices(&sim),
        vec![
            (0, 4, "hard1"),
            (4, 7, "cbs1"),
            (7, 11, "hard1"),
            (11, 12, "cbs1"),
            (13, 15, "cbs1"),
            (15, 19, "hard1"),
            (19, 20, "cbs1"),
            (21, 25, "hard1"),
            (28, 32, "hard1"),
        ]
    );
    assert_eq!(
        budget_events(&sim),
        vec![
            (3, "B_COND", 3, 11),
            (7, "B_ROUT", 3, 19),
            (15, "B_ROUT", 3, 27)
        ]
    );
    assert_eq!(misses(&sim, "hard1"), 0, "every hard deadline is met");
    // The soft jobs finish after their first server deadlines (12 > 11, 20 > 19).
    assert_eq!(misses(&sim, "cbs1"), 2);
}

/// Test Case 2: hard1 (2, 6), hard2 (3, 9); cbs1 (Q, T) = (2, 6), J1 (C = 3) at 2,
/// J2 (C = 3) at 12, J3 (C = 1) at 20. Utilisation exactly 1.
///
/// | t     | what happens                                                          | c | d  |
/// |-------|-----------------------------------------------------------------------|---|----|
/// | 0     | hard1 (d = 6) and hard2 (d = 9) released; hard1 runs 0–2              | 0 | 0  |
/// | 2     | J1 arrives: B_COND, d = 8, c = 2; cbs1 (8 < 9) runs 2–4               | 2 | 8  |
/// | 4     | budget exhausted, 1 unit left → B_ROUT, d = 14; hard2 (d = 9) runs 4–7 | 2 | 14 |
/// | 7     | hard1 (released 6, d = 12) runs 7–9                                   |   |    |
/// | 9     | hard2 released (d = 18); cbs1 (d = 14) finishes J1 at 10 (c = 1)      | 1 | 14 |
/// | 10    | hard2 runs 10–13                                                      |   |    |
/// | 12    | hard1 released (d = 18); J2 arrives: c·T = 6 ≥ (14 − 12)·2 = 4 →      | 2 | 18 |
/// |       | B_COND, d = 18, c = 2; all three at d = 18: hard2 keeps the CPU       |   |    |
/// | 13    | hard1 and cbs1 became ready at 12, hard1's wake-up first: 13–15       |   |    |
/// | 15    | cbs1 runs; budget exhausted at 17 → B_ROUT, d = 24; runs on to 18     | 2 | 24 |
/// | 18    | J2 done (c = 1); hard1 (d = 24) 18–20, hard2 released (d = 27)        | 1 | 24 |
/// | 20    | J3 arrives: c·T = 6 < (24 − 20)·2 = 8 → keep; cbs1 runs 20–21 (c = 0) | 0 | 24 |
/// | 21…   | hard2 21–24, hard1 24–26, hard2 27–30, hard1 30–32                    |   |    |
#[test]
fn test_case_2_matches_the_cbs_schedule_worked_by_hand() {
    let sim = example("test-case-2.toml");
    assert_eq!(
        slices(&sim),
        vec![
            (0, 2, "hard1"),
            (2, 4, "cbs1"),
            (4, 7, "hard2"),
            (7, 9, "hard1"),
            (9, 10, "cbs1"),
            (10, 13, "hard2"),
            (13, 15, "hard1"),
            (15, 18, "cbs1"),
            (18, 20, "hard1"),
            (20, 21, "cbs1"),
            (21, 24, "hard2"),
            (24, 26, "hard1"),
            (27, 30, "hard2"),
            (30, 32, "hard1"),
        ]
    );
    assert_eq!(
        budget_events(&sim),
        vec![
            (2, "B_COND", 2, 8),
            (4, "B_ROUT", 2, 14),
            (12, "B_COND", 2, 18),
            (17, "B_ROUT", 2, 24),
        ]
    );
    assert_eq!(misses(&sim, "hard1"), 0, "every hard deadline is met");
    assert_eq!(misses(&sim, "hard2"), 0, "every hard deadline is met");
    // J1 (deadline 8) finishes at 10; J2 (18) at 18 and J3 (24) at 21 are on time.
    assert_eq!(misses(&sim, "cbs1"), 1);
}

#[test]
fn both_test_cases_keep_the_same_schedule_at_every_unit_the_paper_used() {
    for name in ["test-case-1.toml", "test-case-2.toml"] {
        let reference = example(name);
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples")
            .join(name);
        let text = std::fs::read_to_string(&path).expect("example readable");
        for unit in ["1000ms", "100ms", "10ms"] {
            let scaled = text.replace("unit = \"1ms\"", &format!("unit = \"{unit}\""));
            let set = qf_sim::parse(&path, &scaled).expect("valid");
            let outcome = qf_sim::simulate(&set, qf_sim::Options::default());
            let in_units: Vec<_> = outcome
                .slices
                .iter()
                .map(|s| (s.start_ns / set.unit_ns, s.end_ns / set.unit_ns, s.task))
                .collect();
            let expected: Vec<_> = reference
                .outcome
                .slices
                .iter()
                .map(|s| {
                    (
                        s.start_ns / reference.set.unit_ns,
                        s.end_ns / reference.set.unit_ns,
                        s.task,
                    )
                })
                .collect();
            assert_eq!(in_units, expected, "{name} at unit {unit}");
        }
    }
}
