//! The guarded recovery controller (the paper's Fig. 2 and Eqs. 3–8): windows with hysteresis,
//! admission of one-task moves, a switch at an epoch boundary, probation, then commit or rollback
//! and a cooldown. Every terminal outcome returns the monitor to Stable.
//!
//! The controller sees chain observations (latency, correct output) in order. Decisions are taken
//! only at window boundaries, so the caller applies a new placement before the next window's first
//! invocation; the live dispatcher drains in-flight work around it (see [`crate::router`]).
//! All memory is allocated in [`Controller::new`]; observing and deciding never allocate.

use crate::admission::{admit, predicted_chain_cost_us, AdmissionContext, FailedConjuncts, Reason};
use crate::contract::{ContractConfig, WindowCount};
use crate::model::{DomainId, TaskModel};
use crate::quantile::percentile_in_place;
use serde::{Deserialize, Serialize};

/// What a decision did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Switch,
    Commit,
    Rollback,
    Reject,
}

impl Action {
    pub const fn as_str(self) -> &'static str {
        match self {
            Action::Switch => "switch",
            Action::Commit => "commit",
            Action::Rollback => "rollback",
            Action::Reject => "reject",
        }
    }
}

/// One controller decision, taken at the end of window `window` (0-based).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    pub window: u64,
    pub action: Action,
    pub reason: Reason,
    /// Index of the task in the chain.
    pub task: usize,
    pub from: DomainId,
    pub to: DomainId,
    /// Routing epoch after the decision.
    pub epoch: u32,
    /// Every failed conjunct (rejections only).
    pub failed: FailedConjuncts,
    /// Ĉ_G of the candidate placement (Eq. 2), µs; NaN for commit/rollback.
    pub predicted_us: f64,
    /// p95 chain latency over the violating windows, µs; NaN for commit/rollback.
    pub observed_p95_us: f64,
    /// Miss rate the decision rests on: the last window's, or pooled probation for commit/rollback.
    pub miss_rate: f64,
}

/// Where the state machine is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum Phase {
    /// Monitoring; `violations` consecutive violating windows so far.
    Stable {
        violations: u32,
        cooldown_windows: u32,
    },
    /// A switched task under probation.
    Probation {
        task: usize,
        from: DomainId,
        to: DomainId,
        windows: u32,
        observations: u32,
        misses: u32,
    },
}

/// Errors of operator requests.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RequestError {
    #[error("task index {0} is not in the chain")]
    UnknownTask(usize),
    #[error("task {task} already runs in domain {domain}")]
    AlreadyThere { task: usize, domain: DomainId },
}

/// Problems in the chain model handed to [`Controller::new`].
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ModelError {
    #[error("the chain has no tasks")]
    Empty,
    #[error("the placement has {placement} entries for {tasks} tasks")]
    PlacementLength { placement: usize, tasks: usize },
    #[error("task `{task}` is placed on {domain}, where it has no implementation")]
    NotAllowed { task: String, domain: DomainId },
    #[error("graph deadline {0} µs is not a positive number")]
    Deadline(f64),
    #[error(transparent)]
    Config(#[from] crate::contract::ConfigError),
}

/// Fixed-capacity ring of the most recent chain latencies (k·n of them).
#[derive(Debug, Clone)]
struct LatencyRing {
    values: Vec<f64>,
    next: usize,
    len: usize,
}

impl LatencyRing {
    fn with_capacity(capacity: usize) -> Self {
        Self {
            values: vec![0.0; capacity],
            next: 0,
            len: 0,
        }
    }
    fn push(&mut self, value: f64) {
        self.values[self.next] = value;
        self.next = (self.next + 1) % self.values.len();
        self.len = (self.len + 1).min(self.values.len());
    }
    fn copy_into<'a>(&self, scratch: &'a mut [f64]) -> &'a mut [f64] {
        let out = &mut scratch[..self.len];
        out.copy_from_slice(&self.values[..self.len]);
        out
    }
}

/// The controller for one chain.
#[derive(Debug, Clone)]
pub struct Controller {
    config: ContractConfig,
    tasks: Vec<TaskModel>,
    graph_deadline_us: f64,
    placement: Vec<DomainId>,
    epoch: u32,
    window_index: u64,
    window: WindowCount,
    phase: Phase,
    recent: LatencyRing,
    scratch: Vec<f64>,
    domain_available: [bool; 2],
    pending_request: Option<(usize, DomainId)>,
}

