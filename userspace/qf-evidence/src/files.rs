//! Bounded reads of input files: [`qf_input`], the one reader every crate above it uses.

pub use qf_input::*;
