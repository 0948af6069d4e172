//! The remoteproc resource table the MCU publishes (Linux 6.12 `struct resource_table` with one
//! `RSC_VDEV` entry for rpmsg), and reading back the vring fields Linux may have updated. The
//! format (field offsets, sizes, type and feature numbers) is `qf-resource-table`'s.

pub use qf_resource_table::board::{TableDefect, VringSlots};
use qf_resource_table::{board, Header, Vdev, Vring, ENTRY_HEADER_LEN};
pub use qf_resource_table::{FW_RSC_ADDR_ANY, RSC_VDEV, VIRTIO_ID_RPMSG, VIRTIO_RPMSG_F_NS};

use crate::layout::{
    da, RSC_TABLE_AREA, VRING0_OFFSET, VRING1_OFFSET, VRING_ALIGN, VRING_AREA, VRING_NUM,
};

/// `VIRTIO_CONFIG_S_DRIVER_OK`.
pub const STATUS_DRIVER_OK: u8 = 4;

pub use qf_resource_table::board::MIN_VRING_ALIGN;

/// Offset of the vdev entry's header inside the table (after ver, num, reserved[2], offset[1]).
pub const VDEV_ENTRY_OFFSET: usize = Header::SIZE + 4;
/// Offset of `fw_rsc_vdev` (after the 4-byte `fw_rsc_hdr`).
pub const VDEV_OFFSET: usize = VDEV_ENTRY_OFFSET + ENTRY_HEADER_LEN;
/// Total table size.
pub const TABLE_LEN: usize = VDEV_OFFSET + Vdev::SIZE + 2 * Vring::SIZE;

/// One vring as the table describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VringInfo {
    pub da: u32,
    pub align: u32,
    pub num: u32,
    pub notifyid: u32,
}

/// The fields of the vdev entry the emulator reads back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VdevInfo {
    pub dfeatures: u32,
    pub gfeatures: u32,
    pub status: u8,
    pub vrings: [VringInfo; 2],
}

/// Why a table read back from shared memory is not usable: the board's rule it breaks
/// (`qf_resource_table::board`, the rules `qfabric_rproc` applies).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("malformed resource table: {0}")]
pub struct TableError(pub TableDefect);

/// The board's two vring slots, as the table's `da` names them.
pub const SLOTS: VringSlots = VringSlots {
    da: [da(VRING0_OFFSET) as u32, da(VRING1_OFFSET) as u32],
    len: VRING_AREA as u32,
};

/// The table as published at (re)start.
pub fn encode() -> [u8; TABLE_LEN] {
    let mut t = [0u8; TABLE_LEN];
    let header = Header {
        ver: 1,
        num: 1,
        reserved: [0, 0],
    };
    t[..Header::SIZE].copy_from_slice(&header.encode());
    t[Header::OFFSETS..VDEV_ENTRY_OFFSET]
        .copy_from_slice(&(VDEV_ENTRY_OFFSET as u32).to_le_bytes());
    t[VDEV_ENTRY_OFFSET..VDEV_OFFSET].copy_from_slice(&RSC_VDEV.to_le_bytes());
    let vdev = Vdev::rpmsg();
    t[VDEV_OFFSET..VDEV_OFFSET + Vdev::SIZE].copy_from_slice(&vdev.encode());
    let vrings = [(VRING0_OFFSET, 0u32), (VRING1_OFFSET, 1u32)];
    for (i, (offset, notifyid)) in vrings.into_iter().enumerate() {
        let at = VDEV_OFFSET + Vdev::vring_offset(i);
        let vring = Vring {
            da: da(offset) as u32,
            align: VRING_ALIGN,
            num: u32::from(VRING_NUM),
            notifyid,
            pa: 0,
        };
        t[at..at + Vring::SIZE].copy_from_slice(&vring.encode());
    }
    t
}

