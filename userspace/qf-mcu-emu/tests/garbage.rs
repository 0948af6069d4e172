//! The `garbage N` fault knob, seen from a Linux-faithful driver side: N frames, byte-identical
//! to `garbage::frame`, go to the endpoint that last wrote; nothing goes before Linux wrote; and
//! the MCU keeps answering afterwards.

mod common;

use std::time::Duration;

use common::frames::Reference;
use common::linux::LinuxSide;
use common::{attached, wait_until, Rig};
use qf_mcu_emu::board::Command;
use qf_mcu_emu::faults::Faults;
use qf_mcu_emu::garbage;
use qf_mcu_emu::layout::CHANNEL_ADDR;
use qf_mcu_emu::rpmsg::MAX_PAYLOAD;

const T: Duration = Duration::from_secs(5);
const LINUX_EPT: u32 = 1030;

fn add_roundtrip(linux: &mut LinuxSide, id: u64) {
    let request = common::frames::add_request(id, 4, 2, 3);
    linux.send(LINUX_EPT, CHANNEL_ADDR, &request);
    let reply = linux.recv(T).expect("a reply");
    assert_eq!(reply.payload, Reference::new().answer(&request));
}

fn send_garbage(rig: &Rig, n: u64) {
    let before = rig.board_stats();
    rig.control.send(Command::Garbage(n));
    wait_until("the garbage is accounted", || {
        let now = rig.board_stats();
        now.garbage_sent + now.garbage_not_sent == before.garbage_sent + before.garbage_not_sent + n
    });
}

#[test]
fn garbage_goes_to_the_last_writer_byte_for_byte_and_the_mcu_keeps_answering() {
    let (rig, mut linux) = attached("garbage", Faults::default());
    send_garbage(&rig, 5);
    assert_eq!(
        rig.board_stats().garbage_not_sent,
        5,
        "no endpoint to send to yet"
    );
    assert!(linux.recv(Duration::from_millis(20)).is_none());

    add_roundtrip(&mut linux, 1);
    send_garbage(&rig, 50);
    assert_eq!(rig.board_stats().garbage_sent, 50);
    let mut expected = [0u8; MAX_PAYLOAD];
    for index in 0..50 {
        let got = linux.recv(T).expect("a garbage frame");
        let (len, kind) = garbage::frame(index, &mut expected);
        assert_eq!((got.src, got.dst), (CHANNEL_ADDR, LINUX_EPT));
        assert_eq!(got.payload, expected[..len], "frame {index} ({kind:?})");
    }
    add_roundtrip(&mut linux, 2);
}
