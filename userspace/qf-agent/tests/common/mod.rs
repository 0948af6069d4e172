//! Shared rigs for the daemon tests: the MCU emulator's own endpoint in-process, and a minimal
//! daemon configuration.
#![allow(dead_code)]

use nix::sys::eventfd::{EfdFlags, EventFd};
use qf_mcu_emu::faults::Faults;
use qf_mcu_emu::mcu::Mcu;
use qf_mcu_emu::unix_endpoint::UnixEndpoint;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The emulator's MCU (one replay window per task, shared by every client, as on the board)
/// serving its Unix-socket endpoint on a thread until dropped.
pub struct Emulator {
    pub mcu: Arc<Mcu>,
    stop: Arc<EventFd>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Emulator {
    pub fn serve(path: &Path) -> Emulator {
        let mcu = Arc::new(Mcu::new(Faults::new(0, 0, false)));
        let stop = Arc::new(EventFd::from_value_and_flags(0, EfdFlags::EFD_CLOEXEC).unwrap());
        let endpoint = UnixEndpoint::bind(path).unwrap();
        let (m, s) = (mcu.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            endpoint.run(s.as_fd(), &m).unwrap();
        });
        Emulator {
            mcu,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        let _ = self.stop.write(1);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Writes `chain.toml` (one `stage` task on `start`, FIR×64) and `qfabricd.toml` under `root`,
/// with `top` among the daemon's top-level keys and `tables` after them; returns the
/// configuration's path.
pub fn write_config(root: &Path, start: &str, top: &str, tables: &str) -> PathBuf {
    std::fs::write(
        root.join("chain.toml"),
        format!("[[task]]\nname = \"stage\"\neffect = \"pure\"\ndomains = [\"linux\", \"mcu\"]\nstart = \"{start}\"\ndeadline_us = 100000\n"),
    )
    .unwrap();
    let path = root.join("qfabricd.toml");
    std::fs::write(
        &path,
        format!(
            "chain = \"chain.toml\"\nsocket = \"run/qfabricd.sock\"\njournal = \"state/decisions.jsonl\"\n\
             period_ms = 1\nexecutor = \"{}\"\n{top}[workloads]\nstage = \"fir_x64\"\n{tables}",
            env!("CARGO_BIN_EXE_qf-executor")
        ),
    )
    .unwrap();
    path
}

/// The journal's entries, in order.
pub fn journal_entries(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["entry"].clone())
        .collect()
}

/// Polls `ready` every 20 ms until it holds or `limit` passes.
pub fn wait_for(limit: Duration, what: &str, mut ready: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ready() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Spawns `qfabricd --config CONFIG`.
pub fn spawn_daemon(config: &Path) -> std::process::Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_qfabricd"))
        .arg("--config")
        .arg(config)
        .spawn()
        .unwrap()
}

/// Stops a daemon with SIGTERM and asserts it exits cleanly.
pub fn stop_daemon(mut daemon: std::process::Child) {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(daemon.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let exit = daemon.wait().unwrap();
    assert!(exit.success(), "{exit:?}");
}

/// A running daemon, killed if the test fails before stopping it.
pub struct Live(Option<std::process::Child>);

impl Live {
    /// `qfabricd --config CONFIG`.
    pub fn spawn(config: &Path) -> Live {
        Live(Some(spawn_daemon(config)))
    }

    pub fn id(&self) -> u32 {
        self.0.as_ref().map_or(0, std::process::Child::id)
    }

    /// Stops it with SIGTERM and asserts it exits cleanly.
    pub fn stop(mut self) {
        stop_daemon(self.0.take().unwrap());
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        if let Some(mut daemon) = self.0.take() {
            let _ = daemon.kill();
            let _ = daemon.wait();
        }
    }
}

/// Writes the profile traces `DIR/TASK.DOMAIN.csv` of `traces`: 300 correct calls of one
/// latency (µs) each.
pub fn write_flat_traces(dir: &Path, traces: &[(&str, f64)]) {
    use qf_evidence::traces::{Sample, Trace};
    std::fs::create_dir_all(dir).unwrap();
    for (name, latency_us) in traces {
        let rows = vec![
            Sample {
                latency_us: *latency_us,
                ok: true,
            };
            300
        ];
        Trace::write(&dir.join(format!("{name}.csv")), &rows).unwrap();
    }
}
