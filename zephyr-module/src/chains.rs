//! Resident chains on Zephyr: qf-chain's table ([`ChainTable`], the one implementation of the
//! control frames: validation, admission, install, start, stop, remove, status, list) over
//! this module's [`ChainExecutor`], whose chain threads are Zephyr threads, one per slot
//! (`CONFIG_QFABRIC_EXECUTOR_MAX_CHAINS`, at most qf-chain's eight), each periodic
//! (`qf_thread_period_set`) with its own CBS, released by its own timer in
//! `qf_thread_deadline_set`, running one job per period and sending only the response.
//!
//! Control frames from Linux (`qf_executor_serve`) and the firmware's own `qf_chain_start` go
//! through the same table. An install's reservation is admitted by qf-sched's bandwidth test
//! over every CBS reservation of the MCU (chains and application threads alike), in one critical
//! section, and held by the slot's thread, created but not started, until the chain is removed:
//! a stopped chain's thread is joined and a fresh one takes its reservation over.
//!
//! Locks: the table, the replay windows and the slots' threads are behind the executor mutex
//! ([`with_control`], thread context: an install runs the template once). What a chain thread
//! publishes (its counters after every job) is behind the qfabric spinlock, taken only for short
//! copies. A chain's own state ([`Chain`]: template, invocation ids, replay window) is in
//! [`CHAINS`], reached by its thread alone while it runs and by the controller otherwise.

use core::cell::UnsafeCell;
use core::ffi::c_int;
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, Ordering};

use qf_abi::chain::{ChainInstall, TEMPLATE_CAPACITY};
use qf_abi::header::offset;
use qf_abi::{AbiError, Problem, Status};
use qf_chain::{
    Chain, ChainExecutor, ChainStats, ChainTable, ChainTiming, ThreadCounters,
    MAX_CHAIN_RESPONSE_LEN,
};
use qf_sched::Bandwidth;
use qf_tasks::{Clock, Replay};

use crate::api::{self, qf_thread_deadline_set};
use crate::config::MAX_CHAINS;
use crate::executor_port::{self, CycleClock};
use crate::port::{self, negative, Errno, KThread, Line, Thread};

// `struct qf_chain_config` and `struct qf_chain_stats` (include/qfabric/executor.h, generated).
use crate::sys::{qf_chain_config as QfChainConfig, qf_chain_stats as QfChainStats};

/// `struct qf_chain_stats` begins with qf-chain's `repr(C)` counters, field for field, then the
/// next invocation id: checked here, so `qf_chain_stats_get` copies the counters as one block.
macro_rules! leading_fields {
    ($($field:ident),*) => {
        const _: () = {
            use core::mem::{offset_of, size_of};
            $(assert!(offset_of!(QfChainStats, $field) == offset_of!(ChainStats, $field));)*
            assert!(offset_of!(QfChainStats, next_invocation) == size_of::<ChainStats>());
            assert!(size_of::<QfChainStats>() == size_of::<ChainStats>() + size_of::<u64>());
        };
    };
}
leading_fields!(
    releases,
    results,
    rejected,
    overruns,
    sent,
    send_failures,
    compute_ns_last,
    compute_ns_max,
    lateness_max
);

/// The Zephyr side of the chain slots, reached under the executor mutex.
pub struct ZephyrChains {
    /// Zephyr priority of the next chain installed (Kconfig's, or `qf_chain_start`'s).
    priority: c_int,
    /// The slot's thread: created (holding the reservation) from install to remove, started
    /// while the chain runs.
    threads: [Option<Thread>; MAX_CHAINS],
    running: [bool; MAX_CHAINS],
    timing: [Option<ChainTiming>; MAX_CHAINS],
}

/// What the executor mutex guards: the dispatcher's replay windows and the chains.
pub struct Control {
    pub replay: Replay,
    pub table: ChainTable,
    pub exec: ZephyrChains,
}

struct Guarded(UnsafeCell<Control>);

// SAFETY: only reached through `with_control`, which holds the executor mutex for the whole
// access.
unsafe impl Sync for Guarded {}

static CONTROL: Guarded = Guarded(UnsafeCell::new(Control {
    replay: Replay::new(),
    table: ChainTable::with_capacity(MAX_CHAINS),
    exec: ZephyrChains {
        priority: 0,
        threads: [None; MAX_CHAINS],
        running: [false; MAX_CHAINS],
        timing: [None; MAX_CHAINS],
    },
}));

