//! `qf sim` as a command (through `qf_sim::cli::run`): streamed outputs equal the recorded
//! trace, long runs are refused before they start, and outputs that cannot hold a run say so.

use std::path::{Path, PathBuf};

use qf_sim::cli::{run, SimArgs, DEFAULT_MAX_EVENTS};
use qf_sim::clock::Clock;
use qf_sim::output::csv;
use qf_sim::{simulate, Options};

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

fn args(taskset: PathBuf) -> SimArgs {
    SimArgs {
        taskset,
        schedule: None,
        events: None,
        gantt: None,
        golden_c: None,
        json: true,
        max_events: DEFAULT_MAX_EVENTS,
    }
}

#[test]
fn streamed_csv_files_equal_the_recorded_trace() {
    let dir = tempfile::tempdir().expect("temporary directory");
    for name in ["test-case-1.toml", "test-case-2.toml", "edf-60.toml"] {
        let (schedule, events) = (dir.path().join("s.csv"), dir.path().join("e.csv"));
        run(&SimArgs {
            schedule: Some(schedule.clone()),
            events: Some(events.clone()),
            ..args(example(name))
        })
        .expect("simulates");
        let set = qf_sim::load(&example(name)).expect("loads");
        let clock = Clock {
            tick_hz: set.tick_hz,
            unit_ns: set.unit_ns,
            origin_ticks: 0,
        };
        let outcome = simulate(&set, Options::default());
        let mut want_schedule = csv::SCHEDULE_HEADER.as_bytes().to_vec();
        for slice in &outcome.slices {
            csv::write_slice(&mut want_schedule, &set, &clock, slice).expect("in memory");
        }
        let mut want_events = csv::EVENTS_HEADER.as_bytes().to_vec();
        for event in &outcome.events {
            csv::write_event(&mut want_events, &set, &clock, event).expect("in memory");
        }
        assert!(outcome.events.len() > 20, "{name}: a trace worth comparing");
        assert_eq!(
            std::fs::read(&schedule).expect("written"),
            want_schedule,
            "{name}"
        );
        assert_eq!(
            std::fs::read(&events).expect("written"),
            want_events,
            "{name}"
        );
    }
}

#[test]
fn a_run_beyond_max_events_is_refused_before_it_starts() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let text = std::fs::read_to_string(example("test-case-1.toml")).expect("example");
    let longer = |horizon: &str| {
        let path = dir.path().join(format!("h{horizon}.toml"));
        std::fs::write(
            &path,
            text.replace("horizon = 35", &format!("horizon = {horizon}")),
        )
        .expect("written");
        path
    };
    // 10^7 ms: 1428572 jobs of hard1 and 5 budgets of the CBS, about 4 events each.
    let path = longer("10000000");
    let error = run(&SimArgs {
        max_events: 1_000_000,
        ..args(path.clone())
    })
    .expect_err("over a million events");
    assert_eq!(
        format!("{error:#}"),
        format!(
            "{}: horizon 10000000 x 1ms means about 5714308 simulator events, more than \
             --max-events 1000000; pass --max-events 5714308 (or more) to run it anyway",
            path.display()
        )
    );
    // 10^12 ms, refused by the default limit (it would run for hours).
    let error = run(&args(longer("1000000000000"))).expect_err("refused");
    assert!(
        format!("{error:#}").contains("more than --max-events 1000000000;"),
        "{error:#}"
    );
    // At the limit it runs.
    let short = example("test-case-1.toml");
    run(&SimArgs {
        max_events: 40,
        ..args(short)
    })
    .expect("within the limit");
}

#[test]
fn a_golden_header_that_cannot_hold_the_run_is_refused() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let long = dir.path().join("long.toml");
    let text = std::fs::read_to_string(example("test-case-1.toml")).expect("example");
    std::fs::write(&long, text.replace("horizon = 35", "horizon = 400000")).expect("written");
    let header = dir.path().join("golden_long.h");
    let error = run(&SimArgs {
        golden_c: Some(header.clone()),
        ..args(long)
    })
    .expect_err("more events than uint16_t counts");
    assert_eq!(
        format!("{error:#}"),
        format!(
            "--golden-c {}: the run has more than 65535 events, more than this output holds; \
             shorten the horizon",
            header.display()
        )
    );
    assert!(!header.exists(), "nothing half-written");
}

#[test]
fn a_golden_header_named_after_a_c_keyword_is_refused() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let header = dir.path().join("int.h");
    let error = run(&SimArgs {
        golden_c: Some(header.clone()),
        ..args(example("test-case-1.toml"))
    })
    .expect_err("`int` names no C object");
    assert_eq!(
        format!("{error:#}"),
        format!(
            "--golden-c {}: the C object would be named `int`, a C keyword; name the file \
             after a valid C identifier (e.g. golden_int.h)",
            header.display()
        )
    );
    assert!(!header.exists());
}

#[test]
fn an_output_that_is_another_output_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let same = dir.path().join("out.csv");
    // The same file spelt another way, through a directory that does not exist yet.
    let respelt = dir.path().join("new/../out.csv");
    let error = run(&SimArgs {
        schedule: Some(same.clone()),
        events: Some(respelt.clone()),
        ..args(example("test-case-1.toml"))
    })
    .expect_err("refused");
    assert_eq!(
        error.to_string(),
        format!(
            "--schedule {} and --events {} are the same file: each output needs its own",
            same.display(),
            respelt.display()
        )
    );
    assert!(!same.exists() && !dir.path().join("new").exists());

    // An existing file and a symbolic link to it.
    std::fs::write(&same, "kept").expect("write");
    let link = dir.path().join("link.svg");
    std::os::unix::fs::symlink(&same, &link).expect("symlink");
    let error = run(&SimArgs {
        events: Some(same.clone()),
        gantt: Some(link.clone()),
        ..args(example("test-case-1.toml"))
    })
    .expect_err("refused");
    assert!(error.to_string().starts_with("--events "), "{error}");
    assert!(error.to_string().contains(" and --gantt "), "{error}");
    assert_eq!(std::fs::read_to_string(&same).expect("read"), "kept");
}

#[test]
fn an_output_that_is_the_task_set_is_refused_and_the_set_kept() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let set = dir.path().join("set.toml");
    let original = std::fs::read_to_string(example("test-case-1.toml")).expect("example");
    std::fs::write(&set, &original).expect("write");
    let hard_link = dir.path().join("also.h");
    std::fs::hard_link(&set, &hard_link).expect("hard link");
    for (output, flag) in [
        (set.clone(), "--schedule"),
        (hard_link.clone(), "--golden-c"),
    ] {
        let mut sim = args(set.clone());
        match flag {
            "--schedule" => sim.schedule = Some(output.clone()),
            _ => sim.golden_c = Some(output.clone()),
        }
        let error = run(&sim).expect_err("refused");
        assert_eq!(
            error.to_string(),
            format!(
                "{flag} {} is the task set {}: it would be overwritten; choose another file",
                output.display(),
                set.display()
            )
        );
        assert_eq!(std::fs::read_to_string(&set).expect("read"), original);
    }
}
