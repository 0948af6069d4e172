//! `qfabricd`: runs a declared chain live under the guarded recovery controller.
//!
//! Every period the chain is released once: each task is routed through the [`Router`] (so a
//! switch waits for in-flight work and no invocation crosses an epoch), invoked on its domain's
//! endpoint with the routing epoch in the frame header, and its output checked against the
//! independent reference. The chain observation feeds the [`Controller`]; every decision is
//! journaled (fsync'd) *before* the new placement is installed. A status socket answers
//! `status` with a JSON snapshot (placements, window miss rates, controller state, last
//! decisions); every exchange on it is bounded ([`crate::status_socket`]): a request of at most
//! 64 bytes, a reply of at most 1 MiB, 2 s per connection for the whole exchange, 32 connections
//! served at once by one `poll` loop (a new one beyond that closes the oldest), and `qf status`
//! waits 5 s for the whole exchange. SIGTERM or SIGINT finishes the chain observation in flight,
//! journals the shutdown and exits cleanly; one that arrives before the daemon serves (start-up
//! can wait on a file, a lock or an endpoint), or a second one while it stops, ends it at once,
//! by that signal.
//!
//! Ordinary life on a board, and what the daemon does about it:
//! * **Restarts.** Every run starts a newer epoch than any before it (`STATE_DIR/epoch`, see
//!   `qf_execution::session`) and uses invocation ids no other client uses, so the MCU's replay
//!   window never takes a new run for a replay. A DUPLICATE or STALE reply means the MCU did not
//!   run the invocation: the release is logged, journaled (`mcu_rejected`) and counted in
//!   `rejected_releases`, never scored; after STALE the next release carries a newer epoch.
//! * **The MCU goes away.** Every MCU endpoint (socket, `rpmsg_char`, `/dev/qfabricN`, serial
//!   line) reconnects by itself (`qf_execution::reconnect`: the next call at once, then 50 ms
//!   doubling to 2 s); meanwhile `qf status` shows the MCU down with the reason, the journal has
//!   `mcu_down` / `mcu_up` (and the reason in `start` when it is down from the start), and moves
//!   to the MCU fail destination admission.
//! * **A crash or a full disk mid-append.** The torn last record is cut off at the next start,
//!   saved to `JOURNAL.torn-SECONDS` and the cut journaled; a damaged record anywhere else still
//!   refuses to start (see `qf_evidence::journal`).
//! * **A second copy.** `STATE_DIR/qfabricd.lock` and `JOURNAL.lock` are exclusive `flock`s; a
//!   second daemon fails at once naming the first's pid. The kernel drops them with the process,
//!   however it dies.
//! * **Tampering.** `STATE_DIR/journal.anchor` holds the chain's head (also in `qf status`), so a
//!   deleted tail, an emptied file or a re-hashed edit stops the next start; with `journal_key`
//!   the chain is HMAC-SHA256 under a key only the daemon can read. To start afresh on purpose,
//!   move the journal *and* its anchor away. A missing anchor (removed, keyed journal or not)
//!   cannot vouch for anything: the daemon says so on standard error, in the journal
//!   (`anchor_missing`) and in `qf status` (a WARNING line with the records nothing checked),
//!   and writes it again.
//! * **A state or journal directory it cannot write.** The error names the lock file and the
//!   OS's reason (read-only file system, permission denied); "another qfabricd" only when
//!   another process holds the lock.
//!
//! `userspace/qf-agent/tests/faults.rs` exercises the first three with SIGKILLs during traffic;
//! `scripts/soak-agent` runs the daemon for 30 minutes under injected MCU faults.
//!
//! Configuration (TOML): a regular file of at most 1 MiB ([`CONFIG_MAX_BYTES`]); a FIFO, a
//! device or a larger file is refused by what it is, before anything is read.
//! ```toml
//! chain = "chain.toml"          # the chain file (see qf_evidence::chain)
//! profile = "profile/traces"    # TASK.DOMAIN.csv traces: p95 evidence (and Eq. 4 deadlines)
//! socket = "/run/qfabric/qfabricd.sock"
//! journal = "/var/lib/qfabric/decisions.jsonl"
//! # state_dir = "/var/lib/qfabric"    # default: the journal's directory: the lock, the
//! #                                     # epoch counter and the journal's anchor
//! # journal_key = "/etc/qfabric/journal.key"  # keyed journal (HMAC-SHA256), mode 0600
//! period_ms = 100
//! caller = "ordinary"           # or "fifo" (caller and executor at SCHED_FIFO 50)
//! # executor = "/usr/local/bin/qf-executor"
//! # mcu_socket = "/run/qfabric/mcu.sock"   # the MCU on a Unix socket (the emulator), or
//! # mcu_rpmsg = true                        # on the board, through Linux's rpmsg_char, or
//! # mcu_dev = "/dev/qfabric0"               # through the kernel dispatch device (qfabric_rpmsg), or
//! # mcu_serial = "/dev/ttyHS1"              # on a serial line (the UNO Q's UART, router stopped)
//! # mcu_baud = 115200                       # its baud rate (default 115200)
//! [workloads]                   # chain task name -> declared task (default: the same name)
//! stage1 = "fir_x64"
//! [contract]                    # any ContractConfig field; defaults are the paper's
//! hysteresis = 3
//! [[resident]]                  # MCU-resident chains kept installed (see crate::residents)
//! chain = 11
//! task = "crc32"
//! period_us = 10000
//! budget_us = 1000
//! ```

