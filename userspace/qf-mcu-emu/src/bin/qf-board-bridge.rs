//! `qf-board-bridge`: the wiring of the virtual board when the MCU is a machine of its own (a
//! QEMU Cortex-M33 running the Zephyr executor, or `qf-mcu-emu --mailbox-socket`): it owns the
//! board's shared memory (a file the MCU's QEMU uses as its RAM), is the ivshmem server the
//! Linux guest's `ivshmem-doorbell` connects to, and passes doorbells between the guest's
//! eventfds and the MCU's mailbox socket (docs/virtual-board.md, *Mailbox*).
//! `qf-board-bridge check` tells whether an MCU has published a usable control block and
//! resource table, and if not, which part is missing or wrong; `qf-board-bridge announced`
//! whether, once Linux attached, the MCU announced its `qfabric` channel.
//! Logs go to stderr; SIGTERM/SIGINT end it cleanly (exit status 0, sockets removed).

use std::io::Write;
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use nix::sys::eventfd::{EfdFlags, EventFd};

use qf_mcu_emu::board::CHANNEL_NAME;
use qf_mcu_emu::ivshmem::{Bridge, IvshmemServer};
use qf_mcu_emu::layout::{
    control, vring_parts, McuState, LAYOUT_VERSION, MAGIC, RSC_TABLE_AREA, RSC_TABLE_OFFSET,
    VRING0_OFFSET,
};
use qf_mcu_emu::process::{self, parse_size};
use qf_mcu_emu::rpmsg;
use qf_mcu_emu::rsc_table;
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
    /// Waits for Linux's first attach, then for the MCU's name-service announcement of its
    /// `qfabric` channel (the first message on vring0), or says what is missing.
    Announced {
        #[arg(long, value_name = "PATH")]
        shm_file: PathBuf,
        /// Seconds to wait for Linux to attach.
        #[arg(long, value_name = "S", default_value_t = 1500)]
        attach_timeout_s: u64,
        /// Seconds to wait, once Linux attached, for the announcement.
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
        Some(Command::Announced {
            shm_file,
            attach_timeout_s,
            timeout_s,
        }) => announced(
            shm_file,
            Duration::from_secs(*attach_timeout_s),
            Duration::from_secs(*timeout_s),
        ),
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

/// What the MCU has published so far, or why it is not usable, each answer opening with its
/// verdict: `the MCU did not boot`, `the MCU does not run`, `malformed resource table`. The
/// table rules are `qfabric_rproc`'s (`qf_resource_table::board`), and so is the defect's name.
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
            "the MCU did not boot into this board: it publishes layout version {layout}, this \
             board is version {LAYOUT_VERSION}"
        ));
    }
    let state = read(control::MCU_STATE)?;
    if state != McuState::Running as u32 {
        let name = match McuState::from_u32(state) {
            Some(McuState::Booting) => "booting: it never finished",
            Some(McuState::Crashed) => "crashed",
            Some(McuState::Offline) => "offline",
            _ => "no such state",
        };
        return Err(format!("the MCU does not run: mcu_state {state} ({name})"));
    }
    let (offset, size) = (
        read(control::RSC_TABLE_OFFSET)?,
        read(control::RSC_TABLE_SIZE)?,
    );
    let (start, end) = (u64::from(offset), u64::from(offset) + u64::from(size));
    if start < RSC_TABLE_OFFSET || size < 16 || end > RSC_TABLE_OFFSET + RSC_TABLE_AREA {
        return Err(format!(
            "malformed resource table: BadTable {{ offset: {offset}, size: {size} }}: \
             rsc_table_offset {offset:#x} and rsc_table_size {size} are not a table of at \
             least 16 bytes inside the 4 KiB slot at {RSC_TABLE_OFFSET:#x}"
        ));
    }
    let mut table = vec![0u8; size as usize];
    shm.read(start, &mut table).map_err(|e| e.to_string())?;
    rsc_table::decode_vdev(&table).map_err(|e| e.to_string())?;
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
            last = Err(format!(
                "the MCU does not run: its heartbeat does not move ({what})"
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    match last {
        Ok(what) => bail!(
            "after {} s: the MCU does not run: its heartbeat does not move ({what})",
            timeout.as_secs()
        ),
        Err(why) => bail!("after {} s: {why}", timeout.as_secs()),
    }
}

/// The first message the MCU put on vring0 (Linux's rx ring) since Linux's first attach, as
/// `(src, dst, payload)`; `None` while the used ring is empty.
fn first_rx_message(shm: &SharedMemory) -> Result<Option<(u32, u32, Vec<u8>)>> {
    let size = shm
        .load_u32(control::RSC_TABLE_SIZE)?
        .min(RSC_TABLE_AREA as u32);
    let mut table = vec![0u8; size as usize];
    shm.read(RSC_TABLE_OFFSET, &mut table)?;
    let vdev = rsc_table::decode_vdev(&table)?;
    let ring = vdev.vrings[0];
    let (num, align) = (u64::from(ring.num), u64::from(ring.align));
    let (_, _, used) = vring_parts(VRING0_OFFSET, num, align);
    let mut word = [0u8; 2];
    shm.read(used + 2, &mut word)?;
    if u16::from_le_bytes(word) == 0 {
        return Ok(None);
    }
    // used.ring[0].id names the descriptor; its address is guest-physical (bar2_pa + offset).
    let id = u64::from(shm.load_u32(used + 4)?) % num;
    let addr = shm.load_u64(VRING0_OFFSET + 16 * id)?;
    let offset = addr
        .checked_sub(shm.load_u64(control::BAR2_PA)?)
        .filter(|&o| o + rpmsg::BUFFER_SIZE as u64 <= shm.size())
        .with_context(|| format!("vring0's first used buffer {addr:#x} is outside BAR2"))?;
    let mut buffer = [0u8; rpmsg::BUFFER_SIZE];
    shm.read(offset, &mut buffer)?;
    let (header, payload) = rpmsg::decode(&buffer)?;
    Ok(Some((header.src, header.dst, payload.to_vec())))
}

fn announced(
    shm_file: &std::path::Path,
    attach_timeout: Duration,
    timeout: Duration,
) -> Result<()> {
    let shm = SharedMemory::open_file(shm_file)?;
    let started = Instant::now();
    while shm.load_u32(control::ATTACH_COUNT)? == 0 {
        if started.elapsed() > attach_timeout {
            bail!(
                "Linux did not attach in {} s (attach_count 0)",
                attach_timeout.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let attached = Instant::now();
    loop {
        if let Some((src, dst, payload)) = first_rx_message(&shm)? {
            let name_end = payload
                .iter()
                .take(rpmsg::NAME_SIZE)
                .position(|&b| b == 0)
                .unwrap_or(rpmsg::NAME_SIZE.min(payload.len()));
            let name = String::from_utf8_lossy(&payload[..name_end]);
            if dst != rpmsg::NS_ADDR || name != CHANNEL_NAME {
                bail!(
                    "the MCU did not announce its channel: its first message after Linux \
                     attached went from {src:#x} to {dst:#x} ('{name}'), not a name-service \
                     announcement of '{CHANNEL_NAME}' to {}",
                    rpmsg::NS_ADDR
                );
            }
            println!(
                "ok: the MCU announced '{name}' from {src:#x}, {:.1} s after Linux attached",
                attached.elapsed().as_secs_f64()
            );
            return Ok(());
        }
        if attached.elapsed() > timeout {
            bail!(
                "the MCU did not announce its channel: Linux attached {} s ago (attach_count {}, \
                 served_attach_count {}) and vring0 is still empty: no name-service message",
                timeout.as_secs(),
                shm.load_u32(control::ATTACH_COUNT)?,
                shm.load_u32(control::SERVED_ATTACH_COUNT)?
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
