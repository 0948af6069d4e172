//! The traffic checks: many frames, every message size, round-trip latency. Each request's
//! expected reply is what `qf_tasks::serve` answers locally with a mirror of the MCU's replay
//! windows (fresh at a new epoch, as on the MCU). The resident-chain check (`chain`) reuses the
//! mirror and the exchange.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use qf_abi::{encode_frame, encode_frame_raw, Header, HEADER_LEN, MAX_FRAME_LEN};
use qf_tasks::{serve, AddRequest, Crc32Request, FirRequest, Replay, Task};

use crate::stats::{round_trip_percentiles, NOT_BOARD_TIMINGS};
use qf_execution::rpmsg_char::Endpoint;

/// Largest rpmsg payload with Linux 6.12's 512-byte buffers (512 - 16-byte rpmsg header).
pub const RPMSG_MAX_PAYLOAD: usize = 496;
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(5);

/// xorshift64*: reproducible request contents without a dependency (seed: any nonzero value).
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// The tasks [`Mirror::request`] cycles through by default, and every declared task.
pub const DEFAULT_TASKS: &[Task] = &[Task::Add, Task::Crc32, Task::FirX1];
pub const ALL_TASKS: &[Task] = &[
    Task::Add,
    Task::Crc32,
    Task::FirX1,
    Task::FirX64,
    Task::FirX512,
];

/// The MCU's expected behaviour, computed here.
pub struct Mirror {
    replay: Replay,
    epoch: u32,
    next_invocation: u64,
    rng: Rng,
    tasks: &'static [Task],
}

impl Mirror {
    pub fn new(epoch: u32) -> Mirror {
        Mirror::starting_at(epoch, 1)
    }

    /// A mirror whose requests carry the invocation ids `first, first + 1, ...` and inputs of
    /// their own (so callers sharing one channel never share an id or a reply).
    pub fn starting_at(epoch: u32, first: u64) -> Mirror {
        Mirror {
            replay: Replay::new(),
            epoch,
            next_invocation: first,
            rng: Rng(0x9e37_79b9_7f4a_7c15 ^ epoch as u64 ^ first.wrapping_sub(1).rotate_left(17)),
            tasks: DEFAULT_TASKS,
        }
    }

    /// Makes [`Mirror::request`] cycle through `tasks` (not empty) instead.
    pub fn with_tasks(mut self, tasks: &'static [Task]) -> Mirror {
        if !tasks.is_empty() {
            self.tasks = tasks;
        }
        self
    }

    fn header(&mut self, task: Task) -> Header {
        let id = self.next_invocation;
        self.next_invocation += 1;
        Header::request(task.id(), task.effect(), id, self.epoch)
    }

    /// A valid request for a task chosen by `i`, encoded into `out`.
    pub fn request(&mut self, i: u64, out: &mut [u8; MAX_FRAME_LEN]) -> Result<usize> {
        let task = self.tasks[(i % self.tasks.len() as u64) as usize];
        let header = self.header(task);
        let len = match task {
            Task::Add => {
                let r = self.rng.next();
                encode_frame(
                    &header,
                    &AddRequest {
                        a: r as i32,
                        b: (r >> 32) as i32,
                    },
                    out,
                )
            }
            Task::Crc32 => {
                let mut block = [0u8; 64];
                block.iter_mut().for_each(|b| *b = self.rng.next() as u8);
                encode_frame(&header, &Crc32Request { block }, out)
            }
            _ => {
                let mut samples = [0i16; 32];
                samples.iter_mut().for_each(|s| *s = self.rng.next() as i16);
                encode_frame(&header, &FirRequest { samples }, out)
            }
        };
        len.map_err(|e| anyhow::anyhow!("encode request: {e:?}"))
    }

    /// What the MCU must answer to `request`.
    pub fn expect(&mut self, request: &[u8], out: &mut [u8; MAX_FRAME_LEN]) -> Result<usize> {
        let clock = || 0u64;
        let served = serve(request, out, &clock, &mut self.replay)
            .map_err(|e| anyhow::anyhow!("local serve: {e:?}"))?;
        Ok(served.len)
    }
}

/// Carries `request` to the MCU with `round_trip` (which fills the reply, returning its length
/// and whatever it measured) and checks that the reply is what `qf_tasks::serve` answers.
pub fn checked<T>(
    mirror: &mut Mirror,
    request: &[u8],
    what: &str,
    round_trip: impl FnOnce(&[u8], &mut [u8; MAX_FRAME_LEN]) -> Result<(usize, T)>,
) -> Result<T> {
    let mut expected = [0u8; MAX_FRAME_LEN];
    let expected_len = mirror.expect(request, &mut expected)?;
    let mut reply = [0u8; MAX_FRAME_LEN];
    let (n, measured) = round_trip(request, &mut reply)?;
    if reply[..n] != expected[..expected_len] {
        bail!(
            "{what}: reply differs from qf_tasks::serve: got {n} bytes {:02x?}, expected {expected_len} bytes {:02x?}",
            &reply[..n.min(48)],
            &expected[..expected_len.min(48)]
        );
    }
    Ok(measured)
}

/// Sends `request` on the rpmsg endpoint and checks the reply; returns the round-trip time.
pub fn exchange(
    ep: &mut Endpoint,
    mirror: &mut Mirror,
    request: &[u8],
    what: &str,
) -> Result<Duration> {
    exchange_skipping(ep, mirror, request, what, |_| Ok(false))
}

