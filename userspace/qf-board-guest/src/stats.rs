//! Order statistics of measured durations, shared by the `latency` and `chain` reports.

use std::time::Duration;

/// The `p`-th percentile (0..=100) of `sorted` (ascending) by the nearest-rank-below rule, the
/// element at index `len * p / 100`; `None` when there is nothing measured.
pub fn percentile(sorted: &[Duration], p: usize) -> Option<Duration> {
    let last = sorted.len().checked_sub(1)?;
    sorted.get((sorted.len() * p / 100).min(last)).copied()
}

/// p50, p99 and max of a set of durations, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spread {
    pub p50_us: u128,
    pub p99_us: u128,
    pub max_us: u128,
}

impl Spread {
    /// The spread of `samples` (any order); `None` when empty.
    pub fn of(mut samples: Vec<Duration>) -> Option<Spread> {
        samples.sort();
        Some(Spread {
            p50_us: percentile(&samples, 50)?.as_micros(),
            p99_us: percentile(&samples, 99)?.as_micros(),
            max_us: samples.last()?.as_micros(),
        })
    }
}

impl std::fmt::Display for Spread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "p50 {} us, p99 {} us, max {} us",
            self.p50_us, self.p99_us, self.max_us
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(values: &[u64]) -> Vec<Duration> {
        values.iter().map(|&v| Duration::from_micros(v)).collect()
    }

    #[test]
    fn percentile_is_the_element_at_len_times_p_over_100() {
        let sorted = us(&(1..=100).collect::<Vec<_>>());
        assert_eq!(percentile(&sorted, 50), Some(Duration::from_micros(51)));
        assert_eq!(percentile(&sorted, 99), Some(Duration::from_micros(100)));
        assert_eq!(percentile(&sorted, 0), Some(Duration::from_micros(1)));
        // p = 100 would index one past the end: clamped to the largest.
        assert_eq!(percentile(&sorted, 100), Some(Duration::from_micros(100)));
    }

    #[test]
    fn nothing_measured_has_no_percentile_and_no_spread() {
        assert_eq!(percentile(&[], 50), None);
        assert_eq!(Spread::of(Vec::new()), None);
    }

    #[test]
    fn spread_sorts_its_samples_first() {
        let spread = Spread::of(us(&[30, 10, 20, 40])).unwrap();
        assert_eq!(
            spread,
            Spread {
                p50_us: 30,
                p99_us: 40,
                max_us: 40
            }
        );
        assert_eq!(spread.to_string(), "p50 30 us, p99 40 us, max 40 us");
    }
}
