//! decode(encode(x)) == x for every declared type, and each encodes to its declared size.

use proptest::prelude::*;
use qf_abi::{decode_payload, encode_payload, encoded_len, WireSize};
use qf_tasks::{
    AddRequest, AddResponse, Crc32Request, Crc32Response, FirRequest, FirResponse, ProbeRequest,
    ProbeResponse, Task,
};

fn round_trips<T>(value: T) -> Result<(), TestCaseError>
where
    T: serde::Serialize + serde::de::DeserializeOwned + WireSize + PartialEq + std::fmt::Debug,
{
    let mut buffer = [0u8; 988];
    let len = encode_payload(&value, &mut buffer).expect("declared values encode");
    prop_assert_eq!(len, T::WIRE_SIZE);
    prop_assert_eq!(encoded_len(&value).unwrap(), T::WIRE_SIZE);
    prop_assert_eq!(decode_payload::<T>(&buffer[..len]).expect("decodes"), value);
    Ok(())
}

fn finite_f32() -> impl Strategy<Value = f32> {
    any::<f32>().prop_filter("finite", |v| v.is_finite())
}

fn finite_f64() -> impl Strategy<Value = f64> {
    any::<f64>().prop_filter("finite", |v| v.is_finite())
}

proptest! {
    #[test]
    fn add_types(a in any::<i32>(), b in any::<i32>()) {
        round_trips(AddRequest { a, b })?;
        round_trips(AddResponse { value: a })?;
    }

    #[test]
    fn probe_types(sequence in any::<u64>(), temperature in finite_f32(), gain in finite_f64(),
                   offsets in any::<[i16; 3]>(), enabled in any::<bool>(), checksum in any::<u32>()) {
        round_trips(ProbeRequest { sequence, temperature, gain, offsets, enabled })?;
        round_trips(ProbeResponse { accepted: enabled, checksum })?;
    }

    #[test]
    fn crc32_types(low in any::<[u8; 32]>(), high in any::<[u8; 32]>(), crc in any::<u32>()) {
        let mut block = [0u8; 64];
        block[..32].copy_from_slice(&low);
        block[32..].copy_from_slice(&high);
        round_trips(Crc32Request { block })?;
        round_trips(Crc32Response { crc })?;
    }

    #[test]
    fn fir_types(samples in any::<[i16; 32]>()) {
        round_trips(FirRequest { samples })?;
        round_trips(FirResponse { samples })?;
    }
}

#[test]
fn the_task_table_sizes_match_the_types() {
    assert_eq!(Task::Add.request_size(), AddRequest::WIRE_SIZE);
    assert_eq!(Task::Add.response_size(), AddResponse::WIRE_SIZE);
    assert_eq!(Task::AbiProbe.request_size(), ProbeRequest::WIRE_SIZE);
    assert_eq!(Task::Crc32.request_size(), Crc32Request::WIRE_SIZE);
    assert_eq!(Task::FirX512.response_size(), FirResponse::WIRE_SIZE);
}
