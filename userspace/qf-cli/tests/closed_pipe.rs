//! `qf` whose standard output is closed before it writes (`qf sim ... --json | head -c 0`):
//! it stops quietly with status 141 (128 + SIGPIPE), no panic, no message.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn qf() -> Command {
    Command::new(env!("CARGO_BIN_EXE_qf"))
}

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
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
