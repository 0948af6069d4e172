//! A resident chain on the emulated MCU, seen from a Linux-faithful driver side: released by the
//! MCU's own timer, its results go, unrequested, to the endpoint that last wrote to the channel;
//! nothing is sent before Linux has written, a result that finds no rx buffer is dropped (never
//! queued), and a crash ends the chain.

mod common;

use std::time::Duration;

use common::frames::Reference;
use common::linux::LinuxSide;
use common::{attached, wait_until, Rig};
use qf_abi::chain::{ChainInstall, ChainOp, ChainRef, CONTROL_EFFECT};
use qf_abi::{encode_frame, Header, Status, MAX_FRAME_LEN};
use qf_mcu_emu::board::Command;
use qf_mcu_emu::faults::Faults;
use qf_mcu_emu::layout::CHANNEL_ADDR;
use qf_tasks::{Crc32Request, Task};

const T: Duration = Duration::from_secs(5);
const LINUX_EPT: u32 = 1024;
/// Contract 1: the chain's invocation ids start at 1 << 32, as in the Zephyr sample.
const FIRST_ID: u64 = 1 << 32;

/// The chain's request for invocation `id` (the template is the one for `FIRST_ID`).
fn crc_request(id: u64) -> Vec<u8> {
    let header = Header::request(Task::Crc32.id(), Task::Crc32.effect(), id, 4);
    let mut out = [0u8; MAX_FRAME_LEN];
    let block = core::array::from_fn(|i| (i * 7) as u8);
    let len = encode_frame(&header, &Crc32Request { block }, &mut out).unwrap();
    out[..len].to_vec()
}

/// The chain's id; its template names no contract, and its results carry this id.
const CHAIN: u32 = 3;

/// Sends one control frame to the MCU (as any transport would) and returns the answer's status,
/// `None` when the MCU does not answer.
fn control<T: serde::Serialize>(rig: &Rig, op: ChainOp, payload: &T) -> Option<Status> {
    answer(rig, op, payload).map(|(status, _)| status)
}

/// The status and payload of the MCU's answer to one control frame.
fn answer<T: serde::Serialize>(rig: &Rig, op: ChainOp, payload: &T) -> Option<(Status, Vec<u8>)> {
    let header = Header::request(op.task_id(), CONTROL_EFFECT, 1, 0);
    let mut frame = [0u8; MAX_FRAME_LEN];
    let len = encode_frame(&header, payload, &mut frame).unwrap();
    let mut out = [0u8; MAX_FRAME_LEN];
    let reply = rig.mcu.handle(&frame[..len], &mut out)?;
    let payload = qf_abi::decode_frame(&out[..reply.len])
        .unwrap()
        .payload
        .to_vec();
    Some((reply.status, payload))
}

fn start_chain(rig: &Rig, period_us: u32) {
    let install = ChainInstall::new(CHAIN, &crc_request(FIRST_ID), period_us, 0).unwrap();
    assert_eq!(control(rig, ChainOp::Install, &install), Some(Status::Ok));
    let chain = ChainRef { chain_id: CHAIN };
    assert_eq!(control(rig, ChainOp::Start, &chain), Some(Status::Ok));
    wait_until("the chain runs", || rig.board_stats().chain_running);
}

fn remove_chain(rig: &Rig) {
    let chain = ChainRef { chain_id: CHAIN };
    assert_eq!(control(rig, ChainOp::Remove, &chain), Some(Status::Ok));
}

fn invocation_id(payload: &[u8]) -> u64 {
    qf_abi::decode_frame(payload).unwrap().header.invocation_id
}

/// Binds `LINUX_EPT` at the MCU with one ordinary request and checks its reply comes first.
fn bind(linux: &mut LinuxSide) {
    let request = common::frames::add_request(1, 4, 2, 3);
    linux.send(LINUX_EPT, CHANNEL_ADDR, &request);
    let reply = linux.recv(T).expect("the reply to the binding request");
    assert_eq!(reply.payload, Reference::new().answer(&request));
}

