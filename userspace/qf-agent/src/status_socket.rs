//! The daemon's status socket: one request line in, one JSON line out, every exchange bounded
//! in size and time at both ends.
//!
//! * A request is at most [`REQUEST_MAX`] bytes up to and including its newline; a reply at most
//!   [`REPLY_MAX`]. A peer that sends more without a newline gets an error naming the limit and
//!   is closed; nothing past the limit is ever buffered.
//! * The daemon gives each connection [`CLIENT_DEADLINE`] for its whole exchange (request and
//!   reply), then answers with an error naming the deadline and closes it. One thread serves
//!   every connection through `poll`, up to [`CLIENTS_MAX`] at once (a new connection beyond that
//!   closes the oldest), so a slow or trickling client holds only its own slot, never the others.
//! * `qf status` gives its whole exchange (connecting, asking, reading the answer) one deadline,
//!   [`QUERY_TIMEOUT`] by default.

use anyhow::{Context, Result};
use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Longest request, newline included.
pub const REQUEST_MAX: usize = 64;
/// Longest reply, newline included.
pub const REPLY_MAX: usize = 1 << 20;
/// The daemon's deadline for one connection's whole exchange.
pub const CLIENT_DEADLINE: Duration = Duration::from_secs(2);
/// Connections the daemon serves at once; a new one beyond that closes the oldest.
pub const CLIENTS_MAX: usize = 32;
/// `qf status`'s deadline for its whole exchange.
pub const QUERY_TIMEOUT: Duration = Duration::from_secs(5);
/// How often the serving loop looks at the stop flag while nothing happens.
const STOP_CHECK: Duration = Duration::from_millis(50);

/// A reply that is an error, as JSON (`{"error":"..."}`).
pub fn error_reply(message: &str) -> String {
    serde_json::json!({ "error": message }).to_string()
}

/// One connection: its request so far, then its reply and how much of it is written.
struct Client {
    stream: UnixStream,
    deadline: Instant,
    request: [u8; REQUEST_MAX],
    received: usize,
    reply: Option<(Vec<u8>, usize)>,
}

impl Client {
    fn new(stream: UnixStream, now: Instant) -> Client {
        Client {
            stream,
            deadline: now + CLIENT_DEADLINE,
            request: [0; REQUEST_MAX],
            received: 0,
            reply: None,
        }
    }

    fn set_reply(&mut self, mut reply: String) {
        if reply.len() >= REPLY_MAX {
            reply = error_reply(&format!(
                "the reply ({} bytes) exceeds the status socket's limit of {REPLY_MAX} bytes",
                reply.len()
            ));
        }
        reply.push('\n');
        self.reply = Some((reply.into_bytes(), 0));
    }

