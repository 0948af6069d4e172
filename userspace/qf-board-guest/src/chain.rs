//! The resident-chain check (QFabric Section VIII-A: a task the MCU releases on its own timer,
//! sending only its results to Linux).
//!
//! `chain-template` prints the request installed as the MCU's chain (`qf resident install
//! --template`). `chain`
//! is Linux's side: one ordinary request tells the MCU this endpoint's address, then every
//! result the MCU sends unasked is checked against `qf_tasks::serve` run here on the template
//! with that result's invocation id, and its arrival time is recorded.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use qf_abi::{decode_frame, encode_frame, Header, MessageKind, MAX_FRAME_LEN};
use qf_tasks::{Crc32Request, Task};

use crate::stats::{Spread, NOT_BOARD_TIMINGS};
use crate::traffic::{exchange_skipping, Mirror, REPLY_TIMEOUT};
use qf_execution::rpmsg_char::Endpoint;

/// The chain's contract id; its invocation ids start at `contract << 32`, as in the Zephyr
/// executor sample, so they never meet another chain's or Linux's own ids.
pub const CHAIN_CONTRACT: u32 = 1;
/// The template's invocation id: the first job's.
pub const FIRST_INVOCATION: u64 = (CHAIN_CONTRACT as u64) << 32;

/// The chain's request with `invocation_id` (the template is the one with
/// [`FIRST_INVOCATION`]): crc32 of the bytes 0..=63, as the Zephyr sample's chain computes.
pub fn request(epoch: u32, invocation_id: u64, out: &mut [u8; MAX_FRAME_LEN]) -> Result<usize> {
    let header = Header {
        contract_id: CHAIN_CONTRACT,
        ..Header::request(Task::Crc32.id(), Task::Crc32.effect(), invocation_id, epoch)
    };
    let block = std::array::from_fn(|i| i as u8);
    encode_frame(&header, &Crc32Request { block }, out)
        .map_err(|e| anyhow::anyhow!("encode chain request: {e:?}"))
}

/// The template in lowercase hex, the form `qf resident install --template` takes.
pub fn template_hex(epoch: u32) -> Result<String> {
    let mut frame = [0u8; MAX_FRAME_LEN];
    let len = request(epoch, FIRST_INVOCATION, &mut frame)?;
    Ok(hex::encode(&frame[..len]))
}

/// Whether `message` is a chain result rather than a reply to Linux: a crc32 response under
/// the chain's contract.
pub fn is_result(message: &[u8]) -> bool {
    decode_frame(message).is_ok_and(|frame| {
        let h = frame.header;
        h.kind == MessageKind::Response
            && h.task_id == Task::Crc32.id()
            && h.contract_id == CHAIN_CONTRACT
    })
}

/// Checks chain results in arrival order: strictly increasing invocation ids from
/// [`FIRST_INVOCATION`] on, each result byte-identical to the local dispatcher's answer.
pub struct ResultChecker {
    epoch: u32,
    /// The chain's private replay window, mirrored (ids only increase, so it always accepts).
    mirror: Mirror,
    last: Option<u64>,
    /// Ids skipped between consecutive checked results (results the MCU could not deliver).
    pub gaps: u64,
}

impl ResultChecker {
    pub fn new(epoch: u32) -> ResultChecker {
        ResultChecker {
            epoch,
            mirror: Mirror::new(epoch),
            last: None,
            gaps: 0,
        }
    }

    /// The id of the last result checked.
    pub fn last(&self) -> Option<u64> {
        self.last
    }

    /// Checks the next result; returns its invocation id.
    pub fn check(&mut self, message: &[u8]) -> Result<u64> {
        let shown = &message[..message.len().min(48)];
        let frame = decode_frame(message).map_err(|e| {
            anyhow::anyhow!("not a frame ({e:?}): {} bytes {shown:02x?}", message.len())
        })?;
        let id = frame.header.invocation_id;
        if id < FIRST_INVOCATION {
            bail!("result id {id:#x} is below the chain's first id {FIRST_INVOCATION:#x}");
        }
        match self.last {
            Some(last) if id == last => bail!("result id {id:#x} repeated"),
            Some(last) if id < last => bail!("result id {id:#x} after {last:#x}: out of order"),
            _ => {}
        }
        let mut request_frame = [0u8; MAX_FRAME_LEN];
        let len = request(self.epoch, id, &mut request_frame)?;
        let mut expected = [0u8; MAX_FRAME_LEN];
        let expected_len = self.mirror.expect(&request_frame[..len], &mut expected)?;
        if message != &expected[..expected_len] {
            bail!(
                "result id {id:#x} differs from qf_tasks::serve: got {} bytes {shown:02x?}, expected {expected_len} bytes {:02x?}",
                message.len(),
                &expected[..expected_len.min(48)]
            );
        }
        if let Some(last) = self.last {
            self.gaps += id - last - 1;
        }
        self.last = Some(id);
        Ok(id)
    }
}

