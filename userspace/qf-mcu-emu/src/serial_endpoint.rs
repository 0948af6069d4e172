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

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use qf_abi::MAX_FRAME_LEN;
use qf_execution::serial::{configure_raw, open_tty, write_all_until};
use qf_execution::wire::{write_message, DeframeCounters, Deframer, SERIAL_GAP};

use crate::mcu::Mcu;

/// How long a reply may wait for room on the line before it is dropped.
const WRITE_TIMEOUT: Duration = Duration::from_secs(1);
/// Between attempts to open a tty device that went away.
const REOPEN_INTERVAL: Duration = Duration::from_millis(200);

enum Line {
    /// A tty device, opened again when it goes away.
    Device { path: PathBuf, baud: u32 },
    /// A pty: this process holds both sides; `link` names the other side for the agent.
    Pty { _slave: OwnedFd, link: PathBuf },
}

/// The serial endpoint (see the module documentation).
pub struct SerialEndpoint {
    line: Line,
    /// The side this endpoint reads and writes: the device, or the pty's master.
    file: Mutex<Option<File>>,
    counters: Arc<Mutex<DeframeCounters>>,
}

impl SerialEndpoint {
    /// Opens the tty `path` in raw mode at `baud`.
    pub fn open(path: &Path, baud: u32) -> Result<SerialEndpoint> {
        let file = open_tty(path, baud)?;
        Ok(SerialEndpoint {
            line: Line::Device {
                path: path.to_owned(),
                baud,
            },
            file: Mutex::new(Some(file)),
            counters: Arc::default(),
        })
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
        match std::fs::symlink_metadata(link) {
            Ok(meta) if meta.file_type().is_symlink() => std::fs::remove_file(link)
                .with_context(|| format!("replacing the link {}", link.display()))?,
            Ok(_) => anyhow::bail!(
                "{} exists and is not a symbolic link; not replacing it",
                link.display()
            ),
            Err(_) => {}
        }
        std::os::unix::fs::symlink(&name, link)
            .with_context(|| format!("linking {} to {}", link.display(), name.display()))?;
        log::info!("serial: pty {} (link {})", name.display(), link.display());
        Ok(SerialEndpoint {
            line: Line::Pty {
                _slave: pty.slave,
                link: link.to_owned(),
            },
            file: Mutex::new(Some(File::from(pty.master))),
            counters: Arc::default(),
        })
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
            let mut guard = self.file.lock().unwrap_or_else(|p| p.into_inner());
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
                if let Err(e) = write_all_until(file, &message, Instant::now() + WRITE_TIMEOUT) {
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
            if let Ok(file) = open_tty(path, *baud) {
                log::info!("serial: {} is back", path.display());
                *self.file.lock().unwrap_or_else(|p| p.into_inner()) = Some(file);
            }
        }
    }
}

impl Drop for SerialEndpoint {
    fn drop(&mut self) {
        if let Line::Pty { link, .. } = &self.line {
            let _ = std::fs::remove_file(link);
        }
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
