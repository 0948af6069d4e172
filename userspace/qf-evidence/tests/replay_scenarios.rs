//! Scenario tests of the guarded recovery protocol on synthetic traces whose right decision is
//! known (the paper's Sections IV-C and VII-D). One task, D = 1000 µs, so D_G = 1000 µs; windows
//! of n = 20 chain observations, ε = 1%, P = 6, cooldown 6 windows.

use qf_decision::admission::Reason;
use qf_decision::contract::ContractConfig;
use qf_decision::controller::Action;
use qf_decision::model::DomainId;
use qf_evidence::chain::Chain;
use qf_evidence::replay::{replay, Policy, ReplayInputs, ReplayResult};
use qf_evidence::traces::{trace_file_name, Sample, Trace};
use std::path::Path;

const ROWS: usize = 2000;

fn write_trace(
    dir: &Path,
    task: &str,
    domain: DomainId,
    rows: usize,
    sample: impl Fn(usize) -> (f64, bool),
) {
    let samples: Vec<Sample> = (0..rows)
        .map(|i| {
            let (latency_us, ok) = sample(i);
            Sample { latency_us, ok }
        })
        .collect();
    Trace::write(&dir.join(trace_file_name(task, domain)), &samples).unwrap();
}

fn chain(effect: &str, domains: &str, rate_hz: f64) -> Chain {
    Chain::parse(&format!(
        "[[task]]\nname = \"fir\"\neffect = \"{effect}\"\ndomains = {domains}\nstart = \"linux\"\ndeadline_us = 1000\nrate_hz = {rate_hz}\n"
    ))
    .unwrap()
}

fn pure_chain() -> Chain {
    chain("pure", "[\"linux\", \"mcu\"]", 10.0)
}

fn run(dir: &Path, chain: Chain, hysteresis: usize) -> ReplayResult {
    let inputs = ReplayInputs::load(chain, Some(dir), None, None).unwrap();
    let config = ContractConfig {
        hysteresis,
        ..ContractConfig::default()
    };
    replay(&inputs, Policy::Recovery, config, 500).unwrap()
}

fn actions(result: &ReplayResult) -> Vec<(u64, Action, Reason)> {
    result
        .decisions
        .iter()
        .map(|d| (d.window, d.action, d.reason))
        .collect()
}

/// Linux is fast for 200 samples (10 windows), then every call takes 2 ms (> D) for good.
fn sustained_linux_degradation(i: usize) -> (f64, bool) {
    (if i < 200 { 100.0 } else { 2_000.0 }, true)
}

fn clean_mcu(_: usize) -> (f64, bool) {
    (400.0, true)
}

/// Linux stalls in isolated pairs, two 5 ms calls every 100 samples (one window in five violates).
fn isolated_linux_stalls(i: usize) -> (f64, bool) {
    (
        if i % 100 == 50 || i % 100 == 51 {
            5_000.0
        } else {
            100.0
        },
        true,
    )
}

/// The MCU looks fine by its p95 but returns a wrong output every 25th call (4% > ε).
fn flaky_mcu(i: usize) -> (f64, bool) {
    (400.0, i % 25 != 0)
}

#[test]
fn clean_traces_never_switch() {
    let dir = tempfile::tempdir().unwrap();
    write_trace(dir.path(), "fir", DomainId::Linux, ROWS, |_| (100.0, true));
    write_trace(dir.path(), "fir", DomainId::Mcu, ROWS, clean_mcu);
    for k in [1, 3] {
        let result = run(dir.path(), pure_chain(), k);
        assert!(
            result.decisions.is_empty(),
            "k = {k}: {:?}",
            result.decisions
        );
        assert_eq!(result.miss_rate, 0.0);
        assert_eq!(result.final_placement["fir"], DomainId::Linux);
    }
}

#[test]
fn isolated_stalls_do_not_switch_with_hysteresis_k3() {
    let dir = tempfile::tempdir().unwrap();
    write_trace(
        dir.path(),
        "fir",
        DomainId::Linux,
        ROWS,
        isolated_linux_stalls,
    );
    write_trace(dir.path(), "fir", DomainId::Mcu, ROWS, flaky_mcu);
    let result = run(dir.path(), pure_chain(), 3);
    assert!(result.decisions.is_empty(), "{:?}", result.decisions);
    assert_eq!(result.switches, 0);
    assert!(
        result.miss_rate > 0.0,
        "the stalls do miss; hysteresis ignores them"
    );
}

