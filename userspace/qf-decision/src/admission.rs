//! Admission of a candidate move (Eq. 6) with its cost model (Eq. 2) and MCU headroom (Eq. 5).
//! Every failed conjunct maps to a stable snake_case code; none of this allocates.

use crate::contract::ContractConfig;
use crate::model::{DomainId, TaskModel};
use serde::{Deserialize, Serialize};

/// Why the controller did what it did. The first two explain actions; the rest are the paper's
/// nine stable rejection reasons (Section VII-D). The snake_case names are a stable interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// A switch: every conjunct of Eq. 6 held.
    Admitted,
    /// A commit: the pooled probation miss rate met the contract (Eq. 8).
    ProbationMet,
    InsufficientEvidence,
    /// Analysis was requested while the contract was not violated (fewer than k bad windows).
    UnsatisfiedContract,
    SemanticIneligibility,
    DestinationAdmissionFailure,
    McuHeadroom,
    PredictedDeadlineMiss,
    HigherPredictedCost,
    /// A rollback: the pooled probation miss rate exceeded ε (Eq. 8 failed).
    ObservedMissRateFailure,
    ActiveCooldown,
}

impl Reason {
    /// The nine rejection codes, in the order admission checks them.
    pub const REJECTIONS: [Reason; 9] = [
        Reason::InsufficientEvidence,
        Reason::UnsatisfiedContract,
        Reason::SemanticIneligibility,
        Reason::DestinationAdmissionFailure,
        Reason::McuHeadroom,
        Reason::PredictedDeadlineMiss,
        Reason::HigherPredictedCost,
        Reason::ObservedMissRateFailure,
        Reason::ActiveCooldown,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Reason::Admitted => "admitted",
            Reason::ProbationMet => "probation_met",
            Reason::InsufficientEvidence => "insufficient_evidence",
            Reason::UnsatisfiedContract => "unsatisfied_contract",
            Reason::SemanticIneligibility => "semantic_ineligibility",
            Reason::DestinationAdmissionFailure => "destination_admission_failure",
            Reason::McuHeadroom => "mcu_headroom",
            Reason::PredictedDeadlineMiss => "predicted_deadline_miss",
            Reason::HigherPredictedCost => "higher_predicted_cost",
            Reason::ObservedMissRateFailure => "observed_miss_rate_failure",
            Reason::ActiveCooldown => "active_cooldown",
        }
    }

    const fn bit(self) -> u16 {
        1 << (self as u16)
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The set of failed conjuncts of one admission test (a bit set, so it never allocates).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FailedConjuncts(u16);

impl FailedConjuncts {
    pub fn insert(&mut self, reason: Reason) {
        self.0 |= reason.bit();
    }
    pub fn contains(self, reason: Reason) -> bool {
        self.0 & reason.bit() != 0
    }
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
    /// The first failed conjunct in checking order: the code a rejection reports.
    pub fn primary(self) -> Option<Reason> {
        self.iter().next()
    }
    pub fn iter(self) -> impl Iterator<Item = Reason> {
        Reason::REJECTIONS
            .into_iter()
            .filter(move |r| self.contains(*r))
    }
}

impl Serialize for FailedConjuncts {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for FailedConjuncts {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let reasons = Vec::<Reason>::deserialize(deserializer)?;
        let mut set = FailedConjuncts::default();
        reasons.into_iter().for_each(|r| set.insert(r));
        Ok(set)
    }
}

/// Eq. 2: Ĉ_G(d) = Σ_v q.95(v, d(v)), with `moved` (task index, domain) overriding one task.
/// NaN when a placed task has no profiled p95 in its domain.
pub fn predicted_chain_cost_us(
    tasks: &[TaskModel],
    placement: &[DomainId],
    moved: Option<(usize, DomainId)>,
) -> f64 {
    tasks
        .iter()
        .zip(placement)
        .enumerate()
        .map(|(index, (task, &domain))| {
            let domain = match moved {
                Some((moved_index, to)) if moved_index == index => to,
                _ => domain,
            };
            task.evidence(domain).q95_us
        })
        .sum()
}

/// Eq. 5: U'_M = U_M + r_v · q.95(v, M), where U_M sums the tasks already on the MCU (other than
/// `candidate`). Utilization is dimensionless (rate in Hz × seconds).
pub fn mcu_utilization_after(tasks: &[TaskModel], placement: &[DomainId], candidate: usize) -> f64 {
    let load = |task: &TaskModel| task.rate_hz * task.evidence(DomainId::Mcu).q95_us * 1e-6;
    let current: f64 = tasks
        .iter()
        .zip(placement)
        .enumerate()
        .filter(|(index, (_, &domain))| *index != candidate && domain == DomainId::Mcu)
        .map(|(_, (task, _))| load(task))
        .sum();
    current + load(&tasks[candidate])
}

/// `a ≤ b`; false when either is NaN, so missing evidence never passes a cost test.
fn at_most(a: f64, b: f64) -> bool {
    matches!(
        a.partial_cmp(&b),
        Some(std::cmp::Ordering::Less | std::cmp::Ordering::Equal)
    )
}

/// `a < b`; false when either is NaN.
fn below(a: f64, b: f64) -> bool {
    a.partial_cmp(&b) == Some(std::cmp::Ordering::Less)
}

/// Everything admission needs about the moment of the decision, besides the chain itself.
#[derive(Debug, Clone, Copy)]
pub struct AdmissionContext {
    /// k consecutive violating windows have been observed (Eq. 7).
    pub contract_violated: bool,
    /// Which destination domains currently accept work (an endpoint may be down).
    pub domain_available: [bool; 2],
    /// A commit or rollback happened within the cooldown.
    pub cooldown_active: bool,
    /// p95 chain latency observed over the violating windows.
    pub observed_p95_us: f64,
    /// D_G.
    pub graph_deadline_us: f64,
}

/// Result of testing one candidate (task `task` to domain `to`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Admission {
    pub failed: FailedConjuncts,
    pub predicted_us: f64,
}

