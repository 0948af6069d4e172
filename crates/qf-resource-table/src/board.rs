//! The virtual board's resource table (`docs/virtual-board.md`, *Resource table*): one entry,
//! an rpmsg vdev without config space, whose two vrings fit the 64 KiB slots Linux registers as
//! carve-outs. These are the rules `qfabric_rproc` applies before the remoteproc core sees a
//! table (`linux-driver/qfabric/board.rs`, which cannot use this crate and repeats them; the MCU
//! emulator's `driver_table_rules` test runs that file against this one), and those the
//! emulator and `qf-board-bridge check` apply to a published table.

use core::fmt;

use crate::{read_u32, Header, Vdev, Vring, ENTRY_HEADER_LEN, FW_RSC_ADDR_ANY, RSC_VDEV};
use crate::{VERSION, VIRTIO_ID_RPMSG};

/// Largest vring the board takes (Linux's rpmsg allocates `2 * num` buffers of 512 bytes in a
/// 1 MiB carve-out, so 256 is the most that fits).
pub const MAX_VRING_NUM: u32 = 256;
/// Smallest vring alignment Linux accepts for a remoteproc vring (and OpenAMP's default).
pub const MIN_VRING_ALIGN: u32 = 16;

/// What is wrong with a published table: the first defect found, with the value found. The
/// variants and their fields are those of the driver's `TableDefect`, so that both print the
/// same text (`{:?}`) for the same table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    /// slot with it.
    VringAlign { vring: usize, align: u32 },
    /// A vring's `da` is neither `FW_RSC_ADDR_ANY` nor its slot's.
    VringDa { vring: usize, da: u32 },
}

impl fmt::Display for TableDefect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}: ")?;
        match *self {
            TableDefect::Version(v) => write!(f, "ver is {v}, Linux takes only 1"),
            TableDefect::Entries(n) => write!(f, "num is {n}, the board has one entry (the vdev)"),
            TableDefect::EntryOffset(o) => {
                write!(f, "offset[0] is {o}: not word-aligned, or no room for the vdev and its vrings there")
            }
            TableDefect::EntryType(t) => write!(f, "the entry's type is {t}, not RSC_VDEV (3)"),
            TableDefect::VdevId(id) => write!(f, "the vdev is virtio id {id}, not rpmsg (7)"),
            TableDefect::ConfigLen(n) => {
                write!(f, "the vdev has {n} bytes of config space, the board none")
            }
            TableDefect::Vrings(n) => write!(f, "the vdev has {n} vrings, rpmsg needs 2"),
            TableDefect::VringNum { vring, num } => write!(
                f,
                "vring {vring} has {num} entries, not a power of two from 2 to {MAX_VRING_NUM}"
            ),
            TableDefect::VringAlign { vring, align } => write!(
                f,
                "vring {vring}'s alignment {align} is not a power of two of at least \
                 {MIN_VRING_ALIGN} with which the ring fits its slot"
            ),
            TableDefect::VringDa { vring, da } => write!(
                f,
                "vring {vring}'s da {da:#x} is neither FW_RSC_ADDR_ANY nor its slot's"
            ),
        }
    }
}

/// Where the board's vrings go: each slot's device address and the slot length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VringSlots {
    pub da: [u32; 2],
    pub len: u32,
}

/// A table that passed [`check`]: where its vdev is, and what it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BoardVdev {
    /// Offset of `struct fw_rsc_vdev` in the table (after the entry's type word).
    pub offset: usize,
    pub vdev: Vdev,
    pub vrings: [Vring; 2],
}

