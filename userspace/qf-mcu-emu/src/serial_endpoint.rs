//! The MCU endpoint on a serial line: a tty device (`--serial DEVICE`, e.g. a USB adapter wired
//! to a board's UART) or a pty this process creates (`--serial-pty LINK`, the agent opening the
//! pty's other side, as QEMU's `-serial pty` does). The messages are the Unix endpoint's
//! (`qf_execution::wire`: u16 big-endian length, one frame; replies carry the compute trailer),
//! found again after lost or corrupted bytes by `qf_execution::wire::Deframer`: a bad length or
//! magic is hunted past, a partial message on a line silent for `SERIAL_GAP` is dropped, and both
//! are counted (the `status` line's `serial_*` keys). Every message is answered through the same
//! [`Mcu::handle`] as rpmsg and the Unix socket (tasks and chain control frames alike); a reply
//! the line cannot take within a second is dropped and logged.
//!
//! A tty device that goes away (end of file, `EIO`, a hang-up) is opened again every 200 ms until
//! it comes back or the emulator stops. A pty's other side may close and open as often as it
//! likes: this process keeps a descriptor of it, so the pty lives as long as the emulator.
//!
//! Resident chains' results go out on the line as messages without a trailer, as the Zephyr
//! executor's do ([`LineWriter::offer`]): whole or not at all, never waiting for the line. A pty
//! link another emulator serves (it holds an exclusive `flock` on its side of the pty) is refused
//! by name; a link whose pty is gone or unlocked is stale and replaced, and the link is removed at
//! exit only while it still names this emulator's pty.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use nix::fcntl::{fcntl, FcntlArg, Flock, FlockArg, OFlag};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use qf_abi::MAX_FRAME_LEN;
use qf_execution::serial::{configure_raw, open_tty, write_all_until};
use qf_execution::wire::{write_message, DeframeCounters, Deframer, SERIAL_GAP};

use crate::mcu::Mcu;
use crate::subscribers::ResultLine;

/// How long a reply may wait for room on the line before it is dropped.
const WRITE_TIMEOUT: Duration = Duration::from_secs(1);
/// Between attempts to open a tty device that went away.
const REOPEN_INTERVAL: Duration = Duration::from_millis(200);
/// How long the rest of a chain result may wait for the line once its first bytes went out (a
/// message is sent whole or the receiver drops it).
const RESULT_REST_TIMEOUT: Duration = Duration::from_millis(50);

enum Line {
    /// A tty device, opened again when it goes away.
    Device { path: PathBuf, baud: u32 },
    /// A pty: this process holds both sides (its side locked, [`SerialEndpoint::pty`]); `link`
    /// names the other side (`name`) for the agent.
    Pty {
        _slave: Flock<OwnedFd>,
        name: PathBuf,
        link: PathBuf,
    },
}

/// The writing side of the line (the device, or the pty's master), shared by the replies and
/// the chains' releases; `None` while a device is away.
#[derive(Default)]
pub struct LineWriter {
    file: Mutex<Option<File>>,
}

impl LineWriter {
    fn set(&self, file: Option<File>) {
        *self.file.lock().unwrap_or_else(|p| p.into_inner()) = file;
    }

    /// Writes one reply message, waiting at most [`WRITE_TIMEOUT`] for room.
    fn reply(&self, message: &[u8]) -> io::Result<()> {
        let mut guard = self.file.lock().unwrap_or_else(|p| p.into_inner());
        let file = guard.as_mut().ok_or(io::ErrorKind::NotConnected)?;
        write_all_until(file, message, Instant::now() + WRITE_TIMEOUT)
    }

    /// Sends a chain result (a message without a trailer) if the line can take it now: not
    /// while a reply is being written, not while the line has no room. Once its first bytes
    /// are out, the rest may wait [`RESULT_REST_TIMEOUT`]. True if it went out whole.
    pub fn offer(&self, frame: &[u8]) -> bool {
        let Ok(mut guard) = self.file.try_lock() else {
            return false;
        };
        let Some(file) = guard.as_mut() else {
            return false;
        };
        let mut fds = [PollFd::new(file.as_fd(), PollFlags::POLLOUT)];
        let writable = poll(&mut fds, PollTimeout::ZERO).unwrap_or(0) > 0
            && fds[0]
                .revents()
                .is_some_and(|r| r.contains(PollFlags::POLLOUT));
        if !writable {
            return false;
        }
        let mut message = Vec::with_capacity(frame.len() + 2);
        if write_message(&mut message, frame, None).is_err() {
            return false;
        }
        match write_all_until(file, &message, Instant::now() + RESULT_REST_TIMEOUT) {
            Ok(()) => true,
            Err(e) => {
                log::debug!("serial: a chain result not sent whole: {e}");
                false
            }
        }
    }
}

