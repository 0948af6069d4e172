//! The 36-byte big-endian frame header of QFabric ABI v1 and its exact byte layout.
//!
//! | offset | size | field |
//! | ---: | ---: | --- |
//! | 0 | 4 | magic `QFAB` |
//! | 4 | 1 | protocol version (1) |
//! | 5 | 1 | message type (1 request, 2 response) |
//! | 6 | 1 | effect class |
//! | 7 | 1 | status (0 on requests) |
//! | 8 | 4 | task id |
//! | 12 | 8 | invocation id |
//! | 20 | 4 | epoch |
//! | 24 | 4 | contract id (0 = unspecified) |
//! | 28 | 4 | relative deadline, µs (0 = unspecified) |
//! | 32 | 2 | payload length |
//! | 34 | 2 | flags (reserved, 0) |

use crate::{AbiError, EffectClass, Problem, Status};

/// ASCII `QFAB`.
pub const MAGIC: [u8; 4] = *b"QFAB";
/// The protocol version this crate speaks (defined at the crate root, which [`crate::error`]
/// names too).
pub use crate::PROTOCOL_VERSION;
/// Bytes in a header.
pub const HEADER_LEN: usize = 36;
/// Largest whole frame.
pub const MAX_FRAME_LEN: usize = 1024;
/// Largest payload (`MAX_FRAME_LEN - HEADER_LEN`).
pub const MAX_PAYLOAD_LEN: usize = MAX_FRAME_LEN - HEADER_LEN;

/// Byte offsets of the header fields, for error reports and tools.
pub mod offset {
    pub const MAGIC: usize = 0;
    pub const VERSION: usize = 4;
    pub const KIND: usize = 5;
    pub const EFFECT: usize = 6;
    pub const STATUS: usize = 7;
    pub const TASK_ID: usize = 8;
    pub const INVOCATION_ID: usize = 12;
    pub const EPOCH: usize = 20;
    pub const CONTRACT_ID: usize = 24;
    pub const DEADLINE_US: usize = 28;
    pub const PAYLOAD_LEN: usize = 32;
    pub const FLAGS: usize = 34;
}

/// Direction of a frame (header byte 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum MessageKind {
    Request = 1,
    Response = 2,
}

impl MessageKind {
    /// The wire byte.
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// Parses a wire byte.
    pub const fn from_code(code: u8) -> Option<MessageKind> {
        match code {
            1 => Some(MessageKind::Request),
            2 => Some(MessageKind::Response),
            _ => None,
        }
    }

    /// `request` or `response`.
    pub const fn name(self) -> &'static str {
        match self {
            MessageKind::Request => "request",
            MessageKind::Response => "response",
        }
    }

    /// Parses `request` / `response` (case-insensitive).
    pub fn from_name(name: &str) -> Option<MessageKind> {
        [MessageKind::Request, MessageKind::Response]
            .into_iter()
            .find(|kind| kind.name().eq_ignore_ascii_case(name))
    }
}

/// A decoded header. Magic, version and flags are implied (they have exactly one valid value);
/// the payload length belongs to the frame, see [`crate::Frame`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Header {
    pub kind: MessageKind,
    pub effect: EffectClass,
    /// Always [`Status::Ok`] on requests.
    pub status: Status,
    pub task_id: u32,
    pub invocation_id: u64,
    pub epoch: u32,
    /// 0 = unspecified.
    pub contract_id: u32,
    /// Relative deadline in microseconds, 0 = unspecified.
    pub deadline_us: u32,
}

impl Header {
    /// A request header with status OK and no contract or deadline.
    pub const fn request(
        task_id: u32,
        effect: EffectClass,
        invocation_id: u64,
        epoch: u32,
    ) -> Header {
        Header {
            kind: MessageKind::Request,
            effect,
            status: Status::Ok,
            task_id,
            invocation_id,
            epoch,
            contract_id: 0,
            deadline_us: 0,
        }
    }

