//! `qf abi decode|encode|check|generate` as a user sees them (through `cli::execute`).

use clap::Parser;
use qf_decl::cli::{execute, AbiArgs};
use serde_json::{json, Value};

#[derive(Parser)]
struct Qf {
    #[command(flatten)]
    abi: AbiArgs,
}

/// Runs `qf abi ARGS...`, returning stdout or the error message.
fn qf_abi(args: &[&str]) -> Result<String, String> {
    let parsed = Qf::try_parse_from(std::iter::once("abi").chain(args.iter().copied()))
        .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    execute(&parsed.abi, &mut out).map_err(|e| format!("{e:#}"))?;
    Ok(String::from_utf8(out).expect("utf-8"))
}

fn golden() -> Vec<Value> {
    let text = include_str!("../../../crates/qf-abi/tests/data/golden-vectors.json");
    let file: Value = serde_json::from_str(text).unwrap();
    file["vectors"].as_array().unwrap().clone()
}

#[test]
fn decode_prints_the_header_and_the_reference_value_of_every_golden_vector() {
    for vector in golden() {
        let out = qf_abi(&["decode", vector["frame_hex"].as_str().unwrap()]).unwrap();
        let decoded: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(decoded["payload"], vector["value"], "{}", vector["name"]);
        assert_eq!(decoded["version"], 1);
        assert_eq!(decoded["flags"], 0);
        assert_eq!(decoded["effect"], "pure");
        assert_eq!(decoded["status"], "ok");
    }
    let add = &golden()[0];
    let decoded: Value =
        serde_json::from_str(&qf_abi(&["decode", add["frame_hex"].as_str().unwrap()]).unwrap())
            .unwrap();
    assert_eq!(
        decoded,
        json!({"version": 1, "kind": "request", "effect": "pure", "status": "ok", "task_id": 1,
               "invocation_id": 0x0102_0304_0506_0708u64, "epoch": 7, "contract_id": 11,
               "deadline_us": 50000, "flags": 0, "payload_len": 8, "task": "add",
               "payload": {"a": -2147483648i64, "b": 2147483647}})
    );
}

