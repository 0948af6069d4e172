//! `qf resident` through the real binary against the emulated MCU's Unix-socket endpoint (host
//! tier; the same commands run through `/dev/qfabric0` in the QEMU tier's guest): install →
//! results at the period with none lost → counters that agree with what Linux received → stop →
//! no more results → remove; two chains at once told apart by their id; every refusal named,
//! with the MCU's state unchanged; an install over the bandwidth bound admitted once another
//! chain is removed.

use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sys::eventfd::{EfdFlags, EventFd};
use qf_abi::chain::{ChainInstall, ChainOp, ChainRef, ChainStatus, CONTROL_EFFECT};
use qf_abi::{decode_frame, encode_frame, Header, Status, MAX_FRAME_LEN};
use qf_execution::chains::{refusal, ChainControl};
use qf_execution::domain::{Domain, McuEndpoint, McuSocket};
use qf_execution::subscribed::McuSubscribed;
use qf_execution::workload::{decode_request, outcome_ok};
use qf_mcu_emu::chain_loop::ChainLoop;
use qf_mcu_emu::faults::Faults;
use qf_mcu_emu::mcu::Mcu;
use qf_mcu_emu::unix_endpoint::UnixEndpoint;

/// `qf-mcu-emu --unix-socket PATH` in this process: the endpoint and the chain loop.
struct Emulator {
    _dir: tempfile::TempDir,
    socket: PathBuf,
    stop: Arc<EventFd>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Emulator {
    fn start() -> Emulator {
        Emulator::serve(true)
    }

    /// With `releasing` false, an MCU that cannot run chains (nothing releases them): it admits
    /// installs and refuses every start.
    fn serve(releasing: bool) -> Emulator {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("mcu.sock");
        let mcu = Arc::new(Mcu::new(Faults::default()));
        let endpoint = UnixEndpoint::bind(&socket).unwrap();
        let stop = Arc::new(EventFd::from_value_and_flags(0, EfdFlags::EFD_CLOEXEC).unwrap());
        let (s1, s2) = (Arc::clone(&stop), Arc::clone(&stop));
        let mut threads = Vec::new();
        if releasing {
            let chains = ChainLoop::new(Arc::clone(&mcu)).unwrap();
            threads.push(std::thread::spawn(move || chains.run(s2.as_fd()).unwrap()));
        }
        threads.push(std::thread::spawn(move || {
            endpoint.run(s1.as_fd(), &mcu).unwrap()
        }));
        Emulator {
            _dir: dir,
            socket,
            stop,
            threads,
        }
    }

    fn path(&self) -> &str {
        self.socket.to_str().unwrap()
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

/// Runs `qf resident ARGS --mcu-socket S` (`template` talks to no MCU): (success, stdout,
/// stderr).
fn qf(emu: &Emulator, args: &[&str]) -> (bool, String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_qf"));
    command.arg("resident").args(args);
    if args.first() != Some(&"template") {
        command.args(["--mcu-socket", emu.path()]);
    }
    let output = command.output().expect("qf runs");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// `qf resident ARGS` that must succeed; its stdout.
fn ok(emu: &Emulator, args: &[&str]) -> String {
    let (success, stdout, stderr) = qf(emu, args);
    assert!(success, "qf resident {args:?}: {stderr}");
    stdout
}

/// `qf resident ARGS` that must fail naming `status`.
fn refused(emu: &Emulator, args: &[&str], status: &str) {
    let (success, stdout, stderr) = qf(emu, args);
    assert!(!success, "qf resident {args:?} succeeded: {stdout}");
    assert!(stderr.contains(status), "qf resident {args:?}: {stderr}");
}

/// What the MCU holds: the list and every chain's status, as JSON.
fn state(emu: &Emulator) -> (serde_json::Value, serde_json::Value) {
    let json = |args: &[&str]| serde_json::from_str(&ok(emu, args)).unwrap();
    (json(&["list", "--json"]), json(&["status", "--json"]))
}

fn status(emu: &Emulator, id: u32) -> ChainStatus {
    let mut control = ChainControl::new(
        McuEndpoint::Socket(emu.socket.clone())
            .open(Duration::from_secs(5))
            .unwrap(),
    );
    control.status(id).unwrap()
}

/// The results that arrive on `results` within `window`: (chain id, frame), in arrival order.
fn results(results: &mut McuSubscribed, window: Duration) -> Vec<(u32, Vec<u8>)> {
    let end = Instant::now() + window;
    let mut got = Vec::new();
    let mut buf = [0u8; MAX_FRAME_LEN];
    while let Some(left) = end.checked_duration_since(Instant::now()) {
        let Some((len, _)) = results.receive(&mut buf, left).unwrap() else {
            break;
        };
        let header = decode_frame(&buf[..len]).unwrap().header;
        got.push((header.contract_id, buf[..len].to_vec()));
    }
    got
}

fn subscriber(emu: &Emulator) -> McuSubscribed {
    McuSubscribed::connect(Path::new(emu.path()), Duration::from_secs(5)).unwrap()
}

#[test]
fn install_results_at_the_period_counters_stop_remove_two_chains_told_apart() {
    let emu = Emulator::start();
    assert_eq!(
        ok(&emu, &["list"]).lines().count(),
        2,
        "header and bandwidth"
    );
    let mut linux = subscriber(&emu);
    let add = ok(
        &emu,
        &[
            "install",
            "--task",
            "add",
            "--request",
            r#"{"a": 40, "b": 2}"#,
            "--period-us",
            "5000",
            "--budget-us",
            "500",
        ],
    );
    assert_eq!(add.trim(), "1", "the first free id");
    let crc = ok(
        &emu,
        &[
            "install",
            "--task",
            "crc32",
            "--seed",
            "9",
            "--period-us",
            "7000",
            "--deadline-us",
            "6000",
            "--budget-us",
            "700",
            "--chain",
            "7",
        ],
    );
    assert_eq!(crc.trim(), "7");
    assert!(
        results(&mut linux, Duration::from_millis(30)).is_empty(),
        "installed, not started"
    );
    ok(&emu, &["start", "1"]);
    ok(&emu, &["start", "7"]);
    let started = Instant::now();
    let got = results(&mut linux, Duration::from_millis(700));
    ok(&emu, &["stop", "1"]);
    let elapsed = started.elapsed();
    // Chain 1's last results, on their way when it stopped.
    let mut got = got;
    got.extend(results(&mut linux, Duration::from_millis(20)));
    let after_stop = results(&mut linux, Duration::from_millis(60));
    assert!(
        after_stop.iter().all(|r| r.0 == 7),
        "chain 1 sent after its stop"
    );
    assert!(!after_stop.is_empty(), "chain 7 goes on");

    let s1 = status(&emu, 1);
    assert_eq!(s1.state, qf_abi::chain::ChainState::Stopped.code());
    for (chain, period_us, status) in [(1u32, 5000u64, s1), (7, 7000, status(&emu, 7))] {
        let mine: Vec<&Vec<u8>> = got.iter().filter(|r| r.0 == chain).map(|r| &r.1).collect();
        // Released every period from the start: about elapsed / period of them (a host too
        // loaded to keep the period re-anchors the releases, hence the slack), none lost.
        let periods = elapsed.as_micros() as u64 / period_us;
        assert!(
            mine.len() as u64 * 10 >= periods * 8,
            "chain {chain}: {} results in {periods} periods",
            mine.len()
        );
        let first = u64::from(chain) << 32;
        for (k, frame) in mine.iter().enumerate() {
            let header = decode_frame(frame).unwrap().header;
            assert_eq!(
                header.invocation_id,
                first + k as u64,
                "chain {chain}: none lost, in order"
            );
            assert_eq!(header.status, Status::Ok);
        }
        if chain == 1 {
            // Every result of chain 1 arrived, and its counters say so.
            assert_eq!(s1.releases, mine.len() as u64, "{s1:?}");
            assert_eq!(
                (s1.results, s1.not_delivered, s1.rejected),
                (s1.releases, 0, 0)
            );
            assert_eq!(
                (s1.period_us, s1.deadline_us, s1.budget_us, s1.reserved_ppm),
                (5000, 5000, 500, 100_000)
            );
        } else {
            assert_eq!((status.deadline_us, status.budget_us), (6000, 700));
        }
    }
    // The outputs are the task's on the request installed (checked against the reference).
    let add_template = hex_decode(&ok(
        &emu,
        &[
            "template",
            "--chain",
            "1",
            "--task",
            "add",
            "--request",
            r#"{"a": 40, "b": 2}"#,
        ],
    ));
    let (_, task, request) = decode_request(&add_template).unwrap();
    for (_, frame) in got.iter().filter(|r| r.0 == 1) {
        assert!(outcome_ok(task, &request, frame).unwrap());
    }
    let crc_template = hex_decode(&ok(
        &emu,
        &["template", "--chain", "7", "--task", "crc32", "--seed", "9"],
    ));
    let (_, task, request) = decode_request(&crc_template).unwrap();
    for (_, frame) in got.iter().filter(|r| r.0 == 7) {
        assert!(outcome_ok(task, &request, frame).unwrap());
    }

    let table = ok(&emu, &["status"]);
    assert!(
        table.contains("stopped") && table.contains("running"),
        "{table}"
    );
    ok(&emu, &["remove", "1"]);
    ok(&emu, &["remove", "7"]);
    results(&mut linux, Duration::from_millis(20));
    assert!(
        results(&mut linux, Duration::from_millis(40)).is_empty(),
        "nothing after remove"
    );
    let (list, all) = state(&emu);
    assert_eq!(list["chains"].as_array().unwrap().len(), 0, "{list}");
    assert_eq!(all.as_array().unwrap().len(), 0);
    refused(&emu, &["status", "1"], "not_installed");
}

fn hex_decode(text: &str) -> Vec<u8> {
    let text = text.trim();
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

/// A raw control request through the socket: the answer's status.
fn raw(emu: &Emulator, frame: &[u8]) -> Status {
    let mut socket = McuSocket::connect(&emu.socket, Duration::from_secs(5)).unwrap();
    let answer = socket.invoke(frame).unwrap();
    decode_frame(answer.frame()).unwrap().header.status
}

fn control_frame<T: serde::Serialize>(op: ChainOp, payload: &T) -> Vec<u8> {
    let mut frame = [0u8; MAX_FRAME_LEN];
    let header = Header::request(op.task_id(), CONTROL_EFFECT, 5, 0);
    let len = encode_frame(&header, payload, &mut frame).unwrap();
    frame[..len].to_vec()
}

#[test]
fn every_refusal_is_named_and_leaves_the_mcu_as_it_was() {
    let emu = Emulator::start();
    let base = ["install", "--task", "add", "--period-us", "1000"];
    assert_eq!(
        ok(&emu, &[&base[..], &["--budget-us", "700"]].concat()).trim(),
        "1"
    );
    ok(&emu, &["start", "1"]);
    ok(&emu, &["stop", "1"]);
    let before = state(&emu);
    let unchanged = |what: &str| assert_eq!(state(&emu), before, "{what} changed the MCU");

    // Through qf resident: each reason the MCU gives, by name, with a failing exit.
    refused(
        &emu,
        &[&base[..], &["--budget-us", "400"]].concat(),
        "over_bound",
    );
    unchanged("over_bound");
    refused(&emu, &[&base[..], &["--chain", "1"]].concat(), "id_in_use");
    unchanged("id_in_use");
    for op in ["start", "stop", "remove", "status"] {
        refused(&emu, &[op, "9"], "not_installed");
        unchanged(op);
    }
    // Flags out of every MCU's range are named by qf before anything is sent.
    for (flags, named) in [
        (&["--period-us", "50"][..], "--period-us 50"),
        (
            &["--period-us", "1000", "--budget-us", "2000"],
            "--budget-us 2000",
        ),
        (
            &["--period-us", "1000", "--deadline-us", "5000"],
            "--deadline-us 5000",
        ),
        (&["--period-us", "1000", "--task", "none"], "none"),
        (
            &["--period-us", "1000", "--task", "add", "--request", "{}"],
            "--request '{}'",
        ),
    ] {
        refused(&emu, &[&["install"][..], flags].concat(), named);
        unchanged(named);
    }

    // What qf never sends, sent raw: the MCU names it all the same.
    let add = hex_decode(&ok(&emu, &["template", "--chain", "2", "--task", "add"]));
    let install = |chain_id, period_us| ChainInstall::new(chain_id, &add, period_us, 0).unwrap();
    let mut other_task = install(2, 1000);
    other_task.task_id = qf_tasks::Task::Crc32.id();
    let mut undeclared = install(2, 1000);
    undeclared.task_id = 0x77;
    let mut wrong_effect = control_frame(ChainOp::Install, &install(2, 1000));
    wrong_effect[6] = qf_abi::EffectClass::Pure.code();
    let mut short = control_frame(ChainOp::Start, &ChainRef { chain_id: 1 });
    short.truncate(38);
    short[33] = 2;
    let mut unnamed = control_frame(ChainOp::List, &qf_abi::chain::ChainListRequest {});
    unnamed[11] = 0x09;
    for (what, frame, status) in [
        (
            "chain id 0",
            control_frame(ChainOp::Install, &install(0, 1000)),
            Status::OutOfRange,
        ),
        (
            "period 50 µs",
            control_frame(ChainOp::Install, &install(2, 50)),
            Status::OutOfRange,
        ),
        (
            "a template of another task",
            control_frame(ChainOp::Install, &other_task),
            Status::BadTemplate,
        ),
        (
            "an undeclared task",
            control_frame(ChainOp::Install, &undeclared),
            Status::UnknownTask,
        ),
        ("effect class PURE", wrong_effect, Status::Malformed),
        ("a short payload", short, Status::Malformed),
        ("an unnamed control id", unnamed, Status::UnknownTask),
    ] {
        assert_eq!(raw(&emu, &frame), status, "{what}");
        unchanged(what);
    }
    // A full table: 8 chains (7 more, no budget), then a ninth.
    for chain in 2..=8 {
        ok(
            &emu,
            &[&base[..], &["--chain", &chain.to_string()]].concat(),
        );
    }
    let full = state(&emu);
    refused(&emu, &base, "table_full");
    assert_eq!(state(&emu), full, "table_full changed the MCU");
    for chain in 2..=8 {
        ok(&emu, &["remove", &chain.to_string()]);
    }
    assert_eq!(state(&emu), before);

    // Over the bound until another chain goes: removing chain 1 admits it.
    refused(
        &emu,
        &[&base[..], &["--budget-us", "400", "--chain", "3"]].concat(),
        "over_bound",
    );
    ok(&emu, &["remove", "1"]);
    assert_eq!(
        ok(
            &emu,
            &[&base[..], &["--budget-us", "400", "--chain", "3"]].concat()
        )
        .trim(),
        "3"
    );
    let list: serde_json::Value = serde_json::from_str(&ok(&emu, &["list", "--json"])).unwrap();
    assert_eq!(list["reserved_ppm"], 400_000, "{list}");

    // The library's view of a refusal: its status, not a transport error.
    let mut control = ChainControl::new(
        McuEndpoint::Socket(emu.socket.clone())
            .open(Duration::from_secs(5))
            .unwrap(),
    );
    assert_eq!(
        refusal(&control.start(4).unwrap_err()),
        Some(Status::NotInstalled)
    );
}

#[test]
fn observing_a_stopped_chain_ends_within_its_time_out_while_another_chain_sends() {
    let emu = Emulator::start();
    let base = ["install", "--task", "add", "--start", "--period-us"];
    assert_eq!(
        ok(&emu, &[&base[..], &["2000", "--chain", "1"]].concat()).trim(),
        "1"
    );
    // Chain 2 sends every 100 us: far more often than a socket's shortest read time-out (one
    // scheduler tick, 4 ms at HZ=250), so a "drop what is queued" that waits that long for the
    // next frame hardly ever ends.
    assert_eq!(
        ok(&emu, &[&base[..], &["100", "--chain", "2"]].concat()).trim(),
        "2"
    );
    ok(&emu, &["stop", "1"]);
    let out = emu._dir.path().join("obs");
    let mut observer = Command::new(env!("CARGO_BIN_EXE_qf"))
        .args([
            "resident",
            "observe",
            "--chain",
            "1",
            "--task",
            "add",
            "--period-us",
            "2000",
        ])
        .args([
            "--samples",
            "1",
            "--warmup",
            "0",
            "--mcu-socket",
            emu.path(),
            "--out",
        ])
        .arg(&out)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Chain 2's results are skipped without restarting the 5 s wait; before they were, the
    // observer waited forever. A minute is far beyond any load's slowness.
    let started = Instant::now();
    let exit = loop {
        if let Some(exit) = observer.try_wait().unwrap() {
            break exit;
        }
        if started.elapsed() > Duration::from_secs(60) {
            let _ = observer.kill();
            panic!("the observer of a stopped chain still waits after a minute");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut observer.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(!exit.success(), "a result of the stopped chain");
    assert!(stderr.contains("none within 5000 ms"), "{stderr}");
    let two: serde_json::Value =
        serde_json::from_str(&ok(&emu, &["status", "2", "--json"])).unwrap();
    assert!(two["releases"].as_u64().unwrap() > 1000, "{two}");
}

/// The chain ids `list --json` shows, in its order.
fn listed(emu: &Emulator) -> Vec<u64> {
    let list: serde_json::Value = serde_json::from_str(&ok(emu, &["list", "--json"])).unwrap();
    list["chains"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["chain_id"].as_u64().unwrap())
        .collect()
}

#[test]
fn an_install_whose_start_or_output_fails_leaves_nothing_installed() {
    // An MCU that cannot run chains admits the install and refuses the start.
    let emu = Emulator::serve(false);
    let install = ["install", "--task", "add", "--period-us", "1000"];
    let (success, stdout, stderr) = qf(&emu, &[&install[..], &["--start"]].concat());
    assert!(!success, "{stdout}");
    assert!(
        stderr.contains("chain 1 was installed and is removed again")
            && stderr.contains("execution_error"),
        "{stderr}"
    );
    assert_eq!(listed(&emu), Vec::<u64>::new());
    // Standard output that cannot be written (a full disk): the id is never printed.
    let emu = Emulator::start();
    let status = Command::new(env!("CARGO_BIN_EXE_qf"))
        .arg("resident")
        .args(install)
        .args(["--start", "--mcu-socket", emu.path()])
        .stdout(
            std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .unwrap(),
        )
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&status.stderr);
    assert!(!status.status.success(), "{stderr}");
    assert!(
        stderr.contains("chain 1 was installed and is removed again: printing the chain id"),
        "{stderr}"
    );
    assert_eq!(listed(&emu), Vec::<u64>::new());
}

#[test]
fn stop_says_what_happened_list_is_sorted_and_observe_names_a_missing_chain_at_once() {
    let emu = Emulator::start();
    for id in ["5", "2", "9"] {
        let args = [
            "install",
            "--task",
            "add",
            "--period-us",
            "20000",
            "--chain",
            id,
        ];
        assert_eq!(ok(&emu, &args).trim(), id);
    }
    assert_eq!(listed(&emu), [2, 5, 9]);
    let all: serde_json::Value = serde_json::from_str(&ok(&emu, &["status", "--json"])).unwrap();
    let ids: Vec<u64> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["chain_id"].as_u64().unwrap())
        .collect();
    assert_eq!(ids, [2, 5, 9]);
    // Stop agrees with status: a chain never started stays installed, and says so.
    assert_eq!(
        ok(&emu, &["stop", "5"]).trim(),
        "chain 5: installed (never started: nothing to stop)"
    );
    assert_eq!(status(&emu, 5).state, 1, "installed");
    ok(&emu, &["start", "5"]);
    assert_eq!(ok(&emu, &["stop", "5"]).trim(), "chain 5: stopped");
    assert_eq!(
        ok(&emu, &["stop", "5"]).trim(),
        "chain 5: stopped (it was not running: nothing to stop)"
    );
    // Observing a chain the MCU does not have is refused by its id, without waiting for it.
    let out = emu._dir.path().join("missing");
    let (success, _, stderr) = qf(
        &emu,
        &[
            "observe",
            "--chain",
            "7",
            "--period-us",
            "1000",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(!success);
    assert!(
        stderr.contains("chain 7 is not installed on the MCU") && !stderr.contains("none within"),
        "{stderr}"
    );
    assert!(!out.exists(), "nothing written");
}

#[test]
fn a_huge_value_is_echoed_cut() {
    let emu = Emulator::start();
    let huge = format!("{{\"a\": \"{}\"}}", "x".repeat(100_000));
    for args in [
        vec![
            "install",
            "--period-us",
            "1000",
            "--task",
            "add",
            "--request",
            &huge,
        ],
        vec!["install", "--period-us", "1000", "--template", &huge],
        vec!["install", "--period-us", "1000", "--task", &huge],
    ] {
        let (success, _, stderr) = qf(&emu, &args);
        assert!(!success);
        assert!(
            stderr.len() < 2000 && stderr.contains(&format!("… ({} bytes)", huge.len())),
            "{} bytes: {}",
            stderr.len(),
            &stderr[..stderr.len().min(300)]
        );
    }
}