    /// The response header answering this request with `status`: same task, invocation,
    /// epoch, contract and deadline, so the caller can match it.
    pub const fn response_to(&self, status: Status) -> Header {
        Header {
            kind: MessageKind::Response,
            status,
            ..*self
        }
    }

    /// The identifying fields of a possibly invalid frame, turned into a response header with
    /// `status`, so a rejection can still be addressed to its sender.
    ///
    /// Reads only the header bytes that are present (never the payload): task id, invocation id,
    /// epoch, contract and deadline when all 36 are there, zero otherwise; the effect class when
    /// byte 6 is a defined class, STATEFUL otherwise.
    pub fn salvage(bytes: &[u8], status: Status) -> Header {
        let effect = bytes
            .get(offset::EFFECT)
            .and_then(|&code| EffectClass::from_code(code));
        let mut header = Header {
            kind: MessageKind::Response,
            effect: effect.unwrap_or_default(),
            status,
            task_id: 0,
            invocation_id: 0,
            epoch: 0,
            contract_id: 0,
            deadline_us: 0,
        };
        if let Some(fields) = bytes.first_chunk::<HEADER_LEN>() {
            let raw = RawFields::read(fields);
            header.task_id = raw.task_id;
            header.invocation_id = raw.invocation_id;
            header.epoch = raw.epoch;
            header.contract_id = raw.contract_id;
            header.deadline_us = raw.deadline_us;
        }
        header
    }

    /// Writes the 36 header bytes for a payload of `payload_len` bytes.
    ///
    /// Fails with OVERSIZED if `payload_len` exceeds [`MAX_PAYLOAD_LEN`], and with MALFORMED
    /// if a request carries a non-OK status (the same rules [`Header::decode`] enforces, so
    /// every header this writes decodes again).
    pub fn encode(&self, payload_len: usize, out: &mut [u8; HEADER_LEN]) -> Result<(), AbiError> {
        check_payload_len(payload_len)?;
        check_status_for_kind(self.kind, self.status)?;
        // One array expression with constant indices: no runtime bounds checks, so no panic
        // path is compiled into the MCU image.
        let m = MAGIC;
        let t = self.task_id.to_be_bytes();
        let i = self.invocation_id.to_be_bytes();
        let e = self.epoch.to_be_bytes();
        let c = self.contract_id.to_be_bytes();
        let d = self.deadline_us.to_be_bytes();
        // Cannot truncate: checked against MAX_PAYLOAD_LEN (988) above.
        let p = (payload_len as u16).to_be_bytes();
        let (kind, effect, status) = (self.kind.code(), self.effect.code(), self.status.code());
        #[rustfmt::skip]
        let bytes: [u8; HEADER_LEN] = [
            m[0], m[1], m[2], m[3], PROTOCOL_VERSION, kind, effect, status,
            t[0], t[1], t[2], t[3],                         // task id
            i[0], i[1], i[2], i[3], i[4], i[5], i[6], i[7], // invocation id
            e[0], e[1], e[2], e[3],                         // epoch
            c[0], c[1], c[2], c[3],                         // contract id
            d[0], d[1], d[2], d[3],                         // deadline
            p[0], p[1], 0, 0,                               // payload length, flags
        ];
        *out = bytes;
        Ok(())
    }

