// SPDX-License-Identifier: GPL-2.0
//! A kernel thread that runs until its guard is dropped (`kthread_run` / `kthread_stop`).

use super::from_err_ptr;
use kernel::bindings;
use kernel::error::Result;
use kernel::ffi::{c_int, c_void};
use kernel::str::CStr;
// 7.3: `CStr` is core's, `as_char_ptr` comes from this trait.
#[cfg(qf_linux_7_3)]
use kernel::str::CStrExt as _;

/// A thread body; `run` must return soon after [`should_stop`] turns true.
pub trait ThreadBody {
    type Data: Sync;
    fn run(data: &Self::Data);
}

unsafe extern "C" fn trampoline<B: ThreadBody>(data: *mut c_void) -> c_int {
    // SAFETY: `data` is the `&B::Data` given to `KThread::spawn`, alive until the guard is
    // dropped, and `kthread_stop` in `drop` waits for this function to return.
    B::run(unsafe { &*data.cast::<B::Data>() });
    0
}

/// Whether the current kernel thread has been asked to stop.
pub fn should_stop() -> bool {
    // SAFETY: called from a kthread's body (its only use here).
    unsafe { bindings::kthread_should_stop() }
}

/// Sleeps up to `ms` milliseconds, or less if woken by [`KThread::wake`] or `kthread_stop`.
pub fn sleep_interruptible_ms(ms: u32) {
    // SAFETY: process context; `schedule_timeout_interruptible` sets the task state itself.
    unsafe {
        let jiffies = bindings::__msecs_to_jiffies(ms);
        bindings::schedule_timeout_interruptible(jiffies as _);
    }
}

pub struct KThread {
    task: *mut bindings::task_struct,
}

// SAFETY: a task pointer may be used from any thread while we hold it (see `drop`).
unsafe impl Send for KThread {}
// SAFETY: `wake_up_process` may be called concurrently.
unsafe impl Sync for KThread {}

impl KThread {
    /// Creates and starts a thread named `name` running `B::run(data)`.
    ///
    /// # Safety
    /// `data` must stay alive (and not move) until the returned guard is dropped.
    pub unsafe fn spawn<B: ThreadBody>(name: &'static CStr, data: &B::Data) -> Result<Self> {
        // SAFETY: the trampoline matches `threadfn`; `name` contains no format directives.
        let task = from_err_ptr(unsafe {
            bindings::kthread_create_on_node(
                Some(trampoline::<B>),
                data as *const B::Data as *mut c_void,
                bindings::NUMA_NO_NODE,
                name.as_char_ptr(),
            )
        })?;
        // `kthread_stop` needs the task to exist until it returns: hold a reference.
        // SAFETY: `task` is a freshly created, valid task.
        unsafe {
            bindings::get_task_struct(task);
            bindings::wake_up_process(task);
        }
        Ok(Self { task })
    }

    /// Wakes the thread early from [`sleep_interruptible_ms`].
    pub fn wake(&self) {
        // SAFETY: we hold a reference on `task` until drop.
        unsafe { bindings::wake_up_process(self.task) };
    }
}

impl Drop for KThread {
    fn drop(&mut self) {
        // SAFETY: `task` is ours (reference taken in `spawn`); `kthread_stop` waits for the body
        // to return; the reference is dropped once, after.
        unsafe {
            bindings::kthread_stop(self.task);
            bindings::put_task_struct(self.task);
        }
    }
}

/// Lets an interrupt handler wake a [`KThread`] it does not own.
pub struct Waker(core::sync::atomic::AtomicPtr<bindings::task_struct>);

impl Waker {
    pub const fn new() -> Self {
        Self(core::sync::atomic::AtomicPtr::new(core::ptr::null_mut()))
    }

    /// Points the waker at `thread`.
    ///
    /// # Safety
    /// No [`Waker::wake`] may run after `thread` is dropped: drop (or free the interrupt of)
    /// every caller of `wake` first.
    pub unsafe fn arm(&self, thread: &KThread) {
        self.0
            .store(thread.task, core::sync::atomic::Ordering::Release);
    }

    pub fn wake(&self) {
        let task = self.0.load(core::sync::atomic::Ordering::Acquire);
        if !task.is_null() {
            // SAFETY: armed tasks outlive every `wake` (contract of `arm`).
            unsafe { bindings::wake_up_process(task) };
        }
    }
}
