//! The client side of the protocol, as QEMU's `ivshmem-doorbell` implements it
//! (`ivshmem_recv_setup` / `process_msg`): receives the shared memory and eventfds, then rings
//! peers and waits for its own vectors. Tests use it in place of QEMU; it is also a host tool.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{IoSliceMut, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::socket::{recvmsg, ControlMessageOwned, MsgFlags, UnixAddr};

use super::{sys, IvshmemError, PROTOCOL_VERSION, VECTORS};

/// A connected client: its id, the shared memory and the peers' eventfds.
pub struct IvshmemClient {
    stream: UnixStream,
    /// The id the server gave this client (its IVPosition register).
    pub id: u16,
    /// The shared-memory file (BAR2).
    pub shm: File,
    /// Size of the shared memory (`fstat`, as QEMU sizes BAR2).
    pub shm_size: u64,
    peers: BTreeMap<u16, Vec<File>>,
}

impl IvshmemClient {
    /// Connects and processes messages until the shared memory and this client's own
    /// `VECTORS` interrupt eventfds have arrived (or `timeout` passes).
    pub fn connect(path: &Path, timeout: Duration) -> Result<IvshmemClient, IvshmemError> {
        let stream = UnixStream::connect(path).map_err(|source| IvshmemError::Socket {
            path: path.display().to_string(),
            source,
        })?;
        let (version, fd) = recv(&stream, timeout)?;
        if version != PROTOCOL_VERSION || fd.is_some() {
            return Err(IvshmemError::Protocol(format!(
                "server sent version {version}, expecting 0"
            )));
        }
        let (id, fd) = recv(&stream, timeout)?;
        if fd.is_some() || !(0..=i64::from(u16::MAX)).contains(&id) {
            return Err(IvshmemError::Protocol(format!(
                "server sent invalid ID message {id}"
            )));
        }
        let id = id as u16;
        let mut shm = None;
        let mut peers: BTreeMap<u16, Vec<File>> = BTreeMap::new();
        while shm.is_none() || peers.get(&id).map_or(0, Vec::len) < VECTORS {
            let (msg, fd) = recv(&stream, timeout)?;
            match (msg, fd) {
                (-1, Some(fd)) if shm.is_none() => shm = Some(File::from(fd)),
                (-1, _) => {
                    return Err(IvshmemError::Protocol(
                        "unexpected shared memory message".into(),
                    ))
                }
                (peer @ 0..=65535, Some(fd)) => {
                    let list = peers.entry(peer as u16).or_default();
                    if list.len() >= VECTORS {
                        return Err(IvshmemError::Protocol(format!(
                            "Too many eventfd received, device has {VECTORS} vectors"
                        )));
                    }
                    list.push(File::from(fd));
                }
                (peer @ 0..=65535, None) => {
                    peers.remove(&(peer as u16));
                }
                (other, _) => {
                    return Err(IvshmemError::Protocol(format!(
                        "server sent invalid message {other}"
                    )))
                }
            }
        }
        let shm = shm.ok_or_else(|| IvshmemError::Protocol("no shared memory".into()))?;
        let shm_size = shm
            .metadata()
            .map_err(|e| {
                IvshmemError::Protocol(format!("can't determine size of shared memory: {e}"))
            })?
            .len();
        Ok(IvshmemClient {
            stream,
            id,
            shm,
            shm_size,
            peers,
        })
    }

    /// Number of vectors connected for `peer`.
    pub fn peer_vectors(&self, peer: u16) -> usize {
        self.peers.get(&peer).map_or(0, Vec::len)
    }

    /// What a write of `(peer << 16) | vector` to the Doorbell register does; false (ignored
    /// write) if that peer or vector is not connected.
    pub fn doorbell(&self, peer: u16, vector: usize) -> bool {
        match self.peers.get(&peer).and_then(|v| v.get(vector)) {
            Some(mut fd) => fd.write_all(&1u64.to_ne_bytes()).is_ok(),
            None => false,
        }
    }

    /// Waits up to `timeout` for an interrupt on this client's own `vector` and consumes it.
    pub fn wait_interrupt(&self, vector: usize, timeout: Duration) -> bool {
        let Some(mut fd) = self.peers.get(&self.id).and_then(|v| v.get(vector)) else {
            return false;
        };
        if !readable(fd.as_fd(), timeout) {
            return false;
        }
        let mut count = [0u8; 8];
        fd.read_exact(&mut count).is_ok()
    }

    /// Consumes any pending interrupt on `vector` without waiting; true if one was pending.
    pub fn take_interrupt(&self, vector: usize) -> bool {
        self.wait_interrupt(vector, Duration::ZERO)
    }

    /// Reads the next server message (connect/disconnect notifications) within `timeout`.
    pub fn next_message(&mut self, timeout: Duration) -> Result<(i64, bool), IvshmemError> {
        let (msg, fd) = recv(&self.stream, timeout)?;
        if let (Ok(peer), Some(fd)) = (u16::try_from(msg), fd.as_ref()) {
            let file = File::from(
                fd.try_clone()
                    .map_err(|e| IvshmemError::Protocol(e.to_string()))?,
            );
            self.peers.entry(peer).or_default().push(file);
        } else if let Ok(peer) = u16::try_from(msg) {
            self.peers.remove(&peer);
        }
        Ok((msg, fd.is_some()))
    }
}

fn readable(fd: BorrowedFd<'_>, timeout: Duration) -> bool {
    let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
    let millis = u16::try_from(timeout.as_millis()).unwrap_or(u16::MAX);
    matches!(poll(&mut fds, PollTimeout::from(millis)), Ok(n) if n > 0)
}

/// Receives one 8-byte message and the fd that came with it, as `ivshmem_recv_msg` does.
// The one place this crate needs `unsafe`: taking ownership of fds received by SCM_RIGHTS.
#[allow(unsafe_code)]
fn recv(stream: &UnixStream, timeout: Duration) -> Result<(i64, Option<OwnedFd>), IvshmemError> {
    let mut bytes = [0u8; 8];
    let mut got = 0;
    let mut fd = None;
    while got < bytes.len() {
        if !readable(stream.as_fd(), timeout) {
            return Err(IvshmemError::Protocol(format!(
                "no message from the server within {timeout:?}"
            )));
        }
        let mut iov = [IoSliceMut::new(&mut bytes[got..])];
        let mut space = nix::cmsg_space!([RawFd; 1]);
        let msg = recvmsg::<UnixAddr>(
            stream.as_raw_fd(),
            &mut iov,
            Some(&mut space),
            MsgFlags::MSG_CMSG_CLOEXEC,
        )
        .map_err(sys("receiving an ivshmem message"))?;
        if msg.bytes == 0 {
            return Err(IvshmemError::Protocol(
                "server closed the connection".into(),
            ));
        }
        for cmsg in msg.cmsgs().map_err(sys("reading ancillary data"))? {
            if let ControlMessageOwned::ScmRights(raw) = cmsg {
                for r in raw {
                    // SAFETY: the kernel has just installed `r` in our fd table for this message
                    // (SCM_RIGHTS); nothing else refers to it, so it is ours to own and close.
                    let owned = unsafe { OwnedFd::from_raw_fd(r) };
                    fd = Some(owned);
                }
            }
        }
        got += msg.bytes;
    }
    Ok((i64::from_le_bytes(bytes), fd))
}