use crate::residents::{Keeper, ResidentConfig, ResidentHealth};
use crate::status_socket;
use anyhow::{Context, Result};
use nix::sys::signal::{SigSet, Signal};
use qf_abi::MAX_FRAME_LEN;
use qf_decision::contract::ContractConfig;
use qf_decision::controller::{Controller, Decision, Phase};
use qf_decision::model::DomainId;
use qf_decision::router::Router;
use qf_evidence::chain::Chain;
use qf_evidence::journal::{
    anchor_missing_warning, new_run_id, read_key, Journal, JournalError, JournalOptions, PidLock,
};
use qf_evidence::replay::{DecisionRecord, ReplayInputs};
use qf_execution::domain::{executor_path, Domain, LinuxExecutor, McuEndpoint};
use qf_execution::rt::{set_scheduling, CallerPolicy};
use qf_execution::session::{EpochFile, Session};
use qf_execution::workload::{encode_request, outcome_ok, random_request, task_by_name};
use qf_tasks::Task;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The daemon's configuration file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DaemonConfig {
    pub chain: PathBuf,
    pub profile: Option<PathBuf>,
    pub socket: PathBuf,
    pub journal: PathBuf,
    /// Where the daemon keeps its state (its lock, the epoch counter, the journal's anchor);
    /// default: the journal's directory.
    pub state_dir: Option<PathBuf>,
    /// Key of a keyed journal (HMAC-SHA256), readable only by the daemon.
    pub journal_key: Option<PathBuf>,
    #[serde(default = "default_period_ms")]
    pub period_ms: u64,
    #[serde(default = "default_caller")]
    pub caller: CallerPolicy,
    pub executor: Option<PathBuf>,
    pub mcu_socket: Option<PathBuf>,
    #[serde(default)]
    pub mcu_rpmsg: bool,
    pub mcu_dev: Option<PathBuf>,
    pub mcu_serial: Option<PathBuf>,
    pub mcu_baud: Option<u32>,
    #[serde(default)]
    pub workloads: BTreeMap<String, String>,
    #[serde(default)]
    pub contract: ContractConfig,
    /// MCU-resident chains the daemon installs and keeps installed ([`crate::residents`]).
    #[serde(default)]
    pub resident: Vec<ResidentConfig>,
}

fn default_period_ms() -> u64 {
    100
}
fn default_caller() -> CallerPolicy {
    CallerPolicy::Ordinary
}

impl DaemonConfig {
    /// The state directory: `state_dir`, else the journal's directory.
    pub fn state_dir(&self) -> PathBuf {
        self.state_dir.clone().unwrap_or_else(|| {
            self.journal
                .parent()
                .map_or_else(|| PathBuf::from("."), Path::to_owned)
        })
    }

