//! Payloads of declared types handled at run time, for tools (`qf abi encode/decode`): JSON in,
//! bytes out and back, for any type of any declaration file.
//!
//! The bytes are produced and read by qf-abi's codec (its `WireSerializer`/`WireDeserializer`),
//! driven here by the schema through serde, so there is exactly one implementation of the wire
//! encoding. JSON is checked against the schema first, so a bad value is reported with its path
//! (`offsets[3]`) and the reason, which the allocation-free codec cannot carry.

use std::fmt;

use serde::de::{DeserializeSeed, Error as _, SeqAccess, Visitor};
use serde::ser::SerializeTuple;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::{Scalar, TypeExpr};
use crate::{Schema, TypeBody};

/// A value of a declared type.
#[derive(Debug, Clone, PartialEq)]
pub enum DynValue {
    I8(i8),
    I16(i16),
    I32(i32),
    I64(i64),
    U8(u8),
    U16(u16),
    U32(u32),
    U64(u64),
    F32(f32),
    F64(f64),
    Bool(bool),
    Array(Vec<DynValue>),
    /// Fields in declaration order.
    Struct(Vec<(String, DynValue)>),
}

/// A JSON value that does not fit its declared type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct ValueError {
    /// Where in the value, e.g. `ProbeRequest.offsets[3]`.
    pub path: String,
    pub message: String,
}

fn value_error(path: &str, message: impl Into<String>) -> ValueError {
    ValueError {
        path: path.to_string(),
        message: message.into(),
    }
}

impl DynValue {
    /// Checks `json` against `ty` and converts it. Integers must be in range, floats finite,
    /// arrays exactly as long as declared, structs exactly the declared fields.
    pub fn from_json(
        schema: &Schema,
        ty: &TypeExpr,
        json: &Value,
        path: &str,
    ) -> Result<DynValue, ValueError> {
        match ty {
            TypeExpr::Scalar(scalar) => scalar_from_json(*scalar, json, path),
            TypeExpr::Array(element, length) => {
                array_from_json(schema, element, *length, json, path)
            }
            TypeExpr::Named(name) => match schema.type_def(name).map(|def| &def.body) {
                Some(TypeBody::Array { element, length }) => {
                    array_from_json(schema, element, *length, json, path)
                }
                Some(TypeBody::Struct(fields)) => {
                    let Value::Object(object) = json else {
                        return Err(value_error(
                            path,
                            format!("expected an object for `{name}`, found {json}"),
                        ));
                    };
                    if let Some(extra) = object
                        .keys()
                        .find(|key| !fields.iter().any(|f| &f.name == *key))
                    {
                        return Err(value_error(
                            path,
                            format!("`{name}` has no field `{extra}`"),
                        ));
                    }
                    let mut out = Vec::with_capacity(fields.len());
                    for field in fields {
                        let field_path = format!("{path}.{}", field.name);
                        let value = object
                            .get(&field.name)
                            .ok_or_else(|| value_error(&field_path, "missing"))?;
                        out.push((
                            field.name.clone(),
                            DynValue::from_json(schema, &field.ty, value, &field_path)?,
                        ));
                    }
                    Ok(DynValue::Struct(out))
                }
                None => Err(value_error(path, format!("type `{name}` is not declared"))),
            },
        }
    }

    /// The JSON form (objects for structs, lists for arrays, numbers and booleans).
    pub fn to_json(&self) -> Value {
        match self {
            DynValue::I8(v) => Value::from(*v),
            DynValue::I16(v) => Value::from(*v),
            DynValue::I32(v) => Value::from(*v),
            DynValue::I64(v) => Value::from(*v),
            DynValue::U8(v) => Value::from(*v),
            DynValue::U16(v) => Value::from(*v),
            DynValue::U32(v) => Value::from(*v),
            DynValue::U64(v) => Value::from(*v),
            DynValue::F32(v) => Value::from(f64::from(*v)),
            DynValue::F64(v) => Value::from(*v),
            DynValue::Bool(v) => Value::from(*v),
            DynValue::Array(items) => Value::Array(items.iter().map(DynValue::to_json).collect()),
            DynValue::Struct(fields) => Value::Object(
                fields
                    .iter()
                    .map(|(name, value)| (name.clone(), value.to_json()))
                    .collect(),
            ),
        }
    }
}

fn scalar_from_json(scalar: Scalar, json: &Value, path: &str) -> Result<DynValue, ValueError> {
    let out_of_range = || value_error(path, format!("{json} is not a valid {}", scalar.name()));
    let signed = || json.as_i64().ok_or_else(out_of_range);
    let unsigned = || json.as_u64().ok_or_else(out_of_range);
    let float = || {
        json.as_f64()
            .filter(|v| v.is_finite())
            .ok_or_else(out_of_range)
    };
    Ok(match scalar {
        Scalar::I8 => DynValue::I8(i8::try_from(signed()?).map_err(|_| out_of_range())?),
        Scalar::I16 => DynValue::I16(i16::try_from(signed()?).map_err(|_| out_of_range())?),
        Scalar::I32 => DynValue::I32(i32::try_from(signed()?).map_err(|_| out_of_range())?),
        Scalar::I64 => DynValue::I64(signed()?),
        Scalar::U8 => DynValue::U8(u8::try_from(unsigned()?).map_err(|_| out_of_range())?),
        Scalar::U16 => DynValue::U16(u16::try_from(unsigned()?).map_err(|_| out_of_range())?),
        Scalar::U32 => DynValue::U32(u32::try_from(unsigned()?).map_err(|_| out_of_range())?),
        Scalar::U64 => DynValue::U64(unsigned()?),
        Scalar::F32 => {
            let value = float()? as f32;
            if !value.is_finite() {
                return Err(out_of_range());
            }
            DynValue::F32(value)
        }
        Scalar::F64 => DynValue::F64(float()?),
        Scalar::Bool => DynValue::Bool(json.as_bool().ok_or_else(out_of_range)?),
    })
}

