//! The traffic checks: many frames, every message size, round-trip latency. Each request's
//! expected reply is what `qf_tasks::serve` answers locally with a mirror of the MCU's replay
//! windows (fresh at a new epoch, as on the MCU). The resident-chain check (`chain`) reuses the
//! mirror and the exchange.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use nix::errno::Errno;
use qf_abi::{encode_frame, encode_frame_raw, Header, HEADER_LEN, MAX_FRAME_LEN};
use qf_tasks::{serve, AddRequest, Crc32Request, FirRequest, Replay, Task};

use crate::stats::{round_trip_percentiles, NOT_BOARD_TIMINGS};
use qf_execution::qfabric_dev::DevError;
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
            "{what}: reply differs from qf_tasks::serve: got {n} bytes, status {}, {:02x?}, expected {expected_len} bytes, status {}, {:02x?}",
            status_of(&reply[..n]),
            &reply[..n.min(48)],
            status_of(&expected[..expected_len]),
            &expected[..expected_len.min(48)]
        );
    }
    Ok(measured)
}

/// A frame's status by name (`stale`, ...), or why it has none, for messages.
fn status_of(frame: &[u8]) -> String {
    match qf_abi::decode_frame(frame) {
        Ok(frame) => frame.header.status.name().to_string(),
        Err(e) => format!("none ({e:?})"),
    }
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

/// How a [`frames`] run must end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Every one of the `count` replies right.
    Complete,
    /// Cut by the channel going away (the MCU crashed or was reset during the run): at least one
    /// reply right, then a call failing with this errno, the one the path returns once its
    /// channel is gone (`ENODEV` from /dev/qfabricN, `EPIPE` from rpmsg_char). A failure before
    /// any reply (a refused epoch, no channel), a wrong reply, another error, or all `count`
    /// replies right is a failure.
    Gone(Errno),
}

/// The errno behind `error`: the kernel's answer through /dev/qfabricN ([`DevError`]), or the
/// I/O error of a read or write (rpmsg_char). `None` for anything else (a wrong reply, a time-out
/// of our own).
pub fn errno_of(error: &anyhow::Error) -> Option<Errno> {
    error.chain().find_map(|cause| {
        if let Some(dev) = cause.downcast_ref::<DevError>() {
            dev.errno()
        } else {
            cause
                .downcast_ref::<std::io::Error>()
                .and_then(std::io::Error::raw_os_error)
                .map(Errno::from_raw)
        }
    })
}

/// A run of [`frames`]: `count` valid requests cycling through `tasks` at `epoch`, with
/// invocation ids from `first_id`, that must end as `ending` says. `name` and `via` label the
/// summary line.
pub struct Run<'a> {
    pub count: u64,
    pub epoch: u32,
    pub first_id: u64,
    pub tasks: &'static [Task],
    pub ending: Ending,
    pub name: &'a str,
    pub via: &'a str,
}

/// The requests of `run`, every reply compared with the local dispatcher; `exchange` carries
/// one request and checks its reply (rpmsg_char's [`exchange`], or the kernel device's). Prints
/// the summary line.
pub fn frames(
    run: &Run,
    mut exchange: impl FnMut(&mut Mirror, &[u8], &str) -> Result<Duration>,
) -> Result<()> {
    let Run {
        count,
        epoch,
        ending,
        name,
        ..
    } = *run;
    let mut mirror = Mirror::starting_at(epoch, run.first_id).with_tasks(run.tasks);
    let mut request = [0u8; MAX_FRAME_LEN];
    let names: Vec<String> = run.tasks.iter().map(|t| format!("{t:?}")).collect();
    let label = format!("{}; epoch {epoch}{}", names.join(", "), run.via);
    for i in 0..count {
        let len = mirror.request(i, &mut request)?;
        let error = match exchange(&mut mirror, &request[..len], &format!("frame {i}")) {
            Ok(_) => continue,
            Err(error) => error,
        };
        let Ending::Gone(expected) = ending else {
            return Err(error);
        };
        println!("{}", cut_short(name, &label, i, expected, &error)?);
        return Ok(());
    }
    if let Ending::Gone(expected) = ending {
        bail!(
            "{name}: all {count} replies came ({label}): the channel did not go away (expected {expected:?})"
        );
    }
    println!("{name}: {count}/{count} replies identical to qf_tasks::serve ({label})");
    Ok(())
}

