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

/// Runs `qf sim FILE` with its address space limited to `limit_kib` (`ulimit -v`): an input
/// that makes it allocate more aborts it (status 134) instead of being refused.
fn sim_within(limit_kib: u64, file: &std::path::Path) -> std::process::Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {limit_kib} && exec \"$0\" sim \"$1\""))
        .arg(env!("CARGO_BIN_EXE_qf"))
        .arg(file)
        .output()
        .expect("sh runs")
}

#[test]
fn sim_refuses_too_many_tasks_or_values_within_256_mib() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let limit = qf_sim::taskset::MAX_FILE_BYTES as usize - 256;
    let write = |name: &str, head: &str, item: &dyn Fn(usize) -> String| {
        let mut text = String::from(head);
        let mut i = 0;
        while text.len() < limit {
            text += &item(i);
            i += 1;
        }
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("write");
        path
    };
    // Just under the size limit: 130 000 tasks (the parser took 411 MB for them), then as
    // many unknown keys (321 MB), each refused at the first one past its limit.
    let tasks = write("tasks.toml", "horizon = 10\n", &|i| {
        format!("[[task]]\nname = \"t{i}\"\nkind = \"periodic\"\nwcet = 1\nperiod = 40\n")
    });
    let keys = write("keys.toml", "horizon = 10\n", &|i| format!("k{i} = 1\n"));
    for (path, expected) in [
        (
            &tasks,
            ":322:2: task: at most 64 tasks are supported (this is task 65)",
        ),
        (
            &keys,
            ":152049:1: (file): more than 304096 TOML keys and values",
        ),
    ] {
        let output = sim_within(256 << 10, path);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains(&format!("{}{expected}", path.display())),
            "{stderr}"
        );
    }
    // The largest set accepted (100 000 CBS jobs) runs within the same bound.
    let jobs = dir.path().join("jobs.toml");
    let mut text = String::from(
        "horizon = 10\n[[task]]\nname = \"s\"\nkind = \"cbs\"\nbudget = 1\nperiod = 8\njobs = [\n",
    );
    for arrival in 0..qf_sim::taskset::MAX_JOBS {
        text += &format!("[{arrival}, 1],\n");
    }
    text += "]\n";
    std::fs::write(&jobs, text).expect("write");
    let output = sim_within(256 << 10, &jobs);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn sim_refuses_a_fifo_nobody_writes_to_in_bounded_time() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let fifo = dir.path().join("set.toml");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    let mut child = qf()
        .arg("sim")
        .arg(&fifo)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("qf starts");
    // A watchdog far beyond the 10 s qf waits, so that a qf blocked in open() fails the test
    // instead of hanging it.
    let mut waited = 0;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if waited == 1200 {
            let _ = child.kill();
            let _ = child.wait();
            panic!("qf sim still waits on a FIFO nobody writes to after 120 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        waited += 1;
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut stderr)
        .expect("stderr read");
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr,
        format!(
            "qf: error: cannot read {}: a pipe or FIFO that did not end within 10 s (read 0 \
             bytes); write the task set to a file\n",
            fifo.display()
        )
    );
}
