//! `crc32`: bitwise CRC-32 (IEEE 802.3: reflected polynomial 0xEDB88320, initial value and final
//! XOR 0xFFFFFFFF) over a 64-byte block.
//!
//! Bit by bit on purpose: the paper measures this loop as a compute workload, so no table
//! (which would also cost 1 KiB of MCU flash).

use crate::declared::{Crc32Request, Crc32Response};

/// The reflected IEEE 802.3 polynomial.
const POLYNOMIAL: u32 = 0xEDB8_8320;

/// CRC-32 of `bytes`.
pub fn crc32_of(bytes: &[u8]) -> u32 {
    let mut crc = u32::MAX;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            // All ones when the low bit is set, all zeros otherwise: a branch-free conditional XOR.
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (POLYNOMIAL & mask);
        }
    }
    !crc
}

/// The `crc32` task: CRC-32 of the request's 64-byte block.
pub fn crc32(request: &Crc32Request) -> Crc32Response {
    Crc32Response {
        crc: crc32_of(&request.block),
    }
}
