//! The C port (`src/port.c`, declared in include/qfabric/port.h, bound by bindgen as
//! `crate::sys`): the only foreign functions this library calls, each wrapped in a safe function.
//! The port functions take no pointers the Rust side could get wrong except thread handles,
//! which are only ever values the kernel handed to us (see [`Thread`]).

use core::ffi::{c_int, c_void};
use core::fmt::Write;

// The declarations come from include/qfabric/port.h through bindgen (build.rs, `crate::sys`).
use crate::sys::{
    qf_errno_ebusy, qf_errno_einval, qf_errno_enomem, qf_errno_enospc, qf_errno_enotsup,
    qf_errno_etimedout, qf_expiry_miss_due, qf_port_current, qf_port_cycles_to_ticks,
    qf_port_deadline_set, qf_port_deadline_set_relative, qf_port_deadline_set_reschedule,
    qf_port_lock, qf_port_miss_callback, qf_port_now, qf_port_print, qf_port_reschedule,
    qf_port_sleep_until, qf_port_slot_release, qf_port_throttle, qf_port_timer_arm,
    qf_port_timer_cancel, qf_port_unlock, z_qf_switch_tick_valid,
};
#[cfg(qf_thread_field)]
use crate::sys::{qf_port_thread_control_get, qf_port_thread_control_set};

/// Opaque `struct k_thread`: only its address is used, as a handle passed back to C.
pub use crate::sys::k_thread as KThread;

/// A Zephyr thread handle (`k_tid_t`) as received from the kernel or a kernel API caller.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Thread(pub *mut KThread);

/// A set C deadline-miss callback: `qf_deadline_miss_cb_t` without its NULL.
pub type MissCallbackFn = <crate::sys::qf_deadline_miss_cb_t as Nullable>::Set;

/// A nullable C function pointer (`Option<fn>`) and the function it holds when set.
pub trait Nullable {
    type Set;
}

impl<F> Nullable for Option<F> {
    type Set = F;
}

/// The errno values of the image's C library, which is not always newlib's numbering.
#[derive(Copy, Clone, Debug)]
pub enum Errno {
    Invalid,
    NoMemory,
    Busy,
    NoSpace,
    TimedOut,
    NotSupported,
}

/// `-errno` as the C library of this image numbers it.
pub fn negative(errno: Errno) -> c_int {
    // SAFETY: constant ints defined in port.c, never written.
    let value = unsafe {
        match errno {
            Errno::Invalid => qf_errno_einval,
            Errno::NoMemory => qf_errno_enomem,
            Errno::Busy => qf_errno_ebusy,
            Errno::NoSpace => qf_errno_enospc,
            Errno::TimedOut => qf_errno_etimedout,
            Errno::NotSupported => qf_errno_enotsup,
        }
    };
    -value
}

/// Takes the qfabric spinlock (interrupts locked on one CPU); returns the key for [`unlock`].
pub fn lock() -> u32 {
    // SAFETY: k_spin_lock on a static lock; callers pair it with `unlock` (see state.rs).
    unsafe { qf_port_lock() }
}

/// Releases the qfabric spinlock taken by [`lock`].
pub fn unlock(key: u32) {
    // SAFETY: `key` comes from the matching `lock` call (state.rs is the only caller).
    unsafe { qf_port_unlock(key) }
}

/// Kernel ticks since boot (`sys_clock_tick_get`), qfabric's time unit.
pub fn now() -> u64 {
    // SAFETY: reads the kernel tick counter; no arguments.
    unsafe { qf_port_now() }
}

/// Marks the tick the switch-out hook just read as the time of the switch in progress.
pub fn switch_tick_set_valid() {
    // SAFETY: a plain bool of port.c, only touched by the context-switch hooks, which do not
    // nest and run on the one CPU (qfabric requires !SMP).
    unsafe { core::ptr::addr_of_mut!(z_qf_switch_tick_valid).write(true) }
}

/// Whether the tick the last switch-out hook read is the time of this switch; clears it.
pub fn switch_tick_take_valid() -> bool {
    // SAFETY: as for `switch_tick_set_valid`.
    unsafe { core::ptr::addr_of_mut!(z_qf_switch_tick_valid).replace(false) }
}

/// Asks port.c's timer expiry to run [`crate::api::qf_rs_miss_report`] once it has released
/// the lock.
pub fn expiry_miss_due_set() {
    // SAFETY: a plain bool of port.c, written here by a timer expiry and read and cleared by
    // port.c's expiry after it, both in the timer interrupt on the one CPU (qfabric requires
    // !SMP), which does not nest.
    unsafe { core::ptr::addr_of_mut!(qf_expiry_miss_due).write(true) }
}

/// Converts an API duration in hardware cycles to ticks, rounding up.
pub fn cycles_to_ticks(cycles: u32) -> u64 {
    // SAFETY: pure arithmetic in C (k_cyc_to_ticks_ceil64).
    unsafe { qf_port_cycles_to_ticks(cycles) }
}

/// The running thread.
pub fn current() -> Thread {
    // SAFETY: k_current_get() has no preconditions.
    Thread(unsafe { qf_port_current() })
}

/// Arms pool slot `slot`'s one-shot timer at absolute tick `at` (replacing any earlier target).
pub fn timer_arm(slot: u16, at: u64) {
    // SAFETY: `slot` is a pool index (< CONFIG_QFABRIC_MAX_THREADS, checked by ThreadId users).
    unsafe { qf_port_timer_arm(slot, at) }
}

