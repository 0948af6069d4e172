//! What the golden-vector tests share: the vector file's shape and the round trip each vector
//! must pass (decode to the JSON value, re-encode to the same bytes).
#![allow(dead_code)]

use qf_abi::{encode_frame, Frame};
use serde::{Deserialize, Serialize};

/// One vector, in the reference's `golden-vectors.json` style.
#[derive(Deserialize)]
pub struct Vector {
    pub name: String,
    pub frame_hex: String,
    pub payload_hex: String,
    #[serde(rename = "type")]
    pub type_name: String,
    pub value: serde_json::Value,
}

#[derive(Deserialize)]
struct Vectors {
    vectors: Vec<Vector>,
}

/// The vectors of a vector file's text.
pub fn vectors(text: &str) -> Vec<Vector> {
    serde_json::from_str::<Vectors>(text)
        .expect("the vector file parses")
        .vectors
}

pub fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex in the vector file"))
        .collect()
}

/// Decodes the payload as `T`, compares with the JSON value, re-encodes the frame.
pub fn round_trip<T>(vector: &Vector, frame: &Frame<'_>, bytes: &[u8])
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
