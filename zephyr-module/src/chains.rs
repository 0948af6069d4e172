//! Resident chains on Zephyr: a static table of `CONFIG_QFABRIC_EXECUTOR_MAX_CHAINS` slots, each
//! a chain (`qf_chain::Chain`: template, invocation ids, counters) run by its own thread that is
//! periodic (`qf_thread_period_set`) with its own CBS (`qf_thread_cbs_budget_set`): released by
//! its own timer in `qf_thread_deadline_set`, it runs one job and sends only the response.
//!
//! The table is behind the qfabric spinlock (taken only for short copies, never with the
//! scheduler state, never across a job). A running chain's state lives on its thread's stack;
//! the table keeps the counters it publishes after every job.

use core::cell::UnsafeCell;
use core::ffi::c_int;
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, Ordering};

use qf_chain::{Chain, ChainStats, MAX_CHAIN_RESPONSE_LEN};
use qf_tasks::Clock;

use crate::api::{qf_thread_cbs_budget_set, qf_thread_deadline_set, qf_thread_period_set};
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

#[derive(Copy, Clone, PartialEq, Eq)]
enum Phase {
    Free,
    /// Claimed by `qf_chain_start`, thread being configured.
    Starting,
    Running,
    /// `qf_chain_stop` asked the thread to end; it is being joined.
    Stopping,
}

struct Slot {
    phase: Phase,
    /// Handed from `qf_chain_start` to the thread, which keeps it on its stack.
    chain: Option<Chain>,
    thread: Option<Thread>,
    /// Period in cycles, for the thread's `qf_thread_deadline_set` and the stop timeout.
    period: c_int,
    stats: ChainStats,
    next_invocation: u64,
    /// What the thread's first `qf_thread_deadline_set` returned (admission control runs there).
    first_cycle: c_int,
}

impl Slot {
    const FREE: Slot = Slot {
        phase: Phase::Free,
        chain: None,
        thread: None,
        period: 0,
        stats: ChainStats::ZERO,
        next_invocation: 0,
        first_cycle: 0,
    };
}

struct Table(UnsafeCell<[Slot; MAX_CHAINS]>);

// SAFETY: the slots are only reached through `with_table`, which holds the qfabric spinlock
// (interrupts locked, one CPU) for the whole access.
unsafe impl Sync for Table {}

static TABLE: Table = Table(UnsafeCell::new([const { Slot::FREE }; MAX_CHAINS]));

/// Set by `qf_chain_stop`, read by the chain thread after each release.
static STOP: [AtomicBool; MAX_CHAINS] = [const { AtomicBool::new(false) }; MAX_CHAINS];

/// Runs `f` on the table with the qfabric spinlock held. `f` only copies: no qfabric call, no
/// blocking, no job.
fn with_table<R>(f: impl FnOnce(&mut [Slot; MAX_CHAINS]) -> R) -> R {
    let key = port::lock();
    // SAFETY: the lock is held until after `f` returns, so this is the only reference.
    let table = unsafe { &mut *TABLE.0.get() };
    let result = f(table);
    port::unlock(key);
    result
}

/// The slot index of a C chain handle, if it is one.
fn index(chain: c_int) -> Option<usize> {
    usize::try_from(chain).ok().filter(|&i| i < MAX_CHAINS)
}

/// Prints why a chain's request was refused (the dispatcher's own rejection).
fn report_refused(error: &qf_abi::AbiError) {
    let mut line = Line::<160>::new();
    let _ = writeln!(
        line,
        "qfabric: chain request refused: {} at byte {} ({}): {}",
        error.status.name(),
        error.offset,
        error.field,
        error.problem
    );
    port::print(line.as_str());
}

