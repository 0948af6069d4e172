//! The host side of differential testing against `qf sim` itself: 1000 generated sets run
//! in-process, the comparator on seeded perturbations of their logs, and the shrinker on a
//! real injected scheduling difference.

use qf_differential::compare::{compare, read_log, Class, Row, Tick, Verdict, MAX_BYTES};
use qf_differential::generate::generate;
use qf_differential::run::simulate_csv;
use qf_differential::shrink::shrink;
use qf_differential::spec::SetSpec;
use qf_sim::TaskSet;

const SETS: u64 = 1000;

fn log_of(set: &TaskSet) -> Vec<Row> {
    let run = simulate_csv(set);
    read_log("(qf sim)", run.csv.as_bytes()).expect("qf sim's own log reads back")
}

#[derive(Default, Debug)]
struct Coverage {
    min_utilisation: f64,
    max_utilisation: f64,
    sets_with_misses: u64,
    sets_with_period_overruns: u64,
    sets_with_soft_overruns: u64,
    sets_with_hard_overruns: u64,
    sets_with_throttles: u64,
    admission_sets: u64,
    sets_with_refusals: u64,
    constrained_deadlines: u64,
    offsets: u64,
}

#[test]
fn a_thousand_generated_sets_cover_overload_reservations_and_admission() {
    let mut c = Coverage {
        min_utilisation: f64::MAX,
        ..Coverage::default()
    };
    for seed in 0..SETS {
        let spec = generate(seed);
        assert_eq!(spec, generate(seed), "seed {seed}: not deterministic");
        assert!((2..=6).contains(&spec.task.len()), "seed {seed}");
        let set = spec
            .validate()
            .unwrap_or_else(|e| panic!("seed {seed}: qf sim refuses the set: {e}"));
        let u = spec.utilisation();
        c.min_utilisation = c.min_utilisation.min(u);
        c.max_utilisation = c.max_utilisation.max(u);
        let run = simulate_csv(&set);
        let stats = &run.outcome.stats;
        c.sets_with_misses += u64::from(stats.iter().any(|s| s.deadline_misses > 0));
        c.sets_with_period_overruns += u64::from(stats.iter().any(|s| s.period_overruns > 0));
        let overrun = |hard: bool| {
            spec.task.iter().zip(stats).any(|(t, s)| {
                t.is_cbs() && t.hard_reservation == Some(hard) && s.budget_overruns > 0
            })
        };
        c.sets_with_soft_overruns += u64::from(overrun(false));
        c.sets_with_hard_overruns += u64::from(overrun(true));
        c.sets_with_throttles += u64::from(run.csv.contains(",THROTTLE,"));
        let refused = stats.iter().any(|s| s.rejected.is_some());
        if spec.admission_bound.is_some() {
            c.admission_sets += 1;
            c.sets_with_refusals += u64::from(refused);
        } else {
            assert!(
                !refused,
                "seed {seed}: a refusal with admission control off"
            );
        }
        for task in &spec.task {
            if let (Some(d), Some(t)) = (task.deadline, task.period) {
                assert!(d <= task.period.unwrap_or(0), "seed {seed}: D > T");
                c.constrained_deadlines += u64::from(d < t);
            }
            c.offsets += u64::from(task.offset.is_some_and(|o| o > 0));
        }
        // The simulator's log read back equals itself.
        let rows = read_log("(qf sim)", run.csv.as_bytes()).expect("reads back");
        assert_eq!(rows.len(), run.outcome.events.len());
        assert_eq!(compare(&rows, &rows, Tick::of(&set)), Verdict::Equal);
    }
    eprintln!("{c:?}");
    assert!(c.min_utilisation < 0.35, "{c:?}");
    assert!(c.max_utilisation > 1.15, "{c:?}");
    // Each behaviour in a good share of the sets, not by luck in one.
    let share = SETS / 20;
    assert!(c.sets_with_misses > share, "{c:?}");
    assert!(c.sets_with_period_overruns > share, "{c:?}");
    assert!(c.sets_with_soft_overruns > share, "{c:?}");
    assert!(c.sets_with_hard_overruns > share, "{c:?}");
    assert!(c.sets_with_throttles > share, "{c:?}");
    assert!(c.admission_sets > share, "{c:?}");
    assert!(c.sets_with_refusals > c.admission_sets / 10, "{c:?}");
    assert!(c.constrained_deadlines > share, "{c:?}");
    assert!(c.offsets > share, "{c:?}");
}

