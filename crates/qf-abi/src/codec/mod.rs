//! Payload codec: serde values <-> QFabric ABI v1 payload bytes.
//!
//! The encoding is fixed-width and big-endian: `i8..i64`/`u8..u64` as two's complement BE,
//! `f32`/`f64` as IEEE 754 BE and finite only, `bool` as exactly `00`/`01`, fixed arrays and
//! tuples element after element with no length prefix, structs field after field in declaration
//! order, newtype structs as their content. Shapes with no fixed size (strings, sequences, maps,
//! options, enums, `char`, 128-bit integers) are refused with [`Problem::UnsupportedShape`].
//!
//! # What is reused from postcard, and why not more
//! postcard's *wire format* cannot be used: it encodes integers as varints and floats little-endian,
//! and its flavor hooks only choose where bytes go, not how values become bytes. (Its
//! `fixint::be` field attributes would fix integers, but only on fields that remember to carry
//! them, and not floats or arrays of integers.) So the serde `Serializer`/`Deserializer` here are
//! our own, and we reuse postcard's *output machinery*: [`WireSerializer`] writes through any
//! `postcard::ser_flavors::Flavor`, which gives us the bounds-checked slice writer
//! (`ser_flavors::Slice`, used by [`encode_payload`]), the byte counter (`ser_flavors::Size`,
//! used by [`encoded_len`]) and any flavor a caller brings (CRC, COBS, heapless `HVec`) for free.
//! The input side is a plain slice cursor because error reports need the byte offset, which
//! postcard's input flavors do not expose.
//!
//! Decoding never panics, never reads past its input, and reports the offset and innermost
//! struct field of the first defect.

pub mod array;
mod de;
mod fault;
mod ser;
mod size;

pub use array::{deserialize as deserialize_array, serialize as serialize_array};
pub use de::WireDeserializer;
pub use fault::Fault;
pub use ser::WireSerializer;
pub use size::WireSize;

use core::marker::PhantomData;

use serde::de::DeserializeSeed;
use serde::{Deserialize, Serialize};

use crate::{AbiError, Problem, Status, MAX_PAYLOAD_LEN};

/// Encodes `value` into the front of `out` and returns the number of bytes written.
///
/// At most [`MAX_PAYLOAD_LEN`] bytes are written: a value whose encoding is longer fails with
/// OVERSIZED (when `out` could have held 988 bytes) — a shorter `out` that fills up first fails
/// with [`Problem::OutputFull`] and status EXECUTION_ERROR. Non-finite floats and unsupported
/// shapes fail with MALFORMED.
pub fn encode_payload<T: Serialize + ?Sized>(value: &T, out: &mut [u8]) -> Result<usize, AbiError> {
    let capacity = out.len().min(MAX_PAYLOAD_LEN);
    // `capacity <= out.len()`; the checked split keeps a panic path out of MCU images.
    let Some((window, _)) = out.split_at_mut_checked(capacity) else {
        return Err(AbiError::new(
            Status::ExecutionError,
            0,
            "payload",
            Problem::OutputFull {
                capacity: out.len(),
            },
        ));
    };
    let mut serializer = WireSerializer::new(postcard::ser_flavors::Slice::new(window));
    if value.serialize(&mut serializer).is_err() {
        let error = serializer.error();
        return Err(match error.problem {
            Problem::OutputFull { .. } if capacity == MAX_PAYLOAD_LEN => AbiError {
                status: Status::Oversized,
                problem: Problem::TooLong {
                    len: error.offset + 1,
                    max: MAX_PAYLOAD_LEN,
                },
                ..error
            },
            Problem::OutputFull { .. } => AbiError {
                problem: Problem::OutputFull { capacity },
                ..error
            },
            _ => error,
        });
    }
    Ok(serializer.written())
}

/// Number of bytes `value` encodes to (no size limit applied), or the error encoding would give.
pub fn encoded_len<T: Serialize + ?Sized>(value: &T) -> Result<usize, AbiError> {
    let mut serializer = WireSerializer::new(postcard::ser_flavors::Size::default());
    value
        .serialize(&mut serializer)
        .map_err(|_| serializer.error())?;
    Ok(serializer.written())
}

/// Decodes a payload that must consist of exactly one `T`.
///
/// Fails with OVERSIZED for more than [`MAX_PAYLOAD_LEN`] bytes (before reading any), MALFORMED
/// for truncation, trailing bytes, bool bytes other than 00/01, non-finite floats and shapes
/// without a fixed-size encoding. Offsets in the error are relative to `bytes`.
pub fn decode_payload<'de, T: Deserialize<'de>>(bytes: &'de [u8]) -> Result<T, AbiError> {
    decode_payload_seed(PhantomData::<T>, bytes)
}

/// [`decode_payload`] driven by a serde `DeserializeSeed`, for callers whose payload type is
/// only known at run time (the `qf abi` CLI walks a parsed declaration file with one).
pub fn decode_payload_seed<'de, S: DeserializeSeed<'de>>(
    seed: S,
    bytes: &'de [u8],
) -> Result<S::Value, AbiError> {
    if bytes.len() > MAX_PAYLOAD_LEN {
        return Err(AbiError::new(
            Status::Oversized,
            0,
            "payload",
            Problem::TooLong {
                len: bytes.len(),
                max: MAX_PAYLOAD_LEN,
            },
        ));
    }
    let mut deserializer = WireDeserializer::new(bytes);
    let value = match seed.deserialize(&mut deserializer) {
        Ok(value) => value,
        Err(Fault) => return Err(deserializer.error()),
    };
    deserializer.finish()?;
    Ok(value)
}
