//! The dispatcher every executor calls: request frame in, response frame out.
//!
//! The Linux executor, the MCU emulator and the Zephyr MCU executor all run exactly this code, so
//! both domains validate, deduplicate, compute and encode identically. It is `no_std`, does not
//! allocate, and writes only into the caller's buffer.
//!
//! For each request, in order:
//! 1. frame validation ([`qf_abi::decode_frame`]): OVERSIZED, MALFORMED, VERSION_MISMATCH;
//! 2. the frame must be a request (MALFORMED), name a declared task (UNKNOWN_TASK) and carry that
//!    task's declared effect class (MALFORMED: caller and executor disagree on the declaration);
//! 3. the payload must decode to the task's request type (MALFORMED);
//! 4. the task's replay window must accept (epoch, invocation id): STALE or DUPLICATE otherwise
//!    (only now, so a malformed request does not use up its invocation id);
//! 5. the kernel runs, timed on the caller's [`Clock`];
//! 6. the response (status OK) is encoded; if it does not fit `out`, EXECUTION_ERROR.
//!
//! Every rejection is still answered: a response frame with the rejection status and an empty
//! payload, echoing whatever ids the request carried ([`Header::salvage`]), so the caller can
//! match it. Only an `out` too small for even the 36-byte header is an `Err`.

use qf_abi::{
    decode_frame, encode_frame, encode_frame_raw, header::offset, AbiError, Frame, Header,
    MessageKind, Problem, ReplayWindow, Status, DEFAULT_REPLAY_WINDOW,
};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::clock::{timed, Clock};
use crate::declared::Task;
use crate::kernels;

/// Replay windows for every declared task, `N` invocation ids each (64 by default).
/// Holds `Task::COUNT * (8 N + 16)` bytes; no allocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replay<const N: usize = DEFAULT_REPLAY_WINDOW> {
    windows: [ReplayWindow<N>; Task::COUNT],
}

impl<const N: usize> Default for Replay<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Replay<N> {
    /// Empty windows at epoch 0 (a `const fn`, so it can initialise a `static`).
    pub const fn new() -> Self {
        Replay {
            windows: [const { ReplayWindow::new() }; Task::COUNT],
        }
    }

    /// The window of one task.
    pub fn window(&self, task: Task) -> &ReplayWindow<N> {
        &self.windows[task.index()]
    }

    /// The window of one task, e.g. to pre-check an invocation.
    pub fn window_mut(&mut self, task: Task) -> &mut ReplayWindow<N> {
        &mut self.windows[task.index()]
    }
}

/// What [`serve`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Served {
    /// Length of the response frame written at the front of `out`.
    pub len: usize,
    /// The status carried by that response.
    pub status: Status,
    /// The declared task the request named, if any.
    pub task: Option<Task>,
    /// Nanoseconds the kernel ran on the caller's clock; 0 when it did not run.
    pub compute_ns: u64,
    /// Why the request was rejected (`None` when `status` is OK): offset, field and problem,
    /// for the executor's log. The wire only carries the status.
    pub rejection: Option<AbiError>,
}

