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
//! Commands (`qf-board-guest --help`, clap): `frames`, `sizes`, `latency`, `chain-template`,
//! `chain` (rpmsg_char); `dev-frames`, `dev-concurrent`, `dev-abuse`, `dev-latency`, `dev-stats`,
//! `dev-recv` (`--dev PATH`, default /dev/qfabric0); `irq-fifo --name NAME --priority P`;
//! `as-user --uid UID COMMAND...`.
//! Prints one summary line and exits 0 on success, 1 on the first failure (with the frame that
//! failed). `frames --until-gone` and `dev-frames --until-gone` succeed only when the MCU's
//! channel goes away during the run: replies first, then EPIPE (rpmsg_char) or ENODEV
//! (/dev/qfabricN).

mod abuse;
mod chain;
mod dev;
mod irq;
mod malformed;
mod races;
mod recv;
mod stats;
mod traffic;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use clap::{Args, Parser, Subcommand};
use nix::errno::Errno;
use qf_execution::qfabric_dev::{Device, MAX_WAITERS};
use qf_execution::rpmsg_char::{Endpoint, Eptdev};

/// The device the `dev-*` commands use unless `--dev` names another.
const DEFAULT_DEVICE: &str = "/dev/qfabric0";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Err(e) = run(&args) {
        println!("qf-board-guest: error: {e:#}");
        std::process::exit(1);
    }
}

#[derive(Debug, Parser)]
#[command(
    name = "qf-board-guest",
    args_override_self = true,
    about = "QFabric frames to the virtual board's MCU through rpmsg_char and /dev/qfabricN, every reply checked"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Frames through rpmsg_char, every reply compared with qf_tasks::serve.
    Frames(Frames),
    /// Every message length up to the rpmsg limit, then one byte more (EMSGSIZE).
    Sizes(Epoch),
    /// Malformed frames through rpmsg_char (bad header, bad payload length, unknown task,
    /// replayed invocation, stale epoch), each answered with its status.
    Malformed(Epoch),
    /// Round-trip percentiles of `add` through rpmsg_char.
    Latency(Traffic),
    /// Prints the resident chain's template request in hex, for `qf resident install --template`.
    ChainTemplate(Epoch),
    /// Checks the resident chain's results, byte for byte.
    Chain(ChainArgs),
    /// Frames through /dev/qfabricN.
    DevFrames(DevFrames),
    /// Callers sharing one /dev/qfabricN, each getting its own replies.
    DevConcurrent(DevConcurrent),
    /// Every documented error of /dev/qfabricN, races and random ioctls.
    DevAbuse(DevEpoch),
    /// Round-trip percentiles and the kernel's split through /dev/qfabricN.
    DevLatency(DevTraffic),
    /// Drains the read queue, then prints the counters as key=value words.
    DevStats(Dev),
    /// QF_IOC_RECV's contract; needs at least one unsolicited frame queued.
    DevRecv(Dev),
    /// Puts a threaded interrupt's kernel thread (irq/<N>-NAME) at SCHED_FIFO P.
    IrqFifo(IrqFifo),
    /// Runs COMMAND as user and group UID with no supplementary groups (the guest has no
    /// user database): a caller without permission on a device.
    AsUser(AsUser),
}

#[derive(Debug, Args)]
struct AsUser {
    /// The user and group id (e.g. 65534, nobody).
    #[arg(long)]
    uid: u32,
    /// The command and its arguments.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    command: Vec<String>,
}

/// Drops to `uid`:`uid` and runs `command` in place of this process.
fn as_user(args: &AsUser) -> Result<()> {
    use nix::unistd::{setgid, setgroups, setuid, Gid, Uid};
    use std::os::unix::process::CommandExt;
    setgroups(&[]).map_err(|e| anyhow::anyhow!("setgroups: {e}"))?;
    setgid(Gid::from_raw(args.uid)).map_err(|e| anyhow::anyhow!("setgid {}: {e}", args.uid))?;
    setuid(Uid::from_raw(args.uid)).map_err(|e| anyhow::anyhow!("setuid {}: {e}", args.uid))?;
    let error = std::process::Command::new(&args.command[0])
        .args(&args.command[1..])
        .exec();
    anyhow::bail!("running {}: {error}", args.command[0])
}

