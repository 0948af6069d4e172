//! `qf`: the qfabric command line. A thin dispatcher — each subcommand's arguments (a clap
//! `Args` struct) and its `run` live in the library crate that implements it; add a variant
//! here and one match arm, nothing more.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "qf",
    version,
    about = "qfabric: real-time plumbing for Linux + MCU boards"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Simulate a task set under periodic EDF + per-thread CBS (qf-sched) and write the
    /// schedule, event trace, Gantt chart and summary.
    Sim(qf_sim::cli::SimArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Sim(args) => qf_sim::cli::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("qf: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
