//! The simulated kernel's scheduling rules, one at a time: static priority before EDF, no
//! preemption on an equal deadline, first-ready first among equals, and timers that fire on
//! kernel ticks (durations rounded up to whole ticks, as Zephyr's `K_MSEC` does).

use std::path::Path;

use qf_sim::{parse, simulate, Options};

fn schedule(text: &str) -> Vec<(u64, u64, String)> {
    let set = parse(Path::new("rules.toml"), text).unwrap_or_else(|e| panic!("{e}"));
    let outcome = simulate(&set, Options::default());
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

fn slice(start: u64, end: u64, task: &str) -> (u64, u64, String) {
    (start, end, task.to_string())
}

#[test]
fn static_priority_comes_before_the_earliest_deadline() {
    // "urgent" has the later deadline (20 vs 5) but the better static priority; "edf" then
    // finishes its first job exactly at its deadline 5 and runs its second (one merged slice).
    let text = r#"
        horizon = 10
        [[task]]
        name = "edf"
        kind = "periodic"
        wcet = 2
        period = 5
        [[task]]
        name = "urgent"
        kind = "periodic"
        priority = -1
        wcet = 3
        period = 20
    "#;
    assert_eq!(
        schedule(text),
        vec![slice(0, 3, "urgent"), slice(3, 7, "edf")]
    );
}

#[test]
fn a_running_thread_is_not_preempted_by_an_equal_deadline() {
    // "late" (released at 2 with deadline 2 + 8 = 10) ties with the running "early" (0 + 10).
    let text = r#"
        horizon = 10
        [[task]]
        name = "early"
        kind = "periodic"
        wcet = 4
        period = 10
        [[task]]
        name = "late"
        kind = "periodic"
        wcet = 1
        period = 8
        offset = 2
    "#;
    assert_eq!(
        schedule(text),
        vec![slice(0, 4, "early"), slice(4, 5, "late")]
    );
}

#[test]
fn among_equal_deadlines_the_first_ready_runs_first() {
    // "blocker" (static priority -1) holds the CPU until 4. Meanwhile "b" is released at 1
    // (deadline 1 + 9 = 10) and "a" at 2 (deadline 2 + 8 = 10): b became ready first, so it
    // runs first although a comes first in the file.
    let text = r#"
        horizon = 8
        [[task]]
        name = "a"
        kind = "periodic"
        wcet = 1
        period = 8
        offset = 2
        [[task]]
        name = "b"
        kind = "periodic"
        wcet = 1
        period = 9
        offset = 1
        [[task]]
        name = "blocker"
        kind = "periodic"
        priority = -1
        wcet = 4
        period = 100
    "#;
    assert_eq!(
        schedule(text),
        vec![slice(0, 4, "blocker"), slice(4, 5, "b"), slice(5, 6, "a")]
    );
}

#[test]
fn timers_fire_on_ticks_and_durations_round_up_to_whole_ticks() {
    // A 4 ms tick: the 10 ms period becomes 3 ticks = 12 ms, so releases come at 0, 12, 24.
    let text = r#"
        tick_hz = 250
        horizon = 30
        [[task]]
        name = "p"
        kind = "periodic"
        wcet = 1
        period = 10
    "#;
    assert_eq!(
        schedule(text),
        vec![slice(0, 1, "p"), slice(12, 13, "p"), slice(24, 25, "p")]
    );
}