#[test]
fn results_go_to_the_endpoint_that_last_wrote_each_as_the_dispatcher_answers_it() {
    let (rig, mut linux) = attached("chain-results", Faults::default());
    start_chain(&rig, 2000);
    wait_until("two releases", || rig.board_stats().chain.releases >= 2);
    assert!(
        linux.recv(Duration::from_millis(20)).is_none(),
        "no result before Linux wrote to the channel"
    );
    let before = rig.board_stats().chain;
    assert_eq!(before.sent, 0);
    assert!(before.send_failures >= 2, "{before:?}");

    bind(&mut linux);
    let mut previous = None;
    for _ in 0..20 {
        let result = linux.recv(T).expect("a chain result");
        assert_eq!((result.src, result.dst), (CHANNEL_ADDR, LINUX_EPT));
        let id = invocation_id(&result.payload);
        assert!(id > FIRST_ID, "ids of unsent releases are not reused");
        assert!(previous.is_none_or(|p| id > p), "{id} after {previous:?}");
        // The result names the chain's id (its template has no contract id).
        let mut expected = Reference::new().answer(&crc_request(id));
        expected[24..28].copy_from_slice(&CHAIN.to_be_bytes());
        assert_eq!(result.payload, expected, "invocation {id}");
        previous = Some(id);
    }

    let chain = ChainRef { chain_id: CHAIN };
    assert_eq!(control(&rig, ChainOp::Stop, &chain), Some(Status::Ok));
    let mut received = 20u64;
    while linux.recv(Duration::from_millis(20)).is_some() {
        received += 1;
    }
    assert!(
        linux.recv(Duration::from_millis(20)).is_none(),
        "nothing after the stop"
    );
    // The MCU's counters agree with what Linux received: every result sent after the bind
    // arrived, the ones before it were not delivered.
    let (status, payload) = answer(&rig, ChainOp::Status, &chain).unwrap();
    assert_eq!(status, Status::Ok);
    let status: qf_abi::chain::ChainStatus = qf_abi::decode_payload(&payload).unwrap();
    assert_eq!(status.results, status.releases);
    assert_eq!(
        status.releases - status.not_delivered,
        received,
        "{status:?}"
    );
    remove_chain(&rig);
}

#[test]
fn a_result_without_a_free_rx_buffer_is_dropped_and_counted_never_queued() {
    let (rig, mut linux) = attached("chain-full", Faults::default());
    bind(&mut linux);
    start_chain(&rig, 200);
    // Linux reads nothing: its 256 rx buffers fill, then results are refused.
    wait_until("results are refused", || {
        rig.board_stats().chain.send_failures >= 5
    });
    remove_chain(&rig);
    wait_until("the chain stops", || !rig.board_stats().chain_running);
    let stats = rig.board_stats().chain;
    let mut ids = Vec::new();
    while let Some(result) = linux.recv(Duration::from_millis(50)) {
        ids.push(invocation_id(&result.payload));
    }
    assert_eq!(
        ids.len() as u64,
        stats.sent,
        "every accepted result arrives"
    );
    assert_eq!(stats.sent + stats.send_failures, stats.releases);
    assert!(ids.windows(2).all(|w| w[1] > w[0]));
    assert_eq!(
        ids.last().copied(),
        Some(FIRST_ID + stats.sent - 1),
        "the refused results were the last ones, not queued for later"
    );
}

#[test]
fn a_crash_ends_the_chain_and_a_restart_does_not_bring_it_back() {
    let (rig, _linux) = attached("chain-crash", Faults::default());
    start_chain(&rig, 1000);
    rig.control.send(Command::Crash);
    wait_until("the chain ends with the crash", || {
        !rig.board_stats().chain_running
    });
    rig.control.send(Command::Restart);
    let releases = rig.board_stats().chain.releases;
    std::thread::sleep(Duration::from_millis(20));
    assert!(!rig.board_stats().chain_running);
    assert_eq!(rig.board_stats().chain.releases, releases);
    // Installed again after the restart, it runs; while the MCU is down, nothing answers.
    start_chain(&rig, 1000);
    rig.control.send(Command::Crash);
    wait_until("the chain ends with the crash", || {
        !rig.board_stats().chain_running
    });
    let install = ChainInstall::new(CHAIN, &crc_request(FIRST_ID), 1000, 0).unwrap();
    assert_eq!(control(&rig, ChainOp::Install, &install), None);
    std::thread::sleep(Duration::from_millis(20));
    assert!(!rig.board_stats().chain_running);
}