/// The verdict on a run expected to be cut by the channel going away ([`Ending::Gone`]) whose
/// frame `answered` failed with `error` after `answered` right replies: the summary line, or
/// the error saying how the run ended otherwise.
fn cut_short(
    name: &str,
    label: &str,
    answered: u64,
    expected: Errno,
    error: &anyhow::Error,
) -> Result<String> {
    let found = errno_of(error);
    if answered == 0 {
        bail!(
            "{name}: frame 0 failed before any reply ({label}), expected {expected:?} after replies: {error:#}"
        );
    }
    if found != Some(expected) {
        let found = found.map_or("no errno".to_string(), |e| format!("{e:?}"));
        bail!(
            "{name}: {answered} replies identical to qf_tasks::serve ({label}), then {found}, not {expected:?}: {error:#}"
        );
    }
    Ok(format!(
        "{name}: {answered} replies identical to qf_tasks::serve ({label}), then {expected:?} as the channel went away: {error:#}"
    ))
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// The MCU's side: the same dispatcher, with replay windows of its own.
    struct Mcu {
        replay: Replay,
    }

    impl Mcu {
        fn new() -> Mcu {
            Mcu {
                replay: Replay::new(),
            }
        }

        /// The MCU after an earlier client (a `qf resident observe` session, whose epoch is the
        /// wall clock's seconds) sent `add` at `epoch`.
        fn after_client_at(epoch: u32) -> Mcu {
            let mut mcu = Mcu::new();
            let mut client = Mirror::new(epoch).with_tasks(&[Task::Add]);
            let mut request = [0u8; MAX_FRAME_LEN];
            let len = client.request(0, &mut request).unwrap();
            let mut reply = [0u8; MAX_FRAME_LEN];
            serve(&request[..len], &mut reply, &|| 0u64, &mut mcu.replay).unwrap();
            mcu
        }

        /// One round trip, its reply checked as `exchange` does.
        fn exchange(
            &mut self,
            mirror: &mut Mirror,
            request: &[u8],
            what: &str,
        ) -> Result<Duration> {
            checked(mirror, request, what, |request, reply| {
                let served = serve(request, reply, &|| 0u64, &mut self.replay)
                    .map_err(|e| anyhow::anyhow!("{e:?}"))?;
                Ok((served.len, Duration::ZERO))
            })
        }
    }

    /// What /dev/qfabricN's exchange returns once the kernel answered `errno`.
    fn kernel(errno: Errno, what: &str) -> anyhow::Error {
        anyhow::Error::new(DevError::Kernel {
            path: PathBuf::from("/dev/qfabric0"),
            op: "invoke",
            errno,
            meaning: "the MCU channel went away",
        })
        .context(format!("{what}: invoke"))
    }

    fn run(ending: Ending, epoch: u32) -> Run<'static> {
        Run {
            count: 1000,
            epoch,
            first_id: 1 << 40,
            tasks: DEFAULT_TASKS,
            ending,
            name: "dev-frames",
            via: ", /dev/qfabric0",
        }
    }

    /// Runs `run` against `mcu`, whose channel fails with `cut` from frame `after` on.
    fn cut_after(
        run: &Run,
        mut mcu: Mcu,
        after: u64,
        cut: impl Fn(&str) -> anyhow::Error,
    ) -> Result<()> {
        let mut calls = 0;
        frames(run, |mirror, request, what| {
            calls += 1;
            if calls > after {
                return Err(cut(what));
            }
            mcu.exchange(mirror, request, what)
        })
    }

    /// The error of a run at epoch 16 expecting ENODEV whose channel fails with `cut` from frame
    /// `after` on.
    fn refused(after: u64, cut: impl Fn(&str) -> anyhow::Error) -> String {
        let run = run(Ending::Gone(Errno::ENODEV), 16);
        cut_after(&run, Mcu::new(), after, cut)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn a_run_cut_by_the_channel_after_replies_passes() {
        let enodev = |what: &str| kernel(Errno::ENODEV, what);
        cut_after(&run(Ending::Gone(Errno::ENODEV), 16), Mcu::new(), 7, enodev).unwrap();
        // rpmsg_char: the I/O error of the read or write.
        let epipe = |what: &str| {
            anyhow::Error::new(std::io::Error::from_raw_os_error(libc::EPIPE))
                .context(format!("{what}: reply"))
        };
        cut_after(&run(Ending::Gone(Errno::EPIPE), 16), Mcu::new(), 3, epipe).unwrap();
    }

    #[test]
    fn a_run_refused_from_frame_0_fails_naming_the_status() {
        // An earlier client moved `add`, the first frame's task, to a wall-clock epoch: the run
        // at a fixed small epoch is refused as stale before the channel goes.
        let mcu = Mcu::after_client_at(1_700_000_000);
        let enodev = |what: &str| kernel(Errno::ENODEV, what);
        let e = cut_after(&run(Ending::Gone(Errno::ENODEV), 16), mcu, 7, enodev).unwrap_err();
        let e = format!("{e:#}");
        assert!(e.contains("frame 0 failed before any reply"), "{e}");
        assert!(e.contains("status stale") && e.contains("status ok"), "{e}");
        // ENODEV itself on frame 0 is no better: nothing shows the traffic ran before the cut.
        let e = refused(0, enodev);
        assert!(e.contains("frame 0 failed before any reply"), "{e}");
        // A newer epoch than the client's runs until the cut.
        let mcu = Mcu::after_client_at(1_700_000_000);
        cut_after(
            &run(Ending::Gone(Errno::ENODEV), 1_700_000_001),
            mcu,
            7,
            enodev,
        )
        .unwrap();
    }

    #[test]
    fn a_run_cut_by_another_error_fails_naming_it() {
        let timeout = |what: &str| kernel(Errno::ETIMEDOUT, what);
        let e = refused(5, timeout);
        assert!(
            e.contains("5 replies identical")
                && e.contains("ETIMEDOUT")
                && e.contains("not ENODEV"),
            "{e}"
        );
        // rpmsg_char's EPIPE is not /dev/qfabricN's error.
        let epipe = |_: &str| anyhow::Error::new(std::io::Error::from_raw_os_error(libc::EPIPE));
        let e = refused(5, epipe);
        assert!(e.contains("EPIPE") && e.contains("not ENODEV"), "{e}");
        // A wrong reply after good ones carries no errno.
        let wrong = |what: &str| anyhow::anyhow!("{what}: reply differs from qf_tasks::serve");
        let e = refused(5, wrong);
        assert!(e.contains("no errno, not ENODEV"), "{e}");
    }

    #[test]
    fn a_run_never_cut_fails_when_a_cut_is_expected() {
        let never = |what: &str| kernel(Errno::ENODEV, what);
        let e = refused(1000, never);
        assert!(
            e.contains("all 1000 replies came") && e.contains("did not go away"),
            "{e}"
        );
        // Complete: the same run passes, and a cut is its error as it came.
        cut_after(&run(Ending::Complete, 16), Mcu::new(), 1000, never).unwrap();
        let e = cut_after(&run(Ending::Complete, 16), Mcu::new(), 5, never).unwrap_err();
        assert_eq!(errno_of(&e), Some(Errno::ENODEV));
        assert!(format!("{e:#}").starts_with("frame 5: invoke"), "{e:#}");
    }
}
