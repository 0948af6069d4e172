// SPDX-License-Identifier: GPL-2.0
//! A channel's shared state: the callers waiting for replies, the queue of unsolicited frames
//! and the counters. Guarded by the channel's spinlock; plain data and bookkeeping only.

use kernel::prelude::*;

use crate::abi::frame::Key;

/// Largest frame handled: one virtio rpmsg buffer (512 bytes, of which 496 carry payload).
pub(crate) const MAX_FRAME: usize = 512;
/// Callers that may wait on one channel at the same time.
pub(crate) const MAX_WAITERS: usize = 32;
/// Unsolicited frames kept for `read()`.
pub(crate) const QUEUE_LEN: usize = 32;

#[derive(Clone, Copy, Default)]
pub(crate) struct Stats {
    pub(crate) invokes: u64,
    pub(crate) replies: u64,
    pub(crate) timeouts: u64,
    pub(crate) interrupted: u64,
    pub(crate) late_replies: u64,
    pub(crate) unsolicited: u64,
    pub(crate) unsolicited_dropped: u64,
    pub(crate) malformed: u64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum SlotState {
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
pub(crate) struct Slot {
    pub(crate) state: SlotState,
    pub(crate) key: Key,
    /// The waiting caller's `MAX_FRAME`-byte reply buffer (on its kernel stack). Set only while
    /// `Waiting`/`Replied`; the caller clears the slot before its frame ends.
    pub(crate) buf: *mut u8,
    pub(crate) len: usize,
    pub(crate) replied_ns: i64,
    /// Order of abandonment: the oldest abandoned slot is reused first.
    pub(crate) abandoned_seq: u64,
}

impl Slot {
    pub(crate) const FREE: Slot = Slot {
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
pub(crate) struct Queue {
    pub(crate) frames: KVec<u8>,
    pub(crate) lens: [u16; QUEUE_LEN],
    /// When the receive callback queued each frame (CLOCK_MONOTONIC, ns).
    pub(crate) received_ns: [i64; QUEUE_LEN],
    pub(crate) head: usize,
    pub(crate) count: usize,
}

impl Queue {
    pub(crate) fn new() -> Result<Self> {
        Ok(Self {
            frames: KVec::from_elem(0u8, QUEUE_LEN * MAX_FRAME, GFP_KERNEL)?,
            lens: [0; QUEUE_LEN],
            received_ns: [0; QUEUE_LEN],
            head: 0,
            count: 0,
        })
    }

    pub(crate) fn push(&mut self, frame: &[u8], received_ns: i64) -> bool {
        if self.count == QUEUE_LEN || frame.len() > MAX_FRAME {
            return false;
        }
        let at = (self.head + self.count) % QUEUE_LEN;
        self.frames[at * MAX_FRAME..at * MAX_FRAME + frame.len()].copy_from_slice(frame);
        self.lens[at] = frame.len() as u16;
        self.received_ns[at] = received_ns;
        self.count += 1;
        true
    }

    /// The oldest frame and when it was queued.
    pub(crate) fn front(&self) -> Option<(&[u8], i64)> {
        (self.count > 0).then(|| {
            let at = self.head * MAX_FRAME;
            (
                &self.frames[at..at + self.lens[self.head] as usize],
                self.received_ns[self.head],
            )
        })
    }

    pub(crate) fn pop(&mut self) {
        if self.count > 0 {
            self.head = (self.head + 1) % QUEUE_LEN;
            self.count -= 1;
        }
    }
}

pub(crate) struct State {
    /// False once the channel is gone: waits end with `ENODEV`, reads with end of file.
    pub(crate) alive: bool,
    pub(crate) slots: [Slot; MAX_WAITERS],
    pub(crate) next_abandoned_seq: u64,
    pub(crate) queue: Queue,
    pub(crate) stats: Stats,
}

// SAFETY: the raw `buf` pointers in `slots` are only dereferenced by the receive callback while
// holding the lock and while the slot is `Waiting`, i.e. while the caller owning the buffer is
// blocked in `wait_reply` (which clears the slot under the same lock before returning).
unsafe impl Send for State {}

impl State {
    pub(crate) fn find(&self, key: Key, states: &[SlotState]) -> Option<usize> {
        self.slots
            .iter()
            .position(|s| s.key == key && states.contains(&s.state))
    }

    pub(crate) fn abandon(&mut self, slot: usize) {
        self.next_abandoned_seq += 1;
        self.slots[slot] = Slot {
            state: SlotState::Abandoned,
            buf: core::ptr::null_mut(),
            abandoned_seq: self.next_abandoned_seq,
            ..self.slots[slot]
        };
    }

    pub(crate) fn in_flight(&self) -> u32 {
        self.slots
            .iter()
            .filter(|s| matches!(s.state, SlotState::Waiting | SlotState::Replied))
            .count() as u32
    }
}
