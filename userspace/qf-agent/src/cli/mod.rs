//! The `qf` subcommands this crate owns: each has its clap `Args` and a `run()` here, so the `qf`
//! binary only dispatches.

pub mod evaluate;
pub mod profile;
pub mod replay;
pub mod report;
pub mod resident;
pub mod run;
pub mod status;

use crate::contract::ContractConfig;
use crate::load::Load;
use crate::rt::CallerPolicy;

/// The load conditions and caller policies a measurement runs under (the paper's Section VI-B),
/// as command-line options.
#[derive(Debug, Clone, clap::Args)]
pub struct ConditionArgs {
    /// Loads, comma-separated: idle, `cpu[:N]` (N SCHED_OTHER spinners, default 8), `rt[:M]`
    /// (M SCHED_FIFO 80 workers at 50% duty in 10 ms slices, default 4).
    #[arg(long, value_delimiter = ',', default_value = "idle", value_parser = Load::parse)]
    pub loads: Vec<Load>,
    /// Caller policies of the measuring thread, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "ordinary")]
    pub callers: Vec<CallerPolicy>,
}

/// Contract parameters as command-line options (defaults are the paper's).
#[derive(Debug, Clone, clap::Args)]
pub struct ContractArgs {
    /// k: consecutive violating windows before analysis (Eq. 7).
    #[arg(long, default_value_t = 3)]
    pub hysteresis: usize,
    /// P: probation windows pooled before commit or rollback (Eq. 8).
    #[arg(long, default_value_t = 6)]
    pub probation: usize,
    /// n: chain observations per window (Eq. 3).
    #[arg(long, default_value_t = 20)]
    pub window: usize,
    /// ε: tolerated miss rate per window.
    #[arg(long, default_value_t = 0.01)]
    pub tolerance: f64,
    /// Windows after a commit or rollback during which no switch is admitted.
    #[arg(long, default_value_t = 6)]
    pub cooldown: usize,
    /// h: MCU utilization kept free (Eq. 5).
    #[arg(long, default_value_t = 0.2)]
    pub headroom: f64,
    /// E_min: profile samples needed before a p95 counts as evidence.
    #[arg(long, default_value_t = 200)]
    pub min_samples: usize,
}

impl ContractArgs {
    pub fn config(&self) -> anyhow::Result<ContractConfig> {
        let config = ContractConfig {
            window: self.window,
            tolerance: self.tolerance,
            hysteresis: self.hysteresis,
            probation: self.probation,
            cooldown_windows: self.cooldown,
            headroom: self.headroom,
            min_samples: self.min_samples,
        };
        config.validate()?;
        Ok(config)
    }
}
