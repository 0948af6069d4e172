// SPDX-License-Identifier: GPL-2.0
//! `qfabric_rpmsg`: dispatch of QFabric requests to the MCU from the kernel.
//!
//! For every rpmsg channel named `qfabric` (the MCU announces it through the name service) the
//! driver creates its own endpoint and a misc device `/dev/qfabricN`. A caller hands a request
//! frame to `QF_IOC_INVOKE` and sleeps; the driver sends the frame, and the endpoint's receive
//! callback matches the reply to the waiting caller by (task id, invocation id) and wakes it.
//! Any number of threads and processes share the channel without a user-space relay and
//! without taking each other's replies. Responses nobody waits for (a resident chain's results)
//! are queued for `read()`. The user ABI is `docs/qfabric-dev.md`; `qf_execution::qfabric_dev` is
//! the user side.
//!
//! This file is the module's frame: registration, probe/remove and the file operations' C
//! entry points. `qfabric_rpmsg/channel.rs` does the work, `state.rs` keeps the waiting callers
//! and the read queue, `abi.rs` knows the bytes.

use core::sync::atomic::{AtomicPtr, AtomicU32, Ordering};
use kernel::error::code::*;
use kernel::ffi::{c_int, c_long, c_uint, c_ulong, c_void};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::{Arc, ArcBorrow};
use kernel::{bindings, c_str};

#[path = "qfabric_rpmsg/abi.rs"]
mod abi;
#[path = "qfabric_rpmsg/channel.rs"]
mod channel;
mod qfabric;
#[path = "qfabric_rpmsg/state.rs"]
mod state;

use abi::uapi;
use channel::Channel;
use qfabric::misc::{FileOps, MiscDevice};
use qfabric::rpmsg::{self, Device, Endpoint};
use state::{Queue, MAX_FRAME};

qfabric::module! {
    type: QfabricRpmsg,
    name: "qfabric_rpmsg",
    author: "qfabric",
    description: "/dev/qfabricN: QFabric requests to the MCU dispatched by the kernel over rpmsg",
    license: "GPL",
}

/// The channel the MCU announces.
const CHANNEL: &CStr = c_str!("qfabric");
/// Channels (MCUs) served at the same time: `/dev/qfabric0` .. `/dev/qfabric7`.
const MAX_CHANNELS: u32 = 8;

/// `/dev/qfabricN` numbers in use, one bit each.
static INDICES: AtomicU32 = AtomicU32::new(0);

fn take_index() -> Result<u32> {
    let mut used = INDICES.load(Ordering::Relaxed);
    loop {
        let index = (!used).trailing_zeros();
        if index >= MAX_CHANNELS {
            return Err(ENOSPC);
        }
        match INDICES.compare_exchange(used, used | 1 << index, Ordering::AcqRel, Ordering::Relaxed)
        {
            Ok(_) => return Ok(index),
            Err(now) => used = now,
        }
    }
}

fn give_back_index(index: u32) {
    INDICES.fetch_and(!(1 << index), Ordering::AcqRel);
}

/// The file operations of every `/dev/qfabricN`; set in `init` before the driver registers.
static FOPS: AtomicPtr<FileOps> = AtomicPtr::new(core::ptr::null_mut());

unsafe extern "C" fn rx(
    _rpdev: *mut bindings::rpmsg_device,
    data: *mut c_void,
    len: c_int,
    private: *mut c_void,
    _src: u32,
) -> c_int {
    if data.is_null() || len < 0 {
        return 0;
    }
    // SAFETY: `private` is the `Arc<Channel>` reference that probe handed to the endpoint and
    // that remove drops only after `Endpoint::destroy` returned; `data` holds `len` bytes for
    // the duration of the callback.
    unsafe {
        let channel = &*(private as *const Channel);
        channel.receive(core::slice::from_raw_parts(data as *const u8, len as usize));
    }
    0
}

