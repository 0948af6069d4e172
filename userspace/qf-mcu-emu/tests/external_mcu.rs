//! An MCU outside this process, reached through a running `qf-board-bridge` (the Zephyr image
//! on QEMU's Cortex-M33, or `qf-mcu-emu --mailbox-socket`), driven by the Linux-6.12-faithful
//! driver side as QEMU's ivshmem client. Ignored by default: the board must be running.
//!
//! QF_BOARD_IVSHMEM=/path/to/ivshmem.sock cargo test -p qf-mcu-emu --test external_mcu -- \
//!     --ignored --test-threads 1
//!
//! QF_BOARD_FRAMES (default 500) sets the frame count; QF_BOARD_ADD_ONLY=1 sends only `add`
//! (for exec traces of the request path, zephyr-module/scripts/board-path.py).
//! Each test attaches anew (a new session), as Linux does after a module reload.

mod common;

use std::time::{Duration, Instant};

use common::frames::Reference;
use common::linux::LinuxSide;
use qf_mcu_emu::layout::{control, CHANNEL_ADDR};
use qf_mcu_emu::rpmsg::{self, NS_ADDR};
use qf_tasks::Task;

/// A TCG Cortex-M33 takes far longer than the emulator for fir_x512.
const T: Duration = Duration::from_secs(30);
const LINUX_EPT: u32 = 1024;

fn attached() -> LinuxSide {
    let socket = std::env::var("QF_BOARD_IVSHMEM")
        .expect("QF_BOARD_IVSHMEM: the running bridge's ivshmem socket");
    let mut linux = LinuxSide::connect(std::path::Path::new(&socket));
    linux.attach();
    let ns = linux.recv(T).expect("name-service announcement");
    assert_eq!((ns.src, ns.dst), (CHANNEL_ADDR, NS_ADDR));
    // struct rpmsg_ns_msg: name[32] (OpenAMP leaves the bytes after the NUL as they were on its
    // stack; Linux reads the name up to the NUL), addr, flags 0 (create).
    let expected = rpmsg::ns_announcement("qfabric", CHANNEL_ADDR);
    assert_eq!(ns.payload.len(), expected.len());
    assert_eq!(&ns.payload[..8], b"qfabric\0");
    assert_eq!(&ns.payload[32..], &expected[32..]);
    linux
}

/// The next reply that is not a resident chain's result (samples/executor runs one, whose
/// results go to the endpoint that last wrote, as on the emulator): crc32 results of contract
/// 1 whose invocation ids are 1 << 32 and up (`start_crc_chain`).
fn reply(linux: &mut LinuxSide, chain_results: &mut u64) -> Option<common::linux::Received> {
    loop {
        let received = linux.recv(T)?;
        let is_chain = qf_abi::decode_frame(&received.payload).is_ok_and(|f| {
            f.header.contract_id == 1
                && f.header.task_id == Task::Crc32.id()
                && f.header.invocation_id >> 32 == 1
        });
        if !is_chain {
            return Some(received);
        }
        *chain_results += 1;
    }
}

/// A request of every declared task in turn (add, crc32, fir_x1, fir_x64, fir_x512).
fn request(id: u64, epoch: u32) -> Vec<u8> {
    let add_only = std::env::var_os("QF_BOARD_ADD_ONLY").is_some();
    let task = if add_only {
        Task::Add
    } else {
        [
            Task::Add,
            Task::Crc32,
            Task::FirX1,
            Task::FirX64,
            Task::FirX512,
        ][(id % 5) as usize]
    };
    common::frames::task_request(task, id, epoch)
}

fn epoch() -> u32 {
    // A new epoch per run: the MCU's replay windows outlive a session.
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_secs() as u32)
}

#[test]
#[ignore = "needs a running board (QF_BOARD_IVSHMEM)"]
fn every_task_is_answered_as_qf_tasks_answers_it() {
    let count: u64 = std::env::var("QF_BOARD_FRAMES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(500);
    let mut linux = attached();
    let epoch = epoch();
    let mut reference = Reference::new();
    let mut add_rtt = Vec::new();
    let mut chain_results = 0;
    for id in 1..=count {
        let frame = request(id, epoch);
        let sent = Instant::now();
        linux.send(LINUX_EPT, CHANNEL_ADDR, &frame);
        let reply = reply(&mut linux, &mut chain_results)
            .unwrap_or_else(|| panic!("reply to invocation {id} (lost)"));
        if id % 5 == 0 || std::env::var_os("QF_BOARD_ADD_ONLY").is_some() {
            add_rtt.push(sent.elapsed());
        }
        assert_eq!((reply.src, reply.dst), (CHANNEL_ADDR, LINUX_EPT));
        assert_eq!(reply.payload, reference.answer(&frame), "invocation {id}");
    }
    add_rtt.sort();
    println!(
        "{count} frames, 0 wrong, 0 lost; add round trip p50 {:?} p99 {:?} (host driver side); {chain_results} chain results in between",
        add_rtt[add_rtt.len() / 2],
        add_rtt[add_rtt.len() * 99 / 100]
    );
}

#[test]
#[ignore = "needs a running board (QF_BOARD_IVSHMEM)"]
fn malformed_frames_and_a_replay_get_their_statuses() {
    let mut linux = attached();
    let epoch = epoch();
    let mut reference = Reference::new();
    let good = request(5, epoch);
    let mut bad_len = good.clone();
    bad_len.truncate(good.len() - 3);
    let mut unknown = request(10, epoch);
    unknown[8] = 0xee;
    for junk in [
        vec![],
        vec![0u8; 10],
        b"QFAB but not really a header at all....".to_vec(),
        vec![0xff; 496],
        bad_len,
        unknown,
        good.clone(),
        good,
    ] {
        linux.send(LINUX_EPT, CHANNEL_ADDR, &junk);
        let reply = reply(&mut linux, &mut 0).expect("an answer");
        assert_eq!(reply.payload, reference.answer(&junk), "frame {junk:02x?}");
    }
    assert_eq!(linux.control(control::MCU_STATE), 2, "the MCU still runs");
}
