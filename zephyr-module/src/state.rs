//! The one scheduler of the system and what the adapter keeps beside it, behind the qfabric
//! spinlock. [`with_state`] is the way in ([`locked_state`] for a C caller holding the lock).

use core::cell::UnsafeCell;

use qf_sched::{Bandwidth, Scheduler};

use crate::config::{ADMISSION, MAX_THREADS, TRACE_EVENTS};
use crate::port::{self, MissCallbackFn, Thread};
use crate::switch_log;
use crate::threads::Registry;

/// A C deadline-miss callback and its argument, kept per slot: it runs once the lock is
/// released, when a timer expiry reports the miss (qf-sched holds only [`miss_reported`]).
#[derive(Copy, Clone)]
pub struct MissCallback {
    pub func: MissCallbackFn,
    pub arg: *mut core::ffi::c_void,
}

/// Everything the adapter owns.
pub struct State {
    pub sched: Scheduler<MAX_THREADS, TRACE_EVENTS>,
    pub threads: Registry,
    pub miss_callbacks: [Option<MissCallback>; MAX_THREADS],
    /// The C deadline-miss callback a timer expiry found due, with its thread, until port.c
    /// has released the lock and asks for it to run (`qf_rs_miss_report`). One suffices:
    /// timer expiries run one at a time, in the timer interrupt.
    pub miss_due: Option<(MissCallback, Thread)>,
    pub switches: switch_log::Log,
    /// The tick the last switch-out hook read (see `port::switch_tick_take_valid`).
    pub switch_tick: u64,
}

impl State {
    /// All zeros, so the state goes to .bss: a non-zero initializer would also store its image
    /// in the boot memory (1.7 KiB of the DK2's 64 KiB RETRAM). [`qf_rs_init`] completes it.
    const fn new() -> Self {
        State {
            sched: Scheduler::new(),
            threads: Registry::new(),
            miss_callbacks: [None; MAX_THREADS],
            miss_due: None,
            switches: switch_log::Log::new(),
            switch_tick: 0,
        }
    }
}

struct Locked(UnsafeCell<State>);

// SAFETY: the state is only reached through `with_state`, which holds the qfabric spinlock
// (interrupts locked; qfabric requires one CPU, see Kconfig) for the whole access, or through
// `locked_state`, whose caller holds it.
unsafe impl Sync for Locked {}

static STATE: Locked = Locked(UnsafeCell::new(State::new()));

/// The callback registered with qf-sched for every C callback: it only makes qf-sched arm the
/// miss check. It does nothing itself because C callbacks must not run under the lock; the
/// timer expiry's report (`qf_sched::Expiry`) has the adapter run them after it.
pub fn miss_reported(_: &qf_sched::Notice) {}

/// Boot-time configuration `State::new` leaves out, so no entry has to check for a first use:
/// admission control's bound. Called once by port.c's `SYS_INIT` (PRE_KERNEL_1), before any
/// thread can reach qfabric.
#[no_mangle]
pub extern "C" fn qf_rs_init() {
    with_state(|state| {
        if ADMISSION {
            state.sched.admission_bound_set(Some(Bandwidth::ONE));
        }
    });
}

/// Runs `f` on the state with the qfabric lock held. Never nests: nothing called under the lock
/// switches context or re-enters qfabric (blocking and callbacks are deferred, see kernel.rs).
pub fn with_state<R>(f: impl FnOnce(&mut State) -> R) -> R {
    let key = port::lock();
    // SAFETY: the lock is held until after `f` returns, so this is the only reference.
    let result = f(unsafe { locked_state() });
    port::unlock(key);
    result
}

/// The state, for an entry whose C caller holds the qfabric lock (port.c's timer expiry, which
/// also arms the timer again under it).
///
/// # Safety
/// The qfabric lock must be held for as long as the reference lives, and no other reference
/// to the state may exist: only a C entry point that is called with the lock held, and
/// that calls nothing which takes it, may use this.
pub unsafe fn locked_state<'a>() -> &'a mut State {
    // SAFETY: the caller holds the lock (the function's contract), which serializes every
    // access to the state.
    unsafe { &mut *STATE.0.get() }
}
