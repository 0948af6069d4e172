//! Observing a resident chain from Linux (the QFabric paper's Section VIII-A, third change): the
//! MCU releases the task with its own timer and sends only the result, so a Linux consumer just
//! reads. This measures what Linux interference still does to that path, with the profile's
//! method: per load × caller cell, warm-up excluded, every result checked against the independent
//! reference, raw observations kept.
//!
//! The release instant is on the MCU's clock, which Linux cannot read, so a result's delay is
//! measured against the chain's own schedule: result `k` (invocation id `first + k`) was released
//! at `t0 + k·P`, so `arrival − k·P` is `t0` plus that result's delay; the smallest such value in
//! the cell stands for `t0` plus the fastest delivery. A result's **delay** is its excess over
//! the fastest one: 0 for the best case, the added latency otherwise. Clock drift between the two
//! sides adds at most drift × cell length to it.
//!
//! Writes `OUT/resident/<load>/<caller>/observations.csv`.
//!
//! The wait for a result is bounded: [`result_timeout`] (three periods, at least 5 s) from the
//! chain's previous result (other chains' results do not restart it). When it passes, or the
//! endpoint fails (the MCU gone, the line hung up), the observation stops: the results received
//! before are written all the same, and the error says where it stopped. A frame from the line
//! that does not decode (bytes a serial line damaged) is skipped; the results it hid count as
//! lost.

use crate::stats::percentile;
use anyhow::{bail, Context, Result};
use qf_abi::{decode_frame, MAX_FRAME_LEN};
use qf_execution::domain::{Domain, McuChannel, McuEndpoint, McuKernel, McuRpmsg, McuTransport};
use qf_execution::load::Load;
use qf_execution::qfabric_dev::monotonic_ns;
use qf_execution::rt::{set_scheduling, CallerPolicy, Scheduling};
use qf_execution::serial::SerialLine;
use qf_execution::subscribed::McuSubscribed;
use qf_execution::workload::{decode_request, encode_request, outcome_ok, random_request, Request};
use qf_tasks::Task;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How long an observer drops the results queued before it bound the channel, at most.
const DRAIN_LIMIT: Duration = Duration::from_millis(20);

/// The request a chain runs, and the invocation id of its first job.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChainRequest {
    pub task: Task,
    pub request: Request,
    pub first_invocation: u64,
}

impl ChainRequest {
    /// `task` on inputs drawn from `seed`; ids from `contract << 32`, so results of different
    /// contracts never share ids.
    pub fn seeded(task: Task, seed: u64, contract: u32) -> ChainRequest {
        ChainRequest {
            task,
            request: random_request(task, seed),
            first_invocation: u64::from(contract) << 32,
        }
    }

    /// The chain an MCU was started with from `template` (e.g. the Zephyr executor sample's,
    /// which its boot log prints).
    pub fn from_template(template: &[u8]) -> Result<ChainRequest> {
        let (header, task, request) = decode_request(template)?;
        Ok(ChainRequest {
            task,
            request,
            first_invocation: header.invocation_id,
        })
    }

    /// The template frame the MCU's chain is started with (epoch 0).
    pub fn template(&self) -> Result<Vec<u8>> {
        let mut frame = [0u8; MAX_FRAME_LEN];
        let len = encode_request(
            self.task,
            &self.request,
            self.first_invocation,
            0,
            &mut frame,
        )?;
        Ok(frame[..len].to_vec())
    }
}

/// One result as Linux received it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultObservation {
    pub load: String,
    pub caller: String,
    pub invocation_id: u64,
    /// Since the cell's first kept result.
    pub arrival_us: f64,
    /// Excess over the cell's fastest delivery (module docs).
    pub delay_us: f64,
    pub ok: bool,
    /// The same delay up to the moment Linux's kernel queued the result, and the reader's
    /// wake-up after it (`delay_us` is about their sum): from `/dev/qfabricN`'s timestamp, NaN
    /// through rpmsg_char and in campaigns recorded before these columns.
    #[serde(default = "not_measured")]
    pub kernel_delay_us: f64,
    #[serde(default = "not_measured")]
    pub wake_us: f64,
}

