// SPDX-License-Identifier: GPL-2.0
//! qfabric's safe layer over the raw Linux 6.12 bindings.
//!
//! Linux 6.12's Rust has no abstractions for PCI, interrupts, kernel threads, remoteproc or
//! rpmsg (they start in 6.13). The kernel patch in `kernel-patches/linux/` exposes the C headers
//! to bindgen; this module wraps the few calls the qfabric kernel modules make, so that the
//! `unsafe` stays here, each block with the invariant that makes it sound, and the drivers read
//! as ordinary Rust.
//!
//! The same module sources build on Linux 7.3: Kbuild passes `--cfg qf_linux_7_3`, and this
//! layer alone differs, using 7.3's own abstractions where they fit (PCI enable, BAR mapping and
//! MMIO, MSI-X vectors, sleeping, error codes); kernel threads, remoteproc and rpmsg have none in
//! 7.3 and stay on the bindings `kernel-patches/linux/7.3/` exposes. Every module of ours includes this directory (`mod qfabric;`); a module
//! uses only part of it, hence the `dead_code` allowance.
// Items are `pub` for the including module; `unreachable_pub` would ask for `pub(crate)`.
#![allow(dead_code, unreachable_pub)]

pub mod board;
pub mod irq;
pub mod kthread;
pub mod misc;
pub mod pci;
pub mod rpmsg;
pub mod rproc;
pub mod shm;

use kernel::error::{Error, Result};

/// `kernel::module!` for a module with one author: 6.12 names the key `author`, 7.3 `authors`
/// (a list) and refuses `author`.
#[cfg(not(qf_linux_7_3))]
macro_rules! module {
    (type: $t:tt, name: $n:tt, author: $a:tt, description: $d:tt, license: $l:tt $(,)?) => {
        kernel::prelude::module! { type: $t, name: $n, author: $a, description: $d, license: $l, }
    };
}
#[cfg(qf_linux_7_3)]
macro_rules! module {
    (type: $t:tt, name: $n:tt, author: $a:tt, description: $d:tt, license: $l:tt $(,)?) => {
        kernel::prelude::module! { type: $t, name: $n, authors: [$a], description: $d, license: $l, }
    };
}
pub(crate) use module;

/// `pin_init_array_from_fn`: `kernel::init`'s in 6.12, the `pin_init` crate's in 7.3 (only
/// `qfabric_rpmsg` uses it).
#[cfg(not(qf_linux_7_3))]
#[allow(unused_imports)]
pub use kernel::init::pin_init_array_from_fn;
#[cfg(qf_linux_7_3)]
#[allow(unused_imports)]
pub use pin_init::pin_init_array_from_fn;

/// The user memory `[addr, addr + len)` (`UserSlice::new`: 6.12's `UserPtr` is a `usize`, 7.3's
/// a type of its own).
pub fn user_slice(addr: usize, len: usize) -> kernel::uaccess::UserSlice {
    #[cfg(not(qf_linux_7_3))]
    return kernel::uaccess::UserSlice::new(addr, len);
    #[cfg(qf_linux_7_3)]
    return kernel::uaccess::UserSlice::new(kernel::uaccess::UserPtr::from_addr(addr), len);
}

/// `IS_ERR`/`PTR_ERR` for pointers returned by C: the top 4095 addresses encode `-errno`.
pub fn from_err_ptr<T>(ptr: *mut T) -> Result<*mut T> {
    let value = ptr as isize;
    if (-4095..0).contains(&value) {
        Err(Error::from_errno(value as kernel::ffi::c_int))
    } else {
        Ok(ptr)
    }
}

/// Errors `kernel::error::code` declares from 7.3 on (6.12 does not).
#[cfg(qf_linux_7_3)]
pub mod errno {
    use kernel::error::{code, Error};

    pub fn emsgsize() -> Error {
        code::EMSGSIZE
    }

    pub fn etimedout() -> Error {
        code::ETIMEDOUT
    }
}

/// Errors `kernel::error::code` (6.12) does not declare.
#[cfg(not(qf_linux_7_3))]
pub mod errno {
    use kernel::error::Error;

    fn from_binding(errno: u32) -> Error {
        Error::from_errno(-(errno as kernel::ffi::c_int))
    }

    pub fn emsgsize() -> Error {
        from_binding(kernel::bindings::EMSGSIZE)
    }

    pub fn etimedout() -> Error {
        from_binding(kernel::bindings::ETIMEDOUT)
    }
}

/// `ERR_PTR(-errno)`: what C callbacks return to say "failed with this error".
pub fn err_ptr<T>(error: Error) -> *mut T {
    error.to_errno() as isize as *mut T
}

/// Monotonic time in nanoseconds (`ktime_get`).
pub fn now_ns() -> i64 {
    // SAFETY: `ktime_get` has no preconditions; it may be called from any context.
    unsafe { kernel::bindings::ktime_get() }
}

/// Sleeps for about `ms` milliseconds (`msleep`; 7.3: `kernel::time::delay::fsleep`); may only be called where sleeping is allowed,
/// which every caller in these modules (probe, remoteproc ops, kernel threads) is.
pub fn sleep_ms(ms: u32) {
    #[cfg(not(qf_linux_7_3))]
    // SAFETY: `msleep` only sleeps; all callers run in process context.
    unsafe {
        kernel::bindings::msleep(ms)
    };
    #[cfg(qf_linux_7_3)]
    kernel::time::delay::fsleep(kernel::time::Delta::from_millis(ms.into()));
}

/// `ns` in whole milliseconds, rounded towards zero. 32-bit Arm's kernel has no 64-bit
/// division for Rust (`__aeabi_ldivmod` is not exported, `__aeabi_uldivmod` is a panicking stub):
/// 7.3's `Delta` divides through `ktime_to_ms` there; 6.12 has no 32-bit Arm Rust.
pub fn ns_to_ms(ns: i64) -> i64 {
    #[cfg(not(qf_linux_7_3))]
    return ns / 1_000_000;
    #[cfg(qf_linux_7_3)]
    return kernel::time::Delta::from_nanos(ns).as_millis();
}

/// `ns` in milliseconds, rounded up (for positive `ns`); see [`ns_to_ms`].
pub fn ns_to_ms_ceil(ns: i64) -> i64 {
    #[cfg(not(qf_linux_7_3))]
    return (ns + 999_999) / 1_000_000;
    #[cfg(qf_linux_7_3)]
    return kernel::time::Delta::from_nanos(ns).as_millis_ceil();
}

/// A full memory barrier: orders our writes to shared memory before the doorbell or before
/// the next field the remote polls (the C drivers' `wmb()`/`mb()`).
pub fn full_barrier() {
    core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst);
}