    /// Reads what is there (never past [`REQUEST_MAX`]); false when the peer left.
    fn read(&mut self, answer: &dyn Fn(&str) -> String) -> bool {
        while self.reply.is_none() {
            let start = self.received;
            match self.stream.read(&mut self.request[start..]) {
                Ok(0) => return false,
                Ok(n) => {
                    self.received += n;
                    let newline = self.request[start..self.received]
                        .iter()
                        .position(|&b| b == b'\n');
                    if let Some(at) = newline {
                        let line = String::from_utf8_lossy(&self.request[..start + at]);
                        let reply = answer(line.trim());
                        self.set_reply(reply);
                    } else if self.received == REQUEST_MAX {
                        self.set_reply(error_reply(&format!(
                            "no newline within {REQUEST_MAX} bytes, the status socket's limit for a request (send `status` and a newline)"
                        )));
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
                Err(_) => return false,
            }
        }
        true
    }

    /// Writes what the socket takes; false when the reply is out (or cannot be).
    fn write(&mut self) -> bool {
        let Some((reply, written)) = &mut self.reply else {
            return true;
        };
        while *written < reply.len() {
            match self.stream.write(&reply[*written..]) {
                Ok(0) => return false,
                Ok(n) => *written += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
                Err(_) => return false,
            }
        }
        false
    }

    /// Moves the exchange on; false when the connection is to be closed.
    fn progress(
        &mut self,
        ready: PollFlags,
        now: Instant,
        answer: &dyn Fn(&str) -> String,
    ) -> bool {
        if self.reply.is_none() && !ready.is_empty() && !self.read(answer) {
            return false;
        }
        if self.reply.is_some() && !self.write() {
            return false;
        }
        if now >= self.deadline {
            self.close_with(&format!(
                "no complete exchange within {} ms, the status socket's deadline per connection",
                CLIENT_DEADLINE.as_millis()
            ));
            return false;
        }
        true
    }

    /// Says why in one non-blocking write (if no reply was started), before the close.
    fn close_with(&mut self, why: &str) {
        if self.reply.as_ref().is_none_or(|(_, written)| *written == 0) {
            let mut line = error_reply(why);
            line.push('\n');
            let _ = self.stream.write(line.as_bytes());
        }
    }
}

/// Serves the status socket until `stop` is raised: each complete request line (trimmed) is
/// answered with `answer`'s reply on one line.
pub fn serve(listener: &UnixListener, stop: &AtomicBool, answer: &dyn Fn(&str) -> String) {
    // A blocking listener would hold the loop in accept(); without non-blocking mode the loop
    // still serves, one connection per poll.
    let _ = listener.set_nonblocking(true);
    let mut clients: VecDeque<Client> = VecDeque::with_capacity(CLIENTS_MAX);
    let mut ready: Vec<PollFlags> = Vec::with_capacity(CLIENTS_MAX + 1);
    while !stop.load(Ordering::SeqCst) {
        let now = Instant::now();
        let wait = clients
            .iter()
            .map(|c| c.deadline.saturating_duration_since(now))
            .fold(STOP_CHECK, Duration::min);
        ready.clear();
        {
            let mut fds = Vec::with_capacity(clients.len() + 1);
            fds.push(PollFd::new(listener.as_fd(), PollFlags::POLLIN));
            for client in &clients {
                let events = if client.reply.is_some() {
                    PollFlags::POLLOUT
                } else {
                    PollFlags::POLLIN
                };
                fds.push(PollFd::new(client.stream.as_fd(), events));
            }
            let timeout = PollTimeout::try_from(wait).unwrap_or(PollTimeout::MAX);
            match poll(&mut fds, timeout) {
                Ok(_) => ready.extend(
                    fds.iter()
                        .map(|f| f.revents().unwrap_or(PollFlags::empty())),
                ),
                Err(Errno::EINTR) => continue,
                Err(_) => {
                    std::thread::sleep(STOP_CHECK);
                    continue;
                }
            }
        }
        let now = Instant::now();
        let mut flags = ready[1..].iter();
        clients.retain_mut(|client| {
            let flags = flags.next().copied().unwrap_or(PollFlags::empty());
            client.progress(flags, now, answer)
        });
        if !ready[0].is_empty() {
            accept(listener, &mut clients, now, answer);
        }
    }
}

/// Takes the waiting connections (at most [`CLIENTS_MAX`] per call); beyond [`CLIENTS_MAX`]
/// open ones, each new connection closes the oldest.
fn accept(
    listener: &UnixListener,
    clients: &mut VecDeque<Client>,
    now: Instant,
    answer: &dyn Fn(&str) -> String,
) {
    for _ in 0..CLIENTS_MAX {
        let stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return,
            // Out of descriptors (EMFILE) or the like: the listener stays readable, so wait a
            // little instead of spinning on it.
            Err(_) => {
                std::thread::sleep(STOP_CHECK);
                return;
            }
        };
        if stream.set_nonblocking(true).is_err() {
            continue;
        }
        if clients.len() == CLIENTS_MAX {
            if let Some(mut oldest) = clients.pop_front() {
                oldest.close_with(&format!(
                    "closed: {CLIENTS_MAX} connections at once is the status socket's limit, and this was the oldest"
                ));
            }
        }
        let mut client = Client::new(stream, now);
        // A request that is already there is answered at once.
        if client.progress(PollFlags::POLLIN, now, answer) {
            clients.push_back(client);
        }
    }
}

/// Connects, sends `request` and returns the reply line (without its newline), all within
/// `timeout`; a reply longer than [`REPLY_MAX`] is refused without being buffered.
pub fn query(socket: &Path, request: &str, timeout: Duration) -> Result<String> {
    let deadline = Instant::now() + timeout;
    let name = socket.display();
    let late = |what: &str| {
        anyhow::anyhow!(
            "qfabricd at {name} {what} within {} ms (the deadline of the whole exchange)",
            timeout.as_millis()
        )
    };
    let left = || {
        deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
    };
    let mut stream = connect_by(socket, deadline)
        .with_context(|| format!("connecting to qfabricd at {name}"))?
        .ok_or_else(|| late("did not accept the connection"))?;
    let mut line = request.as_bytes().to_vec();
    line.push(b'\n');
    stream.set_write_timeout(Some(
        left().ok_or_else(|| late("did not take the request"))?,
    ))?;
    match stream.write_all(&line) {
        Ok(()) => {}
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
            return Err(late("did not take the request"));
        }
        Err(e) => {
            return Err(e).with_context(|| format!("asking qfabricd at {name} for its status"))
        }
    }
    let mut reply = Vec::new();
    let mut chunk = vec![0u8; 16 << 10];
    loop {
        // A read time-out surfaces as EAGAIN ("Resource temporarily unavailable"): say what it is.
        let wait = left().ok_or_else(|| late("accepted but did not answer"))?;
        stream.set_read_timeout(Some(wait))?;
        let n = match stream.read(&mut chunk) {
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err(late("accepted but did not answer"));
            }
            Err(e) => {
                return Err(e).with_context(|| format!("reading the status reply from {name}"))
            }
        };
        let newline = chunk[..n].iter().position(|&b| b == b'\n');
        let take = newline.unwrap_or(n);
        if reply.len() + take >= REPLY_MAX {
            anyhow::bail!(
                "the status reply from {name} exceeds {REPLY_MAX} bytes without ending its line (the limit of a status reply); is that qfabricd's socket?"
            );
        }
        reply.extend_from_slice(&chunk[..take]);
        if newline.is_some() || n == 0 {
            break;
        }
    }
    String::from_utf8(reply).with_context(|| format!("the status reply from {name} is not UTF-8"))
}

/// Connects without waiting past `deadline` (a listener whose backlog is full makes a blocking
/// `connect` wait for as long as it stays full); `None` when the deadline passed.
fn connect_by(socket: &Path, deadline: Instant) -> std::io::Result<Option<UnixStream>> {
    use nix::sys::socket::{
        connect, socket as open_socket, AddressFamily, SockFlag, SockType, UnixAddr,
    };
    let address = UnixAddr::new(socket)?;
    let fd: OwnedFd = open_socket(
        AddressFamily::Unix,
        SockType::Stream,
        SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC,
        None,
    )?;
    loop {
        match connect(std::os::fd::AsRawFd::as_raw_fd(&fd), &address) {
            Ok(()) => break,
            Err(Errno::EINTR) => {}
            // The backlog is full: a Unix socket's connect cannot be waited for with poll.
            Err(Errno::EAGAIN) => {
                if Instant::now() >= deadline {
                    return Ok(None);
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(errno) => return Err(errno.into()),
        }
    }
    let stream = UnixStream::from(fd);
    stream.set_nonblocking(false)?;
    Ok(Some(stream))
}
