//! The MCU endpoint on a serial line, end to end on a pty pair (`nix::pty::openpty`, host tier):
//! the emulator serves one side (`SerialEndpoint`, as `qf-mcu-emu --serial-pty` does), the
//! agent's serial domain (`qf_execution::serial::SerialLine`) opens the other. Every declared
//! task round-trips correctly, chain control frames take the same path, damaged bytes in either
//! direction cost only the calls they hit, a vanished device is opened again, and a short run
//! prints the round trip's p50/p99 (a figure, not an assertion).

use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sys::eventfd::{EfdFlags, EventFd};
use qf_abi::chain::{ChainList, ChainListRequest, ChainOp, CONTROL_EFFECT};
use qf_abi::{decode_frame, decode_payload, encode_frame, Header, Status, MAX_FRAME_LEN};
use qf_execution::domain::{Domain, McuChannel, McuSerial};
use qf_execution::serial::{open_tty, SerialLine};
use qf_execution::wire::{write_message, Deframer};
use qf_execution::workload::{encode_request, outcome_ok, random_request};
use qf_mcu_emu::faults::Faults;
use qf_mcu_emu::mcu::Mcu;
use qf_mcu_emu::serial_endpoint::SerialEndpoint;
use qf_tasks::Task;

const BAUD: u32 = 115_200;
const TIMEOUT: Duration = Duration::from_secs(2);

/// An emulator serving a new pty linked at `link`, on its own thread until dropped.
struct Emulator {
    stop: Arc<EventFd>,
    thread: Option<std::thread::JoinHandle<()>>,
    endpoint: Arc<SerialEndpoint>,
}

impl Emulator {
    fn start(link: &Path, faults: Faults) -> Emulator {
        let endpoint = Arc::new(SerialEndpoint::pty(link, BAUD).unwrap());
        let stop = Arc::new(EventFd::from_value_and_flags(0, EfdFlags::EFD_CLOEXEC).unwrap());
        let mcu = Mcu::new(faults);
        let thread = {
            let (endpoint, stop) = (Arc::clone(&endpoint), Arc::clone(&stop));
            std::thread::spawn(move || endpoint.run(stop.as_fd(), &mcu).unwrap())
        };
        Emulator {
            stop,
            thread: Some(thread),
            endpoint,
        }
    }

