//! Fuzz target: the replay window against a reference model.
#![no_main]

include!("../checks/replay.rs");

libfuzzer_sys::fuzz_target!(|data: &[u8]| check_replay(data));
