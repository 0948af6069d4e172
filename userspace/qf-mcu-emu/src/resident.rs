//! Resident chains on the emulated MCU: the QFabric paper's third way out of its negative result
//! (Section VIII-A), tasks released by MCU timers so that only results cross to Linux.
//!
//! The chains are installed, started, stopped and removed by control frames
//! ([`qf_abi::chain`]) through `qf-chain`'s table, the same code the Zephyr executor runs; this
//! module is the emulator's [`ChainExecutor`]: one `qf-sched` scheduler for every chain thread
//! (its admission test decides installs), and per running chain a [`Runner`], run as the Zephyr
//! executor runs it: `qf_chain::Chain` (the chain's jobs) on a periodic thread with its own CBS
//! when it has a budget, behind this emulator's kernel interface ([`McuKernel`]: the MCU clock
//! and the thread's two pending instants). Like the Zephyr chain thread, each job ends with the
//! thread's periodic `deadline_set`, which releases the next one one period after the last
//! release, or at once with an overrun report when the job ended later than that. The job's
//! compute is stretched as the MCU's [`ComputeModel`] says. Jobs run to completion in the board
//! loop, so a budget running out during a job is handled when the job ends (on the MCU the timer
//! interrupt would do it mid-job, with the same result for a thread alone: a postponed server
//! deadline and a full budget). Sending the result is the board's job (`board.rs`), since only
//! the board owns the vrings.

use nix::sys::time::TimeSpec;
use qf_abi::{AbiError, Problem, Status};
use qf_chain::{
    reserve_thread, Chain, ChainExecutor, ChainStats, ChainTiming, NoTimers, ThreadCounters,
    MAX_CHAINS, MAX_CHAIN_RESPONSE_LEN,
};
use qf_sched::{Bandwidth, Callback, Kernel, Notice, Scheduler, ThreadId};

use crate::compute::ComputeModel;
use crate::kernel::McuKernel;

/// Why a running chain could not go on.
#[derive(Debug, thiserror::Error)]
pub enum ChainError {
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
    #[error("chain: a job failed: {0}")]
    Job(AbiError),
}

/// The miss callback of every chain thread: the expiry's report is what counts, nothing to do.
fn miss_noticed(_: &Notice) {}

/// The MCU's chain threads: one `qf-sched` scheduler (admission bound: the whole CPU; time in
/// µs) and a runner per started chain.
pub struct McuChains {
    sched: Scheduler<MAX_CHAINS, 0>,
    runners: [Option<Runner>; MAX_CHAINS],
    compute: ComputeModel,
    /// Whether anything releases chains (the rpmsg board's loop); without it a start is refused.
    released: bool,
}

impl McuChains {
    /// No chain thread, admission control on with the whole CPU as its bound.
    pub fn new(compute: ComputeModel) -> McuChains {
        let mut sched = Scheduler::new();
        sched.admission_bound_set(Some(Bandwidth::ONE));
        McuChains {
            sched,
            runners: Default::default(),
            compute,
            released: false,
        }
    }

    /// Declares that a board loop releases the chains (call [`Self::release_due`]).
    pub fn set_released(&mut self, released: bool) {
        self.released = released;
    }

    /// The earliest instant a running chain needs the loop (`CLOCK_MONOTONIC`).
    pub fn next_due(&self) -> Option<TimeSpec> {
        self.runners.iter().flatten().filter_map(Runner::due).min()
    }

    /// Runs what is due of every running chain; each job's response goes to `send`, which
    /// says whether the transport took it. A chain whose timer or scheduler fails stops and is
    /// returned with its slot so the table can record it.
    pub fn release_due(
        &mut self,
        send: &mut dyn FnMut(&[u8]) -> bool,
    ) -> Vec<(usize, Chain, ThreadCounters)> {
        let mut ended = Vec::new();
        for slot in 0..MAX_CHAINS {
            let Some(runner) = self.runners[slot].as_mut() else {
                continue;
            };
            let mut out = [0u8; MAX_CHAIN_RESPONSE_LEN];
            match runner.release(&mut self.sched, &mut out) {
                Ok(Some(len)) => {
                    let accepted = send(&out[..len]);
                    runner.chain.sent(accepted);
                }
                Ok(None) => {}
                Err(e) => {
                    log::error!("mcu: chain in slot {slot}: {e}; it stops");
                    if let Some(runner) = self.runners[slot].take() {
                        let counters = runner.counters();
                        let _ = self.sched.cycle_end(&mut NoTimers, runner.thread);
                        ended.push((slot, runner.chain, counters));
                    }
                }
            }
        }
        ended
    }