#[derive(Debug, Args)]
struct Epoch {
    /// The epoch of the requests (give each command a higher one than the last).
    #[arg(long, default_value_t = 1)]
    epoch: u32,
}

#[derive(Debug, Args)]
struct Traffic {
    /// Calls to make.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    count: u64,
    #[command(flatten)]
    epoch: Epoch,
    /// Cycle through every declared task (add, crc32, fir_x1, fir_x64, fir_x512) instead of
    /// add, crc32 and fir_x1 (frames and dev-frames).
    #[arg(long)]
    all_tasks: bool,
}

impl Traffic {
    fn tasks(&self) -> &'static [qf_tasks::Task] {
        if self.all_tasks {
            traffic::ALL_TASKS
        } else {
            traffic::DEFAULT_TASKS
        }
    }
}

#[derive(Debug, Args)]
struct Frames {
    #[command(flatten)]
    traffic: Traffic,
    /// The run is to be cut by the MCU's channel going away (a crash or reset of the MCU meanwhile):
    /// exit 0 only if at least one reply was right and the next call failed with the error of a
    /// vanished channel (EPIPE through rpmsg_char, ENODEV through /dev/qfabricN); a failure
    /// before any reply, a wrong reply, any other error, or every reply right is a failure.
    #[arg(long)]
    until_gone: bool,
}

impl Frames {
    /// How the run must end: complete, or cut with `gone`, the path's errno for a channel that
    /// went away.
    fn ending(&self, gone: Errno) -> traffic::Ending {
        if self.until_gone {
            traffic::Ending::Gone(gone)
        } else {
            traffic::Ending::Complete
        }
    }

    /// The run of `name` (its summary line ends with `via`) whose channel error is `gone`.
    fn run<'a>(&self, gone: Errno, first_id: u64, name: &'a str, via: &'a str) -> traffic::Run<'a> {
        traffic::Run {
            count: self.traffic.count,
            epoch: self.traffic.epoch.epoch,
            first_id,
            tasks: self.traffic.tasks(),
            ending: self.ending(gone),
            name,
            via,
        }
    }
}

#[derive(Debug, Args)]
struct ChainArgs {
    /// The chain's period.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    period_us: u64,
    #[command(flatten)]
    traffic: Traffic,
}

#[derive(Debug, Args)]
struct Dev {
    /// The kernel dispatch device.
    #[arg(long, default_value = DEFAULT_DEVICE)]
    dev: PathBuf,
}

#[derive(Debug, Args)]
struct DevTraffic {
    #[command(flatten)]
    traffic: Traffic,
    #[command(flatten)]
    dev: Dev,
}

#[derive(Debug, Args)]
struct DevFrames {
    #[command(flatten)]
    frames: Frames,
    #[command(flatten)]
    dev: Dev,
}

#[derive(Debug, Args)]
struct DevEpoch {
    #[command(flatten)]
    epoch: Epoch,
    #[command(flatten)]
    dev: Dev,
}

#[derive(Debug, Args)]
struct DevConcurrent {
    /// Threads sharing the device.
    #[arg(long, default_value_t = 4, value_parser = threads)]
    threads: u64,
    #[command(flatten)]
    traffic: Traffic,
    #[command(flatten)]
    dev: Dev,
}

/// `--threads`: 1 up to the callers one channel lets wait.
fn threads(text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(n @ 1..) if n <= MAX_WAITERS as u64 => Ok(n),
        Ok(n) => Err(format!(
            "{n}: 1 to {MAX_WAITERS} (at most {MAX_WAITERS} callers may wait on one channel)"
        )),
        Err(e) => Err(e.to_string()),
    }
}

#[derive(Debug, Args)]
struct IrqFifo {
    /// The interrupt's name (e.g. qfabric-vring).
    #[arg(long)]
    name: String,
    /// The SCHED_FIFO priority.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=99))]
    priority: u64,
}

