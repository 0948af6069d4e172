//! The kernel dispatch device `/dev/qfabricN` of the `qfabric_rpmsg` module (its user ABI is
//! `docs/qfabric-dev.md`): one `QF_IOC_INVOKE` hands the kernel a request frame and sleeps until
//! the kernel matched the reply by (task id, invocation id), so threads and processes share one
//! device with no user-space relay and no reply stealing. `read()` returns the frames nobody
//! waited for (a resident chain's results).
//!
//! [`Device`] is the safe side: it checks what it can before the kernel sees it and turns every
//! errno into a [`DevError`] naming the device and what the contract says the errno means. The
//! `unsafe` here is the two ioctls and `poll`.
#![allow(unsafe_code)]

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::ioctl::ioctl_num_type;
use qf_abi::{HEADER_LEN, MAX_FRAME_LEN};

/// `struct qf_invoke` (72 bytes): in/out argument of [`QF_IOC_INVOKE`].
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QfInvoke {
    /// In: user address of the request frame.
    pub request: u64,
    /// In: user address of the response buffer.
    pub response: u64,
    /// In: `HEADER_LEN..=mtu`.
    pub request_len: u32,
    /// In: at least the mtu, so a reply is never truncated.
    pub response_cap: u32,
    /// In: `1..=60000`; 0 means 1000.
    pub timeout_ms: u32,
    /// Out: bytes written to `response`.
    pub response_len: u32,
    /// Out: CLOCK_MONOTONIC when the ioctl entered the driver.
    pub entered_ns: u64,
    /// Out: when `rpmsg_send` returned (frame in the vring, MCU kicked).
    pub sent_ns: u64,
    /// Out: when the receive callback matched the reply.
    pub replied_ns: u64,
    /// Out: when the caller ran again after the wake-up.
    pub woken_ns: u64,
    /// In: must be 0.
    pub flags: u64,
}

/// `struct qf_stats` (80 bytes): what [`QF_IOC_STATS`] fills, counters since the channel appeared.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QfStats {
    /// Requests sent.
    pub invokes: u64,
    /// Replies delivered to their caller.
    pub replies: u64,
    /// Callers that gave up after their timeout.
    pub timeouts: u64,
    /// Callers a signal woke before the reply.
    pub interrupted: u64,
    /// Replies for a caller that had given up (dropped).
    pub late_replies: u64,
    /// Frames queued for `read()`.
    pub unsolicited: u64,
    /// Frames dropped because the read queue was full.
    pub unsolicited_dropped: u64,
    /// Received frames that are no QFabric response (dropped).
    pub malformed: u64,
    /// Largest frame the channel carries (rpmsg buffer - header).
    pub mtu: u32,
    /// Callers waiting now.
    pub in_flight: u32,
    /// Our endpoint's rpmsg address.
    pub local_addr: u32,
    /// The MCU channel's rpmsg address.
    pub remote_addr: u32,
}

/// `struct qf_recv` (32 bytes): in/out argument of [`QF_IOC_RECV`].
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QfRecv {
    /// In: user address for the frame.
    pub buffer: u64,
    /// In: its size.
    pub capacity: u32,
    /// Out: the frame's length.
    pub len: u32,
    /// Out: CLOCK_MONOTONIC when the receive callback queued the frame.
    pub received_ns: u64,
    /// In: 0 = do not wait; at most 60000.
    pub timeout_ms: u32,
    /// In: must be 0.
    pub flags: u32,
}

// The layout is the contract: the same on 32- and 64-bit, no padding anywhere.
const _: () = assert!(std::mem::size_of::<QfInvoke>() == 72);
const _: () = assert!(std::mem::size_of::<QfStats>() == 80);
const _: () = assert!(std::mem::size_of::<QfRecv>() == 32);

