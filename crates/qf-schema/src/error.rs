//! Declaration errors: each names the file, the task, the type and field where known, and the
//! rule that was broken, so a rejection is actionable without reading the generator.

use std::fmt;

/// The rules a declaration must follow. `name()` is the stable spelling shown in messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rule {
    /// The file does not parse, or a type expression is not well formed.
    Syntax,
    /// `protocol_version` must be 1.
    ProtocolVersion,
    /// Names are identifiers: tasks `snake_case`, types start upper-case, no reserved words.
    Identifier,
    /// A referenced type is not declared.
    UnknownType,
    /// A type `kind` other than `struct` or `array`.
    TypeKind,
    /// Pointers and references cannot cross the boundary.
    NoPointers,
    /// Strings have no fixed size.
    NoStrings,
    /// Arrays need a fixed length.
    NoDynamicArrays,
    /// Arrays need at least one element.
    NonEmptyArray,
    /// An array whose elements are arrays: the inner ones may have at most 32 elements (serde's
    /// array limit in the generated Rust; wrap larger inner arrays in a struct).
    NestedArrayLength,
    /// A type may not contain itself, directly or through other types.
    NoRecursion,
    /// Effects are `pure`, `idempotent`, `stateful` or `actuating`.
    KnownEffect,
    /// A request or response must name a declared struct type.
    MessageIsStruct,
    /// A request or response must encode to at most 988 bytes.
    PayloadBudget,
    /// Task ids are unique.
    UniqueTaskId,
    /// Task ids `0xFFFF_FF00..=0xFFFF_FFFF` are reserved for MCU control frames.
    ReservedTaskId,
    /// Task names are unique (also after conversion to Rust enum variants).
    UniqueTaskName,
    /// Field names within a struct are unique.
    UniqueFieldName,
    /// A declaration may restate a built-in (`add`, `abi_probe` and their types) only identically.
    BuiltinConflict,
}

impl Rule {
    /// Stable kebab-case name.
    pub const fn name(self) -> &'static str {
        match self {
            Rule::Syntax => "syntax",
            Rule::ProtocolVersion => "protocol-version",
            Rule::Identifier => "identifier",
            Rule::UnknownType => "unknown-type",
            Rule::TypeKind => "type-kind",
            Rule::NoPointers => "no-pointers",
            Rule::NoStrings => "no-strings",
            Rule::NoDynamicArrays => "no-dynamic-arrays",
            Rule::NonEmptyArray => "non-empty-array",
            Rule::NestedArrayLength => "nested-array-length",
            Rule::NoRecursion => "no-recursion",
            Rule::KnownEffect => "known-effect",
            Rule::MessageIsStruct => "message-is-struct",
            Rule::PayloadBudget => "payload-budget",
            Rule::UniqueTaskId => "unique-task-id",
            Rule::ReservedTaskId => "reserved-task-id",
            Rule::UniqueTaskName => "unique-task-name",
            Rule::UniqueFieldName => "unique-field-name",
            Rule::BuiltinConflict => "builtin-conflict",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One broken rule, located as precisely as the declaration allows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct DeclError {
    /// The file (or `built-in`).
    pub origin: String,
    /// The task involved, if any.
    pub task: Option<String>,
    /// The named type involved, if any.
    pub type_name: Option<String>,
    /// The struct field involved, if any.
    pub field: Option<String>,
    pub rule: Rule,
    pub message: String,
}

impl DeclError {
    pub(crate) fn new(origin: &str, rule: Rule, message: impl Into<String>) -> DeclError {
        DeclError {
            origin: origin.to_string(),
            task: None,
            type_name: None,
            field: None,
            rule,
            message: message.into(),
        }
    }

    /// An error of the text itself (or of reading it) in `origin`, under [`Rule::Syntax`].
    pub fn syntax(origin: &str, message: impl Into<String>) -> DeclError {
        DeclError::new(origin, Rule::Syntax, message)
    }

    pub(crate) fn in_task(mut self, task: &str) -> DeclError {
        self.task = Some(task.to_string());
        self
    }

    pub(crate) fn in_type(mut self, type_name: &str) -> DeclError {
        self.type_name = Some(type_name.to_string());
        self
    }

    pub(crate) fn in_field(mut self, field: &str) -> DeclError {
        self.field = Some(field.to_string());
        self
    }
}

impl fmt::Display for DeclError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.origin)?;
        if let Some(task) = &self.task {
            write!(f, ": task `{task}`")?;
        }
        if let Some(type_name) = &self.type_name {
            write!(f, ": type `{type_name}`")?;
        }
        if let Some(field) = &self.field {
            write!(f, ": field `{field}`")?;
        }
        write!(f, ": [{}] {}", self.rule, self.message)
    }
}

/// Every rule a declaration file broke (validation reports all of them, not just the first).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct DeclErrors(pub Vec<DeclError>);

impl fmt::Display for DeclErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = self.0.len();
        writeln!(
            f,
            "{count} declaration error{}:",
            if count == 1 { "" } else { "s" }
        )?;
        for error in &self.0 {
            writeln!(f, "  {error}")?;
        }
        Ok(())
    }
}

impl DeclErrors {
    /// Whether some error broke `rule`.
    pub fn breaks(&self, rule: Rule) -> bool {
        self.0.iter().any(|error| error.rule == rule)
    }
}
