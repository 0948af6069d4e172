//! The remoteproc resource table as Linux reads it (`include/linux/remoteproc.h`): a header
//! (`ver`, `num`, two reserved words, then `num` byte offsets), and entries that each begin
//! with a 32-bit type. Every field is a little-endian `u32` unless its type says otherwise.
//!
//! One place for the layout: the MCU emulator publishes a table with it (`qf-mcu-emu`'s
//! `rsc_table`) and `qf firmware check` (`qf-firmware`) validates firmware tables with it.
//! [`board`] holds the virtual board's own rules for the one table it takes.
//! Readers take the bytes of one structure and return `None` when they are too short, so no
//! input makes them panic; writers return a fixed-size array.

#![no_std]
#![forbid(unsafe_code)]

pub mod board;

/// The only table version Linux accepts (`find_table`: "unsupported fw ver").
pub const VERSION: u32 = 1;
/// `sizeof(struct fw_rsc_hdr)`: the type word in front of every entry.
pub const ENTRY_HEADER_LEN: usize = 4;
/// `FW_RSC_ADDR_ANY`: "Linux chooses the address" in `da`/`pa` fields.
pub const FW_RSC_ADDR_ANY: u32 = u32::MAX;
/// Length of the `name` field of carve-out, devmem and trace entries.
pub const NAME_LEN: usize = 32;

/// `enum fw_resource_type`.
pub const RSC_CARVEOUT: u32 = 0;
pub const RSC_DEVMEM: u32 = 1;
pub const RSC_TRACE: u32 = 2;
pub const RSC_VDEV: u32 = 3;
/// First type Linux does not know ("unsupported resource").
pub const RSC_LAST: u32 = 4;
/// Vendor types, `RSC_VENDOR_START..=RSC_VENDOR_END`, go to the platform driver's `handle_rsc`.
pub const RSC_VENDOR_START: u32 = 128;
pub const RSC_VENDOR_END: u32 = 512;

/// `VIRTIO_ID_RPMSG` (`include/uapi/linux/virtio_ids.h`).
pub const VIRTIO_ID_RPMSG: u32 = 7;
/// `VIRTIO_RPMSG_F_NS` (`drivers/rpmsg/virtio_rpmsg_bus.c`): the remote announces its
/// channels through the name service. A bit number in `dfeatures`.
pub const VIRTIO_RPMSG_F_NS: u32 = 0;

/// The little-endian `u32` at `at`, if four bytes are there.
pub fn read_u32(bytes: &[u8], at: usize) -> Option<u32> {
    let end = at.checked_add(4)?;
    let word: [u8; 4] = bytes.get(at..end)?.try_into().ok()?;
    Some(u32::from_le_bytes(word))
}

fn put_u32(out: &mut [u8], at: usize, value: u32) {
    if let Some(slot) = out.get_mut(at..at + 4) {
        slot.copy_from_slice(&value.to_le_bytes());
    }
}

/// The bytes of a `name[32]` field up to its first NUL (all 32 if there is none).
pub fn name_bytes(name: &[u8; NAME_LEN]) -> &[u8] {
    let end = name.iter().position(|&b| b == 0).unwrap_or(NAME_LEN);
    &name[..end]
}

/// `struct resource_table` without its offset array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub ver: u32,
    pub num: u32,
    pub reserved: [u32; 2],
}

impl Header {
    pub const SIZE: usize = 16;
    pub const VER: usize = 0;
    pub const NUM: usize = 4;
    pub const RESERVED: usize = 8;
    /// Where `offset[0]` is.
    pub const OFFSETS: usize = 16;

    pub fn parse(bytes: &[u8]) -> Option<Header> {
        Some(Header {
            ver: read_u32(bytes, Self::VER)?,
            num: read_u32(bytes, Self::NUM)?,
            reserved: [
                read_u32(bytes, Self::RESERVED)?,
                read_u32(bytes, Self::RESERVED + 4)?,
            ],
        })
    }