/// Table VII's ablation: with k = 1 the controller moves on the first isolated stall, probation
/// exposes the MCU's misses and rolls back, and the cooldown then refuses the next stall.
#[test]
fn isolated_stalls_with_k1_switch_then_roll_back_then_cool_down() {
    let dir = tempfile::tempdir().unwrap();
    write_trace(
        dir.path(),
        "fir",
        DomainId::Linux,
        ROWS,
        isolated_linux_stalls,
    );
    write_trace(dir.path(), "fir", DomainId::Mcu, ROWS, flaky_mcu);
    let result = run(dir.path(), pure_chain(), 1);
    let decisions = actions(&result);
    // Stall pair at samples 50-51 -> window 2 violates; switch at its end.
    assert_eq!(decisions[0], (2, Action::Switch, Reason::Admitted));
    // P = 6 probation windows (3..=8) pool 5 wrong outputs in 120 calls: 4.2% > 1%.
    assert_eq!(
        decisions[1],
        (8, Action::Rollback, Reason::ObservedMissRateFailure)
    );
    // Linux resumes at sample 60; its next stall (samples 150-151) lands in window 13, inside
    // the cooldown of windows 9..=14. The one after (250-251, window 18) moves again and fails
    // probation again.
    assert_eq!(decisions[2], (13, Action::Reject, Reason::ActiveCooldown));
    assert_eq!(
        decisions[3..],
        [
            (18, Action::Switch, Reason::Admitted),
            (24, Action::Rollback, Reason::ObservedMissRateFailure)
        ]
    );
    let rollback = &result.decisions[1];
    assert_eq!(
        (rollback.from, rollback.to),
        (DomainId::Mcu, DomainId::Linux)
    );
    assert_eq!(
        rollback.epoch, 2,
        "switch and rollback each open a new epoch"
    );
    assert!(result.rollbacks >= 1 && result.switches >= 1);
}

#[test]
fn sustained_degradation_switches_after_exactly_k_windows_and_commits_after_p() {
    let dir = tempfile::tempdir().unwrap();
    write_trace(
        dir.path(),
        "fir",
        DomainId::Linux,
        ROWS,
        sustained_linux_degradation,
    );
    write_trace(dir.path(), "fir", DomainId::Mcu, ROWS, clean_mcu);
    for k in [1usize, 3] {
        let result = run(dir.path(), pure_chain(), k);
        // Onset at window 10; windows 10..10+k-1 violate; switch at the end of the k-th.
        let switch_window = 10 + k as u64 - 1;
        assert_eq!(
            actions(&result),
            [
                (switch_window, Action::Switch, Reason::Admitted),
                (switch_window + 6, Action::Commit, Reason::ProbationMet)
            ],
            "k = {k}"
        );
        assert_eq!(result.final_placement["fir"], DomainId::Mcu);
        assert!(!result.open_at_end);
        let switch = &result.decisions[0];
        assert_eq!(switch.predicted_us, Some(400.0));
        assert_eq!(switch.observed_p95_us, Some(2_000.0));
    }
}

#[test]
fn a_switch_late_in_the_trace_is_open_at_end() {
    let dir = tempfile::tempdir().unwrap();
    // Degradation starts at sample 440 (window 22): switch at window 24, the last of 25.
    write_trace(dir.path(), "fir", DomainId::Linux, ROWS, |i| {
        (if i < 440 { 100.0 } else { 2_000.0 }, true)
    });
    write_trace(dir.path(), "fir", DomainId::Mcu, ROWS, clean_mcu);
    let result = run(dir.path(), pure_chain(), 3);
    assert_eq!(actions(&result), [(24, Action::Switch, Reason::Admitted)]);
    assert!(result.open_at_end);
}

fn single_rejection(dir: &Path, chain: Chain) -> (Reason, Vec<Reason>) {
    let result = run(dir, chain, 3);
    let first = result.decisions.first().expect("a decision");
    assert_eq!(
        (first.window, first.action),
        (12, Action::Reject),
        "{:?}",
        result.decisions
    );
    assert_eq!(result.switches, 0);
    (first.reason, first.failed.clone())
}

#[test]
fn rejection_insufficient_evidence() {
    let dir = tempfile::tempdir().unwrap();
    write_trace(
        dir.path(),
        "fir",
        DomainId::Linux,
        ROWS,
        sustained_linux_degradation,
    );
    write_trace(dir.path(), "fir", DomainId::Mcu, 100, clean_mcu);
    let (reason, _) = single_rejection(dir.path(), pure_chain());
    assert_eq!(
        reason,
        Reason::InsufficientEvidence,
        "100 MCU samples < E_min = 200"
    );
}

