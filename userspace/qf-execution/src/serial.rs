//! The MCU on a serial line: a UART between two chips (the Arduino UNO Q's STM32U585 and its
//! Linux SoC, with Arduino's router stopped), a pty in tests, a QEMU chardev on the host.
//!
//! The messages are [`crate::wire`]'s (a u16 big-endian length, one frame; replies may carry the
//! compute trailer), found again after lost or corrupted bytes by [`Deframer`]. Each call:
//!
//! 1. reads whatever the line holds first (a late reply to an earlier call, a resident chain's
//!    result): complete frames go to the unasked queue ([`SerialLine::receive`]), the rest is
//!    dropped, and the deframer starts at a message boundary;
//! 2. writes the request as one message;
//! 3. reads until a response frame carrying the request's invocation id arrives (other frames
//!    are queued as unasked), or the call's time-out passes. A request too broken to carry an
//!    id takes the first reply.
//!
//! A time-out leaves the line open (a lost byte costs one call; the next call starts clean). The
//! device going away (end of file, `EIO`, `ENXIO`, a hang-up: a USB adapter unplugged, the pty's
//! other side closed) closes it; the next call or availability check opens the path again, with
//! bounded backoff while it stays away ([`crate::reconnect`], the rule of every MCU endpoint). A
//! failed request is never repeated.
//!
//! termios through `nix`: raw mode (no echo, no line editing, 8 data bits, no parity, no flow
//! control), the receiver on, modem lines ignored (`CLOCAL`), the given baud rate both ways.

use crate::reconnect::Reconnecting;
use crate::wire::{split_reply, write_message, DeframeCounters, Deframer, SERIAL_GAP};
use anyhow::{bail, Context, Result};
use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::termios::{self, BaudRate, ControlFlags, SetArg, SpecialCharacterIndices};
use qf_abi::MAX_FRAME_LEN;
use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The baud rate when none is given (the usual rate of a board's console and of QEMU's UARTs,
/// which ignore it).
pub const DEFAULT_BAUD: u32 = 115_200;

/// Unasked frames kept for [`SerialLine::receive`]; older ones are dropped first.
const UNASKED_CAP: usize = 64;

/// The termios constant for `baud`, or an error listing the rates a Linux tty takes.
pub fn baud_rate(baud: u32) -> Result<BaudRate> {
    Ok(match baud {
        1200 => BaudRate::B1200,
        2400 => BaudRate::B2400,
        4800 => BaudRate::B4800,
        9600 => BaudRate::B9600,
        19200 => BaudRate::B19200,
        38400 => BaudRate::B38400,
        57600 => BaudRate::B57600,
        115_200 => BaudRate::B115200,
        230_400 => BaudRate::B230400,
        460_800 => BaudRate::B460800,
        500_000 => BaudRate::B500000,
        576_000 => BaudRate::B576000,
        921_600 => BaudRate::B921600,
        1_000_000 => BaudRate::B1000000,
        1_152_000 => BaudRate::B1152000,
        1_500_000 => BaudRate::B1500000,
        2_000_000 => BaudRate::B2000000,
        3_000_000 => BaudRate::B3000000,
        4_000_000 => BaudRate::B4000000,
        _ => bail!(
            "baud rate {baud} is not one a Linux tty takes (1200, 2400, 4800, 9600, 19200, 38400, \
             57600, 115200, 230400, 460800, 500000, 576000, 921600, 1000000, 1152000, 1500000, \
             2000000, 3000000, 4000000)"
        ),
    })
}

/// Puts the tty `fd` in raw mode at `baud` (see the module documentation) and drops what its
/// buffers held.
pub fn configure_raw(fd: BorrowedFd<'_>, baud: u32) -> Result<()> {
    let rate = baud_rate(baud)?;
    let mut tio = termios::tcgetattr(fd).context("reading the terminal settings (is it a tty?)")?;
    termios::cfmakeraw(&mut tio);
    tio.control_flags |= ControlFlags::CLOCAL | ControlFlags::CREAD;
    tio.control_flags &= !(ControlFlags::CRTSCTS | ControlFlags::CSTOPB | ControlFlags::PARENB);
    // Reads return what is there; waiting is done with poll.
    tio.control_chars[SpecialCharacterIndices::VMIN as usize] = 0;
    tio.control_chars[SpecialCharacterIndices::VTIME as usize] = 0;
    // The rate goes into c_cflag's CBAUD bits, where Linux's tcsetattr reads it, rather than
    // through cfsetspeed: the libc crate links the cf*speed functions to versioned glibc symbols
    // (`cfsetspeed@GLIBC_2.2.5`), which a static glibc build (the board guest's `qf`) cannot
    // resolve. The B* constants are CBAUD values on Linux (BaudRate is `repr(u32)` over them).
    tio.control_flags &= !ControlFlags::CBAUD;
    tio.control_flags |= ControlFlags::from_bits_retain(rate as libc::tcflag_t);
    termios::tcsetattr(fd, SetArg::TCSANOW, &tio).context("applying the terminal settings")?;
    termios::tcflush(fd, termios::FlushArg::TCIOFLUSH).context("flushing the terminal")?;
    Ok(())
}

/// Opens the tty at `path` for reading and writing, non-blocking, not as the controlling
/// terminal, in raw mode at `baud`.
pub fn open_tty(path: &Path, baud: u32) -> Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK)
        .open(path)
        .with_context(|| format!("opening the serial device {}", path.display()))?;
    configure_raw(file.as_fd(), baud)
        .with_context(|| format!("serial device {}", path.display()))?;
    Ok(file)
}

