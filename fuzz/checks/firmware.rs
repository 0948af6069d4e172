// The property the `firmware_check` fuzz target checks, shared with the regression test
// (userspace/qf-firmware/tests/fuzz_regressions.rs) through `include!`: `qf firmware check`
// answers every input without panicking, the same input always gets the same answer, and every
// defect points into the file.

/// The first byte says what the rest is: 0 a whole file, 1 and 2 the `.resource_table` of an
/// ELF32 / ELF64 image (the fixture's layout, so the table rules are reached), 3 a bare table.
pub fn check_firmware(data: &[u8]) {
    use qf_firmware::fixture::{image, Layout};
    use qf_firmware::{check, check_table, report, Options};
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let options = Options::default();
    let bytes = match mode % 4 {
        1 | 2 => {
            let layout = Layout {
                is_64: mode % 4 == 2,
                ..Layout::default()
            };
            image(rest, &layout).expect("the fixture writer takes any table").bytes
        }
        _ => rest.to_vec(),
    };
    let run = || {
        if mode % 4 == 3 {
            check_table(&bytes, &options)
        } else {
            check(&bytes, &options)
        }
    };
    let first = run();
    assert_eq!(first, run(), "the same input got two answers");
    if let Err(rejected) = &first {
        assert!(!rejected.defects.is_empty(), "refused without a defect");
        for defect in &rejected.defects {
            assert!(
                defect.at <= bytes.len() as u64,
                "{defect} points past the {}-byte file",
                bytes.len()
            );
        }
    }
    let text = report::render("fuzz", &first);
    assert!(text.contains("verdict: "));
}
