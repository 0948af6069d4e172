// SPDX-License-Identifier: GPL-2.0
//! PCI: registering a driver for one vendor/device id, and RAII guards for the steps of a probe
//! (enable, claim a BAR, map a BAR, allocate MSI-X vectors), each undone on drop, so a probe
//! that fails half-way unwinds by returning and a remove is "drop in the right order".
//!
//! On Linux 7.3 (`qf_linux_7_3`) the guards are the kernel's own `kernel::pci` abstractions
//! (`enable_device_mem`, `set_master`, `iomap_region` and its `Bar` with bounds-checked `readl`/
//! `writel`, `alloc_irq_vectors`), on the `kernel::pci::Device` the raw `pci_dev` is. The driver
//! registration stays raw on both: 7.3's `kernel::pci::Driver` owns probe's result in its own
//! way, which the modules' one source for both versions cannot follow.

use kernel::bindings;
use kernel::error::{code::*, to_result, Result};
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;
use kernel::str::CStr;
#[cfg(qf_linux_7_3)]
use kernel::{
    device::{Bound, Core},
    io::Io,
    pci as kpci,
};

/// `probe` as C calls it.
pub type ProbeFn =
    unsafe extern "C" fn(*mut bindings::pci_dev, *const bindings::pci_device_id) -> c_int;
/// `remove` as C calls it.
pub type RemoveFn = unsafe extern "C" fn(*mut bindings::pci_dev);

/// A registered `struct pci_driver` matching one vendor/device pair; unregistered on drop
/// (which calls `remove` for every bound device first).
pub struct Registration {
    // Boxed: the driver core keeps pointers into both for as long as the driver is registered.
    driver: KBox<bindings::pci_driver>,
    _ids: KBox<[bindings::pci_device_id; 2]>,
}

// SAFETY: after registration the structures are only touched by the driver core, under its locks.
unsafe impl Send for Registration {}
// SAFETY: `Registration` has no methods that access the structures.
unsafe impl Sync for Registration {}

impl Registration {
    pub fn new(
        name: &'static CStr,
        vendor: u32,
        device: u32,
        probe: ProbeFn,
        remove: RemoveFn,
        module: &'static kernel::ThisModule,
    ) -> Result<Self> {
        let any = !0u32; // PCI_ANY_ID
        let id = bindings::pci_device_id {
            vendor,
            device,
            subvendor: any,
            subdevice: any,
            ..Default::default()
        };
        // The all-zero entry terminates the table.
        let ids = KBox::new([id, bindings::pci_device_id::default()], GFP_KERNEL)?;
        let mut driver = KBox::new(bindings::pci_driver::default(), GFP_KERNEL)?;
        driver.name = name.as_char_ptr();
        driver.id_table = ids.as_ptr();
        driver.probe = Some(probe);
        driver.remove = Some(remove);
        // SAFETY: `driver` and `ids` are heap-allocated and outlive the registration (they are
        // dropped only after `pci_unregister_driver` in `drop`); `module` is THIS_MODULE.
        to_result(unsafe {
            bindings::__pci_register_driver(&mut *driver, module.as_ptr(), name.as_char_ptr())
        })?;
        Ok(Self { driver, _ids: ids })
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        // SAFETY: the driver was registered in `new` and is unregistered exactly once, here.
        unsafe { bindings::pci_unregister_driver(&mut *self.driver) };
    }
}

/// A PCI device handed to `probe`; valid until `remove` returns.
#[derive(Clone, Copy)]
pub struct Device(*mut bindings::pci_dev);

// SAFETY: a `pci_dev` is reference counted by the driver core and its functions take their own
// locks; we only use it between probe and the end of remove.
unsafe impl Send for Device {}
// SAFETY: see `Send`.
unsafe impl Sync for Device {}

impl Device {
    /// # Safety
    /// `pdev` must be the device passed to `probe`/`remove`, used only until `remove` returns.
    pub unsafe fn from_raw(pdev: *mut bindings::pci_dev) -> Self {
        Self(pdev)
    }

    pub fn as_raw(&self) -> *mut bindings::pci_dev {
        self.0
    }

