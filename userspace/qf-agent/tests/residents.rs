//! qfabricd's `[[resident]]` chains against the emulated MCU's socket (host tier): installed and
//! started when the daemon starts, their health in `qf status`, and after the MCU crashes and
//! restarts (losing every chain, as its RAM does) installed and started again by the daemon, with
//! results flowing again and the re-install in the journal.

mod common;

use common::{journal_entries, spawn_daemon, stop_daemon, wait_for, write_config};
use nix::sys::eventfd::{EfdFlags, EventFd};
use qf_agent::daemon::query_status;
use qf_agent::residents::ResidentHealth;
use qf_execution::subscribed::McuSubscribed;
use qf_mcu_emu::chain_loop::ChainLoop;
use qf_mcu_emu::faults::Faults;
use qf_mcu_emu::mcu::Mcu;
use qf_mcu_emu::unix_endpoint::UnixEndpoint;
use std::os::fd::AsFd;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `qf-mcu-emu --unix-socket PATH` in this process, chains released by its own loop.
struct Emulator {
    mcu: Arc<Mcu>,
    stop: Arc<EventFd>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Emulator {
    fn serve(path: &Path) -> Emulator {
        let mcu = Arc::new(Mcu::new(Faults::default()));
        let endpoint = UnixEndpoint::bind(path).unwrap();
        let chains = ChainLoop::new(Arc::clone(&mcu)).unwrap();
        let stop = Arc::new(EventFd::from_value_and_flags(0, EfdFlags::EFD_CLOEXEC).unwrap());
        let (s1, s2, m) = (stop.clone(), stop.clone(), mcu.clone());
        let threads = vec![
            std::thread::spawn(move || endpoint.run(s1.as_fd(), &m).unwrap()),
            std::thread::spawn(move || chains.run(s2.as_fd()).unwrap()),
        ];
        Emulator { mcu, stop, threads }
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        let _ = self.stop.write(1);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// Chain ids of the results that arrive within `window`.
fn results(linux: &mut McuSubscribed, window: Duration) -> Vec<u32> {
    let end = Instant::now() + window;
    let mut got = Vec::new();
    let mut buf = [0u8; qf_abi::MAX_FRAME_LEN];
    while let Some(left) = end.checked_duration_since(Instant::now()) {
        match linux.receive(&mut buf, left).unwrap() {
            Some((len, _)) => got.push(
                qf_abi::decode_frame(&buf[..len])
                    .unwrap()
                    .header
                    .contract_id,
            ),
            None => break,
        }
    }
    got
}

fn residents(socket: &Path) -> Vec<ResidentHealth> {
    query_status(socket).map(|s| s.resident).unwrap_or_default()
}

const RESIDENTS: &str =
    "[[resident]]\nchain = 11\ntask = \"crc32\"\nseed = 3\nperiod_us = 5000\nbudget_us = 500\n\
    [[resident]]\nchain = 12\ntask = \"add\"\nrequest = { a = 40, b = 2 }\nperiod_us = 7000\n";

#[test]
fn resident_chains_are_installed_at_start_and_again_after_the_mcu_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let mcu_socket = root.join("mcu.sock");
    let emulator = Emulator::serve(&mcu_socket);
    let config = write_config(root, "linux", "mcu_socket = \"mcu.sock\"\n", RESIDENTS);
    let mut linux = McuSubscribed::connect(&mcu_socket, Duration::from_secs(5)).unwrap();
    let daemon = spawn_daemon(&config);
    let status_socket = root.join("run/qfabricd.sock");
    let running = |installs: u64| {
        let health = residents(&status_socket);
        health.len() == 2
            && health
                .iter()
                .all(|h| h.state == "running" && h.installs == installs && h.releases > 0)
    };
    wait_for(
        Duration::from_secs(20),
        "both chains installed and running",
        || running(1),
    );
    let got = results(&mut linux, Duration::from_millis(200));
    assert!(got.contains(&11) && got.contains(&12), "{got:?}");
    let health = residents(&status_socket);
    assert_eq!(health[0].task, "crc32");
    assert!(
        health.iter().all(|h| h.error.is_none() && h.rejected == 0),
        "{health:?}"
    );

    // The MCU crashes (its chains are gone with its RAM) and restarts.
    emulator.mcu.crash();
    std::thread::sleep(Duration::from_millis(300));
    results(&mut linux, Duration::from_millis(50));
    assert!(
        results(&mut linux, Duration::from_millis(100)).is_empty(),
        "a crashed MCU sends nothing"
    );
    emulator.mcu.restart();
    wait_for(
        Duration::from_secs(20),
        "both chains installed again",
        || running(2),
    );
    let got = results(&mut linux, Duration::from_millis(200));
    assert!(
        got.contains(&11) && got.contains(&12),
        "results resume: {got:?}"
    );

    stop_daemon(daemon);
    let entries = journal_entries(&root.join("state/decisions.jsonl"));
    for chain in [11, 12] {
        let installs: Vec<&serde_json::Value> = entries
            .iter()
            .filter(|e| e["event"] == "resident_installed" && e["chain"] == chain)
            .collect();
        assert_eq!(installs.len(), 2, "chain {chain}: {installs:?}");
        assert_eq!(installs[0]["reason"], "start");
        assert_eq!(installs[1]["reason"], "gone_from_mcu");
    }
    qf_evidence::journal::verify(&root.join("state/decisions.jsonl")).unwrap();
}

#[test]
fn a_resident_entry_out_of_range_is_refused_naming_the_entry_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for (entry, named) in [
        (
            "chain = 3\ntask = \"add\"\nperiod_us = 50\n",
            "period_us 50",
        ),
        (
            "chain = 3\ntask = \"add\"\nperiod_us = 1000\nbudget_us = 2000\n",
            "budget_us 2000",
        ),
        ("chain = 3\ntask = \"nope\"\nperiod_us = 1000\n", "nope"),
        ("chain = 0\ntask = \"add\"\nperiod_us = 1000\n", "chain = 0"),
        (
            "chain = 3\ntask = \"add\"\nperiod_us = 1000\nrequest = { a = 1 }\n",
            "request",
        ),
        (
            "chain = 3\ntask = \"add\"\nperiod_us = 1000\nperiod = 3\n",
            "period",
        ),
    ] {
        let config = write_config(
            root,
            "linux",
            "mcu_socket = \"mcu.sock\"\n",
            &format!("[[resident]]\n{entry}"),
        );
        let error = format!(
            "{:#}",
            qf_agent::daemon::DaemonConfig::load(&config).unwrap_err()
        );
        assert!(error.contains(named), "{entry}: {error}");
    }
    // Without an MCU endpoint, resident chains cannot be kept.
    let config = write_config(
        root,
        "linux",
        "",
        "[[resident]]\nchain = 3\ntask = \"add\"\nperiod_us = 1000\n",
    );
    let error =
        match qf_agent::daemon::DaemonConfig::load(&config).map(qf_agent::daemon::Daemon::new) {
            Ok(Err(e)) => format!("{e:#}"),
            Ok(Ok(_)) => panic!("a daemon with [[resident]] and no MCU endpoint"),
            Err(e) => format!("{e:#}"),
        };
    assert!(
        error.contains("[[resident]]") && error.contains("MCU endpoint"),
        "{error}"
    );
}
