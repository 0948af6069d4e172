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
    /// quotient is three base-2³² digits: on a 32-bit core found with 32-bit divisions only
    /// (one instruction on a Cortex-M33 or an RV32IM core, where a 64-bit division is a library
    /// call of ~75 instructions and a 128-bit one of thousands), on a 64-bit one with its own
    /// 64-bit divisions.
    pub const fn ratio(numerator: u64, denominator: u64) -> Option<Bandwidth> {
        if denominator == 0 {
            return None;
        }
        if numerator == 0 {
            // No reservation (what a thread without one asks for): no division.
            return Some(Bandwidth::ZERO);
        }
        const DIGIT: u64 = u32::MAX as u64;
        if numerator <= DIGIT && denominator <= DIGIT {
            let (n, d) = (numerator as u32, denominator as u32);
            return Some(Bandwidth(if cfg!(target_pointer_width = "64") {
                digits_by_u64(n, d)
            } else {
                digits_by_u32(n, d)
            }));
        }
        Some(Bandwidth(
            ((numerator as u128) << FRACTION_BITS) / denominator as u128,
        ))
    }

    /// Whether `numerator / denominator` (as [`Self::ratio`] rounds it) is at most `self`,
    /// decided by multiplication: `⌊n · 2⁶⁴ / d⌋ ≤ h` exactly when `n · 2⁶⁴ < (h + 1) · d`, that
    /// is when `n ≤ ⌊(h · d + d − 1) / 2⁶⁴⌋`. With `n`, `d` below 2³² and `h` below 2⁹⁶ (three
    /// base-2³² digits) that is three 32 × 32-bit multiplications (one instruction each on a
    /// Cortex-M33 or RV32IM core) and no division; otherwise it compares the ratio. `false` if
    /// `denominator` is 0. The admission test of a release uses it, so a release never divides.
    pub const fn admits(self, numerator: u64, denominator: u64) -> bool {
        const DIGIT: u64 = u32::MAX as u64;
        if numerator > DIGIT || denominator > DIGIT || self.0 >> 96 != 0 || denominator == 0 {
            return self.admits_by_ratio(numerator, denominator);
        }
        let (h, d) = (self.0, denominator as u32 as u64);
        // h · d + (d − 1), digit by digit; each partial sum fits 64 bits.
        let low = (h as u32 as u64) * d + (d - 1);
        let middle = ((h >> 32) as u32 as u64) * d + (low >> 32);
        let high = ((h >> 64) as u32 as u64) * d + (middle >> 32);
        numerator <= high
    }

    /// [`Self::admits`] beyond its multiplying range (or by 0): compares the ratio. Out of
    /// line, so the common case keeps a small frame.
    #[cold]
    #[inline(never)]
    const fn admits_by_ratio(self, numerator: u64, denominator: u64) -> bool {
        match Bandwidth::ratio(numerator, denominator) {
            Some(ratio) => ratio.0 <= self.0,
            None => false,
        }
    }

    /// Difference of a value at least `other` (modulo 2¹²⁸ otherwise: never a panic).
    pub const fn wrapping_sub(self, other: Bandwidth) -> Bandwidth {
        Bandwidth(self.0.wrapping_sub(other.0))
    }

    /// Difference, `None` if `other` is larger.
    pub const fn checked_sub(self, other: Bandwidth) -> Option<Bandwidth> {
        match self.0.checked_sub(other.0) {
            Some(difference) => Some(Bandwidth(difference)),
            None => None,
        }
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

/// `n · 2⁶⁴ / d` rounded down, `d > 0`, as three base-2³² digits by 32-bit divisions:
/// `q0 · 2⁶⁴ + q1 · 2³² + q2`, the next two digits dividing the remainder shifted by 32 bits,
/// twice. Normalized (the divisor's top bit set), remainders stay normalized from one digit to
/// the next.
const fn digits_by_u32(n: u32, d: u32) -> u128 {
    // `ratio` never passes 0; `checked_div` keeps a panic path out of the image all the same.
    let Some(q0) = n.checked_div(d) else {
        return 0;
    };
    let shift = d.leading_zeros();
    let divisor = d << shift;
    let (q1, r1) = digit(n.wrapping_sub(q0.wrapping_mul(d)) << shift, divisor);
    let (q2, _) = digit(r1, divisor);
    ((q0 as u128) << FRACTION_BITS) | ((q1 as u128) << 32) | q2 as u128
}

/// [`digits_by_u32`] with 64-bit divisions (each remainder is below the divisor, so every
/// shifted remainder fits 64 bits): one instruction each on a 64-bit core.
const fn digits_by_u64(n: u32, d: u32) -> u128 {
    let (n, d) = (n as u64, d as u64);
    let (q0, r0) = (n / d, n % d);
    let (q1, r1) = ((r0 << 32) / d, (r0 << 32) % d);
    let q2 = (r1 << 32) / d;
    ((q0 as u128) << FRACTION_BITS) | ((q1 as u128) << 32) | q2 as u128
}

/// `(remainder · 2³²) / divisor` and its remainder, for a normalized `divisor` (top bit set) and
/// `remainder < divisor` (so the quotient fits 32 bits): Knuth's algorithm D in base 2¹⁶ with
/// 32-bit divisions only (Hacker's Delight, `divlu`, with a low dividend word of zero). Written
/// out because Rust has no 64-by-32-bit division: `u64 / u64` is `__aeabi_uldivmod` on a
/// 32-bit Arm, and the crates that divide by a 32-bit invariant (`strength_reduce`, ...) need a
/// 64-bit or 128-bit division to set up, the very cost this avoids.
const fn digit(remainder: u32, divisor: u32) -> (u32, u32) {
    const HALF: u32 = 1 << 16;
    // `divisor` is normalized, so its high half has bit 15 set already: setting it again
    // shows the compiler the divisions below cannot divide by zero (no panic path linked).
    let (high, low) = ((divisor >> 16) | (1 << 15), divisor & (HALF - 1));
    // The high half digit, estimated from the divisor's high half, then corrected (at most
    // twice). The low half of the dividend's upper word is zero.
    let mut q1 = remainder / high;
    let mut rhat = remainder - q1 * high;
    while q1 >= HALF || q1 * low > rhat << 16 {
        q1 -= 1;
        rhat += high;
        if rhat >= HALF {
            break;
        }
    }
    // The partial remainder is below the divisor: the wrapped difference is exact.
    let partial = (remainder << 16).wrapping_sub(q1.wrapping_mul(divisor));
    let mut q0 = partial / high;
    let mut rhat = partial - q0 * high;
    while q0 >= HALF || q0 * low > rhat << 16 {
        q0 -= 1;
        rhat += high;
        if rhat >= HALF {
            break;
        }
    }
    (
        (q1 << 16) | q0,
        (partial << 16).wrapping_sub(q0.wrapping_mul(divisor)),
    )
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
            // Both ways of finding the digits, whichever this target uses.
            proptest::prop_assert_eq!(digits_by_u32(n as u32, d as u32), wide);
            proptest::prop_assert_eq!(digits_by_u64(n as u32, d as u32), wide);
        }
    }

    /// Where long division by half-words goes wrong first: divisors of every width (normalized
    /// by up to 31 bits), with low halves at their extremes (the estimate's corrections), and
    /// numerators just below, at and above them.
    #[test]
    fn the_32_bit_path_equals_the_128_bit_division_at_the_edges() {
        let mut divisors = [0u32; 6 * 32];
        for (bit, chunk) in divisors.chunks_mut(6).enumerate() {
            let top = 1u32 << bit;
            chunk.copy_from_slice(&[
                top,
                top | (top >> 1),
                top.wrapping_sub(1).max(1),
                (top | (top - 1)) ^ (top >> 17),
                top | (top.wrapping_sub(1) & 0xffff),
                top | (top.wrapping_sub(1) & 0xffff_0000),
            ]);
        }
        for d in divisors
            .into_iter()
            .chain([u32::MAX, u32::MAX - 1, 0xffff, 0x1_0001])
        {
            for n in [
                0,
                1,
                d - 1,
                d,
                d.saturating_add(1),
                u32::MAX,
                u32::MAX / 3,
                0x8000_0000,
            ] {
                let wide = ((n as u128) << FRACTION_BITS) / d as u128;
                assert_eq!(
                    Bandwidth::ratio(n.into(), d.into()),
                    Some(Bandwidth(wide)),
                    "{n}/{d}"
                );
                assert_eq!(digits_by_u32(n, d), wide, "{n}/{d} by 32-bit divisions");
                assert_eq!(digits_by_u64(n, d), wide, "{n}/{d} by 64-bit divisions");
            }
        }
    }

    proptest::proptest! {
        /// The admission test by multiplication decides as comparing the rounded ratio does.
        #[test]
        fn admits_equals_comparing_the_ratio(
            n in 0u64..=u32::MAX as u64,
            d in 1u64..=u32::MAX as u64,
            room in 0u128..=(3u128 << 64),
            near in proptest::bool::ANY,
        ) {
            let ratio = Bandwidth::ratio(n, d).unwrap_or(Bandwidth::ZERO);
            // Half of the cases put the room within one unit of the ratio, where it matters.
            let room = if near { ratio.0.saturating_add(room % 3).saturating_sub(1) } else { room };
            proptest::prop_assert_eq!(Bandwidth(room).admits(n, d), ratio.0 <= room, "{}/{} in {}", n, d, room);
        }
    }

    #[test]
    fn admits_at_the_edges() {
        for (n, d) in [
            (1, 3),
            (2, 6),
            (u32::MAX as u64, 1),
            (1, u32::MAX as u64),
            (7, 7),
            (0, 5),
        ] {
            let ratio = Bandwidth::ratio(n, d).unwrap_or(Bandwidth::ZERO);
            assert!(ratio.admits(n, d), "{n}/{d} fits in itself");
            if ratio.0 > 0 {
                assert!(
                    !Bandwidth(ratio.0 - 1).admits(n, d),
                    "{n}/{d} not one unit below"
                );
            }
        }
        // Beyond the multiplying range: the ratio is compared.
        assert!(Bandwidth::ONE.admits(1 << 40, 1 << 41));
        assert!(!Bandwidth::ONE.admits((1 << 41) + 1, 1 << 41));
        assert!(Bandwidth(u128::MAX).admits(5, 1));
        assert!(!Bandwidth::ONE.admits(1, 0));
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
