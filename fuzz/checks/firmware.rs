// The property the `firmware_check` fuzz target checks, shared with the regression test
// (userspace/qf-firmware/tests/fuzz_regressions.rs) through `include!`: `qf firmware check`
// answers every input without panicking, the same input always gets the same answer, every
// defect points into the file, and Linux's verdict refuses no more than --strict does.

/// The first byte says what the rest is: 0 a whole file, 1 and 2 the `.resource_table` of an
/// ELF32 / ELF64 image (the fixture's layout, so the table rules are reached), 3 a bare table.
pub fn check_firmware(data: &[u8]) {
    use qf_firmware::fixture::{image, Layout};
    use qf_firmware::{check, check_table, report, Options};
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
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
    let run = |options: &Options| {
        if mode % 4 == 3 {
            check_table(&bytes, options)
        } else {
            check(&bytes, options)
        }
    };
    let strict = Options::default();
    let linux = Options::linux();
    let mut refused = Vec::new();
    for options in [&strict, &linux] {
        let first = run(options);
        assert_eq!(first, run(options), "the same input got two answers");
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
        refused.push(first.is_err());
    }
    assert!(refused[0] || !refused[1], "Linux's verdict refused what --strict accepted");
}
