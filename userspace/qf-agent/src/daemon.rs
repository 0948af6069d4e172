//! `qfabricd`: runs a declared chain live under the guarded recovery controller.
//!
//! Every period the chain is released once: each task is routed through the [`Router`] (so a
//! switch waits for in-flight work and no invocation crosses an epoch), invoked on its domain's
//! endpoint with the routing epoch in the frame header, and its output checked against the
//! independent reference. The chain observation feeds the [`Controller`]; every decision is
//! journaled (fsync'd) *before* the new placement is installed. A status socket answers
//! `status` with a JSON snapshot (placements, window miss rates, controller state, last
//! decisions). SIGTERM or SIGINT finishes the chain observation in flight, journals the shutdown
//! and exits cleanly.
//!
//! Configuration (TOML):
//! ```toml
//! chain = "chain.toml"          # the chain file (see qf_evidence::chain)
//! profile = "profile/traces"    # TASK.DOMAIN.csv traces: p95 evidence (and Eq. 4 deadlines)
//! socket = "/run/qfabric/qfabricd.sock"
//! journal = "/var/lib/qfabric/decisions.jsonl"
//! period_ms = 100
//! caller = "ordinary"           # or "fifo" (caller and executor at SCHED_FIFO 50)
//! # executor = "/usr/local/bin/qf-executor"
//! # mcu_socket = "/run/qfabric/mcu.sock"   # the MCU on a Unix socket (the emulator), or
//! # mcu_rpmsg = true                        # on the board, through Linux's rpmsg_char, or
//! # mcu_dev = "/dev/qfabric0"               # through the kernel dispatch device (qfabric_rpmsg)
//! [workloads]                   # chain task name -> declared task (default: the same name)
//! stage1 = "fir_x64"
//! [contract]                    # any ContractConfig field; defaults are the paper's
//! hysteresis = 3
//! ```

use anyhow::{Context, Result};
use nix::sys::signal::{SigSet, Signal};
use qf_abi::MAX_FRAME_LEN;
use qf_decision::contract::ContractConfig;
use qf_decision::controller::{Controller, Decision, Phase};
use qf_decision::model::DomainId;
use qf_decision::router::Router;
use qf_evidence::chain::Chain;
use qf_evidence::journal::{new_run_id, Journal};
use qf_evidence::replay::{DecisionRecord, ReplayInputs};
use qf_execution::domain::{executor_path, Domain, LinuxExecutor, McuEndpoint};
use qf_execution::rt::{set_scheduling, CallerPolicy};
use qf_execution::workload::{encode_request, outcome_ok, random_request, task_by_name};
use qf_tasks::Task;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader, Write};
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
    #[serde(default = "default_period_ms")]
    pub period_ms: u64,
    #[serde(default = "default_caller")]
    pub caller: CallerPolicy,
    pub executor: Option<PathBuf>,
    pub mcu_socket: Option<PathBuf>,
    #[serde(default)]
    pub mcu_rpmsg: bool,
    pub mcu_dev: Option<PathBuf>,
    #[serde(default)]
    pub workloads: BTreeMap<String, String>,
    #[serde(default)]
    pub contract: ContractConfig,
}

fn default_period_ms() -> u64 {
    100
}
fn default_caller() -> CallerPolicy {
    CallerPolicy::Ordinary
}

impl DaemonConfig {
    /// The MCU endpoint the configuration names, if any (naming two is an error).
    pub fn mcu_endpoint(&self) -> Result<Option<McuEndpoint>> {
        McuEndpoint::choose(
            self.mcu_socket.as_deref(),
            self.mcu_rpmsg,
            self.mcu_dev.as_deref().map(Some),
            ["`mcu_socket`", "`mcu_rpmsg`", "`mcu_dev`"],
        )
    }

    /// Reads a configuration; relative paths are taken from the file's directory.
    pub fn load(path: &Path) -> Result<DaemonConfig> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
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
        config.executor.as_mut().map(resolve);
        config.mcu_socket.as_mut().map(resolve);
        config.mcu_dev.as_mut().map(resolve);
        config
            .mcu_endpoint()
            .with_context(|| format!("configuration {}", path.display()))?;
        config
            .contract
            .validate()
            .with_context(|| format!("configuration {} [contract]", path.display()))?;
        Ok(config)
    }
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
    pub journal: PathBuf,
    pub journal_records: u64,
}

const RECENT_WINDOWS: usize = 10;
const RECENT_DECISIONS: usize = 20;

/// Blocks SIGTERM and SIGINT in this and every later thread and returns a flag a watcher thread
/// raises when one arrives. Call before spawning any thread.
pub fn stop_on_signals() -> Result<Arc<AtomicBool>> {
    let mut signals = SigSet::empty();
    signals.add(Signal::SIGTERM);
    signals.add(Signal::SIGINT);
    signals.thread_block().context("blocking SIGTERM/SIGINT")?;
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    std::thread::spawn(move || {
        if signals.wait().is_ok() {
            flag.store(true, Ordering::SeqCst);
        }
    });
    Ok(stop)
}

fn serve_status(listener: UnixListener, status: Arc<Mutex<Status>>, stop: Arc<AtomicBool>) {
    listener.set_nonblocking(true).ok();
    while !stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((stream, _)) => {
                let _ = answer(stream, &status);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

fn answer(stream: UnixStream, status: &Mutex<Status>) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(2)))?;
    let mut line = String::new();
    BufReader::new(&stream).read_line(&mut line)?;
    let reply = match line.trim() {
        "status" => {
            let snapshot = status.lock().map(|s| s.clone()).unwrap_or_default();
            serde_json::to_string(&snapshot).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
        }
        other => {
            serde_json::json!({"error": format!("unknown command `{other}` (expected `status`)")})
                .to_string()
        }
    };
    let mut writer = &stream;
    writer.write_all(reply.as_bytes())?;
    writer.write_all(b"\n")
}

