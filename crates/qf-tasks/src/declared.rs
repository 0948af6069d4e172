//! The task declarations of this crate as Rust types: the request/response structs, their
//! encoded sizes, and the [`Task`] table (ids, names, effect classes, type names, sizes).
//!
//! Generated at build time by qf-decl from `qtasks.toml` plus the built-in `add` and
//! `abi_probe` declarations; see `build.rs`. `qf abi generate crates/qf-tasks/qtasks.toml --out
//! DIR` writes the same file (and the C header) for inspection.

include!(concat!(env!("OUT_DIR"), "/declared.rs"));