/// Writes all of `bytes` to the non-blocking `file`, waiting for room until `deadline`.
pub fn write_all_until(file: &mut File, bytes: &[u8], deadline: Instant) -> std::io::Result<()> {
    let mut written = 0;
    while written < bytes.len() {
        match file.write(&bytes[written..]) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => written += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(std::io::ErrorKind::TimedOut.into());
                }
                let mut fds = [PollFd::new(file.as_fd(), PollFlags::POLLOUT)];
                match poll(&mut fds, poll_timeout(left)) {
                    Ok(_) | Err(Errno::EINTR) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn poll_timeout(left: Duration) -> PollTimeout {
    PollTimeout::try_from(left.as_millis().clamp(1, 60_000) as i32).unwrap_or(PollTimeout::MAX)
}

/// A call on the line that got no reply within its time-out (a byte of the request or the reply
/// lost or damaged, an MCU that dropped it): the line stays open and the next call starts clean,
/// so a caller may count it and go on. [`is_no_reply`] finds it in an error's chain.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no reply from the MCU on {} within {} ms", device.display(), timeout.as_millis())]
pub struct NoReply {
    pub device: PathBuf,
    pub timeout: Duration,
}

/// Whether `error` (or an error it wraps) is a [`NoReply`].
pub fn is_no_reply(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| cause.is::<NoReply>())
}

/// What happened on the line besides replies, for reports and tests.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct LineCounters {
    /// The deframer's counts (bad lengths, bad magic, truncated messages, discarded bytes).
    pub deframe: DeframeCounters,
    /// Frames that answered no call in progress (late replies, chain results).
    pub unasked_frames: u64,
    /// Unasked frames dropped because the queue was full.
    pub unasked_dropped: u64,
    /// Calls that got no reply in time.
    pub timeouts: u64,
    /// Times the device went away.
    pub disconnects: u64,
}

/// The MCU on a serial device (see the module documentation); `crate::domain` makes it an MCU
/// transport.
pub struct SerialLine {
    path: PathBuf,
    /// The open device, opened again with bounded backoff after it went away.
    file: Reconnecting<File>,
    deframer: Deframer,
    unasked: VecDeque<Vec<u8>>,
    /// The compute trailer of the last reply.
    last_compute_ns: Option<u64>,
    counters: LineCounters,
}

