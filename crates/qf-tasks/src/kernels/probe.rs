//! `abi_probe`: the reference's type-coverage task (u64, f32, f64, a fixed i16 array, bool).
//!
//! It answers whether the probe was `enabled` and the CRC-32 of the request's own ABI encoding,
//! so a caller can verify that both domains saw the same bytes. (The reference golden vector's
//! response checksum 0x89abcdef is a fixture chosen by the prototype, not an output of this
//! function; the golden vectors test encoding, not this kernel.)

use qf_abi::WireSize;

use crate::declared::{ProbeRequest, ProbeResponse};
use crate::kernels::crc32::crc32_of;

/// Echo `enabled` and checksum the request's encoding.
///
/// A request that has no encoding (a NaN or infinite float: possible only when called directly,
/// never through a frame, whose decoder rejects them) is answered `accepted: false, checksum: 0`.
pub fn abi_probe(request: &ProbeRequest) -> ProbeResponse {
    let mut encoded = [0u8; ProbeRequest::WIRE_SIZE];
    let written = qf_abi::encode_payload(request, &mut encoded).ok();
    match written.and_then(|len| encoded.get(..len)) {
        Some(bytes) => ProbeResponse {
            accepted: request.enabled,
            checksum: crc32_of(bytes),
        },
        None => ProbeResponse {
            accepted: false,
            checksum: 0,
        },
    }
}
