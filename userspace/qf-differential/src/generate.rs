//! Random task sets, each determined by a `u64` seed (ChaCha8 from `rand_chacha`, whose output
//! stream is fixed per seed across platforms and releases, so a seed printed by a failing run
//! names the same set everywhere).
//!
//! A set has 2 to 6 tasks in the 1 ms unit at 1 kHz or 10 kHz (every duration a whole number
//! of units, so at least one tick), a horizon of 100 to 400 units, and a total utilisation
//! drawn uniformly from 0.3 to 1.2, split at random between the tasks (each task's share
//! rounded to whole units, at least 1: seeds 0 to 999 ask for 0.27 to 1.31): sets above 1
//! overload the CPU, so deadline misses, period overruns and budget overruns happen. About
//! 60% of the tasks are periodic EDF tasks (period 5 to 60, a constrained deadline `D <= T`
//! half the time, a first release offset half the time), the rest CBS tasks (server period 5
//! to 60) with 1 to 8 jobs whose executions run from half to twice the budget, each with a
//! soft or hard reservation. Admission control is on in 40% of the sets, with a bound of 0.7,
//! 0.9 or 1.0.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::spec::{SetSpec, TaskSpec};

/// Utilisation range the generator draws each set's total from.
pub const UTILISATION: (f64, f64) = (0.3, 1.2);

/// The task set of `seed`.
pub fn generate(seed: u64) -> SetSpec {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let tick_hz = if rng.gen_bool(0.5) { 1_000 } else { 10_000 };
    let horizon: u64 = rng.gen_range(100..=400);
    let count: usize = rng.gen_range(2..=6);
    let total = rng.gen_range(UTILISATION.0..=UTILISATION.1);
    let shares = split(&mut rng, total, count);
    let admission_bound = rng
        .gen_bool(0.4)
        .then(|| [0.7, 0.9, 1.0][rng.gen_range(0..3)]);
    let task = shares
        .iter()
        .enumerate()
        .map(|(i, &share)| {
            if rng.gen_bool(0.6) {
                periodic(&mut rng, i, share)
            } else {
                cbs(&mut rng, i, share, horizon)
            }
        })
        .collect();
    SetSpec {
        unit: "1ms".into(),
        tick_hz,
        horizon,
        admission_bound,
        task,
    }
}

/// `total` split into `count` random shares (normalised uniform weights).
fn split(rng: &mut ChaCha8Rng, total: f64, count: usize) -> Vec<f64> {
    let weights: Vec<f64> = (0..count).map(|_| rng.gen_range(0.1..1.0)).collect();
    let sum: f64 = weights.iter().sum();
    weights.iter().map(|w| total * w / sum).collect()
}

/// `share` of `period` as a whole number of units, at least 1 and at most the period.
fn work_of(share: f64, period: u64) -> u64 {
    ((share * period as f64).round() as u64).clamp(1, period)
}

fn periodic(rng: &mut ChaCha8Rng, index: usize, share: f64) -> TaskSpec {
    let period: u64 = rng.gen_range(5..=60);
    let wcet = work_of(share, period);
    let deadline = rng
        .gen_bool(0.5)
        .then(|| rng.gen_range(wcet.max(period / 2)..=period));
    let offset = rng.gen_bool(0.5).then(|| rng.gen_range(0..period));
    TaskSpec {
        name: format!("p{index}"),
        kind: "periodic".into(),
        wcet: Some(wcet),
        period: Some(period),
        deadline,
        offset,
        ..TaskSpec::default()
    }
}

fn cbs(rng: &mut ChaCha8Rng, index: usize, share: f64, horizon: u64) -> TaskSpec {
    let period: u64 = rng.gen_range(5..=60);
    let budget = work_of(share, period);
    let count: usize = rng.gen_range(1..=8);
    let mut arrival: u64 = rng.gen_range(0..period);
    let mut jobs = Vec::with_capacity(count);
    for _ in 0..count {
        if arrival >= horizon {
            break;
        }
        let execution = rng.gen_range((budget / 2).max(1)..=budget * 2);
        jobs.push([arrival, execution]);
        arrival += rng.gen_range(period / 2..=period * 2);
    }
    TaskSpec {
        name: format!("c{index}"),
        kind: "cbs".into(),
        budget: Some(budget),
        period: Some(period),
        jobs: Some(jobs),
        hard_reservation: Some(rng.gen_bool(0.5)),
        ..TaskSpec::default()
    }
}