/// The tick of `set` in millionths of its unit (whole at 1 kHz and 10 kHz in 1 ms units).
fn tick_micro(set: &TaskSet) -> i128 {
    1_000_000_000_000_000 / (i128::from(set.tick_hz) * i128::from(set.unit_ns))
}

#[test]
fn seeded_perturbations_are_classified() {
    let (mut shifted, mut dropped, mut moved) = (0, 0, 0);
    // Swaps at one instant: other tasks' non-switch rows (open), one task's rows, two
    // switches, a switch and another task's row (all three fixed by the rules).
    let mut swapped = [0u64; 4];
    for seed in 0..SETS {
        let set = generate(seed).validate().expect("valid");
        let tick = Tick::of(&set);
        let rows = log_of(&set);
        if rows.len() < 3 {
            continue;
        }
        let k = (seed as usize * 7919) % rows.len();

        // One row one tick later (as long as it stays in time order).
        let mut run = rows.clone();
        run[k].time += tick_micro(&set);
        if rows.get(k + 1).is_none_or(|next| next.time >= run[k].time) {
            match compare(&rows, &run, tick) {
                Verdict::ByDesign { first, count: 1 } => {
                    assert_eq!(first.class, Class::TickBoundary, "seed {seed}");
                    assert_eq!(first.index, k, "seed {seed}");
                }
                other => panic!("seed {seed}: one-tick shift of row {k}: {other:?}"),
            }
            shifted += 1;
        }
        // Two ticks is no tick boundary.
        run[k].time += tick_micro(&set);
        assert!(compare(&rows, &run, tick).is_mismatch(), "seed {seed}");

        // A row dropped.
        let mut run = rows.clone();
        run.remove(k);
        assert!(
            compare(&rows, &run, tick).is_mismatch(),
            "seed {seed}: drop {k}"
        );
        dropped += 1;

        // The first row moved to the end of the log.
        let last = rows[rows.len() - 1].time;
        if last - rows[0].time > 2 * tick_micro(&set) {
            let mut run = rows.clone();
            let first = run.remove(0);
            run.push(first);
            assert!(
                compare(&rows, &run, tick).is_mismatch(),
                "seed {seed}: move"
            );
            moved += 1;
        }

        // Two adjacent rows at one instant swapped: the first such pair of each kind.
        let mut seen = [false; 4];
        for i in 0..rows.len() - 1 {
            let (a, b) = (&rows[i], &rows[i + 1]);
            if a.time != b.time || a.same_as(b) {
                continue;
            }
            let kind = match (a.task == b.task, a.is_switch(), b.is_switch()) {
                (false, false, false) => 0,
                (true, _, _) => 1,
                (false, true, true) => 2,
                (false, _, _) => 3,
            };
            if std::mem::replace(&mut seen[kind], true) {
                continue;
            }
            let mut run = rows.clone();
            run.swap(i, i + 1);
            let verdict = compare(&rows, &run, tick);
            if kind == 0 {
                match verdict {
                    Verdict::ByDesign { first, count: 1 } => {
                        assert_eq!(first.class, Class::SimultaneousOrder, "seed {seed}");
                        assert_eq!(first.index, i, "seed {seed}");
                    }
                    other => panic!("seed {seed}: rows {i}, {} swapped: {other:?}", i + 1),
                }
            } else {
                assert!(verdict.is_mismatch(), "seed {seed}: {a} / {b}: {verdict:?}");
            }
            swapped[kind] += 1;
        }
    }
    let counts = format!("shifted {shifted} dropped {dropped} moved {moved} swapped {swapped:?}");
    eprintln!("{counts}");
    for count in [shifted, dropped, moved].into_iter().chain(swapped) {
        assert!(count > SETS / 10, "{counts}");
    }
}

