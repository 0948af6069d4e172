//! The chains an MCU holds, and the control frames that change them: install (validation and
//! admission), start, stop, remove, status and list ([`qf_abi::chain`]). Shared by every MCU
//! executor; the executor lends what is its own through [`ChainExecutor`] (the scheduler's
//! admission, threads, timers), and the table never changes anything before every check passed.
//!
//! A slot's life: install (reservation admitted, state INSTALLED) → start (RUNNING) → stop
//! (thread joined, STOPPED, reservation and counters kept) → start again (invocation ids and
//! counters go on) … → remove (stopped first if running, reservation freed, slot free).

use qf_abi::chain::{
    ChainEntry, ChainInstall, ChainList, ChainState, ChainStatus, MAX_LISTED_CHAINS, PERIOD_US_MAX,
    PERIOD_US_MIN,
};
use qf_abi::header::offset;
use qf_abi::{decode_frame, AbiError, Problem, Status, HEADER_LEN};
use qf_sched::Bandwidth;
use qf_tasks::Task;

use crate::chain::{Chain, ChainStats};

/// Chains one MCU holds at most (every one fits in a [`ChainList`]).
pub const MAX_CHAINS: usize = MAX_LISTED_CHAINS;

/// What a validated install asks the executor to run: the chain's timing, in µs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChainTiming {
    pub period_us: u32,
    /// The relative deadline of each job (the period when installed with 0).
    pub deadline_us: u32,
    /// CBS budget per period (0: no server, no reservation).
    pub budget_us: u32,
    /// First release this long after start.
    pub start_delay_us: u32,
}

/// Counters the executor keeps beside the chain's own: scheduler events of its thread.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ThreadCounters {
    /// Times the CBS budget ran out during a job.
    pub budget_exhaustions: u64,
    /// Jobs still running at their absolute deadline.
    pub deadline_misses: u64,
}

/// What an MCU executor lends the table: admission in its one scheduler, and the chain threads.
///
/// `slot` is the chain's index in the table (0..[`MAX_CHAINS`]); an executor keeps one thread
/// per slot. No method is called for a slot in a state it does not expect: `reserve` only for a
/// free slot, `start` only for an installed or stopped one, `stop` only for a running one,
/// `unreserve` only for one that is not running.
pub trait ChainExecutor {
    /// Admits a reservation of `budget_us` per `period_us` in the MCU's admission total
    /// (qf-sched's test over every CBS reservation) and keeps it for `slot`, returning the
    /// bandwidth admitted; or the scheduler's refusal (`AdmissionRejected`), changing nothing.
    fn reserve(&mut self, slot: usize, timing: &ChainTiming) -> Result<Bandwidth, qf_sched::Error>;
    /// Gives the reservation of `slot` back.
    fn unreserve(&mut self, slot: usize);
    /// Starts releasing `chain` on the thread of `slot`. Fails (EXECUTION_ERROR) only if the
    /// executor cannot (no timer, no thread); the slot then stays as it was.
    fn start(&mut self, slot: usize, chain: Chain, timing: &ChainTiming) -> Result<(), AbiError>;
    /// Stops the thread of `slot` and joins it; returns the chain as its last job left it and
    /// its thread counters, or `None` if the thread was already gone (it failed on its own).
    fn stop(&mut self, slot: usize) -> Option<(Chain, ThreadCounters)>;
    /// The counters of a running chain right now.
    fn running(&self, slot: usize) -> Option<(ChainStats, ThreadCounters)>;
    /// Reserved bandwidth of the whole MCU and the admission bound (`None`: admission off).
    fn bandwidth(&self) -> (Bandwidth, Option<Bandwidth>);
}

