//! The `qf-mcu-emu` command refuses what it cannot serve before serving anything: a shared-memory
//! size no BAR can have (with or without ivshmem), a socket path another emulator listens on, and
//! a pty link another emulator serves. Resident chains run through the binary's serial line,
//! alone and beside a socket.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn emulator() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_qf-mcu-emu"));
    command.stdout(Stdio::null()).stderr(Stdio::piped());
    command
}

/// Runs `command` to its end; one still serving after 20 s is killed and fails the test.
fn refused(command: &mut Command) -> std::process::Output {
    let mut child = command.spawn().expect("runs");
    let started = Instant::now();
    while child.try_wait().expect("waits").is_none() {
        if started.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("still serving after 20 s: it should have refused to start");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("ends")
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("qf-mcu-emu-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Kills the first emulator even when an assertion fails first.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_zero_shm_size_is_refused_without_ivshmem_naming_flag_and_value() {
    let dir = scratch("shm");
    let socket = dir.join("mcu.sock");
    let output = refused(
        emulator()
            .arg("--unix-socket")
            .arg(&socket)
            .args(["--shm-size", "0"]),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("invalid value '0' for '--shm-size <SIZE>'")
            && stderr.contains("is not a power of two (a PCI BAR) of at least 2097152 bytes"),
        "{stderr}"
    );
    assert!(!socket.exists(), "nothing was served");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_second_emulator_on_a_live_socket_is_refused_and_the_first_keeps_it() {
    let dir = scratch("live");
    let socket = dir.join("mcu.sock");
    let first = emulator()
        .arg("--unix-socket")
        .arg(&socket)
        .stderr(Stdio::null())
        .spawn()
        .expect("starts");
    let first = KillOnDrop(first);
    let started = Instant::now();
    while !socket.exists() {
        assert!(started.elapsed() < Duration::from_secs(20), "no socket");
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = refused(emulator().arg("--unix-socket").arg(&socket));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let alive = std::os::unix::net::UnixStream::connect(&socket).is_ok();
    drop(first);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "unix socket {}: another process is listening on it",
            socket.display()
        )),
        "{stderr}"
    );
    assert!(alive, "the first emulator still owns its socket");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Waits until `path` exists (a socket, or the pty's symbolic link).
fn appears(path: &std::path::Path) {
    let started = Instant::now();
    while std::fs::symlink_metadata(path).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_second_emulator_on_a_live_pty_link_is_refused_and_the_first_keeps_it() {
    use qf_execution::domain::{Domain, McuChannel};
    use qf_execution::serial::SerialLine;
    let dir = scratch("pty");
    let link = dir.join("mcu.tty");
    // A stale link (its pty long gone) is replaced.
    std::os::unix::fs::symlink("/dev/pts/qf-gone", &link).unwrap();
    let first = emulator()
        .arg("--serial-pty")
        .arg(&link)
        .stderr(Stdio::null())
        .spawn()
        .expect("starts");
    let first = KillOnDrop(first);
    let started = Instant::now();
    while std::fs::read_link(&link).is_ok_and(|t| t.ends_with("qf-gone")) {
        assert!(started.elapsed() < Duration::from_secs(20), "not replaced");
        std::thread::sleep(Duration::from_millis(20));
    }
    let pty = std::fs::read_link(&link).unwrap();
    let output = refused(emulator().arg("--serial-pty").arg(&link));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "serial pty link {}: another process serves it ({} is locked",
            link.display(),
            pty.display()
        )),
        "{stderr}"
    );
    // The link is the first emulator's still, and it answers through it.
    assert_eq!(std::fs::read_link(&link).unwrap(), pty);
    let mut mcu = McuChannel::new(
        SerialLine::open(&link, 115_200).unwrap(),
        Duration::from_secs(5),
    );
    let mut frame = [0u8; qf_abi::MAX_FRAME_LEN];
    let request = qf_execution::workload::random_request(qf_tasks::Task::Add, 1);
    let len =
        qf_execution::workload::encode_request(qf_tasks::Task::Add, &request, 7, 0, &mut frame)
            .unwrap();
    let reply = mcu
        .invoke(&frame[..len])
        .expect("the first emulator answers");
    assert!(
        qf_execution::workload::outcome_ok(qf_tasks::Task::Add, &request, reply.frame()).unwrap()
    );
    drop(mcu);
    drop(first);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Installs and starts chain 5 (crc32 every 2 ms) through the serial line at `link`, then
/// returns the contract ids of the next 20 results read from it.
fn chain_results_on_the_line(link: &std::path::Path) -> Vec<(u32, u64)> {
    use qf_execution::chains::{ChainControl, Timing};
    use qf_execution::domain::{McuChannel, McuEndpoint};
    use qf_execution::serial::SerialLine;
    let endpoint = McuEndpoint::Serial {
        device: link.to_owned(),
        baud: 115_200,
    };
    let mut control = ChainControl::new(endpoint.open(Duration::from_secs(5)).unwrap());
    let request = qf_execution::workload::random_request(qf_tasks::Task::Crc32, 3);
    let mut frame = [0u8; qf_abi::MAX_FRAME_LEN];
    let len = qf_execution::workload::encode_request(
        qf_tasks::Task::Crc32,
        &request,
        5 << 32,
        0,
        &mut frame,
    )
    .unwrap();
    let timing = Timing {
        period_us: 2000,
        ..Timing::default()
    };
    let install = timing
        .install(5, &frame[..len], ["p", "d", "b", "s"])
        .unwrap();
    assert_eq!(control.install(&install).unwrap(), 5);
    control.start(5).expect("a chain starts on the serial line");
    drop(control);
    let mut line = McuChannel::new(
        SerialLine::open(link, 115_200).unwrap(),
        Duration::from_secs(5),
    );
    let mut got = Vec::new();
    let mut buf = [0u8; qf_abi::MAX_FRAME_LEN];
    while got.len() < 20 {
        let (len, _) = line
            .receive(&mut buf, Duration::from_secs(5))
            .unwrap()
            .expect("a chain result within 5 s");
        let frame = qf_abi::decode_frame(&buf[..len]).unwrap();
        assert!(
            qf_execution::workload::outcome_ok(qf_tasks::Task::Crc32, &request, &buf[..len])
                .unwrap()
        );
        got.push((frame.header.contract_id, frame.header.invocation_id));
    }
    got
}

#[test]
fn resident_chains_run_on_the_serial_line_alone_and_beside_a_socket() {
    for with_socket in [false, true] {
        let dir = scratch(&format!("chains-{with_socket}"));
        let link = dir.join("mcu.tty");
        let mut command = emulator();
        command.arg("--serial-pty").arg(&link).stderr(Stdio::null());
        if with_socket {
            command.arg("--unix-socket").arg(dir.join("mcu.sock"));
        }
        let emu = KillOnDrop(command.spawn().expect("starts"));
        appears(&link);
        let results = chain_results_on_the_line(&link);
        assert!(
            results.iter().all(|&(chain, _)| chain == 5),
            "socket {with_socket}: {results:?}"
        );
        assert!(
            results.windows(2).all(|w| w[0].1 < w[1].1),
            "socket {with_socket}: ids increase: {results:?}"
        );
        drop(emu);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
