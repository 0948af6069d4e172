//! `qf-board-bridge`: the wiring of the virtual board when the MCU is a machine of its own (a
//! QEMU Cortex-M33 running the Zephyr executor, or `qf-mcu-emu --mailbox-socket`): it owns the
//! board's shared memory (a file the MCU's QEMU uses as its RAM), is the ivshmem server the
//! Linux guest's `ivshmem-doorbell` connects to, and passes doorbells between the guest's
//! eventfds and the MCU's mailbox socket (docs/virtual-board.md, *Mailbox*).
//! `qf-board-bridge check` tells whether an MCU has published a usable control block and
//! resource table, and if not, which part is missing or wrong.
//! Logs go to stderr; SIGTERM/SIGINT end it cleanly (exit status 0, sockets removed).

use std::io::Write;
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use nix::sys::eventfd::{EfdFlags, EventFd};

use qf_mcu_emu::ivshmem::{Bridge, IvshmemServer};
use qf_mcu_emu::layout::{control, McuState, LAYOUT_VERSION, MAGIC, RSC_TABLE_OFFSET};
use qf_mcu_emu::process::{self, parse_size};
use qf_mcu_emu::rsc_table::{self, TABLE_LEN};
use qf_mcu_emu::shm::SharedMemory;

#[derive(Parser, Debug)]
#[command(
    name = "qf-board-bridge",
    version,
    about = "Shared memory, ivshmem server and doorbell bridge of qfabric's virtual board"
)]
#[command(args_conflicts_with_subcommands = true)]
struct Cli {
    /// The ivshmem server socket the Linux guest's QEMU connects to.
    #[arg(long, value_name = "PATH")]
    ivshmem_socket: Option<PathBuf>,
    /// The mailbox socket the MCU (its QEMU's UART chardev) connects to.
    #[arg(long, value_name = "PATH")]
    mailbox_socket: Option<PathBuf>,
    /// The board's shared memory: created (truncated) here, zeroed.
    #[arg(long, value_name = "PATH")]
    shm_file: Option<PathBuf>,
    /// Its size: a power of two; the mps2-an521's RAM is 16 MiB.
    #[arg(long, value_name = "SIZE", default_value = "16M", value_parser = parse_size)]
    shm_size: u64,
    #[arg(short, long, action = clap::ArgAction::Count)]
    verbose: u8,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Waits until the MCU runs with a usable resource table, or says what is missing.
    Check {
        #[arg(long, value_name = "PATH")]
        shm_file: PathBuf,
        /// Seconds to wait.
        #[arg(long, value_name = "S", default_value_t = 30)]
        timeout_s: u64,
    },
}

fn main() {
    let cli = Cli::parse();
    process::init_log("qf-board-bridge", cli.verbose > 0);
    let result = match &cli.command {
        Some(Command::Check {
            shm_file,
            timeout_s,
        }) => check(shm_file, Duration::from_secs(*timeout_s)),
        None => bridge(&cli),
    };
    if let Err(e) = result {
        let _ = writeln!(std::io::stderr(), "qf-board-bridge: error: {e:#}");
        std::process::exit(1);
    }
}

fn bridge(cli: &Cli) -> Result<()> {
    let (Some(ivshmem_socket), Some(mailbox_socket), Some(shm_file)) =
        (&cli.ivshmem_socket, &cli.mailbox_socket, &cli.shm_file)
    else {
        bail!("give --ivshmem-socket PATH, --mailbox-socket PATH and --shm-file PATH");
    };
    let stop = EventFd::from_value_and_flags(0, EfdFlags::EFD_CLOEXEC)
        .context("creating the stop eventfd")?;
    let signal_rx = process::signal_socket()?;
    let shm = SharedMemory::create_file(shm_file, cli.shm_size)?;
    let server = IvshmemServer::bind(ivshmem_socket, shm.file())?;
    let bridge = Bridge::bind(
        mailbox_socket,
        server.mcu_doorbell(),
        server.guest_notifier(),
    )?;
    let stats = bridge.stats();
    log::info!(
        "serving: shm {} ({} bytes), ivshmem {}, mailbox {}",
        shm_file.display(),
        cli.shm_size,
        ivshmem_socket.display(),
        mailbox_socket.display()
    );
    let stop_fd = stop.as_fd();
    let result = std::thread::scope(|scope| -> Result<()> {
        let workers = [
            scope.spawn(|| server.run(stop_fd).context("ivshmem server")),
            scope.spawn(|| bridge.run(stop_fd).context("mailbox bridge")),
        ];
        process::wait_for_signal_or_end(signal_rx.as_fd(), &workers);
        log::info!("stopping");
        let _ = stop.write(1);
        process::join_all(Vec::from(workers))
    });
    log::info!(
        "mailbox: {}",
        stats.lock().unwrap_or_else(|p| p.into_inner()).line()
    );
    result
}

/// What the MCU has published so far, or why it is not usable.
fn published(shm: &SharedMemory) -> Result<String, String> {
    let read = |field| shm.load_u32(field).map_err(|e| e.to_string());
    let magic = read(control::MAGIC)?;
    if magic != MAGIC {
        return Err(format!(
            "the MCU did not boot: the control block has no magic ({magic:#x}, want {MAGIC:#x})"
        ));
    }
    let layout = read(control::LAYOUT_VERSION)?;
    if layout != LAYOUT_VERSION {
        return Err(format!(
            "the MCU publishes layout version {layout}, this board is version {LAYOUT_VERSION}"
        ));
    }
    let state = read(control::MCU_STATE)?;
    if state != McuState::Running as u32 {
        return Err(format!(
            "the MCU does not run: mcu_state {state} (1 booting, 3 crashed)"
        ));
    }
    let (offset, size) = (
        read(control::RSC_TABLE_OFFSET)?,
        read(control::RSC_TABLE_SIZE)?,
    );
    if u64::from(offset) != RSC_TABLE_OFFSET || size as usize != TABLE_LEN {
        return Err(format!(
            "malformed resource table: rsc_table_offset {offset:#x}, rsc_table_size {size} (want {RSC_TABLE_OFFSET:#x}, {TABLE_LEN})"
        ));
    }
    let mut table = [0u8; TABLE_LEN];
    shm.read(RSC_TABLE_OFFSET, &mut table)
        .map_err(|e| e.to_string())?;
    rsc_table::decode_vdev(&table).map_err(|e| format!("malformed resource table: {e}"))?;
    let beat = read(control::HEARTBEAT)?;
    Ok(format!(
        "generation {}, resource table {size} bytes, heartbeat {beat}",
        read(control::GENERATION)?
    ))
}

fn check(shm_file: &std::path::Path, timeout: Duration) -> Result<()> {
    let shm = SharedMemory::open_file(shm_file)?;
    let deadline = Instant::now() + timeout;
    let mut last = published(&shm);
    while Instant::now() < deadline {
        last = published(&shm);
        if let Ok(what) = &last {
            // A published table is not enough: the heartbeat must move.
            let beat = shm.load_u32(control::HEARTBEAT)?;
            std::thread::sleep(Duration::from_millis(50));
            if shm.load_u32(control::HEARTBEAT)? != beat {
                println!("ok: the MCU runs: {what}");
                return Ok(());
            }
            last = Err(format!("the MCU's heartbeat does not move ({what})"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    match last {
        Ok(what) => bail!(
            "after {} s: the MCU's heartbeat does not move ({what})",
            timeout.as_secs()
        ),
        Err(why) => bail!("after {} s: {why}", timeout.as_secs()),
    }
}