fn not_measured() -> f64 {
    f64::NAN
}

/// Summary of one cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResidentSummary {
    pub load: String,
    pub caller: String,
    pub results: usize,
    /// Invocation ids between the first and the last kept result that never arrived.
    pub lost: u64,
    pub wrong_outputs: usize,
    pub delay_p50_us: f64,
    pub delay_p95_us: f64,
    pub delay_p99_us: f64,
    pub delay_max_us: f64,
}

/// How long an observer waits for the chain's next result: three periods, at least 5 s.
pub fn result_timeout(period: Duration) -> Duration {
    (period * 3).max(Duration::from_secs(5))
}

/// What to observe.
#[derive(Debug, Clone)]
pub struct ObserveSpec {
    pub chain: ChainRequest,
    /// The chain's id, which its results carry as their contract id: results of other chains
    /// are skipped. `None`: every result is the chain's (an MCU that tags none).
    pub chain_id: Option<u32>,
    /// Where the results arrive: [`McuEndpoint::Rpmsg`], [`McuEndpoint::Kernel`], or a
    /// [`McuEndpoint::Socket`] subscribed to them.
    pub endpoint: McuEndpoint,
    pub period: Duration,
    pub loads: Vec<Load>,
    pub callers: Vec<CallerPolicy>,
    pub warmup: usize,
    pub samples: usize,
    pub out: PathBuf,
}

/// Arrivals of one cell: (invocation id, arrival since the cell's start, response ok, and the
/// reader's wake-up after the kernel queued the result when the transport tells).
type Arrival = (u64, Duration, bool, Option<Duration>);

/// Delays (module docs), in µs, of results that arrived at `times_us` (same origin), in
/// arrival order.
pub fn delays_us(ids_and_times_us: &[(u64, f64)], period: Duration) -> Vec<f64> {
    let Some(&(first_id, _)) = ids_and_times_us.first() else {
        return Vec::new();
    };
    let period_us = period.as_secs_f64() * 1e6;
    let anchored: Vec<f64> = ids_and_times_us
        .iter()
        .map(|&(id, at_us)| at_us - id.wrapping_sub(first_id) as f64 * period_us)
        .collect();
    let fastest = anchored.iter().copied().fold(f64::INFINITY, f64::min);
    anchored.iter().map(|a| a - fastest).collect()
}

/// One cell's arrivals as the observations written and summarized, delays included.
pub fn observations(
    load: &str,
    caller: &str,
    arrivals: &[Arrival],
    period: Duration,
) -> Vec<ResultObservation> {
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let reader: Vec<(u64, f64)> = arrivals.iter().map(|a| (a.0, us(a.1))).collect();
    // The kernel's times only when every result has one (one transport per cell).
    let kernel: Option<Vec<(u64, f64)>> = arrivals
        .iter()
        .map(|a| a.3.map(|wake| (a.0, us(a.1) - us(wake))))
        .collect();
    let kernel_delays = kernel.map(|k| delays_us(&k, period));
    arrivals
        .iter()
        .zip(delays_us(&reader, period))
        .enumerate()
        .map(
            |(i, (&(invocation_id, at, ok, wake), delay_us))| ResultObservation {
                load: load.to_string(),
                caller: caller.to_string(),
                invocation_id,
                arrival_us: us(at),
                delay_us,
                ok,
                kernel_delay_us: kernel_delays.as_ref().map_or(f64::NAN, |k| k[i]),
                wake_us: wake.map_or(f64::NAN, us),
            },
        )
        .collect()
}