/// Asks a running daemon for its status.
pub fn query_status(socket: &Path) -> Result<Status> {
    let mut stream = UnixStream::connect(socket)
        .with_context(|| format!("connecting to qfabricd at {}", socket.display()))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.write_all(b"status\n")?;
    let mut reply = String::new();
    BufReader::new(&stream)
        .read_line(&mut reply)
        .context("reading the status reply")?;
    serde_json::from_str(&reply)
        .with_context(|| format!("status reply from {}: {}", socket.display(), reply.trim()))
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
    next_invocation: u64,
}

impl Daemon {
    /// Loads the chain and evidence, verifies the journal, spawns the executor and connects the MCU.
    pub fn new(config: DaemonConfig) -> Result<Daemon> {
        let chain = Chain::load(&config.chain)?;
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
        let mut journal = Journal::open(&config.journal, &run_id)?;
        set_scheduling(0, config.caller.scheduling())?;
        let program = executor_path(config.executor.as_deref())?;
        let linux: Box<dyn Domain> =
            Box::new(LinuxExecutor::spawn(&program, config.caller.scheduling())?);
        let endpoint = config.mcu_endpoint()?;
        let mcu: Option<Box<dyn Domain>> = match endpoint.map(|e| e.open(Duration::from_secs(5))) {
            Some(Ok(domain)) => Some(domain),
            Some(Err(error)) => {
                eprintln!("qfabricd: MCU endpoint unavailable ({error:#}); moves to the MCU will fail destination admission");
                None
            }
            None => None,
        };
        let mut controller = controller;
        controller.set_domain_available(DomainId::Mcu, mcu.is_some());
        journal.append(&serde_json::json!({
            "event": "start",
            "chain": config.chain,
            "contract": config.contract,
            "graph_deadline_us": controller.graph_deadline_us(),
            "placement": chain.start_placement(),
            "mcu_available": mcu.is_some(),
        }))?;
        let status = Status {
            run_id,
            pid: std::process::id(),
            journal: config.journal.clone(),
            graph_deadline_us: controller.graph_deadline_us(),
            mcu_available: mcu.is_some(),
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
            next_invocation: 1,
            config,
        })
    }

    /// One chain observation: (chain latency µs, every output correct).
    fn observe_chain(&mut self) -> Result<(f64, bool)> {
        let mut latency_us = 0.0;
        let mut ok = true;
        let mut frame = [0u8; MAX_FRAME_LEN];
        for (index, &task) in self.workloads.iter().enumerate() {
            let ticket = self.router.begin(index);
            let id = self.next_invocation;
            self.next_invocation += 1;
            let request = random_request(task, id);
            let result = (|| -> Result<(f64, bool)> {
                let len = encode_request(task, &request, id, ticket.epoch, &mut frame)?;
                let endpoint = self.endpoints[ticket.domain.index()]
                    .as_mut()
                    .with_context(|| format!("no endpoint for domain {}", ticket.domain))?;
                let invocation = endpoint.invoke(&frame[..len])?;
                Ok((
                    invocation.latency.as_secs_f64() * 1e6,
                    outcome_ok(task, &request, invocation.frame()).unwrap_or(false),
                ))
            })();
            self.router.finish(ticket);
            match result {
                Ok((latency, correct)) => {
                    latency_us += latency;
                    ok &= correct;
                }
                // A failed invocation is a wrong output for the contract; the chain goes on.
                Err(error) => {
                    eprintln!("qfabricd: invocation {id} of `{}`: {error:#}", task.name());
                    ok = false;
                }
            }
        }
        Ok((latency_us, ok))
    }

    /// Runs until `stop` is raised (or `limit` chain observations, if given).
    pub fn run(&mut self, stop: &Arc<AtomicBool>, limit: Option<u64>) -> Result<()> {
        let listener = bind_socket(&self.config.socket)?;
        let status_thread = {
            let (status, stop) = (self.status.clone(), stop.clone());
            std::thread::spawn(move || serve_status(listener, status, stop))
        };
        let period = Duration::from_millis(self.config.period_ms);
        let mut recent_windows: VecDeque<f64> = VecDeque::with_capacity(RECENT_WINDOWS);
        let mut last_decisions: VecDeque<DecisionRecord> =
            VecDeque::with_capacity(RECENT_DECISIONS);
        let mut observations = 0u64;
        let result = (|| -> Result<()> {
            while !stop.load(Ordering::SeqCst) && limit.is_none_or(|l| observations < l) {
                let release = Instant::now();
                let (latency_us, ok) = self.observe_chain()?;
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
                    // Journaled first; now the quiescent switch (drain, new epoch, new domain).
                    self.router
                        .switch(self.controller.placement(), self.controller.epoch());
                }
                if let Ok(mut status) = self.status.lock() {
                    status.uptime_s = self.started.elapsed().as_secs_f64();
                    status.observations = observations;
                    status.epoch = self.router.epoch();
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
                    status.journal_records = self.journal.records();
                }
                std::thread::sleep(period.saturating_sub(release.elapsed()));
            }
            Ok(())
        })();
        stop.store(true, Ordering::SeqCst);
        let _ = status_thread.join();
        let _ = std::fs::remove_file(&self.config.socket);
        self.journal.append(&serde_json::json!({"event": "shutdown", "observations": observations, "error": result.as_ref().err().map(|e| format!("{e:#}"))}))?;
        result
    }
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
