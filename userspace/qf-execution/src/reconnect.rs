//! Reconnecting with bounded backoff: the one rule every MCU endpoint that can go away follows
//! (the Unix socket, `rpmsg_char`, the kernel dispatch device `/dev/qfabricN`).
//!
//! A [`Reconnecting`] holds an open link (a connected socket, an rpmsg endpoint, an open device)
//! or none, and knows how to open one. The endpoint decides which failures lose the link
//! ([`Reconnecting::lose`]): a socket any failure (a late reply would be read as the next
//! request's), `rpmsg_char` and the kernel device only a channel that went away. The next use
//! opens it again at once; while opening keeps failing, attempts are spaced by a backoff doubling
//! from [`FIRST_BACKOFF`] up to [`MAX_BACKOFF`], and a use in between fails at once naming what is
//! down and why. Nothing here repeats a request: a failed one may have run on the MCU.

use anyhow::{bail, Result};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use std::fmt;
use std::os::fd::BorrowedFd;
use std::time::{Duration, Instant};

/// Wait after the first failed attempt to open a link.
pub const FIRST_BACKOFF: Duration = Duration::from_millis(50);
/// Longest wait between two attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// How a link is opened (again).
type Opener<L> = Box<dyn FnMut() -> Result<L> + Send>;

/// A link that is opened again, with bounded backoff, after it went away.
pub struct Reconnecting<L> {
    link: Option<L>,
    open: Opener<L>,
    /// What the link reaches, for messages ("the MCU endpoint /run/mcu.sock").
    what: String,
    /// Consecutive failed attempts (0 while open, or after a link was lost).
    failures: u32,
    /// No attempt before this instant.
    retry_at: Instant,
    /// Why the link is down, while it is.
    last_error: Option<String>,
}

impl<L> fmt::Debug for Reconnecting<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reconnecting")
            .field("what", &self.what)
            .field("open", &self.link.is_some())
            .field("failures", &self.failures)
            .field("last_error", &self.last_error)
            .finish()
    }
}

impl<L> Reconnecting<L> {
    /// Tries to open the link once and returns either way; a link that did not open is tried
    /// again by later uses.
    pub fn new(what: impl Into<String>, open: impl FnMut() -> Result<L> + Send + 'static) -> Self {
        let mut link = Self::closed(what.into(), Box::new(open));
        let _ = link.link();
        link
    }

    /// Opens the link now; its error is the opener's.
    pub fn connect(
        what: impl Into<String>,
        mut open: impl FnMut() -> Result<L> + Send + 'static,
    ) -> Result<Self> {
        let first = open()?;
        let mut link = Self::closed(what.into(), Box::new(open));
        link.link = Some(first);
        Ok(link)
    }

    fn closed(what: String, open: Opener<L>) -> Self {
        Self {
            link: None,
            open,
            what,
            failures: 0,
            retry_at: Instant::now(),
            last_error: None,
        }
    }

    /// The open link, opened first if it is not and the backoff allows.
    pub fn link(&mut self) -> Result<&mut L> {
        if self.link.is_none() {
            let now = Instant::now();
            if now < self.retry_at {
                bail!(
                    "{} is down ({}); next attempt in {} ms",
                    self.what,
                    self.last_error.as_deref().unwrap_or("not open"),
                    (self.retry_at - now).as_millis()
                );
            }
            match (self.open)() {
                Ok(link) => {
                    self.link = Some(link);
                    self.failures = 0;
                    self.last_error = None;
                }
                Err(error) => {
                    let delay = FIRST_BACKOFF
                        .saturating_mul(1 << self.failures.min(16))
                        .min(MAX_BACKOFF);
                    self.failures = self.failures.saturating_add(1);
                    self.retry_at = now + delay;
                    self.last_error = Some(format!("{error:#}"));
                    return Err(error);
                }
            }
        }
        match self.link.as_mut() {
            Some(link) => Ok(link),
            None => bail!("{} is not open", self.what),
        }
    }

    /// Drops the link because of `why`; the next use opens it again at once.
    pub fn lose(&mut self, why: impl Into<String>) {
        self.link = None;
        self.last_error = Some(why.into());
    }

    /// Whether the link is open now.
    pub fn is_open(&self) -> bool {
        self.link.is_some()
    }

    /// Whether the link can be used now: an open link is first asked by `probe` whether it is
    /// still alive (`Some(why)` when not, and it is lost), then a closed one is opened if the
    /// backoff allows.
    pub fn check(&mut self, probe: impl FnOnce(&mut L) -> Option<String>) -> bool {
        if let Some(why) = self.link.as_mut().and_then(probe) {
            self.lose(why);
        }
        self.link().is_ok()
    }

