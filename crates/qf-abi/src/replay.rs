//! Per-task replay protection with epochs, bounded and allocation-free for the MCU.
//!
//! A receiver keeps, per task, the current epoch and the last `N` accepted invocation ids
//! (N = 64 by default, as in the QFabric prototype). A request from an older epoch is STALE; one
//! from a newer epoch clears the window and makes that epoch current (this is how a quiescent
//! epoch switch resets the receiver); an id already in the window of the current epoch is
//! DUPLICATE. Ids need not be sequential. The window is a ring: once `N` ids are held, accepting
//! another evicts the oldest, so protection covers the last `N` accepted invocations of an epoch.

use crate::{AbiError, Problem, Status};

/// Default window capacity, as in the QFabric prototype.
pub const DEFAULT_REPLAY_WINDOW: usize = 64;

/// The replay state of one task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayWindow<const N: usize = DEFAULT_REPLAY_WINDOW> {
    epoch: u32,
    ids: [u64; N],
    /// Number of valid entries in `ids` (≤ N).
    len: usize,
    /// Slot the next accepted id goes to (the oldest entry once full).
    next: usize,
}

impl<const N: usize> Default for ReplayWindow<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> ReplayWindow<N> {
    /// Capacity of the window.
    pub const CAPACITY: usize = N;

    /// An empty window at epoch 0.
    pub const fn new() -> Self {
        ReplayWindow {
            epoch: 0,
            ids: [0; N],
            len: 0,
            next: 0,
        }
    }

    /// The current epoch.
    pub const fn epoch(&self) -> u32 {
        self.epoch
    }

    /// Number of ids held for the current epoch.
    pub const fn len(&self) -> usize {
        self.len
    }

    /// True when no id of the current epoch is held.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `(epoch, invocation_id)` would be accepted, without recording it.
    pub fn check(&self, epoch: u32, invocation_id: u64) -> Result<(), AbiError> {
        if epoch < self.epoch {
            return Err(AbiError::new(
                Status::Stale,
                crate::header::offset::EPOCH,
                "epoch",
                Problem::OlderEpoch {
                    current: self.epoch,
                    found: epoch,
                },
            ));
        }
        if epoch == self.epoch && self.contains(invocation_id) {
            return Err(AbiError::new(
                Status::Duplicate,
                crate::header::offset::INVOCATION_ID,
                "invocation_id",
                Problem::RepeatedInvocation { invocation_id },
            ));
        }
        Ok(())
    }

    /// Checks and, if accepted, records the invocation (a newer epoch first clears the window).
    /// A rejected invocation leaves the window unchanged.
    pub fn accept(&mut self, epoch: u32, invocation_id: u64) -> Result<(), AbiError> {
        self.check(epoch, invocation_id)?;
        if epoch > self.epoch {
            self.epoch = epoch;
            self.len = 0;
            self.next = 0;
        }
        if N == 0 {
            return Ok(());
        }
        if let Some(slot) = self.ids.get_mut(self.next) {
            *slot = invocation_id;
        }
        self.next = (self.next + 1) % N;
        self.len = (self.len + 1).min(N);
        Ok(())
    }

    fn contains(&self, invocation_id: u64) -> bool {
        self.ids
            .iter()
            .take(self.len)
            .any(|&held| held == invocation_id)
    }
}
