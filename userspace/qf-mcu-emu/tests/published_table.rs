//! The resource table the emulator publishes passes `qf firmware check`'s table rules: Linux's
//! (`find_table`, `rproc_handle_vdev`, `rproc_parse_vring`) and qfabric's rpmsg rules.

use qf_firmware::table::Resource;
use qf_firmware::{check_table, Options};
use qf_mcu_emu::rsc_table::encode;

#[test]
fn the_published_table_passes_the_firmware_table_checks() {
    let report = check_table(&encode(), &Options::default())
        .unwrap_or_else(|rejected| panic!("refused: {rejected:#?}"));
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    let table = report.table.expect("a table");
    assert_eq!(table.entries.len(), 1);
    let Resource::Vdev {
        vdev,
        vrings,
        complete,
    } = &table.entries[0].resource
    else {
        panic!("entry 0 is {:?}", table.entries[0].resource);
    };
    assert!(*complete);
    assert_eq!((vdev.id, vdev.dfeatures), (7, 1));
    assert_eq!(vrings.len(), 2);
    assert!(vrings
        .iter()
        .all(|vring| vring.num == 256 && vring.align == 4096));
}

#[test]
fn a_broken_published_table_is_refused_by_the_firmware_check() {
    // The check above must be able to fail: the same table without the name-service feature.
    let mut table = encode();
    table[qf_mcu_emu::rsc_table::VDEV_ENTRY_OFFSET + 4 + 8] = 0;
    let rejected = check_table(&table, &Options::default()).expect_err("refused");
    assert_eq!(rejected.defects.len(), 1);
    assert_eq!(rejected.defects[0].kind.name(), "missing-ns-feature");
}
