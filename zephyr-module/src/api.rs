//! The C entry points: the qf_* API (also behind the patched kernel's syscalls), the
//! context-switch hooks, the timer expiry and thread exit. Each one takes the lock, runs one
//! `qf-sched` operation, releases the lock and then carries out what had to wait (sleeping,
//! throttling, rescheduling, deadline-miss callbacks).

use core::ffi::{c_int, c_void};

use qf_sched::{Callback, Error, ThreadId};

use crate::config::CBS;
use crate::kernel::{Deferred, ZephyrKernel};
use crate::port::{self, KThread, MissCallbackFn, Thread};
use crate::state::{locked_state, miss_reported, with_state, MissCallback, State};

use crate::port::{negative, Errno};

/// A scheduler result as a C status (0 or a negative errno of this image's libc).
fn status(result: Result<(), Error>) -> c_int {
    match result {
        Ok(()) => 0,
        Err(e) => negative(errno_of(e)),
    }
}

/// The one mapping of `qf-sched` errors to errno (qf-sched has no errno numbers of its own:
/// they differ between C libraries, so the values come from this image's libc, see port.c).
fn errno_of(error: Error) -> Errno {
    match error {
        Error::UnknownThread | Error::ZeroDeadline => Errno::Invalid,
        Error::AlreadyAttached => Errno::Busy,
        Error::PeriodOverrun { .. } => Errno::TimedOut,
        Error::AdmissionRejected { .. } => Errno::NoSpace,
    }
}

/// A duration argument in cycles, as ticks; negative durations are invalid.
fn ticks(cycles: c_int) -> Result<u64, c_int> {
    u32::try_from(cycles)
        .map(port::cycles_to_ticks)
        .map_err(|_| negative(Errno::Invalid))
}

/// The slot of `thread`, attaching a fresh control block if it has none.
fn attach(state: &mut State, thread: Thread) -> Result<ThreadId, c_int> {
    if thread.0.is_null() {
        return Err(negative(Errno::Invalid));
    }
    if let Some(id) = state.threads.find(thread) {
        return Ok(id);
    }
    let id = state
        .threads
        .claim(thread)
        .ok_or_else(|| negative(Errno::NoMemory))?;
    match state.sched.attach(id) {
        Ok(()) => Ok(id),
        Err(e) => {
            state.threads.release(id);
            Err(negative(errno_of(e)))
        }
    }
}

/// Runs a setter on `thread`'s control block (attached on first use).
fn configure(thread: *mut KThread, set: impl FnOnce(&mut State, ThreadId) -> c_int) -> c_int {
    with_state(|state| match attach(state, Thread(thread)) {
        Ok(id) => set(state, id),
        Err(errno) => errno,
    })
}

/// `k_thread_deadline_set` / `qf_thread_deadline_set`: see include/qfabric/qfabric.h.
#[no_mangle]
pub extern "C" fn qf_thread_deadline_set(thread: *mut KThread, deadline: c_int) -> c_int {
    let thread = Thread(thread);
    let caller = port::current();
    let mut deferred = Deferred::default();
    let entered = with_state(|state| {
        let id = state.threads.find(thread)?;
        if thread != caller {
            // Periods and budgets are the thread's own business: only it starts its cycles.
            return Some(negative(Errno::Invalid));
        }
        let rel = match ticks(deadline) {
            Ok(rel) => rel,
            Err(errno) => return Some(errno),
        };
        // The job is released when the call starts, as upstream's k_thread_deadline_set reads
        // the cycle counter first, not once the admission test (when a period-less CBS
        // thread's terms change) is done.
        let mut kernel = ZephyrKernel::api_call(&state.threads, caller, port::now(), &mut deferred);
        Some(status(state.sched.deadline_set(&mut kernel, id, rel)))
    });
    match entered {
        Some(errno) => {
            deferred.run();
            errno
        }
        None => {
            // No control block: upstream Zephyr's EDF, unchanged.
            port::deadline_set_relative(thread, deadline);
            0
        }
    }
}

/// `k_thread_period_set` / `qf_thread_period_set`.
#[no_mangle]
pub extern "C" fn qf_thread_period_set(thread: *mut KThread, period: c_int) -> c_int {
    match ticks(period) {
        Ok(period) => configure(thread, |state, id| {
            status(state.sched.period_set(id, period))
        }),
        Err(errno) => errno,
    }
}

