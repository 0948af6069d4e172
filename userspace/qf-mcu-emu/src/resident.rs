//! A resident chain on the emulated MCU: the QFabric paper's third way out of its negative result
//! (Section VIII-A), a task released by an MCU timer so that only results cross to Linux.
//!
//! The chain runs as the Zephyr executor runs it: `qf_chain::Chain` (the chain's jobs) on a
//! periodic `qf-sched` thread with its own CBS when it has a budget — the scheduling core the
//! Zephyr module puts in the kernel, unchanged, behind this emulator's kernel interface
//! ([`McuKernel`]: the MCU clock and one timerfd, not anything Linux does). Like the Zephyr chain
//! thread, each job ends with the thread's periodic `deadline_set`, which releases the next one
//! one period after the last release, or at once with an overrun report when the job ended
//! later than that. The job's compute is stretched as the MCU's [`ComputeModel`] says. Jobs run
//! to completion in the board loop, so a budget running out during a job is handled when the
//! job ends (on the MCU the timer interrupt would do it mid-job, with the same result for a
//! thread alone: a postponed server deadline and a full budget). Sending the result is the
//! board's job (`board.rs`), since only the board owns the vrings.

use std::os::fd::BorrowedFd;
use std::time::Duration;

use qf_abi::AbiError;
use qf_chain::{Chain, ChainStats, MAX_CHAIN_RESPONSE_LEN};
use qf_sched::{Scheduler, ThreadId};

use crate::compute::ComputeModel;
use crate::kernel::McuKernel;

/// Shortest period accepted: below this the host's timer and the board loop are the whole
/// measurement.
pub const MIN_PERIOD_US: u64 = 100;
/// Longest period accepted (one hour).
pub const MAX_PERIOD_US: u64 = 3_600_000_000;

/// The chain's thread: the only slot of the MCU's scheduler.
const THREAD: ThreadId = ThreadId(0);

/// Why a chain could not start or go on.
#[derive(Debug, thiserror::Error)]
pub enum ChainError {
    #[error("chain: period {0} us is outside {MIN_PERIOD_US}..={MAX_PERIOD_US}")]
    Period(u64),
    #[error("chain: budget {budget_us} us is above the period ({period_us} us)")]
    Budget { budget_us: u64, period_us: u64 },
    #[error("chain: template refused by the dispatcher: {0:?}")]
    Template(AbiError),
    #[error("chain: {what}: {source}")]
    Timer {
        what: &'static str,
        source: nix::Error,
    },
    #[error("chain: the scheduler refused {what}: {error}")]
    Scheduler {
        what: &'static str,
        error: qf_sched::Error,
    },
}

/// A validated chain, not yet released (it gets its timer on the board's thread).
#[derive(Debug, Clone)]
pub struct ChainPlan {
    chain: Chain,
    period_us: u64,
    budget_us: u64,
}

impl ChainPlan {
    /// Checks `period_us` and the request `template` (the dispatcher must serve it with status
    /// OK, as `Chain::new` checks) without starting anything. The chain is only periodic; see
    /// [`Self::with_budget`].
    pub fn new(template: &[u8], period_us: u64) -> Result<ChainPlan, ChainError> {
        if !(MIN_PERIOD_US..=MAX_PERIOD_US).contains(&period_us) {
            return Err(ChainError::Period(period_us));
        }
        let period = Duration::from_micros(period_us);
        let chain = Chain::new(template, period.as_nanos() as u64).map_err(ChainError::Template)?;
        Ok(ChainPlan {
            chain,
            period_us,
            budget_us: 0,
        })
    }

    /// Gives the chain's thread a CBS with this budget per period (0: none), as
    /// `qf_chain_config.budget` does on Zephyr. A budget above the period would ask for more
    /// than the whole MCU.
    pub fn with_budget(mut self, budget_us: u64) -> Result<ChainPlan, ChainError> {
        if budget_us > self.period_us {
            return Err(ChainError::Budget {
                budget_us,
                period_us: self.period_us,
            });
        }
        self.budget_us = budget_us;
        Ok(self)
    }