/// Summarizes one cell's observations (in arrival order): `qf resident observe` prints this,
/// `qf report` tabulates it from the written file.
pub fn summarize(load: &str, caller: &str, rows: &[ResultObservation]) -> ResidentSummary {
    let delays: Vec<f64> = rows.iter().map(|r| r.delay_us).collect();
    let span = match (rows.first(), rows.last()) {
        (Some(first), Some(last)) => last.invocation_id.wrapping_sub(first.invocation_id) + 1,
        _ => 0,
    };
    let pct = |q| percentile(&delays, q).unwrap_or(f64::NAN);
    ResidentSummary {
        load: load.to_string(),
        caller: caller.to_string(),
        results: rows.len(),
        lost: span.saturating_sub(rows.len() as u64),
        wrong_outputs: rows.iter().filter(|r| !r.ok).count(),
        delay_p50_us: pct(0.5),
        delay_p95_us: pct(0.95),
        delay_p99_us: pct(0.99),
        delay_max_us: delays.iter().copied().fold(f64::NAN, f64::max),
    }
}

impl ObserveSpec {
    /// Observes every load × caller cell. The chain must already run on the MCU (started with
    /// [`ChainRequest::template`]).
    pub fn run(&self) -> Result<Vec<ResidentSummary>> {
        let mut summaries = Vec::new();
        for load in &self.loads {
            let _guard = load.start(Duration::from_secs(3600))?;
            for &caller in &self.callers {
                let spec = self.clone();
                let (arrivals, stopped) = std::thread::spawn(move || {
                    let mut arrivals = Vec::with_capacity(spec.samples);
                    let stopped = set_scheduling(0, caller.scheduling())
                        .context("applying the caller policy")
                        .and_then(|()| spec.observe_cell(&mut arrivals))
                        .err();
                    set_scheduling(0, Scheduling::Other).ok();
                    (arrivals, stopped)
                })
                .join()
                .map_err(|_| anyhow::anyhow!("the observing thread panicked"))?;
                summaries.push(self.write_cell(load.name(), caller, &arrivals)?);
                if let Some(error) = stopped {
                    return Err(error.context(format!(
                        "qf resident observe stopped (load {}, caller {}); the {} results kept \
                         before are written under {}",
                        load.name(),
                        caller.as_str(),
                        arrivals.len(),
                        self.out.join("resident").display()
                    )));
                }
            }
        }
        Ok(summaries)
    }

    /// Opens the channel afresh and observes one cell on it into `arrivals`.
    fn observe_cell(&self, arrivals: &mut Vec<Arrival>) -> Result<()> {
        let timeout = result_timeout(self.period);
        match &self.endpoint {
            McuEndpoint::Rpmsg => self.observe_on(McuRpmsg::open(timeout)?, timeout, arrivals),
            McuEndpoint::Kernel(path) => self.observe_on(
                McuKernel::open(path.as_deref(), timeout)?,
                timeout,
                arrivals,
            ),
            McuEndpoint::Serial { device, baud } => self.observe_on(
                McuChannel::new(SerialLine::open(device, *baud)?, timeout),
                timeout,
                arrivals,
            ),
            McuEndpoint::Socket(path) => {
                self.observe_on(McuSubscribed::connect(path, timeout)?, timeout, arrivals)
            }
        }
    }