/// Runs `f` with the executor mutex held; `None` in interrupt context.
pub fn with_control<R>(f: impl FnOnce(&mut Control) -> R) -> Option<R> {
    if !executor_port::lock() {
        return None;
    }
    // SAFETY: the mutex is held until after `f` returns, so this is the only reference (the
    // mutex is recursive, but nothing called from `f` enters `with_control` again).
    let control = unsafe { &mut *CONTROL.0.get() };
    control.exec.priority = executor_port::chain_priority();
    let result = f(control);
    executor_port::unlock();
    Some(result)
}

/// What a chain thread publishes, per slot, under the qfabric spinlock.
#[derive(Copy, Clone)]
struct Shared {
    /// Relative deadline of each job, in cycles (`qf_thread_deadline_set`'s argument).
    rel: c_int,
    /// The first release this long after start.
    delay_us: u32,
    stats: ChainStats,
    next_invocation: u64,
    counters: ThreadCounters,
}

impl Shared {
    const ZERO: Shared = Shared {
        rel: 0,
        delay_us: 0,
        stats: ChainStats::ZERO,
        next_invocation: 0,
        counters: ThreadCounters {
            budget_exhaustions: 0,
            deadline_misses: 0,
        },
    };
}

struct Published(UnsafeCell<[Shared; MAX_CHAINS]>);

// SAFETY: only reached through `with_published`, which holds the qfabric spinlock (interrupts
// locked, one CPU) for the whole access.
unsafe impl Sync for Published {}

static PUBLISHED: Published = Published(UnsafeCell::new([Shared::ZERO; MAX_CHAINS]));

/// Runs `f` on the published counters with the qfabric spinlock held (copies only).
fn with_published<R>(f: impl FnOnce(&mut [Shared; MAX_CHAINS]) -> R) -> R {
    let key = port::lock();
    // SAFETY: the lock is held until after `f` returns, so this is the only reference.
    let result = f(unsafe { &mut *PUBLISHED.0.get() });
    port::unlock(key);
    result
}

struct ChainCell(UnsafeCell<Option<Chain>>);

// SAFETY: a slot's chain is written by the controller (executor mutex held) before its thread
// starts and taken after the thread has been joined; in between only that thread reaches it
// (thread start and join order the accesses).
unsafe impl Sync for ChainCell {}

/// The running chains' own state, one per slot.
static CHAINS: [ChainCell; MAX_CHAINS] = [const { ChainCell(UnsafeCell::new(None)) }; MAX_CHAINS];

/// Set by a stop, read by the chain thread before each job and each wait.
static STOP: [AtomicBool; MAX_CHAINS] = [const { AtomicBool::new(false) }; MAX_CHAINS];

/// Microseconds as cycles, if they fit the `int` the thread API takes.
fn cycles(us: u32) -> Option<u32> {
    u32::try_from(executor_port::us_to_cycles(us))
        .ok()
        .filter(|&c| c_int::try_from(c).is_ok())
}

impl ZephyrChains {
    /// A fresh thread for `slot` holding the chain's reservation (not started).
    fn reserve_thread(
        &mut self,
        slot: usize,
        timing: &ChainTiming,
    ) -> Result<Bandwidth, qf_sched::Error> {
        let (Some(period), Some(budget), Some(_)) = (
            cycles(timing.period_us),
            cycles(timing.budget_us),
            cycles(timing.deadline_us),
        ) else {
            // Longer than the thread API's `int` of cycles: this executor cannot run it.
            return Err(qf_sched::Error::ZeroDeadline);
        };
        let Ok(index) = u16::try_from(slot) else {
            return Err(qf_sched::Error::UnknownThread);
        };
        if slot >= MAX_CHAINS || self.threads[slot].is_some() {
            return Err(qf_sched::Error::UnknownThread);
        }
        let thread = executor_port::chain_create(index, self.priority)
            .ok_or(qf_sched::Error::UnknownThread)?;
        let reserved = api::chain_reserve(
            thread,
            port::cycles_to_ticks(period),
            port::cycles_to_ticks(budget),
        );
        match reserved {
            Ok(bandwidth) => {
                self.threads[slot] = Some(thread);
                self.timing[slot] = Some(*timing);
                Ok(bandwidth)
            }
            Err(error) => {
                // Never started: aborting it is immediate (and it holds no control block).
                executor_port::chain_abort(thread);
                Err(error)
            }
        }
    }
}

