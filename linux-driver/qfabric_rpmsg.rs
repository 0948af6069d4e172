// SPDX-License-Identifier: GPL-2.0
//! `qfabric_rpmsg`: dispatch of QFabric requests to the MCU from the kernel.
//!
//! For every rpmsg channel named `qfabric` (the MCU announces it through the name service) the
//! driver creates its own endpoint and a misc device `/dev/qfabricN`. A caller hands a request
//! frame to `QF_IOC_INVOKE` and sleeps; the driver sends the frame, and the endpoint's receive
//! callback matches the reply to the waiting caller by (task id, invocation id) and wakes it.
//! Any number of threads and processes share the channel without a user-space relay and
//! without taking each other's replies. Responses nobody waits for (a resident chain's results)
//! are queued for `read()`. The user ABI is `docs/qfabric-dev.md`; `qf_agent::qfabric_dev` is
//! the user side.
//!
//! Locking: `state` (a spinlock) guards the waiting callers, the read queue and the counters and
//! is never held across a user copy or a sleep. `endpoint` (a mutex) is held across
//! `rpmsg_send` so that `remove` cannot destroy the endpoint under a sender. The receive
//! callback runs in process context (virtio rpmsg calls it under mutexes).

use core::sync::atomic::{AtomicPtr, AtomicU32, Ordering};
use kernel::error::code::*;
use kernel::ffi::{c_int, c_long, c_uint, c_ulong, c_void};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::{
    new_condvar, new_mutex, new_spinlock, Arc, ArcBorrow, CondVar, CondVarTimeoutResult, Mutex,
    SpinLock,
};
use kernel::uaccess::UserSlice;
use kernel::{bindings, c_str};

mod qfabric;

use qfabric::misc::{FileOps, MiscDevice, WaitQueue};
use qfabric::rpmsg::{self, Device, Endpoint};

module! {
    type: QfabricRpmsg,
    name: "qfabric_rpmsg",
    author: "qfabric",
    description: "/dev/qfabricN: QFabric requests to the MCU dispatched by the kernel over rpmsg",
    license: "GPL",
}

/// The channel the MCU announces.
const CHANNEL: &CStr = c_str!("qfabric");
/// Largest frame handled: one virtio rpmsg buffer (512 bytes, of which 496 carry payload).
const MAX_FRAME: usize = 512;
/// Callers that may wait on one channel at the same time.
const MAX_WAITERS: usize = 32;
/// Unsolicited frames kept for `read()`.
const QUEUE_LEN: usize = 32;
/// Channels (MCUs) served at the same time: `/dev/qfabric0` .. `/dev/qfabric7`.
const MAX_CHANNELS: u32 = 8;
const DEFAULT_TIMEOUT_MS: u32 = 1000;
const MAX_TIMEOUT_MS: u32 = 60_000;

/// The QFabric ABI v1 header fields the driver reads (`crates/qf-abi/src/header.rs`).
mod frame {
    pub(crate) const HEADER_LEN: usize = 36;
    const MAGIC: &[u8; 4] = b"QFAB";
    const VERSION: u8 = 1;
    pub(crate) const REQUEST: u8 = 1;
    pub(crate) const RESPONSE: u8 = 2;

    /// Who a reply is for: the task and the invocation it answers.
    #[derive(Clone, Copy, PartialEq, Eq)]
    pub(crate) struct Key {
        pub(crate) task: u32,
        pub(crate) invocation: u64,
    }

    /// The message type and key of a v1 frame, `None` if `frame` is not one.
    pub(crate) fn parse(frame: &[u8]) -> Option<(u8, Key)> {
        if frame.len() < HEADER_LEN || &frame[0..4] != MAGIC || frame[4] != VERSION {
            return None;
        }
        let task = u32::from_be_bytes([frame[8], frame[9], frame[10], frame[11]]);
        let mut invocation = [0u8; 8];
        invocation.copy_from_slice(&frame[12..20]);
        Some((
            frame[5],
            Key {
                task,
                invocation: u64::from_be_bytes(invocation),
            },
        ))
    }
}
use frame::{Key, HEADER_LEN};

