//! Replays every committed fuzz input (crash reproducers and seeds under `fuzz/regressions/`)
//! through the same checks the fuzz targets run, as an ordinary test on stable Rust.

use std::path::PathBuf;

include!("../../../fuzz/checks/frame.rs");
include!("../../../fuzz/checks/replay.rs");

fn inputs(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/regressions")
        .join(target);
    let mut inputs: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| {
            let path = entry.expect("directory entry").path();
            (
                path.display().to_string(),
                std::fs::read(&path).expect("readable input"),
            )
        })
        .collect();
    inputs.sort();
    inputs
}

#[test]
fn every_committed_frame_input_passes_the_fuzz_checks() {
    let inputs = inputs("frame_decode");
    assert!(
        inputs.len() >= 10,
        "the golden and edge seeds are committed"
    );
    for (name, data) in inputs {
        let outcome = std::panic::catch_unwind(|| check_frame(&data));
        assert!(outcome.is_ok(), "{name} fails the frame checks");
    }
}

#[test]
fn every_committed_replay_input_passes_the_fuzz_checks() {
    let inputs = inputs("replay_window");
    assert!(!inputs.is_empty());
    for (name, data) in inputs {
        let outcome = std::panic::catch_unwind(|| check_replay(&data));
        assert!(outcome.is_ok(), "{name} fails the replay checks");
    }
}
