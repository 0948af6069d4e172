// SPDX-License-Identifier: GPL-2.0
//! remoteproc for a processor that is already running when Linux comes up (attach mode):
//! allocation with a typed set of callbacks, registration, carveouts, crash reports, virtqueue
//! interrupts and an extra subdevice. The C core does the resource-table and virtio work.

use super::err_ptr;
use core::sync::atomic::{AtomicBool, Ordering};
use kernel::bindings;
use kernel::error::{code::*, to_result, Result};
use kernel::ffi::{c_int, c_void};
use kernel::str::CStr;
// 7.3: `CStr` is core's, `as_char_ptr` comes from this trait.
#[cfg(qf_linux_7_3)]
use kernel::str::CStrExt as _;

#[allow(improper_ctypes)] // `struct rproc` is only passed by pointer.
extern "C" {
    // Exported by remoteproc_virtio.c but declared only in the core's private header.
    fn rproc_vq_interrupt(rproc: *mut bindings::rproc, notifyid: c_int) -> bindings::irqreturn_t;
}

/// The platform half of a remote processor: what `struct rproc_ops` does for our hardware.
pub trait Platform {
    type Data: Sync;
    /// Registers carveouts before the core parses the resource table.
    fn prepare(rproc: &Rproc, data: &Self::Data) -> Result;
    /// The resource table the running remote published: kernel address and size.
    fn resource_table(rproc: &Rproc, data: &Self::Data) -> Result<(*mut u8, usize)>;
    /// Connects to the running remote (also called again by crash recovery).
    fn attach(rproc: &Rproc, data: &Self::Data) -> Result;
    /// Tells the remote Linux is gone; it keeps running.
    fn detach(rproc: &Rproc, data: &Self::Data) -> Result;
    /// Notifies the remote that virtqueue `vqid` has new buffers. May be called in atomic context.
    fn kick(rproc: &Rproc, data: &Self::Data, vqid: i32);
}

/// A `struct rproc` pointer; the core owns the object, [`Owned`] owns our reference.
#[derive(Clone, Copy)]
pub struct Rproc(*mut bindings::rproc);

// SAFETY: the core serializes its own use of the object with `rproc->lock`; the fields we touch
// are read racily only for monitoring (documented at each use) or written under that lock.
unsafe impl Send for Rproc {}
// SAFETY: see `Send`.
unsafe impl Sync for Rproc {}

fn data_of<'a, P: Platform>(rproc: *mut bindings::rproc) -> &'a P::Data {
    // SAFETY: `priv` holds the `&P::Data` stored by `Owned::alloc`, whose caller keeps it alive
    // for as long as the rproc exists (contract of `alloc`).
    unsafe { &**((*rproc).priv_ as *const *const P::Data) }
}

