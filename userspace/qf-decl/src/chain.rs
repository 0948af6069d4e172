//! Resident-chain control frames ([`qf_abi::chain`]) for the tools: their payloads decoded to
//! JSON for `qf abi decode`, and the constants and golden vectors the C header carries.

use std::fmt::Write as _;

use anyhow::{anyhow, Result};
use qf_abi::chain::{
    ChainInstall, ChainList, ChainListRequest, ChainOp, ChainRef, ChainStatus, CONTROL_EFFECT,
    GOLDEN_VECTORS_JSON, MAX_LISTED_CHAINS, TEMPLATE_CAPACITY,
};
use qf_abi::{Header, MessageKind, Status, WireSize};
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

/// The C header's section on resident-chain control: task ids, sizes, limits, and every golden
/// vector as a byte array (`QF_CHAIN_VECTOR_<NAME>`).
pub fn c_section(out: &mut String) {
    let _ = writeln!(
        out,
        "/* Resident-chain control (reserved task ids, effect stateful): see qf_abi::chain. */"
    );
    for op in ChainOp::ALL {
        let upper = op.name().to_uppercase();
        let _ = writeln!(out, "#define QF_{upper}_TASK_ID {:#010x}u", op.task_id());
    }
    let _ = writeln!(
        out,
        "#define QF_CHAIN_CONTROL_EFFECT QF_EFFECT_{}",
        CONTROL_EFFECT.name().to_uppercase()
    );
    let sizes = [
        ("CHAIN_INSTALL", ChainInstall::WIRE_SIZE),
        ("CHAIN_REF", ChainRef::WIRE_SIZE),
        ("CHAIN_STATUS", ChainStatus::WIRE_SIZE),
        ("CHAIN_LIST", ChainList::WIRE_SIZE),
        ("CHAIN_TEMPLATE_CAPACITY", TEMPLATE_CAPACITY),
        ("CHAIN_MAX_LISTED", MAX_LISTED_CHAINS),
    ];
    for (name, size) in sizes {
        let suffix = if name.ends_with("CAPACITY") || name.ends_with("LISTED") {
            ""
        } else {
            "_WIRE_SIZE"
        };
        let _ = writeln!(out, "#define QF_{name}{suffix} {size}u");
    }
    out.push('\n');
    for (name, bytes) in golden_vectors() {
        let ident = crate::c::upper_identifier(&name);
        let _ = writeln!(
            out,
            "static const uint8_t QF_CHAIN_VECTOR_{ident}[{}] = {{",
            bytes.len()
        );
        for row in bytes.chunks(16) {
            let cells: Vec<String> = row.iter().map(|b| format!("0x{b:02x}")).collect();
            let _ = writeln!(out, "    {},", cells.join(", "));
        }
        let _ = writeln!(out, "}};");
    }
    out.push('\n');
}

/// The golden vectors of `qf_abi::chain::GOLDEN_VECTORS_JSON`: (name, frame bytes).
pub fn golden_vectors() -> Vec<(String, Vec<u8>)> {
    let parsed: Value = serde_json::from_str(GOLDEN_VECTORS_JSON).unwrap_or(Value::Null);
    let vectors = parsed["vectors"].as_array().cloned().unwrap_or_default();
    vectors
        .iter()
        .filter_map(|vector| {
            let name = vector["name"].as_str()?.to_string();
            let hex = vector["frame_hex"].as_str()?;
            let bytes = crate::cli::parse_hex(hex).ok()?;
            Some((name, bytes))
        })
        .collect()
}