fn array_from_json(
    schema: &Schema,
    element: &TypeExpr,
    length: usize,
    json: &Value,
    path: &str,
) -> Result<DynValue, ValueError> {
    let Value::Array(items) = json else {
        return Err(value_error(
            path,
            format!("expected a list of {length}, found {json}"),
        ));
    };
    if items.len() != length {
        return Err(value_error(
            path,
            format!("expected {length} elements, found {}", items.len()),
        ));
    }
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            DynValue::from_json(schema, element, item, &format!("{path}[{index}]"))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(DynValue::Array)
}

/// Serializes in the wire shape: arrays and structs as tuples (the ABI has no names on the wire).
impl Serialize for DynValue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            DynValue::I8(v) => serializer.serialize_i8(*v),
            DynValue::I16(v) => serializer.serialize_i16(*v),
            DynValue::I32(v) => serializer.serialize_i32(*v),
            DynValue::I64(v) => serializer.serialize_i64(*v),
            DynValue::U8(v) => serializer.serialize_u8(*v),
            DynValue::U16(v) => serializer.serialize_u16(*v),
            DynValue::U32(v) => serializer.serialize_u32(*v),
            DynValue::U64(v) => serializer.serialize_u64(*v),
            DynValue::F32(v) => serializer.serialize_f32(*v),
            DynValue::F64(v) => serializer.serialize_f64(*v),
            DynValue::Bool(v) => serializer.serialize_bool(*v),
            DynValue::Array(items) => {
                let mut tuple = serializer.serialize_tuple(items.len())?;
                for item in items {
                    tuple.serialize_element(item)?;
                }
                tuple.end()
            }
            DynValue::Struct(fields) => {
                let mut tuple = serializer.serialize_tuple(fields.len())?;
                for (_, value) in fields {
                    tuple.serialize_element(value)?;
                }
                tuple.end()
            }
        }
    }
}

/// Reads a [`DynValue`] of type `ty` from any serde deserializer (in practice qf-abi's).
#[derive(Clone, Copy)]
pub struct DynSeed<'s> {
    pub schema: &'s Schema,
    pub ty: &'s TypeExpr,
}

impl<'de> DeserializeSeed<'de> for DynSeed<'_> {
    type Value = DynValue;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<DynValue, D::Error> {
        let schema = self.schema;
        match self.ty {
            TypeExpr::Scalar(scalar) => scalar_seed(*scalar, deserializer),
            TypeExpr::Array(element, length) => deserializer.deserialize_tuple(
                *length,
                ElementsVisitor {
                    schema,
                    types: vec![&**element; *length],
                    names: None,
                },
            ),
            TypeExpr::Named(name) => match schema.type_def(name).map(|def| &def.body) {
                Some(TypeBody::Array { element, length }) => deserializer.deserialize_tuple(
                    *length,
                    ElementsVisitor {
                        schema,
                        types: vec![element; *length],
                        names: None,
                    },
                ),
                Some(TypeBody::Struct(fields)) => deserializer.deserialize_tuple(
                    fields.len(),
                    ElementsVisitor {
                        schema,
                        types: fields.iter().map(|f| &f.ty).collect(),
                        names: Some(fields.iter().map(|f| f.name.as_str()).collect()),
                    },
                ),
                None => Err(D::Error::custom(format!("type `{name}` is not declared"))),
            },
        }
    }
}

fn scalar_seed<'de, D: Deserializer<'de>>(
    scalar: Scalar,
    deserializer: D,
) -> Result<DynValue, D::Error> {
    Ok(match scalar {
        Scalar::I8 => DynValue::I8(i8::deserialize(deserializer)?),
        Scalar::I16 => DynValue::I16(i16::deserialize(deserializer)?),
        Scalar::I32 => DynValue::I32(i32::deserialize(deserializer)?),
        Scalar::I64 => DynValue::I64(i64::deserialize(deserializer)?),
        Scalar::U8 => DynValue::U8(u8::deserialize(deserializer)?),
        Scalar::U16 => DynValue::U16(u16::deserialize(deserializer)?),
        Scalar::U32 => DynValue::U32(u32::deserialize(deserializer)?),
        Scalar::U64 => DynValue::U64(u64::deserialize(deserializer)?),
        Scalar::F32 => DynValue::F32(f32::deserialize(deserializer)?),
        Scalar::F64 => DynValue::F64(f64::deserialize(deserializer)?),
        Scalar::Bool => DynValue::Bool(bool::deserialize(deserializer)?),
    })
}

/// Reads a fixed sequence of typed elements: array items, or struct fields (with `names`).
struct ElementsVisitor<'s> {
    schema: &'s Schema,
    types: Vec<&'s TypeExpr>,
    names: Option<Vec<&'s str>>,
}

impl<'de> Visitor<'de> for ElementsVisitor<'_> {
    type Value = DynValue;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} elements", self.types.len())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<DynValue, A::Error> {
        let mut values = Vec::with_capacity(self.types.len());
        for (index, ty) in self.types.iter().enumerate() {
            let value = seq
                .next_element_seed(DynSeed {
                    schema: self.schema,
                    ty,
                })?
                .ok_or_else(|| A::Error::invalid_length(index, &self))?;
            values.push(value);
        }
        Ok(match self.names {
            Some(names) => {
                DynValue::Struct(names.into_iter().map(str::to_string).zip(values).collect())
            }
            None => DynValue::Array(values),
        })
    }
}