    /// The MCU endpoint the configuration names, if any (naming two is an error).
    pub fn mcu_endpoint(&self) -> Result<Option<McuEndpoint>> {
        McuEndpoint::choose(
            self.mcu_socket.as_deref(),
            self.mcu_rpmsg,
            self.mcu_dev.as_deref().map(Some),
            self.mcu_serial.as_deref().map(|device| {
                (
                    device,
                    self.mcu_baud.unwrap_or(qf_execution::serial::DEFAULT_BAUD),
                )
            }),
            ["`mcu_socket`", "`mcu_rpmsg`", "`mcu_dev`", "`mcu_serial`"],
        )
    }

    /// Reads a configuration; relative paths are taken from the file's directory. Only a
    /// regular file of at most [`CONFIG_MAX_BYTES`] is read (see [`read_config`]).
    pub fn load(path: &Path) -> Result<DaemonConfig> {
        let text = read_config(path)?;
        let mut config: DaemonConfig =
            toml::from_str(&text).with_context(|| format!("configuration {}", path.display()))?;
        let base = path.parent().unwrap_or(Path::new("."));
        let resolve = |p: &mut PathBuf| {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        };
        resolve(&mut config.chain);
        resolve(&mut config.socket);
        resolve(&mut config.journal);
        config.profile.as_mut().map(resolve);
        config.state_dir.as_mut().map(resolve);
        config.journal_key.as_mut().map(resolve);
        config.executor.as_mut().map(resolve);
        config.mcu_socket.as_mut().map(resolve);
        config.mcu_dev.as_mut().map(resolve);
        config.mcu_serial.as_mut().map(resolve);
        if config.mcu_baud.is_some() && config.mcu_serial.is_none() {
            anyhow::bail!(
                "configuration {}: `mcu_baud` is the baud rate of `mcu_serial`, which is not given",
                path.display()
            );
        }
        config
            .mcu_endpoint()
            .with_context(|| format!("configuration {}", path.display()))?;
        if config.period_ms == 0 {
            anyhow::bail!(
                "configuration {}: period_ms = 0 would release the chain back to back; give the release period in ms (≥ 1)",
                path.display()
            );
        }
        config
            .contract
            .validate()
            .with_context(|| format!("configuration {} [contract]", path.display()))?;
        for resident in &config.resident {
            resident
                .install()
                .with_context(|| format!("configuration {}", path.display()))?;
        }
        Ok(config)
    }
}

/// Largest configuration file read, in bytes (1 MiB).
pub const CONFIG_MAX_BYTES: u64 = 1 << 20;

/// Reads a configuration file: only a regular file of at most [`CONFIG_MAX_BYTES`], refused by
/// kind or size before anything is read, opened without blocking
/// ([`qf_evidence::files::read_regular`]).
pub fn read_config(path: &Path) -> Result<String> {
    let name = path.display();
    let bytes = qf_evidence::files::read_regular(path, CONFIG_MAX_BYTES)
        .with_context(|| format!("configuration {name}"))?;
    String::from_utf8(bytes).with_context(|| format!("configuration {name}"))
}

/// What `qf status` receives.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Status {
    pub run_id: String,
    pub pid: u32,
    pub uptime_s: f64,
    pub observations: u64,
    pub epoch: u32,
    pub placement: BTreeMap<String, DomainId>,
    pub controller: Option<Phase>,
    pub graph_deadline_us: f64,
    pub window_index: u64,
    pub current_window_miss_rate: f64,
    /// Miss rates of the most recent complete windows, oldest first.
    pub recent_window_miss_rates: Vec<f64>,
    pub last_decisions: Vec<DecisionRecord>,
    pub mcu_available: bool,
    /// Why the MCU is unavailable, when it is.
    #[serde(default)]
    pub mcu_down_reason: Option<String>,
    /// Chain releases not scored because the MCU refused an invocation as DUPLICATE or STALE
    /// without running it (never counted as misses).
    #[serde(default)]
    pub rejected_releases: u64,
    /// The epoch the daemon's requests carry (its session base plus the routing epoch).
    #[serde(default)]
    pub wire_epoch: u32,
    pub journal: PathBuf,
    pub journal_records: u64,
    /// The hash of the journal's last record, also kept in the anchor outside the journal.
    #[serde(default)]
    pub journal_head: String,
    #[serde(default)]
    pub journal_anchor: PathBuf,
    /// Set when the anchor was missing (at start, or removed since) while the journal held this
    /// many records: those were not checked against it.
    #[serde(default)]
    pub journal_anchor_missing: Option<u64>,
    /// Whether the journal is keyed (HMAC-SHA256).
    #[serde(default)]
    pub journal_keyed: bool,
    /// The `[[resident]]` chains on the MCU.
    #[serde(default)]
    pub resident: Vec<ResidentHealth>,
}

