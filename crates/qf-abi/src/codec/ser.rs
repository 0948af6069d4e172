//! The serde `Serializer` for ABI v1 payloads, writing through a postcard output flavor.

use postcard::ser_flavors::Flavor;
use serde::ser::{self, Serialize};

use super::Fault;
use crate::{AbiError, Problem, Status};

/// Serializes one value in the ABI v1 payload encoding into the flavor `F`
/// (e.g. `postcard::ser_flavors::Slice` for a buffer, `Size` to count bytes).
pub struct WireSerializer<F: Flavor> {
    output: F,
    written: usize,
    field: &'static str,
    /// The first failure, in full; serde only carries the one-byte [`Fault`].
    fault: Option<AbiError>,
}

impl<F: Flavor> WireSerializer<F> {
    /// A serializer that has written nothing yet.
    pub fn new(output: F) -> Self {
        WireSerializer {
            output,
            written: 0,
            field: "payload",
            fault: None,
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

    /// Why serialization failed: the recorded failure, or (for a value that refused itself
    /// through serde's `custom`) MALFORMED at the current position.
    pub fn error(&self) -> AbiError {
        self.fault.unwrap_or(AbiError::new(
            Status::Malformed,
            self.written,
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
    fn put(&mut self, bytes: &[u8]) -> Result<(), Fault> {
        if self.output.try_extend(bytes).is_err() {
            return Err(self.output_full());
        }
        self.written += bytes.len();
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn output_full(&mut self) -> Fault {
        let problem = Problem::OutputFull {
            capacity: self.written,
        };
        self.fail(AbiError::new(
            Status::ExecutionError,
            self.written,
            self.field,
            problem,
        ))
    }

    fn unsupported(&mut self, shape: &'static str) -> Fault {
        self.fail(AbiError::new(
            Status::Malformed,
            self.written,
            self.field,
            Problem::UnsupportedShape { shape },
        ))
    }

    fn non_finite(&mut self) -> Fault {
        self.fail(AbiError::new(
            Status::Malformed,
            self.written,
            self.field,
            Problem::NonFiniteFloat,
        ))
    }
}

impl<F: Flavor> ser::Serializer for &mut WireSerializer<F> {
    type Ok = ();
    type Error = Fault;
    type SerializeSeq = ser::Impossible<(), Fault>;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = ser::Impossible<(), Fault>;
    type SerializeMap = ser::Impossible<(), Fault>;
    type SerializeStruct = Self;
    type SerializeStructVariant = ser::Impossible<(), Fault>;

    #[inline]
    fn serialize_bool(self, v: bool) -> Result<(), Fault> {
        self.put(&[u8::from(v)])
    }
    #[inline]
    fn serialize_i8(self, v: i8) -> Result<(), Fault> {
        self.put(&v.to_be_bytes())
    }
    #[inline]
    fn serialize_i16(self, v: i16) -> Result<(), Fault> {
        self.put(&v.to_be_bytes())
    }
    #[inline]
    fn serialize_i32(self, v: i32) -> Result<(), Fault> {
        self.put(&v.to_be_bytes())
    }
    #[inline]
    fn serialize_i64(self, v: i64) -> Result<(), Fault> {
        self.put(&v.to_be_bytes())
    }
    #[inline]
    fn serialize_u8(self, v: u8) -> Result<(), Fault> {
        self.put(&[v])
    }
    #[inline]
    fn serialize_u16(self, v: u16) -> Result<(), Fault> {
        self.put(&v.to_be_bytes())
    }
    #[inline]
    fn serialize_u32(self, v: u32) -> Result<(), Fault> {
        self.put(&v.to_be_bytes())
    }
    #[inline]
    fn serialize_u64(self, v: u64) -> Result<(), Fault> {
        self.put(&v.to_be_bytes())
    }
    #[inline]
    fn serialize_i128(self, _v: i128) -> Result<(), Fault> {
        Err(self.unsupported("i128"))
    }
    #[inline]
    fn serialize_u128(self, _v: u128) -> Result<(), Fault> {
        Err(self.unsupported("u128"))
    }
    #[inline]
    fn serialize_f32(self, v: f32) -> Result<(), Fault> {
        if !v.is_finite() {
            return Err(self.non_finite());
        }
        self.put(&v.to_be_bytes())
    }
    #[inline]
    fn serialize_f64(self, v: f64) -> Result<(), Fault> {
        if !v.is_finite() {
            return Err(self.non_finite());
        }
        self.put(&v.to_be_bytes())
    }
    #[inline]
    fn serialize_char(self, _v: char) -> Result<(), Fault> {
        Err(self.unsupported("char"))
    }
    #[inline]
    fn serialize_str(self, _v: &str) -> Result<(), Fault> {
        Err(self.unsupported("a string"))
    }
    #[inline]
    fn serialize_bytes(self, _v: &[u8]) -> Result<(), Fault> {
        Err(self.unsupported("a byte string"))
    }
    #[inline]
    fn serialize_none(self) -> Result<(), Fault> {
        Err(self.unsupported("an option"))
    }
    #[inline]
    fn serialize_some<T: Serialize + ?Sized>(self, _value: &T) -> Result<(), Fault> {
        Err(self.unsupported("an option"))
    }
    #[inline]
    fn serialize_unit(self) -> Result<(), Fault> {
        Ok(())
    }
    #[inline]
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Fault> {
        Ok(())
    }
    #[inline]
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
    ) -> Result<(), Fault> {
        Err(self.unsupported("an enum"))
    }
    #[inline]
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), Fault> {
        value.serialize(self)
    }
    #[inline]
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result<(), Fault> {
        Err(self.unsupported("an enum"))
    }
    #[inline]
    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq, Fault> {
        Err(self.unsupported("a dynamic sequence"))
    }
    #[inline]
    fn serialize_tuple(self, _len: usize) -> Result<Self, Fault> {
        Ok(self)
    }
    #[inline]
    fn serialize_tuple_struct(self, _name: &'static str, _len: usize) -> Result<Self, Fault> {
        Ok(self)
    }
    #[inline]
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant, Fault> {
        Err(self.unsupported("an enum"))
    }
    #[inline]
    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap, Fault> {
        Err(self.unsupported("a map"))
    }
    #[inline]
    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Self, Fault> {
        Ok(self)
    }
    #[inline]
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant, Fault> {
        Err(self.unsupported("an enum"))
    }
    fn collect_str<T: core::fmt::Display + ?Sized>(self, _value: &T) -> Result<(), Fault> {
        Err(self.unsupported("a string"))
    }
    fn is_human_readable(&self) -> bool {
        false
    }
}

impl<F: Flavor> ser::SerializeTuple for &mut WireSerializer<F> {
    type Ok = ();
    type Error = Fault;
    #[inline]
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Fault> {
        value.serialize(&mut **self)
    }
    #[inline]
    fn end(self) -> Result<(), Fault> {
        Ok(())
    }
}

impl<F: Flavor> ser::SerializeTupleStruct for &mut WireSerializer<F> {
    type Ok = ();
    type Error = Fault;
    #[inline]
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Fault> {
        value.serialize(&mut **self)
    }
    #[inline]
    fn end(self) -> Result<(), Fault> {
        Ok(())
    }
}

impl<F: Flavor> ser::SerializeStruct for &mut WireSerializer<F> {
    type Ok = ();
    type Error = Fault;
    #[inline]
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Fault> {
        self.field = key;
        value.serialize(&mut **self)
    }
    #[inline]
    fn end(self) -> Result<(), Fault> {
        Ok(())
    }
}
