//! The Linux side of the board, as 6.12 behaves (see the sources cited in docs/virtual-board.md).

use std::path::Path;
use std::sync::atomic::{fence, Ordering};
use std::time::{Duration, Instant};

use qf_mcu_emu::ivshmem::{IvshmemClient, MCU_PEER_ID, VECTOR_STATE, VECTOR_VRING};
use qf_mcu_emu::layout::{control, vring_parts, BUFFERS_OFFSET, QF_DA_BASE, RSC_TABLE_OFFSET};
use qf_mcu_emu::rpmsg;
use qf_mcu_emu::rsc_table::{self, TABLE_LEN};
use qf_mcu_emu::shm::SharedMemory;

/// Where the "guest BIOS" put BAR2: descriptors carry addresses in this window.
pub const BAR2_PA: u64 = 0xfe00_0000;
/// `MAX_RPMSG_NUM_BUFS` with 256-entry vrings.
const NUM_BUFS: u64 = 512;
const VRING_DESC_F_NEXT: u16 = 1;
const VRING_DESC_F_WRITE: u16 = 2;
const VRING_AVAIL_F_NO_INTERRUPT: u16 = 1;
const VRING_USED_F_NO_NOTIFY: u16 = 1;

/// `virtio_ring`'s split-ring driver state for one vring, addressed by shared-memory offset.
pub struct DriverRing {
    desc: u64,
    avail: u64,
    used: u64,
    num: u16,
    free_head: u16,
    num_free: u16,
    next: Vec<u16>,
    avail_idx_shadow: u16,
    last_used_idx: u16,
}

impl DriverRing {
    /// `rp_find_vq`: zero the ring (`memset(addr, 0, vring_size)`), then `vring_new_virtqueue`.
    pub fn new(shm: &SharedMemory, da: u32, num: u16, align: u32) -> DriverRing {
        let offset = u64::from(da) - QF_DA_BASE;
        let (desc, avail, used) = vring_parts(offset, u64::from(num), u64::from(align));
        shm.zero(
            offset,
            qf_mcu_emu::layout::vring_size(u64::from(num), u64::from(align)),
        )
        .unwrap();
        DriverRing {
            desc,
            avail,
            used,
            num,
            free_head: 0,
            num_free: num,
            next: (1..=num).collect(),
            avail_idx_shadow: 0,
            last_used_idx: 0,
        }
    }

    /// `virtqueue_add_split` with one sg entry; returns the head.
    pub fn add(&mut self, shm: &SharedMemory, addr: u64, len: u32, device_writes: bool) -> u16 {
        assert!(self.num_free > 0, "ring full");
        let head = self.free_head;
        let d = self.desc + 16 * u64::from(head);
        shm.write(d, &addr.to_le_bytes()).unwrap();
        shm.write(d + 8, &len.to_le_bytes()).unwrap();
        let flags = if device_writes { VRING_DESC_F_WRITE } else { 0 };
        shm.write(d + 12, &(flags & !VRING_DESC_F_NEXT).to_le_bytes())
            .unwrap();
        shm.write(d + 14, &self.next[usize::from(head)].to_le_bytes())
            .unwrap();
        self.free_head = self.next[usize::from(head)];
        self.num_free -= 1;
        let slot = self.avail + 4 + 2 * u64::from(self.avail_idx_shadow % self.num);
        shm.write(slot, &head.to_le_bytes()).unwrap();
        fence(Ordering::SeqCst); // virtio_wmb
        self.avail_idx_shadow = self.avail_idx_shadow.wrapping_add(1);
        self.store_u16(shm, self.avail + 2, self.avail_idx_shadow);
        head
    }

    /// `virtqueue_get_buf`: the next used element, its buffer returned to the free list.
    pub fn get_used(&mut self, shm: &SharedMemory) -> Option<(u16, u32)> {
        let used_idx = self.load_u16(shm, self.used + 2);
        if used_idx == self.last_used_idx {
            return None;
        }
        fence(Ordering::SeqCst); // virtio_rmb
        let elem = self.used + 4 + 8 * u64::from(self.last_used_idx % self.num);
        let mut bytes = [0u8; 8];
        shm.read(elem, &mut bytes).unwrap();
        let id = u32::from_le_bytes(bytes[0..4].try_into().unwrap());
        let len = u32::from_le_bytes(bytes[4..8].try_into().unwrap());
        assert!(id < u32::from(self.num), "id {id} is not a head!");
        let id = id as u16;
        self.next[usize::from(id)] = self.free_head;
        self.free_head = id;
        self.num_free += 1;
        self.last_used_idx = self.last_used_idx.wrapping_add(1);
        Some((id, len))
    }

