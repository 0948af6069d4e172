//! The built `qf` with its standard output a pipe whose reader is gone (`qf status | head -c0`):
//! `qf status` and `qf replay` end quietly with status 141 (128 + SIGPIPE), nothing on stderr
//! (`qf sim`'s own case is in `qf_sim.rs`). `qf status`'s input is held back (a status server
//! that answers late) until the reader is closed, and `qf replay` starts with its reader already
//! closed, so `qf` cannot have written before. And the other side of the rule: a broken pipe that is *not* standard
//! output (the MCU's socket) is an error with a message, not a quiet 141.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

fn qf() -> Command {
    Command::new(env!("CARGO_BIN_EXE_qf"))
}

/// Spawns `command` with stdout and stderr piped, and closes the read end of stdout at once.
fn spawn_with_stdout_closed(command: &mut Command) -> Child {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("qf starts");
    drop(child.stdout.take());
    child
}

fn assert_quiet_141(output: &Output, what: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(141), "{what}: stderr: {stderr}");
    assert_eq!(stderr, "", "{what}");
}

/// A status socket that answers `qf status` with `status` once `release` says so.
fn late_status_server(path: &Path, status: String) -> mpsc::Sender<()> {
    let listener = UnixListener::bind(path).unwrap();
    let (release, released) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut line = String::new();
        BufReader::new(&stream).read_line(&mut line).unwrap();
        assert_eq!(line, "status\n");
        released.recv().unwrap();
        let mut writer = &stream;
        writer.write_all(status.as_bytes()).unwrap();
        writer.write_all(b"\n").unwrap();
    });
    release
}

#[test]
fn qf_status_ends_quietly_on_a_closed_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let status = serde_json::to_string(&qf_agent::daemon::Status::default()).unwrap();
    for json in [false, true] {
        let socket = dir.path().join(format!("status-{json}.sock"));
        let release = late_status_server(&socket, status.clone());
        let mut command = qf();
        command.arg("status").arg("--socket").arg(&socket);
        if json {
            command.arg("--json");
        }
        let child = spawn_with_stdout_closed(&mut command);
        release.send(()).unwrap();
        let output = child.wait_with_output().unwrap();
        assert_quiet_141(
            &output,
            if json {
                "qf status --json"
            } else {
                "qf status"
            },
        );
    }
}

/// `TASK.DOMAIN.csv` traces of one latency.
fn write_traces(dir: &Path) {
    for (name, latency_us) in [("stage.linux", 2_000.0), ("stage.mcu", 500.0)] {
        let mut text = String::from("latency_us,ok\n");
        for _ in 0..300 {
            text.push_str(&format!("{latency_us},1\n"));
        }
        std::fs::write(dir.join(format!("{name}.csv")), text).unwrap();
    }
}

/// Runs `command` with stdout and stderr piped, stdout's reader closed before it starts.
fn output_with_stdout_closed(command: &mut Command) -> Output {
    let (reader, writer) = nix::unistd::pipe().expect("pipe");
    drop(reader);
    command
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .output()
        .expect("qf runs")
}

#[test]
fn qf_replay_ends_quietly_on_a_closed_stdout() {
    let dir = tempfile::tempdir().unwrap();
    write_traces(dir.path());
    let chain = "[[task]]\nname = \"stage\"\neffect = \"pure\"\ndomains = [\"linux\", \"mcu\"]\nstart = \"linux\"\ndeadline_us = 1000\n";
    for json in [false, true] {
        let chain_path = dir.path().join("chain.toml");
        std::fs::write(&chain_path, chain).unwrap();
        let mut command = qf();
        command
            .arg("replay")
            .arg("--chain")
            .arg(&chain_path)
            .arg("--traces")
            .arg(dir.path())
            .args(["--policy", "recovery", "--observations", "200"]);
        if json {
            command.arg("--json");
        }
        let output = output_with_stdout_closed(&mut command);
        assert_quiet_141(
            &output,
            if json {
                "qf replay --json"
            } else {
                "qf replay"
            },
        );
    }
}

/// An MCU endpoint that answers the first request (with the dispatcher) after shutting its
/// reading side, so the client's next request gets EPIPE: a broken pipe that is not stdout.
fn mcu_answering_once(path: &Path) {
    let listener = UnixListener::bind(path).unwrap();
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut body = [0u8; qf_execution::wire::MAX_MESSAGE_LEN];
        let (mut input, mut output) = (&stream, &stream);
        let Ok(Some(len)) = qf_execution::wire::read_message(&mut input, &mut body) else {
            return;
        };
        let mut reply = [0u8; qf_abi::MAX_FRAME_LEN];
        let mut replay: qf_tasks::Replay = qf_tasks::Replay::new();
        let served = qf_tasks::serve(&body[..len], &mut reply, &|| 0u64, &mut replay).unwrap();
        stream.shutdown(std::net::Shutdown::Read).unwrap();
        qf_execution::wire::write_message(&mut output, &reply[..served.len], None).unwrap();
        std::thread::sleep(Duration::from_secs(30));
    });
}

/// Before, `qf profile` against an MCU that went away between two calls exited 141 without a
/// word: the socket's EPIPE was taken for a closed stdout.
#[test]
fn a_broken_mcu_socket_is_an_error_with_a_message_not_a_quiet_141() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("mcu.sock");
    mcu_answering_once(&socket);
    let output = qf()
        .arg("profile")
        .arg("--out")
        .arg(dir.path().join("out"))
        .args(["--tasks", "add", "--domains", "mcu", "--samples", "10"])
        .args(["--warmup", "0", "--quiet", "--executor", "/nonexistent"])
        .arg("--mcu-socket")
        .arg(&socket)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "stderr: {stderr}");
    assert!(
        stderr.contains("qf: error:") && stderr.contains("Broken pipe"),
        "{stderr}"
    );
}
