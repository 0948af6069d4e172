//! The MCU executor's frame service: `qf_executor_serve()` runs the one dispatcher of qfabric
//! (`qf_tasks::serve`: decode, validate, replay window per task, task timed on the hardware
//! cycle counter, encode) on a static set of replay windows behind the executor mutex.
//! Any bytes get a status, never a panic: rejections are response frames, and only unusable
//! arguments (NULL, an output shorter than a header, interrupt context) are a negative errno.

use core::cell::UnsafeCell;
use core::ffi::c_int;

use qf_abi::{header::offset, ReplayWindow, HEADER_LEN};
use qf_tasks::{serve, Replay, Task};

use crate::executor_port::{self, CycleClock};
use crate::port::{negative, Errno};

/// `struct qf_served` (include/qfabric/executor.h).
#[repr(C)]
pub struct QfServed {
    pub len: usize,
    pub task_id: u32,
    pub status: u8,
    pub compute_ns: u64,
}

struct Guarded(UnsafeCell<Replay>);

// SAFETY: the windows are only reached through `with_replay`, which holds the executor mutex for
// the whole access.
unsafe impl Sync for Guarded {}

/// The replay windows of requests from Linux, one per declared task (64 ids each).
static REPLAY: Guarded = Guarded(UnsafeCell::new(Replay::new()));

/// Runs `f` on the replay windows with the executor mutex held; `None` in interrupt context.
fn with_replay<R>(f: impl FnOnce(&mut Replay) -> R) -> Option<R> {
    if !executor_port::lock() {
        return None;
    }
    // SAFETY: the mutex is held until after `f` returns, so this is the only reference.
    let replay = unsafe { &mut *REPLAY.0.get() };
    let result = f(replay);
    executor_port::unlock();
    Some(result)
}

/// `qf_executor_serve`: see include/qfabric/executor.h.
///
/// # Safety
/// `req` points to `len` readable bytes (or is NULL with `len` 0), `out` to `cap` writable bytes
/// not overlapping `req`, `served` to a writable `struct qf_served`.
#[no_mangle]
pub unsafe extern "C" fn qf_executor_serve(
    req: *const u8,
    len: usize,
    out: *mut u8,
    cap: usize,
    served: *mut QfServed,
) -> c_int {
    if out.is_null() || served.is_null() || cap < HEADER_LEN || (req.is_null() && len != 0) {
        return negative(Errno::Invalid);
    }
    let request: &[u8] = if req.is_null() {
        &[]
    } else {
        // SAFETY: the caller lends `len` readable bytes at `req` (function contract).
        unsafe { core::slice::from_raw_parts(req, len) }
    };
    // SAFETY: the caller lends `cap` writable bytes at `out`, apart from `req`.
    let out = unsafe { core::slice::from_raw_parts_mut(out, cap) };
    let Some(result) = with_replay(|replay| serve(request, out, &CycleClock, replay)) else {
        return negative(Errno::Busy);
    };
    // Only an output shorter than a header fails, and that was refused above.
    let Ok(done) = result else {
        return negative(Errno::Invalid);
    };
    let task_id = out
        .get(offset::TASK_ID..offset::TASK_ID + 4)
        .and_then(|bytes| bytes.try_into().ok())
        .map_or(0, u32::from_be_bytes);
    // SAFETY: `served` is a valid, writable struct qf_served (function contract).
    unsafe {
        served.write(QfServed {
            len: done.len,
            task_id,
            status: done.status.code(),
            compute_ns: done.compute_ns,
        });
    }
    c_int::from(done.status.code())
}

/// `qf_executor_replay_reset`: every task's window back to empty at epoch 0.
#[no_mangle]
pub extern "C" fn qf_executor_replay_reset() {
    // In interrupt context nothing is reset: the header documents thread context.
    let _ = with_replay(|replay| {
        // One window at a time, in place: a whole `Replay` would be a 3 KiB stack temporary.
        for task in Task::ALL {
            *replay.window_mut(task) = ReplayWindow::new();
        }
    });
}
