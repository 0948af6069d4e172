//! qfabricd's `[[resident]]` chains: installed and started on the MCU when the daemon starts,
//! installed and started again whenever the MCU no longer has them (it restarted: its chains
//! live in its RAM), and their health shown in `qf status`.
//!
//! A [`Keeper`] thread checks each chain's status through its own connection to the MCU
//! endpoint every [`CHECK_PERIOD`]: a chain the MCU answers `not_installed` for is installed and
//! started again, and the re-install is journaled (the daemon's main loop appends the records the
//! keeper hands it, in order). A chain installed under the same id with another task, period or
//! budget is someone else's: it is reported (`conflict`) and left alone. A chain someone stopped
//! stays stopped. While the MCU does not answer, the chains show `unreachable` with the reason.
//!
//! ```toml
//! [[resident]]
//! chain = 11                     # chain id, 1..; results carry it as their contract id
//! task = "crc32"
//! seed = 3                       # random request inputs (default 1), or:
//! # request = { a = 40, b = 2 }  # the request's fields
//! period_us = 10000
//! # deadline_us = 8000           # default: the period
//! budget_us = 1000               # CBS budget per period (default: none)
//! # start_delay_us = 0
//! ```

use anyhow::{bail, Context, Result};
use qf_abi::chain::{ChainInstall, ChainState};
use qf_abi::Status;
use qf_evidence::resident::ChainRequest;
use qf_execution::chains::{refusal, state_name, ChainControl, Timing};
use qf_execution::domain::McuEndpoint;
use qf_execution::workload::{request_from_json, task_by_name};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often the keeper checks the chains.
pub const CHECK_PERIOD: Duration = Duration::from_millis(200);
/// How long one control request may take.
const CONTROL_TIMEOUT: Duration = Duration::from_secs(1);

/// One `[[resident]]` entry of the configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResidentConfig {
    pub chain: u32,
    pub task: String,
    #[serde(default)]
    pub seed: Option<u64>,
    /// The request's fields (a TOML table), instead of random inputs from `seed`.
    #[serde(default)]
    pub request: Option<toml::Value>,
    pub period_us: u64,
    #[serde(default)]
    pub deadline_us: Option<u64>,
    #[serde(default)]
    pub budget_us: Option<u64>,
    #[serde(default)]
    pub start_delay_us: Option<u64>,
}

impl ResidentConfig {
    /// The install it stands for; errors name the entry and the key.
    pub fn install(&self) -> Result<ChainInstall> {
        let what = || format!("[[resident]] chain = {}", self.chain);
        if self.chain == 0 {
            bail!("[[resident]] chain = 0: chain ids count from 1");
        }
        if self.seed.is_some() && self.request.is_some() {
            bail!(
                "{}: `seed` and `request` both give the request; keep one",
                what()
            );
        }
        let task = task_by_name(&self.task).with_context(|| format!("{}: task", what()))?;
        let mut chain = ChainRequest::seeded(task, self.seed.unwrap_or(1), self.chain);
        if let Some(request) = &self.request {
            let json = serde_json::to_string(request)?;
            chain.request = request_from_json(task, &json)
                .with_context(|| format!("{}: request = {request}", what()))?;
        }
        let timing = Timing {
            period_us: self.period_us,
            deadline_us: self.deadline_us,
            budget_us: self.budget_us,
            start_delay_us: self.start_delay_us,
        };
        timing
            .install(
                self.chain,
                &chain.template()?,
                ["period_us", "deadline_us", "budget_us", "start_delay_us"],
            )
            .with_context(what)
    }
}

/// A resident chain's health, as `qf status` shows it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResidentHealth {
    pub chain: u32,
    pub task: String,
    /// `running`, `stopped`, `installed`, `unreachable`, `refused` (the MCU refused its install:
    /// `error` says why) or `conflict` (the id holds another chain).
    pub state: String,
    pub releases: u64,
    pub results: u64,
    pub not_delivered: u64,
    pub rejected: u64,
    pub overruns: u64,
    pub deadline_misses: u64,
    pub lateness_max_us: u64,
    /// Installs by this daemon run (1 after the start; more after MCU restarts).
    pub installs: u64,
    pub error: Option<String>,
}

/// Keeps the configured chains installed; see the module documentation.
pub struct Keeper {
    chains: Vec<(ResidentConfig, ChainInstall)>,
    endpoint: McuEndpoint,
    health: Arc<Mutex<Vec<ResidentHealth>>>,
    journal: Sender<serde_json::Value>,
}

impl Keeper {
    /// Checks every entry (an error names the first bad one).
    pub fn new(
        configs: &[ResidentConfig],
        endpoint: McuEndpoint,
        journal: Sender<serde_json::Value>,
    ) -> Result<Keeper> {
        let mut chains = Vec::new();
        for config in configs {
            if chains
                .iter()
                .any(|(c, _): &(ResidentConfig, _)| c.chain == config.chain)
            {
                bail!("[[resident]] chain = {}: named twice", config.chain);
            }
            chains.push((config.clone(), config.install()?));
        }
        let health = chains
            .iter()
            .map(|(c, _)| ResidentHealth {
                chain: c.chain,
                task: c.task.clone(),
                state: "unreachable".into(),
                error: Some("not checked yet".into()),
                ..ResidentHealth::default()
            })
            .collect();
        Ok(Keeper {
            chains,
            endpoint,
            health: Arc::new(Mutex::new(health)),
            journal,
        })
    }

