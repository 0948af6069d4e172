//! Unix-socket clients that asked for the frames the MCU sends unasked (resident-chain results;
//! `qf_execution::wire`'s subscribe message). A result goes to every live subscriber that can
//! take it at once, flagged as unasked; a subscriber whose socket buffer is full misses it (the
//! MCU never waits on Linux), one that went away is forgotten. A serial line
//! ([`Subscribers::add_line`]) takes every result it can at once, for the emulator's life.

use std::io::Write;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use qf_execution::wire::{write_message, write_unasked};

/// One client connection's writing half, shared by its reply thread and the chains' releases
/// (the lock keeps their messages whole).
pub struct ClientWriter {
    stream: Mutex<UnixStream>,
}

impl ClientWriter {
    pub fn new(stream: UnixStream) -> ClientWriter {
        ClientWriter {
            stream: Mutex::new(stream),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, UnixStream> {
        self.stream.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes a reply (blocking, like any reply).
    pub fn reply(&self, frame: &[u8], compute_ns: Option<u64>) -> std::io::Result<()> {
        write_message(&mut *self.lock(), frame, compute_ns)
    }

    /// Writes a frame unasked if the socket can take it whole now: a Unix stream socket is
    /// writable (POLLOUT) only with at least three quarters of its send buffer free, far more
    /// than one frame, so the write never waits. `Ok(false)`: the client reads too slowly.
    fn offer(&self, frame: &[u8]) -> std::io::Result<bool> {
        let mut stream = self.lock();
        let mut fds = [PollFd::new(stream.as_fd(), PollFlags::POLLOUT)];
        let ready = poll(&mut fds, PollTimeout::ZERO).map_err(std::io::Error::from)?;
        let revents = fds[0].revents().unwrap_or(PollFlags::empty());
        if revents.intersects(PollFlags::POLLERR | PollFlags::POLLHUP) {
            return Err(std::io::ErrorKind::BrokenPipe.into());
        }
        if ready == 0 || !revents.contains(PollFlags::POLLOUT) {
            return Ok(false);
        }
        write_unasked(&mut *stream, frame)?;
        stream.flush()?;
        Ok(true)
    }
}

/// A line that takes the results it can at once (true: it took the frame), such as
/// [`crate::serial_endpoint::SerialEndpoint::results`].
pub type ResultLine = Arc<dyn Fn(&[u8]) -> bool + Send + Sync>;

/// The subscribed clients, and the lines that take every result.
#[derive(Default)]
pub struct Subscribers {
    clients: Mutex<Vec<Arc<ClientWriter>>>,
    lines: Mutex<Vec<ResultLine>>,
}

impl Subscribers {
    pub fn add(&self, client: Arc<ClientWriter>) {
        let mut clients = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        if !clients.iter().any(|c| Arc::ptr_eq(c, &client)) {
            clients.push(client);
        }
    }

    pub fn remove(&self, client: &Arc<ClientWriter>) {
        self.clients
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|c| !Arc::ptr_eq(c, client));
    }

    /// Offers every result to `line` from now on.
    pub fn add_line(&self, line: ResultLine) {
        self.lines
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(line);
    }

    /// Offers `frame` to every line and subscriber; true if at least one took it.
    pub fn deliver(&self, frame: &[u8]) -> bool {
        let mut taken = false;
        for line in self.lines.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            taken |= line(frame);
        }
        let mut clients = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        clients.retain(|client| match client.offer(frame) {
            Ok(took) => {
                taken |= took;
                true
            }
            Err(e) => {
                log::debug!("unix endpoint: a subscriber went away: {e}");
                false
            }
        });
        taken
    }

    /// How many clients are subscribed.
    pub fn count(&self) -> usize {
        self.clients.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}
