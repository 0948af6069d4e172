//! The QFabric prototype's golden vectors (copied verbatim from
//! `shared/reference/qfabric-abi-v1/golden-vectors.json`): every frame decodes to its value and
//! the value re-encodes to the same bytes.

mod common;

use common::{round_trip, unhex, Vector};
use qf_abi::{decode_frame, EffectClass, MessageKind, Status};
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

fn vectors() -> Vec<Vector> {
    common::vectors(include_str!("data/golden-vectors.json"))
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
