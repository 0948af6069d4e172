//! The ivshmem server side, acting as peer 0 (the MCU): hands QEMU the shared memory and the
//! eventfds, accepts one guest at a time, and lets the MCU core signal the guest.

use std::fs::File;
use std::io::IoSlice;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::eventfd::{EfdFlags, EventFd};
use nix::sys::socket::{sendmsg, ControlMessage, MsgFlags, UnixAddr};

use super::{sys, IvshmemError, GUEST_PEER_ID, MCU_PEER_ID, PROTOCOL_VERSION, VECTORS};

fn new_eventfd() -> Result<EventFd, IvshmemError> {
    EventFd::from_value_and_flags(0, EfdFlags::EFD_CLOEXEC | EfdFlags::EFD_NONBLOCK)
        .map_err(sys("creating an eventfd"))
}

/// The MCU's doorbell: the eventfds QEMU signals when Linux writes the Doorbell register.
pub struct McuDoorbell {
    vectors: [EventFd; VECTORS],
}

impl McuDoorbell {
    /// Doorbell eventfds nobody rings yet (the server's, or a mailbox peer's).
    pub(crate) fn new() -> Result<McuDoorbell, IvshmemError> {
        Ok(McuDoorbell {
            vectors: [new_eventfd()?, new_eventfd()?],
        })
    }

    /// The eventfd of `vector` (to poll on).
    pub fn fd(&self, vector: usize) -> BorrowedFd<'_> {
        self.vectors[vector].as_fd()
    }

    /// Consumes pending rings of `vector`; true if there was at least one.
    pub fn take(&self, vector: usize) -> bool {
        self.vectors[vector].read().map(|n| n > 0).unwrap_or(false)
    }

    /// Rings `vector` from inside the emulator (what a guest's doorbell write does).
    pub fn ring(&self, vector: usize) -> Result<(), IvshmemError> {
        self.vectors[vector]
            .write(1)
            .map(|_| ())
            .map_err(sys("ringing the MCU doorbell"))
    }
}

/// Raises interrupts in the connected guest, if any.
#[derive(Default)]
pub struct GuestNotifier {
    guest: Mutex<Option<GuestLine>>,
    /// Guests refused because one was connected.
    refused: AtomicU64,
}

/// How an interrupt reaches the guest.
pub(crate) enum GuestLine {
    /// The guest's own eventfds (this process is its ivshmem server).
    Eventfds([EventFd; VECTORS]),
    /// The board's mailbox: one byte per interrupt, its value the vector
    /// ([`super::mailbox`]).
    Mailbox(UnixStream),
}

impl GuestNotifier {
    /// Signals the guest's `vector`; false if no guest is connected.
    pub fn notify(&self, vector: usize) -> bool {
        let guest = self
            .guest
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        match guest.as_ref() {
            Some(GuestLine::Eventfds(fds)) => fds[vector].write(1).is_ok(),
            Some(GuestLine::Mailbox(stream)) => u8::try_from(vector)
                .is_ok_and(|byte| std::io::Write::write_all(&mut &*stream, &[byte]).is_ok()),
            None => false,
        }
    }

    /// True while a guest is connected.
    pub fn connected(&self) -> bool {
        self.guest
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .is_some()
    }

    /// Guests refused so far because one was connected.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    fn count_refused(&self) -> u64 {
        self.refused.fetch_add(1, Ordering::Relaxed) + 1
    }

    pub(crate) fn set(&self, line: Option<GuestLine>) {
        *self
            .guest
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = line;
    }
}

/// The listening server.
pub struct IvshmemServer {
    listener: UnixListener,
    path: PathBuf,
    shm: File,
    mcu: Arc<McuDoorbell>,
    guest: Arc<GuestNotifier>,
}

impl IvshmemServer {
    /// Binds `path` (replacing a stale socket file, never any other file).
    pub fn bind(path: &Path, shm: &File) -> Result<IvshmemServer, IvshmemError> {
        let shown = path.display().to_string();
        let listener = crate::listen::bind(path, "ivshmem socket").map_err(IvshmemError::Listen)?;
        let shm = shm.try_clone().map_err(|source| IvshmemError::Socket {
            path: shown,
            source,
        })?;
        let mcu = Arc::new(McuDoorbell::new()?);
        Ok(IvshmemServer {
            listener,
            path: path.to_path_buf(),
            shm,
            mcu,
            guest: Arc::new(GuestNotifier::default()),
        })
    }

    /// The MCU's doorbell eventfds.
    pub fn mcu_doorbell(&self) -> Arc<McuDoorbell> {
        Arc::clone(&self.mcu)
    }

    /// The handle that interrupts the guest.
    pub fn guest_notifier(&self) -> Arc<GuestNotifier> {
        Arc::clone(&self.guest)
    }