/// The ioctl type byte of the device, `'q'`.
pub const IOC_TYPE: u8 = b'q';
/// `_IOWR('q', 0x40, struct qf_invoke)`.
pub const QF_IOC_INVOKE: ioctl_num_type =
    nix::request_code_readwrite!(IOC_TYPE, 0x40, std::mem::size_of::<QfInvoke>());
/// `_IOR('q', 0x41, struct qf_stats)`.
pub const QF_IOC_STATS: ioctl_num_type =
    nix::request_code_read!(IOC_TYPE, 0x41, std::mem::size_of::<QfStats>());
/// `_IOWR('q', 0x42, struct qf_recv)`.
pub const QF_IOC_RECV: ioctl_num_type =
    nix::request_code_readwrite!(IOC_TYPE, 0x42, std::mem::size_of::<QfRecv>());
/// Longest wait the kernel accepts.
pub const MAX_TIMEOUT: Duration = Duration::from_millis(60_000);
/// Callers the kernel lets wait on one channel at once (the 33rd gets `EBUSY`).
pub const MAX_WAITERS: usize = 32;
/// Unsolicited frames the kernel queues for `read()` before it drops them.
pub const READ_QUEUE: usize = 32;

nix::ioctl_readwrite!(qf_ioc_invoke, IOC_TYPE, 0x40, QfInvoke);
nix::ioctl_read!(qf_ioc_stats, IOC_TYPE, 0x41, QfStats);
nix::ioctl_readwrite!(qf_ioc_recv, IOC_TYPE, 0x42, QfRecv);

/// What went wrong, always naming the device.
#[derive(Debug, thiserror::Error)]
pub enum DevError {
    #[error("no /dev/qfabricN under {}: is the module qfabric_rpmsg loaded (modprobe qfabric_rpmsg), and has the MCU announced its `qfabric` rpmsg channel?", dir.display())]
    NoDevice { dir: PathBuf },
    #[error("opening {}: {error}{}", path.display(), missing_hint(error))]
    Open {
        path: PathBuf,
        error: std::io::Error,
    },
    /// The kernel answered `errno`; `meaning` is what the contract says it means for `op`.
    #[error("{}: {op}: {meaning} ({errno})", path.display())]
    Kernel {
        path: PathBuf,
        op: &'static str,
        errno: Errno,
        meaning: &'static str,
    },
    /// Refused before the kernel saw it (the kernel would refuse it too).
    #[error("{}: {op}: {reason}", path.display())]
    Refused {
        path: PathBuf,
        op: &'static str,
        reason: String,
    },
    #[error("{}: the channel went away (the MCU crashed or stopped, or qfabric_rpmsg is unloading): end of file", path.display())]
    Closed { path: PathBuf },
}

/// What a missing device node usually means.
fn missing_hint(error: &std::io::Error) -> &'static str {
    match error.kind() {
        std::io::ErrorKind::NotFound => {
            " (is the module qfabric_rpmsg loaded, and has the MCU announced its `qfabric` channel?)"
        }
        std::io::ErrorKind::PermissionDenied => {
            " (calling the MCU, resident-chain control included, needs read and write permission on the device)"
        }
        _ => "",
    }
}

impl DevError {
    /// The errno the kernel returned, if this came from the kernel.
    pub fn errno(&self) -> Option<Errno> {
        match self {
            DevError::Kernel { errno, .. } => Some(*errno),
            DevError::Open { error, .. } => error.raw_os_error().map(Errno::from_raw),
            _ => None,
        }
    }
}

