// SPDX-License-Identifier: GPL-2.0
//! Misc character devices and the pieces of `struct file` handling they need: a device embedded
//! in a pinned owner, the file operations table, a wait queue for `poll`, and `poll_wait`.
//!
//! Lifetime rule the users rely on: `misc_open` calls our `open` with `misc_mtx` held and
//! `misc_deregister` takes the same mutex, so while `open` runs the device (and its owner) has
//! not finished deregistering; `open` takes its own reference to the owner there.

use core::sync::atomic::{AtomicBool, Ordering};
use kernel::bindings;
use kernel::error::{to_result, Result};
use kernel::ffi::{c_char, c_int};
use kernel::prelude::*;
use kernel::str::CStr;
#[cfg(not(qf_linux_7_3))]
use kernel::sync::LockClassKey;
use kernel::types::Opaque;

/// A file operations table; built at module init (it names THIS_MODULE as owner, so the module
/// cannot be unloaded while a file is open) and kept until module exit.
pub struct FileOps(bindings::file_operations);

// SAFETY: the table is written once before any device using it is registered, then only read.
unsafe impl Send for FileOps {}
// SAFETY: see `Send`.
unsafe impl Sync for FileOps {}

impl FileOps {
    pub fn new(ops: bindings::file_operations) -> Self {
        Self(ops)
    }

    fn as_ptr(&self) -> *const bindings::file_operations {
        &self.0
    }
}

/// A misc device embedded in a pinned owner; registered by [`MiscDevice::register`], removed by
/// [`MiscDevice::deregister`] (the owner must call it before it goes away).
#[pin_data]
pub struct MiscDevice {
    #[pin]
    dev: Opaque<bindings::miscdevice>,
    /// `/dev/<name>`, NUL-terminated; the misc core keeps the pointer while registered.
    name: [u8; 16],
    registered: AtomicBool,
}

impl MiscDevice {
    /// An unregistered device named `name` (at most 15 bytes).
    pub fn new(name: &[u8]) -> impl PinInit<Self> {
        let mut field = [0u8; 16];
        let n = name.len().min(15);
        field[..n].copy_from_slice(&name[..n]);
        pin_init!(Self {
            // SAFETY: an all-zero `miscdevice` is the C idiom for "not yet set up".
            dev <- Opaque::ffi_init(|p: *mut bindings::miscdevice| unsafe {
                core::ptr::write_bytes(p, 0, 1)
            }),
            name: field,
            registered: AtomicBool::new(false),
        })
    }

    /// The device's name without the NUL.
    pub fn name(&self) -> &[u8] {
        let end = self
            .name
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(self.name.len());
        &self.name[..end]
    }

    /// Registers `/dev/<name>` with a dynamic minor, served by `fops`.
    ///
    /// # Safety
    /// `fops` must outlive the registration and every file opened through it; the owner of
    /// `self` must call [`MiscDevice::deregister`] before it is dropped.
    pub unsafe fn register(&self, fops: &FileOps, parent: *mut bindings::device) -> Result {
        let dev = self.dev.get();
        // SAFETY: `dev` is pinned inside our owner and not registered yet, so nobody else reads it.
        unsafe {
            (*dev).minor = bindings::MISC_DYNAMIC_MINOR as c_int;
            (*dev).name = self.name.as_ptr() as *const c_char;
            (*dev).fops = fops.as_ptr();
            (*dev).parent = parent;
        }
        // SAFETY: fields set above; the memory stays pinned until `deregister` (caller's duty).
        to_result(unsafe { bindings::misc_register(dev) })?;
        self.registered.store(true, Ordering::Release);
        Ok(())
    }

    /// Removes `/dev/<name>`; after it returns no `open` runs or will run. Idempotent.
    pub fn deregister(&self) {
        if self.registered.swap(false, Ordering::AcqRel) {
            // SAFETY: registered in `register` and deregistered once (the flag above).
            unsafe { bindings::misc_deregister(self.dev.get()) };
        }
    }

    /// The device an `open` was called for: `misc_open` stores it in `file->private_data`.
    ///
    /// # Safety
    /// `file` must be the file passed to the `open` of a device registered by this module.
    pub unsafe fn of_opening_file(file: *mut bindings::file) -> *const MiscDevice {
        // SAFETY: `misc_open` set `private_data` to the registered `struct miscdevice`, which is
        // the `dev` field of a `MiscDevice` (`Opaque<T>` has `T`'s layout).
        unsafe {
            let dev = (*file).private_data as *const u8;
            dev.sub(core::mem::offset_of!(MiscDevice, dev)) as *const MiscDevice
        }
    }
}

/// A wait queue for `poll` (the kernel's `CondVar` keeps its queue private).
#[pin_data]
pub struct WaitQueue {
    #[pin]
    head: Opaque<bindings::wait_queue_head>,
}

// SAFETY: the wait queue has its own spinlock; every function on it may be called from any thread.
unsafe impl Send for WaitQueue {}
// SAFETY: see `Send`.
unsafe impl Sync for WaitQueue {}

impl WaitQueue {
    /// A wait queue named `name`; all of them share one lock class (they never nest).
    pub fn new(name: &'static CStr) -> impl PinInit<Self> {
        let key = kernel::static_lock_class!();
        // 6.12: `LockClassKey` is `repr(transparent)` over the C key (its `as_ptr` is
        // crate-private); 7.3 hands out a pinned key with a public `as_ptr`.
        #[cfg(not(qf_linux_7_3))]
        let key = key as *const LockClassKey as *mut bindings::lock_class_key;
        #[cfg(qf_linux_7_3)]
        let key = key.as_ptr();
        pin_init!(Self {
            // SAFETY: `__init_waitqueue_head` initialises the pinned slot; `name` and `key` are
            // static.
            head <- Opaque::ffi_init(|p| unsafe {
                bindings::__init_waitqueue_head(p, name.as_char_ptr(), key)
            }),
        })
    }

    /// Wakes every task waiting on the queue (`wake_up_all`).
    pub fn wake_all(&self) {
        // SAFETY: initialised in `new`; `__wake_up` takes the queue's lock.
        unsafe {
            bindings::__wake_up(
                self.head.get(),
                kernel::task::TASK_NORMAL,
                0,
                core::ptr::null_mut(),
            )
        };
    }

    /// `poll_wait(file, &queue, table)`: registers the poll table on this queue.
    ///
    /// # Safety
    /// `file` and `table` must be the arguments of the current `poll` call, and `self` must
    /// outlive the file (the poll machinery removes its entry at the latest on release).
    pub unsafe fn poll_wait(
        &self,
        file: *mut bindings::file,
        table: *mut bindings::poll_table_struct,
    ) {
        // SAFETY: `poll_wait` is a static inline in <linux/poll.h>: call `_qproc` when both the
        // table and its callback are present.
        unsafe {
            if !table.is_null() {
                if let Some(qproc) = (*table)._qproc {
                    qproc(file, self.head.get(), table);
                }
            }
        }
    }
}
