//! Percentiles and block-bootstrap confidence intervals (the paper's Section VI-E).
//!
//! **Percentile definition.** Every percentile in qfabric is the linear interpolation between
//! closest ranks of the sorted sample (Hyndman & Fan type 7, numpy's default): for `n` sorted
//! values `x[0..n]` and a quantile `q ∈ [0, 1]`, let `h = (n − 1)·q`; the percentile is
//! `x[⌊h⌋] + (h − ⌊h⌋)·(x[⌊h⌋+1] − x[⌊h⌋])`. The paper's evidence pipeline is Python, where this
//! is the default, so numbers stay comparable.
//!
//! **Confidence intervals.** 95% intervals come from a circular block bootstrap (2000 resamples,
//! block length 50) seeded with ChaCha8, so every report regenerates bit-for-bit. Blocks of
//! consecutive samples keep the short-range autocorrelation of measured traces; wrapping around
//! the end ("circular") gives every sample the same chance to appear.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

pub use qf_decision::quantile::{percentile_in_place, percentile_sorted};

/// Number of bootstrap resamples the paper uses.
pub const BOOTSTRAP_RESAMPLES: usize = 2000;
/// Block length the paper uses.
pub const BOOTSTRAP_BLOCK: usize = 50;
/// Seed used when a report does not name one.
pub const DEFAULT_SEED: u64 = 0x5146_4142; // "QFAB"

/// Type-7 percentile of any slice (copies it; for reports, not the decision path).
pub fn percentile(values: &[f64], q: f64) -> Option<f64> {
    let mut copy = values.to_vec();
    percentile_in_place(&mut copy, q)
}

/// A point estimate with its bootstrap confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    pub value: f64,
    pub ci_low: f64,
    pub ci_high: f64,
}

/// Resamples a bootstrap takes: fewer than 100 give no meaningful 2.5 % / 97.5 % quantiles (and
/// 0 no interval at all); more than 100 000 only cost time.
pub const RESAMPLES: std::ops::RangeInclusive<usize> = 100..=100_000;
/// Block lengths a bootstrap takes.
pub const BLOCK: std::ops::RangeInclusive<usize> = 1..=100_000;

/// Settings of the circular block bootstrap, valid by construction ([`Bootstrap::new`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bootstrap {
    resamples: usize,
    block: usize,
    seed: u64,
    /// Confidence level in per mille (950 = 95%), an integer so the settings hash and compare.
    level_permille: u32,
}

/// Bootstrap settings that cannot give an interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BootstrapError {
    #[error("{0} resamples: a bootstrap takes {min}..={max} (fewer give no meaningful 2.5 % and 97.5 % quantiles)", min = RESAMPLES.start(), max = RESAMPLES.end())]
    Resamples(usize),
    #[error("block length {0}: a bootstrap takes {min}..={max}", min = BLOCK.start(), max = BLOCK.end())]
    Block(usize),
}

impl Default for Bootstrap {
    fn default() -> Self {
        Self {
            resamples: BOOTSTRAP_RESAMPLES,
            block: BOOTSTRAP_BLOCK,
            seed: DEFAULT_SEED,
            level_permille: 950,
        }
    }
}

impl Bootstrap {
    /// 95 % intervals from `resamples` resamples of blocks of `block` samples, seeded with `seed`;
    /// counts outside [`RESAMPLES`] or [`BLOCK`] are refused (0 resamples used to be taken as one,
    /// giving zero-width "intervals").
    pub fn new(resamples: usize, block: usize, seed: u64) -> Result<Self, BootstrapError> {
        if !RESAMPLES.contains(&resamples) {
            return Err(BootstrapError::Resamples(resamples));
        }
        if !BLOCK.contains(&block) {
            return Err(BootstrapError::Block(block));
        }
        Ok(Self {
            resamples,
            block,
            seed,
            level_permille: 950,
        })
    }

    pub fn resamples(&self) -> usize {
        self.resamples
    }

