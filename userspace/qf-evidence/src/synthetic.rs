//! Synthetic per-call traces shaped after the paper's Table IV (p95 per workload, domain and
//! load) with bursts of Linux stalls under contention, for running the evaluation grid where no board is
//! attached. They are labelled synthetic everywhere they are used; they are not measurements.

use crate::traces::Sample;
use qf_decision::model::DomainId;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The paper's five workloads, in its order (names as in `qf-tasks`).
pub const WORKLOADS: [&str; 5] = ["add", "crc32", "fir_x1", "fir_x64", "fir_x512"];
/// Load conditions (Section VI-B).
pub const LOADS: [&str; 3] = ["idle", "cpu", "rt"];
/// Caller policies: SCHED_OTHER and SCHED_FIFO 50.
pub const CALLERS: [&str; 2] = ["ordinary", "fifo"];

/// Table IV p95 in ms, ordinary callers: [load][workload] for Linux and MCU.
const LINUX_P95_MS: [[f64; 5]; 3] = [
    [0.07, 0.15, 0.08, 0.45, 1.31],
    [0.18, 5.37, 5.13, 7.20, 9.24],
    [0.14, 0.24, 0.23, 0.76, 1.59],
];
const MCU_P95_MS: [[f64; 5]; 3] = [
    [18.81, 19.78, 20.16, 23.07, 45.93],
    [21.49, 23.17, 23.22, 27.42, 50.76],
    [39.99, 40.33, 42.04, 37.70, 200.37],
];

/// Shape of one synthetic trace.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TraceShape {
    /// Target p95 of the body, µs.
    pub p95_us: f64,
    /// Probability that a sample starts a stall burst.
    pub stall_probability: f64,
    /// Stall latency range, µs.
    pub stall_us: (f64, f64),
    /// Consecutive stalled samples per burst.
    pub stall_burst: usize,
}

/// The shape for one workload × load × caller × domain.
pub fn shape(workload: usize, load: usize, caller: usize, domain: DomainId) -> TraceShape {
    let tuned = caller == 1;
    match domain {
        DomainId::Linux => {
            let mut p95_ms = LINUX_P95_MS[load][workload];
            // A SCHED_FIFO caller removes most CPU-load interference (Table VI, tuned Linux).
            if tuned && load == 1 {
                p95_ms = LINUX_P95_MS[0][workload] * 1.3;
            }
            let (stall_probability, stall_us) = match load {
                // RT contention: rare bursts of preempted calls, occasionally past a chain deadline.
                2 => (0.001, (20_000.0, 150_000.0)),
                1 if !tuned => (0.002, (8_000.0, 12_000.0)),
                _ => (0.0, (0.0, 0.0)),
            };
            TraceShape {
                p95_us: p95_ms * 1000.0,
                stall_probability,
                stall_us,
                stall_burst: 2,
            }
        }
        DomainId::Mcu => {
            let p95_us = MCU_P95_MS[load][workload] * 1000.0;
            let (stall_probability, stall_us) = if load == 2 {
                (0.01, (100_000.0, 400_000.0))
            } else {
                (0.0, (0.0, 0.0))
            };
            TraceShape {
                p95_us,
                stall_probability,
                stall_us,
                stall_burst: 3,
            }
        }
    }
}

/// `rows` samples of a shape, reproducible from `seed`. The body is uniform on
/// [0.75, 1.0125]·p95, so its p95 is the target; every output is correct (`ok`).
pub fn generate(shape: TraceShape, rows: usize, seed: u64) -> Vec<Sample> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut samples = Vec::with_capacity(rows);
    let mut stalled = 0usize;
    while samples.len() < rows {
        if stalled == 0 && shape.stall_probability > 0.0 && rng.gen_bool(shape.stall_probability) {
            stalled = shape.stall_burst;
        }
        let latency_us = if stalled > 0 {
            stalled -= 1;
            rng.gen_range(shape.stall_us.0..=shape.stall_us.1)
        } else {
            shape.p95_us * rng.gen_range(0.75..=1.0125)
        };
        samples.push(Sample {
            latency_us,
            ok: true,
        });
    }
    samples
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::percentile;

    #[test]
    fn idle_traces_hit_the_table_iv_p95() {
        let samples = generate(shape(0, 0, 0, DomainId::Mcu), 2000, 1);
        let latencies: Vec<f64> = samples.iter().map(|s| s.latency_us).collect();
        let p95 = percentile(&latencies, 0.95).unwrap();
        assert!((p95 / 18_810.0 - 1.0).abs() < 0.02, "{p95}");
        assert_eq!(
            generate(shape(0, 0, 0, DomainId::Mcu), 50, 1),
            generate(shape(0, 0, 0, DomainId::Mcu), 50, 1)
        );
    }
}
