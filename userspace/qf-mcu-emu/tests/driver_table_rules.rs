//! `qfabric_rproc`'s resource-table rules are `qf_resource_table::board`'s. The kernel module
//! cannot use the crate, so `linux-driver/qfabric/board.rs` repeats them; this test compiles
//! that file on the host, over a shared-memory window held in a byte vector that reads as the
//! kernel's does (word-aligned, bounds-checked), and requires the same verdict, printed in the
//! same words, for the board's table, for every table `qf-mcu-emu --defect` publishes, and for
//! random corruptions of it.

use std::cell::RefCell;

use proptest::prelude::*;
use qf_mcu_emu::defect::Defect;
use qf_mcu_emu::layout::{control, LAYOUT_VERSION, MAGIC, RSC_TABLE_AREA, RSC_TABLE_OFFSET};
use qf_mcu_emu::rsc_table::{self, TableDefect, SLOTS, TABLE_LEN};

/// The window the driver's `ControlBlock` reads, as `linux-driver/qfabric/shm.rs` behaves: a
/// misaligned or out-of-range word is an error.
mod shm {
    use std::cell::RefCell;

    pub struct Shm {
        pub bytes: RefCell<Vec<u8>>,
    }

    #[derive(Debug)]
    pub struct Error;

    impl Shm {
        pub fn read_u32(&self, offset: usize) -> Result<u32, Error> {
            if offset % 4 != 0 {
                return Err(Error);
            }
            let bytes = self.bytes.borrow();
            let word = bytes.get(offset..offset + 4).ok_or(Error)?;
            Ok(u32::from_le_bytes(word.try_into().map_err(|_| Error)?))
        }

        pub fn write_u32(&self, offset: usize, value: u32) -> Result<(), Error> {
            if offset % 4 != 0 {
                return Err(Error);
            }
            let mut bytes = self.bytes.borrow_mut();
            let word = bytes.get_mut(offset..offset + 4).ok_or(Error)?;
            word.copy_from_slice(&value.to_le_bytes());
            Ok(())
        }

        pub fn write_u64(&self, offset: usize, value: u64) -> Result<(), Error> {
            self.write_u32(offset, value as u32)?;
            self.write_u32(offset + 4, (value >> 32) as u32)
        }
    }
}

fn full_barrier() {}

#[allow(dead_code)]
#[path = "../../../linux-driver/qfabric/board.rs"]
mod board;

/// A running MCU's control block with `table` published at the slot, `size` bytes long.
fn window(table: &[u8], offset: u32, size: u32) -> shm::Shm {
    let mut bytes = vec![0u8; 0x10_0000];
    let mut put = |at: u64, value: u32| {
        bytes[at as usize..at as usize + 4].copy_from_slice(&value.to_le_bytes());
    };
    put(control::MAGIC, MAGIC);
    put(control::LAYOUT_VERSION, LAYOUT_VERSION);
    put(control::MCU_STATE, 2);
    put(control::RSC_TABLE_OFFSET, offset);
    put(control::RSC_TABLE_SIZE, size);
    let slot = RSC_TABLE_OFFSET as usize;
    bytes[slot..slot + table.len()].copy_from_slice(table);
    shm::Shm {
        bytes: RefCell::new(bytes),
    }
}

/// The driver's verdict on `table` (published whole), as it prints it.
fn driver(table: &[u8]) -> Result<(), String> {
    let shm = window(table, RSC_TABLE_OFFSET as u32, table.len() as u32);
    match board::ControlBlock::new(&shm).resource_table() {
        Ok(_) => Ok(()),
        Err(board::NotReady::Malformed(defect)) => Err(format!("{defect:?}")),
        Err(other) => Err(format!("not a table defect: {other:?}")),
    }
}

/// The crate's verdict, as the emulator and `qf-board-bridge check` print it.
fn crate_rules(table: &[u8]) -> Result<(), String> {
    qf_resource_table::board::check(table, SLOTS)
        .map(|_| ())
        .map_err(|defect| format!("{defect:?}"))
}

#[test]
fn the_boards_table_passes_both() {
    let table = rsc_table::encode();
    assert_eq!(driver(&table), Ok(()));
    assert_eq!(crate_rules(&table), Ok(()));
}

#[test]
fn every_published_defect_is_refused_by_both_with_the_same_name() {
    for &defect in Defect::ALL {
        let Some(expected) = defect.expected() else {
            continue;
        };
        let mut table = rsc_table::encode();
        defect.corrupt(&mut table);
        let named = Err(format!("{expected:?}"));
        assert_eq!(driver(&table), named, "{}", defect.name());
        assert_eq!(crate_rules(&table), named, "{}", defect.name());
    }
}

#[test]
fn the_slot_rule_is_the_bridges() {
    // `table-slot` publishes a size past the slot: the driver's BadTable, printed as the
    // bridge prints it.
    let table = rsc_table::encode();
    let size = Defect::TableSlot.published_size(TABLE_LEN as u32);
    let shm = window(&table, RSC_TABLE_OFFSET as u32, size);
    let verdict = board::ControlBlock::new(&shm).resource_table();
    assert_eq!(
        format!("{:?}", verdict.unwrap_err()),
        format!("BadTable {{ offset: {RSC_TABLE_OFFSET}, size: {size} }}")
    );
    for (offset, size) in [
        (0x1002u32, 88u32),
        (0x0ffc, 88),
        (0x1000, 12),
        (0x1f00, 0x200),
    ] {
        let shm = window(&table, offset, size);
        assert!(
            matches!(
                board::ControlBlock::new(&shm).resource_table(),
                Err(board::NotReady::BadTable { .. })
            ),
            "offset {offset:#x} size {size}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    /// Any table in the slot: a corruption of the board's (a few words set to values near the
    /// rules' limits, or random), at any length from the header's to the slot's.
    #[test]
    fn driver_and_crate_agree_on_any_table(
        writes in prop::collection::vec((0usize..TABLE_LEN / 4 + 2, prop_oneof![
            Just(0u32), Just(1), Just(2), Just(3), Just(7), Just(8), Just(16), Just(20),
            Just(24), Just(100), Just(256), Just(512), Just(4096), Just(0x1_0000),
            Just(0x1001_0000), Just(0x1002_0000), Just(u32::MAX), any::<u32>(),
        ]), 0..4),
        len in 16usize..=TABLE_LEN + 8,
    ) {
        let mut table = rsc_table::encode().to_vec();
        table.resize(TABLE_LEN + 8, 0);
        for (word, value) in writes {
            table[4 * word..4 * word + 4].copy_from_slice(&value.to_le_bytes());
        }
        table.truncate(len);
        prop_assert!(len as u64 <= RSC_TABLE_AREA);
        prop_assert_eq!(driver(&table), crate_rules(&table));
    }
}

#[test]
fn an_expected_defect_is_a_table_defect() {
    // The crate's type is the one the emulator reports.
    let defect: TableDefect = Defect::TableVringNum.expected().unwrap();
    assert_eq!(format!("{defect:?}"), "VringNum { vring: 1, num: 100 }");
}
