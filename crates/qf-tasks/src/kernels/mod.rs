//! The task kernels as plain typed functions, request in, response out. The dispatcher
//! ([`crate::serve`]) wraps them with decoding, replay protection, timing and encoding.

mod add;
pub mod crc32;
pub mod fir;
mod probe;

pub use add::add;
pub use crc32::{crc32, crc32_of};
pub use fir::{fir, fir_x1, fir_x512, fir_x64};
pub use probe::abi_probe;
