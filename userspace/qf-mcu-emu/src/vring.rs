//! The device side of the rpmsg virtqueues, with rust-vmm's `virtio-queue` over a `vm-memory`
//! map of the shared memory. Addresses are used as found (docs/virtual-board.md, *Addresses*):
//! vring addresses are `da`s (the MCU window at `QF_DA_BASE`), buffer addresses in descriptors
//! are guest-physical (the Linux window at `bar2_pa`); both windows map the same memfd.

use std::fs::File;
use std::ops::Range;
use std::sync::atomic::Ordering;

use virtio_queue::{Queue, QueueOwnedT, QueueT};
use vm_memory::{Bytes, GuestAddress, GuestMemoryMmap};

use crate::layout::{vring_parts, BUFFERS_AREA, BUFFERS_OFFSET, QF_DA_BASE};
use crate::rpmsg;
use crate::rsc_table::{VdevInfo, VringInfo};
use crate::shm::{map_file, ShmError};

/// `VRING_AVAIL_F_NO_INTERRUPT`: the driver does not want used-buffer interrupts.
const VRING_AVAIL_F_NO_INTERRUPT: u16 = 1;

/// Why a session's vrings cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    #[error("BAR2 at {bar2_pa:#x} overlaps the MCU window at {QF_DA_BASE:#x} without coinciding")]
    Overlap { bar2_pa: u64 },
    #[error("mapping the session windows: {0}")]
    Map(#[from] ShmError),
    #[error("building the session memory: {0}")]
    Memory(String),
    #[error("vring{index}: {reason}")]
    Queue { index: usize, reason: String },
    #[error("resource table in shared memory: {0}")]
    Table(#[from] crate::rsc_table::TableError),
}

/// A message Linux sent (read from vring1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub src: u32,
    pub dst: u32,
    pub payload: Vec<u8>,
}

/// What happened to an outgoing message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    /// Written into an rx buffer; `interrupt` says whether Linux wants to be told.
    Delivered { interrupt: bool },
    /// Linux has no free rx buffer right now (it kicks when it adds some).
    NoBuffer,
}

/// Counters of what the device refused.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct DeviceStats {
    pub received: u64,
    pub sent: u64,
    pub bad_descriptors: u64,
    pub bad_messages: u64,
}

/// The two rpmsg virtqueues of one attach session.
pub struct RpmsgDevice {
    mem: GuestMemoryMmap,
    /// vring0: Linux's rx ring; the device writes into its buffers.
    rx: Queue,
    /// vring1: Linux's tx ring; the device reads its buffers.
    tx: Queue,
    buffers: Range<u64>,
    stats: DeviceStats,
}

impl RpmsgDevice {
    /// Maps the two windows of `shm` and sets the queues up from the resource table's vrings.
    pub fn new(
        shm: &File,
        shm_size: u64,
        bar2_pa: u64,
        vdev: &VdevInfo,
    ) -> Result<RpmsgDevice, DeviceError> {
        let mcu_window = QF_DA_BASE..QF_DA_BASE + shm_size;
        let linux_window = bar2_pa..bar2_pa.saturating_add(shm_size);
        let mut regions = vec![map_file(shm, shm_size, QF_DA_BASE)?];
        if bar2_pa != QF_DA_BASE {
            if linux_window.start < mcu_window.end && mcu_window.start < linux_window.end {
                return Err(DeviceError::Overlap { bar2_pa });
            }
            regions.push(map_file(shm, shm_size, bar2_pa)?);
            regions.sort_by_key(vm_memory::GuestMemoryRegion::start_addr);
        }
        let mem = GuestMemoryMmap::from_regions(regions)
            .map_err(|e| DeviceError::Memory(e.to_string()))?;
        let rx = queue(&mem, 0, &vdev.vrings[0])?;
        let tx = queue(&mem, 1, &vdev.vrings[1])?;
        let start = bar2_pa + BUFFERS_OFFSET;
        Ok(RpmsgDevice {
            mem,
            rx,
            tx,
            buffers: start..start + BUFFERS_AREA,
            stats: DeviceStats::default(),
        })
    }

    /// Counters so far.
    pub fn stats(&self) -> DeviceStats {
        self.stats
    }

