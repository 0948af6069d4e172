// SPDX-License-Identifier: GPL-2.0
//! One `qfabric` channel: the work behind `QF_IOC_INVOKE`, `QF_IOC_STATS`, `read()` and the
//! receive callback, and the channel's teardown.
//!
//! Locking: `state` (a spinlock) guards the waiting callers, the read queue and the counters and
//! is never held across a user copy or a sleep. `endpoint` (a mutex) is held across
//! `rpmsg_send` so that `remove` cannot destroy the endpoint under a sender. The receive
//! callback runs in process context (virtio rpmsg calls it under mutexes).
//!
//! Wakeups: each waiter slot has its own condition variable, so a reply wakes only the caller
//! it belongs to instead of every caller on the channel (up to `MAX_WAITERS` of them, each of
//! which would otherwise wake, take `state`, find its slot still waiting and sleep again).
//! A slot has one owner at a time, and the owner checks its slot under `state` before every
//! sleep, so a wakeup meant for a slot's previous owner is at worst one spurious wakeup.

use core::sync::atomic::{AtomicU32, Ordering};
use kernel::c_str;
use kernel::error::code::*;
use kernel::prelude::*;
use kernel::sync::{
    new_condvar, new_mutex, new_spinlock, CondVar, CondVarTimeoutResult, Mutex, SpinLock,
};

use crate::abi::frame::{self, Key, HEADER_LEN};
use crate::abi::uapi;
use crate::qfabric::misc::{MiscDevice, WaitQueue};
use crate::qfabric::rpmsg::Endpoint;
use crate::qfabric::{self, errno};
use crate::state::{Queue, Slot, SlotState, State, Stats, MAX_FRAME, MAX_WAITERS};

const DEFAULT_TIMEOUT_MS: u32 = 1000;
const MAX_TIMEOUT_MS: u32 = 60_000;

/// How long `take_frame` may wait for a frame.
#[derive(Clone, Copy)]
enum Wait {
    No,
    /// Until this CLOCK_MONOTONIC instant (ns).
    Until(i64),
    Forever,
}

/// The deadline `ms` milliseconds from now (ns).
fn deadline_in(ms: u32) -> i64 {
    now_ns() + i64::from(ms) * 1_000_000
}

/// The wait left until `deadline` (ns) in jiffies, rounded up; `None` once it has passed.
fn jiffies_until(deadline: i64) -> Option<kernel::time::Jiffies> {
    let left_ns = deadline - now_ns();
    (left_ns > 0).then(|| kernel::time::msecs_to_jiffies(qfabric::ns_to_ms_ceil(left_ns) as u32))
}

/// One `qfabric` channel and its `/dev/qfabricN`.
#[pin_data]
pub(crate) struct Channel {
    #[pin]
    pub(crate) state: SpinLock<State>,
    /// Callers waiting for a reply: `replied[i]` is slept on by the owner of `slots[i]` only.
    #[pin]
    pub(crate) replied: [CondVar; MAX_WAITERS],
    /// Blocking readers.
    #[pin]
    pub(crate) readable: CondVar,
    /// `poll` users.
    #[pin]
    pub(crate) poll_queue: WaitQueue,
    /// `None` once `remove` destroyed it.
    #[pin]
    pub(crate) endpoint: Mutex<Option<Endpoint>>,
    #[pin]
    pub(crate) misc: MiscDevice,
    pub(crate) index: u32,
    pub(crate) remote_addr: u32,
    pub(crate) local_addr: AtomicU32,
    pub(crate) mtu: AtomicU32,
}

fn now_ns() -> i64 {
    qfabric::now_ns()
}

