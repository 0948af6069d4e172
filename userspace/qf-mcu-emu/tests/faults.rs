//! Each fault knob, observed from the Linux side of the board: added latency, dropped replies,
//! silence, crash (heartbeat stops, state crashed, nothing served) and restart (new generation,
//! fresh table, old attach ignored, re-attach announced again, replay windows wiped).

mod common;

use std::time::{Duration, Instant};

use common::frames::{add_request, request};
use common::{attached, wait_until};
use qf_mcu_emu::board::Command;
use qf_mcu_emu::faults::Faults;
use qf_mcu_emu::layout::{control, McuState, CHANNEL_ADDR};

const T: Duration = Duration::from_secs(5);
const QUIET: Duration = Duration::from_millis(150);
const LINUX_EPT: u32 = 1024;

fn status_of(reply: &[u8]) -> qf_abi::Status {
    qf_abi::decode_frame(reply).unwrap().header.status
}

#[test]
fn added_latency_delays_every_reply_by_at_least_the_knob() {
    let (_rig, mut linux) = attached("latency", Faults::new(20_000, 0, false));
    for id in 1..=3 {
        let start = Instant::now();
        linux.send(LINUX_EPT, CHANNEL_ADDR, &request(id));
        assert!(linux.recv(T).is_some());
        assert!(
            start.elapsed() >= Duration::from_millis(20),
            "reply {id} came too early"
        );
    }
}

#[test]
fn drop_every_3_withholds_the_3rd_6th_and_9th_reply() {
    let (rig, mut linux) = attached("drop", Faults::new(0, 3, false));
    let mut answered = Vec::new();
    for id in 1..=9u64 {
        linux.send(LINUX_EPT, CHANNEL_ADDR, &request(id));
        let timeout = if id % 3 == 0 { QUIET } else { T };
        answered.push(linux.recv(timeout).is_some());
    }
    assert_eq!(
        answered,
        [true, true, false, true, true, false, true, true, false]
    );
    assert_eq!(rig.mcu.faults().dropped(), 3);
}

#[test]
fn a_silent_mcu_reads_requests_but_answers_none_until_resumed() {
    let (rig, mut linux) = attached("silent", Faults::default());
    rig.mcu.faults().set_silent(true);
    linux.send(LINUX_EPT, CHANNEL_ADDR, &request(1));
    assert!(linux.recv(QUIET).is_none());
    assert_eq!(rig.mcu.stats().unanswered, 1);
    rig.mcu.faults().set_silent(false);
    linux.send(LINUX_EPT, CHANNEL_ADDR, &request(2));
    assert!(linux.recv(T).is_some());
}

#[test]
fn a_crash_stops_the_heartbeat_publishes_crashed_interrupts_linux_and_serves_nothing() {
    let (rig, mut linux) = attached("crash", Faults::default());
    linux
        .client
        .take_interrupt(qf_mcu_emu::ivshmem::VECTOR_STATE);
    rig.control.send(Command::Crash);
    assert!(linux.wait_state_interrupt(T), "vector 1 raised");
    assert_eq!(linux.control(control::MCU_STATE), McuState::Crashed as u32);
    let beat = linux.control(control::HEARTBEAT);
    std::thread::sleep(Duration::from_millis(30));
    assert!(
        linux.control(control::HEARTBEAT) <= beat + 1,
        "heartbeat stopped"
    );
    linux.send(LINUX_EPT, CHANNEL_ADDR, &request(1));
    assert!(linux.recv(QUIET).is_none(), "a crashed MCU answers nothing");
}

#[test]
fn a_restart_publishes_generation_2_and_serves_again_only_after_linux_reattaches() {
    let (rig, mut linux) = attached("restart", Faults::default());
    let frame = add_request(5, 0, 40, 2);
    linux.send(LINUX_EPT, CHANNEL_ADDR, &frame);
    assert_eq!(
        status_of(&linux.recv(T).unwrap().payload),
        qf_abi::Status::Ok
    );

    rig.control.send(Command::Crash);
    rig.control.send(Command::Restart);
    wait_until("generation 2 is running", || {
        linux.control(control::GENERATION) == 2 && linux.control(control::MCU_STATE) == 2
    });
    assert_eq!(linux.control(control::SERVED_ATTACH_COUNT), 0);
    let beat = linux.control(control::HEARTBEAT);
    wait_until("the heartbeat resumes", || {
        linux.control(control::HEARTBEAT) > beat + 3
    });

    // Linux still on generation 1: its kicks are stale.
    let stale = rig.board_stats().stale_kicks;
    linux.send(LINUX_EPT, CHANNEL_ADDR, &request(6));
    wait_until("the old attach's kick is ignored", || {
        rig.board_stats().stale_kicks > stale
    });
    assert!(linux.recv(QUIET).is_none());

    // Recovery: detach, re-attach to generation 2, announcement again, traffic resumes.
    linux.detach();
    linux.attach();
    let ns = linux.recv(T).expect("announcement after re-attach");
    assert_eq!(ns.dst, 53);
    assert_eq!(linux.control(control::ATTACHED_GENERATION), 2);
    // The restarted MCU lost its replay windows: the same invocation is accepted again.
    linux.send(LINUX_EPT, CHANNEL_ADDR, &frame);
    assert_eq!(
        status_of(&linux.recv(T).unwrap().payload),
        qf_abi::Status::Ok
    );
}

#[test]
fn a_hang_stops_heartbeat_and_service_but_leaves_state_and_generation_for_the_watchdog() {
    let (rig, mut linux) = attached("hang", Faults::default());
    linux
        .client
        .take_interrupt(qf_mcu_emu::ivshmem::VECTOR_STATE);
    rig.control.send(Command::Hang);
    wait_until("the MCU is hung", || rig.mcu.is_crashed());
    let beat = linux.control(control::HEARTBEAT);
    std::thread::sleep(Duration::from_millis(30));
    assert!(
        linux.control(control::HEARTBEAT) <= beat + 1,
        "heartbeat stopped"
    );
    assert_eq!(linux.control(control::MCU_STATE), McuState::Running as u32);
    assert_eq!(linux.control(control::GENERATION), 1);
    assert!(
        !linux
            .client
            .take_interrupt(qf_mcu_emu::ivshmem::VECTOR_STATE),
        "no state interrupt"
    );
    let (sessions, stale) = (rig.board_stats().sessions, rig.board_stats().stale_kicks);
    linux.send(LINUX_EPT, CHANNEL_ADDR, &request(1));
    wait_until("the kick to a hung MCU is ignored", || {
        rig.board_stats().stale_kicks > stale
    });
    assert!(linux.recv(QUIET).is_none(), "a hung MCU answers nothing");
    assert_eq!(
        rig.board_stats().sessions,
        sessions,
        "and starts no session"
    );
    // restart recovers as from a crash
    rig.control.send(Command::Restart);
    wait_until("generation 2", || linux.control(control::GENERATION) == 2);
    let beat = linux.control(control::HEARTBEAT);
    wait_until("the heartbeat resumes", || {
        linux.control(control::HEARTBEAT) > beat + 3
    });
    linux.detach();
    linux.attach();
    assert!(linux.recv(T).is_some(), "announcement after re-attach");
    linux.send(LINUX_EPT, CHANNEL_ADDR, &request(2));
    assert!(linux.recv(T).is_some());
}
