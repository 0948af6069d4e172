//! The serde `Serializer` for ABI v1 payloads, writing through a postcard output flavor.

use postcard::ser_flavors::Flavor;
use serde::ser::{self, Serialize};

use crate::{AbiError, Problem, Status};

/// Serializes one value in the ABI v1 payload encoding into the flavor `F`
/// (e.g. `postcard::ser_flavors::Slice` for a buffer, `Size` to count bytes).
pub struct WireSerializer<F: Flavor> {
    output: F,
    written: usize,
    field: &'static str,
}

impl<F: Flavor> WireSerializer<F> {
    /// A serializer that has written nothing yet.
    pub fn new(output: F) -> Self {
        WireSerializer {
            output,
            written: 0,
            field: "payload",
        }
    }

    /// Bytes written so far.
    pub fn written(&self) -> usize {
        self.written
    }

    /// Hands back the flavor (e.g. to `finalize` it).
    pub fn into_flavor(self) -> F {
        self.output
    }

    fn put(&mut self, bytes: &[u8]) -> Result<(), AbiError> {
        self.output.try_extend(bytes).map_err(|_| {
            AbiError::new(
                Status::ExecutionError,
                self.written,
                self.field,
                Problem::OutputFull {
                    capacity: self.written,
                },
            )
        })?;
        self.written += bytes.len();
        Ok(())
    }

    fn unsupported(&self, shape: &'static str) -> AbiError {
        AbiError::new(
            Status::Malformed,
            self.written,
            self.field,
            Problem::UnsupportedShape { shape },
        )
    }

    fn non_finite(&self) -> AbiError {
        AbiError::new(
            Status::Malformed,
            self.written,
            self.field,
            Problem::NonFiniteFloat,
        )
    }
}

impl ser::Error for AbiError {
    fn custom<T: core::fmt::Display>(_message: T) -> Self {
        // No allocation: the message cannot be kept, the kind of failure is.
        AbiError::new(Status::Malformed, 0, "payload", Problem::InvalidValue)
    }
}

impl<F: Flavor> ser::Serializer for &mut WireSerializer<F> {
    type Ok = ();
    type Error = AbiError;
    type SerializeSeq = ser::Impossible<(), AbiError>;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = ser::Impossible<(), AbiError>;
    type SerializeMap = ser::Impossible<(), AbiError>;
    type SerializeStruct = Self;
    type SerializeStructVariant = ser::Impossible<(), AbiError>;

    fn serialize_bool(self, v: bool) -> Result<(), AbiError> {
        self.put(&[u8::from(v)])
    }
    fn serialize_i8(self, v: i8) -> Result<(), AbiError> {
        self.put(&v.to_be_bytes())
    }
    fn serialize_i16(self, v: i16) -> Result<(), AbiError> {
        self.put(&v.to_be_bytes())
    }
    fn serialize_i32(self, v: i32) -> Result<(), AbiError> {
        self.put(&v.to_be_bytes())
    }
    fn serialize_i64(self, v: i64) -> Result<(), AbiError> {
        self.put(&v.to_be_bytes())
    }
    fn serialize_u8(self, v: u8) -> Result<(), AbiError> {
        self.put(&[v])
    }
    fn serialize_u16(self, v: u16) -> Result<(), AbiError> {
        self.put(&v.to_be_bytes())
    }
    fn serialize_u32(self, v: u32) -> Result<(), AbiError> {
        self.put(&v.to_be_bytes())
    }
    fn serialize_u64(self, v: u64) -> Result<(), AbiError> {
        self.put(&v.to_be_bytes())
    }
    fn serialize_i128(self, _v: i128) -> Result<(), AbiError> {
        Err(self.unsupported("i128"))
    }
    fn serialize_u128(self, _v: u128) -> Result<(), AbiError> {
        Err(self.unsupported("u128"))
    }
    fn serialize_f32(self, v: f32) -> Result<(), AbiError> {
        if !v.is_finite() {
            return Err(self.non_finite());
        }
        self.put(&v.to_be_bytes())
    }
    fn serialize_f64(self, v: f64) -> Result<(), AbiError> {
        if !v.is_finite() {
            return Err(self.non_finite());
        }
        self.put(&v.to_be_bytes())
    }
    fn serialize_char(self, _v: char) -> Result<(), AbiError> {
        Err(self.unsupported("char"))
    }
    fn serialize_str(self, _v: &str) -> Result<(), AbiError> {
        Err(self.unsupported("a string"))
    }
    fn serialize_bytes(self, _v: &[u8]) -> Result<(), AbiError> {
        Err(self.unsupported("a byte string"))
    }
    fn serialize_none(self) -> Result<(), AbiError> {
        Err(self.unsupported("an option"))
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _value: &T) -> Result<(), AbiError> {
        Err(self.unsupported("an option"))
    }
    fn serialize_unit(self) -> Result<(), AbiError> {
        Ok(())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), AbiError> {
        Ok(())
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
    ) -> Result<(), AbiError> {
        Err(self.unsupported("an enum"))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), AbiError> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result<(), AbiError> {
        Err(self.unsupported("an enum"))
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq, AbiError> {
        Err(self.unsupported("a dynamic sequence"))
    }
    fn serialize_tuple(self, _len: usize) -> Result<Self, AbiError> {
        Ok(self)
    }
    fn serialize_tuple_struct(self, _name: &'static str, _len: usize) -> Result<Self, AbiError> {
        Ok(self)
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant, AbiError> {
        Err(self.unsupported("an enum"))
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap, AbiError> {
        Err(self.unsupported("a map"))
    }
    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Self, AbiError> {
        Ok(self)
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant, AbiError> {
        Err(self.unsupported("an enum"))
    }
    fn collect_str<T: core::fmt::Display + ?Sized>(self, _value: &T) -> Result<(), AbiError> {
        Err(self.unsupported("a string"))
    }
    fn is_human_readable(&self) -> bool {
        false
    }
}

impl<F: Flavor> ser::SerializeTuple for &mut WireSerializer<F> {
    type Ok = ();
    type Error = AbiError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), AbiError> {
        value.serialize(&mut **self)
    }
    fn end(self) -> Result<(), AbiError> {
        Ok(())
    }
}

impl<F: Flavor> ser::SerializeTupleStruct for &mut WireSerializer<F> {
    type Ok = ();
    type Error = AbiError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), AbiError> {
        value.serialize(&mut **self)
    }
    fn end(self) -> Result<(), AbiError> {
        Ok(())
    }
}

impl<F: Flavor> ser::SerializeStruct for &mut WireSerializer<F> {
    type Ok = ();
    type Error = AbiError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), AbiError> {
        self.field = key;
        value.serialize(&mut **self)
    }
    fn end(self) -> Result<(), AbiError> {
        Ok(())
    }
}