impl Channel {
    pub(crate) fn new(
        index: u32,
        remote_addr: u32,
        name: [u8; 8],
        queue: Queue,
    ) -> impl PinInit<Self> {
        pin_init!(Self {
            state <- new_spinlock!(State {
                alive: true,
                slots: [Slot::FREE; MAX_WAITERS],
                next_abandoned_seq: 0,
                queue,
                stats: Stats::default(),
            }),
            // One lock class for all slots: they are used alike and never nest.
            replied <- qfabric::pin_init_array_from_fn(|_| new_condvar!("qfabric_rpmsg::replied")),
            readable <- new_condvar!("qfabric_rpmsg::readable"),
            poll_queue <- WaitQueue::new(c_str!("qfabric_rpmsg::poll")),
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
    pub(crate) fn receive(&self, frame: &[u8]) {
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
            // Only this slot's owner can use the reply; the other callers sleep on.
            self.replied[i].notify_all();
            return;
        }
        if let Some(i) = s.find(key, &[SlotState::Abandoned]) {
            s.slots[i] = Slot::FREE;
            s.stats.late_replies += 1;
            return;
        }
        if s.queue.push(frame, now) {
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
        if s.find(key, &[SlotState::Waiting, SlotState::Replied])
            .is_some()
        {
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
        let deadline = deadline_in(timeout_ms);
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
            let Some(jiffies) = jiffies_until(deadline) else {
                s.abandon(slot);
                s.stats.timeouts += 1;
                return Err(errno::etimedout());
            };
            if let CondVarTimeoutResult::Signal { .. } =
                self.replied[slot].wait_interruptible_timeout(&mut s, jiffies)
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
    pub(crate) fn invoke(&self, arg: usize) -> Result {
        let entered_ns = now_ns();
        let (mut arg_reader, mut arg_writer) =
            qfabric::user_slice(arg, uapi::INVOKE_LEN).reader_writer();
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
        qfabric::user_slice(args.request as usize, request_len)
            .reader()
            .read_slice(&mut request[..request_len])?;
        let key = match frame::parse(&request[..request_len]) {
            Some((frame::REQUEST, key)) => key,
            _ => return Err(EINVAL),
        };
        // Prove the response buffer writable before anything is sent, so that a bad pointer
        // costs no reply.
        let mut reply = [0u8; MAX_FRAME];
        qfabric::user_slice(args.response as usize, mtu)
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
        qfabric::user_slice(args.response as usize, len)
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
    pub(crate) fn stats(&self, arg: usize) -> Result {
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
        qfabric::user_slice(arg, uapi::STATS_LEN)
            .writer()
            .write_slice(&raw)
    }

    /// `read()`: the oldest unsolicited frame; end of file (0) once the channel is gone.
    pub(crate) fn read(&self, buf: usize, count: usize, nonblock: bool) -> Result<usize> {
        let wait = if nonblock { Wait::No } else { Wait::Forever };
        match self.take_frame(buf, count, wait) {
            Ok((n, _)) => Ok(n),
            Err(e) if e == ENODEV => Ok(0),
            Err(e) => Err(e),
        }
    }

    /// `QF_IOC_RECV`: like `read()`, with the time the frame arrived and a bounded wait.
    pub(crate) fn recv(&self, arg: usize) -> Result {
        let (mut arg_reader, mut arg_writer) =
            qfabric::user_slice(arg, uapi::RECV_LEN).reader_writer();
        let mut raw = [0u8; uapi::RECV_LEN];
        arg_reader.read_slice(&mut raw)?;
        let args = uapi::Recv::parse(&raw);
        if args.flags != 0 || args.timeout_ms > MAX_TIMEOUT_MS {
            return Err(EINVAL);
        }
        let wait = match args.timeout_ms {
            0 => Wait::No,
            ms => Wait::Until(deadline_in(ms)),
        };
        let (len, received_ns) =
            self.take_frame(args.buffer as usize, args.capacity as usize, wait)?;
        uapi::set_recv_outputs(&mut raw, len as u32, received_ns);
        arg_writer.write_slice(&raw)
    }

    /// Takes the oldest unsolicited frame into the user buffer `buf` of `count` bytes. The frame
    /// leaves the queue only after the buffer proved writable, so a bad buffer loses nothing.
    /// With nothing queued: `EAGAIN` (not waiting, or the wait ran out), `ENODEV` (the channel
    /// is gone), `ERESTARTSYS` (a signal).
    fn take_frame(&self, buf: usize, count: usize, wait: Wait) -> Result<(usize, i64)> {
        let mut frame = [0u8; MAX_FRAME];
        loop {
            let front_len = {
                let mut s = self.state.lock();
                loop {
                    if let Some((f, _)) = s.queue.front() {
                        break f.len();
                    }
                    if !s.alive {
                        return Err(ENODEV);
                    }
                    let signalled = match wait {
                        Wait::No => return Err(EAGAIN),
                        Wait::Until(deadline) => {
                            let Some(jiffies) = jiffies_until(deadline) else {
                                return Err(EAGAIN);
                            };
                            matches!(
                                self.readable.wait_interruptible_timeout(&mut s, jiffies),
                                CondVarTimeoutResult::Signal { .. }
                            )
                        }
                        Wait::Forever => self.readable.wait_interruptible(&mut s),
                    };
                    if signalled {
                        return Err(ERESTARTSYS);
                    }
                }
            };
            if count < front_len {
                return Err(errno::emsgsize());
            }
            qfabric::user_slice(buf, front_len)
                .writer()
                .write_slice(&frame[..front_len])?;
            let mut s = self.state.lock();
            // Another reader may have taken that frame meanwhile: start over if so.
            match s.queue.front() {
                Some((f, received_ns)) if f.len() <= count => {
                    let n = f.len();
                    frame[..n].copy_from_slice(f);
                    s.queue.pop();
                    drop(s);
                    qfabric::user_slice(buf, n)
                        .writer()
                        .write_slice(&frame[..n])?;
                    return Ok((n, received_ns));
                }
                _ => continue,
            }
        }
    }

    /// Ends the channel: no new opens, the endpoint destroyed (no callback runs after it),
    /// waiting callers and readers woken with `ENODEV`/end of file.
    pub(crate) fn shut_down(&self) -> Option<Endpoint> {
        self.misc.deregister();
        self.state.lock().alive = false;
        // Every waiting caller must see `alive == false`, whichever slot it sleeps on.
        for replied in &self.replied {
            replied.notify_all();
        }
        self.readable.notify_all();
        self.poll_queue.wake_all();
        // Waits for a sender inside `rpmsg_send`.
        self.endpoint.lock().take()
    }
}
