//! QTask declarations, the single source of every task's wire types in both domains.
//!
//! The declarations themselves (parsing and validating text, the Rust and C generators) are
//! `crates/qf-schema`, re-exported here whole. This crate adds what reads files and runs:
//! * reads a declaration file and validates it ([`load`]; a regular file of at most
//!   [`MAX_DECLARATION_BYTES`]);
//! * encodes and decodes payloads of declared types from/to JSON at run time ([`dynamic`]);
//! * implements the `qf abi decode|encode|check|generate` subcommands ([`cli`]), which also
//!   read the resident-chain control frames of `qf_abi::chain` ([`chain`]).

pub use qf_schema::*;

pub mod chain;
pub mod cli;
pub mod dynamic;

/// The largest declaration file read: 1 MiB. `crates/qf-tasks/qtasks.toml` declares every
/// task in under 10 KiB, so a bigger file is not a declaration file.
pub const MAX_DECLARATION_BYTES: u64 = 1 << 20;

/// Reads and parses a declaration file, a regular file of at most [`MAX_DECLARATION_BYTES`] (a
/// FIFO or device is refused without waiting on it); `.json` files are JSON, everything else
/// TOML.
pub fn read_source(path: &std::path::Path) -> Result<SourceFile, DeclErrors> {
    let origin = path.display().to_string();
    let text = qf_input::read_regular_text(path, MAX_DECLARATION_BYTES).map_err(|e| {
        DeclErrors(vec![DeclError::syntax(
            &origin,
            format!("cannot read: {e}"),
        )])
    })?;
    let json = path
        .extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("json"));
    SourceFile::parse(&text, &origin, json)
}

/// Reads, parses and validates a declaration file (`.json` = JSON, else TOML), built-ins
/// included.
pub fn load(path: &std::path::Path) -> Result<Schema, DeclErrors> {
    let file = read_source(path)?;
    load_source(&file, &path.display().to_string())
}