const RECENT_WINDOWS: usize = 10;
const RECENT_DECISIONS: usize = 20;

/// Whether a [`Daemon::run`] loop is serving: until then a stop signal ends the process at once
/// (start-up may wait on a file, a lock or an endpoint), afterwards it asks the loop to stop.
static SERVING: AtomicBool = AtomicBool::new(false);

/// Blocks SIGTERM and SIGINT in this and every later thread and returns a flag a watcher thread
/// raises when one arrives. Call before spawning any thread. A signal that arrives before
/// [`Daemon::run`] serves, or a second one while it drains, ends the process by that signal.
pub fn stop_on_signals() -> Result<Arc<AtomicBool>> {
    let mut signals = SigSet::empty();
    signals.add(Signal::SIGTERM);
    signals.add(Signal::SIGINT);
    signals.thread_block().context("blocking SIGTERM/SIGINT")?;
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    std::thread::spawn(move || {
        while let Ok(signal) = signals.wait() {
            if SERVING.load(Ordering::SeqCst) && !flag.swap(true, Ordering::SeqCst) {
                continue;
            }
            let when = if SERVING.load(Ordering::SeqCst) {
                "a second time while stopping"
            } else {
                "before the daemon was serving"
            };
            eprintln!("qfabricd: {signal} {when}: exiting now");
            die_by(signal);
        }
    });
    Ok(stop)
}

/// Ends the process by `signal` (its default action), as if it had not been blocked; with the
/// signal ignored by whoever started us, by exit status 128 + its number.
fn die_by(signal: Signal) -> ! {
    let mut one = SigSet::empty();
    one.add(signal);
    let _ = one.thread_unblock();
    let _ = nix::sys::signal::raise(signal);
    std::process::exit(128 + signal as i32)
}

/// The status socket's answer to one request line.
fn answer(request: &str, status: &Mutex<Status>) -> String {
    match request {
        "status" => {
            let snapshot = status.lock().map(|s| s.clone()).unwrap_or_default();
            serde_json::to_string(&snapshot)
                .unwrap_or_else(|e| status_socket::error_reply(&e.to_string()))
        }
        other => status_socket::error_reply(&format!(
            "unknown command `{}` (expected `status`)",
            other.escape_debug()
        )),
    }
}

/// Asks a running daemon for its status, within [`status_socket::QUERY_TIMEOUT`].
pub fn query_status(socket: &Path) -> Result<Status> {
    query_status_within(socket, status_socket::QUERY_TIMEOUT)
}

/// Asks a running daemon for its status; the whole exchange ends within `timeout`, and a reply
/// over [`status_socket::REPLY_MAX`] bytes is refused unread.
pub fn query_status_within(socket: &Path, timeout: Duration) -> Result<Status> {
    let reply = status_socket::query(socket, "status", timeout)?;
    let value: serde_json::Value = serde_json::from_str(&reply).with_context(|| {
        format!(
            "status reply from {}: {}",
            socket.display(),
            cut(reply.trim(), 200)
        )
    })?;
    if let Some(error) = value.get("error").and_then(|e| e.as_str()) {
        anyhow::bail!(
            "qfabricd at {} answered: {}",
            socket.display(),
            cut(error, 400)
        );
    }
    serde_json::from_value(value).with_context(|| {
        format!(
            "status reply from {}: {}",
            socket.display(),
            cut(reply.trim(), 200)
        )
    })
}

/// `text`, cut to at most `max` bytes (on a character boundary) with the cut said.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... ({} bytes)", &text[..end], text.len())
}

/// The running daemon.
pub struct Daemon {
    config: DaemonConfig,
    workloads: Vec<Task>,
    controller: Controller,
    router: Router,
    endpoints: [Option<Box<dyn Domain>>; 2],
    journal: Journal,
    status: Arc<Mutex<Status>>,
    started: Instant,
    /// This run's epoch base and invocation ids (fresh in every run, see `qf_execution::session`).
    session: Session,
    epochs: EpochFile,
    mcu_available: bool,
    /// The `[[resident]]` keeper, until `run` starts its thread; then its journal records and
    /// health.
    keeper: Option<Keeper>,
    resident_records: Option<std::sync::mpsc::Receiver<serde_json::Value>>,
    resident_health: Option<Arc<Mutex<Vec<ResidentHealth>>>>,
    _state_lock: PidLock,
}

