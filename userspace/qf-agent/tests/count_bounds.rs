//! The counts `qf evaluate`, `qf replay` and `qf report` take are bounded by what each can
//! mean (`qf_agent::cli::bounds`), and a refusal names the flag and the range. An integration
//! test, so the front end's `cli` module does not import its own subcommands back.
use clap::Parser;

#[derive(Debug, Parser)]
enum Cli {
    Evaluate(qf_agent::cli::evaluate::EvaluateArgs),
    Replay(qf_agent::cli::replay::ReplayArgs),
    Report(qf_agent::cli::report::ReportArgs),
    Profile(qf_agent::cli::profile::ProfileArgs),
    Resident(qf_agent::cli::resident::ResidentArgs),
}

fn refused(args: &[&str]) -> String {
    let error = Cli::try_parse_from(args).unwrap_err();
    assert_eq!(
        error.kind(),
        clap::error::ErrorKind::ValueValidation,
        "{error}"
    );
    error.to_string()
}

/// 2^64-1 panicked with "capacity overflow", 10^9 decisions tried to allocate 8 GB before
/// any check, and `--resamples 0` silently used one resample (zero-width "95 % CIs"). Every
/// count is bounded by what it can mean, and the error names the flag and the range.
#[test]
fn hostile_counts_are_refused_by_flag_and_range() {
    let max = u64::MAX.to_string();
    let evaluate = ["qf", "evaluate", "--out", "o", "--synthetic", "1"];
    for flag in ["--synthetic-rows", "--decisions", "--observations"] {
        for value in [max.as_str(), "1000000000", "0"] {
            let error = refused(&[&evaluate[..], &[flag, value]].concat());
            assert!(
                error.contains(flag) && error.contains("1..=1000000"),
                "{error}"
            );
        }
    }
    let replay = [
        "qf", "replay", "--chain", "c", "--traces", "t", "--policy", "recovery",
    ];
    let error = refused(&[&replay[..], &["--observations", &max]].concat());
    assert!(error.contains("--observations"), "{error}");
    for value in [max.as_str(), "0", "1", "99"] {
        let error = refused(&["qf", "report", "d", "--resamples", value]);
        assert!(
            error.contains("--resamples") && error.contains("100..=100000"),
            "{error}"
        );
    }
    // qf profile and qf resident observe: 2^64-1 samples panicked ("attempt to add with
    // overflow", or "capacity overflow" in a release build), 0 samples wrote empty traces.
    let profile = ["qf", "profile", "--out", "o"];
    for (flag, values) in [
        ("--samples", [max.as_str(), "1000001", "0"]),
        ("--min-samples", [max.as_str(), "1000001", "0"]),
        ("--warmup", [max.as_str(), "1000001", "1000001"]),
    ] {
        for value in values {
            let error = refused(&[&profile[..], &[flag, value]].concat());
            assert!(error.contains(flag), "{error}");
        }
    }
    let observe = [
        "qf",
        "resident",
        "observe",
        "--out",
        "o",
        "--period-us",
        "1000",
    ];
    for (flag, value) in [
        ("--samples", max.as_str()),
        ("--samples", "0"),
        ("--warmup", &max),
    ] {
        let error = refused(&[&observe[..], &[flag, value]].concat());
        assert!(error.contains(flag), "{error}");
    }
    let error = refused(&["qf", "report", "d", "--block", "0"]);
    assert!(error.contains("--block"), "{error}");
    let Cli::Report(report) =
        Cli::try_parse_from(["qf", "report", "d", "--resamples", "100"]).unwrap()
    else {
        unreachable!()
    };
    assert_eq!(report.resamples, 100);
}

/// `qf report`'s arguments built without clap (as a test or a caller might) meet the same
/// bounds in `Bootstrap::new`: `--resamples 0` was taken as one resample, silently.
#[test]
fn a_report_built_without_clap_refuses_zero_resamples_by_flag_and_value() {
    let dir = tempfile::tempdir().unwrap();
    for (resamples, block, named) in [
        (0, 50, "--resamples 0"),
        (99, 50, "--resamples 99"),
        (100, 0, "--block 0"),
    ] {
        let report = qf_agent::cli::report::ReportArgs {
            dir: dir.path().to_owned(),
            resamples,
            block,
            seed: 1,
            quiet: true,
        };
        let error = format!("{:#}", report.run().unwrap_err());
        assert!(error.starts_with(named), "{error}");
        assert!(
            error.contains("100..=100000") || named.starts_with("--block"),
            "{error}"
        );
    }
    assert!(
        !dir.path().join("report").exists(),
        "refused before writing anything"
    );
}