    /// Binds the channel (one ordinary request, so the MCU sends its results to us), drops what
    /// was queued before, then keeps `samples` results of the chain after `warmup` (results of
    /// other chains are skipped) into `arrivals`.
    fn observe_on<T: McuTransport>(
        &self,
        mut mcu: McuChannel<T>,
        timeout: Duration,
        arrivals: &mut Vec<Arrival>,
    ) -> Result<()> {
        let request = self.chain.request;
        let mut frame = [0u8; MAX_FRAME_LEN];
        // A session's id and epoch, so a second observer (or a later one) is not a replay nor
        // a clash in the kernel's (task, id) matching.
        let mut session = qf_execution::session::Session::from_clock();
        let len = encode_request(
            Task::Add,
            &random_request(Task::Add, 0),
            session.next_id(),
            session.epoch(0),
            &mut frame,
        )?;
        mcu.invoke(&frame[..len])
            .context("binding the endpoint with one request")?;
        // The kernel device keeps up to 32 unread results across opens: older than this cell.
        // A zero wait takes only what is already there, on every transport; what was queued
        // is read in microseconds. The drop still ends after DRAIN_LIMIT, so a chain sending
        // faster than this loop reads (a 100 us period on a loaded host) cannot keep it going.
        let mut response = [0u8; MAX_FRAME_LEN];
        let drain = Instant::now();
        while drain.elapsed() < DRAIN_LIMIT && mcu.receive(&mut response, Duration::ZERO)?.is_some()
        {
        }
        let first = self.chain.first_invocation;
        let mut previous = None;
        let mut start = None;
        let mut seen = 0usize;
        // Other chains' results do not count as the wait's end: the time-out runs from the
        // chain's previous result.
        let mut waiting_since = Instant::now();
        while arrivals.len() < self.samples {
            let left = timeout.saturating_sub(waiting_since.elapsed());
            let received = match left.is_zero() {
                true => None,
                false => mcu.receive(&mut response, left)?,
            };
            let (len, received_ns) = received.with_context(|| {
                format!(
                    "waiting for result {} of chain {}: none within {} ms (three periods, at \
                     least 5 s, from the chain's previous result)",
                    seen + 1,
                    self.chain_id
                        .map_or_else(|| "(any id)".to_owned(), |id| id.to_string()),
                    timeout.as_millis()
                )
            })?;
            let at = Instant::now();
            let wake = received_ns.map(|r| Duration::from_nanos(monotonic_ns().saturating_sub(r)));
            let frame = &response[..len];
            // Bytes a serial line damaged: skipped; the result they hid counts as lost.
            let Ok(header) = decode_frame(frame).map(|f| f.header) else {
                continue;
            };
            if self
                .chain_id
                .is_some_and(|chain| header.contract_id != chain)
            {
                // Another chain's result.
                continue;
            }
            let id = header.invocation_id;
            waiting_since = at;
            if id < first || id - first > u64::from(u32::MAX) {
                bail!("result {id:#x} is not from the chain (ids start at {first:#x})");
            }
            if previous.is_some_and(|p| id <= p) {
                bail!(
                    "result {id:#x} after {:#x}: out of order",
                    previous.unwrap_or(0)
                );
            }
            previous = Some(id);
            seen += 1;
            if seen <= self.warmup {
                continue;
            }
            let start = *start.get_or_insert(at);
            arrivals.push((
                id,
                at - start,
                outcome_ok(self.chain.task, &request, frame)?,
                wake,
            ));
        }
        Ok(())
    }

    fn write_cell(
        &self,
        load: &str,
        caller: CallerPolicy,
        arrivals: &[Arrival],
    ) -> Result<ResidentSummary> {
        let dir = self.out.join("resident").join(load).join(caller.as_str());
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let path = dir.join("observations.csv");
        let mut writer = csv::Writer::from_path(&path)
            .with_context(|| format!("creating {}", path.display()))?;
        let rows = observations(load, caller.as_str(), arrivals, self.period);
        for row in &rows {
            writer.serialize(row)?;
        }
        writer.flush()?;
        Ok(summarize(load, caller.as_str(), &rows))
    }
}

