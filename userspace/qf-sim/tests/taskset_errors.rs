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
fn devices_and_directories_are_refused_without_reading() {
    // /dev/zero never ends: it is refused for what it is, before any read.
    for (path, what) in [("/dev/zero", "a character device"), ("/", "a directory")] {
        let Err(e) = qf_sim::load(Path::new(path)) else {
            panic!("loaded {path}");
        };
        assert_eq!(
            e.to_string(),
            format!(
                "cannot read {path}: {what}: a task set is read from a regular file, a pipe or \
                 a FIFO"
            )
        );
    }
}

#[test]
fn a_pipe_that_never_ends_is_read_only_to_the_size_limit() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let fifo = dir.path().join("set.toml");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
    let writer_path = fifo.clone();
    let written = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counter = written.clone();
    let writer = std::thread::spawn(move || {
        use std::io::Write as _;
        let mut fifo = std::fs::OpenOptions::new()
            .write(true)
            .open(writer_path)
            .expect("FIFO opened for writing");
        let chunk = [b'#'; 1 << 16];
        // Ends when the reader closes its end (a broken pipe).
        while fifo.write_all(&chunk).is_ok() {
            counter.fetch_add(chunk.len() as u64, std::sync::atomic::Ordering::Relaxed);
        }
    });
    let Err(e) = qf_sim::load(&fifo) else {
        panic!("loaded an endless pipe");
    };
    writer.join().expect("writer ends");
    assert_eq!(
        e.to_string(),
        format!(
            "cannot read {}: larger than 8 MiB, the most a task set is read from (64 tasks, \
             100000 jobs)",
            fifo.display()
        )
    );
    // What was read is bounded: the writer got at most a pipe buffer beyond the limit in.
    let limit = qf_sim::taskset::MAX_FILE_BYTES;
    assert!(written.load(std::sync::atomic::Ordering::Relaxed) <= limit + (4 << 20));
}

#[test]
fn a_bare_unit_means_one_of_it() {
    for (unit, ns) in [
        ("ms", 1_000_000),
        ("us", 1_000),
        ("s", 1_000_000_000),
        ("ns", 1),
    ] {
        // A 1 ns tick, so that a period of 4 ns is whole ticks.
        let text = format!("unit = \"{unit}\"\ntick_hz = 1000000000\nhorizon = 10\n{GOOD_TASK}");
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

#[test]
fn a_period_shorter_than_a_tick_is_refused_naming_task_period_and_tick() {
    // Two 30/50 us tasks (U = 1.2) at the default 100 us tick: rounded up to one tick each,
    // the set would run as U = 0.6.
    let text = "unit = \"1us\"\nhorizon = 1000\n[[task]]\nname = \"fast\"\nkind = \"periodic\"\n\
                wcet = 30\nperiod = 50\n";
    assert_eq!(
        error(text),
        "sets/bad.toml:7:10: task[0].period: task \"fast\": period 50 x 1us is shorter than one \
         kernel tick (100 x 1us at tick_hz = 10000), and the kernel rounds it up to whole ticks; \
         lengthen it or raise tick_hz"
    );
    let deadline = "unit = \"1us\"\nhorizon = 1000\n[[task]]\nname = \"d\"\nkind = \"periodic\"\n\
                    wcet = 30\nperiod = 500\ndeadline = 99\n";
    assert!(error(deadline).contains("task[0].deadline: task \"d\": deadline 99 x 1us"));
    let budget = "unit = \"1us\"\nhorizon = 1000\n[[task]]\nname = \"s\"\nkind = \"cbs\"\n\
                  budget = 20\nperiod = 500\njobs = [[0, 5]]\n";
    assert!(error(budget).contains("task[0].budget: task \"s\": budget 20 x 1us"));
}

#[test]
fn periods_and_budgets_off_the_tick_are_named_with_what_rounding_changes() {
    let text = "tick_hz = 250\nhorizon = 30\n[[task]]\nname = \"p\"\nkind = \"periodic\"\n\
                wcet = 1\nperiod = 10\n[[task]]\nname = \"s\"\nkind = \"cbs\"\nbudget = 5\n\
                period = 12\njobs = [[0, 1]]\n";
    let set = qf_sim::parse(Path::new("t.toml"), text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        qf_sim::taskset::rounded_to_ticks(&set),
        vec![
            "task \"p\": period 10 x 1ms is 2.5 ticks at tick_hz = 250; the kernel rounds it up \
             to 3 ticks (12 x 1ms): its utilisation is 0.083333, not 0.1"
                .to_string(),
            "task \"s\": budget 5 x 1ms is 1.25 ticks at tick_hz = 250; the kernel rounds it up \
             to 2 ticks (8 x 1ms): its server's bandwidth is 0.666666, not 0.416666"
                .to_string(),
        ]
    );
    let exact = qf_sim::parse(
        Path::new("t.toml"),
        &text.replace("tick_hz = 250", "tick_hz = 1000"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(qf_sim::taskset::rounded_to_ticks(&exact).is_empty());
}
