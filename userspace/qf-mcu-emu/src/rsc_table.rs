//! The remoteproc resource table the MCU publishes (Linux 6.12 `struct resource_table` with one
//! `RSC_VDEV` entry for rpmsg), and reading back the vring fields Linux may have updated.

use crate::layout::{
    da, RSC_TABLE_AREA, VRING0_OFFSET, VRING1_OFFSET, VRING_ALIGN, VRING_AREA, VRING_NUM,
};

/// `RSC_VDEV` in `include/linux/remoteproc.h`.
pub const RSC_VDEV: u32 = 3;
/// `VIRTIO_ID_RPMSG`.
pub const VIRTIO_ID_RPMSG: u32 = 7;
/// `VIRTIO_RPMSG_F_NS`: the remote announces its channels through the name service.
pub const VIRTIO_RPMSG_F_NS: u32 = 0;
/// `VIRTIO_CONFIG_S_DRIVER_OK`.
pub const STATUS_DRIVER_OK: u8 = 4;

/// `FW_RSC_ADDR_ANY`: an address the firmware leaves to the host.
pub const FW_RSC_ADDR_ANY: u32 = u32::MAX;
/// Smallest vring alignment Linux accepts for a remoteproc vring (and OpenAMP's default).
pub const MIN_VRING_ALIGN: u32 = 16;

/// Offset of the vdev entry's header inside the table (after ver, num, reserved[2], offset[1]).
pub const VDEV_ENTRY_OFFSET: usize = 20;
/// Offset of `fw_rsc_vdev` (after the 4-byte `fw_rsc_hdr`).
const VDEV_OFFSET: usize = VDEV_ENTRY_OFFSET + 4;
/// `sizeof(struct fw_rsc_vdev)` without its vrings.
const VDEV_LEN: usize = 24;
/// `sizeof(struct fw_rsc_vdev_vring)`.
const VRING_LEN: usize = 20;
/// Total table size.
pub const TABLE_LEN: usize = VDEV_OFFSET + VDEV_LEN + 2 * VRING_LEN;

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
    let mut put = |at: usize, v: u32| t[at..at + 4].copy_from_slice(&v.to_le_bytes());
    put(0, 1); // ver
    put(4, 1); // num
    put(16, VDEV_ENTRY_OFFSET as u32); // offset[0]
    put(VDEV_ENTRY_OFFSET, RSC_VDEV);
    put(VDEV_OFFSET, VIRTIO_ID_RPMSG);
    put(VDEV_OFFSET + 8, 1 << VIRTIO_RPMSG_F_NS); // dfeatures
    let vrings = [(VRING0_OFFSET, 0u32), (VRING1_OFFSET, 1u32)];
    for (i, (offset, notifyid)) in vrings.into_iter().enumerate() {
        let at = VDEV_OFFSET + VDEV_LEN + i * VRING_LEN;
        put(at, da(offset) as u32);
        put(at + 4, VRING_ALIGN);
        put(at + 8, u32::from(VRING_NUM));
        put(at + 12, notifyid);
    }
    t[VDEV_OFFSET + 21] = 2; // num_of_vrings
    t
}

/// Parses a table read from shared memory (header, then its one vdev entry) and checks the
/// vrings: a power-of-two size up to 256, an alignment of at least 16, and a `da` inside their
/// areas or `FW_RSC_ADDR_ANY`, which stands for the area's own address (an OpenAMP firmware's
/// table leaves the addresses to the host). Linux may rewrite `da` and `notifyid`; anything else
/// means a corrupt table.
pub fn decode_vdev(t: &[u8; TABLE_LEN]) -> Result<VdevInfo, TableError> {
    let get = |at: usize| u32::from_le_bytes([t[at], t[at + 1], t[at + 2], t[at + 3]]);
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
    expect("ver", get(0), 1, "1")?;
    expect("num", get(4), 1, "1 (one entry)")?;
    expect("offset[0]", get(16), VDEV_ENTRY_OFFSET as u32, "20")?;
    expect("type", get(VDEV_ENTRY_OFFSET), RSC_VDEV, "RSC_VDEV (3)")?;
    expect(
        "id",
        get(VDEV_OFFSET),
        VIRTIO_ID_RPMSG,
        "VIRTIO_ID_RPMSG (7)",
    )?;
    expect("num_of_vrings", u32::from(t[VDEV_OFFSET + 21]), 2, "2")?;
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
        let at = VDEV_OFFSET + VDEV_LEN + i * VRING_LEN;
        *vring = VringInfo {
            da: get(at),
            align: get(at + 4),
            num: get(at + 8),
            notifyid: get(at + 12),
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
        dfeatures: get(VDEV_OFFSET + 8),
        gfeatures: get(VDEV_OFFSET + 12),
        status: t[VDEV_OFFSET + 20],
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
    fn a_vring_moved_outside_its_area_is_rejected() {
        let mut t = encode();
        let at = VDEV_OFFSET + VDEV_LEN;
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
        let at = VDEV_OFFSET + VDEV_LEN + 8;
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
            let at = VDEV_OFFSET + VDEV_LEN + i * VRING_LEN;
            t[at..at + 4].copy_from_slice(&FW_RSC_ADDR_ANY.to_le_bytes());
            t[at + 4..at + 8].copy_from_slice(&16u32.to_le_bytes());
        }
        let vdev = decode_vdev(&t).unwrap();
        assert_eq!(vdev.vrings[0].da, 0x1001_0000);
        assert_eq!(vdev.vrings[1].da, 0x1002_0000);
        assert_eq!(vdev.vrings[0].align, 16);
        t[VDEV_OFFSET + VDEV_LEN + 4..VDEV_OFFSET + VDEV_LEN + 8]
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