/// Serves one request frame: validates it, runs the task, writes the response frame into `out`.
///
/// `out` should hold [`qf_abi::MAX_FRAME_LEN`] bytes; a shorter buffer works as long as the
/// response fits (the largest declared response needs `36 + 64` bytes) and otherwise yields an
/// EXECUTION_ERROR response. Returns `Err` only if `out` cannot even hold a 36-byte header.
///
/// ```
/// use qf_tasks::{serve, AddRequest, AddResponse, Replay, Task};
/// use qf_abi::{decode_frame, encode_frame, Header, Status, MAX_FRAME_LEN};
///
/// let mut replay: Replay = Replay::new();
/// let clock = || 0u64; // any `Fn() -> u64` in nanoseconds, or a type implementing `Clock`
///
/// let mut request = [0u8; MAX_FRAME_LEN];
/// let header = Header::request(Task::Add.id(), Task::Add.effect(), 1, 0);
/// let len = encode_frame(&header, &AddRequest { a: 2, b: 3 }, &mut request).unwrap();
///
/// let mut response = [0u8; MAX_FRAME_LEN];
/// let served = serve(&request[..len], &mut response, &clock, &mut replay).unwrap();
/// assert_eq!(served.status, Status::Ok);
/// let frame = decode_frame(&response[..served.len]).unwrap();
/// assert_eq!(frame.payload_as::<AddResponse>().unwrap(), AddResponse { value: 5 });
///
/// // The same invocation again is a duplicate.
/// let served = serve(&request[..len], &mut response, &clock, &mut replay).unwrap();
/// assert_eq!(served.status, Status::Duplicate);
/// ```
pub fn serve<C: Clock + ?Sized, const N: usize>(
    request: &[u8],
    out: &mut [u8],
    clock: &C,
    replay: &mut Replay<N>,
) -> Result<Served, AbiError> {
    let frame = match decode_frame(request) {
        Ok(frame) => frame,
        Err(error) => return reject(Header::salvage(request, error.status), None, error, out),
    };
    let header = frame.header;
    if header.kind != MessageKind::Request {
        let error = AbiError {
            status: Status::Malformed,
            offset: offset::KIND,
            field: "kind",
            problem: Problem::WrongKind,
        };
        return reject(header, None, error, out);
    }
    let Some(task) = Task::from_id(header.task_id) else {
        let error = AbiError {
            status: Status::UnknownTask,
            offset: offset::TASK_ID,
            field: "task_id",
            problem: Problem::NoSuchTask {
                task_id: header.task_id,
            },
        };
        return reject(header, None, error, out);
    };
    if header.effect != task.effect() {
        let error = AbiError {
            status: Status::Malformed,
            offset: offset::EFFECT,
            field: "effect",
            problem: Problem::EffectMismatch {
                declared: task.effect().code(),
                found: header.effect.code(),
            },
        };
        return reject(header, Some(task), error, out);
    }
    // Step 3 onwards is one copy per task whatever the clock and window size: a port that
    // serves with two window sizes (the MCU executor and its chains) then carries the six
    // typed kernels' paths once, not twice (about 5 KB on a Cortex-M4).
    let window: &mut dyn Accept = replay.window_mut(task);
    let clock: &dyn Clock = &ClockRef(clock);
    match task {
        Task::Add => execute(&frame, task, kernels::add, clock, window, out),
        Task::AbiProbe => execute(&frame, task, kernels::abi_probe, clock, window, out),
        Task::Crc32 => execute(&frame, task, kernels::crc32, clock, window, out),
        Task::FirX1 => execute(&frame, task, kernels::fir_x1, clock, window, out),
        Task::FirX64 => execute(&frame, task, kernels::fir_x64, clock, window, out),
        Task::FirX512 => execute(&frame, task, kernels::fir_x512, clock, window, out),
    }
}

/// The replay check of step 4, without the window's capacity in its type.
trait Accept {
    fn accept(&mut self, epoch: u32, invocation_id: u64) -> Result<(), AbiError>;
}

impl<const N: usize> Accept for ReplayWindow<N> {
    fn accept(&mut self, epoch: u32, invocation_id: u64) -> Result<(), AbiError> {
        ReplayWindow::accept(self, epoch, invocation_id)
    }
}

/// A caller's clock (possibly unsized) as a `dyn Clock`.
struct ClockRef<'a, C: Clock + ?Sized>(&'a C);

impl<C: Clock + ?Sized> Clock for ClockRef<'_, C> {
    fn now_ns(&self) -> u64 {
        self.0.now_ns()
    }
}

/// Steps 3–6 for one task with its typed kernel.
fn execute<Req, Resp>(
    frame: &Frame<'_>,
    task: Task,
    kernel: fn(&Req) -> Resp,
    clock: &dyn Clock,
    window: &mut dyn Accept,
    out: &mut [u8],
) -> Result<Served, AbiError>
where
    Req: DeserializeOwned,
    Resp: Serialize,
{
    let header = frame.header;
    let request: Req = match frame.payload_as() {
        Ok(request) => request,
        Err(error) => return reject(header, Some(task), error, out),
    };
    if let Err(error) = window.accept(header.epoch, header.invocation_id) {
        return reject(header, Some(task), error, out);
    }
    let (response, compute_ns) = timed(clock, || kernel(&request));
    match encode_frame(&header.response_to(Status::Ok), &response, out) {
        Ok(len) => Ok(Served {
            len,
            status: Status::Ok,
            task: Some(task),
            compute_ns,
            rejection: None,
        }),
        Err(error) => {
            let error = AbiError {
                status: Status::ExecutionError,
                ..error
            };
            let served = reject(header, Some(task), error, out)?;
            Ok(Served {
                compute_ns,
                ..served
            })
        }
    }
}

/// Writes a payload-less response carrying `error.status`.
fn reject(
    request: Header,
    task: Option<Task>,
    error: AbiError,
    out: &mut [u8],
) -> Result<Served, AbiError> {
    let len = encode_frame_raw(&request.response_to(error.status), &[], out)?;
    Ok(Served {
        len,
        status: error.status,
        task,
        compute_ns: 0,
        rejection: Some(error),
    })
}
