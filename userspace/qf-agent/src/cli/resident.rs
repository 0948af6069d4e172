//! `qf resident template|observe`: the request a resident chain is started with on the MCU, and
//! its results observed from Linux per load × caller (see [`qf_evidence::resident`]).

use crate::cli::ConditionArgs;
use anyhow::{bail, Context, Result};
use qf_evidence::resident::{print_summaries, ChainRequest, ObserveSpec};
use qf_execution::domain::McuEndpoint;
use qf_execution::workload::task_by_name;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// A resident chain's request, and its results observed through Linux's rpmsg_char or the
/// kernel dispatch device.
#[derive(Debug, Clone, clap::Args)]
pub struct ResidentArgs {
    #[command(subcommand)]
    pub command: ResidentCommand,
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum ResidentCommand {
    /// Print the chain's template request frame as hex (what the MCU's chain is started with,
    /// e.g. `qf-mcu-emu ctl ... chain start PERIOD_US HEX [BUDGET_US]`).
    Template(ChainArgs),
    /// Read the running chain's results per load × caller: delay over the fastest delivery,
    /// lost results, outputs checked against the reference. Writes OUT/resident/.
    Observe(ObserveArgs),
}

/// Which request the chain runs.
#[derive(Debug, Clone, clap::Args)]
pub struct ChainArgs {
    /// Declared task.
    #[arg(long, default_value = "crc32")]
    pub task: String,
    /// Seed of the request inputs.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Contract id: invocation ids start at CONTRACT << 32.
    #[arg(long, default_value_t = 1)]
    pub contract: u32,
}

impl ChainArgs {
    fn chain(&self) -> Result<ChainRequest> {
        Ok(ChainRequest::seeded(
            task_by_name(&self.task)?,
            self.seed,
            self.contract,
        ))
    }
}

#[derive(Debug, Clone, clap::Args)]
pub struct ObserveArgs {
    #[command(flatten)]
    pub chain: ChainArgs,
    /// The chain's template request as hex, when the MCU was started with its own (e.g. the
    /// Zephyr executor sample's, printed in its boot log) instead of `qf resident template`'s.
    #[arg(long, value_name = "HEX", conflicts_with_all = ["task", "seed", "contract"])]
    pub template: Option<String>,
    /// Campaign directory (writes resident/ under it).
    #[arg(long)]
    pub out: PathBuf,
    /// The chain's period on the MCU, in microseconds.
    #[arg(long)]
    pub period_us: u64,
    #[command(flatten)]
    pub conditions: ConditionArgs,
    /// Results per cell read first and not kept (0 to 1000000).
    #[arg(long, default_value_t = 20, value_parser = super::count_in(super::bounds::WARMUP))]
    pub warmup: usize,
    /// Results kept per cell (1 to 1000000).
    #[arg(long, default_value_t = 500, value_parser = super::count_in(super::bounds::SAMPLES))]
    pub samples: usize,
    /// Read the results from the kernel dispatch device of the qfabric_rpmsg module instead of
    /// an rpmsg_char endpoint; without PATH the first /dev/qfabricN.
    #[arg(long, value_name = "PATH", num_args = 0..=1)]
    pub mcu_dev: Option<Option<PathBuf>>,
}

impl ObserveArgs {
    /// Where the results are read: the device `--mcu-dev` names, else rpmsg_char.
    pub fn endpoint(&self) -> McuEndpoint {
        match &self.mcu_dev {
            Some(path) => McuEndpoint::Kernel(path.clone()),
            None => McuEndpoint::Rpmsg,
        }
    }
}

impl ResidentArgs {
    pub fn run(&self) -> Result<()> {
        match &self.command {
            ResidentCommand::Template(args) => {
                let template = hex::encode(args.chain()?.template()?);
                writeln!(std::io::stdout().lock(), "{template}")?;
                Ok(())
            }
            ResidentCommand::Observe(args) => {
                if args.period_us == 0 {
                    bail!("--period-us 0: the chain's period must be positive");
                }
                let chain = match &args.template {
                    Some(text) => {
                        let bytes = hex::decode(text.trim())
                            .with_context(|| format!("--template '{text}': not hex"))?;
                        ChainRequest::from_template(&bytes)
                            .with_context(|| format!("--template '{text}'"))?
                    }
                    None => args.chain.chain()?,
                };
                let spec = ObserveSpec {
                    chain,
                    endpoint: args.endpoint(),
                    period: Duration::from_micros(args.period_us),
                    loads: args.conditions.loads.clone(),
                    callers: args.conditions.callers.clone(),
                    warmup: args.warmup,
                    samples: args.samples,
                    out: args.out.clone(),
                };
                let summaries = spec.run()?;
                print_summaries(&mut std::io::stdout().lock(), &summaries)?;
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Qf {
        #[command(flatten)]
        resident: ResidentArgs,
    }

    fn observe_endpoint(extra: &[&str]) -> McuEndpoint {
        let args = ["qf", "observe", "--out", "o", "--period-us", "10000"];
        let parsed = Qf::try_parse_from(args.iter().chain(extra)).unwrap();
        match parsed.resident.command {
            ResidentCommand::Observe(observe) => observe.endpoint(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn results_come_from_rpmsg_char_unless_mcu_dev_names_the_kernel_device() {
        assert_eq!(observe_endpoint(&[]), McuEndpoint::Rpmsg);
        assert_eq!(observe_endpoint(&["--mcu-dev"]), McuEndpoint::Kernel(None));
        assert_eq!(
            observe_endpoint(&["--mcu-dev", "/dev/qfabric1"]),
            McuEndpoint::Kernel(Some(PathBuf::from("/dev/qfabric1")))
        );
    }
}
