//! The board's mailbox when the MCU is a separate machine (docs/virtual-board.md, *Mailbox*):
//! doorbells both ways as single bytes on a stream socket, the byte's value the vector (0:
//! vrings, 1: MCU state). On the MCU's side the socket is a UART (a QEMU `-serial` chardev, or
//! the emulator in mailbox mode, [`MailboxPeer`]); the [`Bridge`] listens on it and joins it to
//! the ivshmem server's eventfds: a Linux doorbell for the MCU becomes a byte to the MCU, a
//! byte from the MCU becomes an interrupt (MSI-X vector) in the guest.

use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use super::server::GuestLine;
use super::{sys, GuestNotifier, IvshmemError, McuDoorbell, VECTORS};

/// Counters of a bridge.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct BridgeStats {
    /// MCU connections accepted, and those refused because one was connected.
    pub mcu_connections: u64,
    pub mcu_refused: u64,
    /// MCU connections that ended (the MCU's QEMU killed or restarted).
    pub mcu_disconnects: u64,
    /// Linux doorbells passed to the MCU, and those with no MCU connected.
    pub to_mcu: u64,
    pub to_mcu_dropped: u64,
    /// MCU doorbells raised in the guest, and those with no guest connected.
    pub to_linux: u64,
    pub to_linux_dropped: u64,
    /// Bytes from the MCU that name no vector.
    pub bad_bytes: u64,
}

impl BridgeStats {
    /// `key=value ...`, one line.
    pub fn line(&self) -> String {
        format!(
            "mcu_connections={} mcu_refused={} mcu_disconnects={} to_mcu={} to_mcu_dropped={} to_linux={} to_linux_dropped={} bad_bytes={}",
            self.mcu_connections,
            self.mcu_refused,
            self.mcu_disconnects,
            self.to_mcu,
            self.to_mcu_dropped,
            self.to_linux,
            self.to_linux_dropped,
            self.bad_bytes
        )
    }
}

/// Joins the MCU's mailbox socket to the ivshmem server's eventfds.
pub struct Bridge {
    listener: UnixListener,
    path: PathBuf,
    doorbell: Arc<McuDoorbell>,
    guest: Arc<GuestNotifier>,
    stats: Arc<Mutex<BridgeStats>>,
}

impl Bridge {
    /// Listens on `path` for the MCU (replacing a stale socket file, never any other file).
    pub fn bind(
        path: &Path,
        doorbell: Arc<McuDoorbell>,
        guest: Arc<GuestNotifier>,
    ) -> Result<Bridge, IvshmemError> {
        let listener = crate::listen::bind(path, "mailbox socket").map_err(IvshmemError::Listen)?;
        Ok(Bridge {
            listener,
            path: path.to_path_buf(),
            doorbell,
            guest,
            stats: Arc::new(Mutex::new(BridgeStats::default())),
        })
    }

    /// Live counters.
    pub fn stats(&self) -> Arc<Mutex<BridgeStats>> {
        Arc::clone(&self.stats)
    }

    fn count(&self, update: impl FnOnce(&mut BridgeStats)) {
        update(&mut self.stats.lock().unwrap_or_else(|p| p.into_inner()));
    }

    /// Passes doorbells both ways until `stop` becomes readable. One MCU at a time; when it
    /// goes (killed, restarted) the next connection takes its place.
    pub fn run(&self, stop: BorrowedFd<'_>) -> Result<(), IvshmemError> {
        let mut mcu: Option<UnixStream> = None;
        loop {
            let mut fds = vec![
                PollFd::new(stop, PollFlags::POLLIN),
                PollFd::new(self.listener.as_fd(), PollFlags::POLLIN),
                PollFd::new(self.doorbell.fd(0), PollFlags::POLLIN),
                PollFd::new(self.doorbell.fd(1), PollFlags::POLLIN),
            ];
            if let Some(stream) = &mcu {
                fds.push(PollFd::new(stream.as_fd(), PollFlags::POLLIN));
            }
            match poll(&mut fds, PollTimeout::NONE) {
                Err(nix::Error::EINTR) => continue,
                other => other.map_err(sys("polling the mailbox"))?,
            };
            let ready: Vec<bool> = fds
                .iter()
                .map(|fd| fd.revents().is_some_and(|r| !r.is_empty()))
                .collect();
            drop(fds);
            if ready[0] {
                return Ok(());
            }
            for vector in 0..VECTORS {
                if ready[2 + vector] && self.doorbell.take(vector) {
                    self.pass_to_mcu(&mut mcu, vector);
                }
            }
            if ready.get(4).copied().unwrap_or(false) {
                self.pass_to_linux(&mut mcu);
            }
            if ready[1] {
                self.accept(&mut mcu);
            }
        }
    }

