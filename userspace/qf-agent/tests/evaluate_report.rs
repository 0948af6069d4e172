//! End to end on synthetic traces: `qf evaluate` writes raw results, `qf report` regenerates the
//! tables and plots from them alone, with input digests.

use qf_agent::cli::evaluate::EvaluateArgs;
use qf_agent::cli::report::ReportArgs;
use qf_agent::cli::ContractArgs;
use qf_evidence::evaluate::read_cells;

fn contract() -> ContractArgs {
    ContractArgs {
        hysteresis: 3,
        probation: 6,
        window: 20,
        tolerance: 0.01,
        cooldown: 6,
        headroom: 0.2,
        min_samples: 200,
    }
}

#[test]
fn evaluate_then_report_on_synthetic_traces() {
    let dir = tempfile::tempdir().unwrap();
    let evaluate = EvaluateArgs {
        out: dir.path().to_owned(),
        traces: None,
        synthetic: Some(7),
        synthetic_rows: 2000,
        observations: 500,
        decisions: 200,
        contract: contract(),
        workloads: qf_evidence::synthetic::WORKLOADS
            .iter()
            .map(|w| w.to_string())
            .collect(),
        quiet: true,
    };
    evaluate.run().unwrap();
    let cells = read_cells(&dir.path().join("evaluate/cells.jsonl")).unwrap();
    // 5 workloads × 3 loads × (8 policies + 2 callers × 2 values of k).
    assert_eq!(cells.len(), 5 * 3 * (8 + 4));
    assert!(cells
        .iter()
        .all(|c| c.synthetic && c.result.observations == 500));
    // Linux is far faster than the MCU in every synthetic cell, so guarded recovery with k = 3 never moves.
    let k3_switches: usize = cells
        .iter()
        .filter(|c| c.label.starts_with("recovery") && c.result.hysteresis == 3)
        .map(|c| c.result.switches)
        .sum();
    assert_eq!(k3_switches, 0);
    let observations =
        std::fs::read_to_string(dir.path().join("evaluate/observations.csv")).unwrap();
    assert_eq!(observations.lines().count(), 1 + cells.len() * 500);

    let report = ReportArgs {
        dir: dir.path().to_owned(),
        resamples: 100,
        block: 50,
        seed: 1,
        quiet: true,
    };
    report.run().unwrap();
    let out = dir.path().join("report");
    for name in [
        "per_call_p95.md",
        "per_call_p95.csv",
        "chain.md",
        "chain.csv",
        "ablation.csv",
        "decision_cost.csv",
        "per_call_p95.svg",
        "chain_p95.svg",
        "inputs.sha256",
        "README.md",
    ] {
        assert!(out.join(name).exists(), "missing {name}");
    }
    let digests = std::fs::read_to_string(out.join("inputs.sha256")).unwrap();
    assert!(digests.contains("evaluate/cells.jsonl"));
    assert!(digests
        .lines()
        .all(|l| l.split_whitespace().next().unwrap().len() == 64));
    let readme = std::fs::read_to_string(out.join("README.md")).unwrap();
    assert!(readme.contains("SYNTHETIC"));
    // Regenerating from the same raw records gives the same tables.
    let first = std::fs::read_to_string(out.join("per_call_p95.csv")).unwrap();
    report.run().unwrap();
    assert_eq!(
        first,
        std::fs::read_to_string(out.join("per_call_p95.csv")).unwrap()
    );
}