/// The serial endpoint (see the module documentation).
pub struct SerialEndpoint {
    line: Line,
    /// The side this endpoint reads: the device, or the pty's master (a second descriptor of
    /// `writer`'s file).
    reader: Mutex<Option<File>>,
    writer: Arc<LineWriter>,
    counters: Arc<Mutex<DeframeCounters>>,
}

impl SerialEndpoint {
    /// Opens the tty `path` in raw mode at `baud`.
    pub fn open(path: &Path, baud: u32) -> Result<SerialEndpoint> {
        let file = open_tty(path, baud)?;
        let endpoint = SerialEndpoint {
            line: Line::Device {
                path: path.to_owned(),
                baud,
            },
            reader: Mutex::default(),
            writer: Arc::default(),
            counters: Arc::default(),
        };
        endpoint
            .attach(file)
            .with_context(|| format!("serial device {}", path.display()))?;
        Ok(endpoint)
    }

    /// Reads and writes `file` from now on (two descriptors of it).
    fn attach(&self, file: File) -> io::Result<()> {
        self.writer.set(Some(file.try_clone()?));
        *self.reader.lock().unwrap_or_else(|p| p.into_inner()) = Some(file);
        Ok(())
    }

    /// Creates a pty in raw mode at `baud` and makes `link` a symbolic link to its other side
    /// (replacing a symbolic link left there, never any other file).
    pub fn pty(link: &Path, baud: u32) -> Result<SerialEndpoint> {
        let pty = nix::pty::openpty(None, None).context("creating a pty")?;
        configure_raw(pty.slave.as_fd(), baud).context("the pty")?;
        let flags = fcntl(
            std::os::fd::AsRawFd::as_raw_fd(&pty.master),
            FcntlArg::F_GETFL,
        )
        .context("reading the pty's flags")?;
        fcntl(
            std::os::fd::AsRawFd::as_raw_fd(&pty.master),
            FcntlArg::F_SETFL(OFlag::from_bits_truncate(flags) | OFlag::O_NONBLOCK),
        )
        .context("making the pty non-blocking")?;
        let name = std::fs::read_link(format!(
            "/proc/self/fd/{}",
            std::os::fd::AsRawFd::as_raw_fd(&pty.slave)
        ))
        .context("naming the pty")?;
        // Held for the emulator's life: another emulator asked for the same link sees it.
        let slave = Flock::lock(pty.slave, FlockArg::LockExclusiveNonblock)
            .map_err(|(_, e)| e)
            .context("locking the pty")?;
        match std::fs::symlink_metadata(link) {
            Ok(meta) if meta.file_type().is_symlink() => {
                if let Some(owner) = served_by_another(link) {
                    bail!(
                        "serial pty link {}: another process serves it ({owner}; a running \
                         qf-mcu-emu?); stop it or choose another link",
                        link.display()
                    );
                }
                std::fs::remove_file(link)
                    .with_context(|| format!("replacing the link {}", link.display()))?
            }
            Ok(_) => bail!(
                "{} exists and is not a symbolic link; not replacing it",
                link.display()
            ),
            Err(_) => {}
        }
        std::os::unix::fs::symlink(&name, link)
            .with_context(|| format!("linking {} to {}", link.display(), name.display()))?;
        log::info!("serial: pty {} (link {})", name.display(), link.display());
        let endpoint = SerialEndpoint {
            line: Line::Pty {
                _slave: slave,
                name,
                link: link.to_owned(),
            },
            reader: Mutex::default(),
            writer: Arc::default(),
            counters: Arc::default(),
        };
        endpoint
            .attach(File::from(pty.master))
            .context("the pty's master")?;
        Ok(endpoint)
    }

    /// Where the chains' results go out on this line ([`LineWriter::offer`]), for
    /// [`crate::subscribers::Subscribers::add_line`].
    pub fn results(&self) -> ResultLine {
        let writer = Arc::clone(&self.writer);
        Arc::new(move |frame: &[u8]| writer.offer(frame))
    }

    /// What the deframer dropped so far (shared with the status line).
    pub fn counters(&self) -> Arc<Mutex<DeframeCounters>> {
        Arc::clone(&self.counters)
    }