    /// The generic `struct device` (for logging and for the devices we create under it).
    pub fn as_dev(&self) -> *mut bindings::device {
        // SAFETY: `self.0` is a live pci_dev (type invariant); taking a field's address reads nothing.
        unsafe { core::ptr::addr_of_mut!((*self.0).dev) }
    }

    /// The kernel's view of the device, bound to this driver: a `Device` lives from `probe` until
    /// `remove` returns, and every guard holding this reference is dropped in `remove`.
    #[cfg(qf_linux_7_3)]
    fn bound(&self) -> &'static kpci::Device<Bound> {
        // SAFETY: `kernel::pci::Device` is `repr(transparent)` over `struct pci_dev`; this one
        // is live and bound to us for as long as the reference is used (see above).
        unsafe { &*self.0.cast::<kpci::Device<Bound>>() }
    }

    /// The device in the `Core` context: only during `probe`/`remove`, which the driver core
    /// runs under the device lock, as that context requires.
    #[cfg(qf_linux_7_3)]
    fn core(&self) -> &kpci::Device<Core<'_>> {
        // SAFETY: `kernel::pci::Device` is `repr(transparent)` over `struct pci_dev`; the callers
        // (`enable`, `set_master`) are called from probe only.
        unsafe { &*self.0.cast::<kpci::Device<Core<'_>>>() }
    }

    /// Physical start and length of BAR `bar` (`pci_resource_start/len`).
    pub fn resource(&self, bar: usize) -> Result<(u64, usize)> {
        if bar >= 6 {
            return Err(EINVAL);
        }
        #[cfg(not(qf_linux_7_3))]
        let (start, len) = {
            // SAFETY: live pci_dev (type invariant); `resource` has more than 6 entries.
            let r = unsafe { &(*self.0).resource[bar] };
            if r.start == 0 || r.end < r.start {
                return Err(ENODEV);
            }
            (r.start, r.end - r.start + 1)
        };
        #[cfg(qf_linux_7_3)]
        let (start, len) = {
            let bar = bar as u32;
            let (start, len) = (
                self.bound().resource_start(bar)?,
                self.bound().resource_len(bar)?,
            );
            if start == 0 || len == 0 {
                return Err(ENODEV);
            }
            (start, len)
        };
        Ok((start as u64, len as usize))
    }

    /// Driver data: the pointer `remove` gets back (`pci_set_drvdata`).
    pub fn set_drvdata(&self, data: *mut c_void) {
        // SAFETY: live pci_dev; `driver_data` is ours between probe and remove.
        unsafe { (*self.0).dev.driver_data = data };
    }

    pub fn drvdata(&self) -> *mut c_void {
        // SAFETY: as in `set_drvdata`.
        unsafe { (*self.0).dev.driver_data }
    }

    /// Enables the device (7.3: its memory BARs, all the board has); called from probe.
    pub fn enable(&self) -> Result<Enabled> {
        #[cfg(not(qf_linux_7_3))]
        // SAFETY: live pci_dev.
        to_result(unsafe { bindings::pci_enable_device(self.0) })?;
        #[cfg(qf_linux_7_3)]
        self.core().enable_device_mem()?;
        Ok(Enabled(*self))
    }

    /// Claims BAR `bar` for `name` (one the driver maps in its own way; [`Device::iomap`] claims
    /// the BAR it maps).
    pub fn request_region(&self, bar: c_int, name: &'static CStr) -> Result<Region> {
        // SAFETY: live pci_dev; `name` is static, as the resource tree keeps the pointer.
        to_result(unsafe { bindings::pci_request_region(self.0, bar, name.as_char_ptr()) })?;
        Ok(Region(*self, bar))
    }

    /// Claims BAR `bar` for `name` and maps it as I/O memory.
    pub fn iomap(&self, bar: c_int, name: &'static CStr) -> Result<IoMap> {
        #[cfg(not(qf_linux_7_3))]
        {
            let region = self.request_region(bar, name)?;
            // SAFETY: live pci_dev; `pci_iomap` checks the BAR and returns NULL on failure.
            let base = unsafe { bindings::pci_iomap(self.0, bar, 0) };
            if base.is_null() {
                return Err(ENOMEM);
            }
            let len = self.resource(bar as usize)?.1;
            Ok(IoMap {
                base,
                len,
                _region: region,
            })
        }
        #[cfg(qf_linux_7_3)]
        {
            let bar = u32::try_from(bar)?;
            let len = self.resource(bar as usize)?.1;
            Ok(IoMap {
                bar: self.bound().iomap_region(bar, name)?,
                len,
            })
        }
    }

    /// Lets the device master the bus (QEMU delivers MSI-X messages only then); called from
    /// probe.
    pub fn set_master(&self) {
        #[cfg(not(qf_linux_7_3))]
        // SAFETY: live, enabled pci_dev.
        unsafe {
            bindings::pci_set_master(self.0)
        };
        #[cfg(qf_linux_7_3)]
        self.core().set_master();
    }

    /// Allocates exactly `count` MSI-X vectors.
    pub fn alloc_msix(&self, count: u32) -> Result<MsixVectors> {
        #[cfg(not(qf_linux_7_3))]
        {
            // SAFETY: live, enabled pci_dev.
            let got = unsafe {
                bindings::pci_alloc_irq_vectors(self.0, count, count, bindings::PCI_IRQ_MSIX)
            };
            if got < 0 {
                return Err(Error::from_errno(got));
            }
            Ok(MsixVectors {
                dev: *self,
                count: got as u32,
            })
        }
        #[cfg(qf_linux_7_3)]
        {
            let types = kpci::IrqTypes::default().with(kpci::IrqType::MsiX);
            Ok(MsixVectors {
                vectors: self.bound().alloc_irq_vectors(count, count, types)?,
            })
        }
    }
}