/// Checks a table read from shared memory with the board's rules (one rpmsg vdev, two vrings
/// that fit their slots, a `da` that is the slot's or `FW_RSC_ADDR_ANY`) and reads its vdev.
/// `FW_RSC_ADDR_ANY` stands for the slot's own address (an OpenAMP firmware's table leaves the
/// addresses to the host). Linux may rewrite `da` and `notifyid`; anything else that breaks a
/// rule means a corrupt table.
pub fn decode_vdev(t: &[u8]) -> Result<VdevInfo, TableError> {
    let checked = board::check(t, SLOTS).map_err(TableError)?;
    let mut vrings = [VringInfo {
        da: 0,
        align: 0,
        num: 0,
        notifyid: 0,
    }; 2];
    for ((info, read), slot_da) in vrings.iter_mut().zip(checked.vrings).zip(SLOTS.da) {
        *info = VringInfo {
            da: if read.da == FW_RSC_ADDR_ANY {
                slot_da
            } else {
                read.da
            },
            align: read.align,
            num: read.num,
            notifyid: read.notifyid,
        };
    }
    Ok(VdevInfo {
        dfeatures: checked.vdev.dfeatures,
        gfeatures: checked.vdev.gfeatures,
        status: checked.vdev.status,
        vrings,
    })
}

const _: () = assert!(TABLE_LEN as u64 <= RSC_TABLE_AREA);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_88_bytes_with_one_rpmsg_vdev_and_two_vrings() {
        let t = encode();
        assert_eq!(TABLE_LEN, 88);
        let vdev = decode_vdev(&t).unwrap();
        assert_eq!(vdev.dfeatures, 1);
        assert_eq!(vdev.status, 0);
        assert_eq!(vdev.vrings[0].da, 0x1001_0000);
        assert_eq!(vdev.vrings[1].da, 0x1002_0000);
        assert_eq!(vdev.vrings[1].notifyid, 1);
        // reserved bytes Linux checks (`rsc->reserved[0] || rsc->reserved[1]`) stay zero
        assert_eq!(&t[VDEV_OFFSET + 22..VDEV_OFFSET + 24], &[0, 0]);
    }

    #[test]
    fn the_published_bytes_are_those_of_the_table_before_the_shared_format_crate() {
        // encode() as it was when it wrote every field by hand (hex of the 88 bytes).
        let before = "01000000010000000000000000000000140000000300000007000000000000000100000000000000\
                      000000000002000000000110001000000001000000000000000000000000021000100000000100\
                      000100000000000000";
        let now: String = encode().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(now, before);
    }

    #[test]
    fn a_vring_moved_outside_its_slot_is_rejected() {
        let mut t = encode();
        let at = VDEV_OFFSET + Vdev::SIZE;
        t[at..at + 4].copy_from_slice(&0x1000_0000u32.to_le_bytes());
        assert_eq!(
            decode_vdev(&t),
            Err(TableError(TableDefect::VringDa {
                vring: 0,
                da: 0x1000_0000
            }))
        );
    }

    #[test]
    fn a_wrong_vring_size_is_rejected_with_its_value() {
        let mut t = encode();
        let at = VDEV_OFFSET + Vdev::SIZE + 8;
        for bad in [0u32, 1, 100, 512] {
            t[at..at + 4].copy_from_slice(&bad.to_le_bytes());
            assert_eq!(
                decode_vdev(&t),
                Err(TableError(TableDefect::VringNum { vring: 0, num: bad }))
            );
        }
    }

    #[test]
    fn an_openamp_table_with_addresses_left_to_the_host_is_read_with_the_contract_das() {
        // What Zephyr's resource_table.c publishes: da FW_RSC_ADDR_ANY, align 16.
        let mut t = encode();
        for i in 0..2 {
            let at = VDEV_OFFSET + Vdev::SIZE + i * Vring::SIZE;
            t[at..at + 4].copy_from_slice(&FW_RSC_ADDR_ANY.to_le_bytes());
            t[at + 4..at + 8].copy_from_slice(&16u32.to_le_bytes());
        }
        let vdev = decode_vdev(&t).unwrap();
        assert_eq!(vdev.vrings[0].da, 0x1001_0000);
        assert_eq!(vdev.vrings[1].da, 0x1002_0000);
        assert_eq!(vdev.vrings[0].align, 16);
        t[VDEV_OFFSET + Vdev::SIZE + 4..VDEV_OFFSET + Vdev::SIZE + 8]
            .copy_from_slice(&8u32.to_le_bytes());
        assert_eq!(
            decode_vdev(&t),
            Err(TableError(TableDefect::VringAlign { vring: 0, align: 8 }))
        );
        t = encode();
        t[4] = 2;
        assert_eq!(decode_vdev(&t), Err(TableError(TableDefect::Entries(2))));
    }
}