    /// The period.
    pub fn period(&self) -> Duration {
        Duration::from_micros(self.period_us)
    }

    /// The CBS budget per period (zero: no server).
    pub fn budget(&self) -> Duration {
        Duration::from_micros(self.budget_us)
    }
}

/// A running chain: its thread, the scheduler it is the only thread of, and the MCU clock.
pub struct ResidentChain {
    chain: Chain,
    sched: Scheduler<1, 0>,
    kernel: McuKernel,
    period_us: u64,
    /// The last `deadline_set` reported an overrun: the job it released started at once.
    overrun: bool,
    /// Times the CBS budget ran out during a job (B_ROUT: deadline postponed, budget refilled).
    budget_exhaustions: u64,
    compute: ComputeModel,
}

impl ResidentChain {
    /// Starts the chain's thread: its first `deadline_set` starts the first cycle now, so the
    /// first job runs at once (as on Zephyr), the next ones a period apart.
    pub fn start(plan: ChainPlan, compute: ComputeModel) -> Result<ResidentChain, ChainError> {
        let kernel = McuKernel::new().map_err(|source| ChainError::Timer {
            what: "creating the timer",
            source,
        })?;
        let mut sched = Scheduler::new();
        let configure = |sched: &mut Scheduler<1, 0>| -> Result<(), qf_sched::Error> {
            sched.attach(THREAD)?;
            sched.period_set(THREAD, plan.period_us)?;
            sched.cbs_budget_set(THREAD, plan.budget_us)
        };
        configure(&mut sched).map_err(|error| ChainError::Scheduler {
            what: "the chain's thread",
            error,
        })?;
        let mut chain = ResidentChain {
            chain: plan.chain,
            sched,
            kernel,
            period_us: plan.period_us,
            overrun: false,
            budget_exhaustions: 0,
            compute,
        };
        chain.kernel.enter();
        chain.next_cycle()?;
        Ok(chain)
    }

