//! Bad task-set files are refused with the file, line, column, field and rule broken.

use std::path::Path;

fn error(text: &str) -> String {
    match qf_sim::parse(Path::new("sets/bad.toml"), text) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.to_string(),
    }
}

const GOOD_TASK: &str = "[[task]]\nname = \"a\"\nkind = \"periodic\"\nwcet = 1\nperiod = 4\n";

#[test]
fn a_missing_horizon_is_named() {
    assert_eq!(
        error(GOOD_TASK),
        "sets/bad.toml:1:1: horizon: is required (simulated length, in the set's unit)"
    );
}

#[test]
fn an_unknown_kind_points_at_its_line() {
    let text = "horizon = 10\n[[task]]\nname = \"a\"\nkind = \"sporadic\"\nwcet = 1\nperiod = 4\n";
    assert_eq!(
        error(text),
        "sets/bad.toml:4:8: task[0].kind: must be \"periodic\" or \"cbs\" (got \"sporadic\")"
    );
}

#[test]
fn a_zero_budget_points_at_its_value() {
    let text = "horizon = 10\n[[task]]\nname = \"s\"\nkind = \"cbs\"\nbudget = 0\nperiod = 8\njobs = [[0, 1]]\n";
    assert_eq!(
        error(text),
        "sets/bad.toml:5:10: task[0].budget: must be greater than 0 (got 0)"
    );
}

#[test]
fn a_misspelt_field_is_a_syntax_error_with_its_line() {
    let text = format!("horizon = 10\n{GOOD_TASK}wcett = 3\n");
    let message = error(&text);
    assert!(
        message.starts_with("sets/bad.toml:7:1: (syntax): unknown field `wcett`"),
        "{message}"
    );
}

#[test]
fn a_job_needs_arrival_and_execution() {
    let text = "horizon = 10\n[[task]]\nname = \"s\"\nkind = \"cbs\"\nbudget = 1\nperiod = 8\njobs = [[0, 1], [3]]\n";
    assert_eq!(
        error(text),
        "sets/bad.toml:7:17: task[0].jobs[1]: must be [arrival, execution] (got 1 numbers)"
    );
}

#[test]
fn decreasing_arrivals_are_refused() {
    let text = "horizon = 10\n[[task]]\nname = \"s\"\nkind = \"cbs\"\nbudget = 1\nperiod = 8\njobs = [[5, 1], [3, 1]]\n";
    assert!(error(text).contains("task[0].jobs[1]: arrivals must not decrease"));
}

#[test]
fn names_must_be_unique() {
    let text = format!("horizon = 10\n{GOOD_TASK}{GOOD_TASK}");
    assert_eq!(
        error(&text),
        "sets/bad.toml:8:8: task[1].name: must be unique (\"a\" is used by an earlier task)"
    );
}

#[test]
fn a_field_of_the_other_kind_is_refused() {
    let text = format!("horizon = 10\n{GOOD_TASK}budget = 2\n");
    assert_eq!(
        error(&text),
        "sets/bad.toml:7:10: task[0].budget: does not apply to kind = \"periodic\""
    );
}

#[test]
fn a_bad_unit_is_explained() {
    let text = format!("unit = \"1 parsec\"\nhorizon = 10\n{GOOD_TASK}");
    assert_eq!(
        error(&text),
        "sets/bad.toml:1:8: unit: must be ns, us, ms or s, optionally after a positive whole number (1ms, 100us; got \"1 parsec\")"
    );
}

#[test]
fn broken_toml_reports_where() {
    let message = error("horizon = \n");
    assert!(message.starts_with("sets/bad.toml:1:"), "{message}");
    assert!(message.contains("(syntax)"), "{message}");
}

#[test]
fn an_unreadable_file_is_named() {
    let Err(e) = qf_sim::load(Path::new("/nonexistent/set.toml")) else {
        panic!("loaded a missing file");
    };
    assert_eq!(
        e.to_string(),
        "cannot read /nonexistent/set.toml: No such file or directory (os error 2)"
    );
}

#[test]
fn a_file_too_large_for_a_task_set_is_not_read_whole() {
    // /dev/zero never ends: the read stops past the limit instead of filling memory.
    let Err(e) = qf_sim::load(Path::new("/dev/zero")) else {
        panic!("loaded /dev/zero");
    };
    assert_eq!(
        e.to_string(),
        "cannot read /dev/zero: larger than 64 MiB, more than a task set needs"
    );
}

#[test]
fn a_bare_unit_means_one_of_it() {
    for (unit, ns) in [
        ("ms", 1_000_000),
        ("us", 1_000),
        ("s", 1_000_000_000),
        ("ns", 1),
    ] {
        let text = format!("unit = \"{unit}\"\nhorizon = 10\n{GOOD_TASK}");
        let set = qf_sim::parse(Path::new("set.toml"), &text).expect(unit);
        assert_eq!((set.unit_ns, set.unit_name.as_str()), (ns, unit));
    }
}

/// Every task set the documentation shows parses: the crate docs' example and examples/.
#[test]
fn every_documented_task_set_parses() {
    let docs = include_str!("../src/lib.rs");
    let block: String = docs
        .split("//! ```toml\n")
        .nth(1)
        .and_then(|rest| rest.split("//! ```\n").next())
        .expect("the crate docs show a task set")
        .lines()
        .map(|line| {
            format!(
                "{}\n",
                line.trim_start_matches("//!").trim_start_matches(' ')
            )
        })
        .collect();
    qf_sim::parse(Path::new("src/lib.rs"), &block).expect("the crate docs' task set parses");
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut seen = 0;
    for entry in std::fs::read_dir(&examples).expect("examples/") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "toml") {
            qf_sim::load(&path).unwrap_or_else(|e| panic!("{e}"));
            seen += 1;
        }
    }
    assert!(seen >= 3, "{seen} task sets in examples/");
}
