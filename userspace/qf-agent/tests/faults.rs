//! The fault suite: `qfabricd` against the `qf-mcu-emu` binary, both killed with SIGKILL and
//! restarted during traffic — the daemon, the MCU endpoint, and both at once — 20 times each.
//!
//! Checked after every restart and at the end:
//! * no DUPLICATE or STALE rejection at all (the emulator's `rejected` counter stays 0, the
//!   journal has no `mcu_rejected`), so none can be counted as a miss;
//! * no lost journal record: every decision any `qf status` reported is in the journal, every
//!   record count and head the daemon reported is still there, and the journal verifies
//!   against its anchor at the end;
//! * the time to resume after each restart (from the SIGKILL to the first release after it
//!   that the MCU served and the daemon scored) is printed, p50 and max per kind.
//!
//! Needs `target/<profile>/qf-mcu-emu` next to `qfabricd`: `scripts/test 40` builds it and runs
//! `cargo test -p qf-agent --test faults -- --ignored --nocapture`.

mod common;

use common::{wait_for, write_flat_traces};
use qf_agent::daemon::{query_status, Status};
use qf_evidence::journal::{Journal, JournalOptions};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const REPETITIONS: usize = 20;
/// A restart that takes longer than this fails the suite.
const RESUME_LIMIT: Duration = Duration::from_secs(15);

struct Rig {
    root: PathBuf,
    daemon: Option<Child>,
    emulator: Option<Child>,
    /// Every decision any status reported, as JSON.
    decisions: BTreeSet<String>,
    /// (journal records, head) pairs the daemon reported.
    heads: Vec<(u64, String)>,
}

impl Rig {
    fn emulator_binary() -> PathBuf {
        let daemon = Path::new(env!("CARGO_BIN_EXE_qfabricd"));
        let emulator = daemon.with_file_name("qf-mcu-emu");
        assert!(
            emulator.exists(),
            "{} is missing: cargo build -p qf-mcu-emu --bin qf-mcu-emu first",
            emulator.display()
        );
        emulator
    }

    fn start_emulator(&mut self) {
        let child = Command::new(Self::emulator_binary())
            .arg("--unix-socket")
            .arg(self.root.join("mcu.sock"))
            .arg("--control-socket")
            .arg(self.root.join("mcu.ctl"))
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.emulator = Some(child);
    }

