//! The board's shared memory: one memfd (what QEMU maps as BAR2), and the emulator's own view of
//! it by offset, through `vm-memory`, for the control block and the resource table.

use std::ffi::CString;
use std::fs::File;
use std::sync::atomic::Ordering;

use nix::sys::memfd::{memfd_create, MemFdCreateFlag};
use vm_memory::{Bytes, FileOffset, GuestAddress, GuestMemoryMmap, GuestRegionMmap, MmapRegion};

use crate::layout::{control, MIN_SHM_SIZE};

/// Errors creating or mapping the shared memory.
#[derive(Debug, thiserror::Error)]
pub enum ShmError {
    #[error("--shm-size {0}: must be a power of two (a PCI BAR) of at least {MIN_SHM_SIZE} bytes")]
    BadSize(u64),
    #[error("shared-memory file {path}: {source}")]
    Open {
        path: String,
        source: std::io::Error,
    },
    #[error("creating the shared-memory memfd: {0}")]
    Create(#[source] nix::Error),
    #[error("sizing the shared-memory memfd to {size} bytes: {source}")]
    Resize { size: u64, source: std::io::Error },
    #[error("mapping the shared memory at {at:#x} ({size} bytes): {reason}")]
    Map { at: u64, size: u64, reason: String },
    #[error("shared-memory access at offset {offset:#x}: {reason}")]
    Access { offset: u64, reason: String },
}

/// Whether the shared memory can have `size` bytes: a power of two (a PCI BAR) of at least
/// `MIN_SHM_SIZE`, whichever way it is made or opened.
pub const fn valid_size(size: u64) -> bool {
    size >= MIN_SHM_SIZE && size.is_power_of_two()
}

/// Maps `size` bytes of `file` as one `GuestMemoryMmap` region starting at `at`.
pub fn map_file(file: &File, size: u64, at: u64) -> Result<GuestRegionMmap, ShmError> {
    let map_err = |reason: String| ShmError::Map { at, size, reason };
    let clone = file.try_clone().map_err(|e| map_err(e.to_string()))?;
    let region = MmapRegion::from_file(FileOffset::new(clone, 0), size as usize)
        .map_err(|e| map_err(e.to_string()))?;
    GuestRegionMmap::new(region, GuestAddress(at))
        .ok_or_else(|| map_err("address + size overflows".to_string()))
}

/// The shared memory, owned by the emulator (it is the ivshmem server).
pub struct SharedMemory {
    file: File,
    size: u64,
    by_offset: GuestMemoryMmap,
}

impl SharedMemory {
    /// Creates a zeroed memfd of `size` bytes and maps it by offset.
    pub fn create(size: u64) -> Result<SharedMemory, ShmError> {
        if !valid_size(size) {
            return Err(ShmError::BadSize(size));
        }
        let name = CString::new("qf-mcu-emu-shm").map_err(|e| ShmError::Map {
            at: 0,
            size,
            reason: e.to_string(),
        })?;
        let fd = memfd_create(&name, MemFdCreateFlag::MFD_CLOEXEC).map_err(ShmError::Create)?;
        let file = File::from(fd);
        file.set_len(size)
            .map_err(|source| ShmError::Resize { size, source })?;
        Self::from_file(file, size)
    }

    /// Creates (or truncates) the file at `path`, `size` zero bytes, and maps it by offset: the
    /// board's memory when the MCU is a QEMU machine whose RAM is this file.
    pub fn create_file(path: &std::path::Path, size: u64) -> Result<SharedMemory, ShmError> {
        if !valid_size(size) {
            return Err(ShmError::BadSize(size));
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|source| ShmError::Open {
                path: path.display().to_string(),
                source,
            })?;
        file.set_len(size)
            .map_err(|source| ShmError::Resize { size, source })?;
        Self::from_file(file, size)
    }

    /// Opens the existing shared-memory file at `path` (made by [`SharedMemory::create_file`])
    /// and maps all of it by offset.
    pub fn open_file(path: &std::path::Path) -> Result<SharedMemory, ShmError> {
        let opened = |source| ShmError::Open {
            path: path.display().to_string(),
            source,
        };
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(opened)?;
        let size = file.metadata().map_err(opened)?.len();
        if !valid_size(size) {
            return Err(ShmError::Map {
                at: 0,
                size,
                reason: format!(
                    "{}: not a power of two of at least {MIN_SHM_SIZE} bytes",
                    path.display()
                ),
            });
        }
        Self::from_file(file, size)
    }

