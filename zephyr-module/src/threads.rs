//! Which Zephyr thread owns which control block of the pool. With the kernel patch the slot is
//! also kept in the thread itself (`thread->base.qf_control`, slot + 1) so the switch hooks find
//! it with one load; without the patch (tracing hooks) it is found by searching the pool.

use qf_sched::ThreadId;

use crate::config::MAX_THREADS;
#[cfg(qf_thread_field)]
use crate::port;
use crate::port::{KThread, Thread};

/// Owner thread of each pool slot (null: free).
pub struct Registry {
    owners: [*mut KThread; MAX_THREADS],
}

impl Registry {
    pub const fn new() -> Self {
        Registry {
            owners: [core::ptr::null_mut(); MAX_THREADS],
        }
    }

    /// The slot `thread` holds, if any.
    #[cfg(qf_thread_field)]
    pub fn find(&self, thread: Thread) -> Option<ThreadId> {
        match port::thread_control(thread) {
            0 => None,
            word => Some(ThreadId((word - 1) as u16)),
        }
    }

    /// The slot `thread` holds, if any.
    #[cfg(not(qf_thread_field))]
    pub fn find(&self, thread: Thread) -> Option<ThreadId> {
        self.owners
            .iter()
            .position(|&owner| owner == thread.0)
            .map(|slot| ThreadId(slot as u16))
    }

    /// The slot of `thread` at a context switch: `control` is its control word as the patched
    /// kernel's hook has just read it (slot + 1), which saves reading it again, or 0 where the
    /// caller has none (the tracing hooks).
    pub fn find_switching(&self, thread: Thread, control: usize) -> Option<ThreadId> {
        match control.checked_sub(1) {
            Some(slot) => Some(ThreadId(slot as u16)),
            None => self.find(thread),
        }
    }

    /// Claims a free slot for `thread` (which holds none). `None`: the pool is full.
    pub fn claim(&mut self, thread: Thread) -> Option<ThreadId> {
        let slot = self.owners.iter().position(|owner| owner.is_null())?;
        self.owners[slot] = thread.0;
        #[cfg(qf_thread_field)]
        port::thread_control_set(thread, slot + 1);
        Some(ThreadId(slot as u16))
    }

    /// Frees `id` (its thread exited).
    pub fn release(&mut self, id: ThreadId) {
        if let Some(owner) = self.owners.get_mut(id.index()) {
            #[cfg(qf_thread_field)]
            if !owner.is_null() {
                port::thread_control_set(Thread(*owner), 0);
            }
            *owner = core::ptr::null_mut();
        }
    }

    /// The thread owning `id` (null handle if free).
    pub fn thread(&self, id: ThreadId) -> Thread {
        Thread(
            self.owners
                .get(id.index())
                .copied()
                .unwrap_or(core::ptr::null_mut()),
        )
    }
}
