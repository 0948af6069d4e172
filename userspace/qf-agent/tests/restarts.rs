//! A restarted client is a new client, not a replay: clients against one MCU (whose replay
//! windows outlive them) never collide with the window an earlier client left, and a DUPLICATE
//! or STALE reply is never scored as a miss nor printed as a result.

mod common;

use common::{journal_entries, spawn_daemon, stop_daemon, wait_for, write_config, Emulator};
use qf_agent::cli::run::RunArgs;
use qf_agent::daemon::query_status;
use std::process::Command;
use std::time::Duration;

fn run_args(mcu: &std::path::Path) -> RunArgs {
    use clap::Parser;
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        run: RunArgs,
    }
    Cli::parse_from([
        "qf",
        "add",
        r#"{"a": 40, "b": 2}"#,
        "--domain",
        "mcu",
        "--mcu-socket",
        mcu.to_str().unwrap(),
    ])
    .run
}

/// Each `qf run` is one client process; before sessions every one after the first got
/// `"status":"duplicate"` (ids started at 1 in every process) and exited 0.
#[test]
fn every_new_qf_run_client_is_served() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcu.sock");
    let emulator = Emulator::serve(&path);
    for _ in 0..3 {
        let printed = run_args(&path).execute().unwrap();
        assert_eq!(printed["status"], "ok", "{printed}");
        assert_eq!(printed["result"]["value"], 42, "{printed}");
    }
    assert_eq!(emulator.mcu.stats().rejected, 0);
}

/// Moves `task`'s replay window on the MCU at `mcu` to `epoch`, as another client would.
fn another_client_at(mcu: &std::path::Path, task: qf_tasks::Task, epoch: u32) {
    use qf_execution::domain::{Domain, McuSocket};
    use qf_execution::workload::{encode_request, random_request};
    let mut frame = [0u8; qf_abi::MAX_FRAME_LEN];
    let len = encode_request(task, &random_request(task, 1), 1, epoch, &mut frame).unwrap();
    let mut socket = McuSocket::connect(mcu, Duration::from_secs(5)).unwrap();
    socket.invoke(&frame[..len]).unwrap();
}

/// `qf run` against an MCU another client moved past its epoch: it re-establishes its session
/// and sends once more (the wall clock's next second is enough against a client that started a
/// second later); against one far ahead, the retry is refused too, and `qf run` fails saying
/// so after exactly two requests, printing no result. Before, one STALE was an error at once.
#[test]
fn qf_run_retries_a_stale_reply_once_in_a_new_session() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcu.sock");
    let emulator = Emulator::serve(&path);
    let next_second = qf_execution::session::Session::from_clock().epoch(0) + 1;
    another_client_at(&path, qf_tasks::Task::Add, next_second);
    let printed = run_args(&path).execute().unwrap();
    assert_eq!(printed["status"], "ok", "{printed}");
    assert_eq!(printed["result"]["value"], 42, "{printed}");
    assert!(printed["epoch"].as_u64() >= Some(u64::from(next_second)));
    // The first attempt was refused unless the clock itself reached the next second first.
    let rejected = emulator.mcu.stats().rejected;
    assert_eq!(rejected, u64::from(printed["stale_retry"].is_object()));

    another_client_at(&path, qf_tasks::Task::Add, u32::MAX - 1);
    let error = format!("{:#}", run_args(&path).execute().unwrap_err());
    assert!(
        error.contains("stale twice") && error.contains("did not run"),
        "{error}"
    );
    assert_eq!(emulator.mcu.stats().rejected, rejected + 2);
}

fn run_daemon(config: &std::path::Path, observations: u32) {
    let status = Command::new(env!("CARGO_BIN_EXE_qfabricd"))
        .arg("--config")
        .arg(config)
        .args(["--observations", &observations.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "{status:?}");
}

/// A restarted `qfabricd` against an MCU that kept its windows: before sessions, the second
/// run's first requests were all DUPLICATE and scored as misses.
#[test]
fn a_restarted_daemon_is_not_taken_for_a_replay() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let emulator = Emulator::serve(&root.join("mcu.sock"));
    let config = write_config(root, "mcu", "mcu_socket = \"mcu.sock\"\n", "");
    run_daemon(&config, 30);
    run_daemon(&config, 30);
    assert_eq!(
        emulator.mcu.stats().rejected,
        0,
        "{:?}",
        emulator.mcu.stats()
    );
    let entries = journal_entries(&root.join("state/decisions.jsonl"));
    let starts: Vec<u64> = entries
        .iter()
        .filter(|e| e["event"] == "start")
        .map(|e| e["epoch_base"].as_u64().unwrap())
        .collect();
    assert_eq!(starts.len(), 2);
    assert!(
        starts[1] > starts[0],
        "the second run starts a newer epoch: {starts:?}"
    );
    assert!(!entries.iter().any(|e| e["event"] == "mcu_rejected"));
}

