//! The checks of the kernel dispatch device `/dev/qfabricN` (`docs/qfabric-dev.md`): the same
//! replies as through rpmsg_char, many threads sharing one device, and the kernel's round-trip
//! breakdown. Its error contract is checked by [`crate::abuse`].

use std::time::Duration;

use anyhow::{bail, Context, Result};
use qf_abi::MAX_FRAME_LEN;
use qf_execution::qfabric_dev::{Device, QfStats, Reply};

use crate::stats::{percentile_us, round_trip_percentiles, NOT_BOARD_TIMINGS};
use crate::traffic::{add_calls, checked, Mirror, REPLY_TIMEOUT};

/// One QF_IOC_INVOKE of `request`, its reply checked against the mirror.
pub fn exchange(device: &Device, mirror: &mut Mirror, request: &[u8], what: &str) -> Result<Reply> {
    checked(mirror, request, what, |request, reply| {
        let answer = device
            .invoke_into(request, reply, REPLY_TIMEOUT)
            .with_context(|| format!("{what}: invoke"))?;
        Ok((answer.len, answer))
    })
}

/// `dev-frames` numbers its invocations from here, so that it can share an epoch with
/// rpmsg_char traffic (`frames`, ids from 1): the replay window tracks ids, not order.
pub const FRAMES_FIRST_ID: u64 = 1 << 40;

/// Invocation ids of caller `index` when each makes `count`: disjoint ranges from 1 on.
pub fn first_id(index: u64, count: u64) -> u64 {
    1 + index * count
}

/// Counter growth between two statistics snapshots.
fn grew(before: &QfStats, after: &QfStats) -> [u64; 4] {
    [
        after.invokes - before.invokes,
        after.replies - before.replies,
        after.timeouts - before.timeouts,
        after.late_replies - before.late_replies,
    ]
}

/// A reply that waited longer than this for its caller to run was not what woke the caller:
/// its deadline was (the wake-up normally takes microseconds, milliseconds on a loaded TCG
/// guest; a caller woken by its deadline wakes about `REPLY_TIMEOUT` after its reply).
const LOST_WAKEUP: Duration = Duration::from_millis(REPLY_TIMEOUT.as_millis() as u64 / 2);

/// `threads` threads share `device`, each making `count` invocations with ids of its own; every
/// reply must be byte-identical to what the local dispatcher answers to that thread's request
/// and must have woken its own caller (checked with the kernel's timestamps: a reply whose
/// caller slept on to its deadline, e.g. because the reply woke another slot, is a failure, not
/// just a slow call). Afterwards no caller may be waiting and every invocation must have had its
/// reply.
pub fn concurrent(device: &Device, threads: u64, count: u64, epoch: u32) -> Result<()> {
    let before = device.stats()?;
    let results: Vec<Result<u64>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || -> Result<u64> {
                    let mut mirror = Mirror::starting_at(epoch, first_id(t, count));
                    let mut request = [0u8; MAX_FRAME_LEN];
                    for i in 0..count {
                        let len = mirror.request(i, &mut request)?;
                        let what = format!("thread {t} call {i}");
                        let reply = exchange(device, &mut mirror, &request[..len], &what)?;
                        let waking = reply.kernel.waking();
                        if waking > LOST_WAKEUP {
                            bail!(
                                "{what}: the reply waited {:.3} s for its caller to wake (its deadline woke it, not the reply)",
                                waking.as_secs_f64()
                            );
                        }
                    }
                    Ok(count)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("panicked")))
            })
            .collect()
    });
    let after = device.stats()?;
    let mut failures = Vec::new();
    let mut per_thread = Vec::new();
    for (t, result) in results.into_iter().enumerate() {
        match result {
            Ok(n) => per_thread.push(n.to_string()),
            Err(error) => {
                per_thread.push("failed".to_string());
                failures.push(format!("thread {t}: {error:#}"));
            }
        }
    }
    let total = threads * count;
    let [invokes, replies, timeouts, late] = grew(&before, &after);
    let stats = format!(
        "QF_IOC_STATS: invokes +{invokes}, replies +{replies}, timeouts +{timeouts}, late_replies +{late}, in_flight {}",
        after.in_flight
    );
    if after.in_flight != 0 {
        failures.push(format!("{} callers still in flight", after.in_flight));
    }
    if failures.is_empty() && (invokes != total || replies != total) {
        failures.push(format!("{total} invocations made, but {stats}"));
    }
    println!(
        "dev-concurrent: {threads} threads x {count} calls on {}: per thread [{}], total {}/{total} replies identical to qf_tasks::serve (epoch {epoch}); {stats}",
        device.path().display(),
        per_thread.join(", "),
        if failures.is_empty() { total } else { 0 },
    );
    if !failures.is_empty() {
        bail!("{}", failures.join("; "));
    }
    Ok(())
}

/// Round trips of a minimal frame (`add`) through the device: percentiles of the caller's round
/// trip and the medians of the kernel's own breakdown.
pub fn latency(device: &Device, count: u64, epoch: u32) -> Result<()> {
    let replies = add_calls(count, epoch, |mirror, request, what| {
        exchange(device, mirror, request, what)
    })?;
    let of = |part: fn(&Reply) -> Duration| -> Vec<Duration> { replies.iter().map(part).collect() };
    let median = |part: fn(&Reply) -> Duration| {
        percentile_us(&of(part), 0.5).context("--count 0: nothing measured")
    };
    println!(
        "dev-latency: add round trip over {count} calls: {}; kernel medians: entered->sent {:.1} us, sent->replied {:.1} us, replied->woken {:.1} us {NOT_BOARD_TIMINGS}",
        round_trip_percentiles(&of(|r| r.latency))?,
        median(|r| r.kernel.sending())?,
        median(|r| r.kernel.remote())?,
        median(|r| r.kernel.waking())?,
    );
    Ok(())
}

/// `dev-stats`: drains the read queue, then prints the channel's counters as `key=value` words
/// (with `drained=N`), for scripts that compare them before and after an event.
pub fn stats(device: &Device) -> Result<()> {
    let mut buf = [0u8; MAX_FRAME_LEN];
    let mut drained = 0u64;
    while device.recv_unsolicited(&mut buf, Duration::ZERO)?.is_some() {
        drained += 1;
    }
    let s = device.stats()?;
    println!(
        "invokes={} replies={} timeouts={} interrupted={} late_replies={} unsolicited={} unsolicited_dropped={} malformed={} in_flight={} drained={drained}",
        s.invokes,
        s.replies,
        s.timeouts,
        s.interrupted,
        s.late_replies,
        s.unsolicited,
        s.unsolicited_dropped,
        s.malformed,
        s.in_flight
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callers_get_disjoint_invocation_ids() {
        let count = 5;
        let ranges: Vec<_> = (0..4)
            .map(|t| first_id(t, count)..first_id(t, count) + count)
            .collect();
        assert_eq!(ranges[0], 1..6);
        for pair in ranges.windows(2) {
            assert_eq!(pair[0].end, pair[1].start);
        }
    }

    #[test]
    fn callers_ask_for_different_inputs() {
        let mut frames = Vec::new();
        for t in 0..3 {
            let mut mirror = Mirror::starting_at(7, first_id(t, 10));
            let mut request = [0u8; MAX_FRAME_LEN];
            let len = mirror.request(0, &mut request).unwrap();
            let frame = qf_abi::decode_frame(&request[..len]).unwrap();
            assert_eq!(frame.header.invocation_id, first_id(t, 10));
            frames.push(frame.payload.to_vec());
        }
        assert_ne!(frames[0], frames[1]);
        assert_ne!(frames[1], frames[2]);
    }
}