unsafe extern "C" fn probe(rpdev: *mut bindings::rpmsg_device) -> c_int {
    // SAFETY: called by the rpmsg core for a live device.
    let dev = unsafe { Device::from_raw(rpdev) };
    match probe_channel(dev) {
        Ok(()) => 0,
        Err(e) => {
            pr_err!(
                "probe of the channel at 0x{:x} failed: {:?}\n",
                dev.dst(),
                e
            );
            e.to_errno()
        }
    }
}

fn probe_channel(dev: Device) -> Result {
    let index = take_index()?;
    let result = probe_with_index(dev, index);
    if result.is_err() {
        give_back_index(index);
    }
    result
}

fn probe_with_index(dev: Device, index: u32) -> Result {
    let name = [b'q', b'f', b'a', b'b', b'r', b'i', b'c', b'0' + index as u8];
    let channel = Arc::pin_init(
        Channel::new(index, dev.dst(), name, Queue::new()?),
        GFP_KERNEL,
    )?;
    // The endpoint holds its own reference, dropped in `remove` after the endpoint is destroyed.
    let for_endpoint = Arc::into_raw(channel.clone()) as *mut c_void;
    // SAFETY: `for_endpoint` stays valid until the endpoint is destroyed (see `remove`).
    let endpoint = match unsafe { Endpoint::create(dev, CHANNEL, rx, for_endpoint) } {
        Ok(endpoint) => endpoint,
        Err(e) => {
            // SAFETY: from `Arc::into_raw` above; nothing else saw it.
            drop(unsafe { Arc::from_raw(for_endpoint as *const Channel) });
            return Err(e);
        }
    };
    let mtu = endpoint.mtu().unwrap_or(MAX_FRAME).min(MAX_FRAME);
    channel.mtu.store(mtu as u32, Ordering::Relaxed);
    channel.local_addr.store(endpoint.addr(), Ordering::Relaxed);
    *channel.endpoint.lock() = Some(endpoint);

    let fops = FOPS.load(Ordering::Acquire);
    // SAFETY: `FOPS` is set in `init` before the driver registers and freed after it
    // unregistered; `shut_down` (in `remove` or below) deregisters before the channel can go.
    let registered = unsafe { channel.misc.register(&*fops, dev.as_dev()) };
    if let Err(e) = registered {
        if let Some(endpoint) = channel.shut_down() {
            endpoint.destroy();
        }
        // SAFETY: the endpoint is destroyed: its reference can go.
        drop(unsafe { Arc::from_raw(for_endpoint as *const Channel) });
        return Err(e);
    }
    pr_info!(
        "/dev/qfabric{} for the MCU channel at 0x{:x} (our address 0x{:x}, mtu {})\n",
        index,
        channel.remote_addr,
        channel.local_addr.load(Ordering::Relaxed),
        mtu
    );
    dev.set_drvdata(Arc::into_raw(channel) as *mut c_void);
    Ok(())
}

unsafe extern "C" fn remove(rpdev: *mut bindings::rpmsg_device) {
    // SAFETY: called by the rpmsg core for the device we probed.
    let dev = unsafe { Device::from_raw(rpdev) };
    let raw = dev.drvdata() as *const Channel;
    dev.set_drvdata(core::ptr::null_mut());
    // SAFETY: probe stored `Arc::into_raw` of the channel as driver data.
    let channel = unsafe { Arc::from_raw(raw) };
    if let Some(endpoint) = channel.shut_down() {
        endpoint.destroy();
        // SAFETY: the endpoint's reference (same pointer, its own count), released now that no
        // callback can run.
        drop(unsafe { Arc::from_raw(raw) });
    }
    give_back_index(channel.index);
    pr_info!("/dev/qfabric{} removed\n", channel.index);
}

/// The channel an open file belongs to.
///
/// # Safety
/// `file` must be a file opened by `open` below and not yet released.
unsafe fn channel_of<'a>(file: *mut bindings::file) -> &'a Channel {
    // SAFETY: `open` stored an `Arc<Channel>` there; `release` drops it after the last use.
    unsafe { &*((*file).private_data as *const Channel) }
}