/// The ioctl ABI (`docs/qfabric-dev.md`), read and written as native-endian byte images.
mod uapi {
    pub(crate) const INVOKE_LEN: usize = 72;
    pub(crate) const STATS_LEN: usize = 80;
    pub(crate) const QF_IOC_INVOKE: u32 = kernel::ioctl::_IOWR::<[u8; INVOKE_LEN]>(b'q' as u32, 0x40);
    pub(crate) const QF_IOC_STATS: u32 = kernel::ioctl::_IOR::<[u8; STATS_LEN]>(b'q' as u32, 0x41);
    kernel::static_assert!(QF_IOC_INVOKE == 0xc048_7140);
    kernel::static_assert!(QF_IOC_STATS == 0x8050_7141);

    fn u32_at(raw: &[u8], at: usize) -> u32 {
        u32::from_ne_bytes([raw[at], raw[at + 1], raw[at + 2], raw[at + 3]])
    }

    fn u64_at(raw: &[u8], at: usize) -> u64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&raw[at..at + 8]);
        u64::from_ne_bytes(b)
    }

    /// `struct qf_invoke`'s inputs.
    pub(crate) struct Invoke {
        pub(crate) request: u64,
        pub(crate) response: u64,
        pub(crate) request_len: u32,
        pub(crate) response_cap: u32,
        pub(crate) timeout_ms: u32,
        pub(crate) flags: u64,
    }

    impl Invoke {
        pub(crate) fn parse(raw: &[u8; INVOKE_LEN]) -> Self {
            Self {
                request: u64_at(raw, 0),
                response: u64_at(raw, 8),
                request_len: u32_at(raw, 16),
                response_cap: u32_at(raw, 20),
                timeout_ms: u32_at(raw, 24),
                flags: u64_at(raw, 64),
            }
        }
    }

    /// Fills `struct qf_invoke`'s outputs into the caller's image (inputs left as they were).
    pub(crate) fn set_outputs(raw: &mut [u8; INVOKE_LEN], response_len: u32, times_ns: [i64; 4]) {
        raw[28..32].copy_from_slice(&response_len.to_ne_bytes());
        for (i, t) in times_ns.iter().enumerate() {
            raw[32 + 8 * i..40 + 8 * i].copy_from_slice(&(*t as u64).to_ne_bytes());
        }
    }
}

#[derive(Clone, Copy, Default)]
struct Stats {
    invokes: u64,
    replies: u64,
    timeouts: u64,
    interrupted: u64,
    late_replies: u64,
    unsolicited: u64,
    unsolicited_dropped: u64,
    malformed: u64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum SlotState {
    Free,
    /// A caller sleeps for the reply; `buf` is its reply buffer.
    Waiting,
    /// The reply is in the caller's buffer; the caller has not run yet.
    Replied,
    /// The caller gave up (timeout, signal); a reply is late and dropped.
    Abandoned,
}

/// One caller waiting for its reply.
#[derive(Clone, Copy)]
struct Slot {
    state: SlotState,
    key: Key,
    /// The waiting caller's `MAX_FRAME`-byte reply buffer (on its kernel stack). Set only while
    /// `Waiting`/`Replied`; the caller clears the slot before its frame ends.
    buf: *mut u8,
    len: usize,
    replied_ns: i64,
    /// Order of abandonment: the oldest abandoned slot is reused first.
    abandoned_seq: u64,
}

impl Slot {
    const FREE: Slot = Slot {
        state: SlotState::Free,
        key: Key {
            task: 0,
            invocation: 0,
        },
        buf: core::ptr::null_mut(),
        len: 0,
        replied_ns: 0,
        abandoned_seq: 0,
    };
}

/// Unsolicited frames for `read()`, oldest first; full means newest dropped (as the MCU drops a
/// chain result rather than queueing it, a slow reader loses the newest results, counted).
struct Queue {
    frames: KVec<u8>,
    lens: [u16; QUEUE_LEN],
    head: usize,
    count: usize,
}

impl Queue {
    fn new() -> Result<Self> {
        Ok(Self {
            frames: KVec::from_elem(0u8, QUEUE_LEN * MAX_FRAME, GFP_KERNEL)?,
            lens: [0; QUEUE_LEN],
            head: 0,
            count: 0,
        })
    }

    fn push(&mut self, frame: &[u8]) -> bool {
        if self.count == QUEUE_LEN || frame.len() > MAX_FRAME {
            return false;
        }
        let at = (self.head + self.count) % QUEUE_LEN;
        self.frames[at * MAX_FRAME..at * MAX_FRAME + frame.len()].copy_from_slice(frame);
        self.lens[at] = frame.len() as u16;
        self.count += 1;
        true
    }