#[test]
fn rejection_semantic_ineligibility() {
    let dir = tempfile::tempdir().unwrap();
    write_trace(
        dir.path(),
        "fir",
        DomainId::Linux,
        ROWS,
        sustained_linux_degradation,
    );
    write_trace(dir.path(), "fir", DomainId::Mcu, ROWS, clean_mcu);
    for effect in ["stateful", "idempotent", "actuating"] {
        let (reason, _) = single_rejection(dir.path(), chain(effect, "[\"linux\", \"mcu\"]", 10.0));
        assert_eq!(reason, Reason::SemanticIneligibility, "{effect}");
    }
}

#[test]
fn rejection_destination_admission_failure() {
    let dir = tempfile::tempdir().unwrap();
    write_trace(
        dir.path(),
        "fir",
        DomainId::Linux,
        ROWS,
        sustained_linux_degradation,
    );
    write_trace(dir.path(), "fir", DomainId::Mcu, ROWS, clean_mcu);
    // The task has no MCU implementation; its MCU profile alone does not make it admissible.
    let inputs = ReplayInputs::load(
        chain("pure", "[\"linux\"]", 10.0),
        Some(dir.path()),
        Some(dir.path()),
        None,
    )
    .unwrap();
    let mut inputs = inputs;
    inputs.evidence[0][DomainId::Mcu.index()] = Trace::load(&dir.path().join("fir.mcu.csv"))
        .unwrap()
        .evidence();
    let result = replay(&inputs, Policy::Recovery, ContractConfig::default(), 500).unwrap();
    assert_eq!(
        actions(&result)[0],
        (12, Action::Reject, Reason::DestinationAdmissionFailure)
    );
}

#[test]
fn rejection_mcu_headroom() {
    let dir = tempfile::tempdir().unwrap();
    write_trace(
        dir.path(),
        "fir",
        DomainId::Linux,
        ROWS,
        sustained_linux_degradation,
    );
    write_trace(dir.path(), "fir", DomainId::Mcu, ROWS, clean_mcu);
    // 2500 Hz × 400 µs = 1.0 > 1 − h = 0.8.
    let (reason, _) = single_rejection(dir.path(), chain("pure", "[\"linux\", \"mcu\"]", 2_500.0));
    assert_eq!(reason, Reason::McuHeadroom);
}

#[test]
fn rejection_predicted_deadline_miss() {
    let dir = tempfile::tempdir().unwrap();
    write_trace(
        dir.path(),
        "fir",
        DomainId::Linux,
        ROWS,
        sustained_linux_degradation,
    );
    write_trace(dir.path(), "fir", DomainId::Mcu, ROWS, |_| (1_500.0, true));
    let (reason, failed) = single_rejection(dir.path(), pure_chain());
    assert_eq!(
        reason,
        Reason::PredictedDeadlineMiss,
        "1500 µs > D_G = 1000 µs"
    );
    assert_eq!(failed, [Reason::PredictedDeadlineMiss]);
}

#[test]
fn rejection_higher_predicted_cost() {
    let dir = tempfile::tempdir().unwrap();
    // Linux stays fast but starts returning wrong outputs: the contract is violated, yet the MCU
    // (400 µs predicted) would be slower than the 100 µs observed.
    write_trace(dir.path(), "fir", DomainId::Linux, ROWS, |i| {
        (100.0, i < 200)
    });
    write_trace(dir.path(), "fir", DomainId::Mcu, ROWS, clean_mcu);
    let (reason, failed) = single_rejection(dir.path(), pure_chain());
    assert_eq!(reason, Reason::HigherPredictedCost);
    assert_eq!(failed, [Reason::HigherPredictedCost]);
}

