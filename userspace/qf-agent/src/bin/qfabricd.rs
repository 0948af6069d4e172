//! `qfabricd`: the QFabric agent daemon (see `qf_agent::daemon` for the configuration).
#![forbid(unsafe_code)]

use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;

/// Run a declared chain live under the guarded recovery controller.
#[derive(Debug, Parser)]
#[command(name = "qfabricd", version)]
struct Args {
    /// Configuration file (TOML).
    #[arg(long, default_value = "/etc/qfabric/qfabricd.toml")]
    config: PathBuf,
    /// Stop after this many chain observations (default: run until SIGTERM).
    #[arg(long)]
    observations: Option<u64>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let run = || -> anyhow::Result<()> {
        // Block the stop signals before any thread exists, so only the watcher receives them.
        let stop = qf_agent::daemon::stop_on_signals()?;
        let config = qf_agent::daemon::DaemonConfig::load(&args.config)?;
        let mut daemon = qf_agent::daemon::Daemon::new(config)?;
        daemon.run(&stop, args.observations)
    };
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("qfabricd: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
