//! `qf sim`: its clap arguments and what running it does (the `qf` binary only dispatches).

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use clap::Args;

use crate::clock::Clock;
use crate::engine::{simulate, Options, Outcome};
use crate::output::{csv, gantt, golden_c, summary};
use crate::taskset::{self, TaskSet};

/// Simulate a task set under periodic EDF + per-thread CBS (the code the Zephyr module runs).
#[derive(Args, Debug, Clone)]
pub struct SimArgs {
    /// Task-set file (TOML; see examples/).
    pub taskset: PathBuf,
    /// Write the schedule (start,end,task per execution slice) to this CSV file.
    #[arg(long, value_name = "S.csv")]
    pub schedule: Option<PathBuf>,
    /// Write the scheduler's event trace (time,task,event,budget,deadline) to this CSV file.
    #[arg(long, value_name = "E.csv")]
    pub events: Option<PathBuf>,
    /// Draw the Gantt chart (lanes, releases, deadlines, CBS budget) to this SVG file.
    #[arg(long, value_name = "G.svg")]
    pub gantt: Option<PathBuf>,
    /// Write the task set and its schedule as a C header (the Zephyr paper-case suite's golden
    /// data); the C object is named after the file (golden_tc1.h → golden_tc1).
    #[arg(long, value_name = "H.h")]
    pub golden_c: Option<PathBuf>,
    /// Print the summary as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// A simulated task set with the clock its outputs are expressed in.
pub struct Simulated {
    /// The task set.
    pub set: TaskSet,
    /// Its time bases.
    pub clock: Clock,
    /// What the simulation produced.
    pub outcome: Outcome,
}

/// Loads and simulates `path` (shared by `run` and tests).
pub fn simulate_file(path: &Path) -> Result<Simulated, taskset::TaskSetError> {
    let set = taskset::load(path)?;
    let clock = Clock {
        tick_hz: set.tick_hz,
        unit_ns: set.unit_ns,
        origin_ticks: 0,
    };
    let outcome = simulate(&set, Options::default());
    Ok(Simulated {
        set,
        clock,
        outcome,
    })
}

fn write(path: &Path, what: &str, text: &str) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create directory {} for the {what}", dir.display()))?;
    }
    std::fs::write(path, text)
        .with_context(|| format!("cannot write the {what} to {}", path.display()))
}

/// Runs `qf sim`.
pub fn run(args: &SimArgs) -> anyhow::Result<()> {
    let Simulated {
        set,
        clock,
        outcome,
    } = simulate_file(&args.taskset)?;
    if let Some(path) = &args.schedule {
        write(path, "schedule", &csv::schedule(&set, &clock, &outcome))?;
    }
    if let Some(path) = &args.events {
        write(path, "event trace", &csv::events(&set, &clock, &outcome))?;
    }
    if let Some(path) = &args.gantt {
        let title = args.taskset.file_name().map_or_else(
            || args.taskset.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        write(
            path,
            "Gantt chart",
            &gantt::svg(&set, &clock, &outcome, &title),
        )?;
    }
    if let Some(path) = &args.golden_c {
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
        let name = golden_c::identifier(stem.as_deref().unwrap_or("golden"));
        let source = args.taskset.display().to_string();
        write(
            path,
            "golden C header",
            &golden_c::header(&source, &name, &set, &clock, &outcome),
        )?;
    }
    let summary = summary::summarise(&set, &clock, &outcome);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        print!("{}", summary::text(&summary));
    }
    Ok(())
}
