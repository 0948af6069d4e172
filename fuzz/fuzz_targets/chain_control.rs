//! Fuzz target: resident-chain control frames (and any other bytes) served by an MCU that holds
//! chains: never a panic, always a response, a refusal changes nothing.
#![no_main]

include!("../checks/chain.rs");

libfuzzer_sys::fuzz_target!(|data: &[u8]| check_chain_control(data));
