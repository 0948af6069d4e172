//! Fuzz target: `qf firmware check` on whole files, on tables inside an ELF32/ELF64 image, and
//! on bare tables.
#![no_main]

include!("../checks/firmware.rs");

libfuzzer_sys::fuzz_target!(|data: &[u8]| check_firmware(data));
