//! The QFabric prototype's golden vectors (copied verbatim from
//! `shared/reference/qfabric-abi-v1/golden-vectors.json`): every frame decodes to its value and
//! the value re-encodes to the same bytes.

use qf_abi::{decode_frame, encode_frame, EffectClass, Frame, MessageKind, Status};
use serde::{Deserialize, Serialize};

// The reference declarations (declarations.json), written by hand here so this test does not
// depend on the generator it is meant to check.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct AddRequest {
    a: i32,
    b: i32,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct ProbeRequest {
    sequence: u64,
    temperature: f32,
    gain: f64,
    offsets: [i16; 3],
    enabled: bool,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct ProbeResponse {
    accepted: bool,
    checksum: u32,
}

#[derive(Deserialize)]
struct Vector {
    name: String,
    frame_hex: String,
    payload_hex: String,
    #[serde(rename = "type")]
    type_name: String,
    value: serde_json::Value,
}

#[derive(Deserialize)]
struct Vectors {
    vectors: Vec<Vector>,
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex in the reference file"))
        .collect()
}

fn vectors() -> Vec<Vector> {
    let text = include_str!("data/golden-vectors.json");
    serde_json::from_str::<Vectors>(text)
        .expect("golden-vectors.json parses")
        .vectors
}

/// Decodes the payload as `T`, compares with the JSON value, re-encodes the frame.
fn round_trip<T>(vector: &Vector, frame: &Frame<'_>, bytes: &[u8])
where
    T: Serialize + for<'de> Deserialize<'de> + PartialEq + std::fmt::Debug,
{
    let decoded: T = frame
        .payload_as()
        .unwrap_or_else(|e| panic!("{}: {e}", vector.name));
    let expected: T = serde_json::from_value(vector.value.clone()).expect("value matches type");
    assert_eq!(decoded, expected, "{}: decoded value", vector.name);
    let mut out = [0u8; qf_abi::MAX_FRAME_LEN];
    let len = encode_frame(&frame.header, &expected, &mut out).expect("re-encodes");
    assert_eq!(&out[..len], bytes, "{}: re-encoded bytes", vector.name);
}

#[test]
fn every_golden_frame_decodes_to_its_value_and_reencodes_to_the_same_bytes() {
    let vectors = vectors();
    assert_eq!(vectors.len(), 3);
    for vector in &vectors {
        let bytes = unhex(&vector.frame_hex);
        let frame = decode_frame(&bytes).unwrap_or_else(|e| panic!("{}: {e}", vector.name));
        assert_eq!(
            frame.payload,
            unhex(&vector.payload_hex).as_slice(),
            "{}",
            vector.name
        );
        match vector.type_name.as_str() {
            "AddRequest" => round_trip::<AddRequest>(vector, &frame, &bytes),
            "ProbeRequest" => round_trip::<ProbeRequest>(vector, &frame, &bytes),
            "ProbeResponse" => round_trip::<ProbeResponse>(vector, &frame, &bytes),
            other => panic!("unexpected type {other}"),
        }
    }
}

#[test]
fn add_request_header_fields_are_read_big_endian() {
    let vector = vectors()
        .into_iter()
        .find(|v| v.name == "add-request-integer-boundaries");
    let bytes = unhex(&vector.expect("vector present").frame_hex);
    let header = decode_frame(&bytes).expect("valid").header;
    assert_eq!(header.kind, MessageKind::Request);
    assert_eq!(header.effect, EffectClass::Pure);
    assert_eq!(header.status, Status::Ok);
    assert_eq!(header.task_id, 1);
    assert_eq!(header.invocation_id, 0x0102_0304_0506_0708);
    assert_eq!(header.epoch, 7);
    assert_eq!(header.contract_id, 11);
    assert_eq!(header.deadline_us, 50_000);
}

#[test]
fn probe_response_is_a_response_with_status_ok_for_task_2() {
    let vector = vectors().into_iter().find(|v| v.name == "probe-response");
    let bytes = unhex(&vector.expect("vector present").frame_hex);
    let header = decode_frame(&bytes).expect("valid").header;
    assert_eq!(header.kind, MessageKind::Response);
    assert_eq!(header.status, Status::Ok);
    assert_eq!(header.task_id, 2);
    assert_eq!(header.invocation_id, u64::MAX);
    assert_eq!(header.epoch, u32::MAX);
}
