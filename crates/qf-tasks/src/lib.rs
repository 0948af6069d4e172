//! QFabric's five workloads — `add`, `crc32`, `fir_x1`, `fir_x64`, `fir_x512` — plus the
//! reference's `abi_probe`, and the dispatcher that serves them from ABI v1 frames.
//!
//! `#![no_std]`, no allocation: the Linux executor, the MCU emulator and the Zephyr executor
//! (Cortex-M33) all link this crate, so a task computes bit-identical results in both domains.
//!
//! | task | id | effect | request → response |
//! | --- | ---: | --- | --- |
//! | `add` | 1 | pure | [`AddRequest`] `{a: i32, b: i32}` → [`AddResponse`] `{value: i32}` (wrapping) |
//! | `abi_probe` | 2 | pure | [`ProbeRequest`] → [`ProbeResponse`] |
//! | `crc32` | 3 | pure | [`Crc32Request`] `{block: [u8; 64]}` → [`Crc32Response`] `{crc: u32}` |
//! | `fir_x1` | 4 | pure | [`FirRequest`] `{samples: [i16; 32]}` → [`FirResponse`] `{samples: [i16; 32]}` |
//! | `fir_x64` | 5 | pure | same, 64 passes |
//! | `fir_x512` | 6 | pure | same, 512 passes |
//!
//! Ids 1 and 2 are fixed by the QFabric reference; 3–6 are this project's, in the paper's order.
//!
//! * [`serve`]: frame in, frame out, with replay protection ([`Replay`]) and the kernel's compute
//!   time measured on a caller-supplied [`Clock`] (returned in [`Served::compute_ns`], not on the
//!   wire: ABI v1 payloads such as `AddResponse` have no room for it).
//! * [`kernels`]: the typed kernels, for callers that do not need frames.
//! * [`Task`]: the declaration table (id, name, effect, type names, encoded sizes).
#![no_std]
#![forbid(unsafe_code)]

mod clock;
mod declared;
pub mod kernels;
mod serve;

pub use clock::{timed, Clock};
pub use declared::*;
pub use serve::{serve, Replay, Served};
