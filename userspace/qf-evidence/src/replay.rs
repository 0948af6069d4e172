//! Ordered trace replay (the paper's Section VI-C) and the baseline policies of its Table III.
//!
//! Each chain observation visits every task once, in chain order, and consumes the next sample of
//! that task's trace in its current domain, so temporal structure (autocorrelation, regime
//! changes) is preserved. An observation misses when any visit's output is wrong or the chain
//! latency exceeds D_G. The `recovery` policy runs the very [`Controller`] the daemon runs.

use crate::chain::Chain;
use crate::stats::percentile;
use crate::traces::{trace_file_name, Sample, Trace};
use anyhow::{bail, Context, Result};
use qf_decision::admission::Reason;
use qf_decision::contract::{deadline_rule_us, ContractConfig, WindowCount};
use qf_decision::controller::{Action, Controller, Decision};
use qf_decision::model::{DomainEvidence, DomainId, TaskModel};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The placement policies compared on the chain (Table III).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// All tasks in Linux; replayed on traces measured with an ordinary (SCHED_OTHER) caller.
    OrdinaryLinux,
    /// All tasks in Linux; replayed on traces measured with a SCHED_FIFO 50 caller.
    TunedLinux,
    /// Every migration-eligible task on the MCU.
    McuFirst,
    /// The placement declared in the chain file (`start`).
    Manual,
    /// Per task, the domain with the lower idle p95.
    Static,
    /// Guarded recovery from the declared placement.
    Recovery,
    /// Non-causal per-visit minimum of both domains' next samples (a bound, not a competitor).
    Oracle,
}

impl Policy {
    pub const ALL: [Policy; 7] = [
        Policy::OrdinaryLinux,
        Policy::TunedLinux,
        Policy::McuFirst,
        Policy::Manual,
        Policy::Static,
        Policy::Recovery,
        Policy::Oracle,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Policy::OrdinaryLinux => "ordinary-linux",
            Policy::TunedLinux => "tuned-linux",
            Policy::McuFirst => "mcu-first",
            Policy::Manual => "manual",
            Policy::Static => "static",
            Policy::Recovery => "recovery",
            Policy::Oracle => "oracle",
        }
    }
}

/// Traces, profiles and deadlines of one chain, loaded once and replayed under any policy.
#[derive(Debug, Clone)]
pub struct ReplayInputs {
    pub chain: Chain,
    /// Per task, per domain (by [`DomainId::index`]): the trace replayed.
    pub traces: Vec<[Option<Trace>; 2]>,
    /// Per task, per domain: profiled evidence for prediction (Eq. 2, 5).
    pub evidence: Vec<[DomainEvidence; 2]>,
    /// Per task, per domain: idle p95 for the `static` policy.
    pub idle_p95_us: Vec<[f64; 2]>,
    /// Per task deadline D_v (declared, or Eq. 4).
    pub task_deadlines_us: Vec<f64>,
    /// Every file read, for report digests.
    pub inputs: Vec<PathBuf>,
}

