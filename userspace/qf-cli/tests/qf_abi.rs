//! `qf abi` through the real binary: output on stdout and exit status 0 for a good frame; the
//! status name, offset and field on stderr and a failing exit status for a bad one.

use std::process::Command;

const GOLDEN_ADD: &str =
    "5146414201010100000000010102030405060708000000070000000b0000c35000080000800000007fffffff";

fn qf_abi(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_qf"))
        .arg("abi")
        .args(args)
        .output()
        .expect("qf runs")
}

#[test]
fn decode_prints_json_and_succeeds() {
    let output = qf_abi(&["decode", GOLDEN_ADD]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(r#""payload":{"a":-2147483648,"b":2147483647}"#),
        "{stdout}"
    );
}

#[test]
fn a_bad_frame_fails_naming_status_offset_and_field() {
    let bad = GOLDEN_ADD.replacen("51464142", "51464143", 1);
    let output = qf_abi(&["decode", &bad]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("malformed at offset 0 (magic)"), "{stderr}");
}

#[test]
fn encode_prints_lowercase_hex() {
    let output = qf_abi(&[
        "encode",
        "--task",
        "add",
        "--kind",
        "request",
        "--invocation",
        "72623859790382856",
        "--epoch",
        "7",
        "--contract",
        "11",
        "--deadline-us",
        "50000",
        r#"{"a": -2147483648, "b": 2147483647}"#,
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), GOLDEN_ADD);
}

#[test]
fn decode_reads_the_frame_from_stdin_given_dash() {
    use std::io::Write as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_qf"))
        .args(["abi", "decode", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("qf runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(format!("{GOLDEN_ADD}\n").as_bytes())
        .expect("frame written");
    let output = child.wait_with_output().expect("qf ends");
    assert!(output.status.success());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(r#""payload":{"a":-2147483648,"b":2147483647}"#),
        "{stdout}"
    );
}
