//! Controller-level specifications that replay cannot reach: operator requests, destination
//! availability and the choice among several admissible candidates.

use qf_decision::admission::Reason;
use qf_decision::contract::ContractConfig;
use qf_decision::controller::{Action, Controller, Decision, Phase};
use qf_decision::model::{DomainEvidence, DomainId, EffectClass, TaskModel};

fn task(name: &str, linux_q95: f64, mcu_q95: f64) -> TaskModel {
    TaskModel {
        name: name.into(),
        effect: EffectClass::Pure,
        allowed: [true, true],
        rate_hz: 1.0,
        evidence: [
            DomainEvidence {
                samples: 1000,
                q95_us: linux_q95,
            },
            DomainEvidence {
                samples: 1000,
                q95_us: mcu_q95,
            },
        ],
    }
}

fn feed(controller: &mut Controller, windows: usize, latency_us: f64, ok: bool) -> Vec<Decision> {
    let mut decisions = Vec::new();
    for _ in 0..windows * controller.config().window {
        controller.observe(latency_us, ok, &mut |d: &Decision| decisions.push(*d));
    }
    decisions
}

#[test]
fn an_operator_request_without_a_violation_is_rejected_as_unsatisfied_contract() {
    let tasks = vec![task("a", 100.0, 400.0)];
    let mut controller = Controller::new(
        ContractConfig::default(),
        tasks,
        vec![DomainId::Linux],
        1_000.0,
    )
    .unwrap();
    controller.request_switch(0, DomainId::Mcu).unwrap();
    let decisions = feed(&mut controller, 1, 100.0, true);
    assert_eq!(decisions.len(), 1);
    assert_eq!(
        (decisions[0].action, decisions[0].reason),
        (Action::Reject, Reason::UnsatisfiedContract)
    );
    assert_eq!(controller.placement(), [DomainId::Linux]);
    assert!(
        controller.request_switch(0, DomainId::Linux).is_err(),
        "already there"
    );
    assert!(
        controller.request_switch(7, DomainId::Mcu).is_err(),
        "unknown task"
    );
}

#[test]
fn an_unavailable_destination_fails_destination_admission() {
    let tasks = vec![task("a", 2_000.0, 400.0)];
    let mut controller = Controller::new(
        ContractConfig::default(),
        tasks,
        vec![DomainId::Linux],
        1_000.0,
    )
    .unwrap();
    controller.set_domain_available(DomainId::Mcu, false);
    let decisions = feed(&mut controller, 3, 2_000.0, true);
    assert_eq!(decisions.len(), 1);
    assert_eq!(decisions[0].reason, Reason::DestinationAdmissionFailure);
}

#[test]
fn among_admissible_moves_the_cheapest_predicted_chain_wins_and_opens_an_epoch() {
    // Chain cost now 900 + 900; moving `b` (to 300) predicts 1200, moving `a` (to 500) 1400.
    let tasks = vec![task("a", 900.0, 500.0), task("b", 900.0, 300.0)];
    let placement = vec![DomainId::Linux, DomainId::Linux];
    let mut controller =
        Controller::new(ContractConfig::default(), tasks, placement, 1_500.0).unwrap();
    let decisions = feed(&mut controller, 3, 1_800.0, true);
    assert_eq!(decisions.len(), 1);
    let switch = decisions[0];
    assert_eq!(
        (switch.action, switch.task, switch.to),
        (Action::Switch, 1, DomainId::Mcu)
    );
    assert_eq!(switch.predicted_us, 1_200.0);
    assert_eq!(controller.epoch(), 1);
    assert!(matches!(
        controller.phase(),
        Phase::Probation {
            task: 1,
            windows: 0,
            ..
        }
    ));
    // Probation windows count even when good; commit exactly after P = 6 of them.
    assert!(feed(&mut controller, 5, 1_200.0, true).is_empty());
    let commit = feed(&mut controller, 1, 1_200.0, true);
    assert_eq!(
        (commit[0].action, commit[0].reason, commit[0].window),
        (Action::Commit, Reason::ProbationMet, 8)
    );
    assert_eq!(controller.epoch(), 1, "a commit keeps the epoch");
}

#[test]
fn one_miss_in_probation_is_within_tolerance_but_two_are_not() {
    // ε = 1% of 6 × 20 = 120 pooled calls: 1 miss (0.83%) commits, 2 (1.67%) roll back.
    for (misses, expected) in [(1, Action::Commit), (2, Action::Rollback)] {
        let mut controller = Controller::new(
            ContractConfig::default(),
            vec![task("a", 2_000.0, 400.0)],
            vec![DomainId::Linux],
            1_000.0,
        )
        .unwrap();
        feed(&mut controller, 3, 2_000.0, true);
        assert!(controller.in_probation());
        let mut decisions = Vec::new();
        for call in 0..120 {
            let ok = call >= misses;
            controller.observe(400.0, ok, &mut |d: &Decision| decisions.push(*d));
        }
        assert_eq!(decisions.len(), 1);
        assert_eq!(decisions[0].action, expected, "{misses} misses");
    }
}

#[test]
fn bad_models_are_refused_with_a_reason() {
    let config = ContractConfig::default();
    assert!(Controller::new(config, vec![], vec![], 1.0).is_err());
    let mut linux_only = task("a", 1.0, 1.0);
    linux_only.allowed = [true, false];
    let err = Controller::new(config, vec![linux_only], vec![DomainId::Mcu], 1.0).unwrap_err();
    assert!(err.to_string().contains("no implementation"), "{err}");
    let err = Controller::new(
        config,
        vec![task("a", 1.0, 1.0)],
        vec![DomainId::Linux],
        f64::NAN,
    )
    .unwrap_err();
    assert!(err.to_string().contains("deadline"), "{err}");
}
