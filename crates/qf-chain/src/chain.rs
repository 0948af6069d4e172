//! One resident chain: its request template, the invocation ids it stamps into each job, a
//! private replay window, and its counters.
//!
//! A chain's template is an ordinary ABI v1 request frame. It is checked once, at install, by a
//! dry run through [`qf_tasks::serve`] — the same checks every request gets, so a chain can never
//! carry a request the dispatcher would refuse. Each job then copies the template, writes the
//! job's invocation id into it (the template's id, +1 per job) and serves it again.
//!
//! The replay window is the chain's own, not the executor's: the chain is the only writer of its
//! invocation ids, and requests from Linux for the same task can neither collide with nor be
//! refused because of the chain's jobs.

use qf_abi::{header::offset, AbiError, Problem, Status, HEADER_LEN};
use qf_tasks::{serve, Clock, Replay, Served, Task};

use crate::releases::{Release, Releases};

/// The largest request (`responses` false) or response payload of the declared tasks.
const fn largest_payload(responses: bool) -> usize {
    let mut largest = 0;
    let mut i = 0;
    while i < Task::COUNT {
        let task = Task::ALL[i];
        let size = if responses {
            task.response_size()
        } else {
            task.request_size()
        };
        if size > largest {
            largest = size;
        }
        i += 1;
    }
    largest
}

/// Longest request template a chain holds: a header and the largest declared request payload.
pub const MAX_CHAIN_REQUEST_LEN: usize = HEADER_LEN + largest_payload(false);

/// Longest response a chain job produces: a header and the largest declared response payload.
pub const MAX_CHAIN_RESPONSE_LEN: usize = HEADER_LEN + largest_payload(true);

/// Invocation ids remembered by a chain's private replay window. A chain's ids only increase, so
/// a small window suffices; it is kept so a chain's jobs pass the same check as every request.
pub const CHAIN_REPLAY_WINDOW: usize = 4;

/// Counters of one chain. `repr(C)`, all `u64`: the Zephyr module hands it to C as the leading
/// fields of `struct qf_chain_stats` without copying it field by field.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub struct ChainStats {
    /// Jobs started.
    pub releases: u64,
    /// Jobs whose response carried status OK.
    pub results: u64,
    /// Jobs whose response carried another status (e.g. an invocation-id wrap caught by the
    /// replay window).
    pub rejected: u64,
    /// Jobs that started a period or more late, or that the executor reported as overruns.
    pub overruns: u64,
    /// Responses the transport accepted.
    pub sent: u64,
    /// Responses the transport refused (endpoint not bound, no buffer, ...).
    pub send_failures: u64,
    /// Compute time of the last job and the largest so far, in nanoseconds.
    pub compute_ns_last: u64,
    pub compute_ns_max: u64,
    /// Largest start lateness, in the executor's time unit.
    pub lateness_max: u64,
}

impl ChainStats {
    /// All zero (a `const`, so it can initialise a `static` table).
    pub const ZERO: ChainStats = ChainStats {
        releases: 0,
        results: 0,
        rejected: 0,
        overruns: 0,
        sent: 0,
        send_failures: 0,
        compute_ns_last: 0,
        compute_ns_max: 0,
        lateness_max: 0,
    };
}

/// What one job did: its release and the dispatcher's account of the response now in `out`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Job {
    pub release: Release,
    pub invocation_id: u64,
    pub served: Served,
}

/// A resident chain. Holds about `MAX_CHAIN_REQUEST_LEN + Task::COUNT * (8 * 4 + 16) + 120`
/// bytes; no allocation.
#[derive(Debug, Clone)]
pub struct Chain {
    template: [u8; MAX_CHAIN_REQUEST_LEN],
    len: usize,
    task: Task,
    next_invocation: u64,
    replay: Replay<CHAIN_REPLAY_WINDOW>,
    releases: Releases,
    stats: ChainStats,
}

