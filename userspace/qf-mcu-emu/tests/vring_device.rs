//! The virtqueue device on its own, against Linux's split-ring driver: the two address windows,
//! descriptors outside the rpmsg buffers, `VRING_AVAIL_F_NO_INTERRUPT`, and an empty rx ring.

mod common;

use common::linux::{DriverRing, BAR2_PA};
use qf_mcu_emu::layout::{BUFFERS_OFFSET, QF_DA_BASE};
use qf_mcu_emu::rpmsg;
use qf_mcu_emu::rsc_table;
use qf_mcu_emu::shm::SharedMemory;
use qf_mcu_emu::vring::{DeviceError, RpmsgDevice, Sent};

const SIZE: u64 = 4 << 20;

fn board() -> (SharedMemory, rsc_table::VdevInfo, DriverRing, DriverRing) {
    let shm = SharedMemory::create(SIZE).unwrap();
    let vdev = rsc_table::decode_vdev(&rsc_table::encode()).unwrap();
    let rx = DriverRing::new(&shm, vdev.vrings[0].da, 256, 4096);
    let tx = DriverRing::new(&shm, vdev.vrings[1].da, 256, 4096);
    (shm, vdev, rx, tx)
}

fn message(shm: &SharedMemory, offset: u64, payload: &[u8]) -> u32 {
    let mut buf = [0u8; rpmsg::BUFFER_SIZE];
    let len = rpmsg::encode(1024, 0x400, payload, &mut buf).unwrap();
    shm.write(offset, &buf[..len]).unwrap();
    len as u32
}

#[test]
fn buffers_at_guest_physical_addresses_are_read_through_the_linux_window() {
    let (shm, vdev, _rx, mut tx) = board();
    let mut device = RpmsgDevice::new(shm.file(), SIZE, BAR2_PA, &vdev).unwrap();
    let len = message(&shm, BUFFERS_OFFSET, b"ping");
    tx.add(&shm, BAR2_PA + BUFFERS_OFFSET, len, false);
    let mut inbox = Vec::new();
    device.receive(&mut inbox).unwrap();
    assert_eq!(inbox.len(), 1);
    assert_eq!(
        (inbox[0].src, inbox[0].dst, inbox[0].payload.as_slice()),
        (1024, 0x400, &b"ping"[..])
    );
    assert!(
        tx.get_used(&shm).is_some(),
        "the tx buffer went back to Linux"
    );
}

#[test]
fn a_descriptor_outside_the_buffer_carveout_is_returned_unread_and_counted() {
    let (shm, vdev, _rx, mut tx) = board();
    let mut device = RpmsgDevice::new(shm.file(), SIZE, BAR2_PA, &vdev).unwrap();
    // Points at the control block through the Linux window, and at the MCU window's vrings.
    tx.add(&shm, BAR2_PA, 64, false);
    tx.add(&shm, QF_DA_BASE + 0x1_0000, 64, false);
    let mut inbox = Vec::new();
    device.receive(&mut inbox).unwrap();
    assert!(inbox.is_empty());
    assert_eq!(device.stats().bad_descriptors, 2);
    assert!(
        tx.get_used(&shm).is_some() && tx.get_used(&shm).is_some(),
        "both returned"
    );
}

#[test]
fn a_write_only_descriptor_on_the_tx_ring_is_refused() {
    let (shm, vdev, _rx, mut tx) = board();
    let mut device = RpmsgDevice::new(shm.file(), SIZE, BAR2_PA, &vdev).unwrap();
    let len = message(&shm, BUFFERS_OFFSET, b"x");
    tx.add(&shm, BAR2_PA + BUFFERS_OFFSET, len, true);
    let mut inbox = Vec::new();
    device.receive(&mut inbox).unwrap();
    assert!(inbox.is_empty());
    assert_eq!(device.stats().bad_descriptors, 1);
}

#[test]
fn without_rx_buffers_sending_waits_and_with_one_it_delivers_and_wants_an_interrupt() {
    let (shm, vdev, mut rx, tx) = board();
    let mut device = RpmsgDevice::new(shm.file(), SIZE, BAR2_PA, &vdev).unwrap();
    assert_eq!(device.send(0x400, 1024, b"hello").unwrap(), Sent::NoBuffer);
    rx.add(&shm, BAR2_PA + BUFFERS_OFFSET, 512, true);
    assert_eq!(
        device.send(0x400, 1024, b"hello").unwrap(),
        Sent::Delivered { interrupt: true }
    );
    let (_, len) = rx.get_used(&shm).unwrap();
    assert_eq!(len, 16 + 5);
    let mut buf = vec![0u8; len as usize];
    shm.read(BUFFERS_OFFSET, &mut buf).unwrap();
    assert_eq!(rpmsg::decode(&buf).unwrap().1, b"hello");
    // Linux disabled callbacks on its tx ring: no interrupt wanted there.
    tx.disable_cb(&shm);
    assert!(!device.wants_interrupt(1).unwrap());
    assert!(device.wants_interrupt(0).unwrap());
}

#[test]
fn a_linux_window_overlapping_the_mcu_window_is_refused_and_an_identical_one_is_shared() {
    let (shm, vdev, _rx, _tx) = board();
    let overlap = RpmsgDevice::new(shm.file(), SIZE, QF_DA_BASE + 0x20_0000, &vdev);
    assert!(matches!(overlap, Err(DeviceError::Overlap { .. })));
    assert!(
        RpmsgDevice::new(shm.file(), SIZE, QF_DA_BASE, &vdev).is_ok(),
        "da == pa board"
    );
}
