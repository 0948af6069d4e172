//! Compile-time encoded sizes. Every ABI v1 type has exactly one encoded length; knowing it as a
//! constant lets declarations be checked against the 988-byte budget before anything runs, and
//! lets receivers reject a wrong-length payload before decoding it.

/// A type whose ABI v1 encoding always has exactly `WIRE_SIZE` bytes.
///
/// Implemented here for scalars and arrays; generated declaration types implement it as the sum
/// of their fields.
pub trait WireSize {
    /// Encoded length in bytes.
    const WIRE_SIZE: usize;
}

macro_rules! scalar_sizes {
    ($($ty:ty),*) => { $(impl WireSize for $ty { const WIRE_SIZE: usize = core::mem::size_of::<$ty>(); })* };
}

scalar_sizes!(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);

impl WireSize for bool {
    const WIRE_SIZE: usize = 1;
}

impl<T: WireSize, const N: usize> WireSize for [T; N] {
    const WIRE_SIZE: usize = T::WIRE_SIZE * N;
}