/// What one read from the line brought.
enum Got {
    /// The awaited reply, `len` bytes in the response buffer.
    Reply(usize),
    Nothing,
}

impl SerialLine {
    /// Opens `path` at `baud`; an error names the device.
    pub fn open(path: &Path, baud: u32) -> Result<Self> {
        baud_rate(baud)?;
        let (what, open) = Self::opener(path, baud);
        Ok(Self::with(path, Reconnecting::connect(what, open)?))
    }

    /// Tries to open `path` and returns the line either way; a missing device is opened by a
    /// later call. A baud rate no tty takes is an error at once.
    pub fn reconnecting(path: &Path, baud: u32) -> Result<Self> {
        baud_rate(baud)?;
        let (what, open) = Self::opener(path, baud);
        Ok(Self::with(path, Reconnecting::new(what, open)))
    }

    fn opener(path: &Path, baud: u32) -> (String, impl FnMut() -> Result<File> + Send + 'static) {
        let path = path.to_owned();
        let what = format!("the serial device {}", path.display());
        (what, move || open_tty(&path, baud))
    }

    fn with(path: &Path, file: Reconnecting<File>) -> Self {
        SerialLine {
            path: path.to_owned(),
            file,
            deframer: Deframer::new(),
            unasked: VecDeque::new(),
            last_compute_ns: None,
            counters: LineCounters::default(),
        }
    }

    /// What happened on the line so far.
    pub fn counters(&self) -> LineCounters {
        LineCounters {
            deframe: self.deframer.counters(),
            ..self.counters
        }
    }

    /// Whether the device is open now.
    pub fn connected(&self) -> bool {
        self.file.is_open()
    }

    fn lose(&mut self, why: String) {
        if self.file.is_open() {
            self.counters.disconnects += 1;
        }
        self.deframer.idle();
        self.file.lose(why);
    }

    fn file(&mut self) -> Result<&mut File> {
        self.file.link()
    }

    /// Whether an I/O error means the device went away.
    /// The error of a failed read; a device that went away is lost (reopened later).
    fn read_failed(&mut self, e: &std::io::Error) -> anyhow::Error {
        let why = format!("reading the serial device {}: {e}", self.path.display());
        if Self::gone(e) {
            self.lose(why.clone());
        }
        anyhow::anyhow!(why)
    }

    fn gone(error: &std::io::Error) -> bool {
        matches!(
            error.raw_os_error().map(Errno::from_raw),
            Some(Errno::EIO | Errno::ENXIO | Errno::ENODEV | Errno::EBADF)
        )
    }

    fn queue_unasked(&mut self, frame: &[u8]) {
        self.counters.unasked_frames += 1;
        if self.unasked.len() == UNASKED_CAP {
            self.unasked.pop_front();
            self.counters.unasked_dropped += 1;
        }
        self.unasked.push_back(frame.to_vec());
    }

    /// Feeds `bytes` to the deframer: the first frame `want` accepts is copied to `response`
    /// (with its trailer kept as the last compute time), every other complete frame is queued.
    fn feed(
        &mut self,
        bytes: &[u8],
        want: &mut dyn FnMut(&[u8]) -> bool,
        response: &mut [u8; MAX_FRAME_LEN],
        found: &mut Option<usize>,
    ) {
        for &byte in bytes {
            let Some(body) = self.deframer.push(byte) else {
                continue;
            };
            // A body that is not frame (+ trailer) is passed on as it is: the caller's check of
            // the frame names what is wrong with it.
            let (frame, compute) = split_reply(body).unwrap_or((body, None));
            let frame_len = frame.len().min(MAX_FRAME_LEN);
            if found.is_none() && want(frame) {
                response[..frame_len].copy_from_slice(&frame[..frame_len]);
                self.last_compute_ns = compute;
                *found = Some(frame_len);
            } else {
                let frame = frame[..frame_len].to_vec();
                self.queue_unasked(&frame);
            }
        }
    }