/// An MCU moved to a far newer epoch by another client answers STALE to everything: the daemon
/// logs and journals each refusal, scores none of them (no misses, no decisions) and keeps
/// running.
#[test]
fn refused_releases_are_never_scored_as_misses() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let mcu = root.join("mcu.sock");
    let emulator = Emulator::serve(&mcu);
    // Another client takes the `fir_x64` window to an epoch the daemon never reaches.
    another_client_at(&mcu, qf_tasks::Task::FirX64, u32::MAX - 1);
    let config = write_config(
        root,
        "mcu",
        "mcu_socket = \"mcu.sock\"\n",
        "[contract]\nwindow = 5\nhysteresis = 1\n",
    );
    let daemon = spawn_daemon(&config);
    let socket = root.join("run/qfabricd.sock");
    wait_for(Duration::from_secs(30), "20 refused releases", || {
        query_status(&socket).is_ok_and(|s| s.rejected_releases >= 20)
    });
    let status = query_status(&socket).unwrap();
    stop_daemon(daemon);
    assert_eq!(status.window_index, 0, "no release was scored: {status:?}");
    assert!(status.last_decisions.is_empty(), "{status:?}");
    let entries = journal_entries(&root.join("state/decisions.jsonl"));
    let refused: Vec<_> = entries
        .iter()
        .filter(|e| e["event"] == "mcu_rejected")
        .collect();
    assert!(refused.len() >= 20);
    assert!(refused
        .iter()
        .all(|e| e["status"] == "stale" && e["new_epoch"].is_u64()));
    assert!(emulator.mcu.stats().rejected >= 20);
}

/// The MCU endpoint restarts under a running daemon: the daemon reports it down (status and
/// journal) while it is, reconnects by itself with bounded backoff and resumes; before
/// reconnection every later call failed with "Broken pipe" while the status said the MCU was up.
#[test]
fn the_daemon_reconnects_to_a_restarted_mcu() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let mcu = root.join("mcu.sock");
    let first = Emulator::serve(&mcu);
    let config = write_config(root, "mcu", "mcu_socket = \"mcu.sock\"\n", "");
    let daemon = spawn_daemon(&config);
    let socket = root.join("run/qfabricd.sock");
    wait_for(Duration::from_secs(30), "MCU replies", || {
        first.mcu.stats().replies >= 10 && query_status(&socket).is_ok()
    });
    drop(first);
    wait_for(Duration::from_secs(10), "the MCU reported down", || {
        query_status(&socket).is_ok_and(|s| !s.mcu_available && s.mcu_down_reason.is_some())
    });
    let second = Emulator::serve(&mcu);
    wait_for(
        Duration::from_secs(10),
        "the MCU back up and serving",
        || second.mcu.stats().replies >= 10 && query_status(&socket).is_ok_and(|s| s.mcu_available),
    );
    stop_daemon(daemon);
    let events: Vec<String> = journal_entries(&root.join("state/decisions.jsonl"))
        .iter()
        .filter_map(|e| e["event"].as_str().map(str::to_owned))
        .filter(|e| e.starts_with("mcu_"))
        .collect();
    assert_eq!(events, ["mcu_down", "mcu_up"], "{events:?}");
    assert_eq!(second.mcu.stats().rejected, 0);
}