impl ChainExecutor for ZephyrChains {
    fn reserve(&mut self, slot: usize, timing: &ChainTiming) -> Result<Bandwidth, qf_sched::Error> {
        self.reserve_thread(slot, timing)
    }

    fn unreserve(&mut self, slot: usize) {
        if let Some(thread) = self.threads.get_mut(slot).and_then(Option::take) {
            // Not started (the table stops a chain first): the thread-abort hook gives its
            // control block, and so its reservation, back.
            executor_port::chain_abort(thread);
            let _ = executor_port::chain_join(thread, u32::MAX);
        }
        if let Some(timing) = self.timing.get_mut(slot) {
            *timing = None;
        }
        with_published(|published| {
            if let Some(shared) = published.get_mut(slot) {
                *shared = Shared::ZERO;
            }
        });
    }

    fn start(&mut self, slot: usize, chain: Chain, timing: &ChainTiming) -> Result<(), AbiError> {
        if slot >= MAX_CHAINS {
            return Err(cannot(Problem::InvalidValue));
        }
        if self.threads[slot].is_none() {
            // The reservation a stop handed over was lost (the pool or the bound was taken in
            // between): admitted again, or refused as an install would be.
            self.reserve_thread(slot, timing).map_err(refused)?;
        }
        let (Some(thread), Some(rel)) = (self.threads[slot], cycles(timing.deadline_us)) else {
            return Err(cannot(Problem::InvalidValue));
        };
        let (stats, next_invocation) = (chain.stats(), chain.next_invocation());
        // SAFETY: the slot's thread is not started, so nothing else reaches its chain.
        unsafe { *CHAINS[slot].0.get() = Some(chain) };
        with_published(|published| {
            let shared = &mut published[slot];
            shared.rel = rel as c_int;
            shared.delay_us = timing.start_delay_us;
            shared.stats = stats;
            shared.next_invocation = next_invocation;
        });
        STOP[slot].store(false, Ordering::Relaxed);
        self.running[slot] = true;
        executor_port::chain_start(thread);
        // `slot` < MAX_CHAINS <= 8 (Kconfig range).
        executor_port::chain_wait_started(slot as u16);
        Ok(())
    }

    fn stop(&mut self, slot: usize) -> Option<(Chain, ThreadCounters)> {
        let thread = (*self.threads.get(slot)?)?;
        if !self.running[slot] {
            return None;
        }
        STOP[slot].store(true, Ordering::Relaxed);
        // The thread sleeps until its next release at most a period away: woken, it sees the
        // stop and returns. A wake can fall just before it goes to sleep, so it is repeated
        // (each ms, for two periods, at most a second); a job that still runs then is aborted.
        let period_ms = self.timing[slot].map_or(1, |t| t.period_us / 1000);
        let tries = period_ms.saturating_mul(2).saturating_add(2).min(1000);
        let ms = u32::try_from(executor_port::us_to_cycles(1000)).unwrap_or(u32::MAX);
        let joined = (0..tries).any(|_| {
            executor_port::chain_wake(thread);
            executor_port::chain_join(thread, ms)
        });
        if !joined {
            executor_port::chain_abort(thread);
            let _ = executor_port::chain_join(thread, u32::MAX);
        }
        self.running[slot] = false;
        self.threads[slot] = None;
        // SAFETY: the thread has been joined: nothing else reaches its chain.
        let chain = unsafe { (*CHAINS[slot].0.get()).take() }?;
        let counters = with_published(|published| published[slot].counters);
        // The stopped chain keeps its reservation: a fresh thread (not started) takes it over.
        if let Some(timing) = self.timing[slot] {
            let _ = self.reserve_thread(slot, &timing);
        }
        Some((chain, counters))
    }

    fn running(&self, slot: usize) -> Option<(ChainStats, ThreadCounters)> {
        if !*self.running.get(slot)? {
            return None;
        }
        Some(with_published(|published| {
            (published[slot].stats, published[slot].counters)
        }))
    }

    fn bandwidth(&self) -> (Bandwidth, Option<Bandwidth>) {
        api::bandwidth()
    }
}

/// The executor cannot run the chain (EXECUTION_ERROR).
fn cannot(problem: Problem) -> AbiError {
    AbiError {
        status: Status::ExecutionError,
        offset: 0,
        field: "chain thread",
        problem,
    }
}

