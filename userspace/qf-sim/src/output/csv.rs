//! The two CSV files of `qf sim`: the schedule (`start,end,task`, one row per maximal
//! execution slice, idle omitted) and the scheduler trace (`time,task,event,budget,deadline`),
//! all times in the task set's unit. Written row by row as the simulation produces them.

use std::io::{self, Write};

use crate::clock::Clock;
use crate::engine::{Slice, TraceEvent};
use crate::taskset::TaskSet;

/// The schedule file's first line.
pub const SCHEDULE_HEADER: &str = "start,end,task\n";

/// The event-trace file's first line.
pub const EVENTS_HEADER: &str = "time,task,event,budget,deadline\n";

/// One schedule row.
pub fn write_slice(
    out: &mut impl Write,
    set: &TaskSet,
    clock: &Clock,
    slice: &Slice,
) -> io::Result<()> {
    writeln!(
        out,
        "{},{},{}",
        clock.ns_in_units(slice.start_ns),
        clock.ns_in_units(slice.end_ns),
        set.tasks[slice.task].name
    )
}

/// One event-trace row.
pub fn write_event(
    out: &mut impl Write,
    set: &TaskSet,
    clock: &Clock,
    row: &TraceEvent,
) -> io::Result<()> {
    let e = row.event;
    writeln!(
        out,
        "{},{},{},{},{}",
        clock.ns_in_units(row.time_ns),
        set.tasks[e.thread.index()].name,
        e.kind.name(),
        clock.ticks_in_units(e.budget),
        clock.ns_in_units(clock.ns_of_tick(e.deadline))
    )
}
