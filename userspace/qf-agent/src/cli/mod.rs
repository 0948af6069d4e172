//! The `qf` subcommands this crate owns: each has its clap `Args` and a `run()` here, so the `qf`
//! binary only dispatches.

pub mod evaluate;
pub mod profile;
pub mod replay;
pub mod report;
pub mod resident;
pub mod run;
pub mod status;

use qf_decision::contract::ContractConfig;
use qf_execution::domain::McuEndpoint;
use qf_execution::load::Load;
use qf_execution::rt::CallerPolicy;
use std::path::PathBuf;

/// Bounds of the counts the commands take, by what each can mean (and what fits in memory:
/// every count below is allocated up front, 8 to 64 bytes per unit).
pub mod bounds {
    /// Samples per synthetic trace (a trace of a million calls is far beyond any table's need).
    pub const SYNTHETIC_ROWS: std::ops::RangeInclusive<u64> = 1..=1_000_000;
    /// Chain observations per replay or evaluation cell.
    pub const OBSERVATIONS: std::ops::RangeInclusive<u64> = 1..=1_000_000;
    /// Kept samples per measured cell (`qf profile`, `qf resident observe`).
    pub const SAMPLES: std::ops::RangeInclusive<u64> = 1..=1_000_000;
    /// Warm-up invocations (or results) per cell, not kept.
    pub const WARMUP: std::ops::RangeInclusive<u64> = 0..=1_000_000;
    /// Controller decisions timed for the decision-cost table.
    pub const DECISIONS: std::ops::RangeInclusive<u64> = 1..=1_000_000;
    use qf_evidence::stats;
    /// Bootstrap resamples, as `qf_evidence::stats::Bootstrap` takes them.
    pub const RESAMPLES: std::ops::RangeInclusive<u64> =
        *stats::RESAMPLES.start() as u64..=*stats::RESAMPLES.end() as u64;
    /// Bootstrap block length, likewise.
    pub const BLOCK: std::ops::RangeInclusive<u64> =
        *stats::BLOCK.start() as u64..=*stats::BLOCK.end() as u64;
}

/// A clap parser for a count of `usize` within `range` (the error names the flag, the value
/// and the range).
pub fn count_in(
    range: std::ops::RangeInclusive<u64>,
) -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::<usize>::new().range(range)
}

/// How the mcu domain is reached, as command-line options (at most one of the four).
#[derive(Debug, Clone, clap::Args)]
pub struct McuArgs {
    /// MCU endpoint on a Unix socket (e.g. `qf-mcu-emu --unix-socket PATH`).
    #[arg(long, value_name = "PATH", conflicts_with_all = ["mcu_rpmsg", "mcu_dev", "mcu_serial"])]
    pub mcu_socket: Option<PathBuf>,
    /// Reach the MCU through Linux's rpmsg_char (on the board).
    #[arg(long, conflicts_with_all = ["mcu_dev", "mcu_serial"])]
    pub mcu_rpmsg: bool,
    /// Reach the MCU through the kernel dispatch device of the qfabric_rpmsg module (on the
    /// board); without PATH the first /dev/qfabricN. Give PATH as `--mcu-dev=PATH` when a
    /// positional argument follows.
    #[arg(long, value_name = "PATH", num_args = 0..=1, conflicts_with = "mcu_serial")]
    pub mcu_dev: Option<Option<PathBuf>>,
    /// Reach the MCU on a serial line (a UART between two chips, as on the Arduino UNO Q with
    /// its router stopped; a pty from `qf-mcu-emu --serial-pty`), in raw mode at --baud.
    #[arg(long, value_name = "DEVICE")]
    pub mcu_serial: Option<PathBuf>,
    /// Baud rate of --mcu-serial.
    #[arg(long, value_name = "N", default_value_t = qf_execution::serial::DEFAULT_BAUD, requires = "mcu_serial")]
    pub baud: u32,
}

impl Default for McuArgs {
    /// No MCU endpoint (and the default baud rate, should a serial device be set later).
    fn default() -> Self {
        McuArgs {
            mcu_socket: None,
            mcu_rpmsg: false,
            mcu_dev: None,
            mcu_serial: None,
            baud: qf_execution::serial::DEFAULT_BAUD,
        }
    }
}

