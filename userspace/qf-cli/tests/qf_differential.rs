//! `qf differential` end to end: generate a set, compare `qf sim`'s log with itself and with a
//! damaged copy, shrink a set against a command that runs `qf sim` with hard reservations
//! taken out.

use std::path::Path;
use std::process::{Command, Output};

fn qf(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_qf"))
        .args(args)
        .output()
        .expect("qf runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn path(p: &Path) -> &str {
    p.to_str().expect("UTF-8 temporary path")
}

/// `qf differential generate --seed SEED --count COUNT --out DIR`, which must succeed; its
/// listing.
fn generate(dir: &Path, seed: u64, count: u64) -> String {
    let (seed, count) = (seed.to_string(), count.to_string());
    let out = qf(&[
        "differential",
        "generate",
        "--seed",
        &seed,
        "--count",
        &count,
        "--out",
        path(dir),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
}

/// `qf differential compare --set SET SIM RUN`.
fn compare(set: &Path, sim: &str, run: &str) -> Output {
    qf(&["differential", "compare", "--set", path(set), sim, run])
}

#[test]
fn generate_then_compare_a_log_with_itself_and_a_damaged_copy() {
    let dir = tempfile::tempdir().unwrap();
    let listing = generate(dir.path(), 7, 3);
    for seed in 7..10 {
        assert!(listing.contains(&format!("seed {seed}: ")), "{listing}");
        assert!(dir.path().join(format!("set-{seed}.toml")).exists());
    }
    let set = dir.path().join("set-7.toml");
    let sim = dir.path().join("sim.csv");
    let out = qf(&["sim", path(&set), "--events", path(&sim)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = compare(&set, path(&sim), path(&sim));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).starts_with("equal: "),
        "{}",
        text(&out.stdout)
    );

    // The third row dropped: a mismatch at row 2 (rows count from 0 after the header).
    let log = std::fs::read_to_string(&sim).unwrap();
    let damaged: Vec<&str> = log
        .lines()
        .enumerate()
        .filter(|&(i, _)| i != 3)
        .map(|(_, l)| l)
        .collect();
    let run = dir.path().join("run.csv");
    std::fs::write(&run, damaged.join("\n") + "\n").unwrap();
    let out = compare(&set, path(&sim), path(&run));
    assert_eq!(out.status.code(), Some(1));
    let error = text(&out.stderr);
    assert!(error.contains("Mismatch at row 2"), "{error}");

    // Bad input names the file.
    let out = compare(&set, path(&sim), "/nonexistent.csv");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("/nonexistent.csv:0: (file): cannot open"),
        "{}",
        text(&out.stderr)
    );
    let out = qf(&[
        "differential",
        "generate",
        "--seed",
        "1",
        "--count",
        "0",
        "--out",
        path(dir.path()),
    ]);
    assert!(!out.status.success());
}

#[test]
fn shrink_against_a_command_that_ignores_hard_reservations() {
    let dir = tempfile::tempdir().unwrap();
    generate(dir.path(), 4, 1);
    let set = dir.path().join("set-4.toml");
    let min = dir.path().join("min.toml");
    // The other run: qf sim on the set with its hard_reservation lines deleted.
    let script = format!(
        "sed /hard_reservation/d \"$1\" > \"$1.soft.toml\" && {} sim \"$1.soft.toml\" --events \"$2\"",
        env!("CARGO_BIN_EXE_qf")
    );
    let out = qf(&[
        "differential",
        "shrink",
        path(&set),
        "--out",
        path(&min),
        "--against",
        "sh",
        "-c",
        &script,
        "sh",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shrunk = std::fs::read_to_string(&min).unwrap();
    assert_eq!(shrunk.matches("[[task]]").count(), 1, "{shrunk}");
    assert!(shrunk.contains("hard_reservation = true"), "{shrunk}");
    assert!(shrunk.contains("jobs = [[0, 2]]"), "{shrunk}");

    // Against qf sim itself nothing mismatches: refused, naming the set.
    let same = format!("{} sim \"$1\" --events \"$2\"", env!("CARGO_BIN_EXE_qf"));
    let out = qf(&[
        "differential",
        "shrink",
        path(&set),
        "--against",
        "sh",
        "-c",
        &same,
        "sh",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let error = text(&out.stderr);
    assert!(
        error.contains("set-4.toml") && error.contains("nothing to shrink"),
        "{error}"
    );
}
