//! Bounded reads of input files: [`qf_decl::files`], the one reader every crate above it uses.

pub use qf_decl::files::*;