/// A daemon on the board's `rpmsg_char` (`mcu_rpmsg = true`) whose MCU channel is not there:
/// the endpoint is kept and reported down with the reason (status and the journal's `start`)
/// until the channel appears. Before, the rpmsg endpoint was opened once: missing at start, the
/// MCU stayed gone for the whole run with no reason given; gone later, it never came back. (No
/// rpmsg bus on a host: the reconnection itself is `qf-execution`'s `tests/rpmsg_reconnect.rs`.)
#[test]
fn a_daemon_on_rpmsg_without_a_channel_reports_the_mcu_down_with_the_reason() {
    if std::path::Path::new("/sys/bus/rpmsg/devices").exists() {
        return; // a machine with an rpmsg bus: what it says depends on its MCU
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let config = write_config(root, "linux", "mcu_rpmsg = true\n", "");
    let daemon = spawn_daemon(&config);
    let socket = root.join("run/qfabricd.sock");
    wait_for(Duration::from_secs(30), "a few releases", || {
        query_status(&socket).is_ok_and(|s| s.observations > 5)
    });
    let status = query_status(&socket).unwrap();
    stop_daemon(daemon);
    assert!(!status.mcu_available);
    let reason = status.mcu_down_reason.unwrap_or_default();
    assert!(reason.contains("/sys/bus/rpmsg/devices"), "{reason}");
    let entries = journal_entries(&root.join("state/decisions.jsonl"));
    let start = entries.iter().find(|e| e["event"] == "start").unwrap();
    assert_eq!(start["mcu_available"], false);
    assert!(start["mcu_down_reason"]
        .as_str()
        .is_some_and(|r| r.contains("rpmsg")));
}

/// Without an MCU endpoint, `qf status` said "MCU endpoint down" with no reason, as if one had
/// failed; it now says none is configured.
#[test]
fn a_daemon_without_an_mcu_says_none_is_configured() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let config = write_config(root, "linux", "", "");
    let daemon = spawn_daemon(&config);
    let socket = root.join("run/qfabricd.sock");
    wait_for(Duration::from_secs(30), "a few releases", || {
        query_status(&socket).is_ok_and(|s| s.observations > 5)
    });
    let status = query_status(&socket).unwrap();
    stop_daemon(daemon);
    assert!(!status.mcu_available);
    let reason = status.mcu_down_reason.unwrap_or_default();
    assert!(reason.contains("no MCU endpoint is configured"), "{reason}");
}

/// Two daemons given one journal both ran and broke the hash chain; the second now fails at
/// once, naming the first's pid, and the first goes on undisturbed.
#[test]
fn a_second_daemon_on_the_same_state_fails_at_once_by_pid() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let config = write_config(root, "linux", "", "");
    let first = spawn_daemon(&config);
    let socket = root.join("run/qfabricd.sock");
    wait_for(Duration::from_secs(30), "the first daemon", || {
        query_status(&socket).is_ok_and(|s| s.observations > 5)
    });
    // Another configuration, another socket, the same journal and state directory.
    let other = root.join("other.toml");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("run/qfabricd.sock", "run/other.sock");
    std::fs::write(&other, text).unwrap();
    let second = Command::new(env!("CARGO_BIN_EXE_qfabricd"))
        .arg("--config")
        .arg(&other)
        .output()
        .unwrap();
    assert!(!second.status.success());
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(
        stderr.contains(&format!("(pid {})", first.id())),
        "{stderr}"
    );
    stop_daemon(first);
    qf_evidence::journal::verify(&root.join("state/decisions.jsonl")).unwrap();
}

/// Configurations that used to start without complaint and run without evidence or on an MCU
/// that is not there.
#[test]
fn configurations_that_cannot_work_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let refused = |config: &std::path::Path| {
        let output = Command::new(env!("CARGO_BIN_EXE_qfabricd"))
            .arg("--config")
            .arg(config)
            .args(["--observations", "3"])
            .output()
            .unwrap();
        assert!(!output.status.success());
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    let config = write_config(root, "linux", "profile = \"missing\"\n", "");
    let stderr = refused(&config);
    assert!(
        stderr.contains("missing") && stderr.contains("not a directory"),
        "{stderr}"
    );
    let config = write_config(root, "mcu", "", "");
    let stderr = refused(&config);
    assert!(stderr.contains("`stage` starts on the mcu"), "{stderr}");
    let text = std::fs::read_to_string(write_config(root, "linux", "", ""))
        .unwrap()
        .replace("period_ms = 1", "period_ms = 0");
    std::fs::write(&config, text).unwrap();
    let stderr = refused(&config);
    assert!(stderr.contains("period_ms = 0"), "{stderr}");
}
