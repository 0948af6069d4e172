//! `qfabricd` live: a real executor child and an MCU endpoint socket, a forced probation failure
//! (the paper's injected rollback scenario), `qf status` over the socket, SIGTERM drain, and the
//! journal verified afterwards.

mod common;

use common::write_flat_traces;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use qf_agent::daemon::query_status;
use qf_decision::controller::Action;
use qf_decision::model::DomainId;
use std::os::unix::net::UnixListener;
use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn a_live_chain_switches_rolls_back_reports_status_and_drains_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // The MCU endpoint: the same frame service on a Unix socket.
    let mcu_path = root.join("mcu.sock");
    let listener = UnixListener::bind(&mcu_path).unwrap();
    std::thread::spawn(move || {
        if let Ok((stream, _)) = listener.accept() {
            let (mut input, mut output) = (&stream, &stream);
            let _ = qf_execution::executor::serve_stream(&mut input, &mut output);
        }
    });
    // FIR×512 takes ~1-3 ms here, so a 300 µs deadline is violated in every window. The MCU
    // profile (injected) promises 10 µs, so the move is admitted; the MCU endpoint is no faster,
    // so probation fails and the move is rolled back.
    write_flat_traces(
        &root.join("profile"),
        &[("stage.linux", 2_000.0), ("stage.mcu", 10.0)],
    );
    std::fs::write(
        root.join("chain.toml"),
        "[[task]]\nname = \"stage\"\neffect = \"pure\"\ndomains = [\"linux\", \"mcu\"]\nstart = \"linux\"\ndeadline_us = 300\n",
    )
    .unwrap();
    std::fs::write(
        root.join("qfabricd.toml"),
        format!(
            "chain = \"chain.toml\"\nprofile = \"profile\"\nsocket = \"run/qfabricd.sock\"\njournal = \"state/decisions.jsonl\"\n\
             period_ms = 1\nexecutor = \"{}\"\nmcu_socket = \"mcu.sock\"\n[workloads]\nstage = \"fir_x512\"\n\
             [contract]\nwindow = 5\nhysteresis = 2\nprobation = 2\ncooldown_windows = 100\n",
            env!("CARGO_BIN_EXE_qf-executor")
        ),
    )
    .unwrap();
    let mut daemon = Command::new(env!("CARGO_BIN_EXE_qfabricd"))
        .arg("--config")
        .arg(root.join("qfabricd.toml"))
        .spawn()
        .unwrap();
    let socket = root.join("run/qfabricd.sock");
    let started = Instant::now();
    let status = loop {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no rollback reported in time"
        );
        if let Ok(status) = query_status(&socket) {
            if status
                .last_decisions
                .iter()
                .any(|d| d.action == Action::Rollback)
            {
                break status;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let actions: Vec<_> = status
        .last_decisions
        .iter()
        .map(|d| (d.action, d.reason.as_str()))
        .collect();
    assert_eq!(actions[0], (Action::Switch, "admitted"));
    assert_eq!(actions[1], (Action::Rollback, "observed_miss_rate_failure"));
    assert_eq!(status.placement["stage"], DomainId::Linux, "rolled back");
    assert!(
        status.epoch >= 2,
        "switch and rollback each opened an epoch"
    );
    assert!(status.mcu_available);
    assert!(!status.recent_window_miss_rates.is_empty());

    kill(Pid::from_raw(daemon.id() as i32), Signal::SIGTERM).unwrap();
    let exit = loop {
        if let Some(exit) = daemon.try_wait().unwrap() {
            break exit;
        }
        assert!(
            started.elapsed() < Duration::from_secs(40),
            "qfabricd did not exit on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(exit.success(), "{exit:?}");
    assert!(!socket.exists(), "the status socket is removed on exit");
    let journal = root.join("state/decisions.jsonl");
    let verified = qf_evidence::journal::verify(&journal).unwrap();
    let text = std::fs::read_to_string(&journal).unwrap();
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["entry"]["event"], "shutdown");
    assert!(last["entry"]["error"].is_null());
    assert!(verified.records >= 4, "start, switch, rollback, shutdown");
    assert!(text.contains("\"action\":\"switch\"") && text.contains("\"action\":\"rollback\""));
}

#[test]
fn the_shipped_example_configuration_parses() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("systemd/qfabricd.toml");
    let config = qf_agent::daemon::DaemonConfig::load(&path).unwrap();
    assert_eq!(
        config.contract,
        qf_decision::contract::ContractConfig::default()
    );
    assert_eq!(
        config.socket,
        std::path::Path::new("/run/qfabric/qfabricd.sock")
    );
}

#[test]
fn a_configuration_naming_two_mcu_endpoints_is_refused_by_name() {
    let dir = std::env::temp_dir().join(format!("qfabricd-two-mcu-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("qfabricd.toml");
    let base = "chain = \"chain.toml\"\nsocket = \"s.sock\"\njournal = \"j.jsonl\"\n";
    std::fs::write(&path, format!("{base}mcu_rpmsg = true\n")).unwrap();
    assert!(
        qf_agent::daemon::DaemonConfig::load(&path)
            .unwrap()
            .mcu_rpmsg
    );
    std::fs::write(
        &path,
        format!("{base}mcu_rpmsg = true\nmcu_socket = \"m.sock\"\n"),
    )
    .unwrap();
    let error = qf_agent::daemon::DaemonConfig::load(&path).unwrap_err();
    assert!(
        format!("{error:#}").contains("`mcu_socket` and `mcu_rpmsg` both"),
        "{error:#}"
    );
    // The kernel dispatch device is the third way, alone or refused by name.
    std::fs::write(&path, format!("{base}mcu_dev = \"/dev/qfabric0\"\n")).unwrap();
    let config = qf_agent::daemon::DaemonConfig::load(&path).unwrap();
    assert_eq!(
        config.mcu_endpoint().unwrap(),
        Some(qf_execution::domain::McuEndpoint::Kernel(Some(
            "/dev/qfabric0".into()
        )))
    );
    for (other, named) in [
        ("mcu_socket = \"m.sock\"", "`mcu_socket` and `mcu_dev` both"),
        ("mcu_rpmsg = true", "`mcu_rpmsg` and `mcu_dev` both"),
    ] {
        std::fs::write(
            &path,
            format!("{base}{other}\nmcu_dev = \"/dev/qfabric0\"\n"),
        )
        .unwrap();
        let error = qf_agent::daemon::DaemonConfig::load(&path).unwrap_err();
        let message = format!("{error:#}");
        assert!(message.contains(named), "{message}");
        assert!(message.contains("qfabricd.toml"), "{message}");
    }
    // A serial line is the fourth: its baud rate defaults, is checked, and needs the device.
    let serial = |baud| {
        Some(qf_execution::domain::McuEndpoint::Serial {
            device: "/dev/ttyHS1".into(),
            baud,
        })
    };
    for (lines, expected) in [
        ("mcu_serial = \"/dev/ttyHS1\"\n", serial(115_200)),
        (
            "mcu_serial = \"/dev/ttyHS1\"\nmcu_baud = 921600\n",
            serial(921_600),
        ),
    ] {
        std::fs::write(&path, format!("{base}{lines}")).unwrap();
        let config = qf_agent::daemon::DaemonConfig::load(&path).unwrap();
        assert_eq!(config.mcu_endpoint().unwrap(), expected);
    }
    for (lines, named) in [
        (
            "mcu_serial = \"/dev/ttyHS1\"\nmcu_dev = \"/dev/qfabric0\"\n",
            "`mcu_dev` and `mcu_serial` both",
        ),
        ("mcu_serial = \"/dev/ttyHS1\"\nmcu_baud = 1234\n", "1234"),
        ("mcu_baud = 9600\n", "`mcu_baud`"),
    ] {
        std::fs::write(&path, format!("{base}{lines}")).unwrap();
        let error = qf_agent::daemon::DaemonConfig::load(&path).unwrap_err();
        let message = format!("{error:#}");
        assert!(message.contains(named), "{message}");
        assert!(message.contains("qfabricd.toml"), "{message}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A status socket that accepts and never answers: `qf status` said "reading the status reply:
/// Resource temporarily unavailable (os error 11)".
#[test]
fn a_status_socket_that_does_not_answer_is_a_time_out_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hung.sock");
    let listener = UnixListener::bind(&path).unwrap();
    let error = format!(
        "{:#}",
        qf_agent::daemon::query_status_within(&path, Duration::from_millis(100)).unwrap_err()
    );
    drop(listener);
    assert!(
        error.contains("did not answer within 100 ms") && error.contains("hung.sock"),
        "{error}"
    );
    assert!(!error.contains("os error"), "{error}");
}
