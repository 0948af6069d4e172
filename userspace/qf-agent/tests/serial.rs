//! `qf profile` and `qf resident observe` on a serial line against the emulated MCU on a pty (host
//! tier; the emulator's serial endpoint and chain loop in this process, as `qf-mcu-emu
//! --serial-pty` runs them): a lost call is counted and the profile goes on; an MCU that goes
//! away mid-run leaves the profile, and the observation, written up to where it stopped, and an
//! error that says where.

use nix::sys::eventfd::{EfdFlags, EventFd};
use qf_decision::model::DomainId;
use qf_evidence::profile::ProfileSpec;
use qf_evidence::resident::{ChainRequest, ObserveSpec};
use qf_execution::chains::{ChainControl, Timing};
use qf_execution::domain::McuEndpoint;
use qf_execution::load::Load;
use qf_execution::rt::CallerPolicy;
use qf_mcu_emu::chain_loop::ChainLoop;
use qf_mcu_emu::faults::Faults;
use qf_mcu_emu::mcu::Mcu;
use qf_mcu_emu::serial_endpoint::SerialEndpoint;
use qf_tasks::Task;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `qf-mcu-emu --serial-pty LINK` in this process: the endpoint and the chain loop. Dropping it
/// closes the pty, as the emulator's death does.
struct Emulator {
    mcu: Arc<Mcu>,
    stop: Arc<EventFd>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Emulator {
    fn start(link: &Path, faults: Faults) -> Emulator {
        let mcu = Arc::new(Mcu::new(faults));
        let endpoint = SerialEndpoint::pty(link, 115_200).unwrap();
        mcu.subscribers().add_line(endpoint.results());
        let chains = ChainLoop::new(Arc::clone(&mcu)).unwrap();
        let stop = Arc::new(EventFd::from_value_and_flags(0, EfdFlags::EFD_CLOEXEC).unwrap());
        let (s1, s2, m) = (Arc::clone(&stop), Arc::clone(&stop), Arc::clone(&mcu));
        let threads = vec![
            // The endpoint lives in its thread: the pty closes when the thread ends.
            std::thread::spawn(move || endpoint.run(s1.as_fd(), &m).unwrap()),
            std::thread::spawn(move || chains.run(s2.as_fd()).unwrap()),
        ];
        Emulator { mcu, stop, threads }
    }

    /// Stops it once `ready` holds for its MCU (polled every ms; a minute at most).
    fn stop_when(
        self,
        ready: impl Fn(&Mcu) -> bool + Send + 'static,
    ) -> std::thread::JoinHandle<()> {
        std::thread::spawn(move || {
            let started = Instant::now();
            while !ready(&self.mcu) && started.elapsed() < Duration::from_secs(60) {
                std::thread::sleep(Duration::from_millis(1));
            }
            drop(self);
        })
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

fn profile(link: &Path, out: &Path, task: Task, samples: usize) -> ProfileSpec {
    ProfileSpec {
        tasks: vec![task],
        domains: vec![DomainId::Mcu],
        loads: vec![Load::Idle],
        callers: vec![CallerPolicy::Ordinary],
        warmup: 0,
        samples,
        min_samples: 1,
        executor: PathBuf::from(env!("CARGO_BIN_EXE_qf-executor")),
        mcu: Some(serial(link)),
        out: out.to_owned(),
        seed: 1,
        progress: false,
    }
}

fn serial(link: &Path) -> McuEndpoint {
    McuEndpoint::Serial {
        device: link.to_owned(),
        baud: 115_200,
    }
}

/// Data rows of a CSV file with a header.
fn rows(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines().skip(1).map(str::to_owned).collect()
}

#[test]
fn a_lost_call_is_counted_and_the_profile_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("mcu.tty");
    // The MCU drops its 25th reply: that call waits its 5 s time-out and gets nothing.
    let _emu = Emulator::start(&link, Faults::new(0, 25, false));
    let summaries = profile(&link, dir.path(), Task::Crc32, 40).run().unwrap();
    assert_eq!(summaries.len(), 1);
    let cell = &summaries[0];
    assert_eq!(
        (cell.samples, cell.lost, cell.wrong_outputs),
        (39, 1, 0),
        "{cell:?}"
    );
    let raw = dir.path().join("profile/idle/ordinary");
    assert_eq!(rows(&raw.join("observations.csv")).len(), 39);
    let lost = rows(&raw.join("lost.csv"));
    assert_eq!(lost.len(), 1, "{lost:?}");
    assert!(
        lost[0].starts_with("crc32,mcu,idle,ordinary,25,") && lost[0].contains("no reply"),
        "{lost:?}"
    );
    assert_eq!(
        rows(&dir.path().join("traces/idle/ordinary/crc32.mcu.csv")).len(),
        39
    );
}

#[test]
fn an_mcu_that_dies_leaves_the_profile_written_up_to_where_it_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("mcu.tty");
    let emu = Emulator::start(&link, Faults::default());
    let killer = emu.stop_when(|mcu| mcu.stats().requests >= 40);
    let error = profile(&link, dir.path(), Task::Add, 1_000_000)
        .run()
        .unwrap_err();
    killer.join().unwrap();
    let message = format!("{error:#}");
    assert!(
        message.contains("qf profile stopped; the ")
            && message.contains("the profile stopped at sample ")
            && message.contains("of `add` on mcu (load idle, caller ordinary)")
            && message.contains(&dir.path().join("profile").display().to_string()),
        "{message}"
    );
    let kept = rows(&dir.path().join("profile/idle/ordinary/observations.csv"));
    assert!(kept.len() >= 39, "{} rows", kept.len());
    assert!(
        message.contains(&format!("the {} samples measured before", kept.len())),
        "{message}"
    );
    assert_eq!(
        rows(&dir.path().join("traces/idle/ordinary/add.mcu.csv")).len(),
        kept.len()
    );
}

#[test]
fn an_observer_whose_mcu_dies_keeps_the_results_it_received() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("mcu.tty");
    let emu = Emulator::start(&link, Faults::default());
    let chain = ChainRequest::seeded(Task::Crc32, 3, 4);
    let mut control = ChainControl::new(serial(&link).open(Duration::from_secs(5)).unwrap());
    let timing = Timing {
        period_us: 2000,
        ..Timing::default()
    };
    let install = timing
        .install(4, &chain.template().unwrap(), ["p", "d", "b", "s"])
        .unwrap();
    control.install(&install).unwrap();
    control.start(4).unwrap();
    drop(control);
    // The observer's one binding request comes next; 30 releases after it, the MCU dies.
    let before = emu.mcu.stats().requests;
    let killer = emu.stop_when(move |mcu| {
        static BOUND_AT: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
        if mcu.stats().requests <= before {
            return false;
        }
        let releases = mcu.chain_summary().1.releases;
        releases >= *BOUND_AT.get_or_init(|| releases) + 30
    });
    let spec = ObserveSpec {
        chain,
        chain_id: Some(4),
        endpoint: serial(&link),
        period: Duration::from_millis(2),
        loads: vec![Load::Idle],
        callers: vec![CallerPolicy::Ordinary],
        warmup: 0,
        samples: 1_000_000,
        out: dir.path().to_owned(),
    };
    let error = spec.run().unwrap_err();
    killer.join().unwrap();
    let message = format!("{error:#}");
    let kept = rows(&dir.path().join("resident/idle/ordinary/observations.csv"));
    assert!(kept.len() >= 10, "{} rows: {message}", kept.len());
    assert!(
        message.contains(&format!(
            "qf resident observe stopped (load idle, caller ordinary); the {} results kept",
            kept.len()
        )),
        "{message}"
    );
}
