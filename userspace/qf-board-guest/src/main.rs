//! `qf-board-guest`: runs inside the QEMU guest of the virtual board and talks to the emulated
//! MCU the way a Linux application does: through Linux's own `rpmsg_char` (`/dev/rpmsg_ctrl0`
//! creates an endpoint to the MCU's `qfabric` channel, `/dev/rpmsgN` carries one message per
//! read/write). Every reply is checked against the same dispatcher (`qf_tasks::serve`) run
//! locally on the request, so a reply is right only if it is byte-for-byte what the MCU's code
//! must answer.
//!
//! The `dev-*` commands do the same through the kernel dispatch device `/dev/qfabricN`
//! (module `qfabric_rpmsg`, `docs/qfabric-dev.md`) and check its error contract.
//!
//! Usage: `qf-board-guest frames|sizes|latency [--count N] [--epoch E]`,
//! `qf-board-guest chain-template [--epoch E]` (prints the resident chain's template request in
//! hex, for the emulator's `chain start`), `qf-board-guest chain --period-us P [--count N]
//! [--epoch E]` (checks the chain's results),
//! `qf-board-guest dev-frames|dev-latency [--count N] [--epoch E] [--dev PATH]`,
//! `qf-board-guest dev-concurrent [--threads T] [--count N] [--epoch E] [--dev PATH]`,
//! `qf-board-guest dev-abuse [--epoch E] [--dev PATH]`, `qf-board-guest dev-stats [--dev PATH]`
//! (drains the read queue, prints the counters; PATH defaults to /dev/qfabric0),
//! `qf-board-guest irq-fifo --name NAME --priority P` (threaded interrupt NAME at SCHED_FIFO P).
//! Prints one summary line and exits 0 on success, 1 on the first failure (with the frame that
//! failed).

mod abuse;
mod chain;
mod dev;
mod irq;
mod races;
mod stats;
mod traffic;

use std::time::Duration;

use anyhow::{bail, Context, Result};
use qf_agent::qfabric_dev::{Device, MAX_WAITERS};
use qf_agent::rpmsg_char::Endpoint;

/// The device the `dev-*` commands use unless `--dev` names another.
const DEFAULT_DEVICE: &str = "/dev/qfabric0";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Err(e) = run(&args) {
        println!("qf-board-guest: error: {e:#}");
        std::process::exit(1);
    }
}

/// The `--name value` pairs after the command; anything else is an error naming it.
struct Flags<'a>(Vec<(&'a str, &'a str)>);

