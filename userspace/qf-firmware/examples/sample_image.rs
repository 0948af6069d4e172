//! Writes the sample firmware image of `qf_firmware::fixture` (an ELF32 with a flash and a RAM
//! segment and a full resource table), to try `qf firmware check` on:
//!
//!     cargo run -p qf-firmware --example sample_image -- /tmp/sample.elf [--elf64]
//!     qf firmware check /tmp/sample.elf

use anyhow::{bail, Context, Result};
use qf_firmware::fixture::{image, sample_table, Layout};

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (path, is_64) = match args.as_slice() {
        [path] => (path, false),
        [path, flag] if flag == "--elf64" => (path, true),
        _ => bail!("usage: sample_image OUT.elf [--elf64]"),
    };
    let layout = Layout {
        is_64,
        ..Layout::default()
    };
    let built = image(&sample_table(), &layout).context("building the image")?;
    std::fs::write(path, &built.bytes).with_context(|| format!("writing {path}"))?;
    println!(
        "{path}: {} bytes, .resource_table at file offset {:#x}",
        built.bytes.len(),
        built.table_at
    );
    Ok(())
}
