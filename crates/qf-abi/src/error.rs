//! The one error type of the ABI: which status a defect maps to, where it is (byte offset in the
//! frame or payload) and which field, so a tool can print exactly what was wrong.

use core::fmt;

use crate::Status;

/// What exactly was wrong. Carries numbers, never strings, so it needs no allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    /// The input ended before `needed` bytes could be read; `available` were left.
    Truncated { needed: usize, available: usize },
    /// A frame or payload is longer than the ABI allows.
    TooLong { len: usize, max: usize },
    /// The first four bytes are not `QFAB`.
    BadMagic { found: [u8; 4] },
    /// A protocol version this implementation does not speak.
    UnsupportedVersion { found: u8 },
    /// An enumerated byte (message type, effect class, status) outside its defined range.
    UnknownCode { found: u8 },
    /// A request carries a non-zero status.
    StatusOnRequest { found: u8 },
    /// The declared payload length differs from the bytes that follow the header.
    LengthMismatch { declared: usize, actual: usize },
    /// Reserved flags are not zero.
    NonZeroFlags { found: u16 },
    /// A bool byte other than 00 or 01.
    BadBool { found: u8 },
    /// A NaN or infinite float.
    NonFiniteFloat,
    /// Bytes left over after the payload value was decoded.
    TrailingBytes { count: usize },
    /// The output buffer is too small for the encoded frame.
    OutputFull { capacity: usize },
    /// The value uses a serde shape the ABI has no encoding for (strings, sequences, maps,
    /// options, enums, `char`, 128-bit integers): rejected, never approximated.
    UnsupportedShape { shape: &'static str },
    /// A value the type rejected while being built (a serde `custom` error).
    InvalidValue,
    /// The frame is a response where a request was expected, or the reverse.
    WrongKind,
    /// The frame's effect class differs from the task's declaration.
    EffectMismatch { declared: u8, found: u8 },
    /// No task with this id is declared on the receiver.
    NoSuchTask { task_id: u32 },
    /// The epoch is older than the receiver's current epoch for this task.
    OlderEpoch { current: u32, found: u32 },
    /// The invocation id was already accepted in the current epoch.
    RepeatedInvocation { invocation_id: u64 },
    /// A number outside the range the receiver accepts (inclusive bounds).
    OutOfRange { value: u64, min: u64, max: u64 },
    /// Admitting a reservation of `requested_ppm` on top of `others_ppm` would exceed
    /// `bound_ppm` (parts per million of one CPU).
    OverBound {
        requested_ppm: u32,
        others_ppm: u32,
        bound_ppm: u32,
    },
    /// Every one of `capacity` slots is taken.
    TableFull { capacity: usize },
    /// The id is already in use.
    IdInUse { id: u32 },
    /// Nothing with this id exists.
    NotInstalled { id: u32 },
}

/// A rejected frame or payload: the wire status plus where and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbiError {
    /// The status a receiver reports for this defect.
    pub status: Status,
    /// Byte offset of the defect, counted from the start of the buffer being decoded (the frame
    /// for frame functions, which add the header length to payload offsets).
    pub offset: usize,
    /// The header field or innermost payload struct field at fault (e.g. `"magic"`,
    /// `"payload_len"`, `"enabled"`), or `"payload"` when no field name is known.
    pub field: &'static str,
    /// What was wrong.
    pub problem: Problem,
}

impl AbiError {
    /// Builds an error (crate-internal shorthand).
    pub(crate) const fn new(
        status: Status,
        offset: usize,
        field: &'static str,
        problem: Problem,
    ) -> AbiError {
        AbiError {
            status,
            offset,
            field,
            problem,
        }
    }

    /// The same error with its offset moved by `by` bytes (payload offset -> frame offset).
    pub const fn shifted(self, by: usize) -> AbiError {
        AbiError {
            offset: self.offset + by,
            ..self
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Problem::Truncated { needed, available } => {
                write!(
                    f,
                    "input ends early: needed {needed} bytes, {available} left"
                )
            }
            Problem::TooLong { len, max } => write!(f, "{len} bytes exceed the maximum of {max}"),
            Problem::BadMagic { found } => write!(
                f,
                "magic is {:02x}{:02x}{:02x}{:02x}, expected 51464142 (\"QFAB\")",
                found[0], found[1], found[2], found[3]
            ),
            Problem::UnsupportedVersion { found } => {
                write!(
                    f,
                    "protocol version {found}, this side speaks {}",
                    crate::PROTOCOL_VERSION
                )
            }
            Problem::UnknownCode { found } => write!(f, "undefined code {found}"),
            Problem::StatusOnRequest { found } => {
                write!(f, "a request must carry status 0, found {found}")
            }
            Problem::LengthMismatch { declared, actual } => {
                write!(
                    f,
                    "declared payload length {declared}, but {actual} bytes follow the header"
                )
            }
            Problem::NonZeroFlags { found } => {
                write!(f, "reserved flags are {found:#06x}, must be 0")
            }
            Problem::BadBool { found } => write!(f, "bool byte {found:#04x} is neither 00 nor 01"),
            Problem::NonFiniteFloat => f.write_str("NaN or infinite float"),
            Problem::TrailingBytes { count } => write!(f, "{count} bytes left after the value"),
            Problem::OutputFull { capacity } => {
                write!(f, "output buffer of {capacity} bytes is too small")
            }
            Problem::UnsupportedShape { shape } => {
                write!(f, "{shape} has no fixed-size ABI v1 encoding")
            }
            Problem::InvalidValue => f.write_str("the value was rejected by its type"),
            Problem::WrongKind => f.write_str("unexpected message type for this direction"),
            Problem::EffectMismatch { declared, found } => {
                write!(
                    f,
                    "effect class {found} differs from the declared {declared}"
                )
            }
            Problem::NoSuchTask { task_id } => write!(f, "no task with id {task_id}"),
            Problem::OlderEpoch { current, found } => {
                write!(f, "epoch {found} is older than the current epoch {current}")
            }
            Problem::RepeatedInvocation { invocation_id } => write!(
                f,
                "invocation id {invocation_id} was already accepted in the current epoch"
            ),
            Problem::OutOfRange { value, min, max } => {
                write!(f, "{value} is outside {min}..={max}")
            }
            Problem::OverBound {
                requested_ppm,
                others_ppm,
                bound_ppm,
            } => write!(
                f,
                "{requested_ppm} ppm on top of the {others_ppm} ppm already reserved exceeds the bound of {bound_ppm} ppm"
            ),
            Problem::TableFull { capacity } => write!(f, "all {capacity} slots are taken"),
            Problem::IdInUse { id } => write!(f, "id {id} is already installed"),
            Problem::NotInstalled { id } => write!(f, "no chain with id {id} is installed"),
        }
    }
}

impl fmt::Display for AbiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at offset {} ({}): {}",
            self.status, self.offset, self.field, self.problem
        )
    }
}

impl core::error::Error for AbiError {}