/// `k_thread_cbs_budget_set` / `qf_thread_cbs_budget_set`: -ENOTSUP without CONFIG_QFABRIC_CBS
/// (that kernel has no switch hooks to pause and resume a budget).
#[no_mangle]
pub extern "C" fn qf_thread_cbs_budget_set(thread: *mut KThread, budget: c_int) -> c_int {
    if !CBS {
        return negative(Errno::NotSupported);
    }
    match ticks(budget) {
        Ok(budget) => configure(thread, |state, id| {
            status(state.sched.cbs_budget_set(id, budget))
        }),
        Err(errno) => errno,
    }
}

/// `qf_thread_wcet_set`: WCET of a periodic thread, for admission control.
#[no_mangle]
pub extern "C" fn qf_thread_wcet_set(thread: *mut KThread, wcet: c_int) -> c_int {
    match ticks(wcet) {
        Ok(wcet) => configure(thread, |state, id| status(state.sched.wcet_set(id, wcet))),
        Err(errno) => errno,
    }
}

/// `k_thread_deadline_miss_callback_set` / `qf_thread_deadline_miss_callback_set`.
#[no_mangle]
pub extern "C" fn qf_thread_deadline_miss_callback_set(
    thread: *mut KThread,
    func: Option<MissCallbackFn>,
    arg: *mut c_void,
) -> c_int {
    configure(thread, |state, id| {
        state.miss_callbacks[id.index()] = func.map(|func| MissCallback { func, arg });
        // qf-sched only needs a callback to arm its check; the C one runs from the expiry's
        // report (qf_rs_timer_expired), after the lock.
        let report = func.map(|_| Callback {
            func: miss_reported,
            arg: id.index(),
        });
        status(state.sched.deadline_miss_callback_set(id, report))
    })
}

/// The slot (CSV thread column) of `thread`, or -1.
#[no_mangle]
pub extern "C" fn qf_thread_slot(thread: *mut KThread) -> c_int {
    with_state(|state| {
        state
            .threads
            .find(Thread(thread))
            .map_or(-1, |id| c_int::from(id.0))
    })
}

/// Context switch: `thread` (the new `_current`) is switched in (SWT_TO); `control` is its
/// control word if the caller read it (see port.h). When the thread switched out had a control
/// block, its hook already read the clock for this switch (a few microseconds ago, at most a
/// tick boundary ago): that tick is used instead of another read.
#[no_mangle]
pub extern "C" fn z_qf_switched_in(thread: *mut KThread, control: usize) {
    with_state(|state| {
        let same_switch = port::switch_tick_take_valid();
        if let Some(id) = state.threads.find_switching(Thread(thread), control) {
            let now = if same_switch {
                state.switch_tick
            } else {
                port::now()
            };
            let mut kernel = ZephyrKernel::in_scheduler(&state.threads, now);
            let _ = state.sched.switched_in(&mut kernel, id);
            state.switches.record(|| now, id, true);
        }
    });
}

/// Context switch: `thread` (still `_current`) is switched away (SWT_AY); `control` as for
/// [`z_qf_switched_in`].
#[no_mangle]
pub extern "C" fn z_qf_switched_out(thread: *mut KThread, control: usize) {
    with_state(|state| {
        if let Some(id) = state.threads.find_switching(Thread(thread), control) {
            let now = port::now();
            let mut kernel = ZephyrKernel::in_scheduler(&state.threads, now);
            let _ = state.sched.switched_out(&mut kernel, id);
            state.switch_tick = now;
            port::switch_tick_set_valid();
            state.switches.record(|| state.switch_tick, id, false);
        }
    });
}

/// What the expiry entries return when the expiring timer is not wanted again (qf-sched never
/// aims a timer at tick 0).
const NO_REARM: u64 = 0;

/// A slot's one-shot timer fired (timer interrupt) at tick `now`, aimed at that tick and not
/// re-aimed since: deadline-miss check, budget exhaustion. port.c calls it with the lock held
/// and arms the timer again itself, for the tick returned (see port.h): it has the timer at
/// hand, and its lock then covers both the checks and the new aim. The kernel actions happen
/// under the lock (see kernel.rs); only the C deadline-miss callback waits for its release.
#[no_mangle]
pub extern "C" fn qf_rs_timer_expired(slot: u16, now: u64) -> u64 {
    // SAFETY: port.c's expiry holds the lock across this call, and nothing here takes it.
    let state = unsafe { locked_state() };
    let id = ThreadId(slot);
    let mut kernel = ZephyrKernel::timer(&state.threads, id, now);
    // The expiry's report is a value the compiler sees: where it cannot have found a miss (a
    // budget exhaustion without one) the test goes altogether.
    let Ok(expiry) = state.sched.timer_expired(&mut kernel, id) else {
        return NO_REARM;
    };
    // Where the checks aimed the timer (the kernel above leaves the expiring one to port.c).
    let rearm = expiry.timer_target().unwrap_or(NO_REARM);
    if expiry.deadline_missed {
        miss_due(state, id);
    }
    rearm
}

