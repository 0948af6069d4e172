//! The agent's MCU endpoint on a Unix socket: u16 big-endian length-prefixed frames, answered by
//! the same MCU (replay windows, faults, crash) as over rpmsg; and the binary end to end.

mod common;

use std::io::Read;
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::frames::{add_request, request, Reference};
use common::{wait_until, Rig, TempDir};
use qf_execution::wire::{read_message, split_reply, write_message, MAX_MESSAGE_LEN};
use qf_mcu_emu::faults::Faults;

/// Kills the emulator if a test fails before stopping it.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn connect(path: &std::path::Path) -> UnixStream {
    let stream = UnixStream::connect(path).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    stream
}

/// One request; the reply's frame (its compute trailer checked present).
fn round_trip(stream: &mut UnixStream, frame: &[u8]) -> Option<Vec<u8>> {
    write_message(stream, frame, None).unwrap();
    let mut body = [0u8; MAX_MESSAGE_LEN];
    match read_message(stream, &mut body) {
        Ok(Some(len)) => {
            let (frame, compute_ns) = split_reply(&body[..len]).unwrap();
            assert!(
                compute_ns.is_some(),
                "the emulator always sends the compute trailer"
            );
            Some(frame.to_vec())
        }
        Ok(None) => None,
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            None
        }
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn frames_round_trip_in_the_agents_framing_with_a_compute_trailer() {
    let rig = Rig::start("unix", Faults::default());
    let mut stream = connect(&rig.unix_socket);
    let mut reference = Reference::new();
    for id in 1..=100 {
        let frame = request(id);
        assert_eq!(
            round_trip(&mut stream, &frame).unwrap(),
            reference.answer(&frame)
        );
    }
    // The prefix on the wire is big-endian.
    let frame = request(101);
    let mut raw = (frame.len() as u16).to_be_bytes().to_vec();
    raw.extend_from_slice(&frame);
    std::io::Write::write_all(&mut stream, &raw).unwrap();
    let mut prefix = [0u8; 2];
    stream.read_exact(&mut prefix).unwrap();
    let expected = reference.answer(&frame);
    assert_eq!(
        u16::from_be_bytes(prefix) as usize,
        expected.len() + 8,
        "frame + trailer"
    );
}

#[test]
fn oversized_and_malformed_frames_are_answered_with_their_status() {
    let rig = Rig::start("unix-bad", Faults::default());
    let mut stream = connect(&rig.unix_socket);
    let oversized = vec![0u8; 1030];
    let reply = round_trip(&mut stream, &oversized).unwrap();
    assert_eq!(
        qf_abi::decode_frame(&reply).unwrap().header.status,
        qf_abi::Status::Oversized
    );
    let reply = round_trip(&mut stream, b"not a frame").unwrap();
    assert_eq!(
        qf_abi::decode_frame(&reply).unwrap().header.status,
        qf_abi::Status::Malformed
    );
    assert!(
        round_trip(&mut stream, &request(1)).is_some(),
        "the connection survives bad input"
    );
    // A length prefix beyond the framing's limit cannot be resynchronised: the client is closed.
    std::io::Write::write_all(&mut stream, &5000u16.to_be_bytes()).unwrap();
    let mut rest = Vec::new();
    assert_eq!(
        stream.read_to_end(&mut rest).unwrap(),
        0,
        "closed without a reply"
    );
}

#[test]
fn rpmsg_and_the_unix_socket_share_one_mcu_and_its_replay_windows() {
    let rig = Rig::start("unix-shared", Faults::default());
    let mut linux = common::linux::LinuxSide::connect(rig.socket());
    linux.attach();
    linux.recv(Duration::from_secs(5)).unwrap();
    let frame = add_request(77, 0, 1, 1);
    linux.send(1024, qf_mcu_emu::layout::CHANNEL_ADDR, &frame);
    linux.recv(Duration::from_secs(5)).unwrap();
    let mut stream = connect(&rig.unix_socket);
    let reply = round_trip(&mut stream, &frame).unwrap();
    assert_eq!(
        qf_abi::decode_frame(&reply).unwrap().header.status,
        qf_abi::Status::Duplicate
    );
}

#[test]
fn a_crashed_mcu_does_not_answer_on_the_unix_socket_either() {
    let rig = Rig::start("unix-crash", Faults::default());
    let mut stream = connect(&rig.unix_socket);
    stream
        .set_read_timeout(Some(Duration::from_millis(150)))
        .unwrap();
    rig.control.send(qf_mcu_emu::board::Command::Crash);
    wait_until("the MCU is crashed", || rig.mcu.is_crashed());
    assert!(round_trip(&mut stream, &request(1)).is_none());
    rig.control.send(qf_mcu_emu::board::Command::Restart);
    wait_until("the MCU is back", || !rig.mcu.is_crashed());
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    assert!(round_trip(&mut stream, &request(2)).is_some());
}

#[test]
fn the_binary_serves_obeys_ctl_commands_and_exits_cleanly_on_sigterm() {
    let dir = TempDir::new("bin");
    let (sock, ctl) = (dir.path("mcu.sock"), dir.path("ctl.sock"));
    let exe = env!("CARGO_BIN_EXE_qf-mcu-emu");
    let mut child = KillOnDrop(
        Command::new(exe)
            .args([
                "--unix-socket",
                sock.to_str().unwrap(),
                "--control-socket",
                ctl.to_str().unwrap(),
            ])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    wait_until("the sockets exist", || sock.exists() && ctl.exists());
    let mut stream = connect(&sock);
    assert!(round_trip(&mut stream, &request(1)).is_some());

    let ctl_cmd = |words: &[&str]| {
        let out = Command::new(exe)
            .arg("ctl")
            .arg("--control-socket")
            .arg(&ctl)
            .args(words)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).trim().to_string(),
        )
    };
    assert_eq!(ctl_cmd(&["drop-every", "2"]), (true, "ok".to_string()));
    assert!(round_trip(&mut stream, &request(2)).is_some());
    stream
        .set_read_timeout(Some(Duration::from_millis(150)))
        .unwrap();
    assert!(
        round_trip(&mut stream, &request(3)).is_none(),
        "the 2nd reply since the knob is dropped"
    );
    assert_eq!(ctl_cmd(&["drop-every", "0"]), (true, "ok".to_string()));
    let (ok, status) = ctl_cmd(&["status"]);
    assert!(
        ok && status.contains("dropped=1") && status.contains("requests=3"),
        "{status}"
    );
    let (ok, reply) = ctl_cmd(&["latency-us", "soon"]);
    assert!(!ok && reply.contains("'soon'"), "{reply}");

    let pid = nix::unistd::Pid::from_raw(child.0.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let status = child.0.wait().unwrap();
    let mut log = String::new();
    child
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut log)
        .unwrap();
    assert!(status.success(), "exit status {status}; log:\n{log}");
    assert!(log.contains("stopping"), "{log}");
    assert!(!sock.exists() && !ctl.exists(), "sockets removed on exit");
}

