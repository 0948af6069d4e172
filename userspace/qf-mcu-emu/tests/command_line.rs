//! The `qf-mcu-emu` command refuses what it cannot serve before serving anything: a shared-memory
//! size no BAR can have (with or without ivshmem), and a socket path another emulator listens on.

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
