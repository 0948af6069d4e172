//! QFabric wire ABI v1: everything that crosses the Linux–MCU boundary, byte for byte compatible
//! with the QFabric prototype (its golden vectors are this crate's tests).
//!
//! `#![no_std]`, no allocation, never panics on input: the same code runs on the Cortex-M33
//! (Zephyr), in the Linux agent and in the MCU emulator.
//!
//! * [`Header`] / [`decode_frame`] / [`encode_frame`]: the 36-byte big-endian header and whole
//!   frames of at most [`MAX_FRAME_LEN`] (1024) bytes, payloads of at most [`MAX_PAYLOAD_LEN`] (988).
//! * [`codec`]: serde payloads in the fixed-width big-endian encoding ([`encode_payload`],
//!   [`decode_payload`], [`WireSize`]).
//! * [`Status`], [`EffectClass`], [`MessageKind`]: the enumerated header bytes.
//! * [`ReplayWindow`]: per-task epochs and duplicate suppression.
//! * [`chain`]: the control frames of resident chains (install, start, stop, remove, status, list).
//! * [`AbiError`]: every rejection, with its wire [`Status`], byte offset and field.
//!
//! ```
//! use qf_abi::{decode_frame, encode_frame, EffectClass, Header};
//!
//! #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
//! struct AddRequest { a: i32, b: i32 }
//!
//! let mut buffer = [0u8; qf_abi::MAX_FRAME_LEN];
//! let header = Header::request(1, EffectClass::Pure, 42, 7);
//! let len = encode_frame(&header, &AddRequest { a: -1, b: 2 }, &mut buffer).unwrap();
//! assert_eq!(len, 36 + 8);
//! let frame = decode_frame(&buffer[..len]).unwrap();
//! assert_eq!(frame.header, header);
//! assert_eq!(frame.payload_as::<AddRequest>().unwrap(), AddRequest { a: -1, b: 2 });
//! ```
#![no_std]
#![forbid(unsafe_code)]

/// The protocol version this crate speaks.
pub const PROTOCOL_VERSION: u8 = 1;

pub mod chain;
pub mod codec;
mod effect;
mod error;
mod frame;
pub mod header;
mod replay;
mod status;

pub use codec::{decode_payload, decode_payload_seed, encode_payload, encoded_len, WireSize};
pub use effect::EffectClass;
pub use error::{AbiError, Problem};
pub use frame::{decode_frame, encode_frame, encode_frame_raw, Frame};
pub use header::{Header, MessageKind, HEADER_LEN, MAGIC, MAX_FRAME_LEN, MAX_PAYLOAD_LEN};
pub use replay::{ReplayWindow, DEFAULT_REPLAY_WINDOW};
pub use status::Status;