/// What the contract says `errno` means as the answer to `op` ("invoke", "stats" or "read").
pub fn errno_meaning(op: &str, errno: Errno) -> &'static str {
    match (op, errno) {
        (_, Errno::ENOTTY) => "not a qfabric device (it does not know the ioctl)",
        (_, Errno::ENODEV) => {
            "the MCU channel went away (the MCU crashed or stopped, or qfabric_rpmsg is unloading)"
        }
        (_, Errno::EFAULT) => "a buffer or the argument is not accessible to the kernel",
        (_, Errno::EINTR) => "a signal arrived first (a later reply is counted as late)",
        ("invoke", Errno::EINVAL) => {
            "refused: flags != 0, request_len outside 36..=mtu, response_cap < mtu, timeout_ms > 60000, or not a v1 request frame"
        }
        ("invoke", Errno::EBUSY) => {
            "a caller already waits for the same (task, invocation) id, or 32 callers wait on this channel"
        }
        ("invoke", Errno::ETIMEDOUT) => {
            "no reply within the timeout (a later reply is counted in late_replies)"
        }
        ("read", Errno::EMSGSIZE) => {
            "the queued frame is longer than the buffer (it stays queued)"
        }
        ("read", Errno::EAGAIN) => "no frame queued (non-blocking)",
        (_, errno) => errno.desc(),
    }
}

/// The kernel's four timestamps of one invocation (CLOCK_MONOTONIC, ns).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timestamps {
    pub entered_ns: u64,
    pub sent_ns: u64,
    pub replied_ns: u64,
    pub woken_ns: u64,
}

impl Timestamps {
    /// Ioctl entry to the frame in the vring: the driver's send path.
    pub fn sending(&self) -> Duration {
        Duration::from_nanos(self.sent_ns.saturating_sub(self.entered_ns))
    }
    /// Frame sent to reply matched: the MCU and the transport both ways.
    pub fn remote(&self) -> Duration {
        Duration::from_nanos(self.replied_ns.saturating_sub(self.sent_ns))
    }
    /// Reply matched to the caller running again: the wake-up.
    pub fn waking(&self) -> Duration {
        Duration::from_nanos(self.woken_ns.saturating_sub(self.replied_ns))
    }
}

/// Where one kernel-dispatched call's time went: the caller's clock around the ioctl and the
/// kernel's four timestamps, all CLOCK_MONOTONIC, cut into five consecutive segments.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Split {
    /// Caller's clock read → the ioctl entered the driver (system call entry).
    pub entry: Duration,
    /// → the frame in the vring and the MCU kicked (the driver's send path).
    pub send: Duration,
    /// → the reply matched by the receive callback: transport both ways, the MCU, and the
    /// scheduling of the thread that runs the callback (on the virtual board, the vring
    /// interrupt's thread).
    pub remote: Duration,
    /// → the caller running again: its wake-up latency.
    pub wake: Duration,
    /// → the caller's clock read after the ioctl (copy-out, system call exit).
    pub exit: Duration,
}

impl Timestamps {
    /// The five segments of a call whose caller read the clock at `start_ns` and `end_ns`.
    pub fn split(&self, start_ns: u64, end_ns: u64) -> Split {
        let between = |a: u64, b: u64| Duration::from_nanos(b.saturating_sub(a));
        Split {
            entry: between(start_ns, self.entered_ns),
            send: self.sending(),
            remote: self.remote(),
            wake: self.waking(),
            exit: between(self.woken_ns, end_ns),
        }
    }
}

/// CLOCK_MONOTONIC in nanoseconds: the kernel timestamps' clock.
pub fn monotonic_ns() -> u64 {
    let now = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .unwrap_or(nix::sys::time::TimeSpec::new(0, 0));
    (now.tv_sec() as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(now.tv_nsec() as u64)
}

/// What one invocation brought back into the caller's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply {
    /// The reply frame is the buffer's first `len` bytes.
    pub len: usize,
    /// Caller-observed round trip (the ioctl, on `Instant`'s CLOCK_MONOTONIC).
    pub latency: Duration,
    pub kernel: Timestamps,
}

/// One answered invocation with its own response buffer.
#[derive(Debug, Clone, Copy)]
pub struct Invocation {
    pub response: [u8; MAX_FRAME_LEN],
    pub len: usize,
    pub latency: Duration,
    pub kernel: Timestamps,
}

