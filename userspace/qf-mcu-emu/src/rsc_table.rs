//! The remoteproc resource table the MCU publishes (Linux 6.12 `struct resource_table` with one
//! `RSC_VDEV` entry for rpmsg), and reading back the vring fields Linux may have updated. The
//! format (field offsets, sizes, type and feature numbers) is `qf-resource-table`'s.

use qf_resource_table::{read_u32, Header, Vdev, Vring, ENTRY_HEADER_LEN};
pub use qf_resource_table::{FW_RSC_ADDR_ANY, RSC_VDEV, VIRTIO_ID_RPMSG, VIRTIO_RPMSG_F_NS};

use crate::layout::{
    da, RSC_TABLE_AREA, VRING0_OFFSET, VRING1_OFFSET, VRING_ALIGN, VRING_AREA, VRING_NUM,
};

/// `VIRTIO_CONFIG_S_DRIVER_OK`.
pub const STATUS_DRIVER_OK: u8 = 4;

/// Smallest vring alignment Linux accepts for a remoteproc vring (and OpenAMP's default).
pub const MIN_VRING_ALIGN: u32 = 16;

/// Offset of the vdev entry's header inside the table (after ver, num, reserved[2], offset[1]).
pub const VDEV_ENTRY_OFFSET: usize = Header::SIZE + 4;
/// Offset of `fw_rsc_vdev` (after the 4-byte `fw_rsc_hdr`).
const VDEV_OFFSET: usize = VDEV_ENTRY_OFFSET + ENTRY_HEADER_LEN;
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

/// Why a table read back from shared memory is not usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    #[error("resource table field {field} is {found:#x}, expected {expected}")]
    Field {
        field: &'static str,
        found: u64,
        expected: &'static str,
    },
}

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

/// Parses a table read from shared memory (header, then its one vdev entry) and checks the
/// vrings: a power-of-two size up to 256, an alignment of at least 16, and a `da` inside their
/// areas or `FW_RSC_ADDR_ANY`, which stands for the area's own address (an OpenAMP firmware's
/// table leaves the addresses to the host). Linux may rewrite `da` and `notifyid`; anything else
/// means a corrupt table.
pub fn decode_vdev(t: &[u8; TABLE_LEN]) -> Result<VdevInfo, TableError> {
    let expect = |field, found: u32, want: u32, expected| {
        if found == want {
            Ok(())
        } else {
            Err(TableError::Field {
                field,
                found: u64::from(found),
                expected,
            })
        }
    };
    let word = |at: usize| read_u32(t, at).unwrap_or(u32::MAX);
    expect("ver", word(Header::VER), 1, "1")?;
    expect("num", word(Header::NUM), 1, "1 (one entry)")?;
    expect(
        "offset[0]",
        word(Header::OFFSETS),
        VDEV_ENTRY_OFFSET as u32,
        "20",
    )?;
    expect("type", word(VDEV_ENTRY_OFFSET), RSC_VDEV, "RSC_VDEV (3)")?;
    // The fixed TABLE_LEN holds the vdev and both vrings, so parsing cannot come up short.
    let short = TableError::Field {
        field: "table length",
        found: TABLE_LEN as u64,
        expected: "room for the vdev and two vrings",
    };
    let vdev = Vdev::parse(&t[VDEV_OFFSET..]).ok_or(short.clone())?;
    expect("id", vdev.id, VIRTIO_ID_RPMSG, "VIRTIO_ID_RPMSG (7)")?;
    expect("num_of_vrings", u32::from(vdev.num_of_vrings), 2, "2")?;
    let mut vrings = [VringInfo {
        da: 0,
        align: 0,
        num: 0,
        notifyid: 0,
    }; 2];
    for (i, (vring, area)) in vrings
        .iter_mut()
        .zip([VRING0_OFFSET, VRING1_OFFSET])
        .enumerate()
    {
        let read = Vring::parse(&t[VDEV_OFFSET + Vdev::vring_offset(i)..]).ok_or(short.clone())?;
        *vring = VringInfo {
            da: read.da,
            align: read.align,
            num: read.num,
            notifyid: read.notifyid,
        };
        if !vring.num.is_power_of_two() || vring.num > u32::from(VRING_NUM) {
            return Err(TableError::Field {
                field: "vring.num",
                found: u64::from(vring.num),
                expected: "a power of two, at most 256",
            });
        }
        if !vring.align.is_power_of_two() || vring.align < MIN_VRING_ALIGN {
            return Err(TableError::Field {
                field: "vring.align",
                found: u64::from(vring.align),
                expected: "a power of two, at least 16",
            });
        }
        // An address left to the host: the vring is where the contract puts it, which is
        // where Linux's carveout is.
        if vring.da == FW_RSC_ADDR_ANY {
            vring.da = da(area) as u32;
        }
        let start = u64::from(vring.da);
        let size = crate::layout::vring_size(u64::from(vring.num), u64::from(vring.align));
        if start < da(area) || start + size > da(area) + VRING_AREA {
            return Err(TableError::Field {
                field: "vring.da",
                found: start,
                expected: "inside its 64 KiB vring area",
            });
        }
    }
    Ok(VdevInfo {
        dfeatures: vdev.dfeatures,
        gfeatures: vdev.gfeatures,
        status: vdev.status,
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
    fn a_vring_moved_outside_its_area_is_rejected() {
        let mut t = encode();
        let at = VDEV_OFFSET + Vdev::SIZE;
        t[at..at + 4].copy_from_slice(&0x1000_0000u32.to_le_bytes());
        assert!(matches!(
            decode_vdev(&t),
            Err(TableError::Field {
                field: "vring.da",
                ..
            })
        ));
    }

    #[test]
    fn a_wrong_vring_size_is_rejected_with_its_field_name() {
        let mut t = encode();
        let at = VDEV_OFFSET + Vdev::SIZE + 8;
        for bad in [0u32, 100, 512] {
            t[at..at + 4].copy_from_slice(&bad.to_le_bytes());
            assert_eq!(
                decode_vdev(&t),
                Err(TableError::Field {
                    field: "vring.num",
                    found: u64::from(bad),
                    expected: "a power of two, at most 256"
                })
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
        assert!(matches!(
            decode_vdev(&t),
            Err(TableError::Field {
                field: "vring.align",
                ..
            })
        ));
        t = encode();
        t[4] = 2;
        assert!(matches!(
            decode_vdev(&t),
            Err(TableError::Field { field: "num", .. })
        ));
    }
}
