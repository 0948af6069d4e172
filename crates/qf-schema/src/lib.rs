//! QTask declarations: parsing, validation against the ABI v1 rules, and the Rust and C
//! generators; no I/O.
//!
//! A declaration file (`qtasks.toml`, or the reference's `declarations.json`) names each task
//! (id, effect class, request and response types built from fixed-size scalars, fixed arrays and
//! structs). This crate
//! * parses and validates declaration text against the ABI v1 rules ([`load_str`], [`Rule`]),
//!   reporting every broken rule with the task, type and field it concerns;
//! * generates the Rust types and serde (de)serialisers ([`rust::generate`]) and a C header with
//!   encoders/decoders for Zephyr C applications ([`c::generate`]).
//!
//! It runs on the host: `crates/qf-tasks`'s build script generates its wire types with it, and
//! `userspace/qf-decl` (files, the run-time JSON codec and `qf abi`) builds on it.
//!
//! The two tasks of the reference golden vectors, `add` (id 1) and `abi_probe` (id 2), are
//! built in: every schema has them.

pub mod c;
mod error;
pub mod rust;
mod schema;
mod source;
mod types;
mod validate;

pub use error::{DeclError, DeclErrors, Rule};
pub use schema::{FieldDef, Schema, TaskDef, TypeBody, TypeDef};
pub use source::{SourceField, SourceFile, SourceTask, SourceType};
pub use types::{parse_type, Scalar, TypeExpr};
pub use validate::variant_name;

/// The built-in declarations (`add`, `abi_probe`), as TOML.
pub const BUILTIN_DECLARATIONS: &str = include_str!("builtin.toml");

/// How built-in declarations are named in messages.
pub const BUILTIN_ORIGIN: &str = "built-in";

fn builtin_source() -> SourceFile {
    // The built-in text is part of this crate and covered by tests; failing to parse it is a
    // defect of the crate, reported as such rather than hidden.
    SourceFile::parse(BUILTIN_DECLARATIONS, BUILTIN_ORIGIN, false)
        .unwrap_or_else(|error| panic!("the built-in declarations are invalid: {error}"))
}

/// The schema of the built-ins alone.
pub fn builtin_schema() -> Schema {
    let empty = SourceFile {
        protocol_version: None,
        types: Default::default(),
        tasks: Vec::new(),
    };
    validate::validate(&builtin_source(), &empty, BUILTIN_ORIGIN)
        .unwrap_or_else(|errors| panic!("the built-in declarations are invalid: {errors}"))
}

/// Parses and validates declaration text (TOML, or JSON when `json`), built-ins included.
pub fn load_str(text: &str, origin: &str, json: bool) -> Result<Schema, DeclErrors> {
    let file = SourceFile::parse(text, origin, json)?;
    load_source(&file, origin)
}

/// Validates a parsed declaration file named `origin` in messages, built-ins included.
pub fn load_source(file: &SourceFile, origin: &str) -> Result<Schema, DeclErrors> {
    validate::validate(&builtin_source(), file, origin)
}
