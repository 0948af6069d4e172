//! The remote core serving rpmsg over the vrings, driven by a Linux-6.12-faithful driver side:
//! attach, name-service announcement, QFabric frames answered as `qf-tasks` answers them,
//! buffer recycling, and the session rules of docs/virtual-board.md.

mod common;

use std::time::Duration;

use common::frames::{request, Reference};
use common::linux::LinuxSide;
use common::{wait_until, Rig};
use qf_mcu_emu::faults::Faults;
use qf_mcu_emu::layout::{control, CHANNEL_ADDR, LAYOUT_VERSION, MAGIC};
use qf_mcu_emu::rpmsg::{self, NS_ADDR};

const T: Duration = Duration::from_secs(5);
/// The address Linux's rpmsg_char endpoint gets (dynamic addresses start at 1024).
const LINUX_EPT: u32 = 1024;

/// Attached, the announcement still unread.
fn just_attached(tag: &str, faults: Faults) -> (Rig, LinuxSide) {
    let rig = Rig::start(tag, faults);
    let mut linux = LinuxSide::connect(rig.socket());
    linux.attach();
    (rig, linux)
}

fn expect_announcement(linux: &mut LinuxSide) {
    let ns = linux.recv(T).expect("name-service announcement");
    assert_eq!((ns.src, ns.dst), (CHANNEL_ADDR, NS_ADDR));
    assert_eq!(ns.payload, rpmsg::ns_announcement("qfabric", CHANNEL_ADDR));
    assert_eq!(ns.used_len as usize, rpmsg::HEADER_LEN + rpmsg::NS_MSG_LEN);
}

#[test]
fn the_control_block_and_table_are_published_and_the_heartbeat_runs() {
    let rig = Rig::start("publish", Faults::default());
    let linux = LinuxSide::connect(rig.socket());
    assert_eq!(linux.control(control::MAGIC), MAGIC);
    assert_eq!(linux.control(control::LAYOUT_VERSION), LAYOUT_VERSION);
    assert_eq!(linux.control(control::GENERATION), 1);
    assert_eq!(linux.control(control::RSC_TABLE_OFFSET), 0x1000);
    assert_eq!(linux.control(control::RSC_TABLE_SIZE), 88);
    assert_eq!(linux.control(control::HEARTBEAT_PERIOD_US), 1000);
    assert_eq!(linux.control(control::CHANNEL_ADDR), 0x400);
    let beat = linux.control(control::HEARTBEAT);
    wait_until("the heartbeat advances", || {
        linux.control(control::HEARTBEAT) > beat + 5
    });
}

#[test]
fn after_driver_ok_the_mcu_announces_qfabric_at_53_and_serves_the_attach() {
    let (rig, mut linux) = just_attached("ns", Faults::default());
    expect_announcement(&mut linux);
    assert_eq!(linux.control(control::SERVED_ATTACH_COUNT), 1);
    assert_eq!(rig.board_stats().sessions, 1);
    let pending = linux
        .client
        .take_interrupt(qf_mcu_emu::ivshmem::VECTOR_VRING);
    assert!(
        linux.interrupts >= 1 || pending,
        "the announcement raised vector 0"
    );
}

#[test]
fn frames_over_rpmsg_are_answered_exactly_as_qf_tasks_answers_them() {
    let (_rig, mut linux) = just_attached("frames", Faults::default());
    expect_announcement(&mut linux);
    let mut reference = Reference::new();
    for id in 1..=200u64 {
        let frame = request(id);
        linux.send(LINUX_EPT, CHANNEL_ADDR, &frame);
        let reply = linux
            .recv(T)
            .unwrap_or_else(|| panic!("reply to invocation {id}"));
        assert_eq!((reply.src, reply.dst), (CHANNEL_ADDR, LINUX_EPT));
        assert_eq!(reply.payload, reference.answer(&frame), "invocation {id}");
    }
}