/// What one chain release brought.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Release {
    /// Every invocation answered (or failed, which is a wrong output): scored.
    Scored { latency_us: f64, ok: bool },
    /// The MCU refused an invocation as DUPLICATE or STALE without running it: the release says
    /// nothing about any domain's timing or output, so it is not scored.
    Rejected {
        task: &'static str,
        status: qf_abi::Status,
        invocation_id: u64,
        epoch: u32,
    },
}

impl Daemon {
    /// Loads the chain and evidence, verifies the journal, spawns the executor and connects the MCU.
    pub fn new(config: DaemonConfig) -> Result<Daemon> {
        // One daemon per state directory (and per journal): a second one fails here, by pid.
        let state_dir = config.state_dir();
        std::fs::create_dir_all(&state_dir)
            .with_context(|| format!("creating the state directory {}", state_dir.display()))?;
        let state_lock = PidLock::acquire(&state_dir.join("qfabricd.lock")).map_err(|e| {
            let locked = matches!(e, JournalError::Locked { .. });
            let context = if locked {
                "another qfabricd uses this state directory".to_owned()
            } else {
                format!("state directory {}", state_dir.display())
            };
            anyhow::Error::new(e).context(context)
        })?;
        let chain = Chain::load(&config.chain)?;
        let endpoint = config.mcu_endpoint()?;
        if endpoint.is_none() && !config.resident.is_empty() {
            anyhow::bail!(
                "configuration: [[resident]] chains need an MCU endpoint (mcu_socket, mcu_rpmsg or mcu_dev)"
            );
        }
        let (keeper, resident_records) = match (&endpoint, config.resident.is_empty()) {
            (Some(endpoint), false) => {
                let (sender, receiver) = std::sync::mpsc::channel();
                (
                    Some(Keeper::new(&config.resident, endpoint.clone(), sender)?),
                    Some(receiver),
                )
            }
            _ => (None, None),
        };
        if endpoint.is_none() {
            if let Some(task) = chain.task.iter().find(|t| t.start == DomainId::Mcu) {
                anyhow::bail!(
                    "chain {}: task `{}` starts on the mcu but the configuration names no MCU endpoint (mcu_socket, mcu_rpmsg, mcu_dev or mcu_serial)",
                    config.chain.display(),
                    task.name
                );
            }
        }
        if let Some(profile) = &config.profile {
            if !profile.is_dir() {
                anyhow::bail!(
                    "profile = {} is not a directory; without its traces the controller has no evidence (run `qf profile`, or remove the key)",
                    profile.display()
                );
            }
        } else {
            eprintln!("qfabricd: no `profile` configured: the controller has no p95 evidence, so every move fails destination admission");
        }
        let workloads = chain
            .task
            .iter()
            .map(|t| {
                task_by_name(config.workloads.get(&t.name).unwrap_or(&t.name))
                    .with_context(|| format!("chain task `{}`", t.name))
            })
            .collect::<Result<Vec<_>>>()?;
        let inputs = ReplayInputs::load(
            chain.clone(),
            config.profile.as_deref(),
            None,
            config.profile.as_deref(),
        )?;
        let tasks = inputs.task_models();
        let controller = Controller::new(
            config.contract,
            tasks,
            chain.start_placement(),
            inputs.graph_deadline_us(),
        )?;
        let run_id = new_run_id();
        if let Some(dir) = config.journal.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let anchor = state_dir.join("journal.anchor");
        let options = JournalOptions {
            key: config.journal_key.as_deref().map(read_key).transpose()?,
            anchor: Some(anchor.clone()),
        };
        let keyed = options.key.is_some();
        let mut journal = Journal::open_with(&config.journal, &run_id, options)?;
        if let Some(records) = journal.anchor_missing() {
            eprintln!("qfabricd: {}", anchor_missing_warning(&anchor, records));
        }
        let mut epochs = EpochFile::open(&state_dir.join("epoch"))?;
        let session = Session::new(epochs.floor());
        epochs.record(session.epoch(0))?;
        set_scheduling(0, config.caller.scheduling())?;
        let program = executor_path(config.executor.as_deref())?;
        let linux: Box<dyn Domain> =
            Box::new(LinuxExecutor::spawn(&program, config.caller.scheduling())?);
        let mut mcu: Option<Box<dyn Domain>> = endpoint
            .map(|e| e.open_reconnecting(Duration::from_secs(5)))
            .transpose()?;
        let mcu_available = mcu.as_mut().is_some_and(|m| m.check_available());
        let mcu_down_reason = match &mcu {
            Some(m) if !mcu_available => Some(mcu_down_reason(m.as_ref())),
            Some(_) => None,
            None => Some("no MCU endpoint is configured (mcu_socket, mcu_rpmsg or mcu_dev)".into()),
        };
        if let (Some(reason), Some(_)) = (&mcu_down_reason, &mcu) {
            eprintln!("qfabricd: the MCU endpoint is down ({reason}); moves to the MCU fail destination admission until it is up");
        }
        let mut controller = controller;
        controller.set_domain_available(DomainId::Mcu, mcu_available);
        journal.append(&serde_json::json!({
            "event": "start",
            "chain": config.chain,
            "contract": config.contract,
            "graph_deadline_us": controller.graph_deadline_us(),
            "placement": chain.start_placement(),
            "mcu_available": mcu_available,
            "mcu_down_reason": mcu_down_reason,
            "epoch_base": session.base(),
        }))?;
        let status = Status {
            run_id,
            pid: std::process::id(),
            journal: config.journal.clone(),
            graph_deadline_us: controller.graph_deadline_us(),
            mcu_available,
            mcu_down_reason,
            wire_epoch: session.epoch(0),
            journal_records: journal.records(),
            journal_head: journal.head().to_owned(),
            journal_anchor_missing: journal.anchor_missing(),
            journal_anchor: anchor,
            journal_keyed: keyed,
            ..Status::default()
        };
        Ok(Daemon {
            router: Router::new(chain.start_placement()),
            workloads,
            controller,
            endpoints: [Some(linux), mcu],
            journal,
            status: Arc::new(Mutex::new(status)),
            started: Instant::now(),
            session,
            epochs,
            mcu_available,
            resident_health: keeper.as_ref().map(Keeper::health),
            keeper,
            resident_records,
            _state_lock: state_lock,
            config,
        })
    }