/// The device enabled, undone by `pci_disable_device` (7.3's `kernel::pci` has no counterpart).
pub struct Enabled(Device);
impl Drop for Enabled {
    fn drop(&mut self) {
        // SAFETY: enabled in `Device::enable`, disabled once here.
        unsafe { bindings::pci_disable_device(self.0 .0) };
    }
}

/// `pci_request_region`, undone by `pci_release_region`.
pub struct Region(Device, c_int);
impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: requested in `Device::request_region`, released once here.
        unsafe { bindings::pci_release_region(self.0 .0, self.1) };
    }
}

/// A claimed and mapped BAR; 32-bit register access with bounds checks.
pub struct IoMap {
    #[cfg(not(qf_linux_7_3))]
    base: *mut c_void,
    #[cfg(not(qf_linux_7_3))]
    _region: Region,
    #[cfg(qf_linux_7_3)]
    bar: kpci::Bar<'static>,
    len: usize,
}

// SAFETY: MMIO registers may be accessed from any context; 32-bit reads and writes are atomic.
unsafe impl Send for IoMap {}
// SAFETY: see `Send`.
unsafe impl Sync for IoMap {}

impl IoMap {
    fn check(&self, offset: usize) -> Result {
        if offset % 4 != 0 || offset.checked_add(4).is_none_or(|end| end > self.len) {
            return Err(ERANGE);
        }
        Ok(())
    }

    pub fn read32(&self, offset: usize) -> Result<u32> {
        self.check(offset)?;
        #[cfg(not(qf_linux_7_3))]
        // SAFETY: `offset` is an aligned register inside the mapped BAR (checked above).
        return Ok(unsafe { mmio::read32(self.base.wrapping_byte_add(offset)) });
        #[cfg(qf_linux_7_3)]
        return (&self.bar).try_read32(offset);
    }

    pub fn write32(&self, offset: usize, value: u32) -> Result {
        self.check(offset)?;
        #[cfg(not(qf_linux_7_3))]
        // SAFETY: `offset` is an aligned register inside the mapped BAR (checked above).
        unsafe {
            mmio::write32(value, self.base.wrapping_byte_add(offset))
        };
        #[cfg(qf_linux_7_3)]
        (&self.bar).try_write32(value, offset)?;
        Ok(())
    }
}

/// `ioread32`/`iowrite32` for each architecture (Linux 6.12; 7.3's `Bar` has `readl`/`writel`). x86_64 (`GENERIC_IOMAP`) exports them as
/// functions, which bindgen binds; arm64 has them as static inlines (`readl`/`writel` in
/// `asm-generic/io.h` over `arch/arm64/include/asm/io.h`), which bindgen cannot bind, so they are
/// written out here as that header does them.
#[cfg(not(qf_linux_7_3))]
mod mmio {
    use kernel::ffi::c_void;