/// Arrival-time statistics of chain results.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    /// Intervals measured: between results with consecutive ids only (across a skipped id the
    /// interval spans several periods and says nothing about the timer).
    pub intervals: usize,
    pub interval: Spread,
    /// |interval - period|.
    pub deviation: Spread,
}

/// Timing of `arrivals` (invocation id, arrival instant, in arrival order); `None` if no two
/// results have consecutive ids.
pub fn timing(arrivals: &[(u64, Instant)], period: Duration) -> Option<Timing> {
    let intervals: Vec<Duration> = arrivals
        .windows(2)
        .filter(|pair| pair[1].0 == pair[0].0 + 1)
        .map(|pair| pair[1].1.duration_since(pair[0].1))
        .collect();
    let deviations = intervals.iter().map(|i| i.abs_diff(period)).collect();
    Some(Timing {
        intervals: intervals.len(),
        interval: Spread::of(intervals)?,
        deviation: Spread::of(deviations)?,
    })
}

/// Binds this endpoint at the MCU with one `add` request, then checks `count` chain results.
pub fn chain(ep: &mut Endpoint, count: u64, period: Duration, epoch: u32) -> Result<()> {
    let timeout = REPLY_TIMEOUT.max(period.saturating_mul(3));
    let mut checker = ResultChecker::new(epoch);
    // Results may arrive before the bind reply: once the chain runs, the MCU sends to the last
    // address that wrote to it, and a new endpoint may reuse an old one's address.
    let mut early = 0u64;
    let mut bind = Mirror::new(epoch);
    let mut frame = [0u8; MAX_FRAME_LEN];
    let len = bind.request(0, &mut frame)?;
    exchange_skipping(ep, &mut bind, &frame[..len], "bind (add)", |message| {
        if !is_result(message) {
            return Ok(false);
        }
        checker.check(message)?;
        early += 1;
        Ok(true)
    })?;

    let mut arrivals = Vec::with_capacity(count as usize);
    for i in 0..count {
        let last = checker.last();
        let what = || match last {
            Some(last) => format!("chain result {i}/{count} (last id {last:#x})"),
            None => format!("chain result {i}/{count} (none yet)"),
        };
        let n = ep
            .recv(&mut frame, timeout)
            .with_context(|| format!("{}: timeout {} ms", what(), timeout.as_millis()))?;
        let arrived = Instant::now();
        let id = checker.check(&frame[..n]).with_context(what)?;
        arrivals.push((id, arrived));
    }
    let (first, last) = match (arrivals.first(), arrivals.last()) {
        (Some(first), Some(last)) => (first.0, last.0),
        _ => bail!("--count 0: nothing measured"),
    };
    let period_us = period.as_micros();
    let timing = match timing(&arrivals, period) {
        Some(t) => format!(
            "interval {} over {} consecutive-id pairs; |interval - {period_us} us| {}",
            t.interval, t.intervals, t.deviation
        ),
        None => "no two consecutive ids: no interval measured".to_string(),
    };
    println!(
        "chain: {count} crc32 results identical to qf_tasks::serve (ids {first:#x}..={last:#x}, epoch {epoch}), {} ids skipped, {early} before the bind reply; period {period_us} us: {timing} {NOT_BOARD_TIMINGS}",
        checker.gaps
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use qf_abi::Status;
    use qf_tasks::{serve, Crc32Response, Replay};

    /// What the MCU's chain sends for job `id`: the dispatcher's answer to the stamped template.
    fn result(epoch: u32, id: u64) -> Vec<u8> {
        let mut request_frame = [0u8; MAX_FRAME_LEN];
        let len = request(epoch, id, &mut request_frame).unwrap();
        let mut out = [0u8; MAX_FRAME_LEN];
        let mut replay: Replay = Replay::new();
        let served = serve(&request_frame[..len], &mut out, &|| 0u64, &mut replay).unwrap();
        assert_eq!(served.status, Status::Ok);
        out[..served.len].to_vec()
    }

    #[test]
    fn template_is_a_crc32_request_the_dispatcher_serves() {
        let text = template_hex(4).unwrap();
        assert!(text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
        let template = hex::decode(&text).unwrap();
        let frame = decode_frame(&template).unwrap();
        assert_eq!(frame.header.kind, MessageKind::Request);
        assert_eq!(frame.header.task_id, Task::Crc32.id());
        assert_eq!(frame.header.invocation_id, 1 << 32);
        assert_eq!(frame.header.contract_id, 1);
        assert_eq!(frame.header.epoch, 4);
        let block: [u8; 64] = std::array::from_fn(|i| i as u8);
        assert_eq!(frame.payload_as::<Crc32Request>().unwrap().block, block);

        let mut out = [0u8; MAX_FRAME_LEN];
        let mut replay: Replay = Replay::new();
        let served = serve(&template, &mut out, &|| 0u64, &mut replay).unwrap();
        assert_eq!(served.status, Status::Ok);
        let response = decode_frame(&out[..served.len]).unwrap();
        // CRC-32 (IEEE) of the bytes 0..=63, from Python's zlib.crc32(bytes(range(64))).
        assert_eq!(
            response.payload_as::<Crc32Response>().unwrap().crc,
            0x100e_ce8c
        );
        assert!(is_result(&out[..served.len]));
    }

    #[test]
    fn results_with_gaps_are_accepted_and_the_gaps_counted() {
        let mut checker = ResultChecker::new(4);
        for id in [0, 1, 2, 5, 6, 10].map(|k| FIRST_INVOCATION + k) {
            assert_eq!(checker.check(&result(4, id)).unwrap(), id);
        }
        assert_eq!(checker.gaps, 2 + 3);
        assert_eq!(checker.last(), Some(FIRST_INVOCATION + 10));
    }

    #[test]
    fn a_wrong_byte_is_rejected() {
        let mut checker = ResultChecker::new(4);
        let mut bad = result(4, FIRST_INVOCATION);
        let last = bad.len() - 1;
        bad[last] ^= 1;
        let error = checker.check(&bad).unwrap_err().to_string();
        assert!(error.contains("differs from qf_tasks::serve"), "{error}");
    }

    #[test]
    fn a_result_of_another_epoch_is_rejected() {
        let mut checker = ResultChecker::new(4);
        assert!(checker.check(&result(5, FIRST_INVOCATION)).is_err());
    }

    #[test]
    fn a_repeated_or_decreasing_id_is_rejected() {
        let mut checker = ResultChecker::new(4);
        checker.check(&result(4, FIRST_INVOCATION + 3)).unwrap();
        let repeated = checker.check(&result(4, FIRST_INVOCATION + 3));
        assert!(repeated.unwrap_err().to_string().contains("repeated"));
        let decreasing = checker.check(&result(4, FIRST_INVOCATION + 2));
        assert!(decreasing.unwrap_err().to_string().contains("out of order"));
        // The rejected ones left the checker where it was.
        checker.check(&result(4, FIRST_INVOCATION + 4)).unwrap();
        assert_eq!(checker.gaps, 0);
    }

    #[test]
    fn ids_below_the_template_and_non_frames_are_rejected() {
        let mut checker = ResultChecker::new(4);
        assert!(checker.check(&result(4, 7)).is_err());
        assert!(checker.check(b"not a frame").is_err());
        assert!(!is_result(b"not a frame"));
    }

    #[test]
    fn the_bind_reply_is_not_a_result() {
        let mut mirror = Mirror::new(4);
        let mut request_frame = [0u8; MAX_FRAME_LEN];
        let len = mirror.request(0, &mut request_frame).unwrap();
        let mut reply = [0u8; MAX_FRAME_LEN];
        let reply_len = mirror.expect(&request_frame[..len], &mut reply).unwrap();
        assert!(!is_result(&reply[..reply_len]));
        // Nor is the chain's own request.
        assert!(!is_result(&hex::decode(template_hex(4).unwrap()).unwrap()));
    }

    #[test]
    fn timing_uses_consecutive_ids_only() {
        let start = Instant::now();
        let at = |us: u64| start + Duration::from_micros(us);
        // Intervals 10_000, 9_000, 12_000, then a skipped id (20_000 us, not counted), 10_500.
        let arrivals = [
            (1, at(0)),
            (2, at(10_000)),
            (3, at(19_000)),
            (4, at(31_000)),
            (6, at(51_000)),
            (7, at(61_500)),
        ];
        let t = timing(&arrivals, Duration::from_micros(10_000)).unwrap();
        assert_eq!(t.intervals, 4);
        // Sorted intervals 9_000, 10_000, 10_500, 12_000 (type 7: p50 between the middle two).
        let close = |a: f64, b: f64| (a - b).abs() < 1e-6;
        assert!(close(t.interval.p50_us, 10_250.0), "{:?}", t.interval);
        assert!(close(t.interval.p99_us, 11_955.0), "{:?}", t.interval);
        assert!(close(t.interval.max_us, 12_000.0), "{:?}", t.interval);
        // Deviations 1_000, 0, 2_000, 500 -> sorted 0, 500, 1_000, 2_000.
        assert!(close(t.deviation.p50_us, 750.0), "{:?}", t.deviation);
        assert!(close(t.deviation.p99_us, 1_970.0), "{:?}", t.deviation);
        assert!(close(t.deviation.max_us, 2_000.0), "{:?}", t.deviation);
    }

    #[test]
    fn no_consecutive_ids_means_no_timing() {
        let start = Instant::now();
        let arrivals = [(1, start), (3, start + Duration::from_millis(20))];
        assert_eq!(timing(&arrivals, Duration::from_millis(10)), None);
        assert_eq!(timing(&[], Duration::from_millis(10)), None);
    }
}
