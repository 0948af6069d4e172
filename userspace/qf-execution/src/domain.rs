//! Domain endpoints: where an invocation runs. The controller and profiler see only [`Domain`],
//! so the MCU emulator and a kernel-driver path plug in without touching them.
//!
//! * [`LinuxExecutor`]: a persistent `qf-executor` child fed over a pipe (never a process per
//!   call), optionally at SCHED_FIFO 50;
//! * [`McuSocket`]: an MCU endpoint on a Unix stream socket speaking the same frames;
//! * [`McuRpmsg`]: the MCU's `qfabric` rpmsg channel through Linux's `rpmsg_char`, one frame per
//!   message, dispatched by the kernel (the QFabric paper's Section VIII-A: no userspace relay);
//! * [`McuKernel`]: the same channel through the kernel dispatch device `/dev/qfabricN`
//!   (module `qfabric_rpmsg`), which matches each reply to its caller itself;
//! * [`McuSerial`]: an MCU on a serial line (a UART between two chips, as on the Arduino UNO Q),
//!   [`crate::serial`].
//!
//! The first two and the serial line use the framing of [`crate::wire`]; the last three are one
//! [`McuChannel`] over three [`McuTransport`]s.

use crate::qfabric_dev::{monotonic_ns, DevError, Device, Split};
use crate::rpmsg_char::Endpoint;
use crate::rt::{set_scheduling, Scheduling};
use crate::serial::SerialLine;
use crate::wire::{read_message, split_reply, write_message, MAX_MESSAGE_LEN};
use anyhow::{bail, Context, Result};
use qf_abi::MAX_FRAME_LEN;
use qf_decision::model::DomainId;
use std::io::ErrorKind;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// One answered invocation.
#[derive(Debug, Clone, Copy)]
pub struct Invocation {
    /// The response frame is `response[..len]`.
    pub response: [u8; MAX_FRAME_LEN],
    pub len: usize,
    /// Caller-observed round trip (CLOCK_MONOTONIC via `Instant`).
    pub latency: Duration,
    /// Compute time the executor reported, if it reports one.
    pub compute: Option<Duration>,
    /// Where the time went, when the kernel dispatched the call (`/dev/qfabricN`).
    pub dispatch: Option<Split>,
}

impl Invocation {
    pub fn frame(&self) -> &[u8] {
        &self.response[..self.len]
    }
}

/// An execution domain endpoint: submit a request frame, get the response frame and timings.
pub trait Domain: Send {
    fn id(&self) -> DomainId;
    fn invoke(&mut self, request: &[u8]) -> Result<Invocation>;
    /// Whether the domain can take an invocation now. An endpoint that reconnects by itself
    /// uses the call to notice a peer that went away and to try again when its backoff allows;
    /// the rest are always available (their failures show in [`Domain::invoke`]).
    fn check_available(&mut self) -> bool {
        true
    }
    /// Why the domain is unavailable, when it can say.
    fn down_reason(&self) -> Option<String> {
        None
    }
}

fn exchange(
    input: &mut impl std::io::Read,
    output: &mut impl std::io::Write,
    request: &[u8],
    what: &str,
) -> Result<Invocation> {
    let start = Instant::now();
    write_message(output, request, None).with_context(|| format!("sending a request to {what}"))?;
    let mut body = [0u8; MAX_MESSAGE_LEN];
    let len = match read_message(input, &mut body) {
        Ok(Some(len)) => len,
        Ok(None) => bail!("{what} closed the stream instead of replying"),
        // A read time-out surfaces as EAGAIN ("Resource temporarily unavailable"): say what it is.
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
            bail!(
                "no reply from {what} within {} ms",
                start.elapsed().as_millis()
            )
        }
        Err(e) => return Err(e).with_context(|| format!("reading the reply from {what}")),
    };
    let latency = start.elapsed();
    let (frame, compute_ns) =
        split_reply(&body[..len]).with_context(|| format!("reply from {what}"))?;
    let mut response = [0u8; MAX_FRAME_LEN];
    response[..frame.len()].copy_from_slice(frame);
    Ok(Invocation {
        response,
        len: frame.len(),
        latency,
        compute: compute_ns.map(Duration::from_nanos),
        dispatch: None,
    })
}

/// The persistent Linux executor process.
#[derive(Debug)]
pub struct LinuxExecutor {
    child: Child,
    /// `None` only while dropping (closing it is what stops the executor).
    stdin: Option<ChildStdin>,
    stdout: ChildStdout,
}