/// The reservation of a chain thread in a qf-sched scheduler, as [`ChainExecutor::reserve`]
/// makes it: claims `thread`'s slot, gives it its period and CBS budget (in the scheduler's time
/// unit) — the setters run qf-sched's admission test — and returns the bandwidth admitted. A
/// refusal detaches the slot again, so nothing changed.
pub fn reserve_thread<const T: usize, const E: usize>(
    sched: &mut qf_sched::Scheduler<T, E>,
    thread: qf_sched::ThreadId,
    period: u64,
    budget: u64,
) -> Result<Bandwidth, qf_sched::Error> {
    sched.attach(thread)?;
    let configured = sched
        .period_set(thread, period)
        .and_then(|()| sched.cbs_budget_set(thread, budget));
    match configured {
        Ok(()) => Ok(sched
            .thread(thread)
            .map_or(Bandwidth::ZERO, |block| block.admitted())),
        Err(error) => {
            // A slot just claimed has no timer to cancel.
            let _ = sched.detach(&mut NoTimers, thread);
            Err(error)
        }
    }
}

/// A kernel for scheduler calls that touch no timer and start no cycle: claiming, configuring
/// and freeing the slot of a chain thread that is not running.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoTimers;

impl qf_sched::Kernel for NoTimers {
    fn now(&self) -> u64 {
        0
    }
    fn timer_arm(&mut self, _: qf_sched::ThreadId, _: u64) {}
    fn timer_cancel(&mut self, _: qf_sched::ThreadId) {}
    fn deadline_set(&mut self, _: qf_sched::ThreadId, _: u64) {}
    fn suspend_until(&mut self, _: qf_sched::ThreadId, _: u64) {}
}

#[derive(Debug, Clone)]
struct Installed {
    chain_id: u32,
    state: ChainState,
    timing: ChainTiming,
    reserved: Bandwidth,
    /// The chain as it was installed or last stopped (a running chain's lives in the executor).
    chain: Chain,
    threads: ThreadCounters,
}

/// The chain slots of one MCU.
#[derive(Debug, Clone)]
pub struct ChainTable {
    slots: [Option<Installed>; MAX_CHAINS],
    /// Slots in use at most (an executor with fewer chain threads than [`MAX_CHAINS`]).
    capacity: usize,
}

impl Default for ChainTable {
    fn default() -> ChainTable {
        ChainTable::new()
    }
}

impl ChainTable {
    /// No chain installed, [`MAX_CHAINS`] slots.
    pub const fn new() -> ChainTable {
        ChainTable::with_capacity(MAX_CHAINS)
    }

    /// No chain installed, `capacity` slots (at most [`MAX_CHAINS`]): for an executor that has
    /// only that many chain threads. An install beyond them is refused with TABLE_FULL.
    pub const fn with_capacity(capacity: usize) -> ChainTable {
        ChainTable {
            slots: [const { None }; MAX_CHAINS],
            capacity: if capacity < MAX_CHAINS {
                capacity
            } else {
                MAX_CHAINS
            },
        }
    }

    /// The id of the chain installed in `slot`, if any.
    pub fn chain_id_at(&self, slot: usize) -> Option<u32> {
        self.slots.get(slot)?.as_ref().map(|s| s.chain_id)
    }

    /// The lowest chain id from 1 up that no installed chain uses (there are more ids than
    /// slots, so one is always free).
    pub fn free_id(&self) -> u32 {
        (1..=u32::MAX)
            .find(|&id| self.find(id).is_none())
            .unwrap_or(u32::MAX)
    }

    fn find(&self, chain_id: u32) -> Option<usize> {
        self.slots
            .iter()
            .position(|slot| slot.as_ref().is_some_and(|s| s.chain_id == chain_id))
    }

    fn installed(&self, chain_id: u32) -> Result<usize, AbiError> {
        self.find(chain_id).ok_or(AbiError {
            status: Status::NotInstalled,
            offset: HEADER_LEN,
            field: "chain_id",
            problem: Problem::NotInstalled { id: chain_id },
        })
    }

    /// The slot index of an installed chain (executors address their threads by it).
    pub fn slot_of(&self, chain_id: u32) -> Option<usize> {
        self.find(chain_id)
    }

