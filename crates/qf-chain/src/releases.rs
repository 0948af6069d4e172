//! Release bookkeeping of a periodic chain: job `k` is due at `anchor + k * period`; a job that
//! starts a period or more late is an overrun, after which the executor's periodic EDF restarts
//! the cycle at once, so the schedule is re-anchored there.
//!
//! Times are in the executor's time unit (kernel ticks on Zephyr); only differences are used.

/// One release as the bookkeeping saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Release {
    /// 0 for the first job of the chain, then +1 per job.
    pub index: u64,
    /// When this job was due.
    pub due: u64,
    /// How long after `due` it started (0 if early).
    pub lateness: u64,
    /// The job started a whole period (or more) late, or the executor reported an overrun.
    pub overrun: bool,
}

/// The release schedule of one chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Releases {
    period: u64,
    /// Due time of the next job, once the first one has started.
    next_due: Option<u64>,
    index: u64,
}

impl Releases {
    /// A schedule with this period (> 0; a zero period is treated as 1 so time always advances).
    pub const fn new(period: u64) -> Releases {
        Releases {
            period: if period == 0 { 1 } else { period },
            next_due: None,
            index: 0,
        }
    }

    /// The period.
    pub const fn period(&self) -> u64 {
        self.period
    }

    /// Records that a job started at `now`; `overrun_reported` is the executor's own overrun
    /// signal (Zephyr's `-ETIMEDOUT` from the periodic deadline_set).
    pub fn start(&mut self, now: u64, overrun_reported: bool) -> Release {
        let due = self.next_due.unwrap_or(now);
        let lateness = now.saturating_sub(due);
        let overrun = overrun_reported || lateness >= self.period;
        // After an overrun the periodic EDF starts the new cycle now: anchor there.
        let anchor = if overrun { now } else { due };
        self.next_due = Some(anchor.saturating_add(self.period));
        let release = Release {
            index: self.index,
            due,
            lateness,
            overrun,
        };
        self.index = self.index.saturating_add(1);
        release
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_are_due_one_period_apart_from_the_first_start() {
        let mut releases = Releases::new(100);
        assert_eq!(
            releases.start(1000, false),
            Release {
                index: 0,
                due: 1000,
                lateness: 0,
                overrun: false
            }
        );
        assert_eq!(releases.start(1101, false).due, 1100);
        let third = releases.start(1203, false);
        assert_eq!((third.index, third.due, third.lateness), (2, 1200, 3));
    }

    #[test]
    fn an_early_start_has_no_lateness() {
        let mut releases = Releases::new(100);
        releases.start(0, false);
        assert_eq!(releases.start(99, false).lateness, 0);
    }

    #[test]
    fn a_start_a_period_late_is_an_overrun_and_reanchors_the_schedule() {
        let mut releases = Releases::new(100);
        releases.start(0, false);
        let late = releases.start(250, false);
        assert!(late.overrun);
        assert_eq!(late.lateness, 150);
        assert_eq!(releases.start(350, false).due, 350);
    }

    #[test]
    fn a_reported_overrun_reanchors_even_when_barely_late() {
        let mut releases = Releases::new(100);
        releases.start(0, false);
        let late = releases.start(120, true);
        assert!(late.overrun);
        assert_eq!(releases.start(220, false).due, 220);
    }

    #[test]
    fn a_zero_period_still_moves_forward() {
        let mut releases = Releases::new(0);
        assert_eq!(releases.period(), 1);
        releases.start(5, false);
        assert_eq!(releases.start(6, false).due, 6);
    }
}
