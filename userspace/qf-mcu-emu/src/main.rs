//! `qf-mcu-emu`: runs the emulated MCU of the virtual board (ivshmem server for QEMU, rpmsg
//! device, Unix-socket and serial endpoints for the agent), or sends a command to a running one (`ctl`).
//! Logs go to stderr; SIGTERM/SIGINT end it cleanly.

use std::io::Write;
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use nix::sys::eventfd::{EfdFlags, EventFd};

use qf_mcu_emu::board::Board;
use qf_mcu_emu::chain_loop::ChainLoop;
use qf_mcu_emu::compute::ComputeModel;
use qf_mcu_emu::control::{self, ControlServer};
use qf_mcu_emu::defect::Defect;
use qf_mcu_emu::faults::Faults;
use qf_mcu_emu::ivshmem::{IvshmemServer, MailboxPeer};
use qf_mcu_emu::layout::{control as field, MIN_SHM_SIZE};
use qf_mcu_emu::mcu::Mcu;
use qf_mcu_emu::process::{self, parse_size};
use qf_mcu_emu::serial_endpoint::SerialEndpoint;
use qf_mcu_emu::shm::SharedMemory;
use qf_mcu_emu::unix_endpoint::UnixEndpoint;

#[derive(Parser, Debug)]
#[command(
    name = "qf-mcu-emu",
    version,
    about = "The emulated MCU core of qfabric's virtual board (docs/virtual-board.md)"
)]
#[command(args_conflicts_with_subcommands = true)]
struct Cli {
    /// Serve QEMU's ivshmem-doorbell (vectors=2) on this Unix socket, as peer 0.
    #[arg(long, value_name = "PATH")]
    ivshmem_socket: Option<PathBuf>,
    /// Serve QFabric frames on this Unix socket (qf-agent's framing: u16 BE length; replies carry
    /// the u64 BE compute-time trailer).
    #[arg(long, value_name = "PATH")]
    unix_socket: Option<PathBuf>,
    /// Serve the same messages on this serial device (a tty: raw mode at --baud), found again
    /// after lost or corrupted bytes (docs/virtual-board.md, "MCU endpoint on a serial line").
    #[arg(long, value_name = "DEVICE", conflicts_with = "serial_pty")]
    serial: Option<PathBuf>,
    /// Serve them on a new pty instead, with LINK a symbolic link to its other side (for
    /// `qf ... --mcu-serial LINK`).
    #[arg(long, value_name = "LINK")]
    serial_pty: Option<PathBuf>,
    /// Baud rate of --serial / --serial-pty.
    #[arg(long, value_name = "N", default_value_t = qf_execution::serial::DEFAULT_BAUD)]
    baud: u32,
    /// Be the MCU of a board wired by `qf-board-bridge`: doorbells on this mailbox socket,
    /// the shared memory in --shm-file (instead of being the ivshmem server).
    #[arg(
        long,
        value_name = "PATH",
        conflicts_with = "ivshmem_socket",
        requires = "shm_file"
    )]
    mailbox_socket: Option<PathBuf>,
    /// The board's shared-memory file (made by `qf-board-bridge`), with --mailbox-socket.
    #[arg(long, value_name = "PATH", requires = "mailbox_socket")]
    shm_file: Option<PathBuf>,
    /// Accept fault and lifecycle commands on this Unix socket (see `qf-mcu-emu ctl`).
    #[arg(long, value_name = "PATH")]
    control_socket: Option<PathBuf>,
    /// Shared-memory size: a power of two ≥ 2M (suffixes K, M, G).
    #[arg(long, value_name = "SIZE", default_value = "4M", value_parser = parse_shm_size)]
    shm_size: u64,
    /// Microseconds added before every reply.
    #[arg(long, value_name = "N", default_value_t = 0)]
    latency_us: u64,
    /// Drop every Nth reply (0 = never).
    #[arg(long, value_name = "N", default_value_t = 0)]
    drop_every: u64,
    /// The MCU's compute time: `host` (this machine's speed) or `paper-m33` (each kernel takes
    /// the QFabric paper's Cortex-M33 time, Table V, busy-waiting).
    #[arg(long, value_name = "MODEL", default_value = "host", value_parser = ComputeModel::parse)]
    compute_model: ComputeModel,
    /// Start without answering (requests are read, never answered) until `silent off`.
    #[arg(long)]
    silent: bool,
    /// Boot as a broken MCU image: no-boot, no-announce, or a malformed resource table
    /// (table-version, table-entries, table-entry-offset, table-entry-type, table-vdev-id,
    /// table-config-len, table-vrings, table-vring-num, table-vring-align, table-vring-da,
    /// table-slot); `ctl defect KIND|none` changes it at run time.
    #[arg(long, value_name = "KIND", value_parser = Defect::parse)]
    defect: Option<Defect>,
    /// More log output (-v debug).
    #[arg(short, long, action = clap::ArgAction::Count)]
    verbose: u8,
    #[command(subcommand)]
    command: Option<Ctl>,
}