    fn counters(&self) -> qf_execution::wire::DeframeCounters {
        *self.endpoint.counters().lock().unwrap()
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

fn call(mcu: &mut McuSerial, task: Task, id: u64) -> anyhow::Result<bool> {
    let request = random_request(task, id);
    let mut frame = [0u8; MAX_FRAME_LEN];
    let len = encode_request(task, &request, id, 0, &mut frame)?;
    let invocation = mcu.invoke(&frame[..len])?;
    anyhow::ensure!(
        invocation.compute.is_some(),
        "the emulator sends the compute trailer"
    );
    outcome_ok(task, &request, invocation.frame())
}

fn line(link: &Path) -> McuSerial {
    McuChannel::new(SerialLine::open(link, BAUD).unwrap(), TIMEOUT)
}

#[test]
fn every_declared_task_round_trips_and_control_frames_take_the_same_path() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("mcu.tty");
    let emulator = Emulator::start(&link, Faults::new(0, 0, false));
    let mut mcu = line(&link);
    let mut id = 0;
    for task in Task::ALL {
        for _ in 0..20 {
            id += 1;
            assert!(call(&mut mcu, task, id).unwrap(), "{task:?} #{id}");
        }
    }
    // A chain control frame (list the installed chains) through the same serve path.
    let header = Header::request(ChainOp::List.task_id(), CONTROL_EFFECT, 1, 0);
    let mut frame = [0u8; MAX_FRAME_LEN];
    let len = encode_frame(&header, &ChainListRequest {}, &mut frame).unwrap();
    let reply = mcu.invoke(&frame[..len]).unwrap();
    let reply = decode_frame(reply.frame()).unwrap();
    assert_eq!(reply.header.status, Status::Ok);
    let list: ChainList = decode_payload(reply.payload).unwrap();
    assert_eq!(list.count, 0, "{list:?}");
    let c = emulator.counters();
    assert_eq!(c.messages, id + 1);
    assert_eq!((c.bad_lengths, c.bad_magic, c.truncated), (0, 0, 0));
}

#[test]
fn garbage_towards_the_mcu_costs_only_the_calls_it_hits() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("mcu.tty");
    let emulator = Emulator::start(&link, Faults::new(0, 0, false));
    let mut mcu = line(&link);
    // A second writer on the same line injects the damage between calls.
    let mut noise = open_tty(&link, BAUD).unwrap();
    let mut frame = [0u8; MAX_FRAME_LEN];
    let request = random_request(Task::Crc32, 1);
    let len = encode_request(Task::Crc32, &request, 1_000, 0, &mut frame).unwrap();
    let mut framed = Vec::new();
    write_message(&mut framed, &frame[..len], None).unwrap();
    let mut truncated = framed.clone();
    truncated.truncate(framed.len() - 5);
    let mut bad_length = framed.clone();
    bad_length[0] = 0xff;
    const CUT: usize = 2;
    let damage: [&[u8]; 5] = [
        b"line noise \x00\x00\xff",
        &[0xff, 0xff, b'Q', b'F', b'A', b'B'],
        &truncated,
        &bad_length,
        &[0x00, 0x30, b'X', b'X', b'X', b'X', b'X'],
    ];
    let mut id = 0;
    for (round, bytes) in damage.iter().cycle().take(25).enumerate() {
        let before = emulator.counters();
        noise.write_all(bytes).unwrap();
        // The line goes quiet before the next call, as between two calls. A message cut short
        // needs the emulator to have seen that silence (on a loaded host its thread may read the
        // cut message and the next request together, which would cost that request): wait
        // until it counted it. Garbage needs no silence: the hunt finds the next request.
        let start = Instant::now();
        let cut = round % damage.len() == CUT;
        while cut && emulator.counters().truncated == before.truncated {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "the cut message was never dropped"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        for _ in 0..3 {
            id += 1;
            assert!(call(&mut mcu, Task::Add, id).unwrap(), "round {round}");
        }
    }
    let c = emulator.counters();
    assert!(
        c.bad_lengths >= 5 && c.bad_magic >= 5 && c.truncated >= 5,
        "{c:?}"
    );
    assert!(c.discarded_bytes > 0, "{c:?}");
    // Garbage answered nothing the agent waited for: every call above got its own reply.
    assert!(c.messages >= id);
}

#[test]
fn garbage_and_stale_replies_towards_linux_are_skipped() {
    // The test plays the MCU on a pty of its own: each request is answered after noise and a
    // reply to another invocation. (A cut reply before the right one needs the reader to see
    // the line's silence in between, which a loaded host does not promise: the deframer's
    // tests cover it.)
    let pty = nix::pty::openpty(None, None).unwrap();
    qf_execution::serial::configure_raw(pty.slave.as_fd(), BAUD).unwrap();
    let slave = std::fs::read_link(format!(
        "/proc/self/fd/{}",
        std::os::fd::AsRawFd::as_raw_fd(&pty.slave)
    ))
    .unwrap();
    let mut master = std::fs::File::from(pty.master);
    let mut mcu = McuChannel::new(SerialLine::open(&slave, BAUD).unwrap(), TIMEOUT);
    let calls = 30u64;
    let server = std::thread::spawn(move || {
        // Both sides stay open until joined: closing the master hangs up the line, and a
        // hung-up tty loses what it held.
        let mut deframer = Deframer::new();
        let mut replay: qf_tasks::Replay = qf_tasks::Replay::new();
        let mut byte = [0u8; 1];
        let mut served = 0;
        while served < calls {
            master.read_exact(&mut byte).unwrap();
            let Some(request) = deframer.push(byte[0]).map(<[u8]>::to_vec) else {
                continue;
            };
            let mut reply = [0u8; MAX_FRAME_LEN];
            let done = qf_tasks::serve(&request, &mut reply, &|| 0u64, &mut replay).unwrap();
            let mut stale = reply;
            stale[12..20].copy_from_slice(&u64::MAX.to_be_bytes());
            let mut out = b"\x07\x07noise QFAB".to_vec();
            write_message(&mut out, &stale[..done.len], Some(1)).unwrap();
            out.extend_from_slice(&[0x00, 0x30, b'X', b'X', b'X', b'X']);
            write_message(&mut out, &reply[..done.len], Some(7)).unwrap();
            master.write_all(&out).unwrap();
            served += 1;
        }
        (master, pty.slave)
    });
    for id in 1..=calls {
        assert!(call(&mut mcu, Task::Crc32, id).unwrap(), "call {id}");
    }
    server.join().unwrap();
    let mut buf = [0u8; MAX_FRAME_LEN];
    // The stale replies wait as unasked frames (where chain results would be read).
    let (len, _) = mcu
        .receive(&mut buf, Duration::ZERO)
        .unwrap()
        .expect("an unasked frame");
    assert_eq!(
        decode_frame(&buf[..len]).unwrap().header.invocation_id,
        u64::MAX
    );
}

#[test]
fn a_silent_mcu_is_a_time_out_and_a_vanished_device_is_opened_again() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("mcu.tty");
    let emulator = Emulator::start(&link, Faults::new(0, 0, true));
    let mut mcu = McuChannel::new(
        SerialLine::reconnecting(&link, BAUD).unwrap(),
        Duration::from_millis(100),
    );
    let error = format!("{:#}", call(&mut mcu, Task::Add, 1).unwrap_err());
    assert!(
        error.contains("no reply from the MCU on") && error.contains("100 ms"),
        "{error}"
    );
    assert!(mcu.check_available(), "a time-out keeps the line");
    // The emulator goes away with its pty: the line is down, naming why.
    drop(emulator);
    let start = Instant::now();
    while mcu.check_available() {
        assert!(start.elapsed() < Duration::from_secs(5), "still up");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(mcu.down_reason().is_some());
    assert!(call(&mut mcu, Task::Add, 2).is_err());
    // A new one at the same link: a check within the reconnect backoff's bound opens it, and
    // calls go through.
    let _emulator = Emulator::start(&link, Faults::new(0, 0, false));
    let start = Instant::now();
    while !mcu.check_available() {
        let limit = qf_execution::reconnect::MAX_BACKOFF + Duration::from_secs(1);
        assert!(start.elapsed() < limit, "{:?}", mcu.down_reason());
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(call(&mut mcu, Task::Add, 3).unwrap());
}

/// A benchmark-style run: round trips over the pty, p50/p99 printed (not asserted).
#[test]
fn serial_round_trip_p50_p99() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("mcu.tty");
    let _emulator = Emulator::start(&link, Faults::new(0, 0, false));
    let mut mcu = line(&link);
    let mut id = 0;
    for task in [Task::Add, Task::Crc32, Task::FirX64] {
        let mut latencies = Vec::new();
        for i in 0..520 {
            id += 1;
            let request = random_request(task, id);
            let mut frame = [0u8; MAX_FRAME_LEN];
            let len = encode_request(task, &request, id, 0, &mut frame).unwrap();
            let invocation = mcu.invoke(&frame[..len]).unwrap();
            assert!(outcome_ok(task, &request, invocation.frame()).unwrap());
            if i >= 20 {
                latencies.push(invocation.latency);
            }
        }
        latencies.sort();
        let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q).round() as usize];
        println!(
            "serial (pty) {:<8} {} calls: round trip p50 {:.1} us, p99 {:.1} us",
            task.name(),
            latencies.len(),
            at(0.50).as_secs_f64() * 1e6,
            at(0.99).as_secs_f64() * 1e6
        );
    }
}