impl McuArgs {
    /// The endpoint the flags name, if any.
    pub fn endpoint(&self) -> anyhow::Result<Option<McuEndpoint>> {
        McuEndpoint::choose(
            self.mcu_socket.as_deref(),
            self.mcu_rpmsg,
            self.mcu_dev.as_ref().map(Option::as_deref),
            self.mcu_serial.as_deref().map(|device| (device, self.baud)),
            ["--mcu-socket", "--mcu-rpmsg", "--mcu-dev", "--mcu-serial"],
        )
    }
}

/// The load conditions and caller policies a measurement runs under (the paper's Section VI-B),
/// as command-line options.
#[derive(Debug, Clone, clap::Args)]
pub struct ConditionArgs {
    /// Loads, comma-separated: idle, `cpu[:N]` (N SCHED_OTHER spinners, default 8), `rt[:M]`
    /// (M SCHED_FIFO 80 workers at 50% duty in 10 ms slices, default 4); N and M at most 8 per
    /// CPU this process may run on.
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Flags {
        #[command(flatten)]
        mcu: McuArgs,
    }

    fn parse(args: &[&str]) -> Result<McuArgs, String> {
        Flags::try_parse_from(std::iter::once("qf").chain(args.iter().copied()))
            .map(|flags| flags.mcu)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn mcu_dev_takes_an_optional_path() {
        let endpoint = |args: &[&str]| parse(args).unwrap().endpoint().unwrap();
        assert_eq!(endpoint(&[]), None);
        assert_eq!(endpoint(&["--mcu-dev"]), Some(McuEndpoint::Kernel(None)));
        let dev = Some(McuEndpoint::Kernel(Some(PathBuf::from("/dev/qfabric1"))));
        assert_eq!(endpoint(&["--mcu-dev", "/dev/qfabric1"]), dev);
        assert_eq!(endpoint(&["--mcu-dev=/dev/qfabric1"]), dev);
        assert_eq!(endpoint(&["--mcu-rpmsg"]), Some(McuEndpoint::Rpmsg));
    }

    #[test]
    fn mcu_serial_takes_a_device_and_a_baud_rate() {
        let endpoint = |args: &[&str]| parse(args).unwrap().endpoint();
        let serial = |baud| {
            Some(McuEndpoint::Serial {
                device: PathBuf::from("/dev/ttyHS1"),
                baud,
            })
        };
        assert_eq!(
            endpoint(&["--mcu-serial", "/dev/ttyHS1"]).unwrap(),
            serial(115_200)
        );
        assert_eq!(
            endpoint(&["--mcu-serial", "/dev/ttyHS1", "--baud", "921600"]).unwrap(),
            serial(921_600)
        );
        let error = format!(
            "{:#}",
            endpoint(&["--mcu-serial", "t", "--baud", "1000"]).unwrap_err()
        );
        assert!(
            error.contains("--mcu-serial") && error.contains("1000"),
            "{error}"
        );
        // --baud alone names what it needs.
        let error = parse(&["--baud", "9600"]).unwrap_err();
        assert!(error.contains("--mcu-serial"), "{error}");
        let error = parse(&["--baud", "fast", "--mcu-serial", "t"]).unwrap_err();
        assert!(error.contains("fast"), "{error}");
    }

    #[test]
    fn two_mcu_flags_are_refused_naming_both() {
        for (args, first, second) in [
            (
                &["--mcu-socket", "s", "--mcu-dev"][..],
                "--mcu-socket",
                "--mcu-dev",
            ),
            (
                &["--mcu-dev", "--mcu-rpmsg"][..],
                "--mcu-dev",
                "--mcu-rpmsg",
            ),
            (
                &["--mcu-rpmsg", "--mcu-socket", "s"][..],
                "--mcu-rpmsg",
                "--mcu-socket",
            ),
            (
                &["--mcu-serial", "/dev/ttyS1", "--mcu-dev"][..],
                "--mcu-serial",
                "--mcu-dev",
            ),
            (
                &["--mcu-rpmsg", "--mcu-serial", "/dev/ttyS1"][..],
                "--mcu-rpmsg",
                "--mcu-serial",
            ),
        ] {
            let error = parse(args).unwrap_err();
            assert!(error.contains(first) && error.contains(second), "{error}");
        }
        // Built without clap (as a test or a caller might), the choice still refuses.
        let both = McuArgs {
            mcu_socket: Some(PathBuf::from("s")),
            mcu_rpmsg: false,
            mcu_dev: Some(None),
            mcu_serial: None,
            baud: qf_execution::serial::DEFAULT_BAUD,
        };
        let error = both.endpoint().unwrap_err().to_string();
        assert!(error.contains("--mcu-socket and --mcu-dev both"), "{error}");
    }
}
