//! `qf profile`: per task × domain × load × caller, raw observations and traces.

use crate::cli::{ConditionArgs, McuArgs};
use anyhow::Result;
use qf_decision::model::DomainId;
use qf_evidence::profile::{print_summaries, ProfileSpec};
use qf_execution::domain::executor_path;
use qf_execution::workload::task_by_name;
use std::path::PathBuf;

/// Profile tasks in domains under load conditions and caller policies.
#[derive(Debug, Clone, clap::Args)]
pub struct ProfileArgs {
    /// Campaign directory (writes profile/ and traces/ under it).
    #[arg(long)]
    pub out: PathBuf,
    /// Tasks, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "add,crc32,fir_x1,fir_x64,fir_x512"
    )]
    pub tasks: Vec<String>,
    /// Domains, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "linux")]
    pub domains: Vec<DomainId>,
    #[command(flatten)]
    pub conditions: ConditionArgs,
    /// Warm-up invocations per cell, excluded (0 to 1000000).
    #[arg(long, default_value_t = 100, value_parser = super::count_in(super::bounds::WARMUP))]
    pub warmup: usize,
    /// Kept samples per cell (1 to 1000000).
    #[arg(long, default_value_t = 2000, value_parser = super::count_in(super::bounds::SAMPLES))]
    pub samples: usize,
    /// Samples an estimate needs to count as valid evidence (1 to 1000000).
    #[arg(long, default_value_t = 200, value_parser = super::count_in(super::bounds::SAMPLES))]
    pub min_samples: usize,
    #[command(flatten)]
    pub mcu: McuArgs,
    /// Linux executor binary (default: qf-executor next to this program, or $QF_EXECUTOR).
    #[arg(long)]
    pub executor: Option<PathBuf>,
    /// Seed of the request inputs.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Hide the progress bar.
    #[arg(long)]
    pub quiet: bool,
}

impl ProfileArgs {
    pub fn spec(&self) -> Result<ProfileSpec> {
        Ok(ProfileSpec {
            tasks: self
                .tasks
                .iter()
                .map(|t| task_by_name(t))
                .collect::<Result<_>>()?,
            domains: self.domains.clone(),
            loads: self.conditions.loads.clone(),
            callers: self.conditions.callers.clone(),
            warmup: self.warmup,
            samples: self.samples,
            min_samples: self.min_samples,
            executor: executor_path(self.executor.as_deref())?,
            mcu: self.mcu.endpoint()?,
            out: self.out.clone(),
            seed: self.seed,
            progress: !self.quiet,
        })
    }

    pub fn run(&self) -> Result<()> {
        let summaries = self.spec()?.run()?;
        print_summaries(&mut std::io::stdout().lock(), &summaries)?;
        Ok(())
    }
}
