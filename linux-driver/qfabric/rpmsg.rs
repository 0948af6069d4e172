// SPDX-License-Identifier: GPL-2.0
//! rpmsg: registering a driver for one channel name, and endpoints created on a bound channel.
//!
//! Why a driver-created endpoint and not the channel's default one: the rpmsg core destroys the
//! default endpoint only after the driver's `remove` returned, so its callback may still run
//! then, and whatever its private pointer names would have to outlive `remove`. An endpoint the
//! driver creates itself is destroyed by the driver (`rpmsg_destroy_ept` waits for a running
//! callback under the endpoint's `cb_lock`), so after [`Endpoint::destroy`] no callback runs.
//!
//! Callbacks on virtio rpmsg run in process context: `rpmsg_recv_single` takes the endpoint
//! mutexes before it calls them, so they may take spinlocks and mutexes (not sleep for long).

use kernel::bindings;
use kernel::error::{code::*, to_result, Result};
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;
use kernel::str::CStr;

/// `probe` as C calls it.
pub type ProbeFn = unsafe extern "C" fn(*mut bindings::rpmsg_device) -> c_int;
/// `remove` as C calls it.
pub type RemoveFn = unsafe extern "C" fn(*mut bindings::rpmsg_device);
/// An endpoint's receive callback: `(rpdev, data, len, priv, src)`.
pub type RxFn = unsafe extern "C" fn(
    *mut bindings::rpmsg_device,
    *mut c_void,
    c_int,
    *mut c_void,
    u32,
) -> c_int;

/// `RPMSG_ADDR_ANY`.
pub const ADDR_ANY: u32 = 0xffff_ffff;

/// Copies `name` into a `[c_char; 32]` rpmsg name field (NUL-terminated, truncated to fit).
fn name_field(name: &CStr) -> [u8; 32] {
    let mut field = [0u8; 32];
    #[cfg(not(qf_linux_7_3))]
    let bytes = name.as_bytes();
    #[cfg(qf_linux_7_3)]
    let bytes = name.to_bytes();
    let n = bytes.len().min(31);
    field[..n].copy_from_slice(&bytes[..n]);
    field
}

/// A registered `struct rpmsg_driver` binding channels named `channel`; unregistered on drop
/// (which calls `remove` for every bound channel first).
pub struct Registration {
    // Boxed: the driver core keeps pointers into both for as long as the driver is registered.
    driver: KBox<bindings::rpmsg_driver>,
    _ids: KBox<[bindings::rpmsg_device_id; 2]>,
}

// SAFETY: after registration the structures are only touched by the driver core, under its locks.
unsafe impl Send for Registration {}
// SAFETY: `Registration` has no methods that access the structures.
unsafe impl Sync for Registration {}

impl Registration {
    /// Registers driver `name` for channels named `channel`. No default endpoint is created
    /// (`callback` stays NULL): `probe` creates its own with [`Endpoint::create`].
    pub fn new(
        name: &'static CStr,
        channel: &CStr,
        probe: ProbeFn,
        remove: RemoveFn,
        module: &'static kernel::ThisModule,
    ) -> Result<Self> {
        let id = bindings::rpmsg_device_id {
            name: name_field(channel),
            ..Default::default()
        };
        // The all-zero entry terminates the table.
        let ids = KBox::new([id, bindings::rpmsg_device_id::default()], GFP_KERNEL)?;
        let mut driver = KBox::new(bindings::rpmsg_driver::default(), GFP_KERNEL)?;
        driver.drv.name = name.as_char_ptr();
        driver.id_table = ids.as_ptr();
        driver.probe = Some(probe);
        driver.remove = Some(remove);
        // SAFETY: `driver` and `ids` are heap-allocated and outlive the registration (dropped only
        // after `unregister_rpmsg_driver` in `drop`); `module` is THIS_MODULE.
        to_result(unsafe { bindings::__register_rpmsg_driver(&mut *driver, module.as_ptr()) })?;
        Ok(Self { driver, _ids: ids })
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        // SAFETY: registered in `new`, unregistered exactly once, here.
        unsafe { bindings::unregister_rpmsg_driver(&mut *self.driver) };
    }
}

/// A channel handed to `probe`; valid until `remove` returns.
#[derive(Clone, Copy)]
pub struct Device(*mut bindings::rpmsg_device);