#[test]
fn encode_reproduces_every_golden_frame() {
    for vector in golden() {
        let name = vector["name"].as_str().unwrap();
        let frame = vector["frame_hex"].as_str().unwrap();
        let decoded: Value = serde_json::from_str(&qf_abi(&["decode", frame]).unwrap()).unwrap();
        let args = [
            "encode".to_string(),
            "--task".into(),
            decoded["task"].as_str().unwrap().into(),
            "--kind".into(),
            decoded["kind"].as_str().unwrap().into(),
            "--invocation".into(),
            decoded["invocation_id"].to_string(),
            "--epoch".into(),
            decoded["epoch"].to_string(),
            "--contract".into(),
            decoded["contract_id"].to_string(),
            "--deadline-us".into(),
            decoded["deadline_us"].to_string(),
            vector["value"].to_string(),
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_eq!(qf_abi(&args).unwrap().trim(), frame, "{name}");
    }
}

#[test]
fn decode_names_status_offset_and_field_of_a_bad_frame() {
    let frame = golden()[0]["frame_hex"].as_str().unwrap().to_string();
    let bad_version = format!("{}02{}", &frame[..8], &frame[10..]);
    let error = qf_abi(&["decode", &bad_version]).unwrap_err();
    assert!(
        error.contains("version_mismatch")
            && error.contains("offset 4")
            && error.contains("version"),
        "{error}"
    );

    let probe = golden()[1]["frame_hex"].as_str().unwrap().to_string();
    let bad_bool = format!("{}02", &probe[..probe.len() - 2]);
    let error = qf_abi(&["decode", &bad_bool]).unwrap_err();
    assert!(
        error.contains("malformed")
            && error.contains("offset 62")
            && error.contains("ProbeRequest.enabled"),
        "{error}"
    );

    let nan = probe.replace("41480000", "7fc00000");
    let error = qf_abi(&["decode", &nan]).unwrap_err();
    assert!(
        error.contains("ProbeRequest.temperature") && error.contains("NaN"),
        "{error}"
    );

    let error = qf_abi(&["decode", "51464142zz"]).unwrap_err();
    assert!(error.contains("not a hex digit"), "{error}");
    let error = qf_abi(&["decode", &frame[..frame.len() - 2]]).unwrap_err();
    assert!(
        error.contains("payload_len") && error.contains("declared payload length 8"),
        "{error}"
    );
}

#[test]
fn an_undeclared_task_is_printed_with_payload_hex() {
    let out = qf_abi(&[
        "encode",
        "--task",
        "crc32",
        "--kind",
        "response",
        r#"{"crc": 3421780262}"#,
    ])
    .unwrap();
    let mut frame = out.trim().to_string();
    frame.replace_range(16..24, "000000ff"); // task id 255
    let decoded: Value = serde_json::from_str(&qf_abi(&["decode", &frame]).unwrap()).unwrap();
    assert_eq!(decoded["payload_hex"], "cbf43926");
    assert!(decoded.get("payload").is_none());
}

#[test]
fn encode_rejects_values_that_do_not_fit_naming_the_field() {
    let error = qf_abi(&[
        "encode",
        "--task",
        "add",
        "--kind",
        "request",
        r#"{"a": 1, "b": 2147483648}"#,
    ])
    .unwrap_err();
    assert!(
        error.contains("AddRequest.b") && error.contains("i32"),
        "{error}"
    );
    let error = qf_abi(&[
        "encode",
        "--task",
        "abi_probe",
        "--kind",
        "request",
        r#"{"sequence": 1, "temperature": 1.0, "gain": 2.0, "offsets": [1, 2], "enabled": true}"#,
    ])
    .unwrap_err();
    assert!(
        error.contains("ProbeRequest.offsets") && error.contains("expected 3 elements"),
        "{error}"
    );
    let error = qf_abi(&["encode", "--task", "nope", "--kind", "request", "{}"]).unwrap_err();
    assert!(
        error.contains("--task nope") && error.contains("fir_x512"),
        "{error}"
    );
    let error = qf_abi(&[
        "encode",
        "--task",
        "add",
        "--kind",
        "request",
        "--status",
        "stale",
        r#"{"a":1,"b":1}"#,
    ])
    .unwrap_err();
    assert!(
        error.contains("request always carries status ok"),
        "{error}"
    );
}

#[test]
fn an_error_response_can_be_encoded_with_a_null_payload() {
    let out = qf_abi(&[
        "encode",
        "--task",
        "add",
        "--kind",
        "response",
        "--status",
        "duplicate",
        "--invocation",
        "9",
        "null",
    ])
    .unwrap();
    let decoded: Value = serde_json::from_str(&qf_abi(&["decode", out.trim()]).unwrap()).unwrap();
    assert_eq!(
        (decoded["status"].as_str(), decoded["payload_len"].as_u64()),
        (Some("duplicate"), Some(0))
    );
    assert_eq!(decoded["payload_hex"], "");
}

#[test]
fn check_accepts_the_reference_and_the_qf_tasks_declarations_and_rejects_bad_files() {
    let manifest = env!("CARGO_MANIFEST_DIR");
    let out = qf_abi(&[
        "check",
        &format!("{manifest}/../../crates/qf-tasks/qtasks.toml"),
    ])
    .unwrap();
    assert!(
        out.contains("ok, 6 tasks") && out.contains("task fir_x512 id 6 pure"),
        "{out}"
    );
    let out = qf_abi(&[
        "check",
        &format!("{manifest}/../../crates/qf-abi/tests/data/declarations.json"),
    ])
    .unwrap();
    assert!(out.contains("ok, 2 tasks"), "{out}");
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "[types.S]\nkind = \"struct\"\nfields = [{ name = \"s\", type = \"string\" }]\n",
    )
    .unwrap();
    let error = qf_abi(&["check", bad.to_str().unwrap()]).unwrap_err();
    assert!(
        error.contains("bad.toml") && error.contains("field `s`") && error.contains("[no-strings]"),
        "{error}"
    );
    let error = qf_abi(&["check", "/nonexistent/qtasks.toml"]).unwrap_err();
    assert!(
        error.contains("/nonexistent/qtasks.toml") && error.contains("cannot read"),
        "{error}"
    );
}

#[test]
fn generate_writes_rust_and_c_named_after_the_file() {
    let manifest = env!("CARGO_MANIFEST_DIR");
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("generated");
    let out = qf_abi(&[
        "generate",
        &format!("{manifest}/../../crates/qf-tasks/qtasks.toml"),
        "--out",
        out_dir.to_str().unwrap(),
    ])
    .unwrap();
    assert!(
        out.contains("qtasks.rs") && out.contains("qtasks.h"),
        "{out}"
    );
    let rust = std::fs::read_to_string(out_dir.join("qtasks.rs")).unwrap();
    assert!(rust.contains("pub struct FirRequest") && rust.contains("pub enum Task"));
    let c = std::fs::read_to_string(out_dir.join("qtasks.h")).unwrap();
    assert!(c.contains("#ifndef QTASKS_H") && c.contains("typedef struct Crc32Request"));
}

