// SPDX-License-Identifier: GPL-2.0
//! Threaded interrupt handlers (`request_threaded_irq` with no hard-IRQ half): the handler runs
//! in a kernel thread, so it may take mutexes, which the virtio/rpmsg callbacks it reaches do.

use kernel::bindings;
use kernel::error::{to_result, Result};
use kernel::ffi::{c_int, c_void};
use kernel::str::CStr;
// 7.3: `CStr` is core's, `as_char_ptr` comes from this trait.
#[cfg(qf_linux_7_3)]
use kernel::str::CStrExt as _;

/// What one interrupt line does; `Data` is the object the line was requested with.
pub trait IrqThread {
    type Data: Sync;
    fn handle(data: &Self::Data);
}

unsafe extern "C" fn trampoline<H: IrqThread>(
    _irq: c_int,
    data: *mut c_void,
) -> bindings::irqreturn_t {
    // SAFETY: `data` is the `&H::Data` given to `ThreadedIrq::request`, which its caller keeps
    // alive until the guard is dropped, and `free_irq` in `drop` waits for running handlers.
    let data = unsafe { &*data.cast::<H::Data>() };
    H::handle(data);
    #[cfg(not(qf_linux_7_3))]
    return bindings::irqreturn_IRQ_HANDLED;
    // 7.3's bindgen makes `irqreturn` a newtype with associated constants.
    #[cfg(qf_linux_7_3)]
    return bindings::irqreturn::IRQ_HANDLED;
}

/// A requested interrupt line; `free_irq` on drop (which waits for a running handler).
pub struct ThreadedIrq {
    irq: u32,
    data: *mut c_void,
}

// SAFETY: the guard only holds the IRQ number and the cookie; both are plain values.
unsafe impl Send for ThreadedIrq {}
// SAFETY: `synchronize`/`wake_thread` are callable from any thread.
unsafe impl Sync for ThreadedIrq {}

impl ThreadedIrq {
    /// Requests `irq` with `H::handle(data)` as its threaded handler.
    ///
    /// # Safety
    /// `data` must stay alive (and not move) until the returned guard is dropped.
    pub unsafe fn request<H: IrqThread>(
        irq: u32,
        name: &'static CStr,
        data: &H::Data,
    ) -> Result<Self> {
        let cookie = data as *const H::Data as *mut c_void;
        // SAFETY: the trampoline matches `irq_handler_t`; ONESHOT is required with no primary
        // handler; `name` is static; `cookie` outlives the registration (caller's contract).
        to_result(unsafe {
            bindings::request_threaded_irq(
                irq,
                None,
                Some(trampoline::<H>),
                bindings::IRQF_ONESHOT as _,
                name.as_char_ptr(),
                cookie,
            )
        })?;
        Ok(Self { irq, data: cookie })
    }

    /// Waits until no handler of this line is running (`synchronize_irq`, threads included).
    pub fn synchronize(&self) {
        // SAFETY: the line is requested while `self` exists.
        unsafe { bindings::synchronize_irq(self.irq) };
    }

    /// Runs the threaded handler as if the interrupt had fired (`irq_wake_thread`), serialized
    /// with real interrupts of this line.
    pub fn wake_thread(&self) {
        // SAFETY: the line is requested with `self.data` as its cookie.
        unsafe { bindings::irq_wake_thread(self.irq, self.data) };
    }
}

impl Drop for ThreadedIrq {
    fn drop(&mut self) {
        // SAFETY: requested in `request` with this cookie; freed once here.
        unsafe { bindings::free_irq(self.irq, self.data) };
    }
}

/// `synchronize_irq` for a line known by number (0 = never requested: nothing to wait for).
pub fn synchronize(irq: u32) {
    if irq != 0 {
        // SAFETY: `synchronize_irq` tolerates any number (unknown descriptors return at once).
        unsafe { bindings::synchronize_irq(irq) };
    }
}

/// Runs `H`'s threaded handler for line `irq` as if it had fired, if the line is requested with
/// `data` (otherwise nothing happens: `irq_wake_thread` finds no matching action).
pub fn wake_thread<H: IrqThread>(irq: u32, data: &H::Data) {
    if irq != 0 {
        // SAFETY: `irq_wake_thread` only looks the (irq, cookie) pair up and wakes its thread.
        unsafe { bindings::irq_wake_thread(irq, data as *const H::Data as *mut c_void) };
    }
}
