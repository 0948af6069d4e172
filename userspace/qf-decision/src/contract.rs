//! Empirical contracts: the deadline rule (Eq. 4), the window miss rate (Eq. 3) and the
//! hysteresis condition that starts analysis (Eq. 7).

use serde::{Deserialize, Serialize};

/// Every parameter of the contract and of the guarded recovery protocol, named as in the paper.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ContractConfig {
    /// n: invocations per window (20).
    pub window: usize,
    /// ε: tolerated miss rate per window (1%).
    pub tolerance: f64,
    /// k: consecutive violating windows before analysis (3); k = 1 is the paper's ablation.
    pub hysteresis: usize,
    /// P: probation windows pooled before commit or rollback (6).
    pub probation: usize,
    /// Windows after a commit or rollback during which no switch is admitted. The paper names the
    /// guard but not its length; one probation length is the default.
    pub cooldown_windows: usize,
    /// h: MCU utilization kept free (Eq. 5). Not given in the paper; 0.2 by default.
    pub headroom: f64,
    /// E_min: valid samples a profile needs before its p95 counts as evidence.
    pub min_samples: usize,
}

impl Default for ContractConfig {
    fn default() -> Self {
        Self {
            window: 20,
            tolerance: 0.01,
            hysteresis: 3,
            probation: 6,
            cooldown_windows: 6,
            headroom: 0.2,
            min_samples: 200,
        }
    }
}

/// Errors in a contract configuration, each naming the field.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ConfigError {
    #[error("contract field `{field}` = {value} is out of range ({expected})")]
    OutOfRange {
        field: &'static str,
        value: String,
        expected: &'static str,
    },
}

/// Largest window and hysteresis the controller preallocates for (bounds memory and decision cost).
pub const MAX_WINDOW: usize = 10_000;
pub const MAX_HYSTERESIS: usize = 64;

impl ContractConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        let out = |field, value: String, expected| {
            Err(ConfigError::OutOfRange {
                field,
                value,
                expected,
            })
        };
        if !(1..=MAX_WINDOW).contains(&self.window) {
            return out("window", self.window.to_string(), "1..=10000");
        }
        if !(0.0..1.0).contains(&self.tolerance) {
            return out("tolerance", self.tolerance.to_string(), "0 <= ε < 1");
        }
        if !(1..=MAX_HYSTERESIS).contains(&self.hysteresis) {
            return out("hysteresis", self.hysteresis.to_string(), "1..=64");
        }
        if self.probation == 0 {
            return out("probation", self.probation.to_string(), ">= 1");
        }
        if !(0.0..1.0).contains(&self.headroom) {
            return out("headroom", self.headroom.to_string(), "0 <= h < 1");
        }
        Ok(())
    }
}

/// Eq. 4: D = 1.25 · max over domains of the idle, ordinary-caller p99, rounded up to 1 ms.
/// Returns microseconds. `None` when no domain has a p99.
pub fn deadline_rule_us(idle_p99_us: impl IntoIterator<Item = f64>) -> Option<f64> {
    let worst = idle_p99_us
        .into_iter()
        .filter(|p| p.is_finite())
        .fold(None, |acc: Option<f64>, p| {
            Some(acc.map_or(p, |a| a.max(p)))
        })?;
    Some((1.25 * worst / 1000.0).ceil() * 1000.0)
}

/// Eq. 3 for one window: misses counted as wrong outputs or latencies over the deadline.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowCount {
    pub observations: u32,
    pub misses: u32,
}

impl WindowCount {
    /// Counts one invocation; a miss is `!ok ∨ latency > deadline`.
    pub fn record(&mut self, latency_us: f64, ok: bool, deadline_us: f64) -> bool {
        let miss = !ok || latency_us > deadline_us;
        self.observations += 1;
        self.misses += u32::from(miss);
        miss
    }

    /// m̂_w; 0 for an empty window.
    pub fn miss_rate(&self) -> f64 {
        if self.observations == 0 {
            0.0
        } else {
            f64::from(self.misses) / f64::from(self.observations)
        }
    }

    /// The window violates the contract when m̂_w > ε.
    pub fn violates(&self, tolerance: f64) -> bool {
        self.miss_rate() > tolerance
    }

    pub fn add(&mut self, other: WindowCount) {
        self.observations += other.observations;
        self.misses += other.misses;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadline_rule_rounds_up_to_a_whole_millisecond() {
        // 1.25 × 18.81 ms = 23.51 ms → 24 ms: the smallest deadline in the paper's Table II.
        assert_eq!(deadline_rule_us([75.0, 18_810.0]), Some(24_000.0));
        // Exactly on a millisecond stays there.
        assert_eq!(deadline_rule_us([800.0]), Some(1_000.0));
        assert_eq!(deadline_rule_us([]), None);
        assert_eq!(deadline_rule_us([f64::NAN]), None);
    }

    #[test]
    fn a_window_violates_only_above_the_tolerance() {
        let mut window = WindowCount::default();
        for i in 0..20 {
            window.record(if i == 0 { 2_000.0 } else { 10.0 }, true, 1_000.0);
        }
        assert_eq!(window.misses, 1);
        assert!(window.violates(0.01), "1/20 = 5% > 1%");
        assert!(!window.violates(0.05), "5% is not above 5%");
        let mut wrong = WindowCount::default();
        assert!(
            wrong.record(1.0, false, 1_000.0),
            "a wrong output misses even when fast"
        );
    }

    #[test]
    fn configuration_errors_name_the_field() {
        let bad = ContractConfig {
            hysteresis: 0,
            ..ContractConfig::default()
        };
        assert!(bad
            .validate()
            .unwrap_err()
            .to_string()
            .contains("`hysteresis`"));
        assert!(ContractConfig::default().validate().is_ok());
    }
}
