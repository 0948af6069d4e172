//! `qf resident`: resident chains on the MCU, from Linux. `install|start|stop|remove|status|list`
//! send the control frames of `docs/resident-chains.md` through the MCU endpoint the shared
//! flags name ([`McuArgs`]); `observe` reads a running chain's results per load × caller (see
//! [`qf_evidence::resident`]); `template` prints the request a chain runs.

use crate::cli::{ConditionArgs, McuArgs};
use anyhow::{bail, Context, Result};
use qf_abi::chain::{ChainInstall, ChainList, ChainState, ChainStatus};
use qf_evidence::resident::{print_summaries, ChainRequest, ObserveSpec};
use qf_execution::chains::{refusal, state_name, ChainControl, ChainReport, Timing};
use qf_execution::domain::McuEndpoint;
use qf_execution::shown::shown;
use qf_execution::workload::{request_from_json, task_by_name};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// Resident chains: installed, started, stopped, removed and inspected on the MCU; their results
/// observed from Linux.
#[derive(Debug, Clone, clap::Args)]
pub struct ResidentArgs {
    #[command(subcommand)]
    pub command: ResidentCommand,
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum ResidentCommand {
    /// Install a chain (stopped) and print its id: the MCU admits it by its CBS bandwidth test
    /// or refuses it, naming the reason.
    Install(InstallArgs),
    /// Start an installed chain: its first job at once (or after its start delay), then one
    /// per period.
    Start(ChainIdArgs),
    /// Stop a running chain (it keeps its reservation and counters); prints the state the MCU
    /// reports after it, and says so when the chain was not running.
    Stop(ChainIdArgs),
    /// Remove a chain (stopped first if it runs), giving its reservation back.
    Remove(ChainIdArgs),
    /// One chain's configuration and counters, or every installed chain's.
    Status(StatusArgs),
    /// The installed chains and the MCU's reserved bandwidth.
    List(ListArgs),
    /// Print the chain's template request frame as hex (what `install` sends the MCU).
    Template(ChainArgs),
    /// Read a running chain's results (those tagged with its id) per load × caller: delay over
    /// the fastest delivery, lost results, outputs checked against the reference. Writes
    /// OUT/resident/. A chain the MCU does not have is refused at once. Each result is awaited
    /// at most three periods, and at least 5 s, from the chain's previous result (other chains'
    /// results do not restart the wait); when the wait runs out or the MCU goes away, what was
    /// received is written and qf exits non-zero.
    Observe(ObserveArgs),
}

/// Which request a chain runs, and under which id.
#[derive(Debug, Clone, clap::Args)]
pub struct ChainArgs {
    /// Declared task.
    #[arg(long, default_value = "crc32")]
    pub task: String,
    /// The request as JSON (the task's request fields, e.g. '{"a": 1, "b": 2}').
    #[arg(long, value_name = "JSON", conflicts_with = "seed")]
    pub request: Option<String>,
    /// Seed of random request inputs, when no --request is given.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Chain id (1..): results carry it as their contract id, invocation ids start at
    /// ID << 32. `install` without it takes the smallest id not installed; elsewhere 1.
    #[arg(long = "chain", alias = "contract", value_name = "ID",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub chain: Option<u32>,
}

impl ChainArgs {
    fn request(&self, chain: u32) -> Result<ChainRequest> {
        let task = task_by_name(&self.task).context("--task")?;
        let mut request = ChainRequest::seeded(task, self.seed.unwrap_or(1), chain);
        if let Some(json) = &self.request {
            request.request = request_from_json(task, json)
                .with_context(|| format!("--request '{}'", shown(json)))?;
        }
        Ok(request)
    }
}

/// `install`'s timing and where the MCU is.
#[derive(Debug, Clone, clap::Args)]
pub struct InstallArgs {
    #[command(flatten)]
    pub chain: ChainArgs,
    /// The request frame each job runs, as hex, instead of one built from --task and
    /// --request or --seed (e.g. `qf-board-guest chain-template`'s); its invocation id is the
    /// first job's.
    #[arg(long, value_name = "HEX", conflicts_with_all = ["task", "seed", "request"])]
    pub template: Option<String>,
    /// Release period, µs (the MCU accepts 100 µs ..= 1 h).
    #[arg(long, value_name = "P")]
    pub period_us: u64,
    /// Relative deadline of each job, µs (budget ..= period; default: the period).
    #[arg(long, value_name = "D")]
    pub deadline_us: Option<u64>,
    /// CBS budget per period, µs (at most the period; default: no server, no reservation).
    #[arg(long, value_name = "Q")]
    pub budget_us: Option<u64>,
    /// First release this long after `start`, µs (at most the period).
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub start_delay_us: u64,
    /// Start the chain right after installing it (a start the MCU refuses removes it again).
    #[arg(long)]
    pub start: bool,
    #[command(flatten)]
    pub mcu: McuArgs,
}

/// A chain id and where the MCU is.
#[derive(Debug, Clone, clap::Args)]
pub struct ChainIdArgs {
    /// The chain's id (as `install` printed it). Put it before a bare `--mcu-dev`.
    #[arg(value_name = "ID")]
    pub id: u32,
    #[command(flatten)]
    pub mcu: McuArgs,
}

#[derive(Debug, Clone, clap::Args)]
pub struct StatusArgs {
    /// The chain's id; without it, every installed chain. Put it before a bare `--mcu-dev`.
    #[arg(value_name = "ID")]
    pub id: Option<u32>,
    /// JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub mcu: McuArgs,
}

#[derive(Debug, Clone, clap::Args)]
pub struct ListArgs {
    /// JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub mcu: McuArgs,
}

#[derive(Debug, Clone, clap::Args)]
pub struct ObserveArgs {
    #[command(flatten)]
    pub chain: ChainArgs,
    /// The chain's template request as hex, when the MCU runs a chain of its own (e.g. the
    /// Zephyr executor sample's, printed in its boot log) instead of one `install` put there.
    #[arg(long, value_name = "HEX", conflicts_with_all = ["task", "seed", "request"])]
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
    /// Where results are read (default: Linux's rpmsg_char).
    #[command(flatten)]
    pub mcu: McuArgs,
}

impl ObserveArgs {
    /// Where the results are read: the endpoint the flags name, else rpmsg_char.
    pub fn endpoint(&self) -> Result<McuEndpoint> {
        Ok(self.mcu.endpoint()?.unwrap_or(McuEndpoint::Rpmsg))
    }
}

/// How long a control request may take.
const CONTROL_TIMEOUT: Duration = Duration::from_secs(5);

/// Control through the endpoint `mcu` names (one is required).
fn control(mcu: &McuArgs, command: &str) -> Result<ChainControl> {
    let endpoint = mcu.endpoint()?.with_context(|| {
        format!("qf resident {command} needs the MCU endpoint: --mcu-dev [PATH], --mcu-socket PATH, --mcu-rpmsg or --mcu-serial DEVICE")
    })?;
    Ok(ChainControl::new(endpoint.open(CONTROL_TIMEOUT)?))
}

/// A `--template` argument: its bytes and the chain request they are.
fn template(text: &str) -> Result<(Vec<u8>, ChainRequest)> {
    let bytes = hex::decode(text.trim())
        .with_context(|| format!("--template '{}': not hex", shown(text)))?;
    let chain = ChainRequest::from_template(&bytes)
        .with_context(|| format!("--template '{}'", shown(text)))?;
    Ok((bytes, chain))
}

/// Refuses at once to observe chain `id` when the MCU at `endpoint` answers that it has no
/// such chain (an MCU that knows no control frames is not asked again).
fn check_installed(endpoint: &McuEndpoint, id: u32) -> Result<()> {
    let mut mcu = ChainControl::new(endpoint.open(CONTROL_TIMEOUT)?);
    match mcu.status(id) {
        Ok(_) => Ok(()),
        Err(e) if refusal(&e) == Some(qf_abi::Status::NotInstalled) => bail!(
            "chain {id} is not installed on the MCU (`qf resident list` shows the installed \
             chains): nothing to observe"
        ),
        Err(e) if refusal(&e) == Some(qf_abi::Status::UnknownTask) => Ok(()),
        Err(e) => Err(e.context(format!("asking the MCU for chain {id}"))),
    }
}

/// After `install`: starts chain `id` when asked and prints its id; if either fails, the chain
/// is removed again, so a failed command leaves nothing installed.
fn start_and_print(
    mcu: &mut ChainControl,
    id: u32,
    start: bool,
    out: &mut impl Write,
) -> Result<()> {
    let mut finish = || -> Result<()> {
        if start {
            mcu.start(id)?;
        }
        writeln!(out, "{id}").context("printing the chain id")?;
        out.flush().context("printing the chain id")?;
        Ok(())
    };
    let Err(error) = finish() else {
        return Ok(());
    };
    Err(match mcu.remove(id) {
        Ok(()) => error.context(format!("chain {id} was installed and is removed again")),
        Err(removal) => error.context(format!(
            "chain {id} was installed and could not be removed again ({removal:#}); \
             `qf resident remove {id}` removes it"
        )),
    })
}

/// What `stop` prints: the state after it, and whether there was anything to stop.
fn stop_report(id: u32, before: Option<u8>, after: u8) -> String {
    let state = state_name(after);
    match before.and_then(ChainState::from_code) {
        Some(ChainState::Running) | None => format!("chain {id}: {state}"),
        Some(ChainState::Installed) => {
            format!("chain {id}: {state} (never started: nothing to stop)")
        }
        Some(_) => format!("chain {id}: {state} (it was not running: nothing to stop)"),
    }
}

impl InstallArgs {
    /// The install frame's payload for chain `chain_id`, its fields checked ([`Timing`]).
    pub fn install(&self, chain_id: u32) -> Result<ChainInstall> {
        let timing = Timing {
            period_us: self.period_us,
            deadline_us: self.deadline_us,
            budget_us: self.budget_us,
            start_delay_us: Some(self.start_delay_us),
        };
        // The timing first: its errors name a flag whatever the template.
        timing.install(chain_id, &[0; 36], FLAGS)?;
        let template = match &self.template {
            Some(text) => template(text)?.0,
            None => self.chain.request(chain_id)?.template()?,
        };
        timing.install(chain_id, &template, FLAGS)
    }
}

/// How `install` spells the timing fields.
const FLAGS: [&str; 4] = [
    "--period-us",
    "--deadline-us",
    "--budget-us",
    "--start-delay-us",
];

impl ResidentArgs {
    pub fn run(&self) -> Result<()> {
        let out = &mut std::io::stdout().lock();
        match &self.command {
            ResidentCommand::Install(args) => {
                // Checked before anything reaches the MCU (the id only changes the template).
                args.install(1)?;
                let mut mcu = control(&args.mcu, "install")?;
                let id = match args.chain.chain {
                    Some(id) => id,
                    None => mcu.free_id()?,
                };
                let id = mcu.install(&args.install(id)?)?;
                start_and_print(&mut mcu, id, args.start, out)?;
            }
            ResidentCommand::Start(args) => {
                control(&args.mcu, "start")?.start(args.id)?;
                writeln!(out, "chain {}: running", args.id)?;
            }
            ResidentCommand::Stop(args) => {
                let mut mcu = control(&args.mcu, "stop")?;
                // The state before, to say whether there was anything to stop (a refusal here
                // is the stop's to report).
                let before = mcu.status(args.id).ok().map(|s| s.state);
                mcu.stop(args.id)?;
                let after = mcu.status(args.id)?.state;
                writeln!(out, "{}", stop_report(args.id, before, after))?;
            }
            ResidentCommand::Remove(args) => {
                control(&args.mcu, "remove")?.remove(args.id)?;
                writeln!(out, "chain {}: removed", args.id)?;
            }
            ResidentCommand::Status(args) => {
                let mut mcu = control(&args.mcu, "status")?;
                let mut statuses = match args.id {
                    Some(id) => vec![mcu.status(id)?],
                    None => mcu.statuses()?,
                };
                statuses.sort_by_key(|s| s.chain_id);
                let reports: Vec<ChainReport> =
                    statuses.into_iter().map(ChainReport::new).collect();
                match (args.json, args.id) {
                    (true, Some(_)) => {
                        writeln!(out, "{}", serde_json::to_string_pretty(&reports[0].json())?)?
                    }
                    (true, None) => {
                        let all: Vec<_> = reports.iter().map(ChainReport::json).collect();
                        writeln!(out, "{}", serde_json::to_string_pretty(&all)?)?
                    }
                    (false, _) => print_statuses(out, &reports)?,
                }
            }
            ResidentCommand::List(args) => {
                let list = control(&args.mcu, "list")?.list()?;
                if args.json {
                    writeln!(
                        out,
                        "{}",
                        serde_json::to_string_pretty(&ListReport::new(&list))?
                    )?;
                } else {
                    print_list(out, &list)?;
                }
            }
            ResidentCommand::Template(args) => {
                let request = args.request(args.chain.unwrap_or(1))?;
                writeln!(out, "{}", hex::encode(request.template()?))?;
            }
            ResidentCommand::Observe(args) => {
                if args.period_us == 0 {
                    bail!("--period-us 0: the chain's period must be positive");
                }
                let (chain, chain_id) = match &args.template {
                    Some(text) => {
                        let (bytes, chain) = template(text)?;
                        // A chain of the MCU's own: its results carry the id given, else the
                        // template's contract id (0: results are not told apart by id).
                        let contract =
                            u32::from_be_bytes([bytes[24], bytes[25], bytes[26], bytes[27]]);
                        (
                            chain,
                            args.chain.chain.or((contract != 0).then_some(contract)),
                        )
                    }
                    None => {
                        let id = args.chain.chain.unwrap_or(1);
                        (args.chain.request(id)?, Some(id))
                    }
                };
                let endpoint = args.endpoint()?;
                // A chain install put there (no --template) must be on the MCU.
                if let (None, Some(id)) = (&args.template, chain_id) {
                    check_installed(&endpoint, id)?;
                }
                let spec = ObserveSpec {
                    chain,
                    chain_id,
                    endpoint,
                    period: Duration::from_micros(args.period_us),
                    loads: args.conditions.loads.clone(),
                    callers: args.conditions.callers.clone(),
                    warmup: args.warmup,
                    samples: args.samples,
                    out: args.out.clone(),
                };
                let summaries = spec.run()?;
                print_summaries(out, &summaries)?;
            }
        }
        Ok(())
    }
}

/// `qf resident list --json`.
#[derive(Debug, Clone, serde::Serialize)]
struct ListReport {
    chains: Vec<ListEntry>,
    reserved_ppm: u32,
    bound_ppm: u32,
}

#[derive(Debug, Clone, serde::Serialize)]
struct ListEntry {
    chain_id: u32,
    state: String,
}

impl ListReport {
    fn new(list: &ChainList) -> ListReport {
        let count = usize::from(list.count).min(list.chains.len());
        let mut entries = list.chains[..count].to_vec();
        entries.sort_by_key(|e| e.chain_id);
        ListReport {
            chains: entries
                .iter()
                .map(|e| ListEntry {
                    chain_id: e.chain_id,
                    state: state_name(e.state),
                })
                .collect(),
            reserved_ppm: list.reserved_ppm,
            bound_ppm: list.bound_ppm,
        }
    }
}

fn print_list(out: &mut impl Write, list: &ChainList) -> std::io::Result<()> {
    let report = ListReport::new(list);
    writeln!(out, "{:>8} {:<9}", "chain", "state")?;
    for entry in &report.chains {
        writeln!(out, "{:>8} {:<9}", entry.chain_id, entry.state)?;
    }
    writeln!(
        out,
        "reserved {} ppm of {} ppm",
        report.reserved_ppm, report.bound_ppm
    )
}

fn print_statuses(out: &mut impl Write, reports: &[ChainReport]) -> std::io::Result<()> {
    writeln!(
        out,
        "{:>8} {:<9} {:<8} {:>10} {:>10} {:>10} {:>9} {:>10} {:>10} {:>9} {:>8} {:>10} {:>8} {:>13}",
        "chain", "state", "task", "period_us", "deadline", "budget_us", "reserved", "releases",
        "results", "rejected", "overruns", "undelivered", "misses", "lateness_max"
    )?;
    for r in reports {
        let s: &ChainStatus = &r.status;
        writeln!(
            out,
            "{:>8} {:<9} {:<8} {:>10} {:>10} {:>10} {:>9} {:>10} {:>10} {:>9} {:>8} {:>10} {:>8} {:>13}",
            r.chain_id, r.state, r.task, s.period_us, s.deadline_us, s.budget_us,
            format!("{}ppm", s.reserved_ppm), s.releases, s.results, s.rejected, s.overruns,
            s.not_delivered, s.deadline_misses, format!("{}us", s.lateness_max_us)
        )?;
    }
    Ok(())
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

    fn parse(args: &[&str]) -> Result<ResidentCommand, String> {
        Qf::try_parse_from(std::iter::once("qf").chain(args.iter().copied()))
            .map(|q| q.resident.command)
            .map_err(|e| e.to_string())
    }

    fn observe_endpoint(extra: &[&str]) -> McuEndpoint {
        let args = ["observe", "--out", "o", "--period-us", "10000"];
        match parse(&[&args[..], extra].concat()).unwrap() {
            ResidentCommand::Observe(observe) => observe.endpoint().unwrap(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn results_come_from_rpmsg_char_unless_an_endpoint_is_named() {
        assert_eq!(observe_endpoint(&[]), McuEndpoint::Rpmsg);
        assert_eq!(observe_endpoint(&["--mcu-dev"]), McuEndpoint::Kernel(None));
        assert_eq!(
            observe_endpoint(&["--mcu-dev", "/dev/qfabric1"]),
            McuEndpoint::Kernel(Some(PathBuf::from("/dev/qfabric1")))
        );
        assert_eq!(
            observe_endpoint(&["--mcu-socket", "m.sock"]),
            McuEndpoint::Socket(PathBuf::from("m.sock"))
        );
    }

    #[test]
    fn every_subcommand_takes_the_shared_endpoint_flags() {
        for args in [
            &["start", "3", "--mcu-dev"][..],
            &["stop", "3", "--mcu-socket", "s"],
            &["remove", "3", "--mcu-dev=/dev/qfabric1"],
            &["status", "--mcu-socket", "s", "--json"],
            &["status", "3", "--mcu-dev"],
            &["list", "--mcu-rpmsg"],
            &["install", "--period-us", "1000", "--mcu-dev"],
        ] {
            parse(args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        }
        let e = parse(&["start", "3", "--mcu-dev", "--mcu-socket", "s"]).unwrap_err();
        assert!(e.contains("--mcu-socket") && e.contains("--mcu-dev"), "{e}");
        let e = parse(&["start", "x", "--mcu-dev"]).unwrap_err();
        assert!(e.contains("'x'"), "{e}");
        let e = parse(&["install", "--period-us", "1000", "--chain", "0"]).unwrap_err();
        assert!(e.contains("--chain") && e.contains('0'), "{e}");
    }

    fn install(args: &[&str]) -> Result<ChainInstall> {
        match parse(&[&["install"][..], args].concat()).unwrap() {
            ResidentCommand::Install(install) => install.install(4),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn install_errors_name_the_flag_and_value() {
        let ok = install(&[
            "--period-us",
            "10000",
            "--budget-us",
            "2000",
            "--task",
            "add",
            "--request",
            r#"{"a": 40, "b": 2}"#,
        ])
        .unwrap();
        assert_eq!(
            (ok.chain_id, ok.period_us, ok.budget_us, ok.deadline_us),
            (4, 10_000, 2000, 0)
        );
        assert_eq!(ok.task_id, qf_tasks::Task::Add.id());
        let template = ChainRequest::from_template(ok.template().unwrap()).unwrap();
        assert_eq!(template.first_invocation, 4 << 32);
        for (args, named) in [
            (&["--period-us", "50"][..], "--period-us 50"),
            (&["--period-us", "99999999999"], "--period-us 99999999999"),
            (
                &["--period-us", "1000", "--budget-us", "2000"],
                "--budget-us 2000",
            ),
            (
                &[
                    "--period-us",
                    "1000",
                    "--budget-us",
                    "200",
                    "--deadline-us",
                    "100",
                ],
                "--deadline-us 100",
            ),
            (
                &["--period-us", "1000", "--deadline-us", "2000"],
                "--deadline-us 2000",
            ),
            (
                &["--period-us", "1000", "--start-delay-us", "2000"],
                "--start-delay-us 2000",
            ),
            (&["--period-us", "1000", "--task", "nope"], "nope"),
            (
                &[
                    "--period-us",
                    "1000",
                    "--task",
                    "add",
                    "--request",
                    "{\"a\": 1}",
                ],
                "--request '{\"a\": 1}'",
            ),
            (
                &["--period-us", "1000", "--template", "zz"],
                "--template 'zz'",
            ),
            (
                &["--period-us", "1000", "--template", "00"],
                "--template '00'",
            ),
        ] {
            let error = format!("{:#}", install(args).unwrap_err());
            assert!(error.contains(named), "{args:?}: {error}");
        }
    }
}