impl Invocation {
    pub fn frame(&self) -> &[u8] {
        &self.response[..self.len]
    }
}

/// An open `/dev/qfabricN`. Every method takes `&self`: threads share one device, the kernel
/// matches each reply to its caller.
#[derive(Debug)]
pub struct Device {
    file: File,
    path: PathBuf,
    mtu: usize,
}

/// The `/dev/qfabricN` under `dir` with the smallest N.
pub fn first_device(dir: &Path) -> Result<PathBuf, DevError> {
    let no_device = || DevError::NoDevice {
        dir: dir.to_owned(),
    };
    let entries = std::fs::read_dir(dir).map_err(|_| no_device())?;
    entries
        .filter_map(|entry| entry.ok())
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let n: u32 = name.strip_prefix("qfabric")?.parse().ok()?;
            Some((n, entry.path()))
        })
        .min()
        .map(|(_, path)| path)
        .ok_or_else(no_device)
}

/// `timeout` as the kernel's `timeout_ms`: rounded up to whole milliseconds, at least 1 (0 would
/// mean 1000), at most [`MAX_TIMEOUT`].
pub fn timeout_ms(timeout: Duration) -> Option<u32> {
    if timeout > MAX_TIMEOUT {
        return None;
    }
    let ms = timeout.as_nanos().div_ceil(1_000_000).max(1);
    u32::try_from(ms).ok()
}

impl Device {
    /// Opens `path` and asks it for its statistics, so a file that is not a qfabric device is
    /// refused here (`ENOTTY`) rather than at the first invocation.
    pub fn open(path: impl AsRef<Path>) -> Result<Device, DevError> {
        let path = path.as_ref().to_owned();
        let file = match OpenOptions::new().read(true).write(true).open(&path) {
            Ok(file) => file,
            Err(error) => return Err(DevError::Open { path, error }),
        };
        let mut device = Device {
            file,
            path,
            mtu: MAX_FRAME_LEN,
        };
        let mtu = device.stats()?.mtu as usize;
        if !(HEADER_LEN..=MAX_FRAME_LEN).contains(&mtu) {
            return Err(device.refused(
                "open",
                format!("mtu {mtu}: a QFabric channel carries frames of {HEADER_LEN}..={MAX_FRAME_LEN} bytes"),
            ));
        }
        device.mtu = mtu;
        Ok(device)
    }

