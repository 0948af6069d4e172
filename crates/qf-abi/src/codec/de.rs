//! The serde `Deserializer` for ABI v1 payloads: a bounds-checked cursor over a byte slice that
//! knows its offset and the struct field it is in, for precise error reports.

use serde::de::{self, DeserializeSeed, SeqAccess, Visitor};

use crate::{AbiError, Problem, Status};

/// Offset marking an error raised through serde's `custom` hook, which knows no position;
/// [`WireDeserializer::locate`] replaces it with the cursor position.
const UNPLACED: usize = usize::MAX;

/// Reads one value in the ABI v1 payload encoding from a byte slice.
pub struct WireDeserializer<'de> {
    input: &'de [u8],
    position: usize,
    field: &'static str,
}

impl<'de> WireDeserializer<'de> {
    /// A cursor at the start of `input`.
    pub fn new(input: &'de [u8]) -> Self {
        WireDeserializer {
            input,
            position: 0,
            field: "payload",
        }
    }

    /// Bytes consumed so far.
    pub fn position(&self) -> usize {
        self.position
    }

    /// Fails with MALFORMED if any input is left over.
    pub fn finish(&self) -> Result<(), AbiError> {
        let left = self.input.len() - self.position;
        if left != 0 {
            return Err(AbiError::new(
                Status::Malformed,
                self.position,
                "payload",
                Problem::TrailingBytes { count: left },
            ));
        }
        Ok(())
    }

    /// Gives an error raised without a position (serde's `custom`) the cursor's position.
    pub fn locate(&self, error: AbiError) -> AbiError {
        if error.offset == UNPLACED {
            AbiError {
                offset: self.position,
                field: self.field,
                ..error
            }
        } else {
            error
        }
    }

    fn take<const N: usize>(&mut self) -> Result<[u8; N], AbiError> {
        let available = self.input.len() - self.position;
        match self.input.get(self.position..self.position + N) {
            Some(bytes) => {
                let mut out = [0u8; N];
                out.copy_from_slice(bytes);
                self.position += N;
                Ok(out)
            }
            None => Err(AbiError::new(
                Status::Malformed,
                self.position,
                self.field,
                Problem::Truncated {
                    needed: N,
                    available,
                },
            )),
        }
    }

    fn unsupported(&self, shape: &'static str) -> AbiError {
        AbiError::new(
            Status::Malformed,
            self.position,
            self.field,
            Problem::UnsupportedShape { shape },
        )
    }

    fn non_finite(&self, width: usize) -> AbiError {
        AbiError::new(
            Status::Malformed,
            self.position - width,
            self.field,
            Problem::NonFiniteFloat,
        )
    }
}

impl de::Error for AbiError {
    fn custom<T: core::fmt::Display>(_message: T) -> Self {
        AbiError::new(
            Status::Malformed,
            UNPLACED,
            "payload",
            Problem::InvalidValue,
        )
    }
}

macro_rules! integer {
    ($method:ident, $visit:ident, $ty:ty) => {
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, AbiError> {
            let bytes = self.take::<{ core::mem::size_of::<$ty>() }>()?;
            visitor.$visit(<$ty>::from_be_bytes(bytes))
        }
    };
}

macro_rules! unsupported {
    ($($method:ident => $shape:literal),* $(,)?) => {
        $(fn $method<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, AbiError> {
            Err(self.unsupported($shape))
        })*
    };
}

impl<'de> de::Deserializer<'de> for &mut WireDeserializer<'de> {
    type Error = AbiError;

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

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, AbiError> {
        let [byte] = self.take::<1>()?;
        match byte {
            0 => visitor.visit_bool(false),
            1 => visitor.visit_bool(true),
            found => Err(AbiError::new(
                Status::Malformed,
                self.position - 1,
                self.field,
                Problem::BadBool { found },
            )),
        }
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, AbiError> {
        let value = f32::from_be_bytes(self.take::<4>()?);
        if !value.is_finite() {
            return Err(self.non_finite(4));
        }
        visitor.visit_f32(value)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, AbiError> {
        let value = f64::from_be_bytes(self.take::<8>()?);
        if !value.is_finite() {
            return Err(self.non_finite(8));
        }
        visitor.visit_f64(value)
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, AbiError> {
        visitor.visit_unit()
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, AbiError> {
        visitor.visit_unit()
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, AbiError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, AbiError> {
        visitor.visit_seq(Elements {
            deserializer: self,
            remaining: len,
            fields: &[],
        })
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, AbiError> {
        visitor.visit_seq(Elements {
            deserializer: self,
            remaining: len,
            fields: &[],
        })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, AbiError> {
        visitor.visit_seq(Elements {
            deserializer: self,
            remaining: fields.len(),
            fields,
        })
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, AbiError> {
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
    type Error = AbiError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, AbiError> {
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
