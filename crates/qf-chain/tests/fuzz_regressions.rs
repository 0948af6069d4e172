//! Replays every committed `chain_control` fuzz input (crash reproducers and seeds under
//! `fuzz/regressions/chain_control/`) through the checks the fuzz target runs, on stable Rust.

use std::path::PathBuf;

include!("../../../fuzz/checks/chain.rs");

#[test]
fn every_committed_chain_control_input_passes_the_fuzz_checks() {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions/chain_control");
    let mut inputs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .collect();
    inputs.sort();
    assert!(
        inputs.len() >= 16,
        "the golden and edge seeds are committed"
    );
    for path in inputs {
        let data = std::fs::read(&path).expect("readable input");
        let outcome = std::panic::catch_unwind(|| check_chain_control(&data));
        assert!(outcome.is_ok(), "{} fails the chain checks", path.display());
    }
}