    fn front(&self) -> Option<&[u8]> {
        (self.count > 0).then(|| {
            let at = self.head * MAX_FRAME;
            &self.frames[at..at + self.lens[self.head] as usize]
        })
    }

    fn pop(&mut self) {
        if self.count > 0 {
            self.head = (self.head + 1) % QUEUE_LEN;
            self.count -= 1;
        }
    }
}

struct State {
    /// False once the channel is gone: waits end with `ENODEV`, reads with end of file.
    alive: bool,
    slots: [Slot; MAX_WAITERS],
    next_abandoned_seq: u64,
    queue: Queue,
    stats: Stats,
}

// SAFETY: the raw `buf` pointers in `slots` are only dereferenced by the receive callback while
// holding the lock and while the slot is `Waiting`, i.e. while the caller owning the buffer is
// blocked in `wait_reply` (which clears the slot under the same lock before returning).
unsafe impl Send for State {}

impl State {
    fn find(&self, key: Key, states: &[SlotState]) -> Option<usize> {
        self.slots
            .iter()
            .position(|s| s.key == key && states.contains(&s.state))
    }

    fn abandon(&mut self, slot: usize) {
        self.next_abandoned_seq += 1;
        self.slots[slot] = Slot {
            state: SlotState::Abandoned,
            buf: core::ptr::null_mut(),
            abandoned_seq: self.next_abandoned_seq,
            ..self.slots[slot]
        };
    }

    fn in_flight(&self) -> u32 {
        self.slots
            .iter()
            .filter(|s| matches!(s.state, SlotState::Waiting | SlotState::Replied))
            .count() as u32
    }
}

/// One `qfabric` channel and its `/dev/qfabricN`.
#[pin_data]
struct Channel {
    #[pin]
    state: SpinLock<State>,
    /// Callers waiting for a reply.
    #[pin]
    replied: CondVar,
    /// Blocking readers.
    #[pin]
    readable: CondVar,
    /// `poll` users.
    #[pin]
    poll_queue: WaitQueue,
    /// `None` once `remove` destroyed it.
    #[pin]
    endpoint: Mutex<Option<Endpoint>>,
    #[pin]
    misc: MiscDevice,
    index: u32,
    remote_addr: u32,
    local_addr: AtomicU32,
    mtu: AtomicU32,
}

fn now_ns() -> i64 {
    qfabric::now_ns()
}

impl Channel {
    fn new(index: u32, remote_addr: u32, name: [u8; 8], queue: Queue) -> impl PinInit<Self> {
        pin_init!(Self {
            state <- new_spinlock!(State {
                alive: true,
                slots: [Slot::FREE; MAX_WAITERS],
                next_abandoned_seq: 0,
                queue,
                stats: Stats::default(),
            }),
            replied <- new_condvar!("qfabric_rpmsg::replied"),
            readable <- new_condvar!("qfabric_rpmsg::readable"),
            poll_queue <- WaitQueue::new(
                c_str!("qfabric_rpmsg::poll"),
                kernel::static_lock_class!()
            ),
            endpoint <- new_mutex!(None),
            misc <- MiscDevice::new(&name),
            index,
            remote_addr,
            local_addr: AtomicU32::new(0),
            mtu: AtomicU32::new(MAX_FRAME as u32),
        })
    }

    /// The receive callback's work: a reply goes to its caller, an unsolicited response to the
    /// read queue, anything else is counted and dropped.
    fn receive(&self, frame: &[u8]) {
        let now = now_ns();
        let key = match frame::parse(frame) {
            Some((frame::RESPONSE, key)) if frame.len() <= MAX_FRAME => Some(key),
            _ => None,
        };
        let mut s = self.state.lock();
        let Some(key) = key else {
            s.stats.malformed += 1;
            return;
        };
        if let Some(i) = s.find(key, &[SlotState::Waiting]) {
            let slot = &mut s.slots[i];
            // SAFETY: a `Waiting` slot's `buf` is its caller's live MAX_FRAME-byte buffer (see
            // `State`); `frame.len() <= MAX_FRAME` was checked above.
            unsafe { core::ptr::copy_nonoverlapping(frame.as_ptr(), slot.buf, frame.len()) };
            slot.len = frame.len();
            slot.replied_ns = now;
            slot.state = SlotState::Replied;
            s.stats.replies += 1;
            drop(s);
            self.replied.notify_all();
            return;
        }
        if let Some(i) = s.find(key, &[SlotState::Abandoned]) {
            s.slots[i] = Slot::FREE;
            s.stats.late_replies += 1;
            return;
        }
        if s.queue.push(frame) {
            s.stats.unsolicited += 1;
            drop(s);
            self.readable.notify_all();
            self.poll_queue.wake_all();
        } else {
            s.stats.unsolicited_dropped += 1;
        }
    }

