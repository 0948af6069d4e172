//! The executor's C port (`src/executor_port.c`): the dispatcher mutex, the nanosecond clock,
//! the result sink and the chain threads, each wrapped in a safe function as in `port.rs`.

use core::ffi::c_int;

use crate::port::Thread;
// The declarations come from include/qfabric/executor_port.h through bindgen (build.rs).
use crate::sys::{
    qf_executor_port_chain_abort, qf_executor_port_chain_create, qf_executor_port_chain_join,
    qf_executor_port_chain_start, qf_executor_port_chain_started,
    qf_executor_port_chain_wait_started, qf_executor_port_lock, qf_executor_port_now_ns,
    qf_executor_port_send, qf_executor_port_unlock,
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