    /// Readable when the thread's next release or its scheduler timer is due.
    pub fn timer_fd(&self) -> BorrowedFd<'_> {
        self.kernel.timer_fd()
    }

    /// Handles what is due on the MCU clock: the scheduler's timer, then a release, whose job
    /// leaves its response frame in `out`. `None` if no job was due (the timer only, or a
    /// spurious wake-up).
    pub fn release(
        &mut self,
        out: &mut [u8; MAX_CHAIN_RESPONSE_LEN],
    ) -> Result<Option<usize>, ChainError> {
        self.kernel
            .acknowledge()
            .map_err(|source| ChainError::Timer {
                what: "reading the timer",
                source,
            })?;
        self.expire_due_timers()?;
        if !self.kernel.take_runnable() {
            self.arm()?;
            return Ok(None);
        }
        self.scheduler("the switch in", |sched, kernel| {
            sched.switched_in(kernel, THREAD)
        })?;
        let kernel = &self.kernel;
        let clock = move || kernel.clock_ns();
        // Only an output shorter than a header fails, and `out` holds a whole response.
        let job = self
            .chain
            .job(clock(), self.overrun, &clock, out)
            .map_err(ChainError::Template)?;
        // The MCU is busy for its whole compute time (the chain's counters keep the host's).
        self.compute.stretch(job.served.task, job.served.compute_ns);
        // A budget that ran out during the job: B_ROUT, before the job's cycle ends.
        self.expire_due_timers()?;
        self.next_cycle()?;
        Ok(Some(job.served.len))
    }

    /// Ends the thread's cycle with its periodic `deadline_set` (which sets the next
    /// activation, or starts the next cycle at once and reports an overrun) and lets it wait.
    fn next_cycle(&mut self) -> Result<(), ChainError> {
        let period = self.period_us;
        let status = self.sched.deadline_set(&mut self.kernel, THREAD, period);
        self.overrun = match status {
            Ok(()) => false,
            Err(qf_sched::Error::PeriodOverrun { .. }) => true,
            Err(error) => {
                return Err(ChainError::Scheduler {
                    what: "the periodic deadline_set",
                    error,
                })
            }
        };
        self.kernel.runnable_now_unless_suspended();
        self.scheduler("the switch out", |sched, kernel| {
            sched.switched_out(kernel, THREAD)
        })?;
        self.arm()
    }

    /// Hands every scheduler timer due by now to `qf-sched` (deadline-miss check, budget
    /// exhaustion), each at the instant it was due, then reads the clock again: a job three
    /// budgets long runs its budget out three times, as the MCU's timer interrupt would have
    /// interrupted it.
    fn expire_due_timers(&mut self) -> Result<(), ChainError> {
        let now = self.kernel.enter();
        while let Some(at) = self.kernel.take_timer_due_by(now) {
            let deadline = self.deadline();
            self.scheduler("the timer expiry", |sched, kernel| {
                sched.timer_expired(kernel, THREAD).map(drop)
            })?;
            // Only an exhaustion moves the deadline of a thread alone (B_ROUT postpones it).
            if self.deadline() != deadline {
                self.budget_exhaustions += 1;
            }
            // A timer re-armed for no later than it fired would never let this loop end; the
            // board loop's next wake-up takes it instead (qf-sched never does this: a refilled
            // budget runs out one budget later).
            if self.kernel.timer_at().is_some_and(|next| next <= at) {
                break;
            }
        }
        self.kernel.enter();
        Ok(())
    }

    /// The thread's absolute deadline, as its control block keeps it.
    fn deadline(&self) -> Option<u64> {
        self.control().map(qf_sched::ControlBlock::deadline)
    }

    fn scheduler(
        &mut self,
        what: &'static str,
        call: impl FnOnce(&mut Scheduler<1, 0>, &mut McuKernel) -> Result<(), qf_sched::Error>,
    ) -> Result<(), ChainError> {
        call(&mut self.sched, &mut self.kernel)
            .map_err(|error| ChainError::Scheduler { what, error })
    }

    fn arm(&self) -> Result<(), ChainError> {
        self.kernel.arm().map_err(|source| ChainError::Timer {
            what: "arming the timer",
            source,
        })
    }

    /// Records whether the transport took the last result.
    pub fn sent(&mut self, accepted: bool) {
        self.chain.sent(accepted);
    }

    /// Counters so far (lateness and compute time in nanoseconds).
    pub fn stats(&self) -> ChainStats {
        self.chain.stats()
    }

    /// Times the CBS budget ran out during a job.
    pub fn budget_exhaustions(&self) -> u64 {
        self.budget_exhaustions
    }

    /// The thread's control block as `qf-sched` keeps it (server budget and deadline, release).
    pub fn control(&self) -> Option<&qf_sched::ControlBlock> {
        self.sched.thread(THREAD)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qf_abi::{encode_frame, Header, MAX_FRAME_LEN};
    use qf_tasks::{AddRequest, FirRequest, Task};

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

    fn fir_x64_template(id: u64) -> Vec<u8> {
        let mut frame = [0u8; MAX_FRAME_LEN];
        let header = Header::request(Task::FirX64.id(), Task::FirX64.effect(), id, 1);
        let request = FirRequest { samples: [100; 32] };
        let len = encode_frame(&header, &request, &mut frame).unwrap();
        frame[..len].to_vec()
    }

    /// Waits (at most 2 s) for the chain's next job and returns its invocation id.
    fn next_job(chain: &mut ResidentChain) -> u64 {
        let mut out = [0u8; MAX_CHAIN_RESPONSE_LEN];
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        while std::time::Instant::now() < deadline {
            let mut fds = [nix::poll::PollFd::new(
                chain.timer_fd(),
                nix::poll::PollFlags::POLLIN,
            )];
            nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(100u8)).unwrap();
            if let Some(len) = chain.release(&mut out).unwrap() {
                return qf_abi::decode_frame(&out[..len])
                    .unwrap()
                    .header
                    .invocation_id;
            }
        }
        panic!("no job within 2 s");
    }

    #[test]
    fn the_first_job_runs_at_the_start_then_one_job_per_period_with_the_next_invocation_id() {
        let plan = ChainPlan::new(&add_template(7 << 32), 2000).unwrap();
        let mut chain = ResidentChain::start(plan, ComputeModel::Host).unwrap();
        let first = chain.control().unwrap().release();
        assert!(first < 1000, "released at the start: {first} µs");
        let ids: Vec<u64> = (0..3).map(|_| next_job(&mut chain)).collect();
        assert_eq!(ids, [7 << 32, (7 << 32) + 1, (7 << 32) + 2]);
        // Each job ended with qf-sched's periodic deadline_set, which set the next cycle's
        // release one period on: the third set the fourth's.
        assert_eq!(chain.control().unwrap().release(), first + 3 * 2000);
        assert_eq!(chain.stats().releases, 3);
        assert_eq!(chain.stats().results, 3);
        assert_eq!(chain.stats().overruns, 0);
        assert_eq!(chain.budget_exhaustions(), 0, "no budget, no server");
        chain.sent(true);
        chain.sent(false);
        assert_eq!((chain.stats().sent, chain.stats().send_failures), (1, 1));
    }

    #[test]
    fn a_job_longer_than_the_period_starts_the_next_at_once_as_an_overrun() {
        // FIR×64 takes the paper's M33 3.2 ms, three times the period.
        let plan = ChainPlan::new(&fir_x64_template(1 << 32), 1000).unwrap();
        let mut chain = ResidentChain::start(plan, ComputeModel::PaperM33).unwrap();
        for _ in 0..3 {
            next_job(&mut chain);
        }
        let stats = chain.stats();
        assert_eq!(stats.releases, 3);
        assert_eq!(stats.overruns, 2, "every job after the first: {stats:?}");
    }

    #[test]
    fn a_job_three_budgets_long_runs_its_budget_out_three_times_and_postpones_the_server_deadline()
    {
        // 3.2 ms of FIR×64 against a 1 ms budget per 20 ms period: on the MCU the budget timer
        // fires at 1, 2 and 3 ms into the job, each time postponing the server deadline by a
        // period (B_ROUT); a host slower than the model only adds exhaustions.
        let plan = ChainPlan::new(&fir_x64_template(1 << 32), 20_000)
            .unwrap()
            .with_budget(1000)
            .unwrap();
        let mut chain = ResidentChain::start(plan, ComputeModel::PaperM33).unwrap();
        let first = chain.control().unwrap().release();
        next_job(&mut chain);
        let exhausted = chain.budget_exhaustions();
        assert!(exhausted >= 3, "{exhausted} exhaustions");
        let control = chain.control().unwrap();
        // The next cycle is released a period after the first; the CBS arrival rule keeps the
        // postponed deadline (too little budget left for that far a deadline).
        assert_eq!(control.release(), first + 20_000);
        assert_eq!(control.deadline(), first + (1 + exhausted) * 20_000);
        assert_eq!(control.budget_max(), 1000);
        assert!(control.budget() < 1000, "{}", control.budget());
    }

    #[test]
    fn a_budget_above_the_period_is_refused_naming_both() {
        let plan = ChainPlan::new(&add_template(1 << 32), 1000).unwrap();
        let e = plan.with_budget(1001).unwrap_err();
        assert_eq!(
            e.to_string(),
            "chain: budget 1001 us is above the period (1000 us)"
        );
    }
}
