//! Type-7 percentiles without allocation: the controller's window statistic and the base of
//! every percentile in [`qf_evidence::stats`].

/// Type-7 percentile of values that are already sorted ascending. `None` for an empty slice.
pub fn percentile_sorted(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let q = q.clamp(0.0, 1.0);
    let h = (sorted.len() - 1) as f64 * q;
    let lower = h.floor() as usize;
    let upper = (lower + 1).min(sorted.len() - 1);
    let fraction = h - lower as f64;
    Some(sorted[lower] + fraction * (sorted[upper] - sorted[lower]))
}

/// Type-7 percentile computed by partially reordering `values` in place (no allocation, O(n)).
pub fn percentile_in_place(values: &mut [f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let q = q.clamp(0.0, 1.0);
    let h = (values.len() - 1) as f64 * q;
    let lower = h.floor() as usize;
    let fraction = h - lower as f64;
    let (_, lower_value, above) = values.select_nth_unstable_by(lower, f64::total_cmp);
    let lower_value = *lower_value;
    if above.is_empty() || fraction == 0.0 {
        return Some(lower_value);
    }
    let upper_value = above.iter().copied().fold(f64::INFINITY, f64::min);
    Some(lower_value + fraction * (upper_value - lower_value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::{prop_assert, proptest};

    #[test]
    fn type7_matches_numpy_on_a_small_sample() {
        // numpy.percentile([1, 2, 3, 4], 95) == 3.85
        let sorted = [1.0, 2.0, 3.0, 4.0];
        assert!((percentile_sorted(&sorted, 0.95).unwrap() - 3.85).abs() < 1e-12);
        assert_eq!(percentile_sorted(&sorted, 0.0), Some(1.0));
        assert_eq!(percentile_sorted(&sorted, 1.0), Some(4.0));
        assert_eq!(percentile_sorted(&[], 0.5), None);
    }

    proptest! {
        #[test]
        fn in_place_selection_agrees_with_sorting(values in proptest::collection::vec(-1e6f64..1e6, 1..200), q in 0.0f64..=1.0) {
            let mut sorted = values.clone();
            sorted.sort_unstable_by(f64::total_cmp);
            let mut scratch = values.clone();
            let expected = percentile_sorted(&sorted, q).unwrap();
            let got = percentile_in_place(&mut scratch, q).unwrap();
            prop_assert!((expected - got).abs() <= 1e-9 * expected.abs().max(1.0));
        }
    }
}
