//! Fuzz target: frame decoding, payload decoding of every declared type and the dispatcher.
#![no_main]

include!("../checks/frame.rs");

libfuzzer_sys::fuzz_target!(|data: &[u8]| check_frame(data));