unsafe extern "C" fn open(inode: *mut bindings::inode, file: *mut bindings::file) -> c_int {
    // SAFETY: `misc_open` calls us with `private_data` = our misc device, under `misc_mtx`,
    // which `misc_deregister` also takes: the channel's driver-data reference is still held, so
    // the count is above zero and taking another one is sound.
    unsafe {
        let misc = MiscDevice::of_opening_file(file) as *const u8;
        let raw = misc.sub(core::mem::offset_of!(Channel, misc)) as *const Channel;
        let channel: Arc<Channel> = ArcBorrow::from_raw(raw).into();
        bindings::stream_open(inode, file);
        (*file).private_data = Arc::into_raw(channel) as *mut c_void;
    }
    0
}

unsafe extern "C" fn release(_inode: *mut bindings::inode, file: *mut bindings::file) -> c_int {
    // SAFETY: the reference `open` stored; the VFS calls release once, after the last use.
    drop(unsafe { Arc::from_raw((*file).private_data as *const Channel) });
    0
}

unsafe extern "C" fn ioctl(file: *mut bindings::file, cmd: c_uint, arg: c_ulong) -> c_long {
    // SAFETY: an open file of ours.
    let channel = unsafe { channel_of(file) };
    let result = match cmd {
        uapi::QF_IOC_INVOKE => channel.invoke(arg as usize),
        uapi::QF_IOC_STATS => channel.stats(arg as usize),
        uapi::QF_IOC_RECV => channel.recv(arg as usize),
        _ => Err(ENOTTY),
    };
    match result {
        Ok(()) => 0,
        Err(e) => e.to_errno() as c_long,
    }
}

unsafe extern "C" fn read(
    file: *mut bindings::file,
    buf: *mut kernel::ffi::c_char,
    count: usize,
    _pos: *mut bindings::loff_t,
) -> isize {
    // SAFETY: an open file of ours; `f_flags` is read as the VFS does.
    let (channel, nonblock) = unsafe {
        (
            channel_of(file),
            (*file).f_flags & bindings::O_NONBLOCK != 0,
        )
    };
    match channel.read(buf as usize, count, nonblock) {
        Ok(n) => n as isize,
        Err(e) => e.to_errno() as isize,
    }
}

unsafe extern "C" fn poll(
    file: *mut bindings::file,
    table: *mut bindings::poll_table_struct,
) -> bindings::__poll_t {
    // SAFETY: an open file of ours; the queue lives as long as the channel, which the file holds.
    let channel = unsafe { channel_of(file) };
    // SAFETY: the arguments of this poll call.
    unsafe { channel.poll_queue.poll_wait(file, table) };
    let s = channel.state.lock();
    let mut mask = 0;
    if s.queue.count > 0 {
        mask |= bindings::POLLIN | bindings::POLLRDNORM;
    }
    if !s.alive {
        mask |= bindings::POLLHUP;
    }
    mask as bindings::__poll_t
}

struct QfabricRpmsg {
    // Dropped first: unregistering removes every channel before the table goes.
    _driver: rpmsg::Registration,
    // Kept until the driver is gone: every /dev/qfabricN points at it.
    _fops: KBox<FileOps>,
}

impl kernel::Module for QfabricRpmsg {
    fn init(module: &'static ThisModule) -> Result<Self> {
        let fops = KBox::new(
            FileOps::new(bindings::file_operations {
                owner: module.as_ptr(),
                open: Some(open),
                release: Some(release),
                read: Some(read),
                poll: Some(poll),
                unlocked_ioctl: Some(ioctl),
                compat_ioctl: Some(ioctl),
                ..Default::default()
            }),
            GFP_KERNEL,
        )?;
        FOPS.store(&*fops as *const FileOps as *mut FileOps, Ordering::Release);
        let driver =
            rpmsg::Registration::new(c_str!("qfabric_rpmsg"), CHANNEL, probe, remove, module)?;
        Ok(Self {
            _driver: driver,
            _fops: fops,
        })
    }
}
