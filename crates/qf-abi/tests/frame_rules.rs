//! Each defect a frame can have maps to its status, at the right offset and field, without
//! panicking and without reading past the input.

use qf_abi::{
    decode_frame, decode_payload, encode_frame, encode_frame_raw, encode_payload, EffectClass,
    Header, Problem, Status, MAX_FRAME_LEN, MAX_PAYLOAD_LEN,
};
use serde::{Deserialize, Serialize};

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Flags {
    on: bool,
    level: f32,
}

/// A valid request frame carrying `payload_len` zero bytes.
fn valid_frame(payload_len: usize) -> Vec<u8> {
    let mut out = vec![0u8; 36 + payload_len];
    let header = Header::request(9, EffectClass::Stateful, 1, 1);
    let payload = vec![0u8; payload_len];
    encode_frame_raw(&header, &payload, &mut out).expect("encodes");
    out
}

#[test]
fn a_frame_longer_than_1024_bytes_is_oversized_before_anything_is_read() {
    // Garbage everywhere: only the length may be looked at.
    let bytes = vec![0xAAu8; MAX_FRAME_LEN + 1];
    let error = decode_frame(&bytes).unwrap_err();
    assert_eq!(error.status, Status::Oversized);
    assert_eq!(
        error.problem,
        Problem::TooLong {
            len: 1025,
            max: 1024
        }
    );
}

#[test]
fn the_largest_frame_is_accepted() {
    let bytes = valid_frame(MAX_PAYLOAD_LEN);
    assert_eq!(bytes.len(), MAX_FRAME_LEN);
    assert_eq!(
        decode_frame(&bytes)
            .expect("1024 bytes is allowed")
            .payload
            .len(),
        988
    );
}

#[test]
fn a_declared_payload_length_above_988_is_oversized() {
    let mut bytes = valid_frame(0);
    bytes[32..34].copy_from_slice(&989u16.to_be_bytes());
    let error = decode_frame(&bytes).unwrap_err();
    assert_eq!(
        (error.status, error.offset, error.field),
        (Status::Oversized, 32, "payload_len")
    );
}

#[test]
fn every_prefix_shorter_than_the_header_is_malformed() {
    let bytes = valid_frame(4);
    for len in 0..36 {
        let error = decode_frame(&bytes[..len]).unwrap_err();
        assert_eq!(error.status, Status::Malformed, "prefix of {len}");
        assert_eq!(error.field, "header");
    }
}

#[test]
fn declared_length_must_equal_received_length() {
    let bytes = valid_frame(4);
    let error = decode_frame(&bytes[..39]).unwrap_err();
    assert_eq!(
        error.problem,
        Problem::LengthMismatch {
            declared: 4,
            actual: 3
        }
    );
    let mut longer = bytes.clone();
    longer.push(0);
    let error = decode_frame(&longer).unwrap_err();
    assert_eq!(
        error.problem,
        Problem::LengthMismatch {
            declared: 4,
            actual: 5
        }
    );
    assert_eq!(error.status, Status::Malformed);
}

#[test]
fn header_defects_map_to_their_status_offset_and_field() {
    let cases: &[(usize, u8, Status, &str)] = &[
        (0, b'X', Status::Malformed, "magic"),
        (4, 2, Status::VersionMismatch, "version"),
        (4, 0, Status::VersionMismatch, "version"),
        (5, 3, Status::Malformed, "kind"),
        (6, 0, Status::Malformed, "effect"),
        (6, 5, Status::Malformed, "effect"),
        (7, 8, Status::Malformed, "status"),
        (7, 1, Status::Malformed, "status"), // a request must carry status 0
        (35, 1, Status::Malformed, "flags"),
        (34, 0x80, Status::Malformed, "flags"),
    ];
    for &(offset, value, status, field) in cases {
        let mut bytes = valid_frame(0);
        bytes[offset] = value;
        let error = decode_frame(&bytes).unwrap_err();
        assert_eq!(error.status, status, "byte {offset} = {value}");
        assert_eq!(error.field, field, "byte {offset} = {value}");
        assert!(
            error.offset <= offset,
            "byte {offset}: reported {}",
            error.offset
        );
    }
}