    /// Maps an existing shared-memory file by offset (the test-side guest uses this too).
    pub fn from_file(file: File, size: u64) -> Result<SharedMemory, ShmError> {
        let region = map_file(&file, size, 0)?;
        let by_offset = GuestMemoryMmap::from_regions(vec![region]).map_err(|e| ShmError::Map {
            at: 0,
            size,
            reason: e.to_string(),
        })?;
        Ok(SharedMemory {
            file,
            size,
            by_offset,
        })
    }

    /// The memfd (sent to QEMU, mapped again for the session windows).
    pub fn file(&self) -> &File {
        &self.file
    }

    /// Bytes of shared memory.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Atomically reads a control-block u32.
    pub fn load_u32(&self, offset: u64) -> Result<u32, ShmError> {
        self.by_offset
            .load(GuestAddress(offset), Ordering::Acquire)
            .map_err(|e| access(offset, e))
    }

    /// Atomically writes a control-block u32.
    pub fn store_u32(&self, offset: u64, value: u32) -> Result<(), ShmError> {
        self.by_offset
            .store(value, GuestAddress(offset), Ordering::Release)
            .map_err(|e| access(offset, e))
    }

    /// Atomically reads an aligned u64 (`bar2_pa`).
    pub fn load_u64(&self, offset: u64) -> Result<u64, ShmError> {
        self.by_offset
            .load(GuestAddress(offset), Ordering::Acquire)
            .map_err(|e| access(offset, e))
    }

    /// Atomically writes an aligned u64.
    pub fn store_u64(&self, offset: u64, value: u64) -> Result<(), ShmError> {
        self.by_offset
            .store(value, GuestAddress(offset), Ordering::Release)
            .map_err(|e| access(offset, e))
    }

    /// Copies `bytes` to `offset`.
    pub fn write(&self, offset: u64, bytes: &[u8]) -> Result<(), ShmError> {
        self.by_offset
            .write_slice(bytes, GuestAddress(offset))
            .map_err(|e| access(offset, e))
    }

    /// Copies `out.len()` bytes from `offset`.
    pub fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), ShmError> {
        self.by_offset
            .read_slice(out, GuestAddress(offset))
            .map_err(|e| access(offset, e))
    }

    /// Zeroes `len` bytes at `offset`.
    pub fn zero(&self, offset: u64, len: u64) -> Result<(), ShmError> {
        const CHUNK: [u8; 4096] = [0; 4096];
        let mut done = 0;
        while done < len {
            let n = (len - done).min(CHUNK.len() as u64);
            self.write(offset + done, &CHUNK[..n as usize])?;
            done += n;
        }
        Ok(())
    }

    /// Increments a control-block counter (only its single writer may call this).
    pub fn bump_u32(&self, offset: u64) -> Result<u32, ShmError> {
        let next = self.load_u32(offset)?.wrapping_add(1);
        self.store_u32(offset, next)?;
        Ok(next)
    }

    /// Clears the whole control block.
    pub fn clear_control(&self) -> Result<(), ShmError> {
        self.zero(crate::layout::CONTROL_OFFSET, control::LEN)
    }
}

fn access(offset: u64, error: impl std::fmt::Display) -> ShmError {
    ShmError::Access {
        offset,
        reason: error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_that_are_not_a_power_of_two_or_too_small_are_refused() {
        assert!(matches!(
            SharedMemory::create(3 << 20),
            Err(ShmError::BadSize(_))
        ));
        assert!(matches!(
            SharedMemory::create(1 << 20),
            Err(ShmError::BadSize(_))
        ));
    }

    #[test]
    fn two_mappings_of_the_memfd_see_the_same_bytes() {
        let shm = SharedMemory::create(2 << 20).unwrap();
        let other = SharedMemory::from_file(shm.file().try_clone().unwrap(), shm.size()).unwrap();
        shm.store_u32(control::HEARTBEAT, 77).unwrap();
        assert_eq!(other.load_u32(control::HEARTBEAT).unwrap(), 77);
        other.store_u64(control::BAR2_PA, 0xfe00_0000).unwrap();
        assert_eq!(shm.load_u64(control::BAR2_PA).unwrap(), 0xfe00_0000);
    }

    #[test]
    fn access_beyond_the_end_is_an_error_not_a_crash() {
        let shm = SharedMemory::create(2 << 20).unwrap();
        assert!(shm.load_u32(2 << 20).is_err());
    }
}