    /// Opens the first `/dev/qfabricN`.
    pub fn find() -> Result<Device, DevError> {
        Device::open(first_device(Path::new("/dev"))?)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The largest frame the channel carries.
    pub fn mtu(&self) -> usize {
        self.mtu
    }

    fn refused(&self, op: &'static str, reason: String) -> DevError {
        DevError::Refused {
            path: self.path.clone(),
            op,
            reason,
        }
    }

    fn kernel(&self, op: &'static str, errno: Errno) -> DevError {
        DevError::Kernel {
            path: self.path.clone(),
            op,
            errno,
            meaning: errno_meaning(op, errno),
        }
    }

    /// Sends `request` and sleeps until its reply is in `response` (at least [`Device::mtu`]
    /// bytes) or `timeout` passed.
    pub fn invoke_into(
        &self,
        request: &[u8],
        response: &mut [u8],
        timeout: Duration,
    ) -> Result<Reply, DevError> {
        if !(HEADER_LEN..=self.mtu).contains(&request.len()) {
            return Err(self.refused(
                "invoke",
                format!(
                    "a request of {} bytes: the channel carries {HEADER_LEN}..={} bytes",
                    request.len(),
                    self.mtu
                ),
            ));
        }
        if response.len() < self.mtu {
            return Err(self.refused(
                "invoke",
                format!(
                    "a response buffer of {} bytes: the mtu is {}",
                    response.len(),
                    self.mtu
                ),
            ));
        }
        let timeout_ms = timeout_ms(timeout).ok_or_else(|| {
            self.refused(
                "invoke",
                format!("a timeout of {timeout:?}: at most {MAX_TIMEOUT:?}"),
            )
        })?;
        let mut arg = QfInvoke {
            request: request.as_ptr() as u64,
            response: response.as_mut_ptr() as u64,
            request_len: request.len() as u32,
            response_cap: u32::try_from(response.len()).unwrap_or(u32::MAX),
            timeout_ms,
            ..QfInvoke::default()
        };
        let start = Instant::now();
        // SAFETY: `arg` is a live `struct qf_invoke`; during the call the kernel reads
        // `request_len` bytes at `request` (a slice of exactly that length) and writes at most
        // `response_cap` bytes at `response` (an exclusively borrowed slice of that length).
        let result = unsafe { qf_ioc_invoke(self.file.as_raw_fd(), &mut arg) };
        let latency = start.elapsed();
        result.map_err(|errno| self.kernel("invoke", errno))?;
        let len = arg.response_len as usize;
        if len > response.len() {
            return Err(self.refused(
                "invoke",
                format!(
                    "the kernel reports a {len}-byte reply in a {}-byte buffer",
                    response.len()
                ),
            ));
        }
        Ok(Reply {
            len,
            latency,
            kernel: Timestamps {
                entered_ns: arg.entered_ns,
                sent_ns: arg.sent_ns,
                replied_ns: arg.replied_ns,
                woken_ns: arg.woken_ns,
            },
        })
    }

    /// [`Device::invoke_into`] with a response buffer of its own.
    pub fn invoke(&self, request: &[u8], timeout: Duration) -> Result<Invocation, DevError> {
        let mut response = [0u8; MAX_FRAME_LEN];
        let reply = self.invoke_into(request, &mut response, timeout)?;
        Ok(Invocation {
            response,
            len: reply.len,
            latency: reply.latency,
            kernel: reply.kernel,
        })
    }

    /// The channel's counters.
    pub fn stats(&self) -> Result<QfStats, DevError> {
        let mut stats = QfStats::default();
        // SAFETY: the kernel writes one `struct qf_stats`, which `stats` is.
        unsafe { qf_ioc_stats(self.file.as_raw_fd(), &mut stats) }
            .map_err(|errno| self.kernel("stats", errno))?;
        Ok(stats)
    }

    /// The next frame the MCU sent unasked (a resident chain's result) into `buf`, waiting at
    /// most `timeout`; `None` if none came. The MCU sends those to the endpoint that last wrote
    /// to it: make one invocation first.
    pub fn recv_unsolicited(
        &self,
        buf: &mut [u8],
        timeout: Duration,
    ) -> Result<Option<usize>, DevError> {
        let mut pfd = libc::pollfd {
            fd: self.file.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
        // SAFETY: one valid pollfd for the duration of the call.
        let rc = unsafe { libc::poll(&mut pfd, 1, ms) };
        if rc < 0 {
            return Err(self.kernel("poll", Errno::last()));
        }
        if rc == 0 {
            return Ok(None);
        }
        if pfd.revents & libc::POLLIN == 0 && pfd.revents & libc::POLLHUP != 0 {
            return Err(DevError::Closed {
                path: self.path.clone(),
            });
        }
        match (&self.file).read(buf) {
            Ok(0) => Err(DevError::Closed {
                path: self.path.clone(),
            }),
            Ok(n) => Ok(Some(n)),
            Err(error) => Err(self.kernel(
                "read",
                Errno::from_raw(error.raw_os_error().unwrap_or(libc::EIO)),
            )),
        }
    }
}

impl Device {
    /// Like [`Device::recv_unsolicited`], with the time the kernel queued the frame
    /// (CLOCK_MONOTONIC ns, [`monotonic_ns`]'s clock): `QF_IOC_RECV`.
    pub fn recv_stamped(
        &self,
        buf: &mut [u8],
        timeout: Duration,
    ) -> Result<Option<(usize, u64)>, DevError> {
        let mut arg = QfRecv {
            buffer: buf.as_mut_ptr() as u64,
            capacity: u32::try_from(buf.len()).unwrap_or(u32::MAX),
            timeout_ms: timeout.min(MAX_TIMEOUT).as_millis() as u32,
            ..QfRecv::default()
        };
        // SAFETY: `arg` is one `struct qf_recv`; the kernel writes at most `capacity` bytes to
        // `buffer`, which is `buf`, borrowed mutably for the call.
        match unsafe { qf_ioc_recv(self.file.as_raw_fd(), &mut arg) } {
            Ok(_) => Ok(Some((arg.len as usize, arg.received_ns))),
            Err(Errno::EAGAIN) => Ok(None),
            Err(errno) => Err(self.kernel("recv", errno)),
        }
    }
}

impl AsRawFd for Device {
    fn as_raw_fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }
}

impl AsFd for Device {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::offset_of;