/// Forgets pool slot `slot`'s timer target (a pending kernel timeout is dropped when it fires).
pub fn timer_cancel(slot: u16) {
    // SAFETY: as for `timer_arm`.
    unsafe { qf_port_timer_cancel(slot) }
}

/// Pool slot `slot`'s thread exits (after qf-sched's detach): drops any pending throttle resume.
pub fn slot_release(slot: u16) {
    // SAFETY: as for `timer_arm`.
    unsafe { qf_port_slot_release(slot) }
}

/// Sets `thread`'s absolute EDF deadline to tick `at` and repositions it in the run queue.
pub fn deadline_set(thread: Thread, at: u64) {
    // SAFETY: `thread` is a live thread registered in the pool (removed on thread exit).
    unsafe { qf_port_deadline_set(thread.0, at) }
}

/// [`deadline_set`] and [`reschedule`] under one hold of the kernel's scheduler lock.
pub fn deadline_set_reschedule(thread: Thread, at: u64) {
    // SAFETY: as for `deadline_set`; in the timer interrupt, where this is called, rescheduling
    // only refreshes the kernel's choice and switches nothing (as for `reschedule`).
    unsafe { qf_port_deadline_set_reschedule(thread.0, at) }
}

/// Plain Zephyr EDF: deadline `deadline` cycles from now, for threads without a control block.
pub fn deadline_set_relative(thread: Thread, deadline: c_int) {
    // SAFETY: `thread` comes from the caller of k_thread_deadline_set (a kernel object the
    // syscall layer has validated, or a supervisor caller's own handle).
    unsafe { qf_port_deadline_set_relative(thread.0, deadline) }
}

/// Blocks the calling thread until absolute tick `at` (reschedules instead if that is not in
/// the future). Never called with the lock held.
pub fn sleep_until(at: u64) {
    // SAFETY: k_sleep from thread context, lock released (kernel.rs runs it after unlock).
    unsafe { qf_port_sleep_until(at) }
}

/// Suspends `thread` now and resumes it at tick `until`.
pub fn throttle(slot: u16, thread: Thread, until: u64) {
    // SAFETY: `thread` is registered in pool slot `slot`; called with the lock released, or
    // held in the timer interrupt, where suspending switches no context (kernel.rs).
    unsafe { qf_port_throttle(slot, thread.0, until) }
}

/// Re-runs the kernel's scheduling decision (`k_reschedule`).
pub fn reschedule() {
    // SAFETY: k_reschedule has no preconditions; in an ISR (where the timer expiry calls it
    // with the qfabric lock held) it only refreshes the cache and switches nothing.
    unsafe { qf_port_reschedule() }
}

/// Runs a C deadline-miss callback.
pub fn miss_callback(cb: MissCallbackFn, thread: Thread, arg: *mut c_void) {
    // SAFETY: `cb` and `arg` were registered together by a supervisor-mode caller (user mode may
    // only clear the callback, see syscalls.c); `thread` is the thread they were set for.
    unsafe { qf_port_miss_callback(Some(cb), thread.0, arg) }
}

/// Prints `text` with printk.
pub fn print(text: &str) {
    // SAFETY: pointer and length of a valid str; printk copies it.
    unsafe { qf_port_print(text.as_ptr().cast(), text.len()) }
}

/// The control-block word the patched kernel keeps in `thread->base.qf_control`.
#[cfg(qf_thread_field)]
pub fn thread_control(thread: Thread) -> usize {
    // SAFETY: `thread` is a valid thread handle (see `Thread`); a plain field read.
    unsafe { qf_port_thread_control_get(thread.0) }
}

/// Stores the control-block word in `thread->base.qf_control`.
#[cfg(qf_thread_field)]
pub fn thread_control_set(thread: Thread, control: usize) {
    // SAFETY: as for `thread_control`; called with the lock held.
    unsafe { qf_port_thread_control_set(thread.0, control) }
}

/// A fixed buffer `core::fmt::Write` target: text beyond its capacity is cut, never allocated.
pub struct Line<const N: usize> {
    bytes: [u8; N],
    len: usize,
}

impl<const N: usize> Line<N> {
    /// An empty line.
    pub const fn new() -> Self {
        Line {
            bytes: [0; N],
            len: 0,
        }
    }

    /// The text written so far (cut at a character boundary).
    pub fn as_str(&self) -> &str {
        match core::str::from_utf8(&self.bytes[..self.len]) {
            Ok(text) => text,
            Err(e) => core::str::from_utf8(&self.bytes[..e.valid_up_to()]).unwrap_or(""),
        }
    }
}

impl<const N: usize> Write for Line<N> {
    fn write_str(&mut self, text: &str) -> core::fmt::Result {
        let room = N - self.len;
        let take = text.len().min(room);
        self.bytes[self.len..self.len + take].copy_from_slice(&text.as_bytes()[..take]);
        self.len += take;
        Ok(())
    }
}

/// Reports a panic with printk and stops the kernel with `k_panic` (the crate's panic handler;
/// host unit tests use std's).
#[cfg(not(test))]
pub fn panic(info: &core::panic::PanicInfo) -> ! {
    let mut line = Line::<128>::new();
    let _ = write!(line, "{}", info.message());
    if let Some(at) = info.location() {
        let _ = write!(line, " at {}:{}", at.file(), at.line());
    }
    let text = line.as_str();
    // SAFETY: pointer and length of a valid str; the port prints it and calls k_panic().
    unsafe { crate::sys::qf_port_panic(text.as_ptr().cast(), text.len()) }
}