    fn start_daemon(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.root.join("qfabricd.log"))
            .unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_qfabricd"))
            .arg("--config")
            .arg(self.root.join("qfabricd.toml"))
            .stderr(log)
            .spawn()
            .unwrap();
        self.daemon = Some(child);
    }

    fn kill(child: &mut Option<Child>) {
        if let Some(mut child) = child.take() {
            let _ = child.kill(); // SIGKILL
            let _ = child.wait();
        }
    }

    /// The emulator's `replies` and `rejected` counters.
    fn emulator_counters(&self) -> Option<(u64, u64)> {
        let line = qf_mcu_emu::control::send_command(&self.root.join("mcu.ctl"), "status").ok()?;
        let field = |name: &str| -> Option<u64> {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(name))
                .and_then(|v| v.parse().ok())
        };
        Some((field("replies=")?, field("rejected=")?))
    }

    fn status(&mut self) -> Option<Status> {
        let status = query_status(&self.root.join("run/qfabricd.sock")).ok()?;
        let daemon = self.daemon.as_ref()?;
        if status.pid != daemon.id() {
            return None; // a stale answer cannot come from a killed daemon, but be sure
        }
        for decision in &status.last_decisions {
            // Through a Value, so members are in the same (sorted) order as the journal's.
            let value = serde_json::to_value(decision).unwrap();
            self.decisions.insert(value.to_string());
        }
        self.heads
            .push((status.journal_records, status.journal_head.clone()));
        Some(status)
    }

    /// Waits until a release after `since` was served by the MCU and scored: the daemon is up
    /// with the MCU available, its observations passed `observed`, and the emulator's replies
    /// passed `replies`. Returns the time since `since`.
    fn resumed(&mut self, since: Instant, observed: u64, replies: u64) -> Duration {
        loop {
            assert!(
                since.elapsed() < RESUME_LIMIT,
                "no resumption within {RESUME_LIMIT:?}; see {}",
                self.root.join("qfabricd.log").display()
            );
            let counters = self.emulator_counters();
            if let (Some(status), Some((served, rejected))) = (self.status(), counters) {
                assert_eq!(rejected, 0, "the emulator rejected a request");
                if status.mcu_available && status.observations > observed && served > replies {
                    return since.elapsed();
                }
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Lets traffic run for `releases` more scored releases.
    fn traffic(&mut self, releases: u64) {
        let start = self.status().map_or(0, |s| s.observations);
        wait_for(Duration::from_secs(10), "traffic", || {
            self.status()
                .is_some_and(|s| s.observations >= start + releases)
        });
    }
}

impl Drop for Rig {
    /// A failing suite leaves no process behind.
    fn drop(&mut self) {
        Rig::kill(&mut self.daemon);
        Rig::kill(&mut self.emulator);
    }
}

fn setup(root: &Path) {
    // FIR×512 takes ~1-3 ms here, so the 300 µs deadline is missed on Linux; the MCU profile
    // promises 10 µs, so moves are admitted and (the emulator being no faster) rolled back: a
    // steady stream of decisions. `probe` runs on the MCU only, so every release uses the MCU.
    write_flat_traces(
        &root.join("profile"),
        &[
            ("stage.linux", 2_000.0),
            ("stage.mcu", 10.0),
            ("probe.mcu", 10.0),
        ],
    );
    std::fs::write(
        root.join("chain.toml"),
        "[[task]]\nname = \"stage\"\neffect = \"pure\"\ndomains = [\"linux\", \"mcu\"]\nstart = \"linux\"\ndeadline_us = 300\n\
         [[task]]\nname = \"probe\"\neffect = \"pure\"\ndomains = [\"mcu\"]\nstart = \"mcu\"\ndeadline_us = 300\n",
    )
    .unwrap();
    std::fs::write(
        root.join("qfabricd.toml"),
        format!(
            "chain = \"chain.toml\"\nprofile = \"profile\"\nsocket = \"run/qfabricd.sock\"\njournal = \"state/decisions.jsonl\"\n\
             period_ms = 2\nexecutor = \"{}\"\nmcu_socket = \"mcu.sock\"\n[workloads]\nstage = \"fir_x512\"\nprobe = \"add\"\n\
             [contract]\nwindow = 5\nhysteresis = 2\nprobation = 2\ncooldown_windows = 2\n",
            env!("CARGO_BIN_EXE_qf-executor")
        ),
    )
    .unwrap();
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((sorted.len() as f64) * p).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[test]
#[ignore = "needs the qf-mcu-emu binary; scripts/test 40 builds it and runs this suite"]
fn kill_9_and_restart_the_daemon_the_mcu_and_both_during_traffic() {
    let dir = tempfile::tempdir().unwrap();
    let mut rig = Rig {
        root: dir.path().to_owned(),
        daemon: None,
        emulator: None,
        decisions: BTreeSet::new(),
        heads: Vec::new(),
    };
    setup(&rig.root);
    rig.start_emulator();
    wait_for(Duration::from_secs(10), "the emulator", || {
        rig.emulator_counters().is_some()
    });
    rig.start_daemon();
    rig.resumed(Instant::now(), 0, 0);
    let suite = Instant::now();
    let mut resume: Vec<(&str, Vec<Duration>)> = Vec::new();
    for kind in ["daemon", "mcu", "both"] {
        let mut times = Vec::new();
        for _ in 0..REPETITIONS {
            rig.traffic(5);
            let observed = match kind {
                "mcu" => rig.status().map_or(0, |s| s.observations),
                _ => 0,
            };
            let replies = match kind {
                "daemon" => rig.emulator_counters().map_or(0, |c| c.0),
                _ => 0,
            };
            let killed = Instant::now();
            if kind != "mcu" {
                Rig::kill(&mut rig.daemon);
            }
            if kind != "daemon" {
                Rig::kill(&mut rig.emulator);
                rig.start_emulator();
            }
            if kind != "mcu" {
                rig.start_daemon();
            }
            times.push(rig.resumed(killed, observed, replies));
        }
        resume.push((kind, times));
    }
    rig.traffic(5);
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(rig.daemon.as_ref().unwrap().id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    );
    let exit = rig.daemon.take().unwrap().wait().unwrap();
    assert!(exit.success(), "{exit:?}");
    let (_, rejected) = rig.emulator_counters().unwrap();
    Rig::kill(&mut rig.emulator);

    // The journal: verifies against its anchor, holds every reported head and decision.
    let journal_path = rig.root.join("state/decisions.jsonl");
    let journal = Journal::open_with(
        &journal_path,
        "fault-suite-check",
        JournalOptions {
            key: None,
            anchor: Some(rig.root.join("state/journal.anchor")),
        },
    )
    .unwrap();
    assert_eq!(journal.anchor_missing(), None, "the anchor was there");
    drop(journal);
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&journal_path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for (records, head) in &rig.heads {
        if *records > 0 {
            assert_eq!(
                lines[*records as usize - 1]["hash"].as_str(),
                Some(head.as_str()),
                "record {records} as reported"
            );
        }
    }
    let journaled: BTreeSet<String> = lines
        .iter()
        .filter(|l| l["entry"]["event"] == "decision")
        .map(|l| serde_json::to_string(&l["entry"]["decision"]).unwrap())
        .collect();
    let lost: Vec<_> = rig.decisions.difference(&journaled).collect();
    let refused = lines
        .iter()
        .filter(|l| l["entry"]["event"] == "mcu_rejected")
        .count();
    let torn = lines
        .iter()
        .filter(|l| l["entry"]["event"] == "torn_tail_recovered")
        .count();

    println!(
        "fault suite: {} restarts of each kind in {:.1} s, {} journal records, {} decisions reported by qf status, {} lost, {} refused releases journaled, emulator rejections {}, torn tails recovered {}",
        REPETITIONS,
        suite.elapsed().as_secs_f64(),
        lines.len(),
        rig.decisions.len(),
        lost.len(),
        refused,
        rejected,
        torn
    );
    for (kind, times) in &mut resume {
        times.sort();
        println!(
            "resume after kill -9 of {kind:6}: p50 {:6.1} ms, max {:6.1} ms (n = {})",
            percentile(times, 0.5).as_secs_f64() * 1e3,
            times.last().unwrap().as_secs_f64() * 1e3,
            times.len()
        );
    }
    assert!(
        lost.is_empty(),
        "decisions missing from the journal: {lost:?}"
    );
    assert_eq!(refused, 0);
    assert_eq!(rejected, 0);
    assert!(
        !rig.decisions.is_empty(),
        "the setup is meant to make decisions"
    );
}