/// The injected scheduling difference: a "kernel" that ignores hard reservations (it runs
/// every CBS task as a soft one).
fn ignores_hard_reservations(spec: &SetSpec, set: &TaskSet) -> bool {
    let mut soft = spec.clone();
    for task in &mut soft.task {
        task.hard_reservation = None;
    }
    let soft = soft.validate().expect("still valid");
    compare(&log_of(set), &log_of(&soft), Tick::of(set)).is_mismatch()
}

#[test]
fn the_shrinker_reduces_an_injected_difference_to_one_hard_task_and_one_job() {
    let mut shrunk_sets = 0;
    for seed in 0..SETS {
        let spec = generate(seed);
        let set = spec.validate().expect("valid");
        if spec.task.len() < 4 || !ignores_hard_reservations(&spec, &set) {
            continue;
        }
        let shrunk = shrink(&spec, 20_000, ignores_hard_reservations);
        assert!(!shrunk.limited, "seed {seed}: {shrunk:?}");
        let min = &shrunk.set;
        assert!(
            ignores_hard_reservations(min, &min.validate().expect("valid")),
            "seed {seed}"
        );
        assert_eq!(min.task.len(), 1, "seed {seed}: {}", min.to_toml());
        let task = &min.task[0];
        let jobs = task.jobs.as_deref().unwrap_or_default();
        assert!(
            task.is_cbs() && task.hard_reservation == Some(true),
            "seed {seed}"
        );
        assert_eq!(jobs.len(), 1, "seed {seed}: {}", min.to_toml());
        // The smallest difference: a job one unit over a one-unit budget, arriving at 0,
        // seen within the shortest horizon that shows it.
        assert_eq!(jobs[0], [0, 2], "seed {seed}: {}", min.to_toml());
        assert_eq!(task.budget, Some(1), "seed {seed}: {}", min.to_toml());
        assert!(min.horizon <= 3, "seed {seed}: {}", min.to_toml());
        assert!(min.admission_bound.is_none(), "seed {seed}");
        shrunk_sets += 1;
        if shrunk_sets == 5 {
            break;
        }
    }
    assert_eq!(shrunk_sets, 5);
}

#[test]
fn bad_logs_get_errors_naming_line_and_field() {
    let err = |text: &str| read_log("x.csv", text.as_bytes()).unwrap_err().to_string();
    assert!(err("").contains("x.csv:0: (header): is missing"));
    assert!(err("time,task,event,budget\n").contains("x.csv:1: (row): has 4 fields"));
    assert!(
        err("a,b,c,d,e\n").contains("x.csv:1: (header): must be time,task,event,budget,deadline")
    );
    let header = "time,task,event,budget,deadline\n";
    assert!(err(&format!("{header}1.5,t,RELEASE,0,x\n"))
        .contains("x.csv:2: deadline: must be a non-negative decimal"));
    assert!(err(&format!("{header}1.1234567,t,RELEASE,0,1\n")).contains("x.csv:2: time:"));
    assert!(err(&format!("{header}-1,t,RELEASE,0,1\n")).contains("x.csv:2: time:"));
    assert!(
        err(&format!("{header}1,,RELEASE,0,1\n")).contains("x.csv:2: task: must be 1 to 64 bytes")
    );
    let long = "y".repeat(500);
    let message = err(&format!("{header}1,{long},RELEASE,0,1\n"));
    assert!(
        message.contains("(500 bytes)") && message.len() < 200,
        "{message}"
    );
    // A reader that never ends is refused once it passes the limit.
    let forever = std::io::repeat(b'1');
    let error = read_log("endless", forever).unwrap_err();
    assert_eq!(error.rule, format!("larger than {} MiB", MAX_BYTES >> 20));
    // Good rows read.
    let rows = read_log("ok", format!("{header}0.5,t,SWT_TO,1.25,10\n").as_bytes()).unwrap();
    assert_eq!(
        (rows[0].time, rows[0].budget, rows[0].line),
        (500_000, 1_250_000, 2)
    );
}