    pub fn encode(&self) -> [u8; Self::SIZE] {
        let mut out = [0; Self::SIZE];
        put_u32(&mut out, Self::VER, self.ver);
        put_u32(&mut out, Self::NUM, self.num);
        put_u32(&mut out, Self::RESERVED, self.reserved[0]);
        put_u32(&mut out, Self::RESERVED + 4, self.reserved[1]);
        out
    }

    /// Bytes of the header with `num` offsets (`struct_size(table, offset, num)`).
    pub const fn len_with_offsets(num: u32) -> u64 {
        Self::SIZE as u64 + 4 * num as u64
    }
}

/// `struct fw_rsc_carveout` and `struct fw_rsc_devmem`, which share one layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    pub da: u32,
    pub pa: u32,
    pub len: u32,
    pub flags: u32,
    pub reserved: u32,
    pub name: [u8; NAME_LEN],
}

impl Region {
    pub const SIZE: usize = 52;
    pub const DA: usize = 0;
    pub const PA: usize = 4;
    pub const LEN: usize = 8;
    pub const FLAGS: usize = 12;
    pub const RESERVED: usize = 16;
    pub const NAME: usize = 20;

    pub fn parse(bytes: &[u8]) -> Option<Region> {
        Some(Region {
            da: read_u32(bytes, Self::DA)?,
            pa: read_u32(bytes, Self::PA)?,
            len: read_u32(bytes, Self::LEN)?,
            flags: read_u32(bytes, Self::FLAGS)?,
            reserved: read_u32(bytes, Self::RESERVED)?,
            name: bytes.get(Self::NAME..Self::SIZE)?.try_into().ok()?,
        })
    }

    pub fn encode(&self) -> [u8; Self::SIZE] {
        let mut out = [0; Self::SIZE];
        put_u32(&mut out, Self::DA, self.da);
        put_u32(&mut out, Self::PA, self.pa);
        put_u32(&mut out, Self::LEN, self.len);
        put_u32(&mut out, Self::FLAGS, self.flags);
        put_u32(&mut out, Self::RESERVED, self.reserved);
        out[Self::NAME..].copy_from_slice(&self.name);
        out
    }
}

/// `struct fw_rsc_trace`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trace {
    pub da: u32,
    pub len: u32,
    pub reserved: u32,
    pub name: [u8; NAME_LEN],
}

impl Trace {
    pub const SIZE: usize = 44;
    pub const DA: usize = 0;
    pub const LEN: usize = 4;
    pub const RESERVED: usize = 8;
    pub const NAME: usize = 12;

    pub fn parse(bytes: &[u8]) -> Option<Trace> {
        Some(Trace {
            da: read_u32(bytes, Self::DA)?,
            len: read_u32(bytes, Self::LEN)?,
            reserved: read_u32(bytes, Self::RESERVED)?,
            name: bytes.get(Self::NAME..Self::SIZE)?.try_into().ok()?,
        })
    }

    pub fn encode(&self) -> [u8; Self::SIZE] {
        let mut out = [0; Self::SIZE];
        put_u32(&mut out, Self::DA, self.da);
        put_u32(&mut out, Self::LEN, self.len);
        put_u32(&mut out, Self::RESERVED, self.reserved);
        out[Self::NAME..].copy_from_slice(&self.name);
        out
    }
}

/// `struct fw_rsc_vdev` without its vrings and config space, which follow it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Vdev {
    pub id: u32,
    pub notifyid: u32,
    pub dfeatures: u32,
    pub gfeatures: u32,
    pub config_len: u32,
    pub status: u8,
    pub num_of_vrings: u8,
    pub reserved: [u8; 2],
}

impl Vdev {
    pub const SIZE: usize = 24;
    pub const ID: usize = 0;
    pub const NOTIFYID: usize = 4;
    pub const DFEATURES: usize = 8;
    pub const GFEATURES: usize = 12;
    pub const CONFIG_LEN: usize = 16;
    pub const STATUS: usize = 20;
    pub const NUM_OF_VRINGS: usize = 21;
    pub const RESERVED: usize = 22;