/// `qf_chain_start`: see include/qfabric/executor.h.
///
/// # Safety
/// `config` is NULL or points to a valid `struct qf_chain_config` whose `request` points to
/// `request_len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn qf_chain_start(config: *const QfChainConfig) -> c_int {
    // SAFETY: NULL or a valid config (function contract).
    let Some(config) = (unsafe { config.as_ref() }) else {
        return negative(Errno::Invalid);
    };
    if config.period <= 0 || config.budget < 0 || config.request.is_null() {
        return negative(Errno::Invalid);
    }
    // SAFETY: `request` points to `request_len` readable bytes (function contract).
    let template = unsafe { core::slice::from_raw_parts(config.request, config.request_len) };
    let period_ticks = port::cycles_to_ticks(config.period.unsigned_abs());
    let chain = match Chain::new(template, period_ticks) {
        Ok(chain) => chain,
        Err(error) => {
            report_refused(&error);
            return negative(Errno::Invalid);
        }
    };
    let claimed = with_table(|table| {
        let (i, slot) = table
            .iter_mut()
            .enumerate()
            .find(|(_, slot)| slot.phase == Phase::Free)?;
        *slot = Slot {
            phase: Phase::Starting,
            next_invocation: chain.next_invocation(),
            chain: Some(chain),
            period: config.period,
            ..Slot::FREE
        };
        Some(i)
    });
    let Some(i) = claimed else {
        return negative(Errno::NoMemory);
    };
    STOP[i].store(false, Ordering::Relaxed);
    // `i` < MAX_CHAINS <= 16 (Kconfig range), so the cast cannot truncate.
    let Some(thread) = executor_port::chain_create(i as u16, config.priority) else {
        release(i);
        return negative(Errno::Invalid);
    };
    let mut status = qf_thread_period_set(thread.0, config.period);
    if status == 0 && config.budget > 0 {
        status = qf_thread_cbs_budget_set(thread.0, config.budget);
    }
    if status != 0 {
        // Never started: aborting it gives its control block back (thread-abort hook).
        executor_port::chain_abort(thread);
        release(i);
        return status;
    }
    with_table(|table| {
        table[i].thread = Some(thread);
        table[i].phase = Phase::Running;
    });
    executor_port::chain_start(thread);
    // Admission control runs in the thread's first deadline_set: wait for its verdict.
    executor_port::chain_wait_started(i as u16);
    let first_cycle = with_table(|table| table[i].first_cycle);
    if first_cycle != 0 {
        // The thread has returned already; it only has to be reaped.
        let _ = executor_port::chain_join(thread, u32::MAX);
        release(i);
        return first_cycle;
    }
    i as c_int
}

/// Frees slot `i`.
fn release(i: usize) {
    with_table(|table| table[i] = Slot::FREE);
}

/// The body of chain thread `slot` (called by executor_port.c's thread entry).
#[no_mangle]
pub extern "C" fn qf_rs_chain_main(slot: u16) {
    let i = usize::from(slot);
    let handed = with_table(|table| {
        let slot = table.get_mut(i)?;
        Some((slot.chain.take()?, slot.period))
    });
    let Some((mut chain, period)) = handed else {
        return;
    };
    let me = port::current();
    let overrun = negative(Errno::TimedOut);
    let mut out = [0u8; MAX_CHAIN_RESPONSE_LEN];
    // Sleeps until this chain's next release (its own timer); -ETIMEDOUT: the last job overran
    // its period and this cycle started at once. Any other error (admission control) means no
    // cycle started: the chain ends.
    let mut status = qf_thread_deadline_set(me.0, period);
    let refused = status != 0 && status != overrun;
    with_table(|table| table[i].first_cycle = if refused { status } else { 0 });
    executor_port::chain_started(slot);
    while (status == 0 || status == overrun) && !STOP[i].load(Ordering::Relaxed) {
        let clock: &dyn Clock = &CycleClock;
        if let Ok(job) = chain.job(port::now(), status == overrun, clock, &mut out) {
            let accepted = out.get(..job.served.len).is_some_and(executor_port::send);
            chain.sent(accepted);
        }
        with_table(|table| {
            table[i].stats = chain.stats();
            table[i].next_invocation = chain.next_invocation();
        });
        status = qf_thread_deadline_set(me.0, period);
    }
}

/// `qf_chain_stop`: see include/qfabric/executor.h.
#[no_mangle]
pub extern "C" fn qf_chain_stop(chain: c_int) -> c_int {
    let Some(i) = index(chain) else {
        return negative(Errno::Invalid);
    };
    let stopping = with_table(|table| {
        let slot = &mut table[i];
        match (slot.phase, slot.thread) {
            (Phase::Running | Phase::Stopping, Some(thread)) => {
                slot.phase = Phase::Stopping;
                Some((thread, slot.period))
            }
            _ => None,
        }
    });
    let Some((thread, period)) = stopping else {
        return negative(Errno::Invalid);
    };
    STOP[i].store(true, Ordering::Relaxed);
    let timeout = period.unsigned_abs().saturating_mul(2);
    if !executor_port::chain_join(thread, timeout) {
        return negative(Errno::Busy);
    }
    release(i);
    0
}

/// `qf_chain_stats_get`: see include/qfabric/executor.h.
///
/// # Safety
/// `out` is NULL or points to a writable `struct qf_chain_stats`.
#[no_mangle]
pub unsafe extern "C" fn qf_chain_stats_get(chain: c_int, out: *mut QfChainStats) -> c_int {
    let Some(i) = index(chain).filter(|_| !out.is_null()) else {
        return negative(Errno::Invalid);
    };
    let copied = with_table(|table| {
        let slot = &table[i];
        matches!(slot.phase, Phase::Running | Phase::Stopping)
            .then_some((slot.stats, slot.next_invocation))
    });
    let Some((stats, next_invocation)) = copied else {
        return negative(Errno::Invalid);
    };
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
        .and_then(|i| with_table(|table| table[i].thread))
        .map_or(core::ptr::null_mut(), |thread| thread.0)
}
