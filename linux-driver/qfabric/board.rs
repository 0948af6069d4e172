// SPDX-License-Identifier: GPL-2.0
//! The virtual board's shared-memory contract (`docs/virtual-board.md`, layout version 2) as
//! seen from Linux: where things are in BAR2, what the control block's fields mean, and the
//! checks that decide whether the MCU has published a usable resource table.

use super::shm::Shm;

/// "QFSH", little-endian.
pub const MAGIC: u32 = 0x4853_4651;
pub const LAYOUT_VERSION: u32 = 2;

/// Shared-memory layout (offsets into BAR2).
pub const CONTROL_OFFSET: usize = 0x0;
pub const RSC_TABLE_SLOT: usize = 0x1000;
pub const RSC_TABLE_SLOT_LEN: usize = 0x1000;
pub const VRING0_OFFSET: usize = 0x1_0000;
pub const VRING1_OFFSET: usize = 0x2_0000;
pub const VRING_SLOT_LEN: usize = 0x1_0000;
pub const BUFFER_OFFSET: usize = 0x10_0000;
pub const BUFFER_LEN: usize = 0x10_0000;
/// BAR2 must hold at least everything above; the driver maps `[0, BUFFER_OFFSET)` itself and
/// leaves the buffer area to `dma_declare_coherent_memory`.
pub const MIN_SHM_LEN: usize = BUFFER_OFFSET + BUFFER_LEN;
/// Device addresses the MCU uses are `DA_BASE + offset`.
pub const DA_BASE: u32 = 0x1000_0000;

/// Control block fields (byte offsets).
pub mod field {
    pub const MAGIC: usize = 0;
    pub const LAYOUT_VERSION: usize = 4;
    pub const MCU_STATE: usize = 8;
    pub const GENERATION: usize = 12;
    pub const HEARTBEAT: usize = 16;
    pub const RSC_TABLE_OFFSET: usize = 20;
    pub const RSC_TABLE_SIZE: usize = 24;
    pub const LINUX_STATE: usize = 28;
    pub const ATTACHED_GENERATION: usize = 32;
    pub const ATTACH_COUNT: usize = 36;
    pub const KICK_TAG: usize = 40;
    pub const BAR2_PA: usize = 48;
    pub const HEARTBEAT_PERIOD_US: usize = 56;
}

/// `mcu_state` values.
pub const MCU_OFFLINE: u32 = 0;
pub const MCU_BOOTING: u32 = 1;
pub const MCU_RUNNING: u32 = 2;
pub const MCU_CRASHED: u32 = 3;

/// `linux_state` values.
pub const LINUX_DETACHED: u32 = 0;
pub const LINUX_ATTACHED: u32 = 1;

/// ivshmem BAR0 registers (QEMU `docs/specs/ivshmem-spec.rst`).
pub const REG_IV_POSITION: usize = 8;
pub const REG_DOORBELL: usize = 12;
/// The MCU emulator's ivshmem peer id.
pub const MCU_PEER: u32 = 0;
/// MSI-X / doorbell vectors.
pub const VECTOR_VRING: u32 = 0;
pub const VECTOR_STATE: u32 = 1;
pub const VECTORS: u32 = 2;

/// The doorbell value that rings `vector` of the MCU.
pub const fn doorbell(vector: u32) -> u32 {
    (MCU_PEER << 16) | vector
}

/// One snapshot of the fields the MCU writes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct McuStatus {
    pub magic: u32,
    pub layout_version: u32,
    pub mcu_state: u32,
    pub generation: u32,
    pub heartbeat: u32,
}

/// Why the MCU's resource table cannot be used (yet).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum NotReady {
    NoMagic(u32),
    WrongLayout(u32),
    State(u32),
    BadTable {
        offset: u32,
        size: u32,
    },
    /// The table is in its slot but is not the board's (one rpmsg vdev, two vrings that fit
    /// their carveouts): the first defect found, with the value found.
    Malformed(TableDefect),
}