    /// Decodes and validates a header, returning it with the declared payload length.
    ///
    /// Checks, in order: magic, version (VERSION_MISMATCH), message type, effect class, status
    /// (defined code, 0 on requests), declared payload length ≤ 988 (OVERSIZED), flags = 0.
    /// Everything else is MALFORMED. Whether the payload length matches the received bytes is
    /// the frame's business ([`crate::decode_frame`]).
    pub fn decode(bytes: &[u8; HEADER_LEN]) -> Result<(Header, usize), AbiError> {
        let magic = [bytes[0], bytes[1], bytes[2], bytes[3]];
        if magic != MAGIC {
            return Err(AbiError::new(
                Status::Malformed,
                offset::MAGIC,
                "magic",
                Problem::BadMagic { found: magic },
            ));
        }
        let version = bytes[offset::VERSION];
        if version != PROTOCOL_VERSION {
            return Err(AbiError::new(
                Status::VersionMismatch,
                offset::VERSION,
                "version",
                Problem::UnsupportedVersion { found: version },
            ));
        }
        let kind = MessageKind::from_code(bytes[offset::KIND]).ok_or_else(|| {
            AbiError::new(
                Status::Malformed,
                offset::KIND,
                "kind",
                Problem::UnknownCode {
                    found: bytes[offset::KIND],
                },
            )
        })?;
        let effect = EffectClass::from_code(bytes[offset::EFFECT]).ok_or_else(|| {
            AbiError::new(
                Status::Malformed,
                offset::EFFECT,
                "effect",
                Problem::UnknownCode {
                    found: bytes[offset::EFFECT],
                },
            )
        })?;
        let status_code = bytes[offset::STATUS];
        let status = Status::from_code(status_code).ok_or_else(|| {
            AbiError::new(
                Status::Malformed,
                offset::STATUS,
                "status",
                Problem::UnknownCode { found: status_code },
            )
        })?;
        check_status_for_kind(kind, status)?;
        let raw = RawFields::read(bytes);
        let payload_len = usize::from(raw.payload_len);
        check_payload_len(payload_len)?;
        let flags = raw.flags;
        if flags != 0 {
            return Err(AbiError::new(
                Status::Malformed,
                offset::FLAGS,
                "flags",
                Problem::NonZeroFlags { found: flags },
            ));
        }
        let header = Header {
            kind,
            effect,
            status,
            task_id: raw.task_id,
            invocation_id: raw.invocation_id,
            epoch: raw.epoch,
            contract_id: raw.contract_id,
            deadline_us: raw.deadline_us,
        };
        Ok((header, payload_len))
    }
}

/// The multi-byte header fields as numbers, unvalidated.
struct RawFields {
    task_id: u32,
    invocation_id: u64,
    epoch: u32,
    contract_id: u32,
    deadline_us: u32,
    payload_len: u16,
    flags: u16,
}

impl RawFields {
    /// Constant indices into a fixed array: checked at compile time, so neither a runtime bounds
    /// check nor a panic path is compiled in (see the offsets in the module table).
    fn read(b: &[u8; HEADER_LEN]) -> RawFields {
        RawFields {
            task_id: u32::from_be_bytes([b[8], b[9], b[10], b[11]]),
            invocation_id: u64::from_be_bytes([
                b[12], b[13], b[14], b[15], b[16], b[17], b[18], b[19],
            ]),
            epoch: u32::from_be_bytes([b[20], b[21], b[22], b[23]]),
            contract_id: u32::from_be_bytes([b[24], b[25], b[26], b[27]]),
            deadline_us: u32::from_be_bytes([b[28], b[29], b[30], b[31]]),
            payload_len: u16::from_be_bytes([b[32], b[33]]),
            flags: u16::from_be_bytes([b[34], b[35]]),
        }
    }
}

/// The payload-length rule, shared by encode and decode: at most [`MAX_PAYLOAD_LEN`] bytes.
fn check_payload_len(payload_len: usize) -> Result<(), AbiError> {
    if payload_len > MAX_PAYLOAD_LEN {
        return Err(AbiError::new(
            Status::Oversized,
            offset::PAYLOAD_LEN,
            "payload_len",
            Problem::TooLong {
                len: payload_len,
                max: MAX_PAYLOAD_LEN,
            },
        ));
    }
    Ok(())
}

/// The status rule, shared by encode and decode: a request always carries OK.
fn check_status_for_kind(kind: MessageKind, status: Status) -> Result<(), AbiError> {
    if kind == MessageKind::Request && status != Status::Ok {
        return Err(AbiError::new(
            Status::Malformed,
            offset::STATUS,
            "status",
            Problem::StatusOnRequest {
                found: status.code(),
            },
        ));
    }
    Ok(())
}
