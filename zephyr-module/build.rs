//! Turns the Kconfig values the module's CMake passes in the environment into Rust constants
//! (`$OUT_DIR/config.rs`): the pool size, the trace ring and switch log sizes, the admission
//! switch and the executor's chain table size; and
//! `cfg(qf_thread_field)` when the patched kernel keeps a control-block pointer in every thread.

use std::{env, fs, path::Path};

fn number(name: &str, default: u32) -> u32 {
    println!("cargo:rerun-if-env-changed={name}");
    match env::var(name) {
        Ok(text) => text
            .parse()
            .unwrap_or_else(|_| panic!("{name}={text:?} is not a number")),
        Err(_) => default,
    }
}

fn main() {
    let threads = number("QFABRIC_MAX_THREADS", 8);
    let events = number("QFABRIC_TRACE_EVENTS", 0);
    let switches = number("QFABRIC_TRACE_SWITCHES", 0);
    let admission = number("QFABRIC_ADMISSION", 0) != 0;
    let chains = number("QFABRIC_EXECUTOR_MAX_CHAINS", 0);
    println!("cargo::rustc-check-cfg=cfg(qf_thread_field)");
    if number("QFABRIC_THREAD_FIELD", 0) != 0 {
        println!("cargo::rustc-cfg=qf_thread_field");
    }
    assert!(
        (1..=255).contains(&threads),
        "QFABRIC_MAX_THREADS={threads} is outside 1..=255"
    );
    let out = Path::new(&env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("config.rs");
    fs::write(
        out,
        format!(
            "/// CONFIG_QFABRIC_MAX_THREADS.\npub const MAX_THREADS: usize = {threads};\n\
             /// CONFIG_QFABRIC_TRACE_EVENTS (0 without CONFIG_QFABRIC_TRACE).\n\
             pub const TRACE_EVENTS: usize = {events};\n\
             /// CONFIG_QFABRIC_TRACE_SWITCHES (0 without CONFIG_QFABRIC_TRACE).\n\
             pub const TRACE_SWITCHES: usize = {switches};\n\
             /// CONFIG_QFABRIC_ADMISSION.\npub const ADMISSION: bool = {admission};\n\
             /// CONFIG_QFABRIC_EXECUTOR_MAX_CHAINS (0 without the executor).\n\
             #[allow(dead_code)]\npub const MAX_CHAINS: usize = {chains};\n"
        ),
    )
    .expect("write config.rs");
}