    /// Serves messages until `stop` is readable.
    pub fn run(&self, stop: BorrowedFd<'_>, mcu: &Mcu) -> io::Result<()> {
        let mut deframer = Deframer::new();
        let mut last_byte = Instant::now();
        let mut chunk = [0u8; 512];
        let mut reply = [0u8; MAX_FRAME_LEN];
        loop {
            if !deframer.at_boundary() && last_byte.elapsed() >= SERIAL_GAP {
                deframer.idle();
                self.publish(&deframer);
            }
            let mut guard = self.reader.lock().unwrap_or_else(|p| p.into_inner());
            let Some(file) = guard.as_mut() else {
                drop(guard);
                if stopped_within(stop, REOPEN_INTERVAL)? {
                    return Ok(());
                }
                self.reopen();
                continue;
            };
            let wait = if deframer.at_boundary() {
                Duration::from_secs(1)
            } else {
                SERIAL_GAP
            };
            let mut fds = [
                PollFd::new(stop, PollFlags::POLLIN),
                PollFd::new(file.as_fd(), PollFlags::POLLIN),
            ];
            match poll(
                &mut fds,
                PollTimeout::try_from(wait.as_millis() as i32).unwrap_or(PollTimeout::MAX),
            ) {
                Err(nix::Error::EINTR) => continue,
                Err(e) => return Err(e.into()),
                Ok(0) => continue,
                Ok(_) => {}
            }
            let events = |i: usize| fds[i].revents().unwrap_or(PollFlags::empty());
            if !events(0).is_empty() {
                return Ok(());
            }
            let line_events = events(1);
            if line_events.intersects(PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLNVAL)
            {
                self.lose(&mut guard, "hung up");
                continue;
            }
            let n = match file.read(&mut chunk) {
                // Raw mode with VMIN = 0: nothing to read (a hang-up polls POLLHUP, above).
                Ok(0) => continue,
                Ok(n) => n,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                    ) =>
                {
                    continue
                }
                Err(e) => {
                    self.lose(&mut guard, &e.to_string());
                    continue;
                }
            };
            last_byte = Instant::now();
            for &byte in &chunk[..n] {
                let Some(body) = deframer.push(byte) else {
                    continue;
                };
                let answer = mcu.handle(body, &mut reply);
                // Counted before the reply goes out, so whoever has the reply sees the count.
                self.publish(&deframer);
                let Some(answer) = answer else {
                    continue;
                };
                let mut message = Vec::with_capacity(answer.len + 10);
                if let Err(e) =
                    write_message(&mut message, &reply[..answer.len], Some(answer.compute_ns))
                {
                    log::error!("serial: a reply not framed: {e}");
                    continue;
                }
                if let Err(e) = self.writer.reply(&message) {
                    log::warn!("serial: reply dropped: {e}");
                }
            }
            self.publish(&deframer);
        }
    }

    fn publish(&self, deframer: &Deframer) {
        *self.counters.lock().unwrap_or_else(|p| p.into_inner()) = deframer.counters();
    }

    fn lose(&self, file: &mut Option<File>, why: &str) {
        match &self.line {
            Line::Device { path, .. } => {
                log::warn!(
                    "serial: {} went away ({why}); opening it again",
                    path.display()
                );
                *file = None;
                self.writer.set(None);
            }
            // The pty cannot go away while this process holds its other side; a read error is
            // only logged (and not in a tight loop: the next poll waits).
            Line::Pty { .. } => {
                log::warn!("serial: pty: {why}");
                std::thread::sleep(REOPEN_INTERVAL);
            }
        }
    }

    fn reopen(&self) {
        if let Line::Device { path, baud } = &self.line {
            match open_tty(path, *baud).map(|file| self.attach(file)) {
                Ok(Ok(())) => log::info!("serial: {} is back", path.display()),
                Ok(Err(e)) => log::warn!("serial: {}: {e}", path.display()),
                Err(_) => {}
            }
        }
    }
}

impl Drop for SerialEndpoint {
    fn drop(&mut self) {
        // Only while the link still names this pty: never another emulator's link.
        if let Line::Pty { link, name, .. } = &self.line {
            if std::fs::read_link(link).is_ok_and(|target| &target == name) {
                let _ = std::fs::remove_file(link);
            }
        }
    }
}

/// Who serves the pty `link` names, when another emulator does: its side of the pty is
/// locked. `None` for a stale link (the pty gone, or one nobody locks).
fn served_by_another(link: &Path) -> Option<String> {
    let target = std::fs::read_link(link).ok()?;
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((OFlag::O_NOCTTY | OFlag::O_NONBLOCK).bits())
        .open(link)
    {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
        // Something is there that this process may not open: not taken for stale.
        Err(e) => return Some(format!("{} cannot be opened: {e}", target.display())),
    };
    match Flock::lock(file, FlockArg::LockSharedNonblock) {
        Ok(_) => None,
        Err((_, nix::errno::Errno::EWOULDBLOCK)) => Some(format!("{} is locked", target.display())),
        Err((_, e)) => Some(format!("{}: {e}", target.display())),
    }
}

/// Waits up to `timeout` for `stop` to be readable (true).
fn stopped_within(stop: BorrowedFd<'_>, timeout: Duration) -> io::Result<bool> {
    let mut fds = [PollFd::new(stop, PollFlags::POLLIN)];
    match poll(
        &mut fds,
        PollTimeout::try_from(timeout.as_millis() as i32).unwrap_or(PollTimeout::MAX),
    ) {
        Ok(_) | Err(nix::Error::EINTR) => {}
        Err(e) => return Err(e.into()),
    }
    Ok(fds[0].revents().is_some_and(|r| !r.is_empty()))
}
