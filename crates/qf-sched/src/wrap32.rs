//! Zephyr keeps a thread's EDF deadline as a 32-bit `int` and orders two deadlines by the sign
//! of their wrapping difference, so the run queue stays correct when the cycle counter wraps.
//! `qf-sched` keeps 64-bit times; these helpers give the exact view an adapter must hand Zephyr
//! and the comparison Zephyr will make, so both sides agree.

/// The 32-bit value Zephyr stores for a 64-bit absolute deadline (its low 32 bits, as `int`).
pub const fn deadline32(deadline: u64) -> i32 {
    deadline as u32 as i32
}

/// `true` when deadline `a` is strictly earlier than `b` under Zephyr's rule
/// `(int)(a - b) < 0` on the truncated values.
///
/// Agrees with `a < b` on the full 64-bit values whenever the two are less than 2³¹ units apart,
/// whatever their absolute magnitude (tested across the 2³² wrap).
pub const fn deadline_precedes(a: u64, b: u64) -> bool {
    (deadline32(a).wrapping_sub(deadline32(b))) < 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn earlier_deadline_precedes_across_the_wrap() {
        let before_wrap = (1u64 << 32) - 3;
        let after_wrap = (1u64 << 32) + 5;
        assert!(deadline_precedes(before_wrap, after_wrap));
        assert!(!deadline_precedes(after_wrap, before_wrap));
        assert!(!deadline_precedes(after_wrap, after_wrap));
    }

    proptest! {
        #[test]
        fn agrees_with_u64_order_within_half_the_range(base in any::<u64>(), gap in 0u64..(1 << 31)) {
            let a = base;
            let b = base.wrapping_add(gap);
            prop_assume!(b >= a);
            prop_assert_eq!(deadline_precedes(a, b), a < b);
            prop_assert!(!deadline_precedes(b, a));
        }
    }
}