    /// Takes a slot for `key`, whose reply will be copied to `buf` (`MAX_FRAME` bytes).
    fn reserve(&self, key: Key, buf: *mut u8) -> Result<usize> {
        let mut s = self.state.lock();
        if !s.alive {
            return Err(ENODEV);
        }
        if s.find(key, &[SlotState::Waiting, SlotState::Replied]).is_some() {
            return Err(EBUSY);
        }
        let free = s.slots.iter().position(|x| x.state == SlotState::Free);
        let oldest_abandoned = || {
            (0..MAX_WAITERS)
                .filter(|&i| s.slots[i].state == SlotState::Abandoned)
                .min_by_key(|&i| s.slots[i].abandoned_seq)
        };
        let i = free.or_else(oldest_abandoned).ok_or(EBUSY)?;
        s.slots[i] = Slot {
            state: SlotState::Waiting,
            key,
            buf,
            ..Slot::FREE
        };
        Ok(i)
    }

    fn release(&self, slot: usize) {
        self.state.lock().slots[slot] = Slot::FREE;
    }

    /// Sleeps until the reply for `slot` arrived, the channel went away, `timeout_ms` passed or
    /// a signal came. Always leaves the slot without a buffer pointer (free or abandoned).
    /// Returns the reply's length and the time the callback matched it.
    fn wait_reply(&self, slot: usize, timeout_ms: u32) -> Result<(usize, i64)> {
        let deadline = now_ns() + i64::from(timeout_ms) * 1_000_000;
        let mut s = self.state.lock();
        loop {
            if s.slots[slot].state == SlotState::Replied {
                let done = (s.slots[slot].len, s.slots[slot].replied_ns);
                s.slots[slot] = Slot::FREE;
                return Ok(done);
            }
            if !s.alive {
                s.slots[slot] = Slot::FREE;
                return Err(ENODEV);
            }
            let left_ns = deadline - now_ns();
            if left_ns <= 0 {
                s.abandon(slot);
                s.stats.timeouts += 1;
                return Err(qfabric::errno::etimedout());
            }
            let left_ms = ((left_ns + 999_999) / 1_000_000) as u32;
            let jiffies = kernel::time::msecs_to_jiffies(left_ms);
            if let CondVarTimeoutResult::Signal { .. } =
                self.replied.wait_interruptible_timeout(&mut s, jiffies)
            {
                if s.slots[slot].state == SlotState::Replied {
                    continue; // the reply won the race: deliver it
                }
                s.abandon(slot);
                s.stats.interrupted += 1;
                return Err(EINTR);
            }
        }
    }

    /// `QF_IOC_INVOKE`.
    fn invoke(&self, arg: usize) -> Result {
        let entered_ns = now_ns();
        let (mut arg_reader, mut arg_writer) = UserSlice::new(arg, uapi::INVOKE_LEN).reader_writer();
        let mut raw = [0u8; uapi::INVOKE_LEN];
        arg_reader.read_slice(&mut raw)?;
        let args = uapi::Invoke::parse(&raw);
        let mtu = self.mtu.load(Ordering::Relaxed) as usize;
        let request_len = args.request_len as usize;
        if args.flags != 0
            || !(HEADER_LEN..=mtu).contains(&request_len)
            || (args.response_cap as usize) < mtu
            || args.timeout_ms > MAX_TIMEOUT_MS
        {
            return Err(EINVAL);
        }
        let timeout_ms = match args.timeout_ms {
            0 => DEFAULT_TIMEOUT_MS,
            ms => ms,
        };
        let mut request = [0u8; MAX_FRAME];
        UserSlice::new(args.request as usize, request_len)
            .reader()
            .read_slice(&mut request[..request_len])?;
        let key = match frame::parse(&request[..request_len]) {
            Some((frame::REQUEST, key)) => key,
            _ => return Err(EINVAL),
        };
        // Prove the response buffer writable before anything is sent, so that a bad pointer
        // costs no reply.
        let mut reply = [0u8; MAX_FRAME];
        UserSlice::new(args.response as usize, mtu)
            .writer()
            .write_slice(&reply[..mtu])?;

        let slot = self.reserve(key, reply.as_mut_ptr())?;
        let sent = match &*self.endpoint.lock() {
            Some(endpoint) => endpoint.send(&request[..request_len]),
            None => Err(ENODEV),
        };
        if let Err(e) = sent {
            self.release(slot);
            return Err(e);
        }
        let sent_ns = now_ns();
        self.state.lock().stats.invokes += 1;
        let waited = self.wait_reply(slot, timeout_ms);
        let woken_ns = now_ns();
        // From here on no slot points at `reply`.
        let (len, replied_ns) = waited?;
        UserSlice::new(args.response as usize, len)
            .writer()
            .write_slice(&reply[..len])?;
        uapi::set_outputs(
            &mut raw,
            len as u32,
            [entered_ns, sent_ns, replied_ns, woken_ns],
        );
        arg_writer.write_slice(&raw)
    }