impl Controller {
    /// A controller for `tasks` starting at `placement`, with graph deadline D_G.
    pub fn new(
        config: ContractConfig,
        tasks: Vec<TaskModel>,
        placement: Vec<DomainId>,
        graph_deadline_us: f64,
    ) -> Result<Self, ModelError> {
        config.validate()?;
        if tasks.is_empty() {
            return Err(ModelError::Empty);
        }
        if placement.len() != tasks.len() {
            return Err(ModelError::PlacementLength {
                placement: placement.len(),
                tasks: tasks.len(),
            });
        }
        if let Some((task, &domain)) = tasks.iter().zip(&placement).find(|(t, d)| !t.allows(**d)) {
            return Err(ModelError::NotAllowed {
                task: task.name.clone(),
                domain,
            });
        }
        if !(graph_deadline_us > 0.0 && graph_deadline_us.is_finite()) {
            return Err(ModelError::Deadline(graph_deadline_us));
        }
        let history = config.hysteresis * config.window;
        Ok(Self {
            config,
            tasks,
            graph_deadline_us,
            placement,
            epoch: 0,
            window_index: 0,
            window: WindowCount::default(),
            phase: Phase::Stable {
                violations: 0,
                cooldown_windows: 0,
            },
            recent: LatencyRing::with_capacity(history),
            scratch: vec![0.0; history],
            domain_available: [true, true],
            pending_request: None,
        })
    }

    pub fn config(&self) -> &ContractConfig {
        &self.config
    }
    pub fn tasks(&self) -> &[TaskModel] {
        &self.tasks
    }
    pub fn placement(&self) -> &[DomainId] {
        &self.placement
    }
    pub fn epoch(&self) -> u32 {
        self.epoch
    }
    pub fn phase(&self) -> Phase {
        self.phase
    }
    pub fn graph_deadline_us(&self) -> f64 {
        self.graph_deadline_us
    }
    /// Index of the window in progress.
    pub fn window_index(&self) -> u64 {
        self.window_index
    }
    /// Counts of the window in progress.
    pub fn current_window(&self) -> WindowCount {
        self.window
    }
    /// Marks a destination domain as accepting work or not (destination admission).
    pub fn set_domain_available(&mut self, domain: DomainId, available: bool) {
        self.domain_available[domain.index()] = available;
    }
    /// True while a switched task is under probation.
    pub fn in_probation(&self) -> bool {
        matches!(self.phase, Phase::Probation { .. })
    }

    /// Asks for a move of `task` to `to`, evaluated by the full admission test (including the
    /// contract conjunct) at the end of the current window.
    pub fn request_switch(&mut self, task: usize, to: DomainId) -> Result<(), RequestError> {
        let current = *self
            .placement
            .get(task)
            .ok_or(RequestError::UnknownTask(task))?;
        if current == to {
            return Err(RequestError::AlreadyThere { task, domain: to });
        }
        self.pending_request = Some((task, to));
        Ok(())
    }

    /// Records one chain observation; at the end of a window, decides and reports each decision to
    /// `sink` (in order). Returns true when the placement changed, so the caller re-routes before
    /// the next invocation.
    pub fn observe(&mut self, latency_us: f64, ok: bool, sink: &mut impl FnMut(&Decision)) -> bool {
        self.window.record(latency_us, ok, self.graph_deadline_us);
        self.recent.push(latency_us);
        if (self.window.observations as usize) < self.config.window {
            return false;
        }
        let epoch_before = self.epoch;
        self.end_window(sink);
        self.epoch != epoch_before
    }

    fn end_window(&mut self, sink: &mut impl FnMut(&Decision)) {
        let window = self.window;
        let tolerance = self.config.tolerance;
        match self.phase {
            Phase::Probation {
                task,
                from,
                to,
                windows,
                observations,
                misses,
            } => {
                let windows = windows + 1;
                let mut pooled = WindowCount {
                    observations,
                    misses,
                };
                pooled.add(window);
                if windows as usize >= self.config.probation {
                    self.finish_probation(task, from, to, pooled, sink);
                } else {
                    self.phase = Phase::Probation {
                        task,
                        from,
                        to,
                        windows,
                        observations: pooled.observations,
                        misses: pooled.misses,
                    };
                }
            }
            Phase::Stable {
                violations,
                cooldown_windows,
            } => {
                let violations = if window.violates(tolerance) {
                    violations + 1
                } else {
                    0
                };
                let cooldown_active = cooldown_windows > 0;
                let cooldown_windows = cooldown_windows.saturating_sub(1);
                self.phase = Phase::Stable {
                    violations,
                    cooldown_windows,
                };
                let request = self.pending_request.take();
                if violations as usize >= self.config.hysteresis {
                    self.analyze(None, cooldown_active, window.miss_rate(), sink);
                } else if let Some(request) = request {
                    self.analyze(Some(request), cooldown_active, window.miss_rate(), sink);
                }
            }
        }
        self.window = WindowCount::default();
        self.window_index += 1;
    }

