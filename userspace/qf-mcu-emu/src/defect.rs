//! Broken MCU images on demand, for the harness and `qfabric_rproc` to be tested against: an
//! MCU that never boots, one that never announces its channel, and one that publishes a
//! malformed resource table (one kind for each rule of `qf_resource_table::board`, and a table
//! that runs past its slot). `qf-mcu-emu --defect KIND` boots with one; `ctl defect KIND|none`
//! restarts into one (a new generation, as a reset into another image would be).

use qf_resource_table::{Header, Vdev, Vring};

use crate::layout::RSC_TABLE_AREA;
use crate::rsc_table::{TableDefect, TABLE_LEN, VDEV_ENTRY_OFFSET, VDEV_OFFSET};

macro_rules! defects {
    ($($kind:ident = $name:literal: $what:literal;)*) => {
        /// One way an MCU image can be broken.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Defect {
            $($kind,)*
        }

        impl Defect {
            /// Every kind, in the order `--help` lists them.
            pub const ALL: &'static [Defect] = &[$(Defect::$kind,)*];

            /// The name the command line and the control socket take.
            pub fn name(self) -> &'static str {
                match self {
                    $(Defect::$kind => $name,)*
                }
            }

            /// What the MCU does wrong.
            pub fn what(self) -> &'static str {
                match self {
                    $(Defect::$kind => $what,)*
                }
            }
        }
    };
}

defects! {
    NoBoot = "no-boot": "never publishes the control block (no magic, mcu_state offline)";
    NoAnnounce = "no-announce":
        "publishes a good table and serves the vrings, but never sends the name-service announcement";
    TableVersion = "table-version": "ver 2";
    TableEntries = "table-entries": "num 2";
    TableEntryOffset = "table-entry-offset": "offset[0] 200, past the table";
    TableEntryType = "table-entry-type": "the entry is RSC_CARVEOUT (0)";
    TableVdevId = "table-vdev-id": "the vdev is virtio id 3 (console)";
    TableConfigLen = "table-config-len": "config_len 8";
    TableVrings = "table-vrings": "num_of_vrings 1";
    TableVringNum = "table-vring-num": "vring 1 has 100 entries";
    TableVringAlign = "table-vring-align": "vring 0 aligned to 8";
    TableVringDa = "table-vring-da": "vring 1's da is vring 0's slot";
    TableSlot = "table-slot": "rsc_table_size 8192, past the 4 KiB slot";
}

/// Where the vring entries are in the published table.
const VRING0: usize = VDEV_OFFSET + Vdev::SIZE;
const VRING1: usize = VRING0 + Vring::SIZE;

impl Defect {
    /// The kind named `name`; the error lists the names.
    pub fn parse(name: &str) -> Result<Defect, String> {
        Defect::ALL
            .iter()
            .copied()
            .find(|d| d.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = Defect::ALL.iter().map(|d| d.name()).collect();
                format!("unknown defect '{name}' ({})", names.join(", "))
            })
    }

    /// The word of the table this defect changes, and its new value.
    fn table_word(self) -> Option<(usize, u32)> {
        Some(match self {
            Defect::TableVersion => (Header::VER, 2),
            Defect::TableEntries => (Header::NUM, 2),
            Defect::TableEntryOffset => (Header::OFFSETS, 200),
            Defect::TableEntryType => (VDEV_ENTRY_OFFSET, qf_resource_table::RSC_CARVEOUT),
            Defect::TableVdevId => (VDEV_OFFSET + Vdev::ID, 3),
            Defect::TableConfigLen => (VDEV_OFFSET + Vdev::CONFIG_LEN, 8),
            // status 0, num_of_vrings 1, reserved 0 0 (one little-endian word).
            Defect::TableVrings => (VDEV_OFFSET + Vdev::STATUS, 1 << 8),
            Defect::TableVringNum => (VRING1 + Vring::NUM, 100),
            Defect::TableVringAlign => (VRING0 + Vring::ALIGN, 8),
            Defect::TableVringDa => (VRING1 + Vring::DA, crate::rsc_table::SLOTS.da[0]),
            _ => return None,
        })
    }

    /// The table this MCU publishes instead of `table`.
    pub fn corrupt(self, table: &mut [u8; TABLE_LEN]) {
        if let Some((at, value)) = self.table_word() {
            table[at..at + 4].copy_from_slice(&value.to_le_bytes());
        }
    }

    /// The `rsc_table_size` this MCU publishes for a table of `len` bytes.
    pub fn published_size(self, len: u32) -> u32 {
        match self {
            Defect::TableSlot => 2 * RSC_TABLE_AREA as u32,
            _ => len,
        }
    }

    /// What the board's rules say about the published table (`None`: they do not look at it,
    /// or it passes); `TableSlot` breaks the control block's rule instead.
    pub fn expected(self) -> Option<TableDefect> {
        let (at, value) = self.table_word()?;
        Some(match at {
            Header::VER => TableDefect::Version(value),
            Header::NUM => TableDefect::Entries(value),
            Header::OFFSETS => TableDefect::EntryOffset(value),
            VDEV_ENTRY_OFFSET => TableDefect::EntryType(value),
            _ if at == VDEV_OFFSET + Vdev::ID => TableDefect::VdevId(value),
            _ if at == VDEV_OFFSET + Vdev::CONFIG_LEN => TableDefect::ConfigLen(value),
            _ if at == VDEV_OFFSET + Vdev::STATUS => TableDefect::Vrings(value >> 8),
            _ if at == VRING1 + Vring::NUM => TableDefect::VringNum {
                vring: 1,
                num: value,
            },
            _ if at == VRING0 + Vring::ALIGN => TableDefect::VringAlign {
                vring: 0,
                align: value,
            },
            _ => TableDefect::VringDa {
                vring: 1,
                da: value,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rsc_table::{decode_vdev, encode, TableError};

    #[test]
    fn each_table_defect_breaks_exactly_the_rule_it_is_named_after() {
        for &defect in Defect::ALL {
            let mut table = encode();
            defect.corrupt(&mut table);
            match defect.expected() {
                Some(rule) => assert_eq!(decode_vdev(&table), Err(TableError(rule)), "{defect:?}"),
                None => assert!(decode_vdev(&table).is_ok(), "{defect:?} leaves the table"),
            }
        }
        assert_eq!(Defect::TableSlot.published_size(88), 8192);
        assert_eq!(Defect::TableVersion.published_size(88), 88);
    }

    #[test]
    fn names_round_trip_and_an_unknown_one_lists_them_all() {
        for &defect in Defect::ALL {
            assert_eq!(Defect::parse(defect.name()), Ok(defect));
        }
        let e = Defect::parse("table-colour").unwrap_err();
        assert!(
            e.contains("'table-colour'") && e.contains("no-announce, table-version"),
            "{e}"
        );
    }
}
