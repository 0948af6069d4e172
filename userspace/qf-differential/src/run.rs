//! Running a set through `qf sim` in-process: its event CSV exactly as `qf sim --events`
//! writes it, with the outcome (per-task statistics) beside it.

use qf_sim::clock::Clock;
use qf_sim::output::csv::{write_event, EVENTS_HEADER};
use qf_sim::{simulate, Options, Outcome, TaskSet};

/// A simulated set: `qf sim --events` text and the simulator's outcome.
pub struct SimRun {
    /// The event CSV, header included.
    pub csv: String,
    /// What the simulation produced (statistics, events).
    pub outcome: Outcome,
}

/// The clock `qf sim` writes a set's files with.
pub fn clock_of(set: &TaskSet) -> Clock {
    Clock {
        tick_hz: set.tick_hz,
        unit_ns: set.unit_ns,
        origin_ticks: 0,
    }
}

/// Simulates `set` and renders its event CSV.
pub fn simulate_csv(set: &TaskSet) -> SimRun {
    let outcome = simulate(set, Options::default());
    let clock = clock_of(set);
    let mut csv = Vec::with_capacity(64 * (outcome.events.len() + 1));
    csv.extend_from_slice(EVENTS_HEADER.as_bytes());
    for event in &outcome.events {
        // Writing to a Vec cannot fail.
        let _ = write_event(&mut csv, set, &clock, event);
    }
    SimRun {
        // Task names are validated UTF-8 strings and the rest is ASCII.
        csv: String::from_utf8_lossy(&csv).into_owned(),
        outcome,
    }
}
