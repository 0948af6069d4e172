//! Time bases of the simulation: real time in nanoseconds (jobs consume CPU in it), the kernel
//! tick the scheduler sees (`k_uptime_ticks`, what qf-sched's `Kernel::now` returns here) and
//! the task set's unit (what files and reports use). All conversions are exact integer
//! arithmetic in `u128`.

/// Converts between nanoseconds, kernel ticks and task-set units.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Clock {
    /// Kernel tick rate.
    pub tick_hz: u64,
    /// Task-set unit in nanoseconds.
    pub unit_ns: u64,
    /// Added to every tick count the scheduler sees (to test behaviour across Zephyr's 32-bit
    /// deadline wrap); 0 normally.
    pub origin_ticks: u64,
}

const NS_PER_S: u128 = 1_000_000_000;

fn saturate(value: u128) -> u64 {
    u64::try_from(value).unwrap_or(u64::MAX)
}

impl Clock {
    /// The tick count (as the scheduler sees it) at real time `ns`: the last tick at or before.
    pub fn ticks_at(&self, ns: u64) -> u64 {
        if let Some(per_tick) = self.whole_ns_per_tick() {
            return (ns / per_tick).saturating_add(self.origin_ticks);
        }
        saturate(ns as u128 * self.tick_hz as u128 / NS_PER_S).saturating_add(self.origin_ticks)
    }

    /// The first tick at or after real time `ns` (when a timeout for `ns` fires).
    pub fn tick_at_or_after(&self, ns: u64) -> u64 {
        let ticks = (ns as u128 * self.tick_hz as u128).div_ceil(NS_PER_S);
        saturate(ticks).saturating_add(self.origin_ticks)
    }

    /// Real time of scheduler tick `ticks` (the first nanosecond at or after it).
    pub fn ns_of_tick(&self, ticks: u64) -> u64 {
        let ticks = ticks.saturating_sub(self.origin_ticks);
        if let Some(per_tick) = self.whole_ns_per_tick() {
            return ticks.saturating_mul(per_tick);
        }
        let ticks = ticks as u128;
        saturate((ticks * NS_PER_S).div_ceil(self.tick_hz as u128))
    }

    /// The tick length when it is a whole number of nanoseconds (the common case: 64-bit
    /// arithmetic then suffices).
    #[inline]
    fn whole_ns_per_tick(&self) -> Option<u64> {
        let ns_per_s = NS_PER_S as u64;
        (ns_per_s % self.tick_hz == 0).then(|| ns_per_s / self.tick_hz)
    }

    /// A duration in whole ticks, rounded up (as Zephyr's `K_MSEC` and friends do).
    pub fn duration_ticks(&self, ns: u64) -> u64 {
        saturate((ns as u128 * self.tick_hz as u128).div_ceil(NS_PER_S))
    }

    /// True when a duration of `ns` is a whole number of ticks.
    pub fn divides(&self, ns: u64) -> bool {
        (ns as u128 * self.tick_hz as u128) % NS_PER_S == 0
    }

    /// `ns` in the task set's unit, as an exact decimal (up to 6 fractional digits).
    pub fn ns_in_units(&self, ns: u64) -> String {
        decimal(ns as u128, self.unit_ns as u128)
    }

    /// A tick duration (budget) in the task set's unit.
    pub fn ticks_in_units(&self, ticks: u64) -> String {
        decimal(
            ticks as u128 * NS_PER_S,
            self.tick_hz as u128 * self.unit_ns as u128,
        )
    }

    /// A tick duration in the task set's unit as a float (for drawing).
    pub fn ticks_to_units_f64(&self, ticks: u64) -> f64 {
        ticks as f64 * 1e9 / (self.tick_hz as f64 * self.unit_ns as f64)
    }

    /// `ns` in the task set's unit as a float (for JSON and drawing).
    pub fn ns_to_units_f64(&self, ns: u64) -> f64 {
        ns as f64 / self.unit_ns as f64
    }
}

/// `num / den` as a decimal string with at most 6 fractional digits, trailing zeros trimmed.
pub fn decimal(num: u128, den: u128) -> String {
    if den == 0 {
        return "inf".into();
    }
    let whole = num / den;
    let mut rem = num % den;
    if rem == 0 {
        return whole.to_string();
    }
    let mut text = format!("{whole}.");
    for _ in 0..6 {
        rem *= 10;
        text.push(char::from(b'0' + (rem / den) as u8));
        rem %= den;
        if rem == 0 {
            break;
        }
    }
    let trimmed = text.trim_end_matches('0').trim_end_matches('.');
    trimmed.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAPER: Clock = Clock {
        tick_hz: 10_000,
        unit_ns: 1_000_000,
        origin_ticks: 0,
    };

    #[test]
    fn ticks_and_nanoseconds_round_trip_on_tick_boundaries() {
        assert_eq!(PAPER.ticks_at(3_000_000), 30);
        assert_eq!(PAPER.ns_of_tick(30), 3_000_000);
        assert_eq!(PAPER.ticks_at(3_050_000), 30);
        assert_eq!(PAPER.duration_ticks(150_001), 2);
    }

    #[test]
    fn a_tick_that_does_not_divide_rounds_timers_up() {
        let clock = Clock {
            tick_hz: 300,
            ..PAPER
        };
        assert_eq!(clock.ns_of_tick(1), 3_333_334);
        assert!(!clock.divides(1_000_000));
        assert!(clock.divides(10_000_000));
    }

    #[test]
    fn decimals_are_exact_or_cut_at_six_digits() {
        assert_eq!(decimal(35, 1), "35");
        assert_eq!(decimal(7, 2), "3.5");
        assert_eq!(decimal(1, 3), "0.333333");
        assert_eq!(PAPER.ticks_in_units(25), "2.5");
    }
}