    /// The control block of a chain thread (tests and the status line).
    pub fn control(&self, slot: usize) -> Option<&qf_sched::ControlBlock> {
        self.sched.thread(thread(slot))
    }
}

fn thread(slot: usize) -> ThreadId {
    // `slot` < MAX_CHAINS (8).
    ThreadId(slot as u16)
}

impl ChainExecutor for McuChains {
    fn reserve(&mut self, slot: usize, timing: &ChainTiming) -> Result<Bandwidth, qf_sched::Error> {
        let id = thread(slot);
        let (period, budget) = (timing.period_us.into(), timing.budget_us.into());
        let admitted = reserve_thread(&mut self.sched, id, period, budget)?;
        let callback = Callback {
            func: miss_noticed,
            arg: slot,
        };
        self.sched.deadline_miss_callback_set(id, Some(callback))?;
        Ok(admitted)
    }

    fn unreserve(&mut self, slot: usize) {
        let _ = self.sched.detach(&mut NoTimers, thread(slot));
    }

    fn start(&mut self, slot: usize, chain: Chain, timing: &ChainTiming) -> Result<(), AbiError> {
        let refused = |what: &'static str| AbiError {
            status: Status::ExecutionError,
            offset: 0,
            field: what,
            problem: Problem::InvalidValue,
        };
        if !self.released {
            return Err(refused("no board loop releases chains (--ivshmem-socket)"));
        }
        let runner = Runner::start(slot, chain, timing, self.compute).map_err(|e| {
            log::error!("mcu: {e}");
            refused("chain thread")
        })?;
        self.runners[slot] = Some(runner);
        Ok(())
    }

    fn stop(&mut self, slot: usize) -> Option<(Chain, ThreadCounters)> {
        let mut runner = self.runners.get_mut(slot)?.take()?;
        let counters = runner.counters();
        // The thread ends: its cycle closes and its timer is cancelled.
        let _ = self.sched.cycle_end(&mut runner.kernel, runner.thread);
        Some((runner.chain, counters))
    }

    fn running(&self, slot: usize) -> Option<(ChainStats, ThreadCounters)> {
        let runner = self.runners.get(slot)?.as_ref()?;
        Some((runner.chain.stats(), runner.counters()))
    }

    fn bandwidth(&self) -> (Bandwidth, Option<Bandwidth>) {
        (self.sched.admitted_total(), self.sched.admission_bound())
    }
}

/// A running chain: its job state, its thread's kernel (MCU clock and pending instants).
pub struct Runner {
    chain: Chain,
    thread: ThreadId,
    kernel: McuKernel,
    deadline_us: u64,
    /// The first cycle starts at the first release (after the start delay).
    cycle_started: bool,
    /// The last `deadline_set` reported an overrun: the job it released started at once.
    overrun: bool,
    counters: ThreadCounters,
    compute: ComputeModel,
}

impl Runner {
    /// Starts the chain's thread: its first release is after the start delay (at once with
    /// none, as on Zephyr), the next ones a period apart.
    fn start(
        slot: usize,
        chain: Chain,
        timing: &ChainTiming,
        compute: ComputeModel,
    ) -> Result<Runner, ChainError> {
        let mut kernel = McuKernel::new().map_err(|source| ChainError::Timer {
            what: "creating the timer",
            source,
        })?;
        let now = kernel.enter();
        kernel.suspend_until(thread(slot), now + u64::from(timing.start_delay_us));
        let runner = Runner {
            chain,
            thread: thread(slot),
            kernel,
            deadline_us: timing.deadline_us.into(),
            cycle_started: false,
            overrun: false,
            counters: ThreadCounters::default(),
            compute,
        };
        runner.arm()?;
        Ok(runner)
    }

    fn due(&self) -> Option<TimeSpec> {
        self.kernel.due()
    }

    fn counters(&self) -> ThreadCounters {
        self.counters
    }