    /// `QF_IOC_STATS`.
    fn stats(&self, arg: usize) -> Result {
        let (st, in_flight) = {
            let s = self.state.lock();
            (s.stats, s.in_flight())
        };
        let mut raw = [0u8; uapi::STATS_LEN];
        let counters = [
            st.invokes,
            st.replies,
            st.timeouts,
            st.interrupted,
            st.late_replies,
            st.unsolicited,
            st.unsolicited_dropped,
            st.malformed,
        ];
        for (i, c) in counters.iter().enumerate() {
            raw[8 * i..8 * i + 8].copy_from_slice(&c.to_ne_bytes());
        }
        let words = [
            self.mtu.load(Ordering::Relaxed),
            in_flight,
            self.local_addr.load(Ordering::Relaxed),
            self.remote_addr,
        ];
        for (i, w) in words.iter().enumerate() {
            raw[64 + 4 * i..68 + 4 * i].copy_from_slice(&w.to_ne_bytes());
        }
        UserSlice::new(arg, uapi::STATS_LEN).writer().write_slice(&raw)
    }

    /// `read()`: the oldest unsolicited frame. The frame leaves the queue only after the user
    /// buffer proved writable, so a bad buffer loses nothing.
    fn read(&self, buf: usize, count: usize, nonblock: bool) -> Result<usize> {
        let mut frame = [0u8; MAX_FRAME];
        loop {
            let front_len = {
                let mut s = self.state.lock();
                loop {
                    if let Some(f) = s.queue.front() {
                        break f.len();
                    }
                    if !s.alive {
                        return Ok(0);
                    }
                    if nonblock {
                        return Err(EAGAIN);
                    }
                    if self.readable.wait_interruptible(&mut s) {
                        return Err(ERESTARTSYS);
                    }
                }
            };
            if count < front_len {
                return Err(qfabric::errno::emsgsize());
            }
            UserSlice::new(buf, front_len)
                .writer()
                .write_slice(&frame[..front_len])?;
            let mut s = self.state.lock();
            // Another reader may have taken that frame meanwhile: start over if so.
            match s.queue.front() {
                Some(f) if f.len() <= count => {
                    let n = f.len();
                    frame[..n].copy_from_slice(f);
                    s.queue.pop();
                    drop(s);
                    UserSlice::new(buf, n).writer().write_slice(&frame[..n])?;
                    return Ok(n);
                }
                _ => continue,
            }
        }
    }

    /// Ends the channel: no new opens, the endpoint destroyed (no callback runs after it),
    /// waiting callers and readers woken with `ENODEV`/end of file.
    fn shut_down(&self) -> Option<Endpoint> {
        self.misc.deregister();
        self.state.lock().alive = false;
        self.replied.notify_all();
        self.readable.notify_all();
        self.poll_queue.wake_all();
        // Waits for a sender inside `rpmsg_send`.
        self.endpoint.lock().take()
    }
}

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
            pr_err!("probe of the channel at 0x{:x} failed: {:?}\n", dev.dst(), e);
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
    let channel = Arc::pin_init(Channel::new(index, dev.dst(), name, Queue::new()?), GFP_KERNEL)?;
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
    let (channel, nonblock) =
        unsafe { (channel_of(file), (*file).f_flags & bindings::O_NONBLOCK != 0) };
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
        let driver = rpmsg::Registration::new(
            c_str!("qfabric_rpmsg"),
            CHANNEL,
            probe,
            remove,
            module,
        )?;
        Ok(Self {
            _driver: driver,
            _fops: fops,
        })
    }
}