impl<'a> Flags<'a> {
    fn parse(command: &str, rest: &'a [String], known: &[&str]) -> Result<Flags<'a>> {
        let mut pairs = Vec::new();
        let mut rest = rest.iter();
        while let Some(name) = rest.next() {
            if !known.contains(&name.as_str()) {
                bail!(
                    "{command}: unknown argument '{name}' (flags: {})",
                    known.join(", ")
                );
            }
            let value = rest
                .next()
                .with_context(|| format!("{command}: {name} needs a value"))?;
            pairs.push((name.as_str(), value.as_str()));
        }
        Ok(Flags(pairs))
    }

    /// The flag's value as a number at least `min`, `default` when absent (`None`: required).
    fn number(&self, name: &str, default: Option<u64>, min: u64) -> Result<u64> {
        let Some(&(_, text)) = self.0.iter().rev().find(|(n, _)| *n == name) else {
            return default.with_context(|| format!("{name} is required"));
        };
        let value: u64 = text
            .parse()
            .with_context(|| format!("{name} {text}: not a number"))?;
        if value < min {
            bail!("{name} {value}: must be at least {min}");
        }
        Ok(value)
    }

    /// The flag's value as given, `default` when absent.
    fn text(&self, name: &str, default: &'a str) -> &'a str {
        self.0
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
            .map_or(default, |&(_, text)| text)
    }

    fn epoch(&self) -> Result<u32> {
        let epoch = self.number("--epoch", Some(1), 0)?;
        u32::try_from(epoch).map_err(|_| anyhow::anyhow!("--epoch {epoch}: must fit 32 bits"))
    }
}

fn run(args: &[String]) -> Result<()> {
    let command = args.get(1).map(String::as_str).unwrap_or("");
    let rest = args.get(2..).unwrap_or_default();
    let known: &[&str] = match command {
        "frames" | "latency" => &["--count", "--epoch"],
        "sizes" | "chain-template" => &["--epoch"],
        "chain" => &["--count", "--period-us", "--epoch"],
        "dev-frames" | "dev-latency" => &["--count", "--epoch", "--dev"],
        "dev-concurrent" => &["--threads", "--count", "--epoch", "--dev"],
        "dev-abuse" => &["--epoch", "--dev"],
        "dev-stats" => &["--dev"],
        "irq-fifo" => &["--name", "--priority"],
        other => bail!("unknown command '{other}' (frames, sizes, latency, chain-template, chain, dev-frames, dev-concurrent, dev-abuse, dev-latency, dev-stats, irq-fifo)"),
    };
    let flags = Flags::parse(command, rest, known)?;
    let epoch = flags.epoch()?;
    if command == "chain-template" {
        println!("{}", chain::template_hex(epoch)?);
        return Ok(());
    }
    if command == "irq-fifo" {
        let name = flags.text("--name", "");
        if name.is_empty() {
            bail!("--name is required (the interrupt's name, e.g. qfabric-vring)");
        }
        return irq::set_fifo(name, flags.number("--priority", None, 1)?);
    }
    let count = flags.number("--count", Some(10_000), 1)?;
    if let Some(command) = command.strip_prefix("dev-") {
        return run_device(command, &flags, count, epoch);
    }
    let period = match command {
        "chain" => Some(Duration::from_micros(flags.number(
            "--period-us",
            None,
            1,
        )?)),
        _ => None,
    };
    let mut ep = Endpoint::open_qfabric()?;
    let result = match (command, period) {
        ("frames", _) => traffic::frames(count, epoch, 1, "frames", "", |mirror, request, what| {
            traffic::exchange(&mut ep, mirror, request, what)
        }),
        ("sizes", _) => traffic::sizes(&mut ep, epoch),
        ("latency", _) => traffic::latency(&mut ep, count, epoch),
        (_, Some(period)) => chain::chain(&mut ep, count, period, epoch),
        (other, None) => bail!("unknown command '{other}'"),
    };
    let closed = ep.destroy();
    result.and(closed)
}

/// The `dev-*` commands, on the device `--dev` names.
fn run_device(command: &str, flags: &Flags, count: u64, epoch: u32) -> Result<()> {
    let threads = flags.number("--threads", Some(4), 1)?;
    if threads > MAX_WAITERS as u64 {
        bail!("--threads {threads}: at most {MAX_WAITERS} callers may wait on one channel");
    }
    let device = Device::open(flags.text("--dev", DEFAULT_DEVICE))?;
    match command {
        "frames" => {
            let via = format!(", {}", device.path().display());
            traffic::frames(
                count,
                epoch,
                dev::FRAMES_FIRST_ID,
                "dev-frames",
                &via,
                |mirror, request, what| Ok(dev::exchange(&device, mirror, request, what)?.latency),
            )
        }
        "concurrent" => dev::concurrent(&device, threads, count, epoch),
        "abuse" => abuse::abuse(&device, epoch),
        "latency" => dev::latency(&device, count, epoch),
        "stats" => dev::stats(&device),
        other => bail!("unknown command 'dev-{other}'"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    fn error(words: &[&str]) -> String {
        format!("{:#}", run(&args(words)).unwrap_err())
    }

    #[test]
    fn bad_arguments_name_the_flag_and_value() {
        assert!(error(&["g", "chain-template", "--epoch", "x4"]).contains("--epoch x4"));
        assert!(error(&["g", "chain-template", "--epoch", "4294967296"]).contains("32 bits"));
        assert!(error(&["g", "chain-template", "--epcoh", "4"]).contains("'--epcoh'"));
        assert!(error(&["g", "chain-template", "--epoch"]).contains("--epoch needs a value"));
        assert!(error(&["g", "chain", "--count", "5"]).contains("--period-us is required"));
        assert!(error(&["g", "chain", "--period-us", "0"]).contains("--period-us 0"));
        assert!(error(&["g", "chain", "--count", "0", "--period-us", "10"]).contains("--count 0"));
        assert!(error(&["g", "chaos"]).contains("unknown command 'chaos'"));
    }

    #[test]
    fn device_commands_check_their_flags_before_opening_the_device() {
        assert!(error(&["g", "dev-frames", "--count", "0"]).contains("--count 0"));
        assert!(error(&["g", "dev-latency", "--count", "many"]).contains("--count many"));
        assert!(error(&["g", "dev-concurrent", "--threads", "0"]).contains("--threads 0"));
        let too_many = error(&["g", "dev-concurrent", "--threads", "33"]);
        assert!(too_many.contains("--threads 33: at most 32"), "{too_many}");
        assert!(error(&["g", "dev-abuse", "--count", "5"]).contains("unknown argument '--count'"));
        assert!(error(&["g", "dev-frames", "--threads", "2"]).contains("'--threads'"));
        assert!(error(&["g", "dev-concurrent", "--dev"]).contains("--dev needs a value"));
    }

    #[test]
    fn device_commands_name_the_device_they_cannot_open() {
        let missing = std::env::temp_dir().join(format!("qfabric-missing-{}", std::process::id()));
        let path = missing.to_string_lossy().into_owned();
        for command in ["dev-frames", "dev-concurrent", "dev-abuse", "dev-latency"] {
            let message = error(&["g", command, "--dev", &path]);
            assert!(message.contains(&path), "{command}: {message}");
        }
    }

    #[test]
    fn the_device_defaults_to_qfabric0_and_dev_names_another() {
        let rest = args(&["--dev", "/dev/qfabric3"]);
        let flags = Flags::parse("dev-frames", &rest, &["--dev"]).unwrap();
        assert_eq!(flags.text("--dev", DEFAULT_DEVICE), "/dev/qfabric3");
        let flags = Flags::parse("dev-frames", &[], &["--dev"]).unwrap();
        assert_eq!(flags.text("--dev", DEFAULT_DEVICE), "/dev/qfabric0");
    }

    #[test]
    fn flags_take_defaults_and_the_last_value_given() {
        let rest = args(&["--count", "7", "--count", "9"]);
        let flags = Flags::parse("frames", &rest, &["--count", "--epoch"]).unwrap();
        assert_eq!(flags.number("--count", Some(1), 1).unwrap(), 9);
        assert_eq!(flags.epoch().unwrap(), 1);
    }
}