/// Eq. 6 for one candidate. Every conjunct is evaluated, so a rejection lists all that failed.
pub fn admit(
    config: &ContractConfig,
    tasks: &[TaskModel],
    placement: &[DomainId],
    task: usize,
    to: DomainId,
    context: &AdmissionContext,
) -> Admission {
    let mut failed = FailedConjuncts::default();
    let model = &tasks[task];
    // E_min: every task of the candidate placement has a valid profile in its domain.
    let evidence_ok = tasks
        .iter()
        .zip(placement)
        .enumerate()
        .all(|(index, (t, &d))| {
            let domain = if index == task { to } else { d };
            let evidence = t.evidence(domain);
            evidence.samples >= config.min_samples && evidence.q95_us.is_finite()
        });
    if !evidence_ok {
        failed.insert(Reason::InsufficientEvidence);
    }
    if !context.contract_violated {
        failed.insert(Reason::UnsatisfiedContract);
    }
    if !model.effect.may_migrate_automatically() {
        failed.insert(Reason::SemanticIneligibility);
    }
    if !model.allows(to) || !context.domain_available[to.index()] {
        failed.insert(Reason::DestinationAdmissionFailure);
    }
    if to == DomainId::Mcu
        && !at_most(
            mcu_utilization_after(tasks, placement, task),
            1.0 - config.headroom,
        )
    {
        failed.insert(Reason::McuHeadroom);
    }
    let predicted_us = predicted_chain_cost_us(tasks, placement, Some((task, to)));
    if !at_most(predicted_us, context.graph_deadline_us) {
        failed.insert(Reason::PredictedDeadlineMiss);
    }
    if !below(predicted_us, context.observed_p95_us) {
        failed.insert(Reason::HigherPredictedCost);
    }
    if context.cooldown_active {
        failed.insert(Reason::ActiveCooldown);
    }
    Admission {
        failed,
        predicted_us,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{DomainEvidence, EffectClass};

    fn task(effect: EffectClass, linux_q95: f64, mcu_q95: f64, rate_hz: f64) -> TaskModel {
        TaskModel {
            name: "t".into(),
            effect,
            allowed: [true, true],
            rate_hz,
            evidence: [
                DomainEvidence {
                    samples: 2000,
                    q95_us: linux_q95,
                },
                DomainEvidence {
                    samples: 2000,
                    q95_us: mcu_q95,
                },
            ],
        }
    }

    fn context(observed_p95_us: f64) -> AdmissionContext {
        AdmissionContext {
            contract_violated: true,
            domain_available: [true, true],
            cooldown_active: false,
            observed_p95_us,
            graph_deadline_us: 10_000.0,
        }
    }

    #[test]
    fn eq2_sums_profiled_p95s_of_the_candidate_placement() {
        let tasks = [
            task(EffectClass::Pure, 100.0, 1_000.0, 1.0),
            task(EffectClass::Pure, 200.0, 2_000.0, 1.0),
        ];
        let placement = [DomainId::Linux, DomainId::Linux];
        assert_eq!(predicted_chain_cost_us(&tasks, &placement, None), 300.0);
        assert_eq!(
            predicted_chain_cost_us(&tasks, &placement, Some((1, DomainId::Mcu))),
            2_100.0
        );
    }

    #[test]
    fn eq5_counts_tasks_already_on_the_mcu() {
        // 50 Hz × 4 ms = 0.2 already placed, plus 100 Hz × 5 ms = 0.5.
        let tasks = [
            task(EffectClass::Pure, 1.0, 4_000.0, 50.0),
            task(EffectClass::Pure, 1.0, 5_000.0, 100.0),
        ];
        let placement = [DomainId::Mcu, DomainId::Linux];
        assert!((mcu_utilization_after(&tasks, &placement, 1) - 0.7).abs() < 1e-12);
    }

    #[test]
    fn an_admissible_candidate_fails_no_conjunct_and_a_bad_one_lists_every_failure() {
        let config = ContractConfig::default();
        let tasks = [task(EffectClass::Pure, 5_000.0, 1_000.0, 1.0)];
        let good = admit(
            &config,
            &tasks,
            &[DomainId::Linux],
            0,
            DomainId::Mcu,
            &context(6_000.0),
        );
        assert!(good.failed.is_empty(), "{:?}", good.failed);

        let tasks = [task(EffectClass::Stateful, 5_000.0, 20_000.0, 100.0)];
        let mut bad_context = context(6_000.0);
        bad_context.cooldown_active = true;
        let bad = admit(
            &config,
            &tasks,
            &[DomainId::Linux],
            0,
            DomainId::Mcu,
            &bad_context,
        );
        let failed: Vec<_> = bad.failed.iter().collect();
        assert_eq!(
            failed,
            [
                Reason::SemanticIneligibility,
                Reason::McuHeadroom,
                Reason::PredictedDeadlineMiss,
                Reason::HigherPredictedCost,
                Reason::ActiveCooldown
            ]
        );
        assert_eq!(bad.failed.primary(), Some(Reason::SemanticIneligibility));
    }

    #[test]
    fn missing_evidence_never_passes_the_cost_tests() {
        let config = ContractConfig::default();
        let mut lone = task(EffectClass::Pure, 5_000.0, 1_000.0, 1.0);
        lone.evidence[1] = DomainEvidence::NONE;
        let result = admit(
            &config,
            &[lone],
            &[DomainId::Linux],
            0,
            DomainId::Mcu,
            &context(6_000.0),
        );
        assert!(result.failed.contains(Reason::InsufficientEvidence));
        assert!(result.failed.contains(Reason::PredictedDeadlineMiss));
    }

    #[test]
    fn reason_codes_are_stable_snake_case() {
        let names: Vec<_> = Reason::REJECTIONS.iter().map(|r| r.as_str()).collect();
        assert_eq!(
            names,
            [
                "insufficient_evidence",
                "unsatisfied_contract",
                "semantic_ineligibility",
                "destination_admission_failure",
                "mcu_headroom",
                "predicted_deadline_miss",
                "higher_predicted_cost",
                "observed_miss_rate_failure",
                "active_cooldown"
            ]
        );
        for reason in Reason::REJECTIONS {
            assert_eq!(
                serde_json::to_string(&reason).unwrap(),
                format!("\"{}\"", reason.as_str())
            );
        }
    }
}