impl Chain {
    /// A chain that runs the request frame `template` once per `period` (executor time unit).
    ///
    /// Fails with the dispatcher's own rejection if `template` is not a request it would serve
    /// with status OK (the dry run runs the task once), or with OVERSIZED if it is longer than
    /// [`MAX_CHAIN_REQUEST_LEN`].
    pub fn new(template: &[u8], period: u64) -> Result<Chain, AbiError> {
        let mut copy = [0u8; MAX_CHAIN_REQUEST_LEN];
        let Some(slot) = copy.get_mut(..template.len()) else {
            return Err(AbiError {
                status: Status::Oversized,
                offset: 0,
                field: "chain request",
                problem: Problem::TooLong {
                    len: template.len(),
                    max: MAX_CHAIN_REQUEST_LEN,
                },
            });
        };
        slot.copy_from_slice(template);
        // The same `serve` instance as the jobs' when they are timed on a `&dyn Clock` (one
        // copy of the dispatcher in an MCU image instead of two).
        let mut dry_run: Replay<CHAIN_REPLAY_WINDOW> = Replay::new();
        let mut out = [0u8; MAX_CHAIN_RESPONSE_LEN];
        let untimed = || 0u64;
        let served = serve(template, &mut out, &untimed as &dyn Clock, &mut dry_run)?;
        let (Some(task), None) = (served.task, served.rejection) else {
            // serve names the task and no rejection exactly when the status is OK.
            return Err(served.rejection.unwrap_or(AbiError {
                status: served.status,
                offset: 0,
                field: "chain request",
                problem: Problem::InvalidValue,
            }));
        };
        Ok(Chain {
            template: copy,
            len: template.len(),
            task,
            next_invocation: invocation_id(template),
            replay: Replay::new(),
            releases: Releases::new(period),
            stats: ChainStats::default(),
        })
    }

    /// The same chain with `chain_id` in its requests' contract-id field, so every result names
    /// its chain (the response echoes the request's contract id).
    pub fn tagged(mut self, chain_id: u32) -> Chain {
        if let Some(field) = self
            .template
            .get_mut(offset::CONTRACT_ID..offset::CONTRACT_ID + 4)
        {
            field.copy_from_slice(&chain_id.to_be_bytes());
        }
        self
    }

    /// The declared task the chain runs.
    pub fn task(&self) -> Task {
        self.task
    }

    /// The period, in the executor's time unit.
    pub fn period(&self) -> u64 {
        self.releases.period()
    }

    /// The invocation id the next job will carry.
    pub fn next_invocation(&self) -> u64 {
        self.next_invocation
    }

    /// Counters so far.
    pub fn stats(&self) -> ChainStats {
        self.stats
    }

    /// Runs one job released at `now`: stamps the next invocation id into the template, serves
    /// it with compute time on `clock`, and leaves the response frame at the front of `out`
    /// (`served.len` bytes; `out` should hold [`MAX_CHAIN_RESPONSE_LEN`]).
    ///
    /// `overrun_reported` is the executor's own overrun signal for this release. Fails only if
    /// `out` cannot hold a response header.
    pub fn job<C: Clock + ?Sized>(
        &mut self,
        now: u64,
        overrun_reported: bool,
        clock: &C,
        out: &mut [u8],
    ) -> Result<Job, AbiError> {
        let release = self.releases.start(now, overrun_reported);
        let invocation_id = self.next_invocation;
        self.next_invocation = self.next_invocation.wrapping_add(1);
        let mut request = self.template;
        request[offset::INVOCATION_ID..offset::INVOCATION_ID + 8]
            .copy_from_slice(&invocation_id.to_be_bytes());
        let served = serve(&request[..self.len], out, clock, &mut self.replay)?;

        let stats = &mut self.stats;
        stats.releases += 1;
        stats.overruns += u64::from(release.overrun);
        stats.lateness_max = stats.lateness_max.max(release.lateness);
        if served.status == Status::Ok {
            stats.results += 1;
        } else {
            stats.rejected += 1;
        }
        stats.compute_ns_last = served.compute_ns;
        stats.compute_ns_max = stats.compute_ns_max.max(served.compute_ns);
        Ok(Job {
            release,
            invocation_id,
            served,
        })
    }

    /// Records whether the transport took the last job's response.
    pub fn sent(&mut self, accepted: bool) {
        if accepted {
            self.stats.sent += 1;
        } else {
            self.stats.send_failures += 1;
        }
    }
}

/// The invocation id of a request frame that has passed `decode_frame` (so it has a header).
fn invocation_id(frame: &[u8]) -> u64 {
    frame
        .get(offset::INVOCATION_ID..offset::INVOCATION_ID + 8)
        .and_then(|bytes| bytes.try_into().ok())
        .map_or(0, u64::from_be_bytes)
}