/// Paired comparison: every fixed policy sees the same traces in the same order.
#[test]
fn baselines_place_as_table_iii_says() {
    let dir = tempfile::tempdir().unwrap();
    write_trace(
        dir.path(),
        "fir",
        DomainId::Linux,
        ROWS,
        isolated_linux_stalls,
    );
    write_trace(dir.path(), "fir", DomainId::Mcu, ROWS, clean_mcu);
    let inputs = ReplayInputs::load(pure_chain(), Some(dir.path()), None, None).unwrap();
    let config = ContractConfig::default();
    let by = |policy| replay(&inputs, policy, config, 500).unwrap();
    assert_eq!(
        by(Policy::OrdinaryLinux).final_placement["fir"],
        DomainId::Linux
    );
    assert_eq!(by(Policy::McuFirst).final_placement["fir"], DomainId::Mcu);
    assert_eq!(
        by(Policy::Static).final_placement["fir"],
        DomainId::Linux,
        "lower idle p95"
    );
    let oracle = by(Policy::Oracle);
    // The oracle takes the MCU's 400 µs over each 5 ms stall: never a miss.
    assert_eq!(oracle.miss_rate, 0.0);
    assert!(by(Policy::Manual).miss_rate > 0.0);
}

#[test]
fn replay_reports_a_trace_that_runs_out_by_name() {
    let dir = tempfile::tempdir().unwrap();
    write_trace(dir.path(), "fir", DomainId::Linux, 300, |_| (100.0, true));
    write_trace(dir.path(), "fir", DomainId::Mcu, 300, clean_mcu);
    let inputs = ReplayInputs::load(pure_chain(), Some(dir.path()), None, None).unwrap();
    let err = replay(&inputs, Policy::Manual, ContractConfig::default(), 500).unwrap_err();
    assert!(
        format!("{err:#}").contains("fir.linux.csv has 300 samples"),
        "{err:#}"
    );
}

#[test]
fn json_has_the_documented_shape() {
    let dir = tempfile::tempdir().unwrap();
    write_trace(
        dir.path(),
        "fir",
        DomainId::Linux,
        ROWS,
        sustained_linux_degradation,
    );
    write_trace(dir.path(), "fir", DomainId::Mcu, ROWS, clean_mcu);
    let value = serde_json::to_value(run(dir.path(), pure_chain(), 3)).unwrap();
    for key in [
        "policy",
        "observations",
        "p95_us",
        "miss_rate",
        "switches",
        "commits",
        "rollbacks",
        "open_at_end",
    ] {
        assert!(value.get(key).is_some(), "missing {key}");
    }
    assert_eq!(value["policy"], "recovery");
    let decision = &value["decisions"][0];
    assert_eq!(decision["window"], 12);
    assert_eq!(decision["action"], "switch");
    assert_eq!(decision["reason"], "admitted");
    assert_eq!(decision["task"], "fir");
    assert_eq!(decision["from"], "linux");
    assert_eq!(decision["to"], "mcu");
}

/// Eq. 4 when the chain gives no deadline: D = 1.25 · max(idle p99 over domains), rounded up to
/// a whole millisecond; without idle traces the error names the missing field and the option.
#[test]
fn deadline_rule_from_idle_traces() {
    let dir = tempfile::tempdir().unwrap();
    write_trace(dir.path(), "fir", DomainId::Linux, ROWS, |_| (100.0, true));
    write_trace(dir.path(), "fir", DomainId::Mcu, ROWS, |i| {
        (if i % 50 == 0 { 18_000.0 } else { 900.0 }, true)
    });
    let chain = || {
        Chain::parse("[[task]]\nname = \"fir\"\neffect = \"pure\"\ndomains = [\"linux\", \"mcu\"]\nstart = \"linux\"\n").unwrap()
    };
    // MCU p99 (2% of its samples at 18 ms) is 18 ms; 1.25 × 18 ms = 22.5 ms → 23 ms.
    let inputs = ReplayInputs::load(chain(), Some(dir.path()), None, Some(dir.path())).unwrap();
    assert_eq!(inputs.graph_deadline_us(), 23_000.0);
    let err = ReplayInputs::load(chain(), Some(dir.path()), None, None).unwrap_err();
    let message = format!("{err:#}");
    assert!(
        message.contains("deadline_us") && message.contains("--idle-traces"),
        "{message}"
    );
}

/// `qf replay --traces /nonexistent` said "there is no trace stage.linux.csv", naming neither
/// the directory nor that it is missing.
#[test]
fn a_missing_trace_directory_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    for (traces, profile, idle) in [
        (Some(missing.as_path()), None, None),
        (Some(dir.path()), Some(missing.as_path()), None),
        (Some(dir.path()), None, Some(missing.as_path())),
    ] {
        let error = ReplayInputs::load(pure_chain(), traces, profile, idle).unwrap_err();
        let message = format!("{error:#}");
        assert!(
            message.contains(&*missing.to_string_lossy()) && message.contains("not a directory"),
            "{message}"
        );
    }
}