    pub fn parse(bytes: &[u8]) -> Option<Vdev> {
        let tail = bytes.get(Self::STATUS..Self::SIZE)?;
        Some(Vdev {
            id: read_u32(bytes, Self::ID)?,
            notifyid: read_u32(bytes, Self::NOTIFYID)?,
            dfeatures: read_u32(bytes, Self::DFEATURES)?,
            gfeatures: read_u32(bytes, Self::GFEATURES)?,
            config_len: read_u32(bytes, Self::CONFIG_LEN)?,
            status: tail[0],
            num_of_vrings: tail[1],
            reserved: [tail[2], tail[3]],
        })
    }

    pub fn encode(&self) -> [u8; Self::SIZE] {
        let mut out = [0; Self::SIZE];
        put_u32(&mut out, Self::ID, self.id);
        put_u32(&mut out, Self::NOTIFYID, self.notifyid);
        put_u32(&mut out, Self::DFEATURES, self.dfeatures);
        put_u32(&mut out, Self::GFEATURES, self.gfeatures);
        put_u32(&mut out, Self::CONFIG_LEN, self.config_len);
        out[Self::STATUS] = self.status;
        out[Self::NUM_OF_VRINGS] = self.num_of_vrings;
        out[Self::RESERVED..].copy_from_slice(&self.reserved);
        out
    }

    /// The rpmsg vdev a remote declares: `VIRTIO_ID_RPMSG`, two vrings (rx, tx), the name
    /// service offered (`VIRTIO_RPMSG_F_NS`); Linux fills in `gfeatures` and `status`.
    pub const fn rpmsg() -> Vdev {
        Vdev {
            id: VIRTIO_ID_RPMSG,
            notifyid: 0,
            dfeatures: 1 << VIRTIO_RPMSG_F_NS,
            gfeatures: 0,
            config_len: 0,
            status: 0,
            num_of_vrings: 2,
            reserved: [0, 0],
        }
    }

    /// Offset of vring `i` from the start of the vdev structure.
    pub const fn vring_offset(i: usize) -> usize {
        Self::SIZE + i * Vring::SIZE
    }

    /// Bytes of the vdev with its vrings and config space, as `rproc_handle_vdev` counts them
    /// (`struct_size(rsc, vring, num_of_vrings) + config_len`).
    pub const fn len_with(num_of_vrings: u8, config_len: u32) -> u64 {
        Self::SIZE as u64 + Vring::SIZE as u64 * num_of_vrings as u64 + config_len as u64
    }
}

/// `struct fw_rsc_vdev_vring` (Linux before 5.x named `pa` `reserved`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Vring {
    pub da: u32,
    pub align: u32,
    pub num: u32,
    pub notifyid: u32,
    pub pa: u32,
}

impl Vring {
    pub const SIZE: usize = 20;
    pub const DA: usize = 0;
    pub const ALIGN: usize = 4;
    pub const NUM: usize = 8;
    pub const NOTIFYID: usize = 12;
    pub const PA: usize = 16;

    pub fn parse(bytes: &[u8]) -> Option<Vring> {
        Some(Vring {
            da: read_u32(bytes, Self::DA)?,
            align: read_u32(bytes, Self::ALIGN)?,
            num: read_u32(bytes, Self::NUM)?,
            notifyid: read_u32(bytes, Self::NOTIFYID)?,
            pa: read_u32(bytes, Self::PA)?,
        })
    }

    pub fn encode(&self) -> [u8; Self::SIZE] {
        let mut out = [0; Self::SIZE];
        put_u32(&mut out, Self::DA, self.da);
        put_u32(&mut out, Self::ALIGN, self.align);
        put_u32(&mut out, Self::NUM, self.num);
        put_u32(&mut out, Self::NOTIFYID, self.notifyid);
        put_u32(&mut out, Self::PA, self.pa);
        out
    }
}

