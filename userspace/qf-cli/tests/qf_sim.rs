//! `qf sim` end to end: the binary writes every output, prints a JSON summary on request, and
//! refuses a bad file with a message naming it, with a failing exit status; a closed stdout
//! (`qf sim ... --json | head -c 0`) ends it quietly with status 141 (128 + SIGPIPE).

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};

fn qf() -> Command {
    Command::new(env!("CARGO_BIN_EXE_qf"))
}

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("qf-cli-test-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

#[test]
fn sim_writes_schedule_events_and_gantt() {
    let dir = scratch("outputs");
    let output = qf()
        .arg("sim")
        .arg(example("test-case-1.toml"))
        .arg("--schedule")
        .arg(dir.join("s.csv"))
        .arg("--events")
        .arg(dir.join("e.csv"))
        .arg("--gantt")
        .arg(dir.join("nested/g.svg"))
        .output()
        .expect("qf runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("hard1") && stdout.contains("cbs1"),
        "{stdout}"
    );
    let schedule = std::fs::read_to_string(dir.join("s.csv")).expect("schedule written");
    assert!(
        schedule.starts_with("start,end,task\n0,4,hard1\n4,7,cbs1\n"),
        "{schedule}"
    );
    let events = std::fs::read_to_string(dir.join("e.csv")).expect("events written");
    assert!(events.starts_with("time,task,event,budget,deadline\n"));
    assert!(events.contains("3,cbs1,B_COND,3,11\n") && events.contains("7,cbs1,B_ROUT,3,19\n"));
    let svg = std::fs::read_to_string(dir.join("nested/g.svg")).expect("gantt written");
    assert!(
        svg.starts_with("<svg") && svg.contains("B_ROUT") && svg.trim_end().ends_with("</svg>")
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn sim_json_summary_is_machine_readable() {
    let output = qf()
        .args(["sim", "--json"])
        .arg(example("test-case-2.toml"))
        .output()
        .expect("qf runs");
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout);
    for expected in [
        "\"name\": \"hard2\"",
        "\"deadline_misses\": 0",
        "\"kind\": \"cbs\"",
        "\"budget_overruns\": 2",
    ] {
        assert!(text.contains(expected), "{expected} missing from {text}");
    }
}

#[test]
fn sim_refuses_a_bad_file_naming_file_line_and_field() {
    let dir = scratch("bad");
    let path = dir.join("bad.toml");
    std::fs::write(
        &path,
        "horizon = 10\n[[task]]\nname = \"x\"\nkind = \"periodic\"\nwcet = 0\nperiod = 4\n",
    )
    .expect("write");
    let output = qf().arg("sim").arg(&path).output().expect("qf runs");
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "{}:5:8: task[0].wcet: must be greater than 0 (got 0)",
            path.display()
        )),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn qf_sim_stops_quietly_when_stdout_is_closed() {
    // The task set comes through a FIFO, so `qf` cannot write before the reader is gone.
    let dir = std::env::temp_dir().join(format!("qf-closed-pipe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let fifo = dir.join("set.toml");
    let _ = std::fs::remove_file(&fifo);
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    let mut child = qf()
        .arg("sim")
        .arg(&fifo)
        .arg("--json")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("qf starts");
    drop(child.stdout.take());
    let text = std::fs::read(example("test-case-1.toml")).expect("example");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&fifo)
        .and_then(|mut f| f.write_all(&text))
        .expect("task set written to the FIFO");
    let output = child.wait_with_output().expect("qf ends");
    let _ = std::fs::remove_dir_all(&dir);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(141), "stderr: {stderr}");
    assert_eq!(stderr, "");
}
