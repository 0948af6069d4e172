//! The traces, read from C. The scheduling event ring: one event at a time (`qf_trace_pop`) or
//! all of them printed as CSV (`qf_trace_dump`) in the format of `qf sim --events`:
//! `time,task,event,budget,deadline` with times in kernel ticks and task = pool slot. The switch
//! log (switch_log.rs): one switch at a time (`qf_switch_pop`).

use core::ffi::c_int;
use core::fmt::Write;

use qf_sched::Event;

use crate::port::{self, Line};
use crate::state::with_state;
use crate::switch_log::QfSwitch;

/// The CSV header line.
const HEADER: &str = "time,task,event,budget,deadline\n";

// `struct qf_event` (include/qfabric/api.h, generated).
use crate::sys::qf_event as QfEvent;

fn pop() -> Option<Event> {
    with_state(|state| state.sched.events().pop())
}

/// Takes the oldest event; 1 with `*out` filled, 0 if the ring is empty.
///
/// # Safety
/// `out` must be null or point to a writable `struct qf_event`.
#[no_mangle]
pub unsafe extern "C" fn qf_trace_pop(out: *mut QfEvent) -> c_int {
    if out.is_null() {
        return 0;
    }
    let Some(event) = pop() else { return 0 };
    let kind = event.kind.name();
    let record = QfEvent {
        time: event.time,
        budget: event.budget,
        deadline: event.deadline,
        thread: event.thread.0,
        kind: kind.as_ptr().cast(),
        kind_len: kind.len(),
    };
    // SAFETY: `out` is non-null and, by the caller's contract, points to a writable qf_event.
    unsafe { out.write(record) };
    1
}

/// Events overwritten because the ring was full.
#[no_mangle]
pub extern "C" fn qf_trace_lost() -> u64 {
    with_state(|state| state.sched.events().lost())
}

/// Prints (and drains) the ring as CSV with printk, header first.
#[no_mangle]
pub extern "C" fn qf_trace_dump() {
    port::print(HEADER);
    while let Some(event) = pop() {
        let mut line = Line::<96>::new();
        let _ = writeln!(
            line,
            "{},{},{},{},{}",
            event.time,
            event.thread.0,
            event.kind.name(),
            event.budget,
            event.deadline
        );
        port::print(line.as_str());
    }
}

/// Takes the oldest logged switch; 1 with `*out` filled, 0 if the log is empty.
///
/// # Safety
/// `out` must be null or point to a writable `struct qf_switch`.
#[no_mangle]
pub unsafe extern "C" fn qf_switch_pop(out: *mut QfSwitch) -> c_int {
    if out.is_null() {
        return 0;
    }
    let Some(entry) = with_state(|state| state.switches.pop()) else {
        return 0;
    };
    // SAFETY: `out` is non-null and, by the caller's contract, points to a writable qf_switch.
    unsafe { out.write(entry) };
    1
}
