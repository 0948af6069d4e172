//! The MCU endpoint on a Unix stream socket, for the host agent (no QEMU): each frame is
//! preceded by its length as a u16 big-endian; one reply frame per request unless a fault knob
//! withholds it. Answers come from the same [`Mcu`] as over rpmsg.

use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use qf_abi::MAX_FRAME_LEN;

use crate::mcu::Mcu;

/// Bytes of the length prefix.
pub const PREFIX_LEN: usize = 2;

/// Writes one length-prefixed frame.
pub fn write_frame(stream: &mut impl Write, frame: &[u8]) -> io::Result<()> {
    let len = u16::try_from(frame.len()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "frame of {} bytes exceeds the u16 length prefix",
                frame.len()
            ),
        )
    })?;
    let mut message = Vec::with_capacity(PREFIX_LEN + frame.len());
    message.extend_from_slice(&len.to_be_bytes());
    message.extend_from_slice(frame);
    stream.write_all(&message)
}

/// Reads one length-prefixed frame into `buf`; `Ok(None)` on a clean end of stream.
pub fn read_frame(stream: &mut impl Read, buf: &mut Vec<u8>) -> io::Result<Option<usize>> {
    let mut prefix = [0u8; PREFIX_LEN];
    match stream.read_exact(&mut prefix) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = usize::from(u16::from_be_bytes(prefix));
    buf.resize(len, 0);
    stream.read_exact(buf)?;
    Ok(Some(len))
}

/// The listening endpoint.
pub struct UnixEndpoint {
    listener: UnixListener,
    path: PathBuf,
}

impl UnixEndpoint {
    /// Binds `path` (replacing a stale socket file, never any other file).
    pub fn bind(path: &Path) -> io::Result<UnixEndpoint> {
        if let Ok(meta) = std::fs::symlink_metadata(path) {
            if !meta.file_type().is_socket() {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!(
                        "{} exists and is not a socket; refusing to replace it",
                        path.display()
                    ),
                ));
            }
            std::fs::remove_file(path)?;
        }
        let listener = UnixListener::bind(path).map_err(|e| {
            io::Error::new(e.kind(), format!("unix socket {}: {e}", path.display()))
        })?;
        Ok(UnixEndpoint {
            listener,
            path: path.to_path_buf(),
        })
    }

    /// Accepts clients (one thread each) until `stop` is readable, then closes them all.
    pub fn run(&self, stop: BorrowedFd<'_>, mcu: &Arc<Mcu>) -> io::Result<()> {
        let mut clients: Vec<(UnixStream, JoinHandle<()>)> = Vec::new();
        let result = loop {
            let mut fds = [
                PollFd::new(stop, PollFlags::POLLIN),
                PollFd::new(self.listener.as_fd(), PollFlags::POLLIN),
            ];
            match poll(&mut fds, PollTimeout::NONE) {
                Err(nix::Error::EINTR) => continue,
                Err(e) => break Err(io::Error::from(e)),
                Ok(_) => {}
            }
            let ready: Vec<bool> = fds
                .iter()
                .map(|f| f.revents().is_some_and(|r| !r.is_empty()))
                .collect();
            if ready[0] {
                break Ok(());
            }
            if ready[1] {
                let stream = match self.listener.accept() {
                    Ok((stream, _)) => stream,
                    Err(e) => {
                        log::warn!("unix endpoint: accept: {e}");
                        continue;
                    }
                };
                let handle = stream.try_clone().and_then(|clone| {
                    let mcu = Arc::clone(mcu);
                    std::thread::Builder::new()
                        .name("unix-client".into())
                        .spawn(move || serve_client(clone, &mcu))
                });
                match handle {
                    Ok(handle) => clients.push((stream, handle)),
                    Err(e) => log::warn!("unix endpoint: cannot serve a client: {e}"),
                }
                clients.retain(|(_, h)| !h.is_finished());
            }
        };
        for (stream, handle) in clients {
            let _ = stream.shutdown(std::net::Shutdown::Both);
            let _ = handle.join();
        }
        result
    }
}

impl Drop for UnixEndpoint {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn serve_client(mut stream: UnixStream, mcu: &Mcu) {
    let mut request = Vec::with_capacity(MAX_FRAME_LEN);
    let mut reply = [0u8; MAX_FRAME_LEN];
    loop {
        match read_frame(&mut stream, &mut request) {
            Ok(Some(_)) => {}
            Ok(None) => return,
            Err(e) => {
                log::debug!("unix endpoint: client gone: {e}");
                return;
            }
        }
        if let Some(answer) = mcu.handle(&request, &mut reply) {
            if let Err(e) = write_frame(&mut stream, &reply[..answer.len]) {
                log::debug!("unix endpoint: client gone: {e}");
                return;
            }
        }
    }
}