/// A scheduler refusal as a control status (OVER_BOUND for admission).
fn refused(error: qf_sched::Error) -> AbiError {
    match error {
        qf_sched::Error::AdmissionRejected {
            requested_ppm,
            others_ppm,
            bound_ppm,
        } => AbiError {
            status: Status::OverBound,
            offset: 0,
            field: "budget_us",
            problem: Problem::OverBound {
                requested_ppm,
                others_ppm,
                bound_ppm,
            },
        },
        _ => cannot(Problem::InvalidValue),
    }
}

/// The body of chain thread `slot` (called by executor_port.c's thread entry).
#[no_mangle]
pub extern "C" fn qf_rs_chain_main(slot: u16) {
    let i = usize::from(slot);
    let Some(cell) = CHAINS.get(i) else {
        return;
    };
    let (rel, delay_us) = with_published(|published| (published[i].rel, published[i].delay_us));
    // Its starter waits for this before it returns (and releases the executor mutex).
    executor_port::chain_started(slot);
    // SAFETY: this thread alone reaches its slot's chain until it is joined (see CHAINS).
    let Some(chain) = (unsafe { &mut *cell.0.get() }).as_mut() else {
        return;
    };
    let stop = &STOP[i];
    if delay_us > 0 && !stop.load(Ordering::Relaxed) {
        executor_port::sleep_us(delay_us);
    }
    let me = port::current();
    let overrun = negative(Errno::TimedOut);
    let mut out = [0u8; MAX_CHAIN_RESPONSE_LEN];
    // Sleeps until this chain's next release (its own timer); -ETIMEDOUT: the last job overran
    // its period and this cycle started at once. Any other error means no cycle started.
    let mut status = 0;
    while !stop.load(Ordering::Relaxed) {
        status = qf_thread_deadline_set(me.0, rel);
        if (status != 0 && status != overrun) || stop.load(Ordering::Relaxed) {
            break;
        }
        let before = api::thread_deadline(me);
        let clock: &dyn Clock = &CycleClock;
        let released = executor_port::tick_ns();
        if let Ok(job) = chain.job(released, status == overrun, clock, &mut out) {
            let accepted = out.get(..job.served.len).is_some_and(executor_port::send);
            chain.sent(accepted);
        }
        // A CBS exhaustion postpones the deadline; a job ending past its (last) deadline
        // missed it. Read from this thread's own control block, nothing in the hooks.
        let after = api::thread_deadline(me);
        let missed = after.is_some_and(|deadline| port::now() > deadline);
        with_published(|published| {
            let shared = &mut published[i];
            shared.stats = chain.stats();
            shared.next_invocation = chain.next_invocation();
            shared.counters.budget_exhaustions += u64::from(after != before);
            shared.counters.deadline_misses += u64::from(missed);
        });
    }
    if status != 0 && status != overrun {
        report(format_args!(
            "qfabric: chain slot {slot} ended: qf_thread_deadline_set returned {status}"
        ));
    }
}

/// Prints one line.
fn report(args: core::fmt::Arguments) {
    let mut line = Line::<160>::new();
    let _ = writeln!(line, "{args}");
    port::print(line.as_str());
}

/// Prints why a chain was refused (the table's own rejection).
fn report_refused(error: &AbiError) {
    report(format_args!(
        "qfabric: chain refused: {} at byte {} ({}): {}",
        error.status.name(),
        error.offset,
        error.field,
        error.problem
    ));
}

/// A big-endian `u32` of a frame, 0 where it is too short.
fn be32(frame: &[u8], at: usize) -> u32 {
    frame
        .get(at..at + 4)
        .and_then(|bytes| bytes.try_into().ok())
        .map_or(0, u32::from_be_bytes)
}

/// The slot index of a C chain handle, if it is one.
fn index(chain: c_int) -> Option<usize> {
    usize::try_from(chain).ok().filter(|&i| i < MAX_CHAINS)
}