/// [`exchange`] on an endpoint that may also receive messages the MCU sends on its own (chain
/// results): each message before the reply goes to `unsolicited`, which returns `Ok(true)` if it
/// took the message (it is skipped), `Ok(false)` if the message must be the reply.
pub fn exchange_skipping(
    ep: &mut Endpoint,
    mirror: &mut Mirror,
    request: &[u8],
    what: &str,
    mut unsolicited: impl FnMut(&[u8]) -> Result<bool>,
) -> Result<Duration> {
    checked(mirror, request, what, |request, reply| {
        let start = Instant::now();
        let n = carry(ep, request, reply, what, &mut unsolicited)?;
        Ok((n, start.elapsed()))
    })
}

/// Sends `request` and receives its reply into `reply`, skipping the messages `unsolicited`
/// says the MCU sent on its own; returns the reply's length.
pub fn carry(
    ep: &mut Endpoint,
    request: &[u8],
    reply: &mut [u8; MAX_FRAME_LEN],
    what: &str,
    mut unsolicited: impl FnMut(&[u8]) -> Result<bool>,
) -> Result<usize> {
    ep.send(request)
        .with_context(|| format!("{what}: send {} bytes", request.len()))?;
    loop {
        // Each skipped message restarts the wait: the timeout bounds silence, not the total.
        let n = ep
            .recv(reply, REPLY_TIMEOUT)
            .with_context(|| format!("{what}: reply"))?;
        if !unsolicited(&reply[..n]).with_context(|| format!("{what}: before the reply"))? {
            return Ok(n);
        }
    }
}

/// `count` valid requests over three tasks with invocation ids from `first_id`, every reply
/// compared with the local dispatcher; `exchange` carries one request and checks its reply
/// (rpmsg_char's [`exchange`], or the kernel device's). `name` and `via` label the summary line.
pub fn frames(
    count: u64,
    epoch: u32,
    first_id: u64,
    tasks: &'static [Task],
    name: &str,
    via: &str,
    mut exchange: impl FnMut(&mut Mirror, &[u8], &str) -> Result<Duration>,
) -> Result<()> {
    let mut mirror = Mirror::starting_at(epoch, first_id).with_tasks(tasks);
    let mut request = [0u8; MAX_FRAME_LEN];
    for i in 0..count {
        let len = mirror.request(i, &mut request)?;
        exchange(&mut mirror, &request[..len], &format!("frame {i}"))?;
    }
    let names: Vec<String> = tasks.iter().map(|t| format!("{t:?}")).collect();
    println!(
        "{name}: {count}/{count} replies identical to qf_tasks::serve ({}; epoch {epoch}{via})",
        names.join(", ")
    );
    Ok(())
}

/// Every message length from 1 to the rpmsg limit (valid headers, arbitrary payloads: the MCU
/// must answer exactly what the dispatcher says, usually a rejection), then one byte more,
/// which `rpmsg_char` must refuse with EMSGSIZE, then a normal frame to show nothing broke.
/// Messages the MCU sends unasked meanwhile (`unsolicited`: a resident chain's results) are skipped.
pub fn sizes(ep: &mut Endpoint, epoch: u32, unsolicited: impl Fn(&[u8]) -> bool) -> Result<()> {
    let mut mirror = Mirror::new(epoch);
    let mut frame = [0u8; MAX_FRAME_LEN];
    for len in 1..=RPMSG_MAX_PAYLOAD {
        let header = mirror.header(Task::Crc32);
        let payload: Vec<u8> = (0..len.saturating_sub(HEADER_LEN))
            .map(|_| mirror.rng.next() as u8)
            .collect();
        let full = encode_frame_raw(&header, &payload, &mut frame)
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        let message = &frame[..full.min(len)];
        exchange_skipping(ep, &mut mirror, message, &format!("size {len}"), |m| {
            Ok(unsolicited(m))
        })?;
    }
    let oversize = vec![0u8; RPMSG_MAX_PAYLOAD + 1];
    match ep.send(&oversize) {
        Err(e) if e.raw_os_error() == Some(libc::EMSGSIZE) => {}
        Err(e) => bail!(
            "oversize ({} bytes): expected EMSGSIZE, got {e}",
            oversize.len()
        ),
        Ok(()) => bail!("oversize ({} bytes) was accepted", oversize.len()),
    }
    let len = mirror.request(0, &mut frame)?;
    exchange_skipping(
        ep,
        &mut mirror,
        &frame[..len],
        "frame after oversize",
        |m| Ok(unsolicited(m)),
    )?;
    println!(
        "sizes: every length 1..={RPMSG_MAX_PAYLOAD} answered as qf_tasks::serve does; {} bytes refused with EMSGSIZE; traffic continues",
        RPMSG_MAX_PAYLOAD + 1
    );
    Ok(())
}

/// `count` round trips of a minimal frame (`add`) through `exchange` (which checks each reply);
/// what each call measured, in order.
pub fn add_calls<T>(
    count: u64,
    epoch: u32,
    mut exchange: impl FnMut(&mut Mirror, &[u8], &str) -> Result<T>,
) -> Result<Vec<T>> {
    let mut mirror = Mirror::new(epoch);
    let mut request = [0u8; MAX_FRAME_LEN];
    let mut measured = Vec::with_capacity(count as usize);
    for i in 0..count {
        let len = mirror.request(0, &mut request)?;
        measured.push(exchange(
            &mut mirror,
            &request[..len],
            &format!("call {i}"),
        )?);
    }
    Ok(measured)
}

/// Round trips of a minimal frame (`add`), percentiles of the round-trip time.
pub fn latency(ep: &mut Endpoint, count: u64, epoch: u32) -> Result<()> {
    let rtts = add_calls(count, epoch, |mirror, request, what| {
        exchange(ep, mirror, request, what)
    })?;
    println!(
        "latency: add round trip over {count} calls: {} {NOT_BOARD_TIMINGS}",
        round_trip_percentiles(&rtts)?
    );
    Ok(())
}
