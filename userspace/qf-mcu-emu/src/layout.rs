//! The shared-memory layout of the virtual board (docs/virtual-board.md, rev 2): offsets, sizes,
//! device addresses and control-block fields, in one place for the emulator and its tests.

/// Device address (`da`) of shared-memory offset 0, as the MCU sees it.
pub const QF_DA_BASE: u64 = 0x1000_0000;

/// Offset of the control block.
pub const CONTROL_OFFSET: u64 = 0x0;
/// Offset of the resource table.
pub const RSC_TABLE_OFFSET: u64 = 0x1000;
/// Bytes reserved for the resource table.
pub const RSC_TABLE_AREA: u64 = 0x1000;
/// Offset of vring0 (Linux rx: MCU -> Linux).
pub const VRING0_OFFSET: u64 = 0x1_0000;
/// Offset of vring1 (Linux tx: Linux -> MCU).
pub const VRING1_OFFSET: u64 = 0x2_0000;
/// Bytes reserved for each vring.
pub const VRING_AREA: u64 = 0x1_0000;
/// Offset of the rpmsg buffer carveout (`vdev0buffer`).
pub const BUFFERS_OFFSET: u64 = 0x10_0000;
/// Bytes of the rpmsg buffer carveout.
pub const BUFFERS_AREA: u64 = 0x10_0000;

/// Entries per vring (a power of two; Linux then allocates 512 rpmsg buffers).
pub const VRING_NUM: u16 = 256;
/// Alignment of the used ring in the legacy vring layout.
pub const VRING_ALIGN: u32 = 4096;

/// Smallest shared memory the layout fits in (a power of two, as a PCI BAR must be).
pub const MIN_SHM_SIZE: u64 = 2 << 20;
/// Default shared-memory size.
pub const DEFAULT_SHM_SIZE: u64 = 4 << 20;

/// Control-block magic, "QFSH" little-endian.
pub const MAGIC: u32 = 0x4853_4651;
/// Layout revision published in the control block.
pub const LAYOUT_VERSION: u32 = 2;
/// Heartbeat period the emulator publishes and keeps.
pub const HEARTBEAT_PERIOD_US: u32 = 1000;
/// rpmsg address of the MCU's `qfabric` endpoint.
pub const CHANNEL_ADDR: u32 = 0x400;

/// Byte offsets of the control-block fields (all u32 except `BAR2_PA`, a u64).
pub mod control {
    pub const MAGIC: u64 = 0;
    pub const LAYOUT_VERSION: u64 = 4;
    pub const MCU_STATE: u64 = 8;
    pub const GENERATION: u64 = 12;
    pub const HEARTBEAT: u64 = 16;
    pub const RSC_TABLE_OFFSET: u64 = 20;
    pub const RSC_TABLE_SIZE: u64 = 24;
    pub const LINUX_STATE: u64 = 28;
    pub const ATTACHED_GENERATION: u64 = 32;
    pub const ATTACH_COUNT: u64 = 36;
    pub const KICK_TAG: u64 = 40;
    pub const BAR2_PA: u64 = 48;
    pub const HEARTBEAT_PERIOD_US: u64 = 56;
    pub const CHANNEL_ADDR: u64 = 60;
    pub const SERVED_ATTACH_COUNT: u64 = 64;
    /// Bytes of the control block the emulator clears on (re)start.
    pub const LEN: u64 = 0x1000;
}

/// `mcu_state` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum McuState {
    Offline = 0,
    Booting = 1,
    Running = 2,
    Crashed = 3,
}

impl McuState {
    /// Parses the control-block value.
    pub fn from_u32(value: u32) -> Option<McuState> {
        match value {
            0 => Some(McuState::Offline),
            1 => Some(McuState::Booting),
            2 => Some(McuState::Running),
            3 => Some(McuState::Crashed),
            _ => None,
        }
    }
}

// The areas do not overlap and fit the smallest shared memory.
const _: () = assert!(BUFFERS_OFFSET + BUFFERS_AREA <= MIN_SHM_SIZE);
const _: () = assert!(VRING1_OFFSET + VRING_AREA <= BUFFERS_OFFSET);
const _: () = assert!(VRING0_OFFSET + VRING_AREA <= VRING1_OFFSET);
const _: () = assert!(RSC_TABLE_OFFSET + RSC_TABLE_AREA <= VRING0_OFFSET);

/// Device address of a shared-memory offset.
pub const fn da(offset: u64) -> u64 {
    QF_DA_BASE + offset
}

/// Bytes of a legacy split vring (`vring_size()` in Linux's `virtio_ring.h`).
pub use qf_resource_table::vring_size;

/// Addresses of the three parts of a legacy split vring starting at `base`.
pub const fn vring_parts(base: u64, num: u64, align: u64) -> (u64, u64, u64) {
    let avail = base + 16 * num;
    let used = (avail + 2 * (3 + num)).div_ceil(align) * align;
    (base, avail, used)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_256_entry_vring_needs_12_kib_after_page_alignment_as_linux_computes() {
        let size = vring_size(VRING_NUM as u64, VRING_ALIGN as u64);
        assert_eq!(size, 8192 + 6 + 8 * 256);
        assert_eq!(size.div_ceil(4096) * 4096, 12 * 1024);
        assert!(size <= VRING_AREA);
    }

    #[test]
    fn vring_parts_follow_the_legacy_layout() {
        let (desc, avail, used) = vring_parts(da(VRING0_OFFSET), 256, 4096);
        assert_eq!(desc, 0x1001_0000);
        assert_eq!(avail, 0x1001_1000);
        assert_eq!(used, 0x1001_2000);
    }
}
