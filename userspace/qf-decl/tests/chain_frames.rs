//! Resident-chain control frames in the tools: `qf abi decode` prints every golden vector's
//! value, the C header carries the vectors byte for byte and compiles, and no declaration may
//! take a control task id.

use std::process::Command;

use qf_abi::chain::GOLDEN_VECTORS_JSON;
use qf_decl::{cli, load_str, Rule};
use serde_json::Value;

fn vectors() -> Vec<Value> {
    let parsed: Value = serde_json::from_str(GOLDEN_VECTORS_JSON).unwrap();
    parsed["vectors"].as_array().unwrap().clone()
}

#[test]
fn decode_prints_every_chain_vector_with_its_operation_and_value() {
    let schema = cli::default_schema().unwrap();
    let vectors = vectors();
    assert_eq!(vectors.len(), 11);
    for vector in vectors {
        let name = vector["name"].as_str().unwrap();
        let bytes = cli::parse_hex(vector["frame_hex"].as_str().unwrap()).unwrap();
        let decoded = serde_json::to_value(cli::decode(&schema, &bytes).unwrap()).unwrap();
        let expected_task = if name == "chain-result-add" {
            "add".to_string()
        } else {
            let op = name.split('-').nth(1).unwrap();
            format!("chain_{op}")
        };
        assert_eq!(decoded["task"], expected_task, "{name}");
        if decoded["status"] == "ok" {
            assert_eq!(decoded["payload"], vector["value"], "{name}");
        } else {
            assert_eq!(
                decoded.get("payload"),
                None,
                "{name}: a refusal has no payload"
            );
            assert_eq!(decoded["payload_hex"], "", "{name}");
        }
    }
}

#[test]
fn a_control_frame_with_a_bad_payload_is_reported_not_printed() {
    let schema = cli::default_schema().unwrap();
    let vector = &vectors()[0];
    let mut bytes = cli::parse_hex(vector["frame_hex"].as_str().unwrap()).unwrap();
    bytes.truncate(bytes.len() - 1);
    bytes[33] -= 1; // payload length
    let error = cli::decode(&schema, &bytes).unwrap_err().to_string();
    assert!(error.contains("ChainInstall"), "{error}");
}

#[test]
fn a_declared_task_may_not_take_a_control_task_id() {
    let text = "protocol_version = 1\n[types.Ping]\nkind = \"struct\"\nfields = [{ name = \"value\", type = \"u32\" }]\n[[tasks]]\nname = \"ping\"\ntask_id = 4294967041\nrequest = \"Ping\"\nresponse = \"Ping\"\n";
    let errors = load_str(text, "test.toml", false).unwrap_err();
    let error = errors
        .0
        .iter()
        .find(|e| e.rule == Rule::ReservedTaskId)
        .unwrap_or_else(|| panic!("{errors}"));
    assert!(error.to_string().contains("0xffffff01"), "{error}");
}

#[test]
fn the_c_header_carries_the_chain_vectors_byte_for_byte() {
    let schema = cli::default_schema().unwrap();
    let header = qf_decl::c::generate(&schema, "crates/qf-tasks/qtasks.toml", "QTASKS_H");
    let mut program = String::from("#include \"qtasks.h\"\n#include <stdio.h>\n#include <string.h>\nint main(void) {\n    int failed = 0;\n");
    for vector in vectors() {
        let name = vector["name"].as_str().unwrap();
        let ident = name.to_uppercase().replace('-', "_");
        let hex = vector["frame_hex"].as_str().unwrap();
        let bytes = cli::parse_hex(hex).unwrap();
        let literal: String = bytes.iter().map(|b| format!("\\x{b:02x}")).collect();
        program += &format!(
            "    if (sizeof QF_CHAIN_VECTOR_{ident} != {len} || memcmp(QF_CHAIN_VECTOR_{ident}, \"{literal}\", {len}) != 0) {{ puts(\"{name}\"); failed = 1; }}\n",
            len = bytes.len()
        );
    }
    program += "    if (QF_CHAIN_INSTALL_TASK_ID != 0xffffff01u || QF_CHAIN_LIST_TASK_ID != 0xffffff06u) failed = 1;\n";
    program += "    if (QF_STATUS_OVER_BOUND != 8 || QF_STATUS_NOT_INSTALLED != 13 || QF_CHAIN_INSTALL_WIRE_SIZE != 154u) failed = 1;\n";
    program += "    if (QF_CHAIN_VECTOR_CHAIN_INSTALL_REFUSED_OVER_BOUND[7] != QF_STATUS_OVER_BOUND) failed = 1;\n";
    program += "    if (!failed) puts(\"ok\");\n    return failed;\n}\n";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("qtasks.h"), header).unwrap();
    std::fs::write(dir.path().join("main.c"), program).unwrap();
    let binary = dir.path().join("vectors");
    let compile = Command::new("cc")
        .args(["-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror", "-o"])
        .arg(&binary)
        .arg(dir.path().join("main.c"))
        .output()
        .expect("a C compiler");
    assert!(
        compile.status.success(),
        "{}",
        String::from_utf8_lossy(&compile.stderr)
    );
    let run = Command::new(&binary).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&run.stdout), "ok\n");
}