impl ReplayInputs {
    /// Loads `TASK.DOMAIN.csv` for every task and allowed domain from `traces` (none: no
    /// traces, as for a live daemon without a profile); profiles from
    /// `profile` (default: the traces themselves); deadlines from the chain or, by Eq. 4, from the
    /// idle traces in `idle`.
    pub fn load(
        chain: Chain,
        traces: Option<&Path>,
        profile: Option<&Path>,
        idle: Option<&Path>,
    ) -> Result<Self> {
        let mut inputs = Vec::new();
        let mut load_set = |dir: &Path| -> Result<Vec<[Option<Trace>; 2]>> {
            if !dir.is_dir() {
                anyhow::bail!("trace directory {} is not a directory", dir.display());
            }
            let mut set = Vec::new();
            for task in &chain.task {
                let mut pair = [None, None];
                for domain in &task.domains {
                    let trace = Trace::load_optional(dir, &task.name, *domain)?;
                    if let Some(trace) = &trace {
                        inputs.push(trace.path.clone());
                    }
                    pair[domain.index()] = trace;
                }
                set.push(pair);
            }
            Ok(set)
        };
        let replay_traces = match traces {
            Some(dir) => load_set(dir)?,
            None => vec![[None, None]; chain.task.len()],
        };
        let profile_traces = match profile {
            Some(dir) => Some(load_set(dir)?),
            None => None,
        };
        let idle_traces = match idle {
            Some(dir) => Some(load_set(dir)?),
            None => None,
        };
        let evidence_of = |set: &[[Option<Trace>; 2]]| -> Vec<[DomainEvidence; 2]> {
            set.iter()
                .map(|pair| {
                    pair.clone()
                        .map(|t| t.map_or(DomainEvidence::NONE, |t| t.evidence()))
                })
                .collect()
        };
        let evidence = evidence_of(profile_traces.as_deref().unwrap_or(&replay_traces));
        let idle_p95_us = match &idle_traces {
            Some(set) => evidence_of(set),
            None => evidence.clone(),
        }
        .into_iter()
        .map(|pair| pair.map(|e| e.q95_us))
        .collect();
        let mut task_deadlines_us = Vec::new();
        for (index, task) in chain.task.iter().enumerate() {
            let deadline = match (task.deadline_us, &idle_traces, idle) {
                (Some(deadline), _, _) => deadline,
                (None, Some(set), Some(dir)) => {
                    let mut p99s = Vec::new();
                    for domain in &task.domains {
                        let trace = set[index][domain.index()].as_ref().with_context(|| {
                            format!(
                                "task `{}` has no `deadline_us`, and the deadline rule (Eq. 4) needs the idle trace {}",
                                task.name,
                                dir.join(trace_file_name(&task.name, *domain)).display()
                            )
                        })?;
                        p99s.push(trace.p99_us().with_context(|| format!("idle trace {} is empty", trace.path.display()))?);
                    }
                    deadline_rule_us(p99s).with_context(|| format!("task `{}`: no idle p99", task.name))?
                }
                _ => bail!(
                    "task `{}` has no field `deadline_us`; give one or pass --idle-traces DIR for the deadline rule (Eq. 4)",
                    task.name
                ),
            };
            task_deadlines_us.push(deadline);
        }
        Ok(Self {
            chain,
            traces: replay_traces,
            evidence,
            idle_p95_us,
            task_deadlines_us,
            inputs,
        })
    }

    /// D_G: the sum of per-task deadlines (|V|·D when all tasks share D, as in Eq. 4).
    pub fn graph_deadline_us(&self) -> f64 {
        self.task_deadlines_us.iter().sum()
    }

    /// The controller's view of the chain.
    pub fn task_models(&self) -> Vec<TaskModel> {
        self.chain
            .task
            .iter()
            .zip(&self.evidence)
            .map(|(task, evidence)| TaskModel {
                name: task.name.clone(),
                effect: task.effect,
                allowed: task.allowed(),
                rate_hz: task.rate_hz,
                evidence: *evidence,
            })
            .collect()
    }

    /// The fixed placement a non-adaptive policy uses.
    pub fn placement_for(&self, policy: Policy) -> Vec<DomainId> {
        self.chain
            .task
            .iter()
            .enumerate()
            .map(|(index, task)| {
                let allowed = task.allowed();
                match policy {
                    Policy::OrdinaryLinux | Policy::TunedLinux
                        if allowed[DomainId::Linux.index()] =>
                    {
                        DomainId::Linux
                    }
                    Policy::McuFirst
                        if allowed[DomainId::Mcu.index()]
                            && task.effect.may_migrate_automatically() =>
                    {
                        DomainId::Mcu
                    }
                    Policy::Static => {
                        let [linux, mcu] = self.idle_p95_us[index];
                        let better = if mcu < linux {
                            DomainId::Mcu
                        } else {
                            DomainId::Linux
                        };
                        if allowed[better.index()] {
                            better
                        } else {
                            task.start
                        }
                    }
                    _ => task.start,
                }
            })
            .collect()
    }
}

/// A decision as replay reports it (task by name).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionRecord {
    pub window: u64,
    pub action: Action,
    pub reason: Reason,
    pub task: String,
    pub from: DomainId,
    pub to: DomainId,
    pub epoch: u32,
    pub failed: Vec<Reason>,
    pub predicted_us: Option<f64>,
    pub observed_p95_us: Option<f64>,
    pub miss_rate: f64,
}

impl DecisionRecord {
    pub fn new(decision: &Decision, tasks: &[TaskModel]) -> Self {
        let finite = |x: f64| x.is_finite().then_some(x);
        Self {
            window: decision.window,
            action: decision.action,
            reason: decision.reason,
            task: tasks[decision.task].name.clone(),
            from: decision.from,
            to: decision.to,
            epoch: decision.epoch,
            failed: decision.failed.iter().collect(),
            predicted_us: finite(decision.predicted_us),
            observed_p95_us: finite(decision.observed_p95_us),
            miss_rate: decision.miss_rate,
        }
    }
}

