//! The resident-chain control vectors (`golden/chain-vectors.json`): every frame decodes to its
//! value and the value re-encodes to the same bytes; refusals carry their status and no payload.

use qf_abi::chain::{
    ChainInstall, ChainList, ChainListRequest, ChainOp, ChainRef, ChainState, ChainStatus,
    CONTROL_EFFECT,
};
use qf_abi::{decode_frame, encode_frame, Frame, MessageKind, Status};
use serde::{Deserialize, Serialize};

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct AddResponse {
    value: i32,
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
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex in the vector file"))
        .collect()
}

fn vectors() -> Vec<Vector> {
    serde_json::from_str::<Vectors>(qf_abi::chain::GOLDEN_VECTORS_JSON)
        .expect("chain-vectors.json parses")
        .vectors
}

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
fn every_chain_vector_decodes_to_its_value_and_reencodes_to_the_same_bytes() {
    let vectors = vectors();
    assert_eq!(vectors.len(), 11);
    for vector in &vectors {
        let bytes = unhex(&vector.frame_hex);
        let frame = decode_frame(&bytes).unwrap_or_else(|e| panic!("{}: {e}", vector.name));
        assert_eq!(frame.payload, unhex(&vector.payload_hex), "{}", vector.name);
        match vector.type_name.as_str() {
            "ChainInstall" => round_trip::<ChainInstall>(vector, &frame, &bytes),
            "ChainRef" => round_trip::<ChainRef>(vector, &frame, &bytes),
            "ChainListRequest" => round_trip::<ChainListRequest>(vector, &frame, &bytes),
            "ChainStatus" => round_trip::<ChainStatus>(vector, &frame, &bytes),
            "ChainList" => round_trip::<ChainList>(vector, &frame, &bytes),
            "AddResponse" => round_trip::<AddResponse>(vector, &frame, &bytes),
            other => panic!("unexpected type {other}"),
        }
        if let Some(op) = ChainOp::from_task_id(frame.header.task_id) {
            assert_eq!(frame.header.effect, CONTROL_EFFECT, "{}", vector.name);
            let expected_type = match frame.header.kind {
                MessageKind::Request => op.request_type(),
                MessageKind::Response if frame.header.status == Status::Ok => op.response_type(),
                // A refusal carries no payload, like every rejection.
                MessageKind::Response => "ChainListRequest",
            };
            assert_eq!(vector.type_name, expected_type, "{}", vector.name);
        }
    }
}

#[test]
fn the_install_vector_carries_an_add_request_as_its_template() {
    let vector = vectors()
        .into_iter()
        .find(|v| v.name == "chain-install-request")
        .expect("present");
    let bytes = unhex(&vector.frame_hex);
    let frame = decode_frame(&bytes).unwrap();
    assert_eq!(frame.header.task_id, 0xFFFF_FF01);
    let install: ChainInstall = frame.payload_as().unwrap();
    let template = decode_frame(install.template().unwrap()).unwrap();
    assert_eq!(template.header.task_id, install.task_id);
    assert_eq!(template.header.invocation_id, 7 << 32);
    assert!(install.template[usize::from(install.template_len)..]
        .iter()
        .all(|&b| b == 0));
}

#[test]
fn refusals_name_their_reason_and_the_result_its_chain() {
    let find = |name: &str| {
        let vector = vectors().into_iter().find(|v| v.name == name).unwrap();
        unhex(&vector.frame_hex)
    };
    let over = find("chain-install-refused-over-bound");
    assert_eq!(
        decode_frame(&over).unwrap().header.status,
        Status::OverBound
    );
    let missing = find("chain-remove-refused-not-installed");
    assert_eq!(
        decode_frame(&missing).unwrap().header.status,
        Status::NotInstalled
    );
    let result = find("chain-result-add");
    let header = decode_frame(&result).unwrap().header;
    assert_eq!((header.contract_id, header.invocation_id >> 32), (7, 7));
    let list = find("chain-list-response");
    let list: ChainList = decode_frame(&list).unwrap().payload_as().unwrap();
    assert_eq!(
        ChainState::from_code(list.chains[1].state),
        Some(ChainState::Stopped)
    );
}