    /// Installs a chain, stopped. Checks, in order, each refusal changing nothing: chain id ≠ 0
    /// (OUT_OF_RANGE), not in use (ID_IN_USE), period, deadline, budget, start delay and
    /// template length in range (OUT_OF_RANGE), the task declared (UNKNOWN_TASK), the template
    /// a request for that task the dispatcher serves with OK, zero past its length
    /// (BAD_TEMPLATE), a free slot (TABLE_FULL), then admission (OVER_BOUND).
    pub fn install<E: ChainExecutor + ?Sized>(
        &mut self,
        install: &ChainInstall,
        executor: &mut E,
    ) -> Result<usize, AbiError> {
        let chain_id = install.chain_id;
        if chain_id == 0 {
            return Err(out_of_range("chain_id", 0, 0, 1, u64::from(u32::MAX)));
        }
        if self.find(chain_id).is_some() {
            return Err(AbiError {
                status: Status::IdInUse,
                offset: HEADER_LEN,
                field: "chain_id",
                problem: Problem::IdInUse { id: chain_id },
            });
        }
        let timing = validate_timing(install)?;
        let Some(task) = Task::from_id(install.task_id) else {
            return Err(AbiError {
                status: Status::UnknownTask,
                offset: HEADER_LEN + 4,
                field: "task_id",
                problem: Problem::NoSuchTask {
                    task_id: install.task_id,
                },
            });
        };
        let chain = validate_template(install, task, timing.period_us)?;
        let free = self
            .slots
            .iter()
            .take(self.capacity)
            .position(Option::is_none);
        let Some(slot) = free else {
            return Err(AbiError {
                status: Status::TableFull,
                offset: 0,
                field: "chain table",
                problem: Problem::TableFull {
                    capacity: self.capacity,
                },
            });
        };
        let reserved = executor.reserve(slot, &timing).map_err(over_bound)?;
        let Some(free) = self.slots.get_mut(slot) else {
            executor.unreserve(slot);
            return Err(executor_failed());
        };
        *free = Some(Installed {
            chain_id,
            state: ChainState::Installed,
            timing,
            reserved,
            chain,
            threads: ThreadCounters::default(),
        });
        Ok(slot)
    }

    /// Starts an installed or stopped chain; a running one is left running (OK).
    pub fn start<E: ChainExecutor + ?Sized>(
        &mut self,
        chain_id: u32,
        executor: &mut E,
    ) -> Result<(), AbiError> {
        let slot = self.installed(chain_id)?;
        let Some(installed) = self.slots.get_mut(slot).and_then(Option::as_mut) else {
            return Ok(());
        };
        if installed.state == ChainState::Running {
            return Ok(());
        }
        executor.start(slot, installed.chain.clone(), &installed.timing)?;
        installed.state = ChainState::Running;
        Ok(())
    }

    /// Stops a running chain (its thread joined, counters kept); others are left as they are.
    pub fn stop<E: ChainExecutor + ?Sized>(
        &mut self,
        chain_id: u32,
        executor: &mut E,
    ) -> Result<(), AbiError> {
        let slot = self.installed(chain_id)?;
        self.stop_slot(slot, executor);
        Ok(())
    }

    fn stop_slot<E: ChainExecutor + ?Sized>(&mut self, slot: usize, executor: &mut E) {
        let Some(installed) = self.slots.get_mut(slot).and_then(Option::as_mut) else {
            return;
        };
        if installed.state != ChainState::Running {
            return;
        }
        // A thread already gone (it failed on its own) left what `ended` recorded.
        let last = executor.stop(slot);
        installed.state = ChainState::Stopped;
        if let Some((chain, threads)) = last {
            self.ended(slot, chain, threads);
        }
    }

    /// The executor's thread of `slot` ended (stopped, or its timer failed): the chain is
    /// stopped with what its last job left.
    pub fn ended(&mut self, slot: usize, chain: Chain, threads: ThreadCounters) {
        if let Some(installed) = self.slots.get_mut(slot).and_then(Option::as_mut) {
            installed.chain = chain;
            installed.threads = threads;
            installed.state = ChainState::Stopped;
        }
    }