/// What is wrong with a published resource table (`docs/virtual-board.md`, *Resource table*).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum TableDefect {
    /// `ver` is not 1.
    Version(u32),
    /// `num` is not 1 (the board has one resource, the rpmsg vdev).
    Entries(u32),
    /// `offset[0]` is not word-aligned or does not leave room for the vdev inside the table.
    EntryOffset(u32),
    /// The entry is not `RSC_VDEV` (3).
    EntryType(u32),
    /// The vdev is not `VIRTIO_ID_RPMSG` (7).
    VdevId(u32),
    /// The vdev has a config space (`config_len`), which the board has no room for.
    ConfigLen(u32),
    /// `num_of_vrings` is not 2.
    Vrings(u32),
    /// A vring's size is not a power of two from 2 to 256.
    VringNum { vring: usize, num: u32 },
    /// A vring's alignment is not a power of two of at least 16, or the ring does not fit its
    /// 64 KiB carveout with it.
    VringAlign { vring: usize, align: u32 },
    /// A vring's `da` is neither `FW_RSC_ADDR_ANY` nor its carveout's.
    VringDa { vring: usize, da: u32 },
}

/// remoteproc resource-table constants (`include/linux/remoteproc.h`, `virtio_ids.h`).
const RSC_VDEV: u32 = 3;
const VIRTIO_ID_RPMSG: u32 = 7;
const FW_RSC_ADDR_ANY: u32 = u32::MAX;
/// `struct resource_table` header, `fw_rsc_hdr`, `fw_rsc_vdev`, `fw_rsc_vdev_vring`.
const TABLE_HEADER_LEN: usize = 16;
const RSC_HDR_LEN: usize = 4;
const VDEV_LEN: usize = 24;
const VRING_LEN: usize = 20;
const MAX_VRING_NUM: u32 = 256;
const MIN_VRING_ALIGN: u32 = 16;

/// Bytes of a split vring of `num` entries whose used ring is aligned to `align`
/// (`vring_size()` in `include/uapi/linux/virtio_ring.h`).
const fn vring_size(num: usize, align: usize) -> usize {
    let avail_end = 16 * num + 2 * (3 + num);
    let used = (avail_end + align - 1) & !(align - 1);
    used + 2 * 3 + 8 * num
}

/// The control block in shared memory.
pub struct ControlBlock<'a> {
    shm: &'a Shm,
}

impl<'a> ControlBlock<'a> {
    pub fn new(shm: &'a Shm) -> Self {
        Self { shm }
    }

    fn read(&self, field: usize) -> u32 {
        // The window is at least `MIN_SHM_LEN - BUFFER_LEN` long (checked at probe), so every
        // control field is in range; 0 is what a wiped block reads as anyway.
        self.shm.read_u32(CONTROL_OFFSET + field).unwrap_or(0)
    }

    fn write(&self, field: usize, value: u32) {
        // In range for the same reason as `read`.
        let _ = self.shm.write_u32(CONTROL_OFFSET + field, value);
    }

    pub fn status(&self) -> McuStatus {
        McuStatus {
            magic: self.read(field::MAGIC),
            layout_version: self.read(field::LAYOUT_VERSION),
            mcu_state: self.read(field::MCU_STATE),
            generation: self.read(field::GENERATION),
            heartbeat: self.read(field::HEARTBEAT),
        }
    }

    /// The published resource table `(offset, size)`, if the MCU is running with a layout we
    /// understand and the table lies inside its slot.
    pub fn resource_table(&self) -> core::result::Result<(usize, usize), NotReady> {
        let s = self.status();
        if s.magic != MAGIC {
            return Err(NotReady::NoMagic(s.magic));
        }
        if s.layout_version != LAYOUT_VERSION {
            return Err(NotReady::WrongLayout(s.layout_version));
        }
        if s.mcu_state != MCU_RUNNING {
            return Err(NotReady::State(s.mcu_state));
        }
        let offset = self.read(field::RSC_TABLE_OFFSET);
        let size = self.read(field::RSC_TABLE_SIZE);
        let (o, n) = (offset as usize, size as usize);
        // struct resource_table's header is 16 bytes; the table must stay in its 4 KiB slot,
        // word-aligned (the window is read a word at a time).
        if o < RSC_TABLE_SLOT || o % 4 != 0 || n < 16 || o + n > RSC_TABLE_SLOT + RSC_TABLE_SLOT_LEN
        {
            return Err(NotReady::BadTable { offset, size });
        }
        self.check_table(o, n).map_err(NotReady::Malformed)?;
        Ok((o, n))
    }

