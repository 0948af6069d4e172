//! The MCU executor's frame service: `qf_executor_serve()` runs qf-chain's one entry for frames
//! from Linux (`qf_chain::serve_with_chains`): resident-chain control frames go to the chain
//! table (chains.rs), every other frame to the one dispatcher of qfabric (`qf_tasks::serve`:
//! decode, validate, replay window per task, task timed on the hardware cycle counter, encode),
//! on a static set of replay windows; all of it behind the executor mutex.
//! Any bytes get a status, never a panic: rejections are response frames, and only unusable
//! arguments (NULL, an output shorter than a header, interrupt context) are a negative errno.

use core::ffi::c_int;

use qf_abi::{encode_frame_raw, header::offset, Header, ReplayWindow, HEADER_LEN};
use qf_chain::serve_with_chains;
use qf_tasks::{Clock, Task};

use crate::chains::with_control;
use crate::executor_port::CycleClock;
use crate::port::{negative, Errno};

// `struct qf_served` (include/qfabric/executor.h, generated).
use crate::sys::qf_served as QfServed;

/// The input and output buffers of a C call as slices: `None` if `output` is NULL or `input` is
/// NULL with a non-zero length (NULL with length 0 is an empty input).
///
/// # Safety
/// `input` points to `input_len` readable bytes unless NULL, `output` to `output_len` writable
/// bytes not overlapping `input`, both valid for `'a`.
unsafe fn buffers<'a>(
    input: *const u8,
    input_len: usize,
    output: *mut u8,
    output_len: usize,
) -> Option<(&'a [u8], &'a mut [u8])> {
    if output.is_null() || (input.is_null() && input_len != 0) {
        return None;
    }
    let input: &[u8] = if input.is_null() {
        &[]
    } else {
        // SAFETY: `input_len` readable bytes at `input` (function contract).
        unsafe { core::slice::from_raw_parts(input, input_len) }
    };
    // SAFETY: `output_len` writable bytes at `output`, apart from `input` (function contract).
    let output = unsafe { core::slice::from_raw_parts_mut(output, output_len) };
    Some((input, output))
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
    // SAFETY: the caller lends `len` readable bytes at `req`, `cap` writable ones at `out`.
    let Some((request, out)) = (unsafe { buffers(req, len, out, cap) }) else {
        return negative(Errno::Invalid);
    };
    if served.is_null() || out.len() < HEADER_LEN {
        return negative(Errno::Invalid);
    }
    // Timed through `&dyn Clock`, like the chains' jobs, so both share one `serve` body per
    // replay window size.
    let clock: &dyn Clock = &CycleClock;
    let outcome = with_control(|control| {
        let (replay, table, exec) = (&mut control.replay, &mut control.table, &mut control.exec);
        serve_with_chains(request, out, clock, replay, table, exec)
    });
    let Some(result) = outcome else {
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
    let _ = with_control(|control| {
        // One window at a time, in place: a whole `Replay` would be a 3 KiB stack temporary.
        for task in Task::ALL {
            *control.replay.window_mut(task) = ReplayWindow::new();
        }
    });
}

/// `qf_request_encode`: see include/qfabric/executor.h.
///
/// # Safety
/// `payload` points to `payload_len` readable bytes (or is NULL with `payload_len` 0), `out` to
/// `cap` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn qf_request_encode(
    task_id: u32,
    invocation_id: u64,
    epoch: u32,
    contract_id: u32,
    payload: *const u8,
    payload_len: usize,
    out: *mut u8,
    cap: usize,
) -> c_int {
    let Some(task) = Task::from_id(task_id) else {
        return negative(Errno::Invalid);
    };
    // SAFETY: the caller lends `payload_len` readable bytes, `cap` writable ones at `out`.
    let Some((payload, out)) = (unsafe { buffers(payload, payload_len, out, cap) }) else {
        return negative(Errno::Invalid);
    };
    let mut header = Header::request(task.id(), task.effect(), invocation_id, epoch);
    header.contract_id = contract_id;
    match encode_frame_raw(&header, payload, out) {
        // A frame is at most 1024 bytes, so its length fits.
        Ok(len) => c_int::try_from(len).unwrap_or(c_int::MAX),
        Err(_) => negative(Errno::NoSpace),
    }
}
