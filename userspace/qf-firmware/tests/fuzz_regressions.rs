//! Replays every committed input of the `firmware_check` fuzz target (seeds and crash
//! reproducers under `fuzz/regressions/firmware_check/`) through the check the target runs, as
//! an ordinary test on stable Rust.

use std::path::PathBuf;

use qf_firmware::fixture::{image, sample_table, Layout};

include!("../../../fuzz/checks/firmware.rs");

fn directory() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions/firmware_check")
}

/// The seeds: the sample table inside an ELF32 and an ELF64 image, bare, and a whole image.
fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let with_mode = |mode: u8, bytes: &[u8]| [&[mode][..], bytes].concat();
    let whole = image(&sample_table(), &Layout::default()).unwrap().bytes;
    vec![
        ("seed-whole-elf32", with_mode(0, &whole)),
        ("seed-table-in-elf32", with_mode(1, &sample_table())),
        ("seed-table-in-elf64", with_mode(2, &sample_table())),
        ("seed-bare-table", with_mode(3, &sample_table())),
    ]
}

#[test]
fn every_committed_firmware_input_passes_the_fuzz_checks() {
    let mut inputs: Vec<(String, Vec<u8>)> = std::fs::read_dir(directory())
        .unwrap_or_else(|e| panic!("{}: {e}", directory().display()))
        .map(|entry| {
            let path = entry.expect("directory entry").path();
            let bytes = std::fs::read(&path).expect("readable input");
            (path.display().to_string(), bytes)
        })
        .collect();
    inputs.sort();
    assert!(inputs.len() >= seeds().len(), "the seeds are committed");
    for (name, data) in inputs {
        let outcome = std::panic::catch_unwind(|| check_firmware(&data));
        assert!(outcome.is_ok(), "{name} fails the firmware checks");
    }
}

#[test]
fn the_committed_seeds_are_the_fixture_images_of_this_version() {
    for (name, bytes) in seeds() {
        let path = directory().join(name);
        if std::env::var_os("QF_WRITE_FUZZ_SEEDS").is_some() {
            std::fs::write(&path, &bytes).unwrap();
        }
        let committed = std::fs::read(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (QF_WRITE_FUZZ_SEEDS=1 writes them)",
                path.display()
            )
        });
        assert_eq!(
            committed, bytes,
            "{name} is stale (QF_WRITE_FUZZ_SEEDS=1 rewrites it)"
        );
    }
}