#[derive(Subcommand, Debug)]
enum Ctl {
    /// Send one command to a running emulator's control socket and print the reply:
    /// latency-us N | drop-every N | silent on|off | crash | hang | restart | garbage N |
    /// status. (Resident chains: `qf resident`, through the MCU's own endpoints.)
    Ctl {
        #[arg(long, value_name = "PATH")]
        control_socket: PathBuf,
        #[arg(required = true, num_args = 1.., value_name = "COMMAND")]
        words: Vec<String>,
    },
}

/// `--shm-size`: a size (`process::parse_size`) that the shared memory can have, checked here
/// whatever else is served: the shared memory exists only with ivshmem, but a size it could never
/// have is a mistake in the command either way.
fn parse_shm_size(text: &str) -> Result<u64, String> {
    let size = parse_size(text)?;
    if !qf_mcu_emu::shm::valid_size(size) {
        return Err(format!(
            "'{}' ({size} bytes) is not a power of two (a PCI BAR) of at least {MIN_SHM_SIZE} \
             bytes (2M)",
            text.trim()
        ));
    }
    Ok(size)
}

fn main() {
    let cli = Cli::parse();
    process::init_log("qf-mcu-emu", cli.verbose > 0);
    if let Err(e) = run(cli) {
        let _ = writeln!(std::io::stderr(), "qf-mcu-emu: error: {e:#}");
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> Result<()> {
    if let Some(Ctl::Ctl {
        control_socket,
        words,
    }) = &cli.command
    {
        let reply = control::send_command(control_socket, &words.join(" "))?;
        println!("{reply}");
        if reply.starts_with("error") {
            bail!("command refused");
        }
        return Ok(());
    }
    if cli.ivshmem_socket.is_none()
        && cli.unix_socket.is_none()
        && cli.mailbox_socket.is_none()
        && cli.serial.is_none()
        && cli.serial_pty.is_none()
    {
        bail!("nothing to serve: give --ivshmem-socket PATH (or --mailbox-socket PATH), --unix-socket PATH and/or --serial DEVICE (or --serial-pty LINK)");
    }
    let stop = EventFd::from_value_and_flags(0, EfdFlags::EFD_CLOEXEC)
        .context("creating the stop eventfd")?;
    let signal_rx = process::signal_socket()?;

    let mcu = Arc::new(
        Mcu::new(Faults::new(cli.latency_us, cli.drop_every, cli.silent))
            .with_compute(cli.compute_model),
    );
    let shm = match (&cli.ivshmem_socket, &cli.shm_file) {
        (Some(_), _) => Some(Arc::new(SharedMemory::create(cli.shm_size)?)),
        (None, Some(path)) => Some(Arc::new(SharedMemory::open_file(path)?)),
        (None, None) => None,
    };
    let ivshmem = match (&cli.ivshmem_socket, &shm) {
        (Some(path), Some(shm)) => Some(IvshmemServer::bind(path, shm.file())?),
        _ => None,
    };
    let mailbox = match &cli.mailbox_socket {
        Some(path) => Some(MailboxPeer::connect(
            path,
            std::time::Duration::from_secs(10),
        )?),
        None => None,
    };
    let lines = match (&ivshmem, &mailbox) {
        (Some(server), _) => Some((server.mcu_doorbell(), server.guest_notifier())),
        (None, Some(peer)) => Some((peer.mcu_doorbell(), peer.guest_notifier())),
        (None, None) => None,
    };
    let mut board = match (&lines, &shm) {
        (Some((doorbell, guest)), Some(shm)) => Some(
            Board::new(
                Arc::clone(shm),
                Arc::clone(doorbell),
                Arc::clone(guest),
                Arc::clone(&mcu),
            )?
            .with_defect(cli.defect),
        ),
        _ => None,
    };
    let endpoint = match &cli.unix_socket {
        Some(path) => Some(UnixEndpoint::bind(path)?),
        None => None,
    };
    let serial = match (&cli.serial, &cli.serial_pty) {
        (Some(device), _) => Some(SerialEndpoint::open(device, cli.baud)?),
        (None, Some(link)) => Some(SerialEndpoint::pty(link, cli.baud)?),
        (None, None) => None,
    };
    // The serial line takes every chain result it can, whoever releases them.
    if let Some(serial) = &serial {
        mcu.subscribers().add_line(serial.results());
    }
    // Without the board, the socket's subscribers and the serial line take the chains' results:
    // a loop of their own releases them.
    let chain_loop = match (&board, endpoint.is_some() || serial.is_some()) {
        (None, true) => Some(ChainLoop::new(Arc::clone(&mcu)).context("creating the chain timer")?),
        _ => None,
    };
    let control_server = match &cli.control_socket {
        Some(path) => {
            let status = status_fn(
                &mcu,
                shm.clone(),
                board.as_ref().map(Board::stats),
                lines.as_ref().map(|(_, guest)| Arc::clone(guest)),
                serial.as_ref().map(SerialEndpoint::counters),
            );
            Some(ControlServer::bind(
                path,
                Arc::clone(&mcu),
                board.as_ref().map(Board::control),
                status,
            )?)
        }
        None => None,
    };
    log::info!(
        "serving: ivshmem {:?}, mailbox {:?}, unix {:?}, serial {:?}, control {:?}, shm {} bytes, latency {} us, drop every {}, silent {}, compute {}",
        cli.ivshmem_socket, cli.mailbox_socket, cli.unix_socket, cli.serial.as_ref().or(cli.serial_pty.as_ref()), cli.control_socket, shm.as_ref().map_or(cli.shm_size, |s| s.size()), cli.latency_us, cli.drop_every, cli.silent, cli.compute_model.name()
    );

    let stop_fd = stop.as_fd();
    std::thread::scope(|scope| -> Result<()> {
        // However this closure ends (signal, worker error, panic), the workers are told to stop,
        // so the scope's implicit joins cannot hang.
        let _stop_guard = StopOnDrop(&stop);
        let mut workers = Vec::new();
        if let Some(server) = &ivshmem {
            workers.push(scope.spawn(move || server.run(stop_fd).context("ivshmem server")));
        }
        if let Some(peer) = &mailbox {
            workers.push(scope.spawn(move || peer.run(stop_fd).context("mailbox")));
        }
        if let Some(board) = board.as_mut() {
            workers.push(scope.spawn(move || board.run(stop_fd).context("mcu board")));
        }
        if let Some(endpoint) = &endpoint {
            let mcu = Arc::clone(&mcu);
            workers.push(scope.spawn(move || endpoint.run(stop_fd, &mcu).context("unix endpoint")));
        }
        if let Some(serial) = &serial {
            let mcu = Arc::clone(&mcu);
            workers.push(scope.spawn(move || serial.run(stop_fd, &mcu).context("serial endpoint")));
        }
        if let Some(chains) = &chain_loop {
            workers.push(scope.spawn(move || chains.run(stop_fd).context("chain loop")));
        }
        if let Some(server) = &control_server {
            workers.push(scope.spawn(move || server.run(stop_fd).context("control socket")));
        }
        // Wait for a signal, or for a worker to end on its own (an error).
        process::wait_for_signal_or_end(signal_rx.as_fd(), &workers);
        log::info!("stopping");
        stop.write(1).context("signalling the workers to stop")?;
        process::join_all(workers)
    })
}

/// Writes the stop eventfd when dropped.
struct StopOnDrop<'a>(&'a EventFd);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        let _ = self.0.write(1);
    }
}

