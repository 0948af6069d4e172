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
//! [`McuChannel`] over three [`McuTransport`]s. The four MCU endpoints reconnect by themselves
//! after the MCU went away, by one rule ([`crate::reconnect`]).

use crate::qfabric_dev::{monotonic_ns, DevError, Device, Split};
use crate::reconnect::{hung_up, Reconnecting};
use crate::rpmsg_char::{Endpoint, Eptdev};
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

    /// An endpoint that keeps reconnecting with bounded backoff ([`Reconnecting`]) even if the
    /// first attempt fails (a daemon's MCU, which may start later or restart); every reply is
    /// awaited at most `timeout`. Only a serial baud rate no tty takes is an error here.
    pub fn open_reconnecting(&self, timeout: Duration) -> Result<Box<dyn Domain>> {
        Ok(match self {
            McuEndpoint::Socket(path) => Box::new(McuSocket::reconnecting(path, timeout)),
            McuEndpoint::Rpmsg => Box::new(McuChannel::new(RpmsgChar::reconnecting(), timeout)),
            McuEndpoint::Kernel(path) => Box::new(McuChannel::new(
                KernelDevice::reconnecting(path.as_deref()),
                timeout,
            )),
            McuEndpoint::Serial { device, baud } => Box::new(McuChannel::new(
                SerialLine::reconnecting(device, *baud)?,
                timeout,
            )),
        })
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
/// reconnects by itself ([`Reconnecting`]).
///
/// Any failure (the peer closed, a write or read error, no reply within the time-out, bytes
/// arriving unasked) drops the connection, since a late reply would otherwise be read as the
/// answer to the next request. A failed request is never repeated (the MCU may have run it).
#[derive(Debug)]
pub struct McuSocket {
    stream: Reconnecting<UnixStream>,
}

impl McuSocket {
    /// Connects, with `timeout` on every read so a silent endpoint is an error, not a hang.
    pub fn connect(path: &Path, timeout: Duration) -> Result<Self> {
        let (what, open) = Self::opener(path, timeout);
        Ok(Self {
            stream: Reconnecting::connect(what, open)?,
        })
    }

    /// Tries to connect once and returns the endpoint either way; a down endpoint is retried
    /// by later calls.
    pub fn reconnecting(path: &Path, timeout: Duration) -> Self {
        let (what, open) = Self::opener(path, timeout);
        Self {
            stream: Reconnecting::new(what, open),
        }
    }

    fn opener(
        path: &Path,
        timeout: Duration,
    ) -> (String, impl FnMut() -> Result<UnixStream> + Send + 'static) {
        let path = path.to_owned();
        let what = format!("the MCU endpoint {}", path.display());
        let open = move || {
            UnixStream::connect(&path)
                .and_then(|s| s.set_read_timeout(Some(timeout)).map(|()| s))
                .with_context(|| format!("connecting to the MCU endpoint {}", path.display()))
        };
        (what, open)
    }

    /// Whether a connection is open now.
    pub fn connected(&self) -> bool {
        self.stream.is_open()
    }
}

impl Domain for McuSocket {
    fn id(&self) -> DomainId {
        DomainId::Mcu
    }

    fn invoke(&mut self, request: &[u8]) -> Result<Invocation> {
        let what = self.stream.what().to_owned();
        let stream = &*self.stream.link()?;
        let (mut reader, mut writer) = (stream, stream);
        let result = exchange(&mut reader, &mut writer, request, &what);
        if let Err(error) = &result {
            self.stream.lose(format!("{error:#}"));
        }
        result
    }

    fn check_available(&mut self) -> bool {
        // Between calls nothing may arrive: readable means the peer closed (or sent bytes
        // unasked, which would desynchronise the next reply); either way, start afresh.
        self.stream.check(|stream| {
            let mut fds = [nix::poll::PollFd::new(
                std::os::fd::AsFd::as_fd(&*stream),
                nix::poll::PollFlags::POLLIN,
            )];
            if nix::poll::poll(&mut fds, nix::poll::PollTimeout::ZERO).unwrap_or(0) == 0 {
                return None;
            }
            use nix::sys::socket::{recv, MsgFlags};
            let mut byte = [0u8; 1];
            let peeked = recv(
                std::os::fd::AsRawFd::as_raw_fd(&*stream),
                &mut byte,
                MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT,
            );
            Some(match peeked {
                Ok(0) => "the endpoint closed the connection".to_owned(),
                Ok(_) => "bytes arrived unasked".to_owned(),
                Err(e) => e.to_string(),
            })
        })
    }

    fn down_reason(&self) -> Option<String> {
        self.stream.down_reason()
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
/// request's invocation id; other messages before it (a resident chain's results) are skipped,
/// and so is a late reply to a request that timed out.
///
/// When the channel goes away (the MCU crashed or stopped: `rpmsg_char` then answers `EPIPE`
/// and polls `POLLERR`), the endpoint is dropped and a new one created, with bounded backoff
/// ([`Reconnecting`]), once the MCU announces its channel again; the failed request is not
/// repeated. `E` is [`Endpoint`] on a board; host tests put an emulated endpoint device there.
pub struct RpmsgChar<E: Eptdev = Endpoint> {
    endpoint: Reconnecting<E>,
}

impl RpmsgChar {
    /// Creates a fresh endpoint to the channel.
    pub fn open() -> Result<Self> {
        Ok(Self {
            endpoint: Reconnecting::connect(RPMSG_WHAT, Endpoint::open_qfabric)?,
        })
    }

    /// Tries to create an endpoint and returns the transport either way; a channel that is not
    /// there (yet) is tried again by later calls.
    pub fn reconnecting() -> Self {
        Self::with_opener(Endpoint::open_qfabric)
    }
}

/// What an rpmsg_char transport reaches, in messages.
const RPMSG_WHAT: &str = "the MCU's rpmsg channel";

impl<E: Eptdev> RpmsgChar<E> {
    /// A transport whose endpoints `open` creates (tried once now, again after a loss).
    pub fn with_opener(open: impl FnMut() -> Result<E> + Send + 'static) -> Self {
        Self {
            endpoint: Reconnecting::new(RPMSG_WHAT, open),
        }
    }

    /// `error` from the endpoint at `path` as this call's error; an error that says the channel
    /// went away drops the endpoint (without destroying it: the kernel already did).
    fn failed(&mut self, error: std::io::Error, doing: &str, path: &Path) -> anyhow::Error {
        if rpmsg_gone(&error) {
            let why = format!("the channel behind {} went away ({error})", path.display());
            self.endpoint.lose(why.clone());
            anyhow::anyhow!("{doing} {}: {why}", path.display())
        } else {
            anyhow::anyhow!("{doing} {}: {error}", path.display())
        }
    }
}

/// Whether an `rpmsg_char` error means the endpoint's channel is gone: `EPIPE` (read, write or
/// `POLLERR` once the channel was removed), `ENODEV`, `ENXIO` or `ESHUTDOWN`.
pub fn rpmsg_gone(error: &std::io::Error) -> bool {
    matches!(
        error.raw_os_error(),
        Some(libc::EPIPE | libc::ENODEV | libc::ENXIO | libc::ESHUTDOWN)
    )
}

impl<E: Eptdev> McuTransport for RpmsgChar<E> {
    /// Up while the endpoint is open and its channel there, or when a new one could be created.
    fn check_available(&mut self) -> bool {
        self.endpoint.check(|endpoint| {
            endpoint
                .hung_up()
                .then(|| format!("the channel behind {} went away", endpoint.path().display()))
        })
    }

    fn down_reason(&self) -> Option<String> {
        self.endpoint.down_reason()
    }

    fn round_trip(
        &mut self,
        request: &[u8],
        response: &mut [u8; MAX_FRAME_LEN],
        timeout: Duration,
    ) -> Result<(usize, Option<Split>)> {
        let awaited = qf_abi::decode_frame(request)
            .map(|frame| frame.header.invocation_id)
            .ok();
        let start = Instant::now();
        let endpoint = self.endpoint.link()?;
        let path = endpoint.path().to_owned();
        if let Err(error) = endpoint.send(request) {
            return Err(self.failed(error, "sending a request on", &path));
        }
        loop {
            let left = timeout.saturating_sub(start.elapsed());
            let len = match self.endpoint.link()?.try_recv(response, left) {
                Ok(Some(len)) => len,
                Ok(None) => bail!(
                    "no reply on {} within {} ms",
                    path.display(),
                    timeout.as_millis()
                ),
                Err(error) => return Err(self.failed(error, "reading the reply on", &path)),
            };
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
        let endpoint = self.endpoint.link()?;
        let path = endpoint.path().to_owned();
        match endpoint.try_recv(buf, timeout) {
            Ok(received) => Ok(received.map(|len| (len, None))),
            Err(error) => Err(self.failed(error, "reading", &path)),
        }
    }
}

impl<E: Eptdev> Drop for RpmsgChar<E> {
    fn drop(&mut self) {
        if let Some(endpoint) = self.endpoint.take() {
            if let Err(error) = endpoint.destroy() {
                eprintln!("qf: closing the rpmsg endpoint: {error:#}");
            }
        }
    }
}

/// The kernel device as a transport: the kernel matches the reply to this caller. When the
/// channel went away (the MCU crashed or stopped: `ENODEV`, end of file, `POLLHUP`), the device
/// is closed and opened again, with bounded backoff ([`Reconnecting`]), once the kernel creates
/// it anew for the MCU's new channel; the failed request is not repeated (the crashed MCU may
/// have run it).
pub struct KernelDevice {
    device: Reconnecting<Device>,
}

impl KernelDevice {
    /// Tries to open `path` (or the first `/dev/qfabricN`) and returns the transport either way;
    /// a missing device is opened by a later call.
    pub fn reconnecting(path: Option<&Path>) -> Self {
        let (what, open) = Self::opener(path);
        KernelDevice {
            device: Reconnecting::new(what, open),
        }
    }

    pub fn open(path: Option<&Path>) -> Result<Self> {
        let (what, open) = Self::opener(path);
        Ok(KernelDevice {
            device: Reconnecting::connect(what, open)?,
        })
    }

    fn opener(path: Option<&Path>) -> (String, impl FnMut() -> Result<Device> + Send + 'static) {
        let path = path.map(Path::to_owned);
        let what = match &path {
            Some(path) => format!("the kernel device {}", path.display()),
            None => "the first /dev/qfabricN".to_owned(),
        };
        let open = move || {
            Ok(match &path {
                Some(path) => Device::open(path)?,
                None => Device::find()?,
            })
        };
        (what, open)
    }

    /// Keeps the device unless `result` says its channel went away.
    fn check<T>(&mut self, result: Result<T, DevError>) -> Result<T> {
        if let Err(error) = &result {
            if channel_gone(error) {
                self.device.lose(error.to_string());
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
    /// Up while the device is open and its channel there, or when it opens again (the MCU
    /// announced its channel).
    fn check_available(&mut self) -> bool {
        self.device.check(|device| {
            hung_up(std::os::fd::AsFd::as_fd(&*device)).then(|| {
                format!(
                    "the channel behind {} went away (POLLHUP)",
                    device.path().display()
                )
            })
        })
    }

    fn down_reason(&self) -> Option<String> {
        self.device.down_reason()
    }

    fn round_trip(
        &mut self,
        request: &[u8],
        response: &mut [u8; MAX_FRAME_LEN],
        timeout: Duration,
    ) -> Result<(usize, Option<Split>)> {
        let device = self.device.link()?;
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
        let result = self.device.link()?.recv_stamped(buf, timeout);
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
        let mut transport = KernelDevice::reconnecting(Some(&missing));
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