    /// One chain release.
    fn observe_chain(&mut self) -> Release {
        let mut latency_us = 0.0;
        let mut ok = true;
        let mut frame = [0u8; MAX_FRAME_LEN];
        for (index, &task) in self.workloads.iter().enumerate() {
            let ticket = self.router.begin(index);
            let id = self.session.next_id();
            let epoch = self.session.epoch(ticket.epoch);
            let domain = ticket.domain;
            let request = random_request(task, id);
            let result = (|| -> Result<(f64, bool, qf_abi::Status)> {
                let len = encode_request(task, &request, id, epoch, &mut frame)?;
                let endpoint = self.endpoints[ticket.domain.index()]
                    .as_mut()
                    .with_context(|| format!("no endpoint for domain {}", ticket.domain))?;
                let invocation = endpoint.invoke(&frame[..len])?;
                let status = qf_abi::decode_frame(invocation.frame())
                    .map_or(qf_abi::Status::Malformed, |f| f.header.status);
                Ok((
                    invocation.latency.as_secs_f64() * 1e6,
                    outcome_ok(task, &request, invocation.frame()).unwrap_or(false),
                    status,
                ))
            })();
            self.router.finish(ticket);
            match result {
                Ok((_, _, status @ (qf_abi::Status::Duplicate | qf_abi::Status::Stale))) => {
                    return Release::Rejected {
                        task: task.name(),
                        status,
                        invocation_id: id,
                        epoch,
                    };
                }
                Ok((latency, correct, _)) => {
                    latency_us += latency;
                    ok &= correct;
                }
                // A failed invocation is a wrong output for the contract; the chain goes on.
                // While the MCU is known to be down, the down report said it all.
                Err(error) => {
                    if domain != DomainId::Mcu || self.mcu_available {
                        eprintln!("qfabricd: invocation {id} of `{}`: {error:#}", task.name());
                    }
                    ok = false;
                }
            }
        }
        Release::Scored { latency_us, ok }
    }