    /// # Safety
    /// `addr` is a mapped, 4-byte aligned MMIO register.
    #[cfg(not(target_arch = "aarch64"))]
    pub(super) unsafe fn read32(addr: *mut c_void) -> u32 {
        // SAFETY: the caller's contract is `ioread32`'s.
        unsafe { kernel::bindings::ioread32(addr) }
    }

    /// # Safety
    /// `addr` is a mapped, 4-byte aligned MMIO register.
    #[cfg(not(target_arch = "aarch64"))]
    pub(super) unsafe fn write32(value: u32, addr: *mut c_void) {
        // SAFETY: the caller's contract is `iowrite32`'s.
        unsafe { kernel::bindings::iowrite32(value, addr) }
    }

    /// arm64's `readl`: the load (`__raw_readl`), then `__iormb`: `dma_rmb()` (`dmb oshld`) and a
    /// control dependency on the value, so nothing after it (a DMA buffer read, a timer read)
    /// happens before the register was read.
    ///
    /// # Safety
    /// `addr` is a mapped, 4-byte aligned MMIO register.
    #[cfg(target_arch = "aarch64")]
    pub(super) unsafe fn read32(addr: *mut c_void) -> u32 {
        let value: u32;
        // SAFETY: the caller's contract: a single aligned 32-bit device load.
        unsafe {
            core::arch::asm!(
                "ldr {v:w}, [{a}]",
                "dmb oshld",
                "eor {t:w}, {v:w}, {v:w}",
                "cbnz {t:w}, .",
                a = in(reg) addr,
                v = out(reg) value,
                t = out(reg) _,
                options(nostack),
            )
        };
        value
    }

    /// arm64's `writel`: `__io_bw()` = `dma_wmb()` (`dmb oshst`), so the memory the device is
    /// told about is written before it is told, then the store (`__raw_writel`).
    ///
    /// # Safety
    /// `addr` is a mapped, 4-byte aligned MMIO register.
    #[cfg(target_arch = "aarch64")]
    pub(super) unsafe fn write32(value: u32, addr: *mut c_void) {
        // SAFETY: the caller's contract: a single aligned 32-bit device store.
        unsafe {
            core::arch::asm!(
                "dmb oshst",
                "str {v:w}, [{a}]",
                a = in(reg) addr,
                v = in(reg) value,
                options(nostack),
            )
        };
    }
}

#[cfg(not(qf_linux_7_3))]
impl Drop for IoMap {
    fn drop(&mut self) {
        // SAFETY: `base` came from `pci_iomap` on this device and is unmapped once, here (the
        // region is released after, by `_region`'s drop).
        unsafe { bindings::pci_iounmap(self._region.0 .0, self.base) };
    }
}

/// MSI-X vectors, freed on drop; every IRQ requested on them must be freed first (declare the
/// `ThreadedIrq`s before this guard).
pub struct MsixVectors {
    #[cfg(not(qf_linux_7_3))]
    dev: Device,
    #[cfg(not(qf_linux_7_3))]
    count: u32,
    #[cfg(qf_linux_7_3)]
    vectors: kpci::IrqVectorRegistration<'static>,
}

impl MsixVectors {
    /// The Linux IRQ number of vector `index` (`pci_irq_vector`).
    pub fn irq(&self, index: u32) -> Result<u32> {
        #[cfg(not(qf_linux_7_3))]
        {
            if index >= self.count {
                return Err(EINVAL);
            }
            // SAFETY: live device with `count` allocated vectors.
            let irq = unsafe { bindings::pci_irq_vector(self.dev.0, index) };
            if irq < 0 {
                return Err(Error::from_errno(irq));
            }
            Ok(irq as u32)
        }
        #[cfg(qf_linux_7_3)]
        Ok(kernel::irq::IrqRequest::from(self.vectors.index(index as usize)?).irq())
    }
}

#[cfg(not(qf_linux_7_3))]
impl Drop for MsixVectors {
    fn drop(&mut self) {
        // SAFETY: allocated in `Device::alloc_msix`, freed once here.
        unsafe { bindings::pci_free_irq_vectors(self.dev.0) };
    }
}
