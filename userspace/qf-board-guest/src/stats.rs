//! Order statistics of measured durations, shared by the `latency` and `chain` reports, with
//! qfabric's one percentile definition (`qf_decision::quantile`: type 7, numpy's default).

use std::time::Duration;

use qf_decision::quantile::percentile_in_place;

/// Where the guest's timings come from, said with every one printed.
pub const NOT_BOARD_TIMINGS: &str =
    "(QEMU TCG guest + emulator process on the host: not board timings)";

/// "p50 .. us, p95 .. us, p99 .. us, max .. us" of round trips; an error when none was measured.
pub fn round_trip_percentiles(samples: &[Duration]) -> anyhow::Result<String> {
    let pct = |q: f64| {
        percentile_us(samples, q).ok_or_else(|| anyhow::anyhow!("--count 0: nothing measured"))
    };
    Ok(format!(
        "p50 {:.0} us, p95 {:.0} us, p99 {:.0} us, max {:.0} us",
        pct(0.5)?,
        pct(0.95)?,
        pct(0.99)?,
        pct(1.0)?
    ))
}

/// Percentile `q` (0..=1) of `samples` (any order) in microseconds; `None` when empty.
pub fn percentile_us(samples: &[Duration], q: f64) -> Option<f64> {
    let mut micros: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e6).collect();
    percentile_in_place(&mut micros, q)
}

/// p50, p99 and max of a set of durations, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
}

impl Spread {
    /// The spread of `samples` (any order); `None` when empty.
    pub fn of(samples: Vec<Duration>) -> Option<Spread> {
        Some(Spread {
            p50_us: percentile_us(&samples, 0.5)?,
            p99_us: percentile_us(&samples, 0.99)?,
            max_us: percentile_us(&samples, 1.0)?,
        })
    }
}

impl std::fmt::Display for Spread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "p50 {:.0} us, p99 {:.0} us, max {:.0} us",
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
    fn percentiles_interpolate_between_closest_ranks() {
        let samples = us(&(1..=100).collect::<Vec<_>>());
        assert!((percentile_us(&samples, 0.5).unwrap() - 50.5).abs() < 1e-9);
        assert!((percentile_us(&samples, 0.99).unwrap() - 99.01).abs() < 1e-9);
        assert_eq!(percentile_us(&samples, 1.0), Some(100.0));
    }

    #[test]
    fn round_trips_print_four_percentiles_and_none_is_an_error() {
        let line = round_trip_percentiles(&us(&(1..=100).collect::<Vec<_>>())).unwrap();
        assert_eq!(line, "p50 50 us, p95 95 us, p99 99 us, max 100 us");
        assert!(round_trip_percentiles(&[]).is_err());
    }

    #[test]
    fn nothing_measured_has_no_percentile_and_no_spread() {
        assert_eq!(percentile_us(&[], 0.5), None);
        assert_eq!(Spread::of(Vec::new()), None);
    }

    #[test]
    fn spread_takes_samples_in_any_order() {
        let spread = Spread::of(us(&[30, 10, 20, 40])).unwrap();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(close(spread.p50_us, 25.0), "{spread:?}");
        assert!(close(spread.p99_us, 39.7), "{spread:?}");
        assert!(close(spread.max_us, 40.0), "{spread:?}");
        assert_eq!(spread.to_string(), "p50 25 us, p99 40 us, max 40 us");
    }
}