/// A deadline miss was found: leaves its C callback, if any, for [`qf_rs_miss_report`], which
/// port.c calls once it has released the lock.
#[cold]
#[inline(never)]
fn miss_due(state: &mut State, id: ThreadId) {
    if let Some(callback) = state.miss_callbacks.get(id.index()).copied().flatten() {
        state.miss_due = Some((callback, state.threads.thread(id)));
        port::expiry_miss_due_set();
    }
}

/// Runs the deadline-miss callback the last expiry left (port.c calls it once it has released
/// the lock, when `qf_expiry_miss_due` says so).
#[no_mangle]
pub extern "C" fn qf_rs_miss_report() {
    if let Some((callback, thread)) = with_state(|state| state.miss_due.take()) {
        port::miss_callback(callback.func, thread, callback.arg);
    }
}

/// A slot's one-shot timer fired at tick `now` after the scheduler aimed it again, not
/// earlier, while it was pending (port.c, lock held as for [`qf_rs_timer_expired`]): it may
/// be early. Then it is set again for the scheduler's instant, without the checks, none of
/// which can be due before it (the scheduler's timer target, see qf-sched); else it is
/// [`qf_rs_timer_expired`]. Apart from that entry so that the common expiry (aimed once, due)
/// does not pay for the test.
#[no_mangle]
pub extern "C" fn qf_rs_timer_reaimed(slot: u16, now: u64) -> u64 {
    // SAFETY: port.c's expiry holds the lock across this call, and nothing here takes it.
    let state = unsafe { locked_state() };
    match state
        .sched
        .thread(ThreadId(slot))
        .and_then(|block| block.timer_target())
    {
        Some(target) if now < target => target,
        // A call, not the checks inlined a second time: with two copies the compiler would
        // keep them out of line, and the common expiry would pay a call.
        _ => qf_rs_timer_expired(slot, now),
    }
}

/// `thread` is exiting (upstream thread_abort_hook): its control block returns to the pool.
#[no_mangle]
pub extern "C" fn qf_rs_thread_exit(thread: *mut KThread) {
    with_state(|state| {
        if let Some(id) = state.threads.find(Thread(thread)) {
            let mut kernel = ZephyrKernel::in_scheduler(&state.threads, port::now());
            let _ = state.sched.detach(&mut kernel, id);
            port::slot_release(id.0);
            state.threads.release(id);
            state.miss_callbacks[id.index()] = None;
        }
    });
}

/// A resident chain's reservation (`qf_chain::ChainExecutor::reserve`): gives `thread` (created,
/// not started, without a control block) a control block, its period and its CBS budget in
/// ticks, in one critical section, so qf-sched's admission test sees every reservation of the
/// MCU as it is. Returns the bandwidth admitted; a refusal (`AdmissionRejected`, or
/// `UnknownThread` when the pool is full) leaves no control block behind.
#[cfg(feature = "executor")]
pub fn chain_reserve(
    thread: Thread,
    period: u64,
    budget: u64,
) -> Result<qf_sched::Bandwidth, Error> {
    with_state(|state| {
        if thread.0.is_null() || state.threads.find(thread).is_some() {
            return Err(Error::AlreadyAttached);
        }
        let id = state.threads.claim(thread).ok_or(Error::UnknownThread)?;
        let reserved = qf_chain::reserve_thread(&mut state.sched, id, period, budget);
        if reserved.is_err() {
            state.threads.release(id);
        }
        reserved
    })
}

/// The absolute deadline (ticks) of `thread`'s current cycle, if it has a control block: a
/// chain thread reads its own before and after each job (a CBS exhaustion postpones it).
#[cfg(feature = "executor")]
pub fn thread_deadline(thread: Thread) -> Option<u64> {
    with_state(|state| {
        let id = state.threads.find(thread)?;
        state.sched.thread(id).map(|block| block.deadline())
    })
}

/// The reserved bandwidth of the whole MCU and the admission bound (`None`: admission off).
#[cfg(feature = "executor")]
pub fn bandwidth() -> (qf_sched::Bandwidth, Option<qf_sched::Bandwidth>) {
    with_state(|state| (state.sched.admitted_total(), state.sched.admission_bound()))
}