impl DecisionRecord {
    /// One aligned line for terminal output.
    pub fn line(&self) -> String {
        format!(
            "window {:>5}: {:<8} {:<30} {} {} -> {}",
            self.window,
            self.action.as_str(),
            self.reason.as_str(),
            self.task,
            self.from,
            self.to
        )
    }
}

/// Outcome of one replay (the `--json` object).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayResult {
    pub policy: Policy,
    pub observations: usize,
    pub window: usize,
    pub hysteresis: usize,
    pub probation: usize,
    pub graph_deadline_us: f64,
    pub p95_us: f64,
    pub miss_rate: f64,
    pub misses: usize,
    pub switches: usize,
    pub commits: usize,
    pub rollbacks: usize,
    pub open_at_end: bool,
    pub final_placement: BTreeMap<String, DomainId>,
    pub decisions: Vec<DecisionRecord>,
    /// Chain latency of every observation, in order (raw results; not printed by `--json`).
    #[serde(skip)]
    pub latencies_us: Vec<f64>,
}

/// Reads the next sample of one trace, with an error naming the file when it runs out.
struct Cursors<'a> {
    inputs: &'a ReplayInputs,
    next: Vec<[usize; 2]>,
}

impl Cursors<'_> {
    fn take(&mut self, task: usize, domain: DomainId, observation: usize) -> Result<Sample> {
        let name = &self.inputs.chain.task[task].name;
        let trace = self.inputs.traces[task][domain.index()]
            .as_ref()
            .with_context(|| format!("observation {observation} routes task `{name}` to {domain}, but there is no trace {}", trace_file_name(name, domain)))?;
        let position = &mut self.next[task][domain.index()];
        let sample = trace.samples.get(*position).copied().with_context(|| {
            format!(
                "trace {} has {} samples; observation {observation} needs one more",
                trace.path.display(),
                trace.samples.len()
            )
        })?;
        *position += 1;
        Ok(sample)
    }
}

/// Replays `observations` chain observations under `policy`.
pub fn replay(
    inputs: &ReplayInputs,
    policy: Policy,
    config: ContractConfig,
    observations: usize,
) -> Result<ReplayResult> {
    let tasks = inputs.task_models();
    let graph_deadline_us = inputs.graph_deadline_us();
    let mut controller = Controller::new(
        config,
        tasks.clone(),
        inputs.placement_for(policy),
        graph_deadline_us,
    )?;
    let mut cursors = Cursors {
        inputs,
        next: vec![[0, 0]; tasks.len()],
    };
    let mut decisions = Vec::new();
    let mut latencies_us = Vec::with_capacity(observations);
    let mut total = WindowCount::default();
    for observation in 0..observations {
        let mut latency_us = 0.0;
        let mut ok = true;
        for (task, model) in tasks.iter().enumerate() {
            let sample = if policy == Policy::Oracle {
                let mut options = DomainId::ALL.into_iter().filter(|d| model.allows(*d));
                let first = options
                    .next()
                    .map(|d| cursors.take(task, d, observation))
                    .transpose()?;
                let second = options
                    .next()
                    .map(|d| cursors.take(task, d, observation))
                    .transpose()?;
                match (first, second) {
                    (Some(a), Some(b)) => {
                        if (b.ok, -b.latency_us) > (a.ok, -a.latency_us) {
                            b
                        } else {
                            a
                        }
                    }
                    (Some(a), None) => a,
                    _ => bail!("task `{}` allows no domain", model.name),
                }
            } else {
                cursors.take(task, controller.placement()[task], observation)?
            };
            latency_us += sample.latency_us;
            ok &= sample.ok;
        }
        latencies_us.push(latency_us);
        total.record(latency_us, ok, graph_deadline_us);
        if policy == Policy::Recovery {
            controller.observe(latency_us, ok, &mut |d: &Decision| {
                decisions.push(DecisionRecord::new(d, &tasks))
            });
        }
    }
    let count = |action| {
        decisions
            .iter()
            .filter(|d: &&DecisionRecord| d.action == action)
            .count()
    };
    Ok(ReplayResult {
        policy,
        observations,
        window: config.window,
        hysteresis: config.hysteresis,
        probation: config.probation,
        graph_deadline_us,
        p95_us: percentile(&latencies_us, 0.95).unwrap_or(f64::NAN),
        miss_rate: total.miss_rate(),
        misses: total.misses as usize,
        switches: count(Action::Switch),
        commits: count(Action::Commit),
        rollbacks: count(Action::Rollback),
        open_at_end: controller.in_probation(),
        final_placement: tasks
            .iter()
            .map(|t| t.name.clone())
            .zip(controller.placement().iter().copied())
            .collect(),
        decisions,
        latencies_us,
    })
}