#[test]
fn the_binary_names_its_bad_arguments() {
    let exe = env!("CARGO_BIN_EXE_qf-mcu-emu");
    let out = Command::new(exe)
        .args([
            "--unix-socket",
            "/tmp/x",
            "--shm-size",
            "3M",
            "--ivshmem-socket",
            "/tmp/y",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--shm-size")
            && err.contains("'3M' (3145728 bytes)")
            && err.contains("power of two"),
        "{err}"
    );
    let out = Command::new(exe).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing to serve"));
}

#[test]
fn with_the_paper_m33_model_a_kernel_takes_the_papers_mcu_time() {
    let dir = TempDir::new("m33");
    let sock = dir.path("mcu.sock");
    let exe = env!("CARGO_BIN_EXE_qf-mcu-emu");
    let _child = KillOnDrop(
        Command::new(exe)
            .args(["--unix-socket", sock.to_str().unwrap()])
            .args(["--compute-model", "paper-m33"])
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_until("the socket exists", || sock.exists());
    let mut stream = connect(&sock);
    // request(1) is a CRC-32: 26.9 µs on the paper's Cortex-M33, far more than this host needs.
    let frame = request(1);
    write_message(&mut stream, &frame, None).unwrap();
    let mut body = [0u8; MAX_MESSAGE_LEN];
    let len = read_message(&mut stream, &mut body).unwrap().unwrap();
    let (reply, compute_ns) = split_reply(&body[..len]).unwrap();
    assert_eq!(reply, Reference::new().answer(&frame));
    assert_eq!(compute_ns, Some(26_900));

    let out = Command::new(exe)
        .args(["--unix-socket", "/tmp/x", "--compute-model", "m4"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("'m4'"));
}