unsafe extern "C" fn prepare_tramp<P: Platform>(r: *mut bindings::rproc) -> c_int {
    match P::prepare(&Rproc(r), data_of::<P>(r)) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

unsafe extern "C" fn table_tramp<P: Platform>(
    r: *mut bindings::rproc,
    size: *mut usize,
) -> *mut bindings::resource_table {
    match P::resource_table(&Rproc(r), data_of::<P>(r)) {
        Ok((table, len)) => {
            // SAFETY: the core passes a valid `size_t *`.
            unsafe { *size = len };
            table.cast()
        }
        Err(e) => err_ptr(e),
    }
}

unsafe extern "C" fn attach_tramp<P: Platform>(r: *mut bindings::rproc) -> c_int {
    match P::attach(&Rproc(r), data_of::<P>(r)) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

unsafe extern "C" fn detach_tramp<P: Platform>(r: *mut bindings::rproc) -> c_int {
    match P::detach(&Rproc(r), data_of::<P>(r)) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

unsafe extern "C" fn kick_tramp<P: Platform>(r: *mut bindings::rproc, vqid: c_int) {
    P::kick(&Rproc(r), data_of::<P>(r), vqid)
}

/// The states of `enum rproc_state` we act on.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum State {
    Attached,
    Detached,
    Crashed,
    Other(u32),
}

impl Rproc {
    /// The core's state. Read without `rproc->lock`: a monitoring snapshot that may be stale by
    /// the time it is used; decisions that must be exact are made by the core under its lock.
    pub fn state(&self) -> State {
        // SAFETY: live rproc; an aligned u32 read cannot tear.
        let s = unsafe { core::ptr::read_volatile(core::ptr::addr_of!((*self.0).state)) };
        match s {
            bindings::rproc_state_RPROC_ATTACHED => State::Attached,
            bindings::rproc_state_RPROC_DETACHED => State::Detached,
            bindings::rproc_state_RPROC_CRASHED => State::Crashed,
            other => State::Other(other),
        }
    }

    /// `rproc->dev`, for allocations tied to the remote processor.
    pub fn dev(&self) -> *mut bindings::device {
        // SAFETY: live rproc; taking a field's address reads nothing.
        unsafe { core::ptr::addr_of_mut!((*self.0).dev) }
    }

    /// Registers a carveout named `name` (`rproc_mem_entry_init` + `rproc_add_carveout`).
    /// `va` is the kernel mapping, or null to let whoever uses the carveout map `dma` itself.
    pub fn add_carveout(
        &self,
        dev: *mut bindings::device,
        va: *mut u8,
        dma: u64,
        len: usize,
        da: u32,
        name: &CStr,
    ) -> Result {
        // 32-bit Arm without LPAE has 32-bit bus addresses: one above 4 GiB cannot be a carveout.
        let dma = bindings::dma_addr_t::try_from(dma).map_err(|_| ERANGE)?;
        // SAFETY: `dev` is the parent device; `name` is passed as the format of a "%s"-free
        // string (our names have no '%'); the entry is owned by the core once added.
        let mem = unsafe {
            bindings::rproc_mem_entry_init(
                dev,
                va.cast(),
                dma,
                len,
                da,
                None,
                None,
                name.as_char_ptr(),
            )
        };
        if mem.is_null() {
            return Err(ENOMEM);
        }
        // SAFETY: `mem` is a fresh entry; called from `ops->prepare` under the core's lock.
        unsafe { bindings::rproc_add_carveout(self.0, mem) };
        Ok(())
    }

    /// Reports a crash the way a board's watchdog interrupt would (callable in atomic context).
    pub fn report_watchdog_crash(&self) {
        // SAFETY: live rproc.
        unsafe { bindings::rproc_report_crash(self.0, bindings::rproc_crash_type_RPROC_WATCHDOG) };
    }

    /// Tells the core that virtqueue `notifyid` may have new used buffers; runs its callback.
    /// Must not run concurrently with itself for the same queue (call it from one IRQ thread).
    pub fn vq_interrupt(&self, notifyid: i32) {
        // SAFETY: live rproc; the core looks the id up and ignores unknown or torn-down queues.
        unsafe { rproc_vq_interrupt(self.0, notifyid) };
    }

    /// Points the core at the remote's freshly published table after a crash recovery.
    ///
    /// Linux 6.12's attach-on-recovery (`__rproc_detach` then `__rproc_attach`) leaves
    /// `table_ptr` on a private copy (so the remote never sees `DRIVER_OK` again) and
    /// `clean_table` freed but not cleared (a second recovery would free it twice). This does
    /// what `rproc_set_rsc_table` does on a first attach: table in shared memory, a fresh clean
    /// copy. Only valid from `Platform::attach`, which the core calls under `rproc->lock`.
    pub fn reinstall_table_after_recovery(&self, table: *mut u8, len: usize) -> Result {
        // SAFETY: we are inside `ops->attach` (caller's contract), so the core holds the lock and
        // nobody else reads these fields; `cached_table` was allocated by the core with kmalloc.
        unsafe {
            let r = self.0;
            if (*r).cached_table.is_null() {
                return Ok(()); // First attach: `rproc_set_rsc_table` already did this.
            }
            if len != (*r).table_sz {
                return Err(EINVAL);
            }
            let clean = bindings::kmemdup_noprof(table.cast::<c_void>(), len, bindings::GFP_KERNEL);
            if clean.is_null() {
                return Err(ENOMEM);
            }
            bindings::kfree((*r).cached_table.cast::<c_void>());
            (*r).cached_table = core::ptr::null_mut();
            (*r).clean_table = clean.cast();
            (*r).table_ptr = table.cast();
        }
        Ok(())
    }

    /// Recovery could not reach the remote (the driver is going away): keep the private copy
    /// the core installed, and forget the freed clean copy so nothing frees it again.
    pub fn forget_clean_table_after_recovery(&self) {
        // SAFETY: as in `reinstall_table_after_recovery`.
        unsafe {
            if !(*self.0).cached_table.is_null() {
                (*self.0).clean_table = core::ptr::null_mut();
            }
        }
    }
}

/// Our reference to an allocated rproc; [`Owned::release`] (or drop) deletes and frees it.
pub struct Owned {
    rproc: Rproc,
    added: AtomicBool,
    released: AtomicBool,
}

/// An rproc pointer published after construction (the rproc needs its platform data first).
pub struct RprocCell(core::sync::atomic::AtomicPtr<bindings::rproc>);

impl RprocCell {
    pub const fn new() -> Self {
        Self(core::sync::atomic::AtomicPtr::new(core::ptr::null_mut()))
    }

    pub fn set(&self, rproc: Rproc) {
        self.0.store(rproc.0, Ordering::Release);
    }

    pub fn get(&self) -> Option<Rproc> {
        let p = self.0.load(Ordering::Acquire);
        (!p.is_null()).then_some(Rproc(p))
    }
}

impl Owned {
    /// Allocates an rproc in attach mode (state DETACHED, recovery by re-attaching) with `P`'s
    /// callbacks.
    ///
    /// # Safety
    /// `data` must stay alive and unmoved until the returned value is dropped.
    pub unsafe fn alloc<P: Platform>(
        parent: *mut bindings::device,
        name: &'static CStr,
        data: &P::Data,
    ) -> Result<Self> {
        let ops = bindings::rproc_ops {
            prepare: Some(prepare_tramp::<P>),
            get_loaded_rsc_table: Some(table_tramp::<P>),
            attach: Some(attach_tramp::<P>),
            detach: Some(detach_tramp::<P>),
            // Linux cannot power the MCU off: stopping is detaching (`rproc_shutdown` needs it).
            stop: Some(detach_tramp::<P>),
            kick: Some(kick_tramp::<P>),
            ..Default::default()
        };
        // SAFETY: `parent` is a live device; the core copies `ops`; `priv` gets room for one
        // pointer, written below before the rproc is visible to anyone.
        let r = unsafe {
            bindings::rproc_alloc(
                parent,
                name.as_char_ptr(),
                &ops,
                core::ptr::null(),
                core::mem::size_of::<*const P::Data>() as c_int,
            )
        };
        if r.is_null() {
            return Err(ENOMEM);
        }
        // SAFETY: `r` is a fresh rproc nobody else knows yet.
        unsafe {
            *((*r).priv_ as *mut *const P::Data) = data;
            (*r).state = bindings::rproc_state_RPROC_DETACHED;
            (*r).features[0] |= 1 << bindings::rproc_features_RPROC_FEAT_ATTACH_ON_RECOVERY;
        }
        Ok(Self {
            rproc: Rproc(r),
            added: AtomicBool::new(false),
            released: AtomicBool::new(false),
        })
    }

    pub fn rproc(&self) -> Rproc {
        self.rproc
    }

    pub fn is_added(&self) -> bool {
        self.added.load(Ordering::Acquire)
    }

    /// `rproc_add`: registers the device and, since it is DETACHED with auto-boot, attaches
    /// synchronously (prepare, resource table, vdevs, attach, subdevices).
    /// Call from one thread only (ours: the watchdog), never after [`Owned::release`].
    pub fn add(&self) -> Result {
        if self.is_added() || self.released.load(Ordering::Acquire) {
            return Err(EBUSY);
        }
        // SAFETY: live, not yet added rproc. If `rproc_add` fails after `device_add`, the core
        // has already `device_del`ed it; our reference stays valid for `rproc_free`.
        to_result(unsafe { bindings::rproc_add(self.rproc.0) })?;
        self.added.store(true, Ordering::Release);
        Ok(())
    }

    /// Waits for a crash report's recovery work to finish (`flush_work(&rproc->crash_handler)`).
    pub fn flush_recovery(&self) {
        // SAFETY: live rproc; its crash work is initialized by `rproc_alloc`.
        unsafe { bindings::flush_work(core::ptr::addr_of_mut!((*self.rproc.0).crash_handler)) };
    }
}

impl Owned {
    /// Deletes (if added) and frees the rproc, once; later calls do nothing. The caller must
    /// have stopped everything that calls [`Owned::add`] or reports crashes.
    pub fn release(&self) {
        if self.released.swap(true, Ordering::AcqRel) {
            return;
        }
        // A queued crash report would run on a freed rproc: let it finish first (the core does
        // not cancel it in rproc_del).
        self.flush_recovery();
        if self.is_added() {
            // SAFETY: added in `add`, deleted once here (guarded by `released`).
            unsafe { bindings::rproc_del(self.rproc.0) };
        }
        // SAFETY: allocated in `alloc`; our reference is dropped once, here.
        unsafe { bindings::rproc_free(self.rproc.0) };
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        self.release();
    }
}

/// An extra remoteproc subdevice whose `start`/`stop` run after/before the vdevs' (it is kept
/// last in the list: subdevices start in list order and stop in reverse).
pub trait SubdevHooks {
    type Data: Sync;
    fn start(data: &Self::Data);
    fn stop(data: &Self::Data);
}

/// A `struct rproc_subdev` with a back pointer to its data.
#[repr(C)]
pub struct Subdev {
    raw: bindings::rproc_subdev,
    data: core::sync::atomic::AtomicPtr<c_void>,
    linked: AtomicBool,
}

// SAFETY: the list node is only touched by the core under `rproc->lock`.
unsafe impl Send for Subdev {}
// SAFETY: see `Send`.
unsafe impl Sync for Subdev {}

unsafe extern "C" fn subdev_start<H: SubdevHooks>(s: *mut bindings::rproc_subdev) -> c_int {
    // SAFETY: `s` is the first field of a `#[repr(C)] Subdev` created by `Subdev::new::<H>`,
    // whose `data` is a live `&H::Data` (contract of `new`).
    H::start(unsafe { &*((*s.cast::<Subdev>()).data.load(Ordering::Acquire) as *const H::Data) });
    0
}

unsafe extern "C" fn subdev_stop<H: SubdevHooks>(s: *mut bindings::rproc_subdev, _crashed: bool) {
    // SAFETY: as in `subdev_start`.
    H::stop(unsafe { &*((*s.cast::<Subdev>()).data.load(Ordering::Acquire) as *const H::Data) });
}

impl Subdev {
    /// A subdevice running `H`'s hooks on data given later by [`Subdev::bind`] (so the data
    /// can contain the subdevice).
    pub fn new<H: SubdevHooks>() -> Self {
        let raw = bindings::rproc_subdev {
            start: Some(subdev_start::<H>),
            stop: Some(subdev_stop::<H>),
            ..Default::default()
        };
        Self {
            raw,
            data: core::sync::atomic::AtomicPtr::new(core::ptr::null_mut()),
            linked: AtomicBool::new(false),
        }
    }

    /// Gives the hooks their data; must happen before [`Subdev::move_to_tail`].
    ///
    /// # Safety
    /// `data` must be the `H::Data` of the `H` given to `new`, and outlive every rproc the
    /// subdevice is linked into; the subdevice itself must not move once linked.
    pub unsafe fn bind<D: Sync>(&self, data: &D) {
        self.data
            .store(data as *const D as *mut c_void, Ordering::Release);
    }

    /// (Re)links the subdevice at the tail of `rproc`'s list. Call only where the core holds
    /// `rproc->lock` (inside a `Platform` callback) so the list is not walked meanwhile.
    pub fn move_to_tail(&self, rproc: &Rproc) {
        let raw = &self.raw as *const bindings::rproc_subdev as *mut bindings::rproc_subdev;
        if self.data.load(Ordering::Acquire).is_null() {
            return; // Unbound hooks would dereference null.
        }
        // SAFETY: the core holds the lock (caller's contract); `linked` says whether `raw` is
        // currently in the list, so it is removed only if present.
        unsafe {
            if self.linked.swap(true, Ordering::AcqRel) {
                bindings::rproc_remove_subdev(rproc.0, raw);
            }
            bindings::rproc_add_subdev(rproc.0, raw);
        }
    }
}