    /// `virtqueue_disable_cb`: set `VRING_AVAIL_F_NO_INTERRUPT`.
    pub fn disable_cb(&self, shm: &SharedMemory) {
        self.store_u16(shm, self.avail, VRING_AVAIL_F_NO_INTERRUPT);
    }

    /// `virtqueue_kick_prepare` without EVENT_IDX.
    pub fn kick_prepare(&self, shm: &SharedMemory) -> bool {
        fence(Ordering::SeqCst);
        self.load_u16(shm, self.used) & VRING_USED_F_NO_NOTIFY == 0
    }

    fn load_u16(&self, shm: &SharedMemory, offset: u64) -> u16 {
        let mut b = [0u8; 2];
        shm.read(offset, &mut b).unwrap();
        u16::from_le_bytes(b)
    }

    fn store_u16(&self, shm: &SharedMemory, offset: u64, value: u16) {
        shm.write(offset, &value.to_le_bytes()).unwrap();
    }
}

/// A received rpmsg message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    pub src: u32,
    pub dst: u32,
    pub payload: Vec<u8>,
    /// `len` the device reported in the used element.
    pub used_len: u32,
}

/// The guest: QEMU's ivshmem client plus the Linux driver stack.
pub struct LinuxSide {
    pub client: IvshmemClient,
    pub shm: SharedMemory,
    pub rx: Option<DriverRing>,
    pub tx: Option<DriverRing>,
    /// rx buffers by descriptor head (offsets of `vrp->rbufs + i * 512`).
    rx_buf_of_head: Vec<u64>,
    /// tx buffers: `last_sbuf` fresh ones, then recycled from the used ring.
    last_sbuf: u64,
    tx_buf_of_head: Vec<u64>,
    pub interrupts: u64,
}

impl LinuxSide {
    /// QEMU connecting to the emulator's ivshmem socket.
    pub fn connect(socket: &Path) -> LinuxSide {
        let client = IvshmemClient::connect(socket, Duration::from_secs(5)).unwrap();
        let shm =
            SharedMemory::from_file(client.shm.try_clone().unwrap(), client.shm_size).unwrap();
        LinuxSide {
            client,
            shm,
            rx: None,
            tx: None,
            rx_buf_of_head: vec![0; 256],
            last_sbuf: 0,
            tx_buf_of_head: vec![0; 256],
            interrupts: 0,
        }
    }

    pub fn control(&self, field: u64) -> u32 {
        self.shm.load_u32(field).unwrap()
    }

    /// `rproc_attach` + the contract's `ops->attach`, then `rpmsg_probe`; returns after the
    /// first kick (the DRIVER_OK signal).
    pub fn attach(&mut self) {
        assert_eq!(self.control(control::MCU_STATE), 2, "MCU not running");
        let mut table = [0u8; TABLE_LEN];
        self.shm.read(RSC_TABLE_OFFSET, &mut table).unwrap();
        let vdev = rsc_table::decode_vdev(&table).expect("published table is valid");
        assert_eq!(vdev.dfeatures & 1, 1, "VIRTIO_RPMSG_F_NS offered");
        // ops->attach (contract order): bar2_pa, attached_generation, attach_count, linux_state.
        self.shm.store_u64(control::BAR2_PA, BAR2_PA).unwrap();
        let generation = self.control(control::GENERATION);
        self.shm
            .store_u32(control::ATTACHED_GENERATION, generation)
            .unwrap();
        self.shm.bump_u32(control::ATTACH_COUNT).unwrap();
        self.shm.store_u32(control::LINUX_STATE, 1).unwrap();
        // rp_find_vq for both vrings.
        let [v0, v1] = vdev.vrings;
        let mut rx = DriverRing::new(&self.shm, v0.da, v0.num as u16, v0.align);
        let tx = DriverRing::new(&self.shm, v1.da, v1.num as u16, v1.align);
        // rpmsg_probe: 512 buffers in the carveout, half rx (added as inbufs), half tx.
        for i in 0..NUM_BUFS / 2 {
            let offset = BUFFERS_OFFSET + i * rpmsg::BUFFER_SIZE as u64;
            let head = rx.add(&self.shm, BAR2_PA + offset, rpmsg::BUFFER_SIZE as u32, true);
            self.rx_buf_of_head[usize::from(head)] = offset;
        }
        tx.disable_cb(&self.shm);
        let notify = rx.kick_prepare(&self.shm);
        // virtio_device_ready: DRIVER_OK into the vdev status (the shared table on first attach).
        let status_at = RSC_TABLE_OFFSET + rsc_table::VDEV_ENTRY_OFFSET as u64 + 4 + 20;
        self.shm
            .write(status_at, &[rsc_table::STATUS_DRIVER_OK | 3])
            .unwrap();
        self.rx = Some(rx);
        self.tx = Some(tx);
        self.last_sbuf = 0;
        assert!(notify, "a zeroed ring always wants the first kick");
        self.kick();
    }

