//! Generates `declared.rs` (types + `Task` table) from `qtasks.toml` with qf-schema, so the wire
//! types are never hand-edited. An invalid declaration stops the build here, before any target
//! code is compiled, with every broken rule listed.

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"),
    );
    let declarations = manifest.join("qtasks.toml");
    println!("cargo:rerun-if-changed={}", declarations.display());
    let text = match std::fs::read_to_string(&declarations) {
        Ok(text) => text,
        Err(error) => {
            eprintln!("reading {}: {error}", declarations.display());
            std::process::exit(1);
        }
    };
    let schema = match qf_schema::load_str(&text, "crates/qf-tasks/qtasks.toml", false) {
        Ok(schema) => schema,
        Err(errors) => {
            eprintln!("{errors}");
            std::process::exit(1);
        }
    };
    let out =
        PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("declared.rs");
    let code = qf_schema::rust::generate(&schema, "crates/qf-tasks/qtasks.toml");
    if let Err(error) = std::fs::write(&out, code) {
        eprintln!("writing {}: {error}", out.display());
        std::process::exit(1);
    }
}
