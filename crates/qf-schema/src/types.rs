//! Type expressions in declarations: scalars, named types and inline fixed arrays, and the
//! recognisable spellings of what ABI v1 forbids (pointers, strings, dynamic arrays).

use std::fmt;

use crate::Rule;

/// The fixed-size scalars of ABI v1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scalar {
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F32,
    F64,
    Bool,
}

impl Scalar {
    /// Every scalar.
    pub const ALL: [Scalar; 11] = [
        Scalar::I8,
        Scalar::I16,
        Scalar::I32,
        Scalar::I64,
        Scalar::U8,
        Scalar::U16,
        Scalar::U32,
        Scalar::U64,
        Scalar::F32,
        Scalar::F64,
        Scalar::Bool,
    ];

    /// The declaration (and Rust) spelling.
    pub const fn name(self) -> &'static str {
        match self {
            Scalar::I8 => "i8",
            Scalar::I16 => "i16",
            Scalar::I32 => "i32",
            Scalar::I64 => "i64",
            Scalar::U8 => "u8",
            Scalar::U16 => "u16",
            Scalar::U32 => "u32",
            Scalar::U64 => "u64",
            Scalar::F32 => "f32",
            Scalar::F64 => "f64",
            Scalar::Bool => "bool",
        }
    }

    /// The C spelling (`<stdint.h>`, `<stdbool.h>`).
    pub const fn c_name(self) -> &'static str {
        match self {
            Scalar::I8 => "int8_t",
            Scalar::I16 => "int16_t",
            Scalar::I32 => "int32_t",
            Scalar::I64 => "int64_t",
            Scalar::U8 => "uint8_t",
            Scalar::U16 => "uint16_t",
            Scalar::U32 => "uint32_t",
            Scalar::U64 => "uint64_t",
            Scalar::F32 => "float",
            Scalar::F64 => "double",
            Scalar::Bool => "bool",
        }
    }

    /// Encoded size in bytes.
    pub const fn size(self) -> usize {
        match self {
            Scalar::I8 | Scalar::U8 | Scalar::Bool => 1,
            Scalar::I16 | Scalar::U16 => 2,
            Scalar::I32 | Scalar::U32 | Scalar::F32 => 4,
            Scalar::I64 | Scalar::U64 | Scalar::F64 => 8,
        }
    }

    /// Parses a scalar spelling.
    pub fn parse(text: &str) -> Option<Scalar> {
        Scalar::ALL.into_iter().find(|scalar| scalar.name() == text)
    }
}

/// A field or element type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TypeExpr {
    Scalar(Scalar),
    /// A type declared under `[types]`.
    Named(String),
    /// `[element; length]`, length ≥ 1.
    Array(Box<TypeExpr>, usize),
}

impl fmt::Display for TypeExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TypeExpr::Scalar(scalar) => f.write_str(scalar.name()),
            TypeExpr::Named(name) => f.write_str(name),
            TypeExpr::Array(element, length) => write!(f, "[{element}; {length}]"),
        }
    }
}

/// Spellings of strings in the languages declarations come from.
const STRING_SPELLINGS: &[&str] = &[
    "str", "string", "String", "char", "cstr", "CString", "CStr", "OsString", "text",
];

/// Parses a type expression, naming the rule a forbidden spelling breaks.
pub fn parse_type(text: &str) -> Result<TypeExpr, (Rule, String)> {
    let text = text.trim();
    if text.starts_with('*')
        || text.starts_with('&')
        || text.ends_with('*')
        || ["ptr", "pointer", "Box", "Rc", "Arc"]
            .iter()
            .any(|p| text == *p || text.starts_with(&format!("{p}<")))
    {
        return Err((
            Rule::NoPointers,
            format!("`{text}` is a pointer or reference; payloads carry values only"),
        ));
    }
    if STRING_SPELLINGS.contains(&text) {
        return Err((
            Rule::NoStrings,
            format!("`{text}` is a string; use a fixed array of u8"),
        ));
    }
    if ["Vec<", "slice<", "List<", "Sequence<", "heapless::Vec<"]
        .iter()
        .any(|p| text.starts_with(p))
        || ["bytes", "list", "vec", "slice", "sequence"].contains(&text)
    {
        return Err((
            Rule::NoDynamicArrays,
            format!("`{text}` has no fixed length; use `[T; N]`"),
        ));
    }
    if let Some(inner) = text
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
    {
        let Some((element, length)) = inner.rsplit_once(';') else {
            return Err((
                Rule::NoDynamicArrays,
                format!("`{text}` has no fixed length; use `[T; N]`"),
            ));
        };
        let element = parse_type(element)?;
        let length = length.trim();
        if length.is_empty() {
            return Err((
                Rule::NoDynamicArrays,
                format!("`{text}` has no fixed length; use `[T; N]`"),
            ));
        }
        let length: usize = length.parse().map_err(|_| {
            (
                Rule::Syntax,
                format!("array length `{length}` in `{text}` is not a number"),
            )
        })?;
        if length == 0 {
            return Err((Rule::NonEmptyArray, format!("`{text}` has no elements")));
        }
        return Ok(TypeExpr::Array(Box::new(element), length));
    }
    if let Some(scalar) = Scalar::parse(text) {
        return Ok(TypeExpr::Scalar(scalar));
    }
    if is_identifier(text) {
        return Ok(TypeExpr::Named(text.to_string()));
    }
    Err((
        Rule::Syntax,
        format!("`{text}` is not a scalar, a type name or `[T; N]`"),
    ))
}

/// `[A-Za-z_][A-Za-z0-9_]*`.
pub fn is_identifier(text: &str) -> bool {
    let mut chars = text.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Words that cannot name a field or type in the generated Rust or C.
pub const RESERVED_WORDS: &[&str] = &[
    // Rust
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub",
    "ref", "return", "self", "Self", "static", "struct", "super", "trait", "true", "type",
    "unsafe", "use", "where", "while", "abstract", "become", "box", "do", "final", "macro",
    "override", "priv", "typeof", "unsized", "virtual", "yield", "try", "gen", // C
    "auto", "case", "char", "default", "double", "float", "goto", "inline", "int", "long",
    "register", "restrict", "short", "signed", "sizeof", "switch", "typedef", "union", "unsigned",
    "void", "volatile", "_Bool", "bool",
];