    /// Takes every message Linux queued on vring1, returning each buffer to the used ring.
    /// Malformed buffers are returned too, and counted.
    pub fn receive(&mut self, out: &mut Vec<Message>) -> Result<(), DeviceError> {
        let queue_err = |reason: String| DeviceError::Queue { index: 1, reason };
        loop {
            let chain = {
                let mut iter = self
                    .tx
                    .iter(&self.mem)
                    .map_err(|e| queue_err(e.to_string()))?;
                iter.next()
            };
            let Some(chain) = chain else { break };
            let head = chain.head_index();
            let mut bytes = Vec::with_capacity(rpmsg::BUFFER_SIZE);
            let mut good = true;
            for desc in chain {
                let len = desc.len() as usize;
                if desc.is_write_only()
                    || !self.in_buffers(desc.addr().0, len)
                    || bytes.len() + len > rpmsg::BUFFER_SIZE
                {
                    good = false;
                    break;
                }
                let start = bytes.len();
                bytes.resize(start + len, 0);
                if self
                    .mem
                    .read_slice(&mut bytes[start..], desc.addr())
                    .is_err()
                {
                    good = false;
                    break;
                }
            }
            self.tx
                .add_used(&self.mem, head, 0)
                .map_err(|e| queue_err(e.to_string()))?;
            if !good {
                self.stats.bad_descriptors += 1;
                log::warn!("vring1: descriptor chain {head} outside the rpmsg buffers or too long; returned unread");
                continue;
            }
            match rpmsg::decode(&bytes) {
                Ok((header, payload)) => {
                    self.stats.received += 1;
                    out.push(Message {
                        src: header.src,
                        dst: header.dst,
                        payload: payload.to_vec(),
                    });
                }
                Err(e) => {
                    self.stats.bad_messages += 1;
                    log::warn!("vring1: {e}");
                }
            }
        }
        Ok(())
    }

    /// Writes one message into the next rx buffer Linux offered on vring0.
    pub fn send(&mut self, src: u32, dst: u32, payload: &[u8]) -> Result<Sent, DeviceError> {
        let queue_err = |reason: String| DeviceError::Queue { index: 0, reason };
        let mut message = [0u8; rpmsg::BUFFER_SIZE];
        let len =
            rpmsg::encode(src, dst, payload, &mut message).map_err(|e| queue_err(e.to_string()))?;
        loop {
            let chain = {
                let mut iter = self
                    .rx
                    .iter(&self.mem)
                    .map_err(|e| queue_err(e.to_string()))?;
                iter.next()
            };
            let Some(chain) = chain else {
                return Ok(Sent::NoBuffer);
            };
            let head = chain.head_index();
            let mut written = 0usize;
            let mut good = true;
            for desc in chain {
                if written == len {
                    break;
                }
                let n = (desc.len() as usize).min(len - written);
                if !desc.is_write_only()
                    || !self.in_buffers(desc.addr().0, desc.len() as usize)
                    || self
                        .mem
                        .write_slice(&message[written..written + n], desc.addr())
                        .is_err()
                {
                    good = false;
                    break;
                }
                written += n;
            }
            if !good || written < len {
                self.stats.bad_descriptors += 1;
                log::warn!(
                    "vring0: rx chain {head} unusable for a {len}-byte message; returned empty"
                );
                self.rx
                    .add_used(&self.mem, head, 0)
                    .map_err(|e| queue_err(e.to_string()))?;
                continue;
            }
            self.rx
                .add_used(&self.mem, head, len as u32)
                .map_err(|e| queue_err(e.to_string()))?;
            self.stats.sent += 1;
            return Ok(Sent::Delivered {
                interrupt: self.wants_interrupt(0)?,
            });
        }
    }

    /// Whether the driver wants an interrupt for used buffers on vring `index`
    /// (`virtio-queue` does not read `VRING_AVAIL_F_NO_INTERRUPT`, so the device does).
    pub fn wants_interrupt(&self, index: usize) -> Result<bool, DeviceError> {
        let queue = if index == 0 { &self.rx } else { &self.tx };
        let flags: u16 = self
            .mem
            .load(GuestAddress(queue.avail_ring()), Ordering::Acquire)
            .map_err(|e| DeviceError::Queue {
                index,
                reason: e.to_string(),
            })?;
        Ok(flags & VRING_AVAIL_F_NO_INTERRUPT == 0)
    }

    fn in_buffers(&self, addr: u64, len: usize) -> bool {
        addr >= self.buffers.start
            && addr
                .checked_add(len as u64)
                .is_some_and(|end| end <= self.buffers.end)
    }
}

fn queue(mem: &GuestMemoryMmap, index: usize, vring: &VringInfo) -> Result<Queue, DeviceError> {
    let err = |reason: String| DeviceError::Queue { index, reason };
    let num = u16::try_from(vring.num).map_err(|_| err(format!("num {} too large", vring.num)))?;
    let mut q = Queue::new(num).map_err(|e| err(e.to_string()))?;
    q.set_size(num);
    let (desc, avail, used) = vring_parts(
        u64::from(vring.da),
        u64::from(vring.num),
        u64::from(vring.align),
    );
    q.set_desc_table_address(Some(desc as u32), Some((desc >> 32) as u32));
    q.set_avail_ring_address(Some(avail as u32), Some((avail >> 32) as u32));
    q.set_used_ring_address(Some(used as u32), Some((used >> 32) as u32));
    q.set_event_idx(false);
    q.set_ready(true);
    if !q.is_valid(mem) {
        return Err(err(format!(
            "rings at da {:#x} are not valid in the MCU window",
            vring.da
        )));
    }
    Ok(q)
}
