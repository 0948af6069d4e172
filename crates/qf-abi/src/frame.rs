//! Whole frames: header + payload, with the size and length rules of ABI v1.

use serde::{Deserialize, Serialize};

use crate::codec::{decode_payload, encode_payload};
use crate::header::offset;
use crate::{AbiError, Header, Problem, Status, HEADER_LEN, MAX_FRAME_LEN, MAX_PAYLOAD_LEN};

/// A validated frame borrowing its payload from the received bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame<'a> {
    pub header: Header,
    /// Exactly the declared payload length.
    pub payload: &'a [u8],
}

impl<'a> Frame<'a> {
    /// Decodes the payload as a `T`; error offsets count from the start of the frame.
    pub fn payload_as<T: Deserialize<'a>>(&self) -> Result<T, AbiError> {
        decode_payload(self.payload).map_err(|error| error.shifted(HEADER_LEN))
    }

    /// Length of the whole frame in bytes.
    pub fn len(&self) -> usize {
        HEADER_LEN + self.payload.len()
    }

    /// Never true: a frame always has its 36-byte header.
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// Decodes and validates a received frame without decoding its payload.
///
/// A frame longer than [`MAX_FRAME_LEN`] is OVERSIZED before any byte is read; one shorter than
/// the header is MALFORMED; then [`Header::decode`] applies; finally the declared payload length
/// must equal the bytes received after the header (MALFORMED otherwise).
pub fn decode_frame(bytes: &[u8]) -> Result<Frame<'_>, AbiError> {
    if bytes.len() > MAX_FRAME_LEN {
        return Err(AbiError::new(
            Status::Oversized,
            MAX_FRAME_LEN,
            "frame",
            Problem::TooLong {
                len: bytes.len(),
                max: MAX_FRAME_LEN,
            },
        ));
    }
    let Some((header_bytes, payload)) = bytes.split_first_chunk::<HEADER_LEN>() else {
        return Err(AbiError::new(
            Status::Malformed,
            bytes.len(),
            "header",
            Problem::Truncated {
                needed: HEADER_LEN,
                available: bytes.len(),
            },
        ));
    };
    let (header, declared) = Header::decode(header_bytes)?;
    if declared != payload.len() {
        return Err(AbiError::new(
            Status::Malformed,
            offset::PAYLOAD_LEN,
            "payload_len",
            Problem::LengthMismatch {
                declared,
                actual: payload.len(),
            },
        ));
    }
    Ok(Frame { header, payload })
}

/// Encodes `header` and `payload` (any serde value) into `out`; returns the frame length.
///
/// The payload length field is filled in from the encoding. Fails with OVERSIZED if the payload
/// exceeds [`MAX_PAYLOAD_LEN`], EXECUTION_ERROR ([`Problem::OutputFull`]) if `out` is too short,
/// MALFORMED for values ABI v1 cannot carry. Error offsets count from the start of the frame.
pub fn encode_frame<T: Serialize + ?Sized>(
    header: &Header,
    payload: &T,
    out: &mut [u8],
) -> Result<usize, AbiError> {
    let Some((header_out, payload_out)) = out.split_first_chunk_mut::<HEADER_LEN>() else {
        return Err(output_full(out.len()));
    };
    let payload_len = encode_payload(payload, payload_out).map_err(|e| e.shifted(HEADER_LEN))?;
    header.encode(payload_len, header_out)?;
    Ok(HEADER_LEN + payload_len)
}

/// Encodes `header` followed by already-encoded payload bytes; returns the frame length.
pub fn encode_frame_raw(
    header: &Header,
    payload: &[u8],
    out: &mut [u8],
) -> Result<usize, AbiError> {
    let len = HEADER_LEN + payload.len();
    let capacity = out.len();
    if payload.len() > MAX_PAYLOAD_LEN {
        return Err(AbiError::new(
            Status::Oversized,
            offset::PAYLOAD_LEN,
            "payload_len",
            Problem::TooLong {
                len: payload.len(),
                max: MAX_PAYLOAD_LEN,
            },
        ));
    }
    // Checked accessors only (no slicing that could panic): this runs on the MCU.
    let Some((header_out, rest)) = out.split_first_chunk_mut::<HEADER_LEN>() else {
        return Err(output_full(capacity));
    };
    let Some(payload_out) = rest.get_mut(..payload.len()) else {
        return Err(output_full(capacity));
    };
    header.encode(payload.len(), header_out)?;
    for (slot, &byte) in payload_out.iter_mut().zip(payload) {
        *slot = byte;
    }
    Ok(len)
}

fn output_full(capacity: usize) -> AbiError {
    AbiError::new(
        Status::ExecutionError,
        0,
        "frame",
        Problem::OutputFull { capacity },
    )
}