fn run(args: &[String]) -> Result<()> {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help: not an error.
            print!("{e}");
            return Ok(());
        }
        Err(e) => {
            // One paragraph, without clap's own "error: " (main adds ours) or its --help hint.
            let text = e.render().to_string();
            let text = text.strip_prefix("error: ").unwrap_or(&text);
            let first = text.split("\n\n").next().unwrap_or(text).trim_end();
            return Err(anyhow::anyhow!("{first}"));
        }
    };
    match cli.command {
        Command::ChainTemplate(Epoch { epoch }) => {
            println!("{}", chain::template_hex(epoch)?);
            Ok(())
        }
        Command::IrqFifo(args) => irq::set_fifo(&args.name, args.priority),
        Command::AsUser(args) => as_user(&args),
        Command::DevFrames(args) => {
            let device = Device::open(&args.dev.dev)?;
            let via = format!(", {}", device.path().display());
            let run = args
                .frames
                .run(Errno::ENODEV, dev::FRAMES_FIRST_ID, "dev-frames", &via);
            traffic::frames(&run, |mirror, request, what| {
                Ok(dev::exchange(&device, mirror, request, what)?.latency)
            })
        }
        Command::DevConcurrent(args) => dev::concurrent(
            &Device::open(&args.dev.dev)?,
            args.threads,
            args.traffic.count,
            args.traffic.epoch.epoch,
        ),
        Command::DevAbuse(args) => abuse::abuse(&Device::open(&args.dev.dev)?, args.epoch.epoch),
        Command::DevLatency(args) => dev::latency(
            &Device::open(&args.dev.dev)?,
            args.traffic.count,
            args.traffic.epoch.epoch,
        ),
        Command::DevStats(args) => dev::stats(&Device::open(&args.dev)?),
        Command::DevRecv(args) => recv::check(&Device::open(&args.dev)?),
        Command::Frames(args) => {
            let run = args.run(Errno::EPIPE, 1, "frames", "");
            with_endpoint(|ep| {
                traffic::frames(&run, |mirror, request, what| {
                    traffic::exchange(ep, mirror, request, what)
                })
            })
        }
        // A resident chain may be sending to this endpoint meanwhile: its results are skipped.
        Command::Sizes(Epoch { epoch }) => {
            with_endpoint(|ep| traffic::sizes(ep, epoch, chain::is_result))
        }
        // A resident chain may be sending to this endpoint meanwhile: its results are skipped.
        Command::Malformed(Epoch { epoch }) => with_endpoint(|ep| {
            let mut mirror = traffic::Mirror::new(epoch);
            let summary = malformed::run(&mut mirror, epoch, |mirror, request, what| {
                traffic::checked(mirror, request, what, |request, reply| {
                    let n = traffic::carry(ep, request, reply, what, |m| Ok(chain::is_result(m)))?;
                    Ok((n, reply[..n].to_vec()))
                })
            })?;
            println!("{summary}");
            Ok(())
        }),
        Command::Latency(args) => {
            with_endpoint(|ep| traffic::latency(ep, args.count, args.epoch.epoch))
        }
        Command::Chain(args) => with_endpoint(|ep| {
            chain::chain(
                ep,
                args.traffic.count,
                Duration::from_micros(args.period_us),
                args.traffic.epoch.epoch,
            )
        }),
    }
}