    pub fn block(&self) -> usize {
        self.block
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Percentile `q` of `values` with a percentile-method interval from circular block
    /// resamples. `None` for an empty sample.
    pub fn percentile_ci(&self, values: &[f64], q: f64) -> Option<Estimate> {
        let value = percentile(values, q)?;
        let n = values.len();
        let block = self.block.clamp(1, n);
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let mut resample = Vec::with_capacity(n);
        let mut statistics = Vec::with_capacity(self.resamples);
        for _ in 0..self.resamples {
            resample.clear();
            while resample.len() < n {
                let start = rng.gen_range(0..n);
                let take = block.min(n - resample.len());
                resample.extend((0..take).map(|offset| values[(start + offset) % n]));
            }
            statistics.push(percentile_in_place(&mut resample, q)?);
        }
        statistics.sort_unstable_by(f64::total_cmp);
        let tail = (1.0 - f64::from(self.level_permille) / 1000.0) / 2.0;
        Some(Estimate {
            value,
            ci_low: percentile_sorted(&statistics, tail)?,
            ci_high: percentile_sorted(&statistics, 1.0 - tail)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bootstrap_is_reproducible_for_a_seed_and_differs_across_seeds() {
        let values: Vec<f64> = (0..300).map(|i| ((i * 7919) % 1000) as f64).collect();
        let a = Bootstrap::default().percentile_ci(&values, 0.95).unwrap();
        let b = Bootstrap::default().percentile_ci(&values, 0.95).unwrap();
        assert_eq!(a, b);
        let c = Bootstrap::new(BOOTSTRAP_RESAMPLES, BOOTSTRAP_BLOCK, 7)
            .unwrap()
            .percentile_ci(&values, 0.95)
            .unwrap();
        assert_ne!((a.ci_low, a.ci_high), (c.ci_low, c.ci_high));
        assert!(a.ci_low <= a.value && a.value <= a.ci_high);
    }

    /// `qf report --resamples 0` took 0 as one resample: every "95 % interval" had zero width.
    #[test]
    fn settings_that_give_no_interval_are_refused() {
        for resamples in [0, 1, 99, 100_001, usize::MAX] {
            let error = Bootstrap::new(resamples, BOOTSTRAP_BLOCK, 1).unwrap_err();
            assert_eq!(error, BootstrapError::Resamples(resamples));
            assert!(error.to_string().starts_with(&format!(
                "{resamples} resamples: a bootstrap takes 100..=100000"
            )));
        }
        for block in [0, 100_001] {
            let error = Bootstrap::new(BOOTSTRAP_RESAMPLES, block, 1).unwrap_err();
            assert_eq!(error, BootstrapError::Block(block));
        }
        let fewest = Bootstrap::new(100, 1, 1).unwrap();
        let values: Vec<f64> = (0..300).map(f64::from).collect();
        let estimate = fewest.percentile_ci(&values, 0.95).unwrap();
        assert!(estimate.ci_low < estimate.ci_high, "{estimate:?}");
    }

    /// Coverage on a known distribution: the p95 of Uniform(0, 1) is 0.95. Over many independent
    /// samples, the nominal 95% interval must contain it about 95% of the time (fewer resamples
    /// than the paper's 2000 keep this debug-build test to about a second).
    #[test]
    fn bootstrap_interval_covers_the_true_p95_of_a_uniform_distribution() {
        let mut data_rng = ChaCha8Rng::seed_from_u64(42);
        let replications = 150;
        let mut covered = 0;
        for replication in 0..replications {
            let values: Vec<f64> = (0..400).map(|_| data_rng.gen::<f64>()).collect();
            let bootstrap = Bootstrap::new(300, 50, replication).unwrap();
            let estimate = bootstrap.percentile_ci(&values, 0.95).unwrap();
            if estimate.ci_low <= 0.95 && 0.95 <= estimate.ci_high {
                covered += 1;
            }
        }
        let coverage = f64::from(covered) / replications as f64;
        assert!((0.86..=0.995).contains(&coverage), "coverage {coverage}");
    }
}