/// Prints summaries as an aligned table.
pub fn print_summaries(out: &mut impl Write, summaries: &[ResidentSummary]) -> std::io::Result<()> {
    writeln!(
        out,
        "{:<5} {:<9} {:>7} {:>5} {:>6} {:>12} {:>12} {:>12} {:>12}",
        "load",
        "caller",
        "results",
        "lost",
        "wrong",
        "delay p50 us",
        "delay p95 us",
        "delay p99 us",
        "delay max us"
    )?;
    for s in summaries {
        writeln!(
            out,
            "{:<5} {:<9} {:>7} {:>5} {:>6} {:>12.2} {:>12.2} {:>12.2} {:>12.2}",
            s.load,
            s.caller,
            s.results,
            s.lost,
            s.wrong_outputs,
            s.delay_p50_us,
            s.delay_p95_us,
            s.delay_p99_us,
            s.delay_max_us
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: Duration = Duration::from_millis(10);

    fn at(ms: f64) -> Duration {
        Duration::from_secs_f64(ms / 1000.0)
    }

    #[test]
    fn delays_are_the_excess_over_the_fastest_delivery_on_the_release_grid() {
        // Released every 10 ms; result 1 is 3 ms late relative to results 0 and 3.
        let arrivals = [(100, 0.0), (101, 13_000.0), (103, 30_000.0)];
        let delays = delays_us(&arrivals, P);
        assert_eq!(delays.len(), 3);
        for (got, want) in delays.iter().zip([0.0, 3000.0, 0.0]) {
            assert!((got - want).abs() < 1e-6, "{delays:?}");
        }
        // The fastest need not be the first.
        let delays = delays_us(&[(7, 5000.0), (8, 12_000.0)], P);
        assert!(
            (delays[0] - 3000.0).abs() < 1e-6 && delays[1].abs() < 1e-6,
            "{delays:?}"
        );
    }

    #[test]
    fn with_the_kernels_times_the_delay_splits_into_kernel_delay_and_wake_up() {
        // Result 101 reached the kernel 3 ms late and its reader woke 1 ms after that; result
        // 102 reached the kernel on time, its reader woke 2 ms late.
        let arrivals = [
            (100, at(0.1), true, Some(at(0.1))),
            (101, at(14.1), true, Some(at(1.1))),
            (102, at(22.1), true, Some(at(2.1))),
        ];
        let rows = observations("rt", "fifo-high", &arrivals, P);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-6;
        let kernel: Vec<f64> = rows.iter().map(|r| r.kernel_delay_us).collect();
        let wake: Vec<f64> = rows.iter().map(|r| r.wake_us).collect();
        assert!(
            close(kernel[0], 0.0) && close(kernel[1], 3000.0) && close(kernel[2], 0.0),
            "{kernel:?}"
        );
        assert!(close(wake[1], 1100.0) && close(wake[2], 2100.0), "{wake:?}");
        assert!(close(rows[1].delay_us, 4000.0) && close(rows[2].delay_us, 2000.0));
    }

    #[test]
    fn the_summary_counts_lost_results_and_wrong_outputs() {
        let arrivals = [
            (100, at(0.0), true, None),
            (101, at(13.0), false, None),
            (104, at(40.0), true, None),
        ];
        let rows = observations("rt", "fifo", &arrivals, P);
        assert!(rows
            .iter()
            .all(|r| r.kernel_delay_us.is_nan() && r.wake_us.is_nan()));
        let s = summarize("rt", "fifo", &rows);
        assert_eq!((s.results, s.lost, s.wrong_outputs), (3, 2, 1));
        assert!((s.delay_max_us - 3000.0).abs() < 1e-6);
        assert!(s.delay_p50_us.abs() < 1e-6);
        let empty = summarize(
            "idle",
            "ordinary",
            &observations("idle", "ordinary", &[], P),
        );
        assert_eq!((empty.results, empty.lost), (0, 0));
        assert!(empty.delay_p99_us.is_nan());
    }

    #[test]
    fn the_template_is_a_request_the_dispatcher_serves_with_the_contracts_first_id() {
        let chain = ChainRequest::seeded(Task::Crc32, 3, 2);
        let template = chain.template().unwrap();
        assert_eq!(ChainRequest::from_template(&template).unwrap(), chain);
        assert!(ChainRequest::from_template(&template[..20]).is_err());
        let frame = decode_frame(&template).unwrap();
        assert_eq!(frame.header.invocation_id, 2 << 32);
        assert_eq!(frame.header.task_id, Task::Crc32.id());
        let mut out = [0u8; MAX_FRAME_LEN];
        let mut replay: qf_tasks::Replay = qf_tasks::Replay::new();
        let served = qf_tasks::serve(&template, &mut out, &|| 0u64, &mut replay).unwrap();
        assert!(outcome_ok(Task::Crc32, &chain.request, &out[..served.len]).unwrap());
    }
}