    /// The health every check updates.
    pub fn health(&self) -> Arc<Mutex<Vec<ResidentHealth>>> {
        Arc::clone(&self.health)
    }

    /// Checks every [`CHECK_PERIOD`] until `stop` is raised.
    pub fn run(self, stop: &AtomicBool) {
        let mut control: Option<ChainControl> = None;
        while !stop.load(Ordering::SeqCst) {
            if control.is_none() {
                control = self
                    .endpoint
                    .open(CONTROL_TIMEOUT)
                    .map(ChainControl::new)
                    .map_err(|e| self.unreachable(&format!("{e:#}")))
                    .ok();
            }
            if let Some(mcu) = control.as_mut() {
                if let Err(e) = self.check(mcu) {
                    // A transport failure: connect afresh next time.
                    self.unreachable(&format!("{e:#}"));
                    control = None;
                }
            }
            std::thread::sleep(CHECK_PERIOD);
        }
    }

    fn unreachable(&self, why: &str) {
        let mut health = self.health.lock().unwrap_or_else(|p| p.into_inner());
        for h in health.iter_mut() {
            h.state = "unreachable".into();
            h.error = Some(why.to_owned());
        }
    }

    fn journal(&self, record: serde_json::Value) {
        let _ = self.journal.send(record);
    }

    /// One check of every chain; `Err` only when the MCU could not be reached.
    pub fn check(&self, mcu: &mut ChainControl) -> Result<()> {
        for (index, (config, install)) in self.chains.iter().enumerate() {
            let status = match mcu.status(config.chain) {
                Ok(status) => Some(status),
                Err(e) if refusal(&e) == Some(Status::NotInstalled) => None,
                Err(e) if refusal(&e).is_some() => {
                    self.set(index, |h| {
                        h.state = "refused".into();
                        h.error = Some(format!("{e:#}"));
                    });
                    continue;
                }
                Err(e) => return Err(e),
            };
            let status = match status {
                Some(status) => status,
                None => match self.install(mcu, index, config, install) {
                    Ok(status) => status,
                    Err(e) if refusal(&e).is_some() => continue,
                    Err(e) => return Err(e),
                },
            };
            let ours = status.task_id == install.task_id
                && status.period_us == install.period_us
                && status.budget_us == install.budget_us;
            self.set(index, |h| {
                h.state = if ours {
                    state_name(status.state)
                } else {
                    "conflict".into()
                };
                h.error = (!ours).then(|| {
                    format!(
                        "chain {} on the MCU runs task {:#x} every {} µs with budget {} µs, not this entry",
                        config.chain, status.task_id, status.period_us, status.budget_us
                    )
                });
                h.releases = status.releases;
                h.results = status.results;
                h.not_delivered = status.not_delivered;
                h.rejected = status.rejected;
                h.overruns = status.overruns;
                h.deadline_misses = status.deadline_misses;
                h.lateness_max_us = status.lateness_max_us;
            });
        }
        Ok(())
    }

    /// Installs and starts chain `index` (the MCU does not have it); journals it.
    fn install(
        &self,
        mcu: &mut ChainControl,
        index: usize,
        config: &ResidentConfig,
        install: &ChainInstall,
    ) -> Result<qf_abi::chain::ChainStatus> {
        let installs = self.get(index, |h| h.installs);
        // After the first install, the MCU lost the chain: it restarted (or someone removed it).
        let reason = if installs == 0 {
            "start"
        } else {
            "gone_from_mcu"
        };
        let started = mcu.install(install).and_then(|id| {
            mcu.start(id)?;
            mcu.status(id)
        });
        match started {
            Ok(status) => {
                self.set(index, |h| {
                    h.installs += 1;
                    h.error = None;
                });
                eprintln!(
                    "qfabricd: resident chain {} ({}) installed and started ({reason})",
                    config.chain, config.task
                );
                self.journal(serde_json::json!({
                    "event": "resident_installed",
                    "chain": config.chain,
                    "task": config.task,
                    "reason": reason,
                    "install": installs + 1,
                    "state": ChainState::from_code(status.state).map(ChainState::name),
                }));
                Ok(status)
            }
            Err(e) => {
                if let Some(status) = refusal(&e) {
                    let text = format!("{e:#}");
                    // Journaled when the refusal is new, not at every check.
                    let repeated = self.get(index, |h| {
                        h.state == "refused" && h.error.as_deref() == Some(text.as_str())
                    });
                    self.set(index, |h| {
                        h.state = "refused".into();
                        h.error = Some(text.clone());
                    });
                    if !repeated {
                        eprintln!("qfabricd: resident chain {}: {text}", config.chain);
                        self.journal(serde_json::json!({
                            "event": "resident_refused",
                            "chain": config.chain,
                            "status": status.name(),
                        }));
                    }
                }
                Err(e)
            }
        }
    }

    fn set(&self, index: usize, update: impl FnOnce(&mut ResidentHealth)) {
        let mut health = self.health.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(h) = health.get_mut(index) {
            update(h);
        }
    }

    fn get<T>(&self, index: usize, read: impl FnOnce(&ResidentHealth) -> T) -> T {
        let health = self.health.lock().unwrap_or_else(|p| p.into_inner());
        read(&health[index])
    }
}
