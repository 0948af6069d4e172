//! The two CSV files of `qf sim`: the schedule (`start,end,task`, one row per maximal
//! execution slice, idle omitted) and the scheduler trace (`time,task,event,budget,deadline`),
//! all times in the task set's unit.

use std::fmt::Write as _;

use crate::clock::Clock;
use crate::engine::Outcome;
use crate::taskset::TaskSet;

/// The schedule CSV text.
pub fn schedule(set: &TaskSet, clock: &Clock, outcome: &Outcome) -> String {
    let mut text = String::from("start,end,task\n");
    for slice in &outcome.slices {
        let _ = writeln!(
            text,
            "{},{},{}",
            clock.ns_in_units(slice.start_ns),
            clock.ns_in_units(slice.end_ns),
            set.tasks[slice.task].name
        );
    }
    text
}

/// The event-trace CSV text.
pub fn events(set: &TaskSet, clock: &Clock, outcome: &Outcome) -> String {
    let mut text = String::from("time,task,event,budget,deadline\n");
    for row in &outcome.events {
        let e = row.event;
        let _ = writeln!(
            text,
            "{},{},{},{},{}",
            clock.ns_in_units(row.time_ns),
            set.tasks[e.thread.index()].name,
            e.kind.name(),
            clock.ticks_in_units(e.budget),
            clock.ns_in_units(clock.ns_of_tick(e.deadline))
        );
    }
    text
}