    /// Why the link is down, while it is.
    pub fn down_reason(&self) -> Option<String> {
        self.last_error.clone()
    }

    /// What the link reaches.
    pub fn what(&self) -> &str {
        &self.what
    }

    /// Takes the open link out (to close it properly), leaving none.
    pub fn take(&mut self) -> Option<L> {
        self.link.take()
    }
}

/// Whether an open file's peer hung up (`POLLHUP`, `POLLERR`, `POLLNVAL`), asked without
/// waiting: how `rpmsg_char` (`POLLERR`) and `/dev/qfabricN` (`POLLHUP`) say between calls that
/// their channel went away.
pub fn hung_up(fd: BorrowedFd<'_>) -> bool {
    let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
    poll(&mut fds, PollTimeout::ZERO).unwrap_or(0) > 0
        && fds[0].revents().is_some_and(|r| {
            r.intersects(PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLNVAL)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
    use std::sync::Arc;

    /// A link that opens only while `up` holds, counting attempts.
    fn flaky(up: &Arc<AtomicBool>, attempts: &Arc<AtomicU32>) -> impl FnMut() -> Result<u32> {
        let (up, attempts) = (up.clone(), attempts.clone());
        move || {
            let n = attempts.fetch_add(1, Ordering::SeqCst);
            if up.load(Ordering::SeqCst) {
                Ok(n)
            } else {
                bail!("the peer is away")
            }
        }
    }

    #[test]
    fn a_lost_link_reopens_at_once_then_backs_off_up_to_the_bound() {
        let up = Arc::new(AtomicBool::new(true));
        let attempts = Arc::new(AtomicU32::new(0));
        let mut link = Reconnecting::new("the test peer", flaky(&up, &attempts));
        assert!(link.is_open());
        assert_eq!(attempts.load(Ordering::SeqCst), 1);
        up.store(false, Ordering::SeqCst);
        link.lose("the peer closed");
        assert_eq!(link.down_reason().as_deref(), Some("the peer closed"));
        // The first use after a loss tries at once; it fails and the backoff starts.
        assert!(link.link().is_err());
        assert_eq!(attempts.load(Ordering::SeqCst), 2);
        // Uses inside the backoff fail at once, naming the link and the reason, without trying
        // (the backoff stretched, so a slow machine cannot outlast it).
        assert!(link.retry_at > Instant::now());
        link.retry_at = Instant::now() + Duration::from_secs(3600);
        for _ in 0..1000 {
            let error = format!("{:#}", link.link().unwrap_err());
            assert!(
                error.contains("the test peer is down (the peer is away)"),
                "{error}"
            );
        }
        assert_eq!(attempts.load(Ordering::SeqCst), 2);
        // The backoff doubles and stops at MAX_BACKOFF.
        for failures in 1..12u32 {
            link.retry_at = Instant::now();
            let before = Instant::now();
            assert!(!link.check(|_| None));
            let after = Instant::now();
            let expected = FIRST_BACKOFF.saturating_mul(1 << failures).min(MAX_BACKOFF);
            assert!(link.retry_at >= before + expected && link.retry_at <= after + expected);
        }
        // The peer is back: the next attempt after the backoff opens the link, and the reason
        // is gone.
        up.store(true, Ordering::SeqCst);
        link.retry_at = Instant::now();
        assert!(link.check(|_| None));
        assert_eq!(link.down_reason(), None);
        assert_eq!(link.failures, 0);
        // A probe that finds the link dead loses it, and the next use opens it again.
        let before = attempts.load(Ordering::SeqCst);
        assert!(link.check(|_| Some("hung up".to_owned())));
        assert_eq!(attempts.load(Ordering::SeqCst), before + 1);
    }

    #[test]
    fn a_pipe_whose_writer_closed_has_hung_up() {
        let (reader, writer) = nix::unistd::pipe().unwrap();
        assert!(!hung_up(std::os::fd::AsFd::as_fd(&reader)));
        drop(writer);
        assert!(hung_up(std::os::fd::AsFd::as_fd(&reader)));
    }

    #[test]
    fn connect_fails_with_the_openers_error() {
        let up = Arc::new(AtomicBool::new(false));
        let attempts = Arc::new(AtomicU32::new(0));
        let error = Reconnecting::connect("the test peer", flaky(&up, &attempts)).unwrap_err();
        assert_eq!(error.to_string(), "the peer is away");
        let link = Reconnecting::new("the test peer", flaky(&up, &attempts));
        assert!(!link.is_open());
        assert_eq!(link.down_reason().as_deref(), Some("the peer is away"));
    }
}
