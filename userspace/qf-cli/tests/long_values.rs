//! An argument clap refuses is echoed in its error; a 100 KB one was echoed whole. `qf` shows
//! a long value cut (its first characters and its length), the rest of clap's message whole.

use std::process::Command;

fn qf_error(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_qf"))
        .args(args)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "clap's usage status");
    assert!(output.stdout.is_empty());
    String::from_utf8(output.stderr).unwrap()
}

#[test]
fn a_refused_100_kb_argument_is_shown_cut_and_the_message_kept() {
    let long = "7x".repeat(50_000);
    // An invalid value of a flag, and an argument clap does not expect.
    for args in [
        vec!["sim", "set.toml", "--max-events", long.as_str()],
        vec!["firmware", "check", "image.elf", long.as_str()],
    ] {
        let stderr = qf_error(&args);
        assert!(stderr.len() < 2_000, "{} bytes of error", stderr.len());
        assert!(stderr.contains("… (100000 bytes)"), "{stderr}");
        assert!(
            stderr.contains("For more information, try '--help'."),
            "the rest of clap's message kept: {stderr}"
        );
    }
}

#[test]
fn help_and_short_values_are_as_clap_writes_them() {
    let output = Command::new(env!("CARGO_BIN_EXE_qf"))
        .args(["sim", "--help"])
        .output()
        .unwrap();
    assert!(output.status.success());
    assert!(String::from_utf8_lossy(&output.stdout).contains("Usage: qf sim"));
    let stderr = qf_error(&["sim", "set.toml", "--max-events", "many"]);
    assert!(
        stderr.contains("invalid value 'many' for '--max-events"),
        "{stderr}"
    );
}
