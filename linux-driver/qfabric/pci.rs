// SPDX-License-Identifier: GPL-2.0
//! PCI: registering a driver for one vendor/device id, and RAII guards for the steps of a probe
//! (enable, claim the BARs, map a BAR, allocate MSI-X vectors), each undone on drop, so a probe
//! that fails half-way unwinds by returning and a remove is "drop in the right order".

use kernel::bindings;
use kernel::error::{code::*, to_result, Result};
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;
use kernel::str::CStr;

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

    /// Physical start and length of BAR `bar` (`pci_resource_start/len`).
    pub fn resource(&self, bar: usize) -> Result<(u64, usize)> {
        if bar >= 6 {
            return Err(EINVAL);
        }
        // SAFETY: live pci_dev (type invariant); `resource` has more than 6 entries.
        let r = unsafe { &(*self.0).resource[bar] };
        if r.start == 0 || r.end < r.start {
            return Err(ENODEV);
        }
        Ok((r.start, (r.end - r.start + 1) as usize))
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

    pub fn enable(&self) -> Result<Enabled> {
        // SAFETY: live pci_dev.
        to_result(unsafe { bindings::pci_enable_device(self.0) })?;
        Ok(Enabled(*self))
    }

    /// Claims all BARs for `name`.
    pub fn request_regions(&self, name: &'static CStr) -> Result<Regions> {
        // SAFETY: live pci_dev; `name` is static, as the resource tree keeps the pointer.
        to_result(unsafe { bindings::pci_request_regions(self.0, name.as_char_ptr()) })?;
        Ok(Regions(*self))
    }

    /// Maps BAR `bar` as I/O memory (`pci_iomap`).
    pub fn iomap(&self, bar: c_int) -> Result<IoMap> {
        // SAFETY: live pci_dev; `pci_iomap` checks the BAR and returns NULL on failure.
        let base = unsafe { bindings::pci_iomap(self.0, bar, 0) };
        if base.is_null() {
            return Err(ENOMEM);
        }
        let len = self.resource(bar as usize)?.1;
        Ok(IoMap {
            dev: *self,
            base,
            len,
        })
    }

    /// Lets the device master the bus; QEMU delivers MSI-X messages only then.
    pub fn set_master(&self) {
        // SAFETY: live, enabled pci_dev.
        unsafe { bindings::pci_set_master(self.0) };
    }

    /// Allocates exactly `count` MSI-X vectors.
    pub fn alloc_msix(&self, count: u32) -> Result<MsixVectors> {
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
}

/// `pci_enable_device`, undone by `pci_disable_device`.
pub struct Enabled(Device);
impl Drop for Enabled {
    fn drop(&mut self) {
        // SAFETY: enabled in `Device::enable`, disabled once here.
        unsafe { bindings::pci_disable_device(self.0 .0) };
    }
}

/// `pci_request_regions`, undone by `pci_release_regions`.
pub struct Regions(Device);
impl Drop for Regions {
    fn drop(&mut self) {
        // SAFETY: requested in `Device::request_regions`, released once here.
        unsafe { bindings::pci_release_regions(self.0 .0) };
    }
}

/// A mapped BAR (`pci_iomap`); 32-bit register access with bounds checks.
pub struct IoMap {
    dev: Device,
    base: *mut c_void,
    len: usize,
}

// SAFETY: MMIO registers may be accessed from any context; `ioread32`/`iowrite32` are atomic.
unsafe impl Send for IoMap {}
// SAFETY: see `Send`.
unsafe impl Sync for IoMap {}

impl IoMap {
    pub fn read32(&self, offset: usize) -> Result<u32> {
        if offset % 4 != 0 || offset + 4 > self.len {
            return Err(ERANGE);
        }
        // SAFETY: `offset` is an aligned register inside the mapped BAR (checked above).
        Ok(unsafe { mmio::read32(self.base.wrapping_byte_add(offset)) })
    }

    pub fn write32(&self, offset: usize, value: u32) -> Result {
        if offset % 4 != 0 || offset + 4 > self.len {
            return Err(ERANGE);
        }
        // SAFETY: `offset` is an aligned register inside the mapped BAR (checked above).
        unsafe { mmio::write32(value, self.base.wrapping_byte_add(offset)) };
        Ok(())
    }
}

/// `ioread32`/`iowrite32` for each architecture. x86_64 (`GENERIC_IOMAP`) exports them as
/// functions, which bindgen binds; arm64 has them as static inlines (`readl`/`writel` in
/// `asm-generic/io.h` over `arch/arm64/include/asm/io.h`), which bindgen cannot bind, so they are
/// written out here as that header does them.
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

impl Drop for IoMap {
    fn drop(&mut self) {
        // SAFETY: `base` came from `pci_iomap` on this device and is unmapped once, here.
        unsafe { bindings::pci_iounmap(self.dev.0, self.base) };
    }
}

/// MSI-X vectors (`pci_alloc_irq_vectors`), freed on drop; every IRQ requested on them must be
/// freed first (declare the `ThreadedIrq`s before this guard).
pub struct MsixVectors {
    dev: Device,
    count: u32,
}

impl MsixVectors {
    /// The Linux IRQ number of vector `index` (`pci_irq_vector`).
    pub fn irq(&self, index: u32) -> Result<u32> {
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
}

impl Drop for MsixVectors {
    fn drop(&mut self) {
        // SAFETY: allocated in `Device::alloc_msix`, freed once here.
        unsafe { bindings::pci_free_irq_vectors(self.dev.0) };
    }
}
