//! A resident chain on the emulated MCU: the QFabric paper's third way out of its negative result
//! (Section VIII-A), a task released by an MCU timer so that only results cross to Linux.
//!
//! The chain itself is `qf_chain::Chain`, the code the Zephyr executor runs; this module gives it
//! what the Zephyr thread gives it there: a periodic release (a `timerfd`, the MCU's own timer,
//! not anything Linux does) and the MCU clock for release times and compute time (nanoseconds
//! since the chain started), the compute stretched as the MCU's [`ComputeModel`] says. Sending the result is the board's job (`board.rs`), since only the
//! board owns the vrings.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::time::{Duration, Instant};

use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
use qf_abi::AbiError;
use qf_chain::{Chain, ChainStats, MAX_CHAIN_RESPONSE_LEN};

use crate::compute::ComputeModel;

/// Shortest period accepted: below this the host's timer and the board loop are the whole
/// measurement.
pub const MIN_PERIOD_US: u64 = 100;
/// Longest period accepted (one hour).
pub const MAX_PERIOD_US: u64 = 3_600_000_000;

/// Why a chain could not start.
#[derive(Debug, thiserror::Error)]
pub enum ChainError {
    #[error("chain: period {0} us is outside {MIN_PERIOD_US}..={MAX_PERIOD_US}")]
    Period(u64),
    #[error("chain: template refused by the dispatcher: {0:?}")]
    Template(AbiError),
    #[error("chain: {what}: {source}")]
    Timer {
        what: &'static str,
        source: nix::Error,
    },
}

/// A validated chain, not yet released (it gets its timer on the board's thread).
#[derive(Debug, Clone)]
pub struct ChainPlan {
    chain: Chain,
    period: Duration,
}

impl ChainPlan {
    /// Checks `period_us` and the request `template` (the dispatcher must serve it with status
    /// OK, as `Chain::new` checks) without starting anything.
    pub fn new(template: &[u8], period_us: u64) -> Result<ChainPlan, ChainError> {
        if !(MIN_PERIOD_US..=MAX_PERIOD_US).contains(&period_us) {
            return Err(ChainError::Period(period_us));
        }
        let period = Duration::from_micros(period_us);
        let chain = Chain::new(template, period.as_nanos() as u64).map_err(ChainError::Template)?;
        Ok(ChainPlan { chain, period })
    }

    /// The period.
    pub fn period(&self) -> Duration {
        self.period
    }
}

/// A running chain: its timer fires every period from the start.
pub struct ResidentChain {
    chain: Chain,
    timer: TimerFd,
    origin: Instant,
    compute: ComputeModel,
}

impl ResidentChain {
    /// Arms the periodic timer; the first job is released one period from now.
    pub fn start(plan: ChainPlan, compute: ComputeModel) -> Result<ResidentChain, ChainError> {
        let timer = TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_CLOEXEC | TimerFlags::TFD_NONBLOCK,
        )
        .map_err(|source| ChainError::Timer {
            what: "creating the timer",
            source,
        })?;
        timer
            .set(
                Expiration::Interval(TimeSpec::from_duration(plan.period)),
                TimerSetTimeFlags::empty(),
            )
            .map_err(|source| ChainError::Timer {
                what: "arming the timer",
                source,
            })?;
        Ok(ResidentChain {
            chain: plan.chain,
            timer,
            origin: Instant::now(),
            compute,
        })
    }

    /// Readable when a release is due.
    pub fn timer_fd(&self) -> BorrowedFd<'_> {
        self.timer.as_fd()
    }

    /// Runs the job of a due release and leaves its response frame in `out`; `None` if the
    /// timer had not fired (a spurious wake-up). Expirations that piled up while the board was
    /// busy are one late job, reported as an overrun, as the Zephyr executor's periodic EDF
    /// restarts the cycle instead of running the missed jobs back to back.
    pub fn release(
        &mut self,
        out: &mut [u8; MAX_CHAIN_RESPONSE_LEN],
    ) -> Result<Option<usize>, ChainError> {
        let mut count = [0u8; 8];
        match nix::unistd::read(self.timer.as_fd().as_raw_fd(), &mut count) {
            Ok(8) => {}
            Ok(_) | Err(nix::Error::EAGAIN) => return Ok(None),
            Err(source) => {
                return Err(ChainError::Timer {
                    what: "reading the timer",
                    source,
                })
            }
        }
        let expirations = u64::from_ne_bytes(count);
        let origin = self.origin;
        let clock = move || origin.elapsed().as_nanos() as u64;
        let now = clock();
        // Only an output shorter than a header fails, and `out` holds a whole response.
        let job = self
            .chain
            .job(now, expirations > 1, &clock, out)
            .map_err(ChainError::Template)?;
        // The MCU is busy for its whole compute time before it can send (the chain's counters
        // keep the host's compute time).
        self.compute.stretch(job.served.task, job.served.compute_ns);
        Ok(Some(job.served.len))
    }

    /// Records whether the transport took the last result.
    pub fn sent(&mut self, accepted: bool) {
        self.chain.sent(accepted);
    }

    /// Counters so far (lateness and compute time in nanoseconds).
    pub fn stats(&self) -> ChainStats {
        self.chain.stats()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qf_abi::{encode_frame, Header, MAX_FRAME_LEN};
    use qf_tasks::{AddRequest, Task};

    fn add_template(id: u64) -> Vec<u8> {
        let mut frame = [0u8; MAX_FRAME_LEN];
        let header = Header::request(Task::Add.id(), Task::Add.effect(), id, 1);
        let len = encode_frame(&header, &AddRequest { a: 2, b: 3 }, &mut frame).unwrap();
        frame[..len].to_vec()
    }

    #[test]
    fn periods_outside_the_range_and_bad_templates_are_refused_with_the_reason() {
        let template = add_template(1 << 32);
        assert!(matches!(
            ChainPlan::new(&template, MIN_PERIOD_US - 1),
            Err(ChainError::Period(99))
        ));
        assert!(ChainPlan::new(&template, MAX_PERIOD_US + 1).is_err());
        let mut truncated = template.clone();
        truncated.pop();
        let e = ChainPlan::new(&truncated, 1000).unwrap_err();
        assert!(e.to_string().contains("template refused"), "{e}");
        assert_eq!(
            ChainPlan::new(&template, 1000).unwrap().period(),
            Duration::from_millis(1)
        );
    }

    #[test]
    fn each_timer_release_runs_one_job_with_the_next_invocation_id() {
        let plan = ChainPlan::new(&add_template(7 << 32), 1000).unwrap();
        let mut chain = ResidentChain::start(plan, ComputeModel::Host).unwrap();
        let mut out = [0u8; MAX_CHAIN_RESPONSE_LEN];
        assert_eq!(
            chain.release(&mut out).unwrap(),
            None,
            "nothing before a period"
        );
        let mut ids = Vec::new();
        while ids.len() < 3 {
            let mut fds = [nix::poll::PollFd::new(
                chain.timer_fd(),
                nix::poll::PollFlags::POLLIN,
            )];
            nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(1000u16)).unwrap();
            if let Some(len) = chain.release(&mut out).unwrap() {
                let frame = qf_abi::decode_frame(&out[..len]).unwrap();
                ids.push(frame.header.invocation_id);
            }
        }
        assert_eq!(ids, [7 << 32, (7 << 32) + 1, (7 << 32) + 2]);
        assert_eq!(chain.stats().releases, 3);
        assert_eq!(chain.stats().results, 3);
        chain.sent(true);
        chain.sent(false);
        assert_eq!((chain.stats().sent, chain.stats().send_failures), (1, 1));
    }
}