    #[test]
    fn the_ioctl_numbers_are_the_documented_ones() {
        assert_eq!(QF_IOC_INVOKE as u32, 0xc048_7140);
        assert_eq!(QF_IOC_STATS as u32, 0x8050_7141);
        assert_eq!(QF_IOC_RECV as u32, 0xc020_7142);
    }

    #[test]
    fn the_structures_have_the_documented_layout() {
        assert_eq!(std::mem::size_of::<QfInvoke>(), 72);
        assert_eq!(std::mem::size_of::<QfStats>(), 80);
        assert_eq!(
            [
                offset_of!(QfRecv, buffer),
                offset_of!(QfRecv, capacity),
                offset_of!(QfRecv, len),
                offset_of!(QfRecv, received_ns),
                offset_of!(QfRecv, timeout_ms),
                offset_of!(QfRecv, flags),
            ],
            [0, 8, 12, 16, 24, 28]
        );
        let invoke = [
            offset_of!(QfInvoke, request),
            offset_of!(QfInvoke, response),
            offset_of!(QfInvoke, request_len),
            offset_of!(QfInvoke, response_cap),
            offset_of!(QfInvoke, timeout_ms),
            offset_of!(QfInvoke, response_len),
            offset_of!(QfInvoke, entered_ns),
            offset_of!(QfInvoke, sent_ns),
            offset_of!(QfInvoke, replied_ns),
            offset_of!(QfInvoke, woken_ns),
            offset_of!(QfInvoke, flags),
        ];
        assert_eq!(invoke, [0, 8, 16, 20, 24, 28, 32, 40, 48, 56, 64]);
        assert_eq!(offset_of!(QfStats, malformed), 56);
        assert_eq!(offset_of!(QfStats, mtu), 64);
        assert_eq!(offset_of!(QfStats, in_flight), 68);
        assert_eq!(offset_of!(QfStats, local_addr), 72);
        assert_eq!(offset_of!(QfStats, remote_addr), 76);
    }

    #[test]
    fn timeouts_round_up_to_whole_milliseconds_within_the_kernels_range() {
        assert_eq!(timeout_ms(Duration::ZERO), Some(1));
        assert_eq!(timeout_ms(Duration::from_micros(1)), Some(1));
        assert_eq!(timeout_ms(Duration::from_micros(1001)), Some(2));
        assert_eq!(timeout_ms(Duration::from_secs(5)), Some(5000));
        assert_eq!(timeout_ms(MAX_TIMEOUT), Some(60_000));
        assert_eq!(timeout_ms(MAX_TIMEOUT + Duration::from_nanos(1)), None);
    }

    #[test]
    fn the_first_device_is_the_lowest_numbered_qfabric_node() {
        let dir = tempfile::tempdir().unwrap();
        let error = first_device(dir.path()).unwrap_err().to_string();
        assert!(error.contains("qfabric_rpmsg loaded"), "{error}");
        for name in ["qfabric10", "qfabric2", "qfabricX", "qfabric", "rpmsg0"] {
            std::fs::write(dir.path().join(name), b"").unwrap();
        }
        assert_eq!(
            first_device(dir.path()).unwrap(),
            dir.path().join("qfabric2")
        );
    }

