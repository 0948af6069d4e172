//! An MCU endpoint on a Unix socket that also brings the frames the MCU sends unasked (a
//! resident chain's results): it subscribes once ([`crate::wire`]'s empty message) and then tells
//! each flagged frame from the replies, queueing those that arrive while a reply is awaited.
//! What `qf resident observe --mcu-socket` reads; plain requests go through
//! [`crate::domain::McuSocket`].

use crate::domain::{McuChannel, McuTransport};
use crate::qfabric_dev::Split;
use crate::wire::{read_any, split_reply, write_message, MAX_MESSAGE_LEN};
use anyhow::{bail, Context, Result};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use qf_abi::MAX_FRAME_LEN;
use std::collections::VecDeque;
use std::io::ErrorKind;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Frames sent unasked kept while a reply is awaited (as many as `/dev/qfabricN` queues); more
/// are dropped and counted.
pub const QUEUE: usize = 32;

/// A subscribed connection to an MCU endpoint socket.
pub struct SubscribedSocket {
    stream: UnixStream,
    path: PathBuf,
    queue: VecDeque<Vec<u8>>,
    /// Frames sent unasked that found the queue full.
    pub dropped: u64,
}

/// The MCU's channel on a subscribed socket.
pub type McuSubscribed = McuChannel<SubscribedSocket>;

impl McuSubscribed {
    /// Connects to `path` and subscribes; every reply is awaited at most `timeout`.
    pub fn connect(path: &Path, timeout: Duration) -> Result<McuSubscribed> {
        Ok(McuChannel::new(SubscribedSocket::connect(path)?, timeout))
    }
}

impl SubscribedSocket {
    /// Connects to `path` and subscribes; an endpoint that delivers nothing unasked is an error
    /// naming it.
    pub fn connect(path: &Path) -> Result<SubscribedSocket> {
        let what = || format!("the MCU endpoint {}", path.display());
        let mut stream =
            UnixStream::connect(path).with_context(|| format!("connecting to {}", what()))?;
        stream.set_read_timeout(Some(Duration::from_secs(5)))?;
        write_message(&mut stream, &[], None)
            .with_context(|| format!("subscribing at {}", what()))?;
        let mut body = [0u8; MAX_MESSAGE_LEN];
        match read_any(&mut stream, &mut body) {
            Ok(Some(message)) if message.len == 0 && !message.unasked => {}
            Ok(Some(message)) if !message.unasked => bail!(
                "{} answered the subscription with a {}-byte frame: it delivers no results on its socket (an emulator older than subscriptions)",
                what(),
                message.len
            ),
            Ok(Some(_)) => bail!("{} sent a frame unasked before the subscription was answered", what()),
            Ok(None) => bail!("{} closed the connection when asked to subscribe", what()),
            Err(e) => return Err(e).with_context(|| format!("subscribing at {}", what())),
        }
        Ok(SubscribedSocket {
            stream,
            path: path.to_owned(),
            queue: VecDeque::new(),
            dropped: 0,
        })
    }

    fn keep(&mut self, frame: &[u8]) {
        if self.queue.len() < QUEUE {
            self.queue.push_back(frame.to_vec());
        } else {
            self.dropped += 1;
        }
    }

    /// Reads the next message within `timeout` (`None`: none came); a zero `timeout` takes only
    /// a message already there.
    fn next(
        &mut self,
        body: &mut [u8; MAX_MESSAGE_LEN],
        timeout: Duration,
    ) -> Result<Option<crate::wire::Message>> {
        // The socket's shortest read time-out is one scheduler tick (4 ms at HZ=250; a zero one
        // means "block forever"), so "none waiting" is asked of poll instead: a chain sending
        // faster than a tick would otherwise always have a frame for the wait.
        if timeout.is_zero() {
            let mut fds = [PollFd::new(self.stream.as_fd(), PollFlags::POLLIN)];
            if poll(&mut fds, PollTimeout::ZERO)
                .with_context(|| format!("polling {}", self.path.display()))?
                == 0
            {
                return Ok(None);
            }
        }
        // A message is written whole, so once its first byte is here the rest is too.
        self.stream
            .set_read_timeout(Some(timeout.max(Duration::from_micros(1))))?;
        match read_any(&mut self.stream, body) {
            Ok(Some(message)) => Ok(Some(message)),
            Ok(None) => bail!(
                "the MCU endpoint {} closed the connection",
                self.path.display()
            ),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => Ok(None),
            Err(e) => Err(e).with_context(|| format!("reading from {}", self.path.display())),
        }
    }
}

impl McuTransport for SubscribedSocket {
    fn round_trip(
        &mut self,
        request: &[u8],
        response: &mut [u8; MAX_FRAME_LEN],
        timeout: Duration,
    ) -> Result<(usize, Option<Split>)> {
        let start = Instant::now();
        write_message(&mut self.stream, request, None)
            .with_context(|| format!("sending a request to {}", self.path.display()))?;
        let mut body = [0u8; MAX_MESSAGE_LEN];
        loop {
            let left = timeout.saturating_sub(start.elapsed());
            let Some(message) = self.next(&mut body, left)? else {
                bail!(
                    "no reply from the MCU endpoint {} within {} ms",
                    self.path.display(),
                    timeout.as_millis()
                );
            };
            if message.unasked {
                let frame = body[..message.len].to_vec();
                self.keep(&frame);
                continue;
            }
            let (frame, _) = split_reply(&body[..message.len])
                .with_context(|| format!("reply from {}", self.path.display()))?;
            response[..frame.len()].copy_from_slice(frame);
            return Ok((frame.len(), None));
        }
    }

    fn receive(
        &mut self,
        buf: &mut [u8; MAX_FRAME_LEN],
        timeout: Duration,
    ) -> Result<Option<(usize, Option<u64>)>> {
        if let Some(frame) = self.queue.pop_front() {
            buf[..frame.len()].copy_from_slice(&frame);
            return Ok(Some((frame.len(), None)));
        }
        let mut body = [0u8; MAX_MESSAGE_LEN];
        match self.next(&mut body, timeout)? {
            None => Ok(None),
            Some(message) if message.unasked => {
                buf[..message.len].copy_from_slice(&body[..message.len]);
                Ok(Some((message.len, None)))
            }
            Some(message) => bail!(
                "the MCU endpoint {} sent a {}-byte reply nobody asked for",
                self.path.display(),
                message.len
            ),
        }
    }
}
