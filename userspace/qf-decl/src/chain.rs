//! Resident-chain control frames ([`qf_abi::chain`]) for the tools: their payloads decoded to
//! JSON for `qf abi decode`, and the golden vectors the C header carries.

use anyhow::{anyhow, Result};
use qf_abi::chain::{ChainInstall, ChainList, ChainListRequest, ChainOp, ChainRef, ChainStatus};
use qf_abi::{Header, MessageKind, Status};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

/// The operation's name and its payload as JSON, for a control frame (`None`: not one).
/// A refusal (status other than OK, empty payload) has no payload value.
pub fn decode_payload(
    header: &Header,
    payload: &[u8],
) -> Option<Result<(&'static str, Option<Value>)>> {
    let op = ChainOp::from_task_id(header.task_id)?;
    let type_name = match header.kind {
        MessageKind::Request => op.request_type(),
        MessageKind::Response => op.response_type(),
    };
    if header.kind == MessageKind::Response && header.status != Status::Ok && payload.is_empty() {
        return Some(Ok((op.name(), None)));
    }
    let value = match type_name {
        "ChainInstall" => typed::<ChainInstall>(payload),
        "ChainListRequest" => typed::<ChainListRequest>(payload),
        "ChainStatus" => typed::<ChainStatus>(payload),
        "ChainList" => typed::<ChainList>(payload),
        _ => typed::<ChainRef>(payload),
    };
    Some(
        value
            .map(|value| (op.name(), Some(value)))
            .map_err(|e| anyhow!("bad payload: {type_name}: {e}")),
    )
}

fn typed<T: DeserializeOwned + Serialize>(payload: &[u8]) -> Result<Value> {
    let value: T = qf_abi::decode_payload(payload).map_err(|error| {
        anyhow!(
            "{} at offset {} ({}): {}",
            error.status,
            error.offset + qf_abi::HEADER_LEN,
            error.field,
            error.problem
        )
    })?;
    Ok(serde_json::to_value(value)?)
}

pub use qf_schema::c::golden_vectors;