    /// The checks `rproc_handle_resources` and `rproc_handle_vdev` would make, and those of
    /// this board (one rpmsg vdev whose vrings fit the carveouts the driver registers), before
    /// the remoteproc core sees the table: a malformed table is refused with its defect named.
    /// These are `qf_resource_table::board`'s rules, repeated here because a kernel module
    /// cannot use the crate; `qf-mcu-emu`'s `driver_table_rules` test compiles this file on
    /// the host and holds the two to the same verdict, in the same words, for every table.
    fn check_table(&self, table: usize, size: usize) -> core::result::Result<(), TableDefect> {
        // Words past the table's end read as 0, as does one the window refuses (the table lies
        // inside its slot, which the mapping covers, so only a misaligned word can be).
        let word = |at: usize| match at.checked_add(4) {
            Some(end) if end <= size => self.shm.read_u32(table + at).unwrap_or(0),
            _ => 0,
        };
        let version = word(0);
        if version != 1 {
            return Err(TableDefect::Version(version));
        }
        let entries = word(4);
        if entries != 1 {
            return Err(TableDefect::Entries(entries));
        }
        let entry = word(TABLE_HEADER_LEN);
        let vdev = entry as usize + RSC_HDR_LEN;
        if (entry as usize) < TABLE_HEADER_LEN + 4
            || entry % 4 != 0
            || vdev + VDEV_LEN + 2 * VRING_LEN > size
        {
            return Err(TableDefect::EntryOffset(entry));
        }
        let kind = word(entry as usize);
        if kind != RSC_VDEV {
            return Err(TableDefect::EntryType(kind));
        }
        let id = word(vdev);
        if id != VIRTIO_ID_RPMSG {
            return Err(TableDefect::VdevId(id));
        }
        let config_len = word(vdev + 16);
        if config_len != 0 {
            return Err(TableDefect::ConfigLen(config_len));
        }
        // status, num_of_vrings, reserved[2]: one little-endian word.
        let vrings = (word(vdev + 20) >> 8) & 0xff;
        if vrings != 2 {
            return Err(TableDefect::Vrings(vrings));
        }
        for (vring, slot) in [VRING0_OFFSET, VRING1_OFFSET].into_iter().enumerate() {
            let at = vdev + VDEV_LEN + vring * VRING_LEN;
            let (da, align, num) = (word(at), word(at + 4), word(at + 8));
            if !num.is_power_of_two() || !(2..=MAX_VRING_NUM).contains(&num) {
                return Err(TableDefect::VringNum { vring, num });
            }
            if !align.is_power_of_two()
                || align < MIN_VRING_ALIGN
                || align as usize > VRING_SLOT_LEN
                || vring_size(num as usize, align as usize) > VRING_SLOT_LEN
            {
                return Err(TableDefect::VringAlign { vring, align });
            }
            if da != FW_RSC_ADDR_ANY && da != DA_BASE + slot as u32 {
                return Err(TableDefect::VringDa { vring, da });
            }
        }
        Ok(())
    }

    /// `ops->attach`'s announcement, in the contract's order: `bar2_pa`, then the generation,
    /// then the attach counter, then `linux_state`, with barriers so the MCU never sees the
    /// counter before the address. Returns the new attach count.
    pub fn announce_attach(&self, bar2_pa: u64, generation: u32) -> u32 {
        let _ = self.shm.write_u64(CONTROL_OFFSET + field::BAR2_PA, bar2_pa);
        super::full_barrier();
        self.write(field::ATTACHED_GENERATION, generation);
        let count = self.read(field::ATTACH_COUNT).wrapping_add(1);
        self.write(field::ATTACH_COUNT, count);
        self.write(field::LINUX_STATE, LINUX_ATTACHED);
        super::full_barrier();
        count
    }

    pub fn announce_detach(&self) {
        self.write(field::LINUX_STATE, LINUX_DETACHED);
        super::full_barrier();
    }

    /// Tags the next doorbell with the attach count of the vrings it is about.
    pub fn tag_kick(&self, attach_count: u32) {
        self.write(field::KICK_TAG, attach_count);
        super::full_barrier();
    }
}