// SAFETY: the rpmsg device is reference counted by the driver core; we only use it between probe
// and the end of remove, and its functions take their own locks.
unsafe impl Send for Device {}
// SAFETY: see `Send`.
unsafe impl Sync for Device {}

impl Device {
    /// # Safety
    /// `rpdev` must be the device passed to `probe`/`remove`, used only until `remove` returns.
    pub unsafe fn from_raw(rpdev: *mut bindings::rpmsg_device) -> Self {
        Self(rpdev)
    }

    /// The generic `struct device` (logging, parent of the devices we create).
    pub fn as_dev(&self) -> *mut bindings::device {
        // SAFETY: live rpmsg_device (type invariant); taking a field's address reads nothing.
        unsafe { core::ptr::addr_of_mut!((*self.0).dev) }
    }

    /// The remote address of the channel (the MCU endpoint that announced it).
    pub fn dst(&self) -> u32 {
        // SAFETY: live rpmsg_device; `dst` is set when the channel is created and not changed.
        unsafe { (*self.0).dst }
    }

    /// Driver data: the pointer `remove` gets back (`dev_set_drvdata`).
    pub fn set_drvdata(&self, data: *mut c_void) {
        // SAFETY: live rpmsg_device; `driver_data` is the bound driver's between probe and remove.
        unsafe { (*self.0).dev.driver_data = data };
    }

    pub fn drvdata(&self) -> *mut c_void {
        // SAFETY: as in `set_drvdata`.
        unsafe { (*self.0).dev.driver_data }
    }
}

/// An endpoint we created on a channel. Not destroyed on drop: the owner calls
/// [`Endpoint::destroy`] exactly once, at the point of its teardown where callbacks must stop.
pub struct Endpoint(*mut bindings::rpmsg_endpoint);

// SAFETY: `rpmsg_send`/`rpmsg_get_mtu` may be called from any process context; the core locks.
unsafe impl Send for Endpoint {}
// SAFETY: see `Send`.
unsafe impl Sync for Endpoint {}

impl Endpoint {
    /// Creates an endpoint named `name` at a free local address on `dev`, whose received
    /// messages go to `rx` with `private` as its `priv` argument.
    ///
    /// # Safety
    /// `private` must stay valid for `rx` until [`Endpoint::destroy`] returned.
    pub unsafe fn create(dev: Device, name: &CStr, rx: RxFn, private: *mut c_void) -> Result<Self> {
        let info = bindings::rpmsg_channel_info {
            name: name_field(name),
            src: ADDR_ANY,
            dst: ADDR_ANY,
        };
        // SAFETY: `dev` is live (caller is in probe); the core copies `info`.
        let ept = unsafe { bindings::rpmsg_create_ept(dev.0, Some(rx), private, info) };
        if ept.is_null() {
            return Err(ENOMEM);
        }
        Ok(Self(ept))
    }

    /// Our local rpmsg address.
    pub fn addr(&self) -> u32 {
        // SAFETY: live endpoint (not destroyed: `destroy` consumes `self`).
        unsafe { (*self.0).addr }
    }

    /// Largest message the transport carries.
    pub fn mtu(&self) -> Result<usize> {
        // SAFETY: live endpoint.
        let mtu = unsafe { bindings::rpmsg_get_mtu(self.0) };
        if mtu < 0 {
            return Err(Error::from_errno(mtu as c_int));
        }
        Ok(mtu as usize)
    }

    /// Sends `data` to the channel's remote address; sleeps (up to 15 s, in the core) while the
    /// transport has no free buffer.
    pub fn send(&self, data: &[u8]) -> Result {
        let len = c_int::try_from(data.len()).map_err(|_| super::errno::emsgsize())?;
        // SAFETY: live endpoint; the core copies `len` bytes out of `data` before returning and
        // never writes through the pointer (the C prototype is merely not `const`).
        to_result(unsafe { bindings::rpmsg_send(self.0, data.as_ptr() as *mut c_void, len) })
    }

    /// Destroys the endpoint; returns once no receive callback runs or will run.
    pub fn destroy(self) {
        // SAFETY: created in `create`, destroyed exactly once (this consumes `self`).
        unsafe { bindings::rpmsg_destroy_ept(self.0) };
    }
}
