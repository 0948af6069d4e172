//! The declaration file as written: a TOML file (`qtasks.toml`) or the reference's JSON
//! (`declarations.json`), same shape. Nothing is checked here beyond syntax; see `validate`.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::{DeclError, DeclErrors};

/// A whole declaration file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceFile {
    /// Wire protocol version the declarations target; must be 1 when given.
    pub protocol_version: Option<i64>,
    /// Named types, by name.
    #[serde(default)]
    pub types: BTreeMap<String, SourceType>,
    /// Tasks, in declaration order.
    #[serde(default)]
    pub tasks: Vec<SourceTask>,
}

/// A named type: `kind = "struct"` with `fields`, or `kind = "array"` with `element` and
/// `length`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceType {
    pub kind: String,
    pub fields: Option<Vec<SourceField>>,
    pub element: Option<String>,
    pub length: Option<u64>,
}

/// One struct field; `type` is a scalar (`i8`..`u64`, `f32`, `f64`, `bool`), a named type, or an
/// inline fixed array `[T; N]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceField {
    pub name: String,
    #[serde(rename = "type")]
    pub ty: String,
}

/// One task.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceTask {
    pub name: String,
    pub task_id: u32,
    /// `pure`, `idempotent`, `stateful` (the default) or `actuating`.
    pub effect: Option<String>,
    pub request: String,
    pub response: String,
}

impl SourceFile {
    /// Parses declaration text; `json` selects the reference's JSON spelling instead of TOML.
    pub fn parse(text: &str, origin: &str, json: bool) -> Result<SourceFile, DeclErrors> {
        let parsed = if json {
            serde_json::from_str(text).map_err(|e| e.to_string())
        } else {
            toml::from_str(text).map_err(|e| e.to_string())
        };
        parsed.map_err(|message| DeclErrors(vec![DeclError::syntax(origin, message)]))
    }
}