/// Runs `body` on a fresh rpmsg_char endpoint to the MCU's channel, destroyed afterwards
/// unless its channel went away meanwhile (the kernel destroyed it then).
fn with_endpoint(body: impl FnOnce(&mut Endpoint) -> Result<()>) -> Result<()> {
    let mut ep = Endpoint::open_qfabric()?;
    let result = body(&mut ep);
    if Eptdev::hung_up(&ep) {
        return result;
    }
    let closed = ep.destroy();
    result.and(closed)
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

    fn parse(words: &[&str]) -> Command {
        Cli::try_parse_from(args(words)).unwrap().command
    }

    #[test]
    fn bad_arguments_name_the_flag_and_value() {
        let e = error(&["g", "chain-template", "--epoch", "x4"]);
        assert!(e.contains("'x4'") && e.contains("--epoch"), "{e}");
        let e = error(&["g", "chain-template", "--epoch", "4294967296"]);
        assert!(
            e.contains("'4294967296'") && e.contains("0..=4294967295"),
            "{e}"
        );
        assert!(error(&["g", "chain-template", "--epcoh", "4"]).contains("'--epcoh'"));
        let e = error(&["g", "chain-template", "--epoch"]);
        assert!(e.contains("a value is required for '--epoch"), "{e}");
        let e = error(&["g", "chain", "--count", "5"]);
        assert!(e.contains("required") && e.contains("--period-us"), "{e}");
        let e = error(&["g", "chain", "--period-us", "0"]);
        assert!(e.contains("'0'") && e.contains("--period-us"), "{e}");
        let e = error(&["g", "chain", "--count", "0", "--period-us", "10"]);
        assert!(e.contains("'0'") && e.contains("--count"), "{e}");
        assert!(error(&["g", "chaos"]).contains("'chaos'"));
        let e = error(&[
            "g",
            "irq-fifo",
            "--name",
            "qfabric-vring",
            "--priority",
            "100",
        ]);
        assert!(e.contains("'100'") && e.contains("--priority"), "{e}");
    }

    #[test]
    fn device_commands_check_their_flags_before_opening_the_device() {
        assert!(error(&["g", "dev-frames", "--count", "0"]).contains("'0'"));
        assert!(error(&["g", "dev-latency", "--count", "many"]).contains("'many'"));
        assert!(error(&["g", "dev-concurrent", "--threads", "0"]).contains("'0'"));
        let too_many = error(&["g", "dev-concurrent", "--threads", "33"]);
        assert!(too_many.contains("at most 32 callers"), "{too_many}");
        assert!(error(&["g", "dev-abuse", "--count", "5"]).contains("'--count'"));
        assert!(error(&["g", "dev-frames", "--threads", "2"]).contains("'--threads'"));
        assert!(error(&["g", "dev-concurrent", "--dev"]).contains("a value is required for '--dev"));
    }

    #[test]
    fn device_commands_name_the_device_they_cannot_open() {
        let missing = std::env::temp_dir().join(format!("qfabric-missing-{}", std::process::id()));
        let path = missing.to_string_lossy().into_owned();
        for command in [
            "dev-frames",
            "dev-concurrent",
            "dev-abuse",
            "dev-latency",
            "dev-stats",
        ] {
            let message = error(&["g", command, "--dev", &path]);
            assert!(message.contains(&path), "{command}: {message}");
        }
    }

    #[test]
    fn the_device_defaults_to_qfabric0_and_dev_names_another() {
        let Command::DevFrames(given) = parse(&["g", "dev-frames", "--dev", "/dev/qfabric3"])
        else {
            panic!("dev-frames")
        };
        assert_eq!(given.dev.dev, PathBuf::from("/dev/qfabric3"));
        let Command::DevStats(default) = parse(&["g", "dev-stats"]) else {
            panic!("dev-stats")
        };
        assert_eq!(default.dev, PathBuf::from(DEFAULT_DEVICE));
    }

    #[test]
    fn until_gone_is_a_flag_of_the_frame_runs_only() {
        let Command::DevFrames(d) = parse(&["g", "dev-frames", "--until-gone"]) else {
            panic!("dev-frames")
        };
        let run = d.frames.run(Errno::ENODEV, 1, "dev-frames", "");
        assert_eq!(run.ending, traffic::Ending::Gone(Errno::ENODEV));
        let Command::Frames(f) = parse(&["g", "frames"]) else {
            panic!("frames")
        };
        assert_eq!(f.ending(Errno::EPIPE), traffic::Ending::Complete);
        for other in ["latency", "dev-latency", "dev-concurrent"] {
            let e = error(&["g", other, "--until-gone"]);
            assert!(e.contains("'--until-gone'"), "{other}: {e}");
        }
    }

    #[test]
    fn flags_take_defaults_and_the_last_value_given() {
        let Command::Frames(t) = parse(&["g", "frames", "--count", "7", "--count", "9"]) else {
            panic!("frames")
        };
        assert_eq!((t.traffic.count, t.traffic.epoch.epoch), (9, 1));
        let Command::DevConcurrent(c) = parse(&["g", "dev-concurrent"]) else {
            panic!("dev-concurrent")
        };
        assert_eq!((c.threads, c.traffic.count), (4, 10_000));
    }
}
