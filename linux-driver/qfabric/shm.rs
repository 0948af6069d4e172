// SPDX-License-Identifier: GPL-2.0
//! A window of memory shared with another agent (here: ivshmem BAR2, shared with the MCU
//! emulator). Every access is volatile and bounds-checked, because the other side changes the
//! contents at any time and a bad offset must be an error, never a stray access.

use kernel::bindings;
use kernel::error::{code::*, Result};
use kernel::ffi::c_void;

/// A `memremap`ped physical range, unmapped on drop.
pub struct Shm {
    base: *mut u8,
    len: usize,
    phys: u64,
}

// SAFETY: the mapping is plain memory; every access goes through volatile reads/writes, and
// concurrent access from several contexts is exactly what shared memory is for.
unsafe impl Send for Shm {}
// SAFETY: see `Send`: no method hands out references, only copies of values.
unsafe impl Sync for Shm {}

impl Shm {
    /// Maps `len` bytes at physical address `phys` write-combined (the attribute
    /// `dma_declare_coherent_memory` uses for the rest of the BAR, so x86 PAT sees no conflict).
    pub fn map_wc(phys: u64, len: usize) -> Result<Self> {
        // 32-bit Arm without LPAE has 32-bit physical addresses: none above 4 GiB is mappable.
        let offset = bindings::resource_size_t::try_from(phys).map_err(|_| ERANGE)?;
        // SAFETY: `memremap` validates the range itself and returns NULL on failure.
        let base = unsafe { bindings::memremap(offset, len, bindings::MEMREMAP_WC as _) };
        if base.is_null() {
            return Err(ENOMEM);
        }
        Ok(Self {
            base: base.cast(),
            len,
            phys,
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// The physical address the window starts at.
    pub fn phys(&self) -> u64 {
        self.phys
    }

    /// Kernel virtual address of `[offset, offset + len)`, if it lies inside the window.
    pub fn ptr(&self, offset: usize, len: usize) -> Result<*mut u8> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok(self.base.wrapping_add(offset)),
            _ => Err(ERANGE),
        }
    }

    pub fn read_u32(&self, offset: usize) -> Result<u32> {
        if offset % 4 != 0 {
            return Err(EINVAL);
        }
        let p = self.ptr(offset, 4)?;
        // SAFETY: `p` is 4-byte aligned and inside the live mapping (checked above).
        Ok(u32::from_le(unsafe {
            core::ptr::read_volatile(p.cast::<u32>())
        }))
    }

    pub fn write_u32(&self, offset: usize, value: u32) -> Result {
        if offset % 4 != 0 {
            return Err(EINVAL);
        }
        let p = self.ptr(offset, 4)?;
        // SAFETY: `p` is 4-byte aligned and inside the live mapping (checked above).
        unsafe { core::ptr::write_volatile(p.cast::<u32>(), value.to_le()) };
        Ok(())
    }

    /// Writes a u64 as two u32 halves, low first (the layout of a little-endian u64; the reader
    /// is told to read it only after a later field changed, so tearing is not observable).
    pub fn write_u64(&self, offset: usize, value: u64) -> Result {
        self.write_u32(offset, value as u32)?;
        self.write_u32(offset + 4, (value >> 32) as u32)
    }
}

impl Drop for Shm {
    fn drop(&mut self) {
        // SAFETY: `base` came from `memremap` in `map_wc` and is unmapped exactly once, here.
        unsafe { bindings::memunmap(self.base.cast::<c_void>()) };
    }
}
