//! The emulator's ivshmem server against a client that speaks QEMU's side of
//! `docs/specs/ivshmem-spec.rst` (message order, ids, fds, vectors, doorbells).

mod common;

use std::time::Duration;

use common::{wait_until, Rig};
use qf_mcu_emu::ivshmem::{
    IvshmemClient, GUEST_PEER_ID, MCU_PEER_ID, VECTORS, VECTOR_STATE, VECTOR_VRING,
};
use qf_mcu_emu::layout::{control, MAGIC};
use qf_mcu_emu::shm::SharedMemory;

const T: Duration = Duration::from_secs(5);

#[test]
fn a_connecting_guest_gets_id_1_the_shared_memory_and_two_vectors_for_itself_and_peer_0() {
    let rig = Rig::server_only("setup");
    let client = IvshmemClient::connect(rig.socket(), T).unwrap();
    assert_eq!(client.id, GUEST_PEER_ID);
    assert_eq!(
        client.shm_size,
        4 << 20,
        "BAR2 is sized from fstat of the memfd"
    );
    assert_eq!(client.peer_vectors(MCU_PEER_ID), VECTORS);
    assert_eq!(client.peer_vectors(GUEST_PEER_ID), VECTORS);
    wait_until("the server registers the guest", || rig.guest.connected());
}

#[test]
fn the_client_maps_the_same_memory_the_emulator_writes() {
    let rig = Rig::server_only("memory");
    let client = IvshmemClient::connect(rig.socket(), T).unwrap();
    let guest = SharedMemory::from_file(client.shm.try_clone().unwrap(), client.shm_size).unwrap();
    rig.shm.store_u32(control::MAGIC, MAGIC).unwrap();
    assert_eq!(guest.load_u32(control::MAGIC).unwrap(), MAGIC);
    guest.store_u32(control::LINUX_STATE, 1).unwrap();
    assert_eq!(rig.shm.load_u32(control::LINUX_STATE).unwrap(), 1);
}

#[test]
fn the_guest_doorbell_rings_the_mcu_vector_it_names_and_no_other() {
    let rig = Rig::server_only("doorbell");
    let client = IvshmemClient::connect(rig.socket(), T).unwrap();
    assert!(client.doorbell(MCU_PEER_ID, VECTOR_STATE));
    wait_until("vector 1 rings", || rig.doorbell.take(VECTOR_STATE));
    assert!(!rig.doorbell.take(VECTOR_VRING), "vector 0 stayed quiet");
    assert!(client.doorbell(MCU_PEER_ID, VECTOR_VRING));
    wait_until("vector 0 rings", || rig.doorbell.take(VECTOR_VRING));
    assert!(
        !client.doorbell(MCU_PEER_ID, 2),
        "a vector beyond 2 is an ignored write, as in QEMU"
    );
    assert!(
        !client.doorbell(7, 0),
        "an unknown peer is an ignored write"
    );
}

#[test]
fn the_mcu_interrupts_the_guest_on_the_vector_it_chooses() {
    let rig = Rig::server_only("irq");
    let client = IvshmemClient::connect(rig.socket(), T).unwrap();
    wait_until("the guest is registered", || rig.guest.connected());
    assert!(rig.guest.notify(VECTOR_STATE));
    assert!(client.wait_interrupt(VECTOR_STATE, T));
    assert!(!client.take_interrupt(VECTOR_VRING));
    assert!(rig.guest.notify(VECTOR_VRING));
    assert!(client.wait_interrupt(VECTOR_VRING, T));
}

#[test]
fn a_second_guest_is_refused_while_one_is_connected_and_accepted_after_it_leaves() {
    let rig = Rig::server_only("second");
    let first = IvshmemClient::connect(rig.socket(), T).unwrap();
    wait_until("first guest registered", || rig.guest.connected());
    // The second connection is told version 0 and the ID -1 (which QEMU refuses to realize
    // the device with), then closed.
    let mut second = std::os::unix::net::UnixStream::connect(rig.socket()).unwrap();
    second.set_read_timeout(Some(T)).unwrap();
    let mut told = Vec::new();
    std::io::Read::read_to_end(&mut second, &mut told).unwrap();
    let words: Vec<i64> = told
        .chunks(8)
        .map(|w| i64::from_le_bytes(w.try_into().unwrap()))
        .collect();
    assert_eq!(
        words,
        [0, -1],
        "version 0, then an ID no peer has, then EOF"
    );
    assert_eq!(rig.guest.refused(), 1);
    assert!(rig.guest.connected(), "the first guest stays");
    let refused = IvshmemClient::connect(rig.socket(), Duration::from_millis(500));
    assert!(refused.is_err(), "a second guest gets no shared memory");
    assert_eq!(rig.guest.refused(), 2);
    drop(first);
    wait_until("the first guest's departure is noticed", || {
        !rig.guest.connected()
    });
    let again = IvshmemClient::connect(rig.socket(), T).unwrap();
    assert_eq!(again.id, GUEST_PEER_ID);
}

#[test]
fn binding_over_a_regular_file_is_refused_and_leaves_it_alone() {
    let dir = common::TempDir::new("notsock");
    let path = dir.path("precious");
    std::fs::write(&path, b"data").unwrap();
    let shm = SharedMemory::create(2 << 20).unwrap();
    let err = qf_mcu_emu::ivshmem::IvshmemServer::bind(&path, shm.file())
        .err()
        .unwrap();
    assert!(err.to_string().contains("not a socket"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), b"data");
}