/// The body of `qf_chain_start` (see include/qfabric/executor.h): an install and a start through
/// the table, as the control frames do. executor_port.c's `qf_chain_start` runs it on the chain
/// control thread, whose stack (`CONFIG_QFABRIC_EXECUTOR_CHAIN_CONTROL_STACK_SIZE`) is sized for
/// it: the table's install and the template's dry run need over 2 KiB more than the caller's
/// frame, which a 3 KiB `main` stack did not have.
///
/// # Safety
/// `config` is NULL or points to a valid `struct qf_chain_config` whose `request` points to
/// `request_len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn qf_rs_chain_start(config: *const QfChainConfig) -> c_int {
    // SAFETY: NULL or a valid config (function contract).
    let Some(config) = (unsafe { config.as_ref() }) else {
        return negative(Errno::Invalid);
    };
    if config.period <= 0 || config.budget < 0 || config.request.is_null() {
        return negative(Errno::Invalid);
    }
    // SAFETY: `request` points to `request_len` readable bytes (function contract).
    let template = unsafe { core::slice::from_raw_parts(config.request, config.request_len) };
    let Ok(template_len) = u16::try_from(template.len()) else {
        return negative(Errno::Invalid);
    };
    if template.len() > TEMPLATE_CAPACITY {
        return negative(Errno::Invalid);
    }
    let mut install = ChainInstall {
        chain_id: 0,
        task_id: be32(template, offset::TASK_ID),
        period_us: executor_port::cycles_to_us(config.period.unsigned_abs()),
        deadline_us: 0,
        budget_us: executor_port::cycles_to_us(config.budget.unsigned_abs()),
        start_delay_us: 0,
        template_len,
        template: [0; TEMPLATE_CAPACITY],
    };
    install.template[..template.len()].copy_from_slice(template);
    let contract_id = be32(template, offset::CONTRACT_ID);
    let started = with_control(|control| {
        // The template's contract id names the chain, unless it is 0 or taken.
        install.chain_id = match contract_id {
            0 => control.table.free_id(),
            id if control.table.slot_of(id).is_some() => control.table.free_id(),
            id => id,
        };
        control.exec.priority = config.priority;
        let slot = control.table.install(&install, &mut control.exec)?;
        if let Err(error) = control.table.start(install.chain_id, &mut control.exec) {
            let _ = control.table.remove(install.chain_id, &mut control.exec);
            return Err(error);
        }
        Ok(slot)
    });
    match started {
        None => negative(Errno::Busy),
        // `slot` < MAX_CHAINS <= 8.
        Some(Ok(slot)) => slot as c_int,
        Some(Err(error)) => {
            report_refused(&error);
            match error.status {
                Status::OverBound => negative(Errno::NoSpace),
                Status::TableFull => negative(Errno::NoMemory),
                _ => negative(Errno::Invalid),
            }
        }
    }
}

/// `qf_chain_stop`: see include/qfabric/executor.h (a remove through the table).
#[no_mangle]
pub extern "C" fn qf_chain_stop(chain: c_int) -> c_int {
    let Some(slot) = index(chain) else {
        return negative(Errno::Invalid);
    };
    let removed = with_control(|control| {
        let chain_id = control.table.chain_id_at(slot)?;
        control.table.remove(chain_id, &mut control.exec).ok()
    });
    match removed {
        None => negative(Errno::Busy),
        Some(None) => negative(Errno::Invalid),
        Some(Some(())) => 0,
    }
}

/// `qf_chain_stats_get`: see include/qfabric/executor.h.
///
/// # Safety
/// `out` is NULL or points to a writable `struct qf_chain_stats`.
#[no_mangle]
pub unsafe extern "C" fn qf_chain_stats_get(chain: c_int, out: *mut QfChainStats) -> c_int {
    let Some(slot) = index(chain).filter(|_| !out.is_null()) else {
        return negative(Errno::Invalid);
    };
    let installed = with_control(|control| control.table.chain_id_at(slot).is_some());
    match installed {
        None => return negative(Errno::Busy),
        Some(false) => return negative(Errno::Invalid),
        Some(true) => {}
    }
    let (stats, next_invocation) =
        with_published(|published| (published[slot].stats, published[slot].next_invocation));
    // SAFETY: `out` is a valid, writable struct qf_chain_stats (function contract), whose
    // leading fields are a `ChainStats` (checked by `leading_fields!`).
    unsafe {
        out.cast::<ChainStats>().write(stats);
        core::ptr::addr_of_mut!((*out).next_invocation).write(next_invocation);
    }
    0
}

/// `qf_chain_thread`: the chain's thread, or NULL.
#[no_mangle]
pub extern "C" fn qf_chain_thread(chain: c_int) -> *mut KThread {
    index(chain)
        .and_then(|slot| with_control(|control| control.exec.threads[slot]).flatten())
        .map_or(core::ptr::null_mut(), |thread| thread.0)
}
