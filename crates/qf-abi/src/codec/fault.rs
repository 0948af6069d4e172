//! The error type the codec hands to serde: one byte, so that every serialized or deserialized
//! value's `Result` stays as small as the value. (A full [`AbiError`](crate::AbiError) returned through every
//! nested serde call made large payloads several times slower.) The full error is recorded in
//! the serializer or deserializer and read back with their `error()`.

use core::fmt;

/// "Serialization failed; ask the serializer/deserializer for the [`AbiError`](crate::AbiError)."
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fault;

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ABI v1 payload codec failure (details recorded in the codec)")
    }
}

impl core::error::Error for Fault {}

impl serde::ser::Error for Fault {
    fn custom<T: fmt::Display>(_message: T) -> Self {
        // No allocation: the message cannot be kept; `error()` reports an invalid value at the
        // position where the type refused itself.
        Fault
    }
}

impl serde::de::Error for Fault {
    fn custom<T: fmt::Display>(_message: T) -> Self {
        Fault
    }
}