    /// Reads the line until `want` accepts a frame or `deadline` passes.
    fn read_until(
        &mut self,
        deadline: Instant,
        want: &mut dyn FnMut(&[u8]) -> bool,
        response: &mut [u8; MAX_FRAME_LEN],
    ) -> Result<Got> {
        let mut last_byte = Instant::now();
        let mut chunk = [0u8; 512];
        loop {
            let now = Instant::now();
            if !self.deframer.at_boundary() && now.duration_since(last_byte) >= SERIAL_GAP {
                self.deframer.idle();
            }
            let left = deadline.saturating_duration_since(now);
            if left.is_zero() {
                return Ok(Got::Nothing);
            }
            let wait = if self.deframer.at_boundary() {
                left
            } else {
                left.min(SERIAL_GAP)
            };
            let file = self.file()?;
            let mut fds = [PollFd::new(file.as_fd(), PollFlags::POLLIN)];
            let ready = match poll(&mut fds, poll_timeout(wait)) {
                Ok(n) => n,
                Err(Errno::EINTR) => continue,
                Err(e) => bail!("waiting on the serial device {}: {e}", self.path.display()),
            };
            let events = fds[0].revents().unwrap_or(PollFlags::empty());
            if ready == 0 {
                continue;
            }
            // A hung-up tty (the pty's other side closed, the adapter unplugged) polls readable
            // *and* POLLHUP, and reads return 0.
            if events.intersects(PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLNVAL) {
                let why = format!("the serial device {} hung up", self.path.display());
                self.lose(why.clone());
                bail!(why);
            }
            let file = self.file()?;
            match file.read(&mut chunk) {
                // Raw mode with VMIN = 0: nothing to read is 0, not an end of file.
                Ok(0) => {}
                Ok(n) => {
                    last_byte = Instant::now();
                    let mut found = None;
                    self.feed(&chunk[..n], want, response, &mut found);
                    if let Some(len) = found {
                        return Ok(Got::Reply(len));
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.read_failed(&e)),
            }
        }
    }

    /// Takes in whatever the line holds now (late replies and chain results are queued) and
    /// leaves the deframer at a message boundary. Does not wait.
    fn drain(&mut self) -> Result<()> {
        let mut none = |_: &[u8]| false;
        let mut scratch = [0u8; MAX_FRAME_LEN];
        let mut chunk = [0u8; 512];
        loop {
            let file = self.file()?;
            match file.read(&mut chunk) {
                // VMIN = 0: nothing there (a hang-up shows at the next poll).
                Ok(0) => break,
                Ok(n) => self.feed(&chunk[..n], &mut none, &mut scratch, &mut None),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.read_failed(&e)),
            }
        }
        // A message cut here is a remnant: the next byte starts a new one.
        self.deframer.idle();
        Ok(())
    }
}

impl SerialLine {
    /// Sends `request` and puts the response carrying its invocation id in `response`, waiting
    /// at most `timeout`; returns the response's length.
    pub fn round_trip(
        &mut self,
        request: &[u8],
        response: &mut [u8; MAX_FRAME_LEN],
        timeout: Duration,
    ) -> Result<usize> {
        let deadline = Instant::now() + timeout;
        self.last_compute_ns = None;
        self.drain()?;
        let mut message = Vec::with_capacity(request.len() + 2);
        write_message(&mut message, request, None)
            .with_context(|| format!("a request for {}", self.path.display()))?;
        let file = self.file()?;
        if let Err(e) = write_all_until(file, &message, deadline) {
            let why = format!("writing to the serial device {}: {e}", self.path.display());
            if Self::gone(&e) {
                self.lose(why.clone());
            }
            bail!(why);
        }
        let awaited = qf_abi::decode_frame(request)
            .map(|frame| frame.header.invocation_id)
            .ok();
        // A response carrying the request's id (a line that echoes shows the request itself).
        let mut want = |frame: &[u8]| {
            let header = qf_abi::decode_frame(frame).map(|f| f.header).ok();
            let response = header.is_none_or(|h| h.kind == qf_abi::MessageKind::Response);
            response && (awaited.is_none() || header.map(|h| h.invocation_id) == awaited)
        };
        match self.read_until(deadline, &mut want, response)? {
            Got::Reply(len) => Ok(len),
            Got::Nothing => {
                self.counters.timeouts += 1;
                Err(NoReply {
                    device: self.path.clone(),
                    timeout,
                }
                .into())
            }
        }
    }