    #[test]
    fn a_file_that_is_no_qfabric_device_is_refused_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("qfabric0");
        let error = Device::open(&missing).unwrap_err();
        assert!(error.to_string().contains("qfabric0"), "{error}");
        assert!(
            error.to_string().contains("qfabric_rpmsg loaded"),
            "{error}"
        );
        assert_eq!(error.errno(), Some(Errno::ENOENT));
        std::fs::write(&missing, b"").unwrap();
        let error = Device::open(&missing).unwrap_err();
        assert_eq!(error.errno(), Some(Errno::ENOTTY));
        assert!(
            error.to_string().contains("not a qfabric device"),
            "{error}"
        );
    }

    /// A device over a plain file: the checks before the kernel, and the kernel's refusal.
    fn plain_file_device(dir: &Path) -> Device {
        let path = dir.join("qfabric0");
        std::fs::write(&path, b"").unwrap();
        Device {
            file: OpenOptions::new()
                .read(true)
                .write(true)
                .open(&path)
                .unwrap(),
            path,
            mtu: 496,
        }
    }

    #[test]
    fn requests_the_kernel_would_refuse_are_refused_first_naming_the_values() {
        let dir = tempfile::tempdir().unwrap();
        let device = plain_file_device(dir.path());
        let mut response = [0u8; MAX_FRAME_LEN];
        let second = Duration::from_secs(1);
        let short = device.invoke_into(&[0; 35], &mut response, second);
        assert!(short.unwrap_err().to_string().contains("35 bytes"));
        let long = device.invoke_into(&[0; 497], &mut response, second);
        assert!(long.unwrap_err().to_string().contains("36..=496"));
        let small = device.invoke_into(&[0; 36], &mut response[..495], second);
        assert!(small.unwrap_err().to_string().contains("mtu is 496"));
        let slow = device.invoke_into(&[0; 36], &mut response, Duration::from_secs(61));
        assert!(slow.unwrap_err().to_string().contains("at most"));
        // Well-formed: the kernel sees it, and a plain file does not know the ioctl.
        let error = device.invoke(&[0; 36], second).unwrap_err();
        assert_eq!(error.errno(), Some(Errno::ENOTTY));
        assert!(error.to_string().contains("qfabric0: invoke"), "{error}");
    }

    #[test]
    fn unsolicited_frames_are_read_once_poll_reports_them() {
        let dir = tempfile::tempdir().unwrap();
        let device = plain_file_device(dir.path());
        // A regular file polls readable; empty, it reads as end of file: the channel is gone.
        let mut buf = [0u8; 8];
        let closed = device.recv_unsolicited(&mut buf, Duration::from_millis(10));
        assert!(matches!(closed, Err(DevError::Closed { .. })), "{closed:?}");
        std::fs::write(device.path(), b"frame").unwrap();
        assert_eq!(
            device
                .recv_unsolicited(&mut buf, Duration::from_millis(10))
                .unwrap(),
            Some(5)
        );
        assert_eq!(&buf[..5], b"frame");
    }

    #[test]
    fn errnos_carry_the_contracts_meaning() {
        assert!(errno_meaning("invoke", Errno::EBUSY).contains("32 callers"));
        assert!(errno_meaning("invoke", Errno::ETIMEDOUT).contains("late_replies"));
        assert!(errno_meaning("invoke", Errno::EINVAL).contains("v1 request frame"));
        assert!(errno_meaning("read", Errno::EMSGSIZE).contains("stays queued"));
        assert!(errno_meaning("invoke", Errno::ENODEV).contains("went away"));
        assert_eq!(errno_meaning("invoke", Errno::ENOMEM), Errno::ENOMEM.desc());
    }
}