/// Where the `qf-executor` binary is: `$QF_EXECUTOR`, else next to the running executable.
pub fn default_executor_path() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os("QF_EXECUTOR") {
        return Ok(PathBuf::from(path));
    }
    let exe = std::env::current_exe().context("locating the running executable")?;
    let dir = exe
        .parent()
        .context("the running executable has no directory")?;
    // Test binaries live one level down, in target/<profile>/deps.
    for candidate in [dir.join("qf-executor"), dir.join("../qf-executor")] {
        if candidate.exists() {
            return Ok(candidate);
        }
    }
    bail!(
        "qf-executor not found next to {}; build it (cargo build -p qf-agent) or set QF_EXECUTOR",
        exe.display()
    )
}

/// `explicit` if given, else [`default_executor_path`].
pub fn executor_path(explicit: Option<&Path>) -> Result<PathBuf> {
    match explicit {
        Some(path) => Ok(path.to_owned()),
        None => default_executor_path(),
    }
}

impl LinuxExecutor {
    /// Spawns the executor at `program` and applies `scheduling` to it.
    pub fn spawn(program: &Path, scheduling: Scheduling) -> Result<Self> {
        let mut child = Command::new(program)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("spawning the Linux executor {}", program.display()))?;
        let pid = child.id() as i32;
        if let Err(error) = set_scheduling(pid, scheduling) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(error).context("setting the Linux executor's scheduling policy");
        }
        let stdin = child.stdin.take().context("executor stdin")?;
        let stdout = child.stdout.take().context("executor stdout")?;
        Ok(Self {
            child,
            stdin: Some(stdin),
            stdout,
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Domain for LinuxExecutor {
    fn id(&self) -> DomainId {
        DomainId::Linux
    }
    fn invoke(&mut self, request: &[u8]) -> Result<Invocation> {
        let stdin = self
            .stdin
            .as_mut()
            .context("the Linux executor is shutting down")?;
        exchange(&mut self.stdout, stdin, request, "the Linux executor")
    }
}

impl Drop for LinuxExecutor {
    fn drop(&mut self) {
        // Closing stdin ends the executor's loop; wait so no zombie is left behind.
        drop(self.stdin.take());
        if self.child.wait().is_err() {
            let _ = self.child.kill();
        }
    }
}

/// How the MCU domain is reached.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum McuEndpoint {
    /// A Unix stream socket speaking [`crate::wire`] (e.g. `qf-mcu-emu --unix-socket PATH`).
    Socket(PathBuf),
    /// Linux's `rpmsg_char`, on the board itself.
    Rpmsg,
    /// The kernel dispatch device (`None`: the first `/dev/qfabricN`).
    Kernel(Option<PathBuf>),
    /// A serial device (a UART, a pty) at a baud rate, speaking [`crate::wire`] with
    /// resynchronisation ([`crate::serial`]).
    Serial { device: PathBuf, baud: u32 },
}

impl McuEndpoint {
    /// The one endpoint named by a socket path, the rpmsg switch, a kernel device (present
    /// with or without a path) or a serial device with its baud rate, if any. `names` spell the
    /// four as the user wrote them (flags or configuration keys): naming two or more is an
    /// error that names them.
    pub fn choose(
        socket: Option<&Path>,
        rpmsg: bool,
        kernel: Option<Option<&Path>>,
        serial: Option<(&Path, u32)>,
        names: [&str; 4],
    ) -> Result<Option<McuEndpoint>> {
        let named: Vec<&str> = [socket.is_some(), rpmsg, kernel.is_some(), serial.is_some()]
            .iter()
            .zip(names)
            .filter_map(|(&given, name)| given.then_some(name))
            .collect();
        if named.len() > 1 {
            bail!(
                "{} both name the MCU endpoint; keep one",
                named.join(" and ")
            );
        }
        if let Some((_, baud)) = serial {
            crate::serial::baud_rate(baud).with_context(|| names[3].to_owned())?;
        }
        Ok(match (socket, rpmsg, kernel, serial) {
            (Some(path), _, _, _) => Some(McuEndpoint::Socket(path.to_owned())),
            (_, true, _, _) => Some(McuEndpoint::Rpmsg),
            (_, _, Some(path), _) => Some(McuEndpoint::Kernel(path.map(Path::to_owned))),
            (_, _, _, Some((device, baud))) => Some(McuEndpoint::Serial {
                device: device.to_owned(),
                baud,
            }),
            _ => None,
        })
    }

    /// Connects, or for a socket, the kernel device or a serial device returns an endpoint that
    /// keeps reconnecting even if the first attempt fails (a daemon's MCU, which may start later
    /// or restart); rpmsg_char endpoints are opened once.
    pub fn open_reconnecting(&self, timeout: Duration) -> Result<Box<dyn Domain>> {
        match self {
            McuEndpoint::Socket(path) => Ok(Box::new(McuSocket::reconnecting(path, timeout))),
            McuEndpoint::Kernel(path) => Ok(Box::new(McuChannel::new(
                KernelDevice::reconnecting(path.as_deref()),
                timeout,
            ))),
            McuEndpoint::Serial { device, baud } => Ok(Box::new(McuChannel::new(
                SerialLine::reconnecting(device, *baud)?,
                timeout,
            ))),
            _ => self.open(timeout),
        }
    }

    /// Connects; every reply is awaited at most `timeout`.
    pub fn open(&self, timeout: Duration) -> Result<Box<dyn Domain>> {
        Ok(match self {
            McuEndpoint::Socket(path) => Box::new(McuSocket::connect(path, timeout)?),
            McuEndpoint::Rpmsg => Box::new(McuRpmsg::open(timeout)?),
            McuEndpoint::Kernel(path) => Box::new(McuKernel::open(path.as_deref(), timeout)?),
            McuEndpoint::Serial { device, baud } => {
                Box::new(McuChannel::new(SerialLine::open(device, *baud)?, timeout))
            }
        })
    }
}

/// Opens an endpoint for `domain`: the Linux executor at `executor` under `scheduling`, or the MCU
/// endpoint `mcu` (an error naming the flags when there is none).
pub fn open_domain(
    domain: DomainId,
    executor: &Path,
    mcu: Option<&McuEndpoint>,
    scheduling: Scheduling,
) -> Result<Box<dyn Domain>> {
    Ok(match domain {
        DomainId::Linux => Box::new(LinuxExecutor::spawn(executor, scheduling)?),
        DomainId::Mcu => mcu
            .context("the mcu domain needs an MCU endpoint (--mcu-socket PATH, --mcu-rpmsg, --mcu-dev [PATH] or --mcu-serial DEVICE)")?
            .open(Duration::from_secs(5))?,
    })
}

/// An MCU endpoint on a Unix stream socket (e.g. `qf-mcu-emu --unix-socket PATH`) that
/// reconnects by itself.
///
/// Any failure (the peer closed, a write or read error, no reply within the time-out, bytes
/// arriving unasked) drops the connection, since a late reply would otherwise be read as the
/// answer to the next request. The next call connects again at once; while that keeps failing,
/// attempts are spaced by a doubling backoff from 50 ms up to [`MAX_BACKOFF`], and calls in
/// between fail at once naming the endpoint. A failed request is never repeated (the MCU may
/// have run it).
#[derive(Debug)]
pub struct McuSocket {
    stream: Option<UnixStream>,
    path: PathBuf,
    timeout: Duration,
    /// Consecutive failed connection attempts (0 while connected or before the first retry).
    failures: u32,
    /// No connection attempt before this instant.
    retry_at: Instant,
    /// Why the endpoint is down, for the next error.
    last_error: Option<String>,
}

/// Longest wait between two connection attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(2);
const FIRST_BACKOFF: Duration = Duration::from_millis(50);

impl McuSocket {
    /// Connects, with `timeout` on every read so a silent endpoint is an error, not a hang.
    pub fn connect(path: &Path, timeout: Duration) -> Result<Self> {
        let mut socket = Self::reconnecting(path, timeout);
        if socket.stream.is_none() {
            bail!(
                "connecting to the MCU endpoint {}: {}",
                path.display(),
                socket.last_error.take().unwrap_or_default()
            );
        }
        Ok(socket)
    }

    /// Tries to connect once and returns the endpoint either way; a down endpoint is retried
    /// by later calls (see the type's documentation).
    pub fn reconnecting(path: &Path, timeout: Duration) -> Self {
        let mut socket = Self {
            stream: None,
            path: path.to_owned(),
            timeout,
            failures: 0,
            retry_at: Instant::now(),
            last_error: None,
        };
        let _ = socket.stream();
        socket
    }

    /// Whether a connection is open now.
    pub fn connected(&self) -> bool {
        self.stream.is_some()
    }

    fn lose(&mut self, why: String) {
        self.stream = None;
        self.last_error = Some(why);
    }

    /// The open connection, connecting first if the backoff allows.
    fn stream(&mut self) -> Result<&UnixStream> {
        if self.stream.is_none() {
            let now = Instant::now();
            if now < self.retry_at {
                bail!(
                    "the MCU endpoint {} is down ({}); next connection attempt in {} ms",
                    self.path.display(),
                    self.last_error.as_deref().unwrap_or("not connected"),
                    (self.retry_at - now).as_millis()
                );
            }
            let connected = UnixStream::connect(&self.path)
                .and_then(|s| s.set_read_timeout(Some(self.timeout)).map(|()| s));
            match connected {
                Ok(stream) => {
                    self.stream = Some(stream);
                    self.failures = 0;
                    self.last_error = None;
                }
                Err(error) => {
                    let delay = FIRST_BACKOFF
                        .saturating_mul(1 << self.failures.min(16))
                        .min(MAX_BACKOFF);
                    self.failures = self.failures.saturating_add(1);
                    self.retry_at = now + delay;
                    self.last_error = Some(format!("connecting: {error}"));
                    bail!(
                        "connecting to the MCU endpoint {}: {error}",
                        self.path.display()
                    );
                }
            }
        }
        self.stream.as_ref().context("the MCU endpoint is closed")
    }
}

impl Domain for McuSocket {
    fn id(&self) -> DomainId {
        DomainId::Mcu
    }

    fn invoke(&mut self, request: &[u8]) -> Result<Invocation> {
        let what = format!("the MCU endpoint {}", self.path.display());
        let stream = self.stream()?;
        let (mut reader, mut writer) = (stream, stream);
        let result = exchange(&mut reader, &mut writer, request, &what);
        if let Err(error) = &result {
            self.lose(format!("{error:#}"));
        }
        result
    }

    fn check_available(&mut self) -> bool {
        if let Some(stream) = &self.stream {
            // Between calls nothing may arrive: readable means the peer closed (or sent bytes
            // unasked, which would desynchronise the next reply); either way, start afresh.
            let mut fds = [nix::poll::PollFd::new(
                std::os::fd::AsFd::as_fd(stream),
                nix::poll::PollFlags::POLLIN,
            )];
            if nix::poll::poll(&mut fds, nix::poll::PollTimeout::ZERO).unwrap_or(0) > 0 {
                use nix::sys::socket::{recv, MsgFlags};
                let mut byte = [0u8; 1];
                let peeked = recv(
                    std::os::fd::AsRawFd::as_raw_fd(stream),
                    &mut byte,
                    MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT,
                );
                let why = match peeked {
                    Ok(0) => "the endpoint closed the connection".to_owned(),
                    Ok(_) => "bytes arrived unasked".to_owned(),
                    Err(e) => e.to_string(),
                };
                self.lose(why);
            }
        }
        self.stream().is_ok()
    }

    fn down_reason(&self) -> Option<String> {
        self.last_error.clone()
    }
}

/// How an MCU channel on the board carries a request to its reply, and brings the frames the
/// MCU sends unasked (a resident chain's results, which go to the endpoint that last wrote).
pub trait McuTransport: Send {
    /// Sends `request` and puts its reply in `response`, waiting at most `timeout`; returns the
    /// reply's length and, when the transport can tell, where the time went.
    fn round_trip(
        &mut self,
        request: &[u8],
        response: &mut [u8; MAX_FRAME_LEN],
        timeout: Duration,
    ) -> Result<(usize, Option<Split>)>;

    /// Whether the channel can take a request now (see [`Domain::check_available`]).
    fn check_available(&mut self) -> bool {
        true
    }

    /// Why the channel is unavailable, when it can say.
    fn down_reason(&self) -> Option<String> {
        None
    }

    /// The MCU's own compute time for the last reply (ns), when the transport carries one (the
    /// serial line's compute trailer).
    fn compute_ns(&self) -> Option<u64> {
        None
    }

    /// The next frame the MCU sent unasked, waiting at most `timeout`, with the time Linux's
    /// kernel had it (CLOCK_MONOTONIC ns) when the transport can tell; `None` if none came.
    fn receive(
        &mut self,
        buf: &mut [u8; MAX_FRAME_LEN],
        timeout: Duration,
    ) -> Result<Option<(usize, Option<u64>)>>;
}

/// The MCU's `qfabric` channel (on the board, or in the virtual board's guest) over a
/// [`McuTransport`]. ABI v1 carries no compute time, so [`Invocation::compute`] is `None` and the
/// residual is not decomposed, unless the transport carries one beside the frame (a serial
/// line's compute trailer).
pub struct McuChannel<T> {
    transport: T,
    timeout: Duration,
}

/// The channel through Linux's `rpmsg_char`.
pub type McuRpmsg = McuChannel<RpmsgChar>;
/// The channel through the kernel dispatch device `/dev/qfabricN`.
pub type McuKernel = McuChannel<KernelDevice>;
/// An MCU on a serial line.
pub type McuSerial = McuChannel<SerialLine>;

impl<T: McuTransport> McuChannel<T> {
    pub fn new(transport: T, timeout: Duration) -> Self {
        Self { transport, timeout }
    }

    /// The next frame the MCU sent unasked (see [`McuTransport::receive`]).
    pub fn receive(
        &mut self,
        buf: &mut [u8; MAX_FRAME_LEN],
        timeout: Duration,
    ) -> Result<Option<(usize, Option<u64>)>> {
        self.transport.receive(buf, timeout)
    }
}

impl McuRpmsg {
    /// Creates a fresh endpoint to the channel.
    pub fn open(timeout: Duration) -> Result<Self> {
        Ok(Self::new(RpmsgChar::open()?, timeout))
    }
}

impl McuKernel {
    /// Opens `path`, or the first `/dev/qfabricN`.
    pub fn open(path: Option<&Path>, timeout: Duration) -> Result<Self> {
        Ok(Self::new(KernelDevice::open(path)?, timeout))
    }
}

impl<T: McuTransport> Domain for McuChannel<T> {
    fn id(&self) -> DomainId {
        DomainId::Mcu
    }

    fn invoke(&mut self, request: &[u8]) -> Result<Invocation> {
        let mut response = [0u8; MAX_FRAME_LEN];
        let start = Instant::now();
        let (len, dispatch) = self
            .transport
            .round_trip(request, &mut response, self.timeout)?;
        Ok(Invocation {
            response,
            len,
            latency: start.elapsed(),
            compute: self.transport.compute_ns().map(Duration::from_nanos),
            dispatch,
        })
    }
    fn check_available(&mut self) -> bool {
        self.transport.check_available()
    }

    fn down_reason(&self) -> Option<String> {
        self.transport.down_reason()
    }
}

/// A serial line as a transport: the reply is the response carrying the request's id, with the
/// MCU's compute trailer; other frames wait for [`McuTransport::receive`].
impl McuTransport for SerialLine {
    fn round_trip(
        &mut self,
        request: &[u8],
        response: &mut [u8; MAX_FRAME_LEN],
        timeout: Duration,
    ) -> Result<(usize, Option<Split>)> {
        Ok((
            SerialLine::round_trip(self, request, response, timeout)?,
            None,
        ))
    }

    fn check_available(&mut self) -> bool {
        SerialLine::check_available(self)
    }

    fn down_reason(&self) -> Option<String> {
        SerialLine::down_reason(self)
    }

    fn compute_ns(&self) -> Option<u64> {
        SerialLine::compute_ns(self)
    }

    fn receive(
        &mut self,
        buf: &mut [u8; MAX_FRAME_LEN],
        timeout: Duration,
    ) -> Result<Option<(usize, Option<u64>)>> {
        SerialLine::receive(self, buf, timeout)
    }
}

/// An `rpmsg_char` endpoint as a transport: the reply is the next message carrying the
/// request's invocation id; other messages before it (a resident chain's results) are skipped.
pub struct RpmsgChar {
    /// `None` only while dropping (destroying the endpoint consumes it).
    endpoint: Option<Endpoint>,
}

impl RpmsgChar {
    /// Creates a fresh endpoint to the channel.
    pub fn open() -> Result<Self> {
        Ok(Self {
            endpoint: Some(Endpoint::open_qfabric()?),
        })
    }

    fn endpoint(&mut self) -> Result<&mut Endpoint> {
        self.endpoint
            .as_mut()
            .context("the rpmsg endpoint is closing")
    }
}

impl McuTransport for RpmsgChar {
    fn round_trip(
        &mut self,
        request: &[u8],
        response: &mut [u8; MAX_FRAME_LEN],
        timeout: Duration,
    ) -> Result<(usize, Option<Split>)> {
        let endpoint = self.endpoint()?;
        let awaited = qf_abi::decode_frame(request)
            .map(|frame| frame.header.invocation_id)
            .ok();
        let start = Instant::now();
        endpoint
            .send(request)
            .with_context(|| format!("sending a request on {}", endpoint.path.display()))?;
        loop {
            let left = timeout.saturating_sub(start.elapsed());
            let len = endpoint.recv(response, left)?;
            let id = qf_abi::decode_frame(&response[..len])
                .map(|frame| frame.header.invocation_id)
                .ok();
            // A request too broken to carry an id gets the first reply (the MCU answers in
            // order); otherwise the reply carries the request's id.
            if awaited.is_none() || id == awaited {
                return Ok((len, None));
            }
        }
    }

    fn receive(
        &mut self,
        buf: &mut [u8; MAX_FRAME_LEN],
        timeout: Duration,
    ) -> Result<Option<(usize, Option<u64>)>> {
        // rpmsg_char does not say when the kernel had the message.
        Ok(self
            .endpoint()?
            .try_recv(buf, timeout)?
            .map(|len| (len, None)))
    }
}

impl Drop for RpmsgChar {
    fn drop(&mut self) {
        if let Some(endpoint) = self.endpoint.take() {
            if let Err(error) = endpoint.destroy() {
                eprintln!("qf: closing the rpmsg endpoint: {error:#}");
            }
        }
    }
}

/// The kernel device as a transport: the kernel matches the reply to this caller. When the
/// channel went away (the MCU crashed or stopped), the call fails and the next one opens the
/// device again, which the kernel creates anew once the MCU announces its channel again; the
/// failed request is not repeated (the crashed MCU may have run it).
pub struct KernelDevice {
    /// The device asked for; `None`: the first `/dev/qfabricN`.
    path: Option<PathBuf>,
    /// `None` after the channel went away.
    device: Option<Device>,
    /// Why the device could not be opened the last time it was checked.
    last_error: Option<String>,
}

impl KernelDevice {
    /// Tries to open `path` (or the first `/dev/qfabricN`) and returns the transport either way;
    /// a missing device is opened by a later call.
    pub fn reconnecting(path: Option<&Path>) -> Self {
        let mut kernel = KernelDevice {
            path: path.map(Path::to_owned),
            device: None,
            last_error: None,
        };
        kernel.check_available();
        kernel
    }

    pub fn open(path: Option<&Path>) -> Result<Self> {
        let mut kernel = KernelDevice {
            path: path.map(Path::to_owned),
            device: None,
            last_error: None,
        };
        kernel.device()?;
        Ok(kernel)
    }

    /// The open device, opened again if the channel went away.
    fn device(&mut self) -> Result<&Device> {
        if self.device.is_none() {
            let device = match &self.path {
                Some(path) => Device::open(path)?,
                None => Device::find()?,
            };
            self.device = Some(device);
        }
        self.device.as_ref().context("the kernel device is closed")
    }

    /// Keeps the device unless `result` says its channel went away.
    fn check<T>(&mut self, result: Result<T, DevError>) -> Result<T> {
        if let Err(error) = &result {
            if channel_gone(error) {
                self.device = None;
            }
        }
        Ok(result?)
    }
}

/// Whether `error` means the channel behind the open device is gone for good (`ENODEV`, or end
/// of file on `read`).
pub fn channel_gone(error: &DevError) -> bool {
    matches!(error, DevError::Closed { .. }) || error.errno() == Some(nix::errno::Errno::ENODEV)
}

impl McuTransport for KernelDevice {
    /// Up while the device is open, or when it opens again (the MCU announced its channel).
    fn check_available(&mut self) -> bool {
        match self.device() {
            Ok(_) => {
                self.last_error = None;
                true
            }
            Err(error) => {
                self.last_error = Some(format!("{error:#}"));
                false
            }
        }
    }

    fn down_reason(&self) -> Option<String> {
        self.last_error.clone()
    }

    fn round_trip(
        &mut self,
        request: &[u8],
        response: &mut [u8; MAX_FRAME_LEN],
        timeout: Duration,
    ) -> Result<(usize, Option<Split>)> {
        let device = self.device()?;
        let start_ns = monotonic_ns();
        let result = device.invoke_into(request, response, timeout);
        let end_ns = monotonic_ns();
        let reply = self.check(result)?;
        Ok((reply.len, Some(reply.kernel.split(start_ns, end_ns))))
    }

    fn receive(
        &mut self,
        buf: &mut [u8; MAX_FRAME_LEN],
        timeout: Duration,
    ) -> Result<Option<(usize, Option<u64>)>> {
        let result = self.device()?.recv_stamped(buf, timeout);
        Ok(self
            .check(result)?
            .map(|(len, received_ns)| (len, Some(received_ns))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    const NAMES: [&str; 4] = ["--mcu-socket", "--mcu-rpmsg", "--mcu-dev", "--mcu-serial"];

    #[test]
    fn one_mcu_endpoint_is_chosen_and_two_are_refused_by_name() {
        let socket = Path::new("mcu.sock");
        let dev = Path::new("/dev/qfabric1");
        let choose = |s, r, k| McuEndpoint::choose(s, r, k, None, NAMES);
        assert_eq!(choose(None, false, None).unwrap(), None);
        assert_eq!(
            choose(Some(socket), false, None).unwrap(),
            Some(McuEndpoint::Socket(socket.to_owned()))
        );
        assert_eq!(choose(None, true, None).unwrap(), Some(McuEndpoint::Rpmsg));
        assert_eq!(
            choose(None, false, Some(None)).unwrap(),
            Some(McuEndpoint::Kernel(None))
        );
        assert_eq!(
            choose(None, false, Some(Some(dev))).unwrap(),
            Some(McuEndpoint::Kernel(Some(dev.to_owned())))
        );
        for (s, r, k, named) in [
            (
                Some(socket),
                true,
                None,
                "--mcu-socket and --mcu-rpmsg both",
            ),
            (
                Some(socket),
                false,
                Some(None),
                "--mcu-socket and --mcu-dev both",
            ),
            (
                None,
                true,
                Some(Some(dev)),
                "--mcu-rpmsg and --mcu-dev both",
            ),
            (
                Some(socket),
                true,
                Some(None),
                "--mcu-socket and --mcu-rpmsg and --mcu-dev",
            ),
        ] {
            let error = choose(s, r, k).unwrap_err().to_string();
            assert!(error.contains(named), "{error}");
        }
        let tty = Path::new("/dev/ttyUSB0");
        assert_eq!(
            McuEndpoint::choose(None, false, None, Some((tty, 115_200)), NAMES).unwrap(),
            Some(McuEndpoint::Serial {
                device: tty.to_owned(),
                baud: 115_200
            })
        );
        let error = McuEndpoint::choose(Some(socket), false, None, Some((tty, 9600)), NAMES)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("--mcu-socket and --mcu-serial both"),
            "{error}"
        );
        let error = format!(
            "{:#}",
            McuEndpoint::choose(None, false, None, Some((tty, 12345)), NAMES).unwrap_err()
        );
        assert!(
            error.contains("--mcu-serial") && error.contains("12345"),
            "{error}"
        );
    }

    /// A transport that serves requests here with the dispatcher and holds a queue of frames
    /// "sent unasked".
    struct LocalDispatcher {
        replay: qf_tasks::Replay,
        unasked: VecDeque<Vec<u8>>,
    }

    impl McuTransport for LocalDispatcher {
        fn round_trip(
            &mut self,
            request: &[u8],
            response: &mut [u8; MAX_FRAME_LEN],
            _timeout: Duration,
        ) -> Result<(usize, Option<Split>)> {
            let served = qf_tasks::serve(request, response, &|| 0u64, &mut self.replay)
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            Ok((served.len, None))
        }

        fn receive(
            &mut self,
            buf: &mut [u8; MAX_FRAME_LEN],
            _timeout: Duration,
        ) -> Result<Option<(usize, Option<u64>)>> {
            Ok(self.unasked.pop_front().map(|frame| {
                buf[..frame.len()].copy_from_slice(&frame);
                (frame.len(), None)
            }))
        }
    }

    #[test]
    fn an_mcu_channel_returns_the_reply_without_a_compute_time_and_passes_unasked_frames() {
        let mut channel = McuChannel::new(
            LocalDispatcher {
                replay: qf_tasks::Replay::new(),
                unasked: VecDeque::from([b"result".to_vec()]),
            },
            Duration::from_secs(1),
        );
        assert_eq!(channel.id(), DomainId::Mcu);
        let request = crate::workload::random_request(qf_tasks::Task::Add, 5);
        let mut frame = [0u8; MAX_FRAME_LEN];
        let len = crate::workload::encode_request(qf_tasks::Task::Add, &request, 9, 0, &mut frame)
            .unwrap();
        let invocation = channel.invoke(&frame[..len]).unwrap();
        assert_eq!(invocation.compute, None);
        assert_eq!(invocation.dispatch, None);
        assert!(
            crate::workload::outcome_ok(qf_tasks::Task::Add, &request, invocation.frame()).unwrap()
        );
        let mut buf = [0u8; MAX_FRAME_LEN];
        assert_eq!(
            channel.receive(&mut buf, Duration::ZERO).unwrap(),
            Some((6, None))
        );
        assert_eq!(&buf[..6], b"result");
        assert_eq!(channel.receive(&mut buf, Duration::ZERO).unwrap(), None);
    }

    #[test]
    fn only_a_vanished_channel_makes_the_device_open_again() {
        let path = PathBuf::from("/dev/qfabric0");
        let kernel = |errno| DevError::Kernel {
            path: path.clone(),
            op: "invoke",
            errno,
            meaning: "",
        };
        assert!(channel_gone(&kernel(nix::errno::Errno::ENODEV)));
        assert!(channel_gone(&DevError::Closed { path: path.clone() }));
        for errno in [
            nix::errno::Errno::ETIMEDOUT,
            nix::errno::Errno::EBUSY,
            nix::errno::Errno::EINTR,
        ] {
            assert!(!channel_gone(&kernel(errno)), "{errno}");
        }
        // A closed transport opens its device again on the next call, naming it if it cannot.
        let missing = std::env::temp_dir().join(format!("qfabric-gone-{}", std::process::id()));
        let mut transport = KernelDevice {
            path: Some(missing.clone()),
            device: None,
            last_error: None,
        };
        // A vanished device is reported down, with the reason, until it opens again.
        assert!(!transport.check_available());
        assert!(transport
            .down_reason()
            .is_some_and(|r| r.contains(&*missing.to_string_lossy())));
        let mut response = [0u8; MAX_FRAME_LEN];
        let error = transport
            .round_trip(&[0; 36], &mut response, Duration::from_secs(1))
            .unwrap_err();
        assert!(format!("{error:#}").contains(&*missing.to_string_lossy()));
    }

    /// A silent endpoint is a time-out in words (not "Resource temporarily unavailable"); the
    /// socket then reconnects, and a vanished endpoint is retried with a growing backoff.
    #[test]
    fn an_mcu_socket_names_a_time_out_and_reconnects_with_backoff() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcu.sock");
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let mut socket = McuSocket::connect(&path, Duration::from_millis(50)).unwrap();
        let (_silent, _) = listener.accept().unwrap();
        let error = format!("{:#}", socket.invoke(&[0; 36]).unwrap_err());
        assert!(error.contains("no reply from the MCU endpoint"), "{error}");
        assert!(!error.contains("os error"), "{error}");
        assert!(!socket.connected(), "a timed-out connection is dropped");
        // The next call connects afresh (the listener is still there).
        assert!(socket.check_available());
        drop(listener);
        std::fs::remove_file(&path).unwrap();
        drop(_silent);
        assert!(!socket.check_available(), "the peer closed");
        let error = format!("{:#}", socket.invoke(&[0; 36]).unwrap_err());
        assert!(
            error.contains("is down") || error.contains("connecting"),
            "{error}"
        );
        // While down, calls fail at once instead of connecting each time.
        let start = Instant::now();
        for _ in 0..100 {
            assert!(socket.invoke(&[0; 36]).is_err());
        }
        assert!(start.elapsed() < Duration::from_millis(500));
        assert!(socket.down_reason().is_some());
    }

    #[test]
    fn a_kernel_endpoint_that_is_missing_is_named() {
        let missing = std::env::temp_dir().join(format!("qfabric-none-{}", std::process::id()));
        let endpoint = McuEndpoint::Kernel(Some(missing.clone()));
        let error = format!("{:#}", endpoint.open(Duration::from_secs(1)).err().unwrap());
        assert!(error.contains(&*missing.to_string_lossy()), "{error}");
    }
}
