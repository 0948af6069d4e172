//! The MCU endpoint on a Unix stream socket, for the host agent (no QEMU), in the agent's own
//! framing (`qf_execution::wire`: u16 big-endian length, one frame; replies carry the 8-byte
//! compute trailer). One reply per request unless a fault knob withholds it. Answers come from
//! the same [`Mcu`] as over rpmsg. A client that sends the subscribe message (an empty body)
//! also gets the resident chains' results, flagged as unasked ([`crate::subscribers`]).

use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use qf_abi::MAX_FRAME_LEN;
use qf_execution::wire::{read_message, MAX_MESSAGE_LEN};

use crate::mcu::Mcu;
use crate::subscribers::ClientWriter;

/// The listening endpoint.
pub struct UnixEndpoint {
    listener: UnixListener,
    path: PathBuf,
}

impl UnixEndpoint {
    /// Binds `path` (replacing a stale socket file, never any other file).
    pub fn bind(path: &Path) -> io::Result<UnixEndpoint> {
        let listener = crate::listen::bind(path, "unix socket")?;
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

fn serve_client(stream: UnixStream, mcu: &Mcu) {
    let writer = match stream.try_clone() {
        Ok(clone) => Arc::new(ClientWriter::new(clone)),
        Err(e) => {
            log::warn!("unix endpoint: cannot serve a client: {e}");
            return;
        }
    };
    serve_requests(&stream, &writer, mcu);
    mcu.subscribers().remove(&writer);
    // The accept loop keeps a clone of this stream: shut it down so the client sees the end.
    let _ = stream.shutdown(std::net::Shutdown::Both);
}

fn serve_requests(mut stream: &UnixStream, writer: &Arc<ClientWriter>, mcu: &Mcu) {
    let mut request = [0u8; MAX_MESSAGE_LEN];
    let mut reply = [0u8; MAX_FRAME_LEN];
    loop {
        let len = match read_message(&mut stream, &mut request) {
            Ok(Some(len)) => len,
            Ok(None) => return,
            Err(e) => {
                // e.g. a length prefix above the agent's limit: the stream cannot be resynchronised.
                log::warn!("unix endpoint: closing a client: {e}");
                return;
            }
        };
        if len == 0 {
            // The subscribe message: results from now on, acknowledged with an empty body.
            mcu.subscribers().add(Arc::clone(writer));
            if let Err(e) = writer.reply(&[], None) {
                log::debug!("unix endpoint: client gone: {e}");
                return;
            }
            continue;
        }
        if let Some(answer) = mcu.handle(&request[..len], &mut reply) {
            let frame = &reply[..answer.len];
            if let Err(e) = writer.reply(frame, Some(answer.compute_ns)) {
                log::debug!("unix endpoint: client gone: {e}");
                return;
            }
        }
    }
}