    fn pass_to_mcu(&self, mcu: &mut Option<UnixStream>, vector: usize) {
        let sent = match (mcu.as_ref(), u8::try_from(vector)) {
            (Some(stream), Ok(byte)) => match (&*stream).write_all(&[byte]) {
                Ok(()) => true,
                Err(e) => {
                    log::warn!("mailbox: doorbell {vector} not passed to the MCU: {e}");
                    false
                }
            },
            _ => false,
        };
        self.count(|s| {
            if sent {
                s.to_mcu += 1;
            } else {
                s.to_mcu_dropped += 1;
            }
        });
    }

    fn pass_to_linux(&self, mcu: &mut Option<UnixStream>) {
        let mut bytes = [0u8; 256];
        let read = match mcu.as_ref().map(|mut stream| stream.read(&mut bytes)) {
            Some(Ok(n)) if n > 0 => n,
            _ => {
                log::info!("mailbox: the MCU disconnected");
                self.count(|s| s.mcu_disconnects += 1);
                *mcu = None;
                return;
            }
        };
        for &byte in &bytes[..read] {
            let vector = usize::from(byte);
            if vector >= VECTORS {
                self.count(|s| s.bad_bytes += 1);
                log::debug!("mailbox: byte {byte:#04x} from the MCU names no vector");
                continue;
            }
            let raised = self.guest.notify(vector);
            self.count(|s| {
                if raised {
                    s.to_linux += 1;
                } else {
                    s.to_linux_dropped += 1;
                }
            });
        }
    }

    fn accept(&self, mcu: &mut Option<UnixStream>) {
        let stream = match self.listener.accept() {
            Ok((stream, _)) => stream,
            Err(e) => {
                log::warn!("mailbox: accept on {}: {e}", self.path.display());
                return;
            }
        };
        if mcu.is_some() {
            log::warn!("mailbox: refusing a second MCU while one is connected");
            self.count(|s| s.mcu_refused += 1);
            return;
        }
        log::info!("mailbox: MCU connected");
        self.count(|s| s.mcu_connections += 1);
        *mcu = Some(stream);
    }
}

/// The MCU's end of the mailbox for the emulator: its board rings the guest through the socket
/// and gets Linux's doorbells from it, so the emulator can stand where the MCU's QEMU stands.
pub struct MailboxPeer {
    stream: UnixStream,
    doorbell: Arc<McuDoorbell>,
    guest: Arc<GuestNotifier>,
}

impl MailboxPeer {
    /// Connects to the bridge's mailbox socket, retrying for up to `timeout`.
    pub fn connect(path: &Path, timeout: Duration) -> Result<MailboxPeer, IvshmemError> {
        let deadline = std::time::Instant::now() + timeout;
        let stream = loop {
            match UnixStream::connect(path) {
                Ok(stream) => break stream,
                Err(source) if std::time::Instant::now() >= deadline => {
                    return Err(IvshmemError::Socket {
                        path: path.display().to_string(),
                        source,
                    })
                }
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        };
        let writer = stream.try_clone().map_err(|source| IvshmemError::Socket {
            path: path.display().to_string(),
            source,
        })?;
        let guest = Arc::new(GuestNotifier::default());
        guest.set(Some(GuestLine::Mailbox(writer)));
        Ok(MailboxPeer {
            stream,
            doorbell: Arc::new(McuDoorbell::new()?),
            guest,
        })
    }

    /// The doorbell the board polls (rung by bytes from the bridge).
    pub fn mcu_doorbell(&self) -> Arc<McuDoorbell> {
        Arc::clone(&self.doorbell)
    }

    /// The handle the board raises the guest's interrupts with.
    pub fn guest_notifier(&self) -> Arc<GuestNotifier> {
        Arc::clone(&self.guest)
    }

    /// Rings the board's doorbell for each byte until `stop` becomes readable or the bridge
    /// goes (an error: the board has lost its mailbox).
    pub fn run(&self, stop: BorrowedFd<'_>) -> Result<(), IvshmemError> {
        let mut bytes = [0u8; 256];
        loop {
            let mut fds = [
                PollFd::new(stop, PollFlags::POLLIN),
                PollFd::new(self.stream.as_fd(), PollFlags::POLLIN),
            ];
            match poll(&mut fds, PollTimeout::NONE) {
                Err(nix::Error::EINTR) => continue,
                other => other.map_err(sys("polling the mailbox"))?,
            };
            let ready = |fd: &PollFd| fd.revents().is_some_and(|r| !r.is_empty());
            let (stop_ready, mailbox_ready) = (ready(&fds[0]), ready(&fds[1]));
            if stop_ready {
                return Ok(());
            }
            if !mailbox_ready {
                continue;
            }
            let read = nix::unistd::read(self.stream.as_raw_fd(), &mut bytes)
                .map_err(sys("reading the mailbox"))?;
            if read == 0 {
                self.guest.set(None);
                return Err(IvshmemError::Protocol(
                    "mailbox: the bridge closed the connection".into(),
                ));
            }
            for &byte in &bytes[..read] {
                let vector = usize::from(byte);
                if vector < VECTORS {
                    self.doorbell.ring(vector)?;
                } else {
                    log::debug!("mailbox: byte {byte:#04x} from the bridge names no vector");
                }
            }
        }
    }
}
