//! The loop that releases the resident chains when the emulator runs without the rpmsg board
//! (`--unix-socket` and/or `--serial`/`--serial-pty`): the MCU's chain timer and nothing else.
//! Results go to the socket clients subscribed to them and to the serial line
//! ([`crate::subscribers`]); with the board, its own loop releases the chains and results go to
//! rpmsg, the subscribers and the serial line alike.

use std::os::fd::{AsFd, BorrowedFd};
use std::sync::Arc;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::eventfd::{EfdFlags, EventFd};
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};

use crate::mcu::Mcu;

/// The chain timer and the wake-up control frames give it.
pub struct ChainLoop {
    mcu: Arc<Mcu>,
    timer: TimerFd,
    wake: Arc<EventFd>,
}

impl ChainLoop {
    /// Takes over releasing `mcu`'s chains (starting one is refused without a loop).
    pub fn new(mcu: Arc<Mcu>) -> nix::Result<ChainLoop> {
        let timer = TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_CLOEXEC | TimerFlags::TFD_NONBLOCK,
        )?;
        let wake = Arc::new(EventFd::from_value_and_flags(
            0,
            EfdFlags::EFD_CLOEXEC | EfdFlags::EFD_NONBLOCK,
        )?);
        let waker = Arc::clone(&wake);
        mcu.set_chains_released(Box::new(move || {
            let _ = waker.write(1);
        }));
        Ok(ChainLoop { mcu, timer, wake })
    }

    /// Releases what is due until `stop` is readable.
    pub fn run(&self, stop: BorrowedFd<'_>) -> nix::Result<()> {
        loop {
            match self.mcu.chains_next_due() {
                Some(at) => self.timer.set(
                    Expiration::OneShot(at),
                    TimerSetTimeFlags::TFD_TIMER_ABSTIME,
                )?,
                None => self.timer.unset()?,
            }
            let mut fds = [
                PollFd::new(stop, PollFlags::POLLIN),
                PollFd::new(self.wake.as_fd(), PollFlags::POLLIN),
                PollFd::new(self.timer.as_fd(), PollFlags::POLLIN),
            ];
            match poll(&mut fds, PollTimeout::NONE) {
                Err(nix::Error::EINTR) => continue,
                other => other?,
            };
            let ready = |i: usize| fds[i].revents().is_some_and(|r| !r.is_empty());
            if ready(0) {
                return Ok(());
            }
            if ready(1) {
                let _ = self.wake.read();
            }
            if ready(2) {
                let _ = self.timer.wait();
            }
            // No transport of its own: only the subscribers and lines take the results.
            self.mcu.release_chains(&mut |_| false);
        }
    }
}
