//! The resident-chain control vectors (`golden/chain-vectors.json`): every frame decodes to its
//! value and the value re-encodes to the same bytes; refusals carry their status and no payload.

use qf_abi::chain::{
    ChainInstall, ChainList, ChainListRequest, ChainOp, ChainRef, ChainState, ChainStatus,
    CONTROL_EFFECT,
};
mod common;

use common::{round_trip, unhex, Vector};
use qf_abi::{decode_frame, MessageKind, Status};
use serde::{Deserialize, Serialize};

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct AddResponse {
    value: i32,
}

fn vectors() -> Vec<Vector> {
    common::vectors(qf_abi::chain::GOLDEN_VECTORS_JSON)
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