/// Checks `table` (exactly the published bytes) against the board's rules, in the driver's
/// order, and returns the first defect. Never panics, whatever the bytes.
pub fn check(table: &[u8], slots: VringSlots) -> Result<BoardVdev, TableDefect> {
    // A word past the end reads as 0, as the driver's bounded reads of its slot do; the length
    // checks below keep every word that matters inside `table`.
    let word = |at: usize| read_u32(table, at).unwrap_or(0);
    let version = word(Header::VER);
    if version != VERSION {
        return Err(TableDefect::Version(version));
    }
    let entries = word(Header::NUM);
    if entries != 1 {
        return Err(TableDefect::Entries(entries));
    }
    let entry = word(Header::OFFSETS);
    let vdev_at = (entry as usize).saturating_add(ENTRY_HEADER_LEN);
    if (entry as usize) < Header::OFFSETS + 4
        || entry % 4 != 0
        || vdev_at.saturating_add(Vdev::len_with(2, 0) as usize) > table.len()
    {
        return Err(TableDefect::EntryOffset(entry));
    }
    let kind = word(entry as usize);
    if kind != RSC_VDEV {
        return Err(TableDefect::EntryType(kind));
    }
    // In range: checked with the entry offset.
    let vdev = Vdev::parse(&table[vdev_at..]).ok_or(TableDefect::EntryOffset(entry))?;
    if vdev.id != VIRTIO_ID_RPMSG {
        return Err(TableDefect::VdevId(vdev.id));
    }
    if vdev.config_len != 0 {
        return Err(TableDefect::ConfigLen(vdev.config_len));
    }
    if vdev.num_of_vrings != 2 {
        return Err(TableDefect::Vrings(u32::from(vdev.num_of_vrings)));
    }
    let mut vrings = [Vring {
        da: 0,
        align: 0,
        num: 0,
        notifyid: 0,
        pa: 0,
    }; 2];
    for (vring, slot_da) in slots.da.into_iter().enumerate() {
        let at = vdev_at + Vdev::vring_offset(vring);
        let read = Vring::parse(&table[at..]).ok_or(TableDefect::EntryOffset(entry))?;
        let (num, align) = (read.num, read.align);
        if !num.is_power_of_two() || !(2..=MAX_VRING_NUM).contains(&num) {
            return Err(TableDefect::VringNum { vring, num });
        }
        if !align.is_power_of_two()
            || align < MIN_VRING_ALIGN
            || align > slots.len
            || crate::vring_size(u64::from(num), u64::from(align)) > u64::from(slots.len)
        {
            return Err(TableDefect::VringAlign { vring, align });
        }
        if read.da != FW_RSC_ADDR_ANY && read.da != slot_da {
            return Err(TableDefect::VringDa { vring, da: read.da });
        }
        vrings[vring] = read;
    }
    Ok(BoardVdev {
        offset: vdev_at,
        vdev,
        vrings,
    })
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::format;
    use std::vec::Vec;

    const SLOTS: VringSlots = VringSlots {
        da: [0x1001_0000, 0x1002_0000],
        len: 0x1_0000,
    };

    /// The board's table: header, offset 20, the vdev entry, two vrings.
    fn table() -> Vec<u8> {
        let mut t = Vec::new();
        t.extend_from_slice(
            &Header {
                ver: 1,
                num: 1,
                reserved: [0, 0],
            }
            .encode(),
        );
        t.extend_from_slice(&20u32.to_le_bytes());
        t.extend_from_slice(&RSC_VDEV.to_le_bytes());
        t.extend_from_slice(&Vdev::rpmsg().encode());
        for da in SLOTS.da {
            let vring = Vring {
                da,
                align: 4096,
                num: 256,
                notifyid: 0,
                pa: 0,
            };
            t.extend_from_slice(&vring.encode());
        }
        t
    }

    fn put(t: &mut [u8], at: usize, value: u32) {
        t[at..at + 4].copy_from_slice(&value.to_le_bytes());
    }

    #[test]
    fn the_boards_table_passes_and_each_defect_is_named_with_its_value() {
        let good = table();
        assert_eq!(good.len(), 88);
        let vdev = check(&good, SLOTS).unwrap();
        assert_eq!((vdev.offset, vdev.vrings[1].da), (24, 0x1002_0000));
        let vring1 = 24 + Vdev::SIZE + Vring::SIZE;
        let cases: [(usize, u32, TableDefect); 10] = [
            (0, 2, TableDefect::Version(2)),
            (4, 2, TableDefect::Entries(2)),
            (16, 200, TableDefect::EntryOffset(200)),
            (20, 0, TableDefect::EntryType(0)),
            (24, 3, TableDefect::VdevId(3)),
            (24 + 16, 8, TableDefect::ConfigLen(8)),
            (24 + 20, 1 << 8, TableDefect::Vrings(1)),
            (
                vring1 + 8,
                100,
                TableDefect::VringNum { vring: 1, num: 100 },
            ),
            (
                24 + Vdev::SIZE + 4,
                8,
                TableDefect::VringAlign { vring: 0, align: 8 },
            ),
            (
                vring1,
                0x1001_0000,
                TableDefect::VringDa {
                    vring: 1,
                    da: 0x1001_0000,
                },
            ),
        ];
        for (at, value, defect) in cases {
            let mut t = good.clone();
            put(&mut t, at, value);
            assert_eq!(check(&t, SLOTS), Err(defect), "word {at} = {value}");
            let text = format!("{defect}");
            assert!(text.starts_with(&format!("{defect:?}: ")), "{text}");
        }
    }

    #[test]
    fn addresses_left_to_linux_pass_and_a_ring_too_big_for_its_slot_does_not() {
        let mut t = table();
        put(&mut t, 24 + Vdev::SIZE, FW_RSC_ADDR_ANY);
        assert!(check(&t, SLOTS).is_ok());
        // 256 entries with a 64 KiB-aligned used ring do not fit a 64 KiB slot.
        put(&mut t, 24 + Vdev::SIZE + 4, 0x1_0000);
        assert_eq!(
            check(&t, SLOTS),
            Err(TableDefect::VringAlign {
                vring: 0,
                align: 0x1_0000
            })
        );
    }

    #[test]
    fn every_truncation_is_a_defect_never_a_panic() {
        let good = table();
        for len in 0..good.len() {
            assert!(check(&good[..len], SLOTS).is_err(), "{len} bytes");
        }
        // The entry offset at the very end of the address space.
        let mut t = good.clone();
        put(&mut t, 16, u32::MAX);
        assert_eq!(check(&t, SLOTS), Err(TableDefect::EntryOffset(u32::MAX)));
    }
}