/// The golden `add` request of the reference, as hex.
fn golden_add_hex() -> String {
    golden()
        .into_iter()
        .find(|v| v["frame_hex"].as_str().is_some())
        .map(|v| v["frame_hex"].as_str().unwrap().to_string())
        .expect("a golden frame")
}

#[test]
fn decode_reads_a_frame_from_a_file_as_hex_or_raw_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let hex = golden_add_hex();
    let from_argument = qf_abi(&["decode", &hex]).expect("decodes");
    let hex_file = dir.path().join("frame.hex");
    std::fs::write(&hex_file, format!("0x{hex}\n")).unwrap();
    let path = hex_file.to_str().unwrap();
    assert_eq!(
        qf_abi(&["decode", "--file", path]),
        Ok(from_argument.clone())
    );
    let raw_file = dir.path().join("frame.bin");
    std::fs::write(&raw_file, qf_decl::cli::parse_hex(&hex).unwrap()).unwrap();
    let raw = raw_file.to_str().unwrap();
    assert_eq!(
        qf_abi(&["decode", "--file", raw, "--raw"]),
        Ok(from_argument)
    );
    let error = qf_abi(&["decode", "--file", raw]).expect_err("binary is not hex");
    assert!(error.contains("pass --raw for a binary frame"), "{error}");
}

#[test]
fn decode_reads_stdin_given_dash() {
    let hex = golden_add_hex();
    let mut stdin = std::io::Cursor::new(format!("{hex}\n"));
    let frame = qf_decl::cli::frame_input(Some("-"), None, false, &mut stdin).expect("reads");
    assert_eq!(frame, qf_decl::cli::parse_hex(&hex).unwrap());
}

#[test]
fn a_megabyte_frame_is_read_and_refused_as_oversized_and_endless_input_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.bin");
    let mut frame = qf_decl::cli::parse_hex(&golden_add_hex()).unwrap();
    frame.resize(1 << 20, 0);
    std::fs::write(&big, &frame).unwrap();
    let error = qf_abi(&["decode", "--file", big.to_str().unwrap(), "--raw"])
        .expect_err("a 1 MiB frame is oversized");
    assert!(
        error.contains("oversized") && error.contains("1048576"),
        "{error}"
    );
    let error = qf_abi(&["decode", "--file", "/dev/zero", "--raw"]).expect_err("endless");
    assert_eq!(
        error,
        "cannot read /dev/zero: a character device, not a regular file"
    );
    // Refused by its size before a byte is read: reading 1 TiB would never end.
    let huge = dir.path().join("huge.bin");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(1 << 40)
        .unwrap();
    let error =
        qf_abi(&["decode", "--file", huge.to_str().unwrap(), "--raw"]).expect_err("over the limit");
    assert_eq!(
        error,
        format!(
            "cannot read {}: 1099511627776 bytes (1048576 MiB), over the limit of 16777216 \
             bytes (16 MiB)",
            huge.display()
        )
    );
    let error = qf_abi(&["decode", "--file", "/nonexistent/frame.hex"]).expect_err("missing");
    assert_eq!(
        error,
        "cannot read /nonexistent/frame.hex: No such file or directory (os error 2)"
    );
}

/// `qf abi decode --file`, `check` and `decode --decl` given a FIFO nobody writes to return at
/// once, naming the file and what it is; a declaration file over its limit is refused by size.
#[test]
fn a_fifo_is_refused_at_once_and_an_oversized_declaration_file_by_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("frame.fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let name = fifo.display().to_string();
    for args in [
        vec!["decode", "--file", name.as_str(), "--raw"],
        vec!["check", name.as_str()],
        vec!["decode", "--decl", name.as_str(), "00"],
    ] {
        let args: Vec<String> = args.into_iter().map(String::from).collect();
        let error = qf_input::within(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            qf_abi(&args).expect_err("a FIFO is refused")
        });
        assert!(
            error.contains(&name) && error.contains("a FIFO, not a regular file"),
            "{error}"
        );
    }
    let huge = dir.path().join("huge.toml");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(1 << 40)
        .unwrap();
    let error = qf_abi(&["check", huge.to_str().unwrap()]).expect_err("over the limit");
    assert!(
        error.contains(&huge.display().to_string())
            && error.contains("over the limit of 1048576 bytes (1 MiB)"),
        "{error}"
    );
}