    /// The contract's `ops->detach`.
    pub fn detach(&mut self) {
        self.shm.store_u32(control::LINUX_STATE, 0).unwrap();
        self.rx = None;
        self.tx = None;
    }

    /// The contract's `ops->kick`: tag, then the doorbell register.
    pub fn kick(&self) {
        let count = self.control(control::ATTACH_COUNT);
        self.shm.store_u32(control::KICK_TAG, count).unwrap();
        fence(Ordering::SeqCst);
        assert!(
            self.client.doorbell(MCU_PEER_ID, VECTOR_VRING),
            "doorbell not connected"
        );
    }

    /// `rpmsg_send_offchannel_raw`: fill a tx buffer, add it as an outbuf, kick.
    pub fn send(&mut self, src: u32, dst: u32, payload: &[u8]) {
        let tx = self.tx.as_mut().expect("attached");
        let offset = if self.last_sbuf < NUM_BUFS / 2 {
            let offset =
                BUFFERS_OFFSET + (NUM_BUFS / 2 + self.last_sbuf) * rpmsg::BUFFER_SIZE as u64;
            self.last_sbuf += 1;
            offset
        } else {
            // get_a_tx_buf -> virtqueue_get_buf(svq); Linux sleeps on sendq if none is free.
            let deadline = Instant::now() + Duration::from_secs(5);
            loop {
                if let Some((head, _)) = tx.get_used(&self.shm) {
                    break self.tx_buf_of_head[usize::from(head)];
                }
                assert!(
                    Instant::now() < deadline,
                    "no tx buffer came back from the device"
                );
                std::thread::sleep(Duration::from_micros(50));
            }
        };
        let mut message = [0u8; rpmsg::BUFFER_SIZE];
        let len =
            rpmsg::encode(src, dst, payload, &mut message).expect("rpmsg_send refuses > 496 bytes");
        self.shm.write(offset, &message[..len]).unwrap();
        let head = tx.add(&self.shm, BAR2_PA + offset, len as u32, false);
        self.tx_buf_of_head[usize::from(head)] = offset;
        self.kick();
    }

    /// `rpmsg_recv_done` for one message: wait for vector 0, take a used rx buffer, re-add it,
    /// kick if the device wants it. `None` if nothing arrives within `timeout`.
    pub fn recv(&mut self, timeout: Duration) -> Option<Received> {
        let deadline = Instant::now() + timeout;
        loop {
            let rx = self.rx.as_mut().expect("attached");
            if let Some((head, used_len)) = rx.get_used(&self.shm) {
                let offset = self.rx_buf_of_head[usize::from(head)];
                let mut buf = vec![0u8; rpmsg::BUFFER_SIZE];
                self.shm.read(offset, &mut buf).unwrap();
                assert!(
                    used_len as usize <= rpmsg::BUFFER_SIZE,
                    "inbound msg too big"
                );
                let (h, p) = rpmsg::decode(&buf[..used_len as usize])
                    .expect("device wrote a valid rpmsg message");
                assert!(usize::from(h.len) <= used_len as usize - rpmsg::HEADER_LEN);
                let received = Received {
                    src: h.src,
                    dst: h.dst,
                    payload: p.to_vec(),
                    used_len,
                };
                let new_head = rx.add(&self.shm, BAR2_PA + offset, rpmsg::BUFFER_SIZE as u32, true);
                self.rx_buf_of_head[usize::from(new_head)] = offset;
                if rx.kick_prepare(&self.shm) {
                    self.kick();
                }
                return Some(received);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            if self
                .client
                .wait_interrupt(VECTOR_VRING, left.min(Duration::from_millis(50)))
            {
                self.interrupts += 1;
            }
        }
    }

    /// Waits for an MCU state-change interrupt (vector 1).
    pub fn wait_state_interrupt(&self, timeout: Duration) -> bool {
        self.client.wait_interrupt(VECTOR_STATE, timeout)
    }
}
