//! Domain endpoints: where an invocation runs. The controller and profiler see only [`Domain`],
//! so the MCU emulator and a kernel-driver path plug in without touching them.
//!
//! * [`LinuxExecutor`]: a persistent `qf-executor` child fed over a pipe (never a process per
//!   call), optionally at SCHED_FIFO 50;
//! * [`McuSocket`]: an MCU endpoint on a Unix stream socket speaking the same frames;
//! * [`McuRpmsg`]: the MCU's `qfabric` rpmsg channel through Linux's `rpmsg_char`, one frame per
//!   message, dispatched by the kernel (the QFabric paper's Section VIII-A: no userspace relay).
//!
//! The first two use the framing of [`crate::wire`].

use crate::model::DomainId;
use crate::rpmsg_char::Endpoint;
use crate::rt::{set_scheduling, Scheduling};
use crate::wire::{read_message, split_reply, write_message, MAX_MESSAGE_LEN};
use anyhow::{bail, Context, Result};
use qf_abi::MAX_FRAME_LEN;
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
    let len = read_message(input, &mut body)
        .with_context(|| format!("reading the reply from {what}"))?
        .with_context(|| format!("{what} closed the stream instead of replying"))?;
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
}

impl McuEndpoint {
    /// The endpoint the command-line flags `--mcu-socket PATH` / `--mcu-rpmsg` name, if any
    /// (clap keeps them exclusive).
    pub fn from_flags(socket: Option<&Path>, rpmsg: bool) -> Option<McuEndpoint> {
        match (socket, rpmsg) {
            (Some(path), _) => Some(McuEndpoint::Socket(path.to_owned())),
            (None, true) => Some(McuEndpoint::Rpmsg),
            (None, false) => None,
        }
    }

    /// Connects; every reply is awaited at most `timeout`.
    pub fn open(&self, timeout: Duration) -> Result<Box<dyn Domain>> {
        Ok(match self {
            McuEndpoint::Socket(path) => Box::new(McuSocket::connect(path, timeout)?),
            McuEndpoint::Rpmsg => Box::new(McuRpmsg::open(timeout)?),
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
            .context("the mcu domain needs an MCU endpoint (--mcu-socket PATH or --mcu-rpmsg)")?
            .open(Duration::from_secs(5))?,
    })
}

/// An MCU endpoint on a Unix stream socket (e.g. `qf-mcu-emu --unix-socket PATH`).
#[derive(Debug)]
pub struct McuSocket {
    stream: UnixStream,
    path: PathBuf,
}

impl McuSocket {
    /// Connects, with `timeout` on every read so a silent endpoint is an error, not a hang.
    pub fn connect(path: &Path, timeout: Duration) -> Result<Self> {
        let stream = UnixStream::connect(path)
            .with_context(|| format!("connecting to the MCU endpoint {}", path.display()))?;
        stream.set_read_timeout(Some(timeout))?;
        Ok(Self {
            stream,
            path: path.to_owned(),
        })
    }
}

impl Domain for McuSocket {
    fn id(&self) -> DomainId {
        DomainId::Mcu
    }
    fn invoke(&mut self, request: &[u8]) -> Result<Invocation> {
        let what = format!("the MCU endpoint {}", self.path.display());
        let mut reader = &self.stream;
        let mut writer = &self.stream;
        exchange(&mut reader, &mut writer, request, &what)
    }
}

/// The MCU's `qfabric` channel through Linux's `rpmsg_char` (on the board, or in the virtual
/// board's guest). Frames other than the awaited reply (e.g. a resident chain's results, which
/// go to the endpoint that last wrote) are skipped; ABI v1 carries no compute time, so
/// [`Invocation::compute`] is `None` and the residual is not decomposed.
pub struct McuRpmsg {
    /// `None` only while dropping (destroying the endpoint consumes it).
    endpoint: Option<Endpoint>,
    timeout: Duration,
}

impl McuRpmsg {
    /// Creates a fresh endpoint to the channel.
    pub fn open(timeout: Duration) -> Result<Self> {
        Ok(Self {
            endpoint: Some(Endpoint::open_qfabric()?),
            timeout,
        })
    }

    /// The endpoint itself, to read frames nobody asked for (a resident chain's results).
    pub fn endpoint_mut(&mut self) -> Result<&mut Endpoint> {
        self.endpoint
            .as_mut()
            .context("the rpmsg endpoint is closing")
    }
}

impl Domain for McuRpmsg {
    fn id(&self) -> DomainId {
        DomainId::Mcu
    }

    fn invoke(&mut self, request: &[u8]) -> Result<Invocation> {
        let timeout = self.timeout;
        let endpoint = self.endpoint_mut()?;
        let awaited = qf_abi::decode_frame(request)
            .map(|frame| frame.header.invocation_id)
            .ok();
        let start = Instant::now();
        endpoint
            .send(request)
            .with_context(|| format!("sending a request on {}", endpoint.path.display()))?;
        let mut response = [0u8; MAX_FRAME_LEN];
        loop {
            let left = timeout.saturating_sub(start.elapsed());
            let len = endpoint.recv(&mut response, left)?;
            let id = qf_abi::decode_frame(&response[..len])
                .map(|frame| frame.header.invocation_id)
                .ok();
            // A request too broken to carry an id gets the first reply (the MCU answers in
            // order); otherwise the reply carries the request's id.
            if awaited.is_none() || id == awaited {
                return Ok(Invocation {
                    response,
                    len,
                    latency: start.elapsed(),
                    compute: None,
                });
            }
        }
    }
}

impl Drop for McuRpmsg {
    fn drop(&mut self) {
        if let Some(endpoint) = self.endpoint.take() {
            if let Err(error) = endpoint.destroy() {
                eprintln!("qf: closing the rpmsg endpoint: {error:#}");
            }
        }
    }
}
