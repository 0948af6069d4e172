//! The executor's C port (`src/executor_port.c`): the dispatcher mutex, the nanosecond clock,
//! the result sink and the chain threads, each wrapped in a safe function as in `port.rs`.

use core::ffi::c_int;

use crate::port::Thread;
// The declarations come from include/qfabric/executor_port.h through bindgen (build.rs).
use crate::sys::{
    qf_executor_port_chain_abort, qf_executor_port_chain_create, qf_executor_port_chain_join,
    qf_executor_port_chain_priority, qf_executor_port_chain_start, qf_executor_port_chain_started,
    qf_executor_port_chain_wait_started, qf_executor_port_chain_wake,
    qf_executor_port_cycles_to_us, qf_executor_port_lock, qf_executor_port_now_ns,
    qf_executor_port_send, qf_executor_port_sleep_us, qf_executor_port_tick_ns,
    qf_executor_port_unlock, qf_executor_port_us_to_cycles,
};

/// Takes the dispatcher mutex; false in interrupt context (the mutex cannot be taken there).
pub fn lock() -> bool {
    // SAFETY: k_mutex_lock on a static mutex; paired with `unlock` by executor.rs.
    unsafe { qf_executor_port_lock() == 0 }
}

/// Releases the dispatcher mutex taken by a successful [`lock`].
pub fn unlock() {
    // SAFETY: only called after `lock` returned true, by the same thread.
    unsafe { qf_executor_port_unlock() }
}

/// The hardware cycle counter in nanoseconds (monotonic, arbitrary origin).
pub fn now_ns() -> u64 {
    // SAFETY: reads the cycle counter; no arguments.
    unsafe { qf_executor_port_now_ns() }
}

/// The executor's clock for `qf_tasks::serve`: the hardware cycle counter.
pub struct CycleClock;

impl qf_tasks::Clock for CycleClock {
    fn now_ns(&self) -> u64 {
        now_ns()
    }
}

/// Hands a frame to the sink; true if the transport took it.
pub fn send(frame: &[u8]) -> bool {
    // SAFETY: pointer and length of a valid slice; the sink copies it before returning.
    unsafe { qf_executor_port_send(frame.as_ptr(), frame.len()) == 0 }
}

/// Creates (not starts) chain thread `slot` at `priority`; `None` for an invalid priority.
pub fn chain_create(slot: u16, priority: c_int) -> Option<Thread> {
    // SAFETY: `slot` < CONFIG_QFABRIC_EXECUTOR_MAX_CHAINS (chains.rs only passes table indices)
    // and the slot's thread is not running (the table marks it busy until it is joined).
    let thread = unsafe { qf_executor_port_chain_create(slot, priority) };
    (!thread.is_null()).then_some(Thread(thread))
}

/// Starts a thread made by [`chain_create`].
pub fn chain_start(thread: Thread) {
    // SAFETY: `thread` was created by chain_create and not started yet.
    unsafe { qf_executor_port_chain_start(thread.0) }
}

/// Chain thread `slot` tells its starter that its first cycle began (or was refused).
pub fn chain_started(slot: u16) {
    // SAFETY: `slot` is a table index whose thread was made by chain_create.
    unsafe { qf_executor_port_chain_started(slot) }
}

/// Waits until chain thread `slot` has called [`chain_started`].
pub fn chain_wait_started(slot: u16) {
    // SAFETY: as for `chain_started`; called by the starter, never in an interrupt.
    unsafe { qf_executor_port_chain_wait_started(slot) }
}

/// Aborts a chain thread that could not be configured (never started).
pub fn chain_abort(thread: Thread) {
    // SAFETY: `thread` was created by chain_create; aborting an unstarted thread is allowed.
    unsafe { qf_executor_port_chain_abort(thread.0) }
}

/// Waits up to `cycles` for a chain thread to exit; true once it has.
pub fn chain_join(thread: Thread, cycles: u32) -> bool {
    // SAFETY: `thread` was created by chain_create; joining from another thread is allowed.
    unsafe { qf_executor_port_chain_join(thread.0, cycles) == 0 }
}

/// Cuts a chain thread's sleep short (a stop is due); nothing if it is not sleeping.
pub fn chain_wake(thread: Thread) {
    // SAFETY: `thread` was created by chain_create; k_wakeup on any thread is allowed.
    unsafe { qf_executor_port_chain_wake(thread.0) }
}

/// Sleeps `us` microseconds (a chain's start delay), or until [`chain_wake`].
pub fn sleep_us(us: u32) {
    // SAFETY: k_usleep on the calling thread; no pointers.
    unsafe { qf_executor_port_sleep_us(us) }
}

/// Kernel time in nanoseconds at tick resolution (the chains' release clock).
pub fn tick_ns() -> u64 {
    // SAFETY: reads the tick count; no arguments.
    unsafe { qf_executor_port_tick_ns() }
}

/// Microseconds as hardware cycles (rounded up).
pub fn us_to_cycles(us: u32) -> u64 {
    // SAFETY: a conversion; no pointers.
    unsafe { qf_executor_port_us_to_cycles(us) }
}

/// Hardware cycles as microseconds (rounded up).
pub fn cycles_to_us(cycles: u32) -> u32 {
    // SAFETY: a conversion; no pointers.
    unsafe { qf_executor_port_cycles_to_us(cycles) }
}

/// The Zephyr priority of chains installed from Linux (CONFIG_QFABRIC_EXECUTOR_CHAIN_PRIORITY).
pub fn chain_priority() -> c_int {
    // SAFETY: returns a Kconfig constant.
    unsafe { qf_executor_port_chain_priority() }
}