    /// Removes a chain, stopping it first if it runs; its reservation is given back.
    pub fn remove<E: ChainExecutor + ?Sized>(
        &mut self,
        chain_id: u32,
        executor: &mut E,
    ) -> Result<(), AbiError> {
        let slot = self.installed(chain_id)?;
        self.remove_slot(slot, executor);
        Ok(())
    }

    fn remove_slot<E: ChainExecutor + ?Sized>(&mut self, slot: usize, executor: &mut E) {
        self.stop_slot(slot, executor);
        executor.unreserve(slot);
        if let Some(entry) = self.slots.get_mut(slot) {
            *entry = None;
        }
    }

    /// Removes every chain (an MCU restart: chains live in its RAM).
    pub fn clear<E: ChainExecutor + ?Sized>(&mut self, executor: &mut E) {
        for slot in 0..MAX_CHAINS {
            if self.slots.get(slot).is_some_and(Option::is_some) {
                self.remove_slot(slot, executor);
            }
        }
    }

    /// One chain's configuration and counters.
    pub fn status<E: ChainExecutor + ?Sized>(
        &self,
        chain_id: u32,
        executor: &E,
    ) -> Result<ChainStatus, AbiError> {
        let slot = self.installed(chain_id)?;
        let Some(installed) = self.slots.get(slot).and_then(Option::as_ref) else {
            return Err(AbiError {
                status: Status::NotInstalled,
                offset: HEADER_LEN,
                field: "chain_id",
                problem: Problem::NotInstalled { id: chain_id },
            });
        };
        let (stats, threads) = match installed.state {
            ChainState::Running => executor
                .running(slot)
                .unwrap_or((installed.chain.stats(), installed.threads)),
            _ => (installed.chain.stats(), installed.threads),
        };
        let timing = installed.timing;
        Ok(ChainStatus {
            chain_id,
            state: installed.state.code(),
            task_id: installed.chain.task().id(),
            period_us: timing.period_us,
            deadline_us: timing.deadline_us,
            budget_us: timing.budget_us,
            reserved_ppm: ppm(installed.reserved),
            releases: stats.releases,
            results: stats.results,
            overruns: stats.overruns,
            budget_exhaustions: threads.budget_exhaustions,
            deadline_misses: threads.deadline_misses,
            lateness_max_us: stats.lateness_max / 1000,
            compute_max_ns: stats.compute_ns_max,
            not_delivered: stats.send_failures,
            rejected: stats.rejected,
        })
    }

    /// Whether any chain runs, and the counters of the first installed chain with its budget
    /// exhaustions (zero when none is installed): an executor's one-line status.
    pub fn summary<E: ChainExecutor + ?Sized>(&self, executor: &E) -> (bool, ChainStats, u64) {
        let running = self
            .slots
            .iter()
            .flatten()
            .any(|s| s.state == ChainState::Running);
        let first = self.slots.iter().enumerate().find_map(|(slot, installed)| {
            let installed = installed.as_ref()?;
            let counters = match installed.state {
                ChainState::Running => executor.running(slot),
                _ => None,
            };
            Some(counters.unwrap_or((installed.chain.stats(), installed.threads)))
        });
        let (stats, threads) = first.unwrap_or_default();
        (running, stats, threads.budget_exhaustions)
    }

    /// Every installed chain, in slot order, and the MCU's reserved bandwidth.
    pub fn list<E: ChainExecutor + ?Sized>(&self, executor: &E) -> ChainList {
        let mut list = ChainList::default();
        for (entry, installed) in list.chains.iter_mut().zip(self.slots.iter().flatten()) {
            *entry = ChainEntry {
                chain_id: installed.chain_id,
                state: installed.state.code(),
            };
            list.count += 1;
        }
        let (reserved, bound) = executor.bandwidth();
        list.reserved_ppm = ppm(reserved);
        list.bound_ppm = bound.map_or(u32::MAX, ppm);
        list
    }
}