    /// Handles what is due on the MCU clock: the scheduler's timer, then a release, whose job
    /// leaves its response frame in `out`. `None` if no job was due.
    fn release(
        &mut self,
        sched: &mut Scheduler<MAX_CHAINS, 0>,
        out: &mut [u8; MAX_CHAIN_RESPONSE_LEN],
    ) -> Result<Option<usize>, ChainError> {
        self.kernel
            .acknowledge()
            .map_err(|source| ChainError::Timer {
                what: "reading the timer",
                source,
            })?;
        self.expire_due_timers(sched)?;
        if !self.kernel.take_runnable() {
            self.arm()?;
            return Ok(None);
        }
        if !self.cycle_started {
            // The first cycle starts at the first release.
            self.cycle_started = true;
            self.call(sched, "the first deadline_set", |s, k, t, rel| {
                s.deadline_set(k, t, rel)
            })?;
        }
        self.call(sched, "the switch in", |s, k, t, _| s.switched_in(k, t))?;
        let kernel = &self.kernel;
        let clock = move || kernel.clock_ns();
        // Only an output shorter than a header fails, and `out` holds a whole response.
        let job = self
            .chain
            .job(clock(), self.overrun, &clock, out)
            .map_err(ChainError::Job)?;
        // The MCU is busy for its whole compute time (the chain's counters keep the host's).
        self.compute.stretch(job.served.task, job.served.compute_ns);
        // A budget that ran out during the job: B_ROUT, before the job's cycle ends.
        self.expire_due_timers(sched)?;
        self.next_cycle(sched)?;
        Ok(Some(job.served.len))
    }

    /// Ends the thread's cycle with its periodic `deadline_set` (which sets the next
    /// activation, or starts the next cycle at once and reports an overrun) and lets it wait.
    fn next_cycle(&mut self, sched: &mut Scheduler<MAX_CHAINS, 0>) -> Result<(), ChainError> {
        let status = sched.deadline_set(&mut self.kernel, self.thread, self.deadline_us);
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
        self.call(sched, "the switch out", |s, k, t, _| s.switched_out(k, t))?;
        self.arm()
    }