    /// Notices the MCU going down or coming back: journals it, tells the controller (moves to a
    /// down MCU fail destination admission) and the status.
    fn track_mcu(&mut self) -> Result<()> {
        let Some(mcu) = self.endpoints[DomainId::Mcu.index()].as_mut() else {
            return Ok(());
        };
        let up = mcu.check_available();
        if up == self.mcu_available {
            return Ok(());
        }
        self.mcu_available = up;
        self.controller.set_domain_available(DomainId::Mcu, up);
        let reason = (!up).then(|| mcu_down_reason(mcu.as_ref()));
        eprintln!(
            "qfabricd: the MCU endpoint is {}{}",
            if up { "up again" } else { "down" },
            reason
                .as_deref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default()
        );
        self.journal.append(&serde_json::json!({
            "event": if up { "mcu_up" } else { "mcu_down" },
            "reason": reason,
        }))?;
        if let Ok(mut status) = self.status.lock() {
            status.mcu_available = up;
            status.mcu_down_reason = reason;
        }
        Ok(())
    }

    /// Journals what the resident keeper did since the last release and shows its health.
    fn track_residents(&mut self) -> Result<()> {
        if let Some(records) = &self.resident_records {
            for record in records.try_iter().collect::<Vec<_>>() {
                self.journal.append(&record)?;
            }
        }
        if let Some(health) = &self.resident_health {
            let health = health.lock().map(|h| h.clone()).unwrap_or_default();
            if let Ok(mut status) = self.status.lock() {
                status.resident = health;
                publish_journal(&self.journal, &mut status);
            }
        }
        Ok(())
    }

    /// A release the MCU refused: logged, journaled, never scored. After STALE (another client
    /// moved the MCU to a newer epoch) the session starts a newer epoch between releases.
    fn refused(&mut self, release: Release) -> Result<()> {
        let Release::Rejected {
            task,
            status,
            invocation_id,
            epoch,
        } = release
        else {
            return Ok(());
        };
        let mut record = serde_json::json!({
            "event": "mcu_rejected",
            "task": task,
            "status": status.name(),
            "invocation_id": invocation_id,
            "epoch": epoch,
        });
        if status == qf_abi::Status::Stale {
            self.session.rebase(self.router.epoch());
            let newer = self.session.epoch(self.router.epoch());
            self.epochs.record(newer)?;
            record["new_epoch"] = newer.into();
        }
        eprintln!(
            "qfabricd: the MCU refused invocation {invocation_id} of `{task}` (epoch {epoch}) as {}; the release is not scored{}",
            status.name(),
            record.get("new_epoch").map(|e| format!(", next epoch {e}")).unwrap_or_default()
        );
        self.journal.append(&record)?;
        if let Ok(mut status) = self.status.lock() {
            status.rejected_releases += 1;
        }
        Ok(())
    }