fn status_fn(
    mcu: &Arc<Mcu>,
    shm: Option<Arc<SharedMemory>>,
    board: Option<Arc<std::sync::Mutex<qf_mcu_emu::board::BoardStats>>>,
    guest: Option<Arc<qf_mcu_emu::ivshmem::GuestNotifier>>,
    serial: Option<Arc<std::sync::Mutex<qf_execution::wire::DeframeCounters>>>,
) -> control::StatusFn {
    let mcu = Arc::clone(mcu);
    Box::new(move || {
        let s = mcu.stats();
        let (latency, drop_every, silent) = mcu.faults().knobs();
        let mut line = format!(
            "crashed={} requests={} replies={} rejected={} unanswered={} dropped={} compute_ns_total={} compute_ns_last={} latency_us={latency} drop_every={drop_every} silent={silent} compute_model={}",
            mcu.is_crashed(), s.requests, s.replies, s.rejected, s.unanswered, mcu.faults().dropped(), s.compute_ns_total, s.compute_ns_last,
            mcu.compute_model().name()
        );
        if let Some(shm) = &shm {
            let get = |offset| shm.load_u32(offset).unwrap_or(u32::MAX);
            line += &format!(
                " mcu_state={} generation={} heartbeat={} linux_state={} attach_count={} served_attach_count={}",
                get(field::MCU_STATE), get(field::GENERATION), get(field::HEARTBEAT), get(field::LINUX_STATE),
                get(field::ATTACH_COUNT), get(field::SERVED_ATTACH_COUNT)
            );
        }
        if let Some(board) = &board {
            let b = *board.lock().unwrap_or_else(|p| p.into_inner());
            line += &format!(
                " sessions={} stale_kicks={} foreign_messages={} garbage_sent={} garbage_not_sent={}",
                b.sessions, b.stale_kicks, b.foreign_messages, b.garbage_sent, b.garbage_not_sent
            );
            let c = b.chain;
            line += &format!(
                " chain_running={} chain_releases={} chain_sent={} chain_not_sent={} chain_rejected={} chain_overruns={} chain_lateness_max_us={} chain_compute_ns_max={} chain_budget_exhaustions={}",
                b.chain_running, c.releases, c.sent, c.send_failures, c.rejected, c.overruns,
                c.lateness_max / 1000, c.compute_ns_max, b.chain_budget_exhaustions
            );
            line += &format!(" defect={}", b.defect.map_or("none", Defect::name));
        }
        if let Some(guest) = &guest {
            line += &format!(
                " guest_connected={} guests_refused={}",
                guest.connected(),
                guest.refused()
            );
        }
        if let Some(serial) = &serial {
            let c = *serial.lock().unwrap_or_else(|p| p.into_inner());
            line += &format!(
                " serial_messages={} serial_bad_lengths={} serial_bad_magic={} serial_truncated={} serial_discarded_bytes={}",
                c.messages, c.bad_lengths, c.bad_magic, c.truncated, c.discarded_bytes
            );
        }
        line
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use qf_mcu_emu::layout::DEFAULT_SHM_SIZE;

    #[test]
    fn sizes_accept_suffixes_and_name_bad_input() {
        assert_eq!(parse_size("4M"), Ok(4 << 20));
        assert_eq!(parse_size("2097152"), Ok(2 << 20));
        assert_eq!(parse_size("1g"), Ok(1 << 30));
        assert!(parse_size("four").unwrap_err().contains("'four'"));
        assert!(parse_size("99999999999999G")
            .unwrap_err()
            .contains("too large"));
    }

    #[test]
    fn the_default_size_is_the_contracts() {
        assert_eq!(parse_size("4M"), Ok(DEFAULT_SHM_SIZE));
    }
}
