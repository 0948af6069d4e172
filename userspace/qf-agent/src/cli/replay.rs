//! `qf replay`: ordered trace replay of one chain under one policy.

use super::ContractArgs;
use anyhow::Result;
use qf_evidence::chain::Chain;
use qf_evidence::replay::{replay, Policy, ReplayInputs, ReplayResult};
use std::io::Write;
use std::path::PathBuf;

/// Replay measured traces through a chain under a placement policy.
#[derive(Debug, Clone, clap::Args)]
pub struct ReplayArgs {
    /// Chain file (TOML, tasks in chain order).
    #[arg(long)]
    pub chain: PathBuf,
    /// Directory of `TASK.DOMAIN.csv` traces to replay.
    #[arg(long)]
    pub traces: PathBuf,
    /// Placement policy.
    #[arg(long, value_enum)]
    pub policy: Policy,
    /// Chain observations to replay (1 to 1000000).
    #[arg(long, default_value_t = 500, value_parser = super::count_in(super::bounds::OBSERVATIONS))]
    pub observations: usize,
    /// Directory of profile traces for the p95 predictions (default: the replayed traces).
    #[arg(long)]
    pub profile: Option<PathBuf>,
    /// Idle, ordinary-caller traces for the deadline rule (Eq. 4) and the `static` policy.
    #[arg(long)]
    pub idle_traces: Option<PathBuf>,
    #[command(flatten)]
    pub contract: ContractArgs,
    /// Append every decision to this hash-chained journal (verified first).
    #[arg(long)]
    pub journal: Option<PathBuf>,
    /// Print one JSON object instead of a summary.
    #[arg(long)]
    pub json: bool,
}

impl ReplayArgs {
    pub fn run(&self) -> Result<()> {
        let result = self.execute()?;
        if let Some(path) = &self.journal {
            let mut journal =
                qf_evidence::journal::Journal::open(path, &qf_evidence::journal::new_run_id())?;
            for decision in &result.decisions {
                journal.append(&serde_json::json!({
                    "event": "decision",
                    "source": "replay",
                    "policy": result.policy,
                    "chain": self.chain,
                    "traces": self.traces,
                    "decision": decision,
                }))?;
            }
        }
        print_result(&result, self.json, &mut std::io::stdout().lock())?;
        Ok(())
    }

    pub fn execute(&self) -> Result<ReplayResult> {
        let config = self.contract.config()?;
        let chain = Chain::load(&self.chain)?;
        let inputs = ReplayInputs::load(
            chain,
            Some(&self.traces),
            self.profile.as_deref(),
            self.idle_traces.as_deref(),
        )?;
        replay(&inputs, self.policy, config, self.observations)
    }
}

/// Prints a replay's result (JSON or the summary); a closed stdout is an error, not a panic.
pub fn print_result(result: &ReplayResult, json: bool, out: &mut impl Write) -> Result<()> {
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(result)?)?;
    } else {
        write!(out, "{}", summary(result))?;
    }
    out.flush()?;
    Ok(())
}

/// Human-readable summary of a replay.
pub fn summary(result: &ReplayResult) -> String {
    let mut text = format!(
        "policy {}: {} observations, D_G {:.0} us, p95 {:.1} us, miss rate {:.2}%, switches {}, commits {}, rollbacks {}{}\n",
        result.policy.as_str(),
        result.observations,
        result.graph_deadline_us,
        result.p95_us,
        100.0 * result.miss_rate,
        result.switches,
        result.commits,
        result.rollbacks,
        if result.open_at_end { ", probation open at end" } else { "" },
    );
    for decision in &result.decisions {
        text.push_str(&format!("  {}\n", decision.line()));
    }
    text
}