    /// Runs until `stop` is raised (or `limit` chain observations, if given).
    pub fn run(&mut self, stop: &Arc<AtomicBool>, limit: Option<u64>) -> Result<()> {
        let listener = bind_socket(&self.config.socket)?;
        SERVING.store(true, Ordering::SeqCst);
        let status_thread = {
            let (status, stop) = (self.status.clone(), stop.clone());
            std::thread::spawn(move || {
                status_socket::serve(&listener, &stop, &|request| answer(request, &status))
            })
        };
        let keeper_thread = self.keeper.take().map(|keeper| {
            let stop = stop.clone();
            std::thread::spawn(move || keeper.run(&stop))
        });
        let period = Duration::from_millis(self.config.period_ms);
        let mut recent_windows: VecDeque<f64> = VecDeque::with_capacity(RECENT_WINDOWS);
        let mut last_decisions: VecDeque<DecisionRecord> =
            VecDeque::with_capacity(RECENT_DECISIONS);
        let mut observations = 0u64;
        let result = (|| -> Result<()> {
            while !stop.load(Ordering::SeqCst) && limit.is_none_or(|l| observations < l) {
                let release = Instant::now();
                self.track_residents()?;
                self.track_mcu()?;
                let (latency_us, ok) = match self.observe_chain() {
                    Release::Scored { latency_us, ok } => (latency_us, ok),
                    rejected => {
                        self.refused(rejected)?;
                        observations += 1;
                        std::thread::sleep(period.saturating_sub(release.elapsed()));
                        continue;
                    }
                };
                self.track_mcu()?;
                observations += 1;
                let window_before = self.controller.current_window();
                let index_before = self.controller.window_index();
                let mut decisions = Vec::new();
                let changed = self
                    .controller
                    .observe(latency_us, ok, &mut |d: &Decision| decisions.push(*d));
                if self.controller.window_index() != index_before {
                    let mut closed = window_before;
                    closed.record(latency_us, ok, self.controller.graph_deadline_us());
                    if recent_windows.len() == RECENT_WINDOWS {
                        recent_windows.pop_front();
                    }
                    recent_windows.push_back(closed.miss_rate());
                }
                for decision in &decisions {
                    let record = DecisionRecord::new(decision, self.controller.tasks());
                    self.journal
                        .append(&serde_json::json!({"event": "decision", "decision": record}))?;
                    if last_decisions.len() == RECENT_DECISIONS {
                        last_decisions.pop_front();
                    }
                    last_decisions.push_back(record);
                }
                if changed {
                    // Journaled first; now the quiescent switch (drain, new epoch, new domain),
                    // with the new epoch recorded before any request carries it.
                    self.epochs
                        .record(self.session.epoch(self.controller.epoch()))?;
                    self.router
                        .switch(self.controller.placement(), self.controller.epoch());
                }
                if let Ok(mut status) = self.status.lock() {
                    status.uptime_s = self.started.elapsed().as_secs_f64();
                    status.observations = observations;
                    status.epoch = self.router.epoch();
                    status.wire_epoch = self.session.epoch(self.router.epoch());
                    status.placement = self
                        .controller
                        .tasks()
                        .iter()
                        .map(|t| t.name.clone())
                        .zip(self.router.placement())
                        .collect();
                    status.controller = Some(self.controller.phase());
                    status.window_index = self.controller.window_index();
                    status.current_window_miss_rate = self.controller.current_window().miss_rate();
                    status.recent_window_miss_rates = recent_windows.iter().copied().collect();
                    status.last_decisions = last_decisions.iter().cloned().collect();
                    publish_journal(&self.journal, &mut status);
                }
                std::thread::sleep(period.saturating_sub(release.elapsed()));
            }
            Ok(())
        })();
        stop.store(true, Ordering::SeqCst);
        let _ = status_thread.join();
        if let Some(thread) = keeper_thread {
            let _ = thread.join();
        }
        let _ = self.track_residents();
        let _ = std::fs::remove_file(&self.config.socket);
        self.journal.append(&serde_json::json!({"event": "shutdown", "observations": observations, "error": result.as_ref().err().map(|e| format!("{e:#}"))}))?;
        result
    }
}

/// The journal's part of the status: its length, head, and a missing anchor.
fn publish_journal(journal: &Journal, status: &mut Status) {
    status.journal_records = journal.records();
    status.journal_head = journal.head().to_owned();
    if status.journal_anchor_missing.is_none() {
        if let Some(records) = journal.anchor_missing() {
            eprintln!(
                "qfabricd: {}",
                anchor_missing_warning(&status.journal_anchor, records)
            );
            status.journal_anchor_missing = Some(records);
        }
    }
}

/// Why a domain is down, when it can say.
fn mcu_down_reason(domain: &dyn Domain) -> String {
    domain
        .down_reason()
        .unwrap_or_else(|| "not answering".to_owned())
}

fn bind_socket(path: &Path) -> Result<UnixListener> {
    use std::os::unix::fs::FileTypeExt;
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.file_type().is_socket() {
            anyhow::bail!(
                "{} exists and is not a socket; refusing to replace it",
                path.display()
            );
        }
        if UnixStream::connect(path).is_ok() {
            anyhow::bail!("another qfabricd answers on {}", path.display());
        }
        std::fs::remove_file(path)
            .with_context(|| format!("removing the stale socket {}", path.display()))?;
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    UnixListener::bind(path)
        .with_context(|| format!("binding the status socket {}", path.display()))
}