#[test]
fn bool_bytes_other_than_00_and_01_are_malformed_and_named() {
    let error = decode_payload::<Flags>(&[0x02, 0, 0, 0, 0]).unwrap_err();
    assert_eq!(error.status, Status::Malformed);
    assert_eq!((error.offset, error.field), (0, "on"));
    assert_eq!(error.problem, Problem::BadBool { found: 2 });
}

#[test]
fn nan_and_infinities_are_malformed_in_both_directions() {
    for bits in [
        f32::NAN.to_bits(),
        f32::INFINITY.to_bits(),
        f32::NEG_INFINITY.to_bits(),
    ] {
        let mut payload = vec![1u8];
        payload.extend_from_slice(&bits.to_be_bytes());
        let error = decode_payload::<Flags>(&payload).unwrap_err();
        assert_eq!(
            (error.status, error.offset, error.field),
            (Status::Malformed, 1, "level")
        );
        assert_eq!(error.problem, Problem::NonFiniteFloat);
        let value = Flags {
            on: true,
            level: f32::from_bits(bits),
        };
        let error = encode_payload(&value, &mut [0u8; 16]).unwrap_err();
        assert_eq!(error.problem, Problem::NonFiniteFloat);
    }
}

#[test]
fn truncated_and_trailing_payloads_are_malformed() {
    let error = decode_payload::<Flags>(&[1, 0, 0]).unwrap_err();
    assert_eq!(
        error.problem,
        Problem::Truncated {
            needed: 4,
            available: 2
        }
    );
    assert_eq!(error.field, "level");
    let error = decode_payload::<Flags>(&[1, 0, 0, 0, 0, 9]).unwrap_err();
    assert_eq!(error.problem, Problem::TrailingBytes { count: 1 });
}

#[test]
fn payload_errors_from_a_frame_count_offsets_from_the_frame_start() {
    let mut out = [0u8; 64];
    let header = Header::request(3, EffectClass::Pure, 5, 0);
    let len = encode_frame(
        &header,
        &Flags {
            on: true,
            level: 1.0,
        },
        &mut out,
    )
    .unwrap();
    out[36] = 7;
    let frame = decode_frame(&out[..len]).unwrap();
    let error = frame.payload_as::<Flags>().unwrap_err();
    assert_eq!((error.offset, error.field), (36, "on"));
}

#[test]
fn shapes_without_a_fixed_size_are_refused() {
    let mut out = [0u8; 64];
    let error = encode_payload("text", &mut out).unwrap_err();
    assert!(matches!(error.problem, Problem::UnsupportedShape { .. }));
    let error = encode_payload(&Some(1u8), &mut out).unwrap_err();
    assert!(matches!(error.problem, Problem::UnsupportedShape { .. }));
    let error = encode_payload(&[1u8, 2][..], &mut out).unwrap_err();
    assert!(matches!(error.problem, Problem::UnsupportedShape { .. }));
}

#[test]
fn a_payload_longer_than_988_bytes_is_oversized_when_encoding() {
    #[derive(Serialize)]
    struct Big {
        #[serde(serialize_with = "qf_abi::codec::serialize_array")]
        bytes: [u8; 989],
    }
    let mut out = [0u8; MAX_FRAME_LEN];
    let error = encode_frame(
        &Header::request(1, EffectClass::Pure, 1, 0),
        &Big { bytes: [0; 989] },
        &mut out,
    )
    .unwrap_err();
    assert_eq!(error.status, Status::Oversized);
}

#[test]
fn a_short_output_buffer_is_reported_not_overrun() {
    let mut out = [0u8; 40];
    let header = Header::request(1, EffectClass::Pure, 1, 0);
    let error = encode_frame(&header, &(1u32, 2u32), &mut out).unwrap_err();
    assert!(matches!(error.problem, Problem::OutputFull { .. }));
}