#[test]
fn a_replayed_invocation_is_answered_duplicate_by_the_per_task_window() {
    let (_rig, mut linux) = just_attached("replay", Faults::default());
    expect_announcement(&mut linux);
    let frame = common::frames::add_request(9, 0, 1, 2);
    linux.send(LINUX_EPT, CHANNEL_ADDR, &frame);
    let first = linux.recv(T).unwrap();
    linux.send(LINUX_EPT, CHANNEL_ADDR, &frame);
    let second = linux.recv(T).unwrap();
    assert_eq!(
        qf_abi::decode_frame(&first.payload).unwrap().header.status,
        qf_abi::Status::Ok
    );
    assert_eq!(
        qf_abi::decode_frame(&second.payload).unwrap().header.status,
        qf_abi::Status::Duplicate
    );
}

#[test]
fn two_thousand_frames_recycle_every_tx_and_rx_buffer_many_times() {
    let (_rig, mut linux) = just_attached("recycle", Faults::default());
    expect_announcement(&mut linux);
    let mut reference = Reference::new();
    // Bursts of 32 in flight, well past the 256 fresh tx and 256 rx buffers.
    for burst in 0..63u64 {
        let ids: Vec<u64> = (1..=32).map(|i| burst * 32 + i).collect();
        for &id in &ids {
            linux.send(LINUX_EPT, CHANNEL_ADDR, &request(id));
        }
        for &id in &ids {
            let reply = linux
                .recv(T)
                .unwrap_or_else(|| panic!("reply to invocation {id}"));
            assert_eq!(
                reply.payload,
                reference.answer(&request(id)),
                "invocation {id}"
            );
        }
    }
}

#[test]
fn malformed_frames_still_get_an_answer_with_the_rejection_status() {
    let (_rig, mut linux) = just_attached("malformed", Faults::default());
    expect_announcement(&mut linux);
    let mut reference = Reference::new();
    for junk in [
        vec![],
        vec![0u8; 10],
        b"QFAB but not really a header at all....".to_vec(),
        vec![0xff; 496],
    ] {
        linux.send(LINUX_EPT, CHANNEL_ADDR, &junk);
        let reply = linux.recv(T).expect("a rejection reply");
        assert_eq!(reply.payload, reference.answer(&junk));
        assert_ne!(
            qf_abi::decode_frame(&reply.payload).unwrap().header.status,
            qf_abi::Status::Ok
        );
    }
}

#[test]
fn messages_to_addresses_other_than_the_channel_are_consumed_unanswered() {
    let (rig, mut linux) = just_attached("foreign", Faults::default());
    expect_announcement(&mut linux);
    linux.send(LINUX_EPT, 0x999, &request(1));
    wait_until("the message is counted", || {
        rig.board_stats().foreign_messages == 1
    });
    assert!(linux.recv(Duration::from_millis(100)).is_none());
    linux.send(LINUX_EPT, CHANNEL_ADDR, &request(2));
    assert!(linux.recv(T).is_some(), "the channel still answers");
}

#[test]
fn a_kick_whose_tag_is_not_the_current_attach_is_ignored_as_stale() {
    let rig = Rig::start("stale", Faults::default());
    let mut linux = LinuxSide::connect(rig.socket());
    // A doorbell before any attach: nothing to serve.
    linux.kick();
    wait_until("the kick is judged stale", || {
        rig.board_stats().stale_kicks == 1
    });
    linux.attach();
    expect_announcement(&mut linux);
    // A leftover kick from an older attach (tag != attach_count) must not be served.
    linux.shm.store_u32(control::KICK_TAG, 0).unwrap();
    assert!(linux.client.doorbell(0, 0));
    wait_until("the old-tag kick is judged stale", || {
        rig.board_stats().stale_kicks == 2
    });
}

#[test]
fn a_reattach_starts_a_new_session_with_fresh_rings_and_a_new_announcement() {
    let (rig, mut linux) = just_attached("reattach", Faults::default());
    expect_announcement(&mut linux);
    linux.send(LINUX_EPT, CHANNEL_ADDR, &request(1));
    assert!(linux.recv(T).is_some());
    // Module unload + reload: detach, then attach again (attach_count 2, rings zeroed).
    linux.detach();
    linux.attach();
    expect_announcement(&mut linux);
    assert_eq!(linux.control(control::SERVED_ATTACH_COUNT), 2);
    assert_eq!(rig.board_stats().sessions, 2);
    linux.send(LINUX_EPT, CHANNEL_ADDR, &request(2));
    assert!(linux.recv(T).is_some());
}
