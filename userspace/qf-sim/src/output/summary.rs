//! The per-task summary of a simulation: jobs, completions, deadline misses, worst response
//! time and CPU share, as a text table or JSON.

use std::fmt::Write as _;

use serde::Serialize;

use crate::clock::Clock;
use crate::engine::Outcome;
use crate::taskset::{TaskKind, TaskSet};

/// Summary of one task (times in the set's unit).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TaskSummary {
    /// Task name.
    pub name: String,
    /// `periodic` or `cbs`.
    pub kind: &'static str,
    /// Jobs released before the horizon.
    pub jobs: u64,
    /// Jobs completed before the horizon.
    pub completed: u64,
    /// Deadline misses (deadline-miss callbacks run).
    pub deadline_misses: u64,
    /// Worst completion − arrival.
    pub max_response_time: f64,
    /// CPU time consumed / horizon.
    pub utilisation: f64,
    /// Period overruns reported by `deadline_set`.
    pub period_overruns: u64,
    /// CBS budget exhaustions with work left.
    pub budget_overruns: u64,
    /// Why admission control refused the task, if it did.
    pub rejected: Option<String>,
}

/// Summary of a whole simulation.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Summary {
    /// The set's unit, as written.
    pub unit: String,
    /// Kernel tick rate.
    pub tick_hz: u64,
    /// Simulated span.
    pub horizon: f64,
    /// Per task, in file order.
    pub tasks: Vec<TaskSummary>,
    /// Sum of the tasks' utilisation.
    pub cpu_utilisation: f64,
    /// Simulator events processed.
    pub sim_events: u64,
}

/// Builds the summary of `outcome`.
pub fn summarise(set: &TaskSet, clock: &Clock, outcome: &Outcome) -> Summary {
    let horizon = set.horizon_ns as f64;
    let tasks: Vec<TaskSummary> = set
        .tasks
        .iter()
        .zip(&outcome.stats)
        .map(|(task, stats)| TaskSummary {
            name: task.name.clone(),
            kind: match task.kind {
                TaskKind::Periodic { .. } => "periodic",
                TaskKind::Cbs { .. } => "cbs",
            },
            jobs: stats.jobs,
            completed: stats.completed,
            deadline_misses: stats.deadline_misses,
            max_response_time: clock.ns_to_units_f64(stats.max_response_ns),
            utilisation: stats.busy_ns as f64 / horizon,
            period_overruns: stats.period_overruns,
            budget_overruns: stats.budget_overruns,
            rejected: stats.rejected.clone(),
        })
        .collect();
    Summary {
        unit: set.unit_name.clone(),
        tick_hz: set.tick_hz,
        horizon: clock.ns_to_units_f64(set.horizon_ns),
        cpu_utilisation: tasks.iter().map(|t| t.utilisation).sum(),
        tasks,
        sim_events: outcome.sim_events,
    }
}

/// The summary as an aligned text table.
pub fn text(summary: &Summary) -> String {
    let mut out = format!(
        "horizon {} x {}, tick {} Hz, CPU utilisation {:.3}\n",
        summary.horizon, summary.unit, summary.tick_hz, summary.cpu_utilisation
    );
    let _ = writeln!(
        out,
        "{:<16} {:<8} {:>6} {:>9} {:>7} {:>10} {:>8} {:>9} {:>9}",
        "task", "kind", "jobs", "completed", "misses", "max_resp", "util", "p_overrun", "b_overrun"
    );
    for t in &summary.tasks {
        let _ = writeln!(
            out,
            "{:<16} {:<8} {:>6} {:>9} {:>7} {:>10} {:>8.3} {:>9} {:>9}",
            t.name,
            t.kind,
            t.jobs,
            t.completed,
            t.deadline_misses,
            t.max_response_time,
            t.utilisation,
            t.period_overruns,
            t.budget_overruns
        );
        if let Some(why) = &t.rejected {
            let _ = writeln!(out, "  {} was not admitted: {why}", t.name);
        }
    }
    out
}