/// The chain's timing, every value in its range.
fn validate_timing(install: &ChainInstall) -> Result<ChainTiming, AbiError> {
    let period_us = install.period_us;
    if !(PERIOD_US_MIN..=PERIOD_US_MAX).contains(&period_us) {
        let (min, max) = (PERIOD_US_MIN.into(), PERIOD_US_MAX.into());
        return Err(out_of_range("period_us", 8, period_us.into(), min, max));
    }
    let budget_us = install.budget_us;
    if budget_us > period_us {
        return Err(out_of_range(
            "budget_us",
            16,
            budget_us.into(),
            0,
            period_us.into(),
        ));
    }
    let deadline_us = if install.deadline_us == 0 {
        period_us
    } else {
        install.deadline_us
    };
    let shortest = budget_us.max(1);
    if !(shortest..=period_us).contains(&deadline_us) {
        let (min, max) = (shortest.into(), period_us.into());
        return Err(out_of_range(
            "deadline_us",
            12,
            deadline_us.into(),
            min,
            max,
        ));
    }
    if install.start_delay_us > period_us {
        let delay = install.start_delay_us.into();
        return Err(out_of_range(
            "start_delay_us",
            20,
            delay,
            0,
            period_us.into(),
        ));
    }
    Ok(ChainTiming {
        period_us,
        deadline_us,
        budget_us,
        start_delay_us: install.start_delay_us,
    })
}

/// The chain the template describes, tagged with the chain id.
fn validate_template(
    install: &ChainInstall,
    task: Task,
    period_us: u32,
) -> Result<Chain, AbiError> {
    let capacity = install.template.len() as u64;
    let Some(template) = install.template().filter(|t| t.len() >= HEADER_LEN) else {
        let len = install.template_len.into();
        return Err(out_of_range(
            "template_len",
            24,
            len,
            HEADER_LEN as u64,
            capacity,
        ));
    };
    let bad = |offset: usize, field: &'static str, problem: Problem| AbiError {
        status: Status::BadTemplate,
        offset: HEADER_LEN + 26 + offset,
        field,
        problem,
    };
    let padding = install.template.get(template.len()..).unwrap_or_default();
    if let Some(extra) = padding.iter().position(|&b| b != 0) {
        let offset = template.len() + extra;
        return Err(bad(offset, "template", Problem::InvalidValue));
    }
    let frame = decode_frame(template).map_err(|e| bad(e.offset, e.field, e.problem))?;
    if frame.header.task_id != task.id() {
        let problem = Problem::NoSuchTask {
            task_id: frame.header.task_id,
        };
        return Err(bad(offset::TASK_ID, "template task_id", problem));
    }
    let period_ns = u64::from(period_us) * 1000;
    let chain = Chain::new(template, period_ns).map_err(|e| bad(e.offset, e.field, e.problem))?;
    Ok(chain.tagged(install.chain_id))
}

fn out_of_range(field: &'static str, at: usize, value: u64, min: u64, max: u64) -> AbiError {
    AbiError {
        status: Status::OutOfRange,
        offset: HEADER_LEN + at,
        field,
        problem: Problem::OutOfRange { value, min, max },
    }
}

fn over_bound(error: qf_sched::Error) -> AbiError {
    let problem = match error {
        qf_sched::Error::AdmissionRejected {
            requested_ppm,
            others_ppm,
            bound_ppm,
        } => Problem::OverBound {
            requested_ppm,
            others_ppm,
            bound_ppm,
        },
        _ => Problem::InvalidValue,
    };
    let status = match problem {
        Problem::OverBound { .. } => Status::OverBound,
        _ => Status::ExecutionError,
    };
    AbiError {
        status,
        offset: HEADER_LEN + 16,
        field: "budget_us",
        problem,
    }
}

/// A slot index the table found is out of its own range: cannot happen, answered as the
/// executor's failure rather than a panic (no panic path in an MCU image).
fn executor_failed() -> AbiError {
    AbiError {
        status: Status::ExecutionError,
        offset: 0,
        field: "chain table",
        problem: Problem::InvalidValue,
    }
}

/// Parts per million of one CPU, saturated to `u32`.
fn ppm(bandwidth: Bandwidth) -> u32 {
    u32::try_from(bandwidth.ppm()).unwrap_or(u32::MAX)
}