    /// Hands every scheduler timer due by now to `qf-sched` (deadline-miss check, budget
    /// exhaustion), each at the instant it was due, then reads the clock again: a job three
    /// budgets long runs its budget out three times, as the MCU's timer interrupt would have
    /// interrupted it.
    fn expire_due_timers(
        &mut self,
        sched: &mut Scheduler<MAX_CHAINS, 0>,
    ) -> Result<(), ChainError> {
        let now = self.kernel.enter();
        while let Some(at) = self.kernel.take_timer_due_by(now) {
            let deadline = sched.thread(self.thread).map(|b| b.deadline());
            let expiry = sched
                .timer_expired(&mut self.kernel, self.thread)
                .map_err(|error| ChainError::Scheduler {
                    what: "the timer expiry",
                    error,
                })?;
            self.counters.deadline_misses += u64::from(expiry.deadline_missed);
            // Only an exhaustion moves the deadline of a thread alone (B_ROUT postpones it).
            if sched.thread(self.thread).map(|b| b.deadline()) != deadline {
                self.counters.budget_exhaustions += 1;
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

    fn call(
        &mut self,
        sched: &mut Scheduler<MAX_CHAINS, 0>,
        what: &'static str,
        call: impl FnOnce(
            &mut Scheduler<MAX_CHAINS, 0>,
            &mut McuKernel,
            ThreadId,
            u64,
        ) -> Result<(), qf_sched::Error>,
    ) -> Result<(), ChainError> {
        call(sched, &mut self.kernel, self.thread, self.deadline_us)
            .map_err(|error| ChainError::Scheduler { what, error })
    }

    fn arm(&self) -> Result<(), ChainError> {
        self.kernel.arm().map_err(|source| ChainError::Timer {
            what: "arming the timer",
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qf_abi::chain::ChainInstall;
    use qf_abi::{encode_frame, Header, MAX_FRAME_LEN};
    use std::time::Duration;

    /// The chain id the tests install under.
    const CHAIN: u32 = 1;

    fn install(template: &[u8], period_us: u32, budget_us: u32) -> ChainInstall {
        ChainInstall::new(CHAIN, template, period_us, budget_us).unwrap()
    }
    use qf_chain::ChainTable;
    use qf_tasks::{AddRequest, FirRequest, Task};

    fn template<T: serde::Serialize>(task: Task, id: u64, request: &T) -> Vec<u8> {
        let mut frame = [0u8; MAX_FRAME_LEN];
        let header = Header::request(task.id(), task.effect(), id, 1);
        let len = encode_frame(&header, request, &mut frame).unwrap();
        frame[..len].to_vec()
    }

    /// An MCU's chains with one chain installed and started.
    fn started(install: &ChainInstall, compute: ComputeModel) -> (ChainTable, McuChains) {
        let mut table = ChainTable::new();
        let mut chains = McuChains::new(compute);
        chains.set_released(true);
        table.install(install, &mut chains).unwrap();
        table.start(install.chain_id, &mut chains).unwrap();
        (table, chains)
    }

    /// Waits (at most 2 s) for the next job and returns its invocation id.
    fn next_job(chains: &mut McuChains) -> u64 {
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        while std::time::Instant::now() < deadline {
            if let Some(due) = chains.next_due() {
                let now = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).unwrap();
                if due > now {
                    std::thread::sleep(Duration::from(due - now));
                }
            }
            let mut id = None;
            chains.release_due(&mut |frame: &[u8]| {
                id = Some(qf_abi::decode_frame(frame).unwrap().header.invocation_id);
                true
            });
            if let Some(id) = id {
                return id;
            }
        }
        panic!("no job within 2 s");
    }

    #[test]
    fn the_first_job_runs_at_the_start_then_one_job_per_period_with_the_next_invocation_id() {
        // 20 ms: a loaded host does not make a job a period late (an overrun re-anchors).
        let add = template(Task::Add, 7 << 32, &AddRequest { a: 2, b: 3 });
        let (table, mut chains) = started(&install(&add, 20_000, 0), ComputeModel::Host);
        let ids: Vec<u64> = (0..3).map(|_| next_job(&mut chains)).collect();
        assert_eq!(ids, [7 << 32, (7 << 32) + 1, (7 << 32) + 2]);
        let first = chains.control(0).unwrap().release() - 3 * 20_000;
        // Each job ended with qf-sched's periodic deadline_set, which set the next cycle's
        // release one period on.
        assert!(first < 1000, "released at the start: {first} µs");
        let status = table.status(CHAIN, &chains).unwrap();
        assert_eq!(
            (status.releases, status.results, status.overruns),
            (3, 3, 0)
        );
        assert_eq!((status.budget_exhaustions, status.not_delivered), (0, 0));
    }

    #[test]
    fn a_job_longer_than_the_period_starts_the_next_at_once_as_an_overrun() {
        // FIR×64 takes the paper's M33 3.2 ms, three times the period.
        let request = FirRequest { samples: [100; 32] };
        let fir = template(Task::FirX64, 1 << 32, &request);
        let (table, mut chains) = started(&install(&fir, 1000, 0), ComputeModel::PaperM33);
        for _ in 0..3 {
            next_job(&mut chains);
        }
        let status = table.status(CHAIN, &chains).unwrap();
        assert_eq!(status.releases, 3);
        assert_eq!(status.overruns, 2, "every job after the first: {status:?}");
    }

    #[test]
    fn a_job_three_budgets_long_runs_its_budget_out_three_times_and_postpones_the_server_deadline()
    {
        // 3.2 ms of FIR×64 against a 1 ms budget per 100 ms period: on the MCU the budget timer
        // fires at 1, 2 and 3 ms into the job, each time postponing the server deadline by a
        // period (B_ROUT); a host slower than the model only adds exhaustions.
        let request = FirRequest { samples: [100; 32] };
        let fir = template(Task::FirX64, 1 << 32, &request);
        let (table, mut chains) = started(&install(&fir, 100_000, 1000), ComputeModel::PaperM33);
        next_job(&mut chains);
        let status = table.status(CHAIN, &chains).unwrap();
        let exhausted = status.budget_exhaustions;
        assert!(exhausted >= 3, "{exhausted} exhaustions");
        let control = chains.control(0).unwrap();
        let first = control.release() - 100_000;
        // The CBS arrival rule keeps the postponed deadline (too little budget left for that
        // far a deadline).
        assert_eq!(control.deadline(), first + (1 + exhausted) * 100_000);
        assert_eq!(control.budget_max(), 1000);
        assert!(control.budget() < 1000, "{}", control.budget());
    }

    #[test]
    fn without_a_board_loop_a_start_is_refused_and_nothing_changes() {
        let add = template(Task::Add, 1, &AddRequest { a: 2, b: 3 });
        let mut table = ChainTable::new();
        let mut chains = McuChains::new(ComputeModel::Host);
        table
            .install(&install(&add, 1000, 100), &mut chains)
            .unwrap();
        let e = table.start(CHAIN, &mut chains).unwrap_err();
        assert_eq!(e.status, Status::ExecutionError);
        let status = table.status(CHAIN, &chains).unwrap();
        assert_eq!(status.state, qf_abi::chain::ChainState::Installed.code());
        assert_eq!(chains.next_due(), None);
    }
}
