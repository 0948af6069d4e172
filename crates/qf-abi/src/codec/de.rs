//! The serde `Deserializer` for ABI v1 payloads: a bounds-checked cursor over a byte slice that
//! knows its offset and the struct field it is in, for precise error reports.

use serde::de::{self, DeserializeSeed, SeqAccess, Visitor};

use super::Fault;
use crate::{AbiError, Problem, Status};

/// Reads one value in the ABI v1 payload encoding from a byte slice.
pub struct WireDeserializer<'de> {
    input: &'de [u8],
    /// The unread tail of `input` (a shrinking slice: one length check per read).
    rest: &'de [u8],
    field: &'static str,
    /// The first failure, in full; serde only carries the one-byte [`Fault`].
    fault: Option<AbiError>,
}

impl<'de> WireDeserializer<'de> {
    /// A cursor at the start of `input`.
    pub fn new(input: &'de [u8]) -> Self {
        WireDeserializer {
            input,
            rest: input,
            field: "payload",
            fault: None,
        }
    }

    /// Bytes consumed so far.
    pub fn position(&self) -> usize {
        self.input.len() - self.rest.len()
    }

    /// Fails with MALFORMED if any input is left over.
    pub fn finish(&self) -> Result<(), AbiError> {
        let left = self.rest.len();
        if left != 0 {
            return Err(AbiError::new(
                Status::Malformed,
                self.position(),
                "payload",
                Problem::TrailingBytes { count: left },
            ));
        }
        Ok(())
    }

    /// Why deserialization failed: the recorded failure, or (for a value its type refused
    /// through serde's `custom`, which knows no position) MALFORMED at the cursor.
    pub fn error(&self) -> AbiError {
        self.fault.unwrap_or(AbiError::new(
            Status::Malformed,
            self.position(),
            self.field,
            Problem::InvalidValue,
        ))
    }

    // Cold and out of line: keeps the per-value fast path small enough to inline everywhere.
    #[cold]
    #[inline(never)]
    fn fail(&mut self, error: AbiError) -> Fault {
        self.fault = Some(error);
        Fault
    }

    #[inline]
    fn take<const N: usize>(&mut self) -> Result<[u8; N], Fault> {
        match self.rest.split_first_chunk::<N>() {
            Some((bytes, rest)) => {
                self.rest = rest;
                Ok(*bytes)
            }
            None => Err(self.truncated(N)),
        }
    }

    #[cold]
    #[inline(never)]
    fn truncated(&mut self, needed: usize) -> Fault {
        let available = self.rest.len();
        let problem = Problem::Truncated { needed, available };
        self.fail(AbiError::new(
            Status::Malformed,
            self.position(),
            self.field,
            problem,
        ))
    }

    fn unsupported(&mut self, shape: &'static str) -> Fault {
        let problem = Problem::UnsupportedShape { shape };
        self.fail(AbiError::new(
            Status::Malformed,
            self.position(),
            self.field,
            problem,
        ))
    }

    fn non_finite(&mut self, width: usize) -> Fault {
        let offset = self.position() - width;
        self.fail(AbiError::new(
            Status::Malformed,
            offset,
            self.field,
            Problem::NonFiniteFloat,
        ))
    }
}

macro_rules! integer {
    ($method:ident, $visit:ident, $ty:ty) => {
        #[inline]
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Fault> {
            let bytes = self.take::<{ core::mem::size_of::<$ty>() }>()?;
            visitor.$visit(<$ty>::from_be_bytes(bytes))
        }
    };
}

macro_rules! unsupported {
    ($($method:ident => $shape:literal),* $(,)?) => {
        $(fn $method<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Fault> {
            Err(self.unsupported($shape))
        })*
    };
}

impl<'de> de::Deserializer<'de> for &mut WireDeserializer<'de> {
    type Error = Fault;

    integer!(deserialize_i8, visit_i8, i8);
    integer!(deserialize_i16, visit_i16, i16);
    integer!(deserialize_i32, visit_i32, i32);
    integer!(deserialize_i64, visit_i64, i64);
    integer!(deserialize_u8, visit_u8, u8);
    integer!(deserialize_u16, visit_u16, u16);
    integer!(deserialize_u32, visit_u32, u32);
    integer!(deserialize_u64, visit_u64, u64);

    unsupported! {
        deserialize_any => "a self-describing value",
        deserialize_i128 => "i128",
        deserialize_u128 => "u128",
        deserialize_char => "char",
        deserialize_str => "a string",
        deserialize_string => "a string",
        deserialize_bytes => "a byte string",
        deserialize_byte_buf => "a byte string",
        deserialize_option => "an option",
        deserialize_seq => "a dynamic sequence",
        deserialize_map => "a map",
        deserialize_identifier => "an identifier",
        deserialize_ignored_any => "an ignored value",
    }

    #[inline]
    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Fault> {
        let [byte] = self.take::<1>()?;
        match byte {
            0 => visitor.visit_bool(false),
            1 => visitor.visit_bool(true),
            found => {
                let error = AbiError::new(
                    Status::Malformed,
                    self.position() - 1,
                    self.field,
                    Problem::BadBool { found },
                );
                Err(self.fail(error))
            }
        }
    }

    #[inline]
    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Fault> {
        let value = f32::from_be_bytes(self.take::<4>()?);
        if !value.is_finite() {
            return Err(self.non_finite(4));
        }
        visitor.visit_f32(value)
    }

    #[inline]
    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Fault> {
        let value = f64::from_be_bytes(self.take::<8>()?);
        if !value.is_finite() {
            return Err(self.non_finite(8));
        }
        visitor.visit_f64(value)
    }

    #[inline]
    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Fault> {
        visitor.visit_unit()
    }

    #[inline]
    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Fault> {
        visitor.visit_unit()
    }

    #[inline]
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Fault> {
        visitor.visit_newtype_struct(self)
    }

    #[inline]
    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, Fault> {
        visitor.visit_seq(Elements {
            deserializer: self,
            remaining: len,
            fields: &[],
        })
    }

    #[inline]
    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Fault> {
        visitor.visit_seq(Elements {
            deserializer: self,
            remaining: len,
            fields: &[],
        })
    }

    #[inline]
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Fault> {
        visitor.visit_seq(Elements {
            deserializer: self,
            remaining: fields.len(),
            fields,
        })
    }

    #[inline]
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Fault> {
        Err(self.unsupported("an enum"))
    }

    fn is_human_readable(&self) -> bool {
        false
    }
}

/// Hands out exactly `remaining` elements (tuple items or struct fields, in order).
struct Elements<'a, 'de> {
    deserializer: &'a mut WireDeserializer<'de>,
    remaining: usize,
    /// Struct field names, to name the field in errors; empty for tuples and arrays.
    fields: &'static [&'static str],
}

impl<'de> SeqAccess<'de> for Elements<'_, 'de> {
    type Error = Fault;

    #[inline]
    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Fault> {
        if self.remaining == 0 {
            return Ok(None);
        }
        let index = self.fields.len().checked_sub(self.remaining);
        if let Some(name) = index.and_then(|index| self.fields.get(index)) {
            self.deserializer.field = name;
        }
        self.remaining -= 1;
        seed.deserialize(&mut *self.deserializer).map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.remaining)
    }
}
