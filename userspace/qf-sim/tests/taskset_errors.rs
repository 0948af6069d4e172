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
        "sets/bad.toml:1:8: unit: must be a positive whole number followed by ns, us, ms or s (got \"1 parsec\")"
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
    assert!(
        e.to_string()
            .starts_with("/nonexistent/set.toml:0:0: (file): cannot be read"),
        "{e}"
    );
}
