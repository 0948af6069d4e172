//! `qf-board-guest`: runs inside the QEMU guest of the virtual board and talks to the emulated
//! MCU the way a Linux application does: through Linux's own `rpmsg_char` (`/dev/rpmsg_ctrl0`
//! creates an endpoint to the MCU's `qfabric` channel, `/dev/rpmsgN` carries one message per
//! read/write). Every reply is checked against the same dispatcher (`qf_tasks::serve`) run
//! locally on the request, so a reply is right only if it is byte-for-byte what the MCU's code
//! must answer.
//!
//! Usage: `qf-board-guest frames|sizes|latency [--count N] [--epoch E]`; prints one summary line
//! and exits 0 on success, 1 on the first failure (with the frame that failed).

mod endpoint;
mod traffic;

use anyhow::{bail, Context, Result};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Err(e) = run(&args) {
        println!("qf-board-guest: error: {e:#}");
        std::process::exit(1);
    }
}

fn flag(args: &[String], name: &str, default: u64) -> Result<u64> {
    match args.iter().position(|a| a == name) {
        None => Ok(default),
        Some(i) => {
            let text = args
                .get(i + 1)
                .with_context(|| format!("{name} needs a value"))?;
            text.parse()
                .with_context(|| format!("{name} {text}: not a number"))
        }
    }
}

fn run(args: &[String]) -> Result<()> {
    let command = args.get(1).map(String::as_str).unwrap_or("");
    let count = flag(args, "--count", 10_000)?;
    let epoch = u32::try_from(flag(args, "--epoch", 1)?).context("--epoch must fit u32")?;
    let mut ep = endpoint::Endpoint::open_qfabric()?;
    let result = match command {
        "frames" => traffic::frames(&mut ep, count, epoch),
        "sizes" => traffic::sizes(&mut ep, epoch),
        "latency" => traffic::latency(&mut ep, count, epoch),
        other => bail!("unknown command '{other}' (frames, sizes, latency)"),
    };
    let closed = ep.destroy();
    result.and(closed)
}