    fn finish_probation(
        &mut self,
        task: usize,
        from: DomainId,
        to: DomainId,
        pooled: WindowCount,
        sink: &mut impl FnMut(&Decision),
    ) {
        let met = !pooled.violates(self.config.tolerance);
        let (action, reason) = if met {
            (Action::Commit, Reason::ProbationMet)
        } else {
            // Roll back to the previous placement under a fresh epoch: receivers reject lower
            // epochs as STALE (ABI v1), so "the previous epoch" is re-established, not reused.
            self.placement[task] = from;
            self.epoch += 1;
            (Action::Rollback, Reason::ObservedMissRateFailure)
        };
        sink(&Decision {
            window: self.window_index,
            action,
            reason,
            task,
            from: if met { from } else { to },
            to: if met { to } else { from },
            epoch: self.epoch,
            failed: FailedConjuncts::default(),
            predicted_us: f64::NAN,
            observed_p95_us: f64::NAN,
            miss_rate: pooled.miss_rate(),
        });
        self.phase = Phase::Stable {
            violations: 0,
            cooldown_windows: self.config.cooldown_windows as u32,
        };
    }

    /// Tests every one-task move (or only the requested one); switches to the admitted candidate
    /// with the lowest predicted cost, or reports each rejected candidate.
    fn analyze(
        &mut self,
        request: Option<(usize, DomainId)>,
        cooldown_active: bool,
        window_miss_rate: f64,
        sink: &mut impl FnMut(&Decision),
    ) {
        let (violations, cooldown_windows) = match self.phase {
            Phase::Stable {
                violations,
                cooldown_windows,
            } => (violations, cooldown_windows),
            Phase::Probation { .. } => return,
        };
        let observed = self.recent.copy_into(&mut self.scratch);
        let observed_p95_us = percentile_in_place(observed, 0.95).unwrap_or(f64::NAN);
        let context = AdmissionContext {
            contract_violated: violations as usize >= self.config.hysteresis,
            domain_available: self.domain_available,
            cooldown_active,
            observed_p95_us,
            graph_deadline_us: self.graph_deadline_us,
        };
        let mut best: Option<(usize, DomainId, f64)> = None;
        for (task, to) in candidates(&self.placement, request) {
            let admission = admit(
                &self.config,
                &self.tasks,
                &self.placement,
                task,
                to,
                &context,
            );
            if admission.failed.is_empty()
                && best.is_none_or(|(_, _, cost)| admission.predicted_us < cost)
            {
                best = Some((task, to, admission.predicted_us));
            }
        }
        // Every terminal outcome returns the monitor to Stable (the violation run restarts).
        self.phase = Phase::Stable {
            violations: 0,
            cooldown_windows,
        };
        if let Some((task, to, predicted_us)) = best {
            let from = self.placement[task];
            self.placement[task] = to;
            self.epoch += 1;
            self.phase = Phase::Probation {
                task,
                from,
                to,
                windows: 0,
                observations: 0,
                misses: 0,
            };
            sink(&Decision {
                window: self.window_index,
                action: Action::Switch,
                reason: Reason::Admitted,
                task,
                from,
                to,
                epoch: self.epoch,
                failed: FailedConjuncts::default(),
                predicted_us,
                observed_p95_us,
                miss_rate: window_miss_rate,
            });
            return;
        }
        for (task, to) in candidates(&self.placement, request) {
            let admission = admit(
                &self.config,
                &self.tasks,
                &self.placement,
                task,
                to,
                &context,
            );
            sink(&Decision {
                window: self.window_index,
                action: Action::Reject,
                reason: admission
                    .failed
                    .primary()
                    .unwrap_or(Reason::HigherPredictedCost),
                task,
                from: self.placement[task],
                to,
                epoch: self.epoch,
                failed: admission.failed,
                predicted_us: admission.predicted_us,
                observed_p95_us,
                miss_rate: window_miss_rate,
            });
        }
    }

    /// Ĉ_G of the current placement (Eq. 2).
    pub fn predicted_cost_us(&self) -> f64 {
        predicted_chain_cost_us(&self.tasks, &self.placement, None)
    }
}

/// The one-task moves from `placement` (each task to its other domain), or only `request`.
fn candidates(
    placement: &[DomainId],
    request: Option<(usize, DomainId)>,
) -> impl Iterator<Item = (usize, DomainId)> + '_ {
    let all = placement
        .iter()
        .enumerate()
        .map(|(task, domain)| (task, domain.other()));
    all.filter(move |candidate| request.is_none_or(|r| r == *candidate))
}