    /// Serves connections until `stop` becomes readable.
    pub fn run(&self, stop: BorrowedFd<'_>) -> Result<(), IvshmemError> {
        let mut guest: Option<UnixStream> = None;
        loop {
            let mut fds = vec![
                PollFd::new(stop, PollFlags::POLLIN),
                PollFd::new(self.listener.as_fd(), PollFlags::POLLIN),
            ];
            if let Some(stream) = &guest {
                fds.push(PollFd::new(stream.as_fd(), PollFlags::POLLIN));
            }
            match poll(&mut fds, PollTimeout::NONE) {
                Err(nix::Error::EINTR) => continue,
                other => other.map_err(sys("polling the ivshmem socket"))?,
            };
            let ready = |fd: &PollFd| fd.revents().is_some_and(|r| !r.is_empty());
            let (stop_ready, accept_ready) = (ready(&fds[0]), ready(&fds[1]));
            let guest_ready = fds.get(2).is_some_and(ready);
            drop(fds);
            if stop_ready {
                return Ok(());
            }
            if guest_ready {
                // The protocol is one-way: anything readable on the guest's stream is EOF.
                let mut byte = [0u8; 1];
                let closed = guest.as_ref().is_some_and(|s| {
                    matches!(nix::unistd::read(s.as_raw_fd(), &mut byte), Ok(0) | Err(_))
                });
                if closed {
                    log::info!("ivshmem: guest (peer {GUEST_PEER_ID}) disconnected");
                    self.guest.set(None);
                    guest = None;
                }
            }
            if accept_ready {
                let (stream, _) = match self.listener.accept() {
                    Ok(conn) => conn,
                    Err(e) => {
                        log::warn!("ivshmem: accept on {}: {e}", self.path.display());
                        continue;
                    }
                };
                if guest.is_some() {
                    self.refuse(&stream);
                    continue;
                }
                match self.greet(&stream) {
                    Ok(()) => {
                        log::info!("ivshmem: guest connected as peer {GUEST_PEER_ID}");
                        guest = Some(stream);
                    }
                    Err(e) => log::warn!("ivshmem: setting up a guest failed: {e}"),
                }
            }
        }
    }

    /// Refuses a second guest: the protocol version, then an ID no peer can have (-1), then
    /// the connection closes. QEMU's `ivshmem_recv_setup` then fails the device's realize
    /// ("server sent invalid ID message") and the machine does not start; merely closing the
    /// connection would leave QEMU reading it forever (`ivshmem_recv_msg` retries on EOF).
    fn refuse(&self, stream: &UnixStream) {
        let refused = self.guest.count_refused();
        log::warn!(
            "ivshmem: refusing a second guest while peer {GUEST_PEER_ID} is connected \
             ({refused} refused so far)"
        );
        let told = send(stream, PROTOCOL_VERSION, None).and_then(|()| send(stream, -1, None));
        if let Err(e) = told {
            log::warn!("ivshmem: telling the refused guest: {e}");
        }
    }

    /// Sends the setup messages of the spec, in the order QEMU's `ivshmem_recv_setup` expects.
    /// Sends a new guest its setup and makes it the guest interrupts are raised in. It becomes
    /// that before its own eventfds are sent, the setup's last messages: from then on it may act
    /// (ring the MCU, wait for a state change), and an interrupt raised before it has read them
    /// waits in the eventfd's counter instead of finding no guest. On a failed send there is no
    /// guest.
    fn greet(&self, stream: &UnixStream) -> Result<(), IvshmemError> {
        let own = [new_eventfd()?, new_eventfd()?];
        send(stream, PROTOCOL_VERSION, None)?;
        send(stream, i64::from(GUEST_PEER_ID), None)?;
        send(stream, -1, Some(self.shm.as_fd()))?;
        for fd in &self.mcu.vectors {
            send(stream, i64::from(MCU_PEER_ID), Some(fd.as_fd()))?;
        }
        let mut line = self
            .guest
            .guest
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *line = Some(GuestLine::Eventfds(own));
        if let Some(GuestLine::Eventfds(own)) = line.as_ref() {
            for fd in own {
                if let Err(e) = send(stream, i64::from(GUEST_PEER_ID), Some(fd.as_fd())) {
                    *line = None;
                    return Err(e);
                }
            }
        }
        Ok(())
    }
}

impl Drop for IvshmemServer {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// One protocol message: an int64 little-endian, optionally with one fd by SCM_RIGHTS.
fn send(stream: &UnixStream, value: i64, fd: Option<BorrowedFd<'_>>) -> Result<(), IvshmemError> {
    let bytes = value.to_le_bytes();
    let iov = [IoSlice::new(&bytes)];
    let raw = fd.map(|fd| [fd.as_raw_fd()]);
    let cmsgs: Vec<ControlMessage<'_>> = raw.iter().map(|r| ControlMessage::ScmRights(r)).collect();
    let sent = sendmsg::<UnixAddr>(
        stream.as_raw_fd(),
        &iov,
        &cmsgs,
        MsgFlags::MSG_NOSIGNAL,
        None,
    )
    .map_err(sys("sending an ivshmem message"))?;
    if sent != bytes.len() {
        return Err(IvshmemError::Protocol(format!(
            "short send: {sent} of 8 bytes"
        )));
    }
    Ok(())
}
