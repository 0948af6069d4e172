//! Processor bandwidth (utilisation) as an exact-enough integer: a fraction of one CPU in
//! fixed point with 64 fractional bits, so admission control needs no floating point and a
//! sum of `Q/T` terms is off by less than `N · 2⁻⁶⁴` (task sets at exactly 100 % still fit).

/// A share of the processor: `1.0` is [`Bandwidth::ONE`]. Values above one are representable
/// (an over-committed request) and saturate instead of overflowing.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Bandwidth(u128);

const FRACTION_BITS: u32 = 64;

impl Bandwidth {
    /// No bandwidth.
    pub const ZERO: Bandwidth = Bandwidth(0);
    /// The whole processor.
    pub const ONE: Bandwidth = Bandwidth(1 << FRACTION_BITS);

    /// `numerator / denominator`, rounded down to the next 2⁻⁶⁴; `None` if `denominator` is 0.
    ///
    /// Both below 2³² (any budget and period in µs or kernel ticks of a real system), the
    /// quotient is found as three base-2³² digits with 64-by-64-bit divisions: a 128-bit
    /// division is a library call of thousands of instructions on a 32-bit MCU.
    pub const fn ratio(numerator: u64, denominator: u64) -> Option<Bandwidth> {
        if denominator == 0 {
            return None;
        }
        const DIGIT: u64 = u32::MAX as u64;
        if numerator <= DIGIT && denominator <= DIGIT {
            // numerator · 2⁶⁴ / denominator = q0 · 2⁶⁴ + q1 · 2³² + q2 (rounded down), each
            // remainder below the denominator, so every shifted remainder fits in 64 bits.
            let (q0, r0) = (numerator / denominator, numerator % denominator);
            let (q1, r1) = ((r0 << 32) / denominator, (r0 << 32) % denominator);
            let q2 = (r1 << 32) / denominator;
            return Some(Bandwidth(
                ((q0 as u128) << FRACTION_BITS) | ((q1 as u128) << 32) | q2 as u128,
            ));
        }
        Some(Bandwidth(
            ((numerator as u128) << FRACTION_BITS) / denominator as u128,
        ))
    }

    /// Sum, saturating at the largest representable value.
    pub const fn saturating_add(self, other: Bandwidth) -> Bandwidth {
        Bandwidth(self.0.saturating_add(other.0))
    }

    /// Difference, saturating at zero.
    pub const fn saturating_sub(self, other: Bandwidth) -> Bandwidth {
        Bandwidth(self.0.saturating_sub(other.0))
    }

    /// Parts per million of one processor, rounded to nearest (for messages and reports).
    pub const fn ppm(self) -> u64 {
        let scaled = (self.0 >> 32) * 1_000_000;
        let ppm = (scaled + (1 << 31)) >> 32;
        if ppm > u64::MAX as u128 {
            u64::MAX
        } else {
            ppm as u64
        }
    }

    /// The raw fixed-point value (64 fractional bits).
    pub const fn to_bits(self) -> u128 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_thirds_fit_in_one_processor() {
        let third = Bandwidth::ratio(2, 6).unwrap_or(Bandwidth::ONE);
        let total = third.saturating_add(third).saturating_add(third);
        assert!(total <= Bandwidth::ONE);
        assert!(total.saturating_add(Bandwidth(4)) > Bandwidth::ONE);
    }

    proptest::proptest! {
        /// The digit-by-digit division equals the 128-bit one wherever it is used.
        #[test]
        fn the_32_bit_path_equals_the_128_bit_division(n in 0u64..=u32::MAX as u64, d in 1u64..=u32::MAX as u64) {
            let wide = ((n as u128) << FRACTION_BITS) / d as u128;
            proptest::prop_assert_eq!(Bandwidth::ratio(n, d), Some(Bandwidth(wide)));
        }
    }

    #[test]
    fn zero_denominator_is_rejected() {
        assert_eq!(Bandwidth::ratio(1, 0), None);
    }

    #[test]
    fn ppm_reads_back_common_fractions() {
        assert_eq!(Bandwidth::ratio(3, 8).map(Bandwidth::ppm), Some(375_000));
        assert_eq!(Bandwidth::ONE.ppm(), 1_000_000);
        assert_eq!(Bandwidth::ratio(9, 10).map(Bandwidth::ppm), Some(900_000));
        assert_eq!(Bandwidth::ratio(4, 7).map(Bandwidth::ppm), Some(571_429));
        assert_eq!(
            Bandwidth::ratio(u64::MAX, 1).map(Bandwidth::ppm),
            Some(u64::MAX)
        );
    }
}