    /// Whether the device is open, or opens now; a hung-up device is closed first.
    pub fn check_available(&mut self) -> bool {
        let hung_up = self.file.is_open()
            && self
                .file
                .link()
                .is_ok_and(|file| crate::reconnect::hung_up(file.as_fd()));
        if hung_up {
            self.lose(format!("the serial device {} hung up", self.path.display()));
        }
        self.file.link().is_ok()
    }

    /// Why the device is down, when it is.
    pub fn down_reason(&self) -> Option<String> {
        self.file.down_reason()
    }

    /// The compute trailer of the last reply (ns), if it had one.
    pub fn compute_ns(&self) -> Option<u64> {
        self.last_compute_ns
    }

    /// The next frame that answered no call (a chain's result, a late reply), waiting at most
    /// `timeout`; the second element (when Linux's kernel had it) is always `None` on a tty.
    pub fn receive(
        &mut self,
        buf: &mut [u8; MAX_FRAME_LEN],
        timeout: Duration,
    ) -> Result<Option<(usize, Option<u64>)>> {
        if self.unasked.is_empty() {
            let mut first = |_: &[u8]| true;
            if let Got::Reply(len) = self.read_until(Instant::now() + timeout, &mut first, buf)? {
                return Ok(Some((len, None)));
            }
        }
        Ok(self.unasked.pop_front().map(|frame| {
            buf[..frame.len()].copy_from_slice(&frame);
            (frame.len(), None)
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_baud_rate_no_tty_takes_is_named() {
        assert!(baud_rate(115_200).is_ok());
        let error = baud_rate(123_456).unwrap_err().to_string();
        assert!(error.contains("123456"), "{error}");
        let error = SerialLine::reconnecting(Path::new("/dev/null"), 7)
            .err()
            .unwrap()
            .to_string();
        assert!(error.contains("baud rate 7"), "{error}");
    }

    #[test]
    fn the_baud_rate_reaches_the_tty() {
        let pty = nix::pty::openpty(None, None).unwrap();
        for (baud, bits) in [(9600, libc::B9600), (115_200, libc::B115200)] {
            configure_raw(pty.slave.as_fd(), baud).unwrap();
            let tio = termios::tcgetattr(pty.slave.as_fd()).unwrap();
            let cbaud = (tio.control_flags & ControlFlags::CBAUD).bits();
            assert_eq!(cbaud, bits, "baud {baud}");
        }
    }

    #[test]
    fn a_device_that_is_no_tty_or_missing_is_named_and_reported_down() {
        let error = format!(
            "{:#}",
            SerialLine::open(Path::new("/dev/null"), 115_200)
                .err()
                .unwrap()
        );
        assert!(
            error.contains("/dev/null") && error.contains("tty"),
            "{error}"
        );
        let missing = std::env::temp_dir().join(format!("qfabric-tty-{}", std::process::id()));
        let mut line = SerialLine::reconnecting(&missing, 115_200).unwrap();
        assert!(!line.check_available());
        assert!(line
            .down_reason()
            .is_some_and(|r| r.contains(&*missing.to_string_lossy())));
    }
}