/// Bytes of a legacy split vring of `num` entries whose used ring starts `align`-aligned:
/// `vring_size()` of Linux's `include/uapi/linux/virtio_ring.h` (descriptors, available ring
/// with its three 16-bit words, alignment, used ring). The arithmetic wraps instead of
/// panicking; `align` is meant to be a power of two, as Linux's mask assumes.
pub const fn vring_size(num: u64, align: u64) -> u64 {
    let desc_and_avail = 16u64
        .wrapping_mul(num)
        .wrapping_add(2u64.wrapping_mul(3u64.wrapping_add(num)));
    let mask = align.wrapping_sub(1);
    let used_start = desc_and_avail.wrapping_add(mask) & !mask;
    used_start
        .wrapping_add(6)
        .wrapping_add(8u64.wrapping_mul(num))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structure_sizes_are_linux_packed_sizes() {
        // sizeof() of the __packed structs in include/linux/remoteproc.h
        assert_eq!(Header::SIZE, 4 + 4 + 2 * 4);
        assert_eq!(Region::SIZE, 5 * 4 + NAME_LEN);
        assert_eq!(Trace::SIZE, 3 * 4 + NAME_LEN);
        assert_eq!(Vdev::SIZE, 5 * 4 + 4);
        assert_eq!(Vring::SIZE, 5 * 4);
    }

    #[test]
    fn every_entry_round_trips_and_a_short_one_is_none() {
        let mut name = [0u8; NAME_LEN];
        name[..4].copy_from_slice(b"text");
        let region = Region {
            da: 1,
            pa: 2,
            len: 3,
            flags: 4,
            reserved: 5,
            name,
        };
        let bytes = region.encode();
        assert_eq!(Region::parse(&bytes), Some(region));
        assert_eq!(Region::parse(&bytes[..Region::SIZE - 1]), None);
        assert_eq!(name_bytes(&region.name), b"text");

        let trace = Trace {
            da: 9,
            len: 8,
            reserved: 0,
            name,
        };
        assert_eq!(Trace::parse(&trace.encode()), Some(trace));
        assert_eq!(Trace::parse(&trace.encode()[..Trace::SIZE - 1]), None);

        let vdev = Vdev {
            id: VIRTIO_ID_RPMSG,
            notifyid: 1,
            dfeatures: 1 << VIRTIO_RPMSG_F_NS,
            gfeatures: 0,
            config_len: 0,
            status: 0,
            num_of_vrings: 2,
            reserved: [0, 7],
        };
        let bytes = vdev.encode();
        assert_eq!(bytes[Vdev::NUM_OF_VRINGS], 2);
        assert_eq!(bytes[Vdev::RESERVED + 1], 7);
        assert_eq!(Vdev::parse(&bytes), Some(vdev));
        assert_eq!(Vdev::parse(&bytes[..Vdev::SIZE - 1]), None);

        let vring = Vring {
            da: FW_RSC_ADDR_ANY,
            align: 16,
            num: 8,
            notifyid: 0,
            pa: 0,
        };
        assert_eq!(Vring::parse(&vring.encode()), Some(vring));
        assert_eq!(Vring::parse(&vring.encode()[..Vring::SIZE - 1]), None);

        let rpmsg = Vdev::rpmsg();
        assert_eq!((rpmsg.id, rpmsg.dfeatures, rpmsg.num_of_vrings), (7, 1, 2));

        let header = Header {
            ver: 1,
            num: 2,
            reserved: [0, 0],
        };
        assert_eq!(Header::parse(&header.encode()), Some(header));
        assert_eq!(Header::parse(&header.encode()[..15]), None);
    }

    #[test]
    fn read_u32_never_reads_past_the_end() {
        assert_eq!(read_u32(&[1, 0, 0, 0], 0), Some(1));
        assert_eq!(read_u32(&[1, 0, 0], 0), None);
        assert_eq!(read_u32(&[1, 0, 0, 0], usize::MAX), None);
    }

    #[test]
    fn vring_size_is_linux_vring_size() {
        // 256 entries, page-aligned used ring: 4096 + 518 -> 8192, + 6 + 2048.
        assert_eq!(vring_size(256, 4096), 8192 + 6 + 8 * 256);
        // Zephyr's OpenAMP sample: 8 entries aligned to 16 -> 128 + 22 = 150 -> 160, + 70.
        assert_eq!(vring_size(8, 16), 160 + 6 + 64);
        // No panic for what Linux refuses.
        let _ = vring_size(0, 0);
        let _ = vring_size(u64::MAX, u64::MAX);
    }
}
