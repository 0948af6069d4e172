//! The routing table with quiescent epoch switching (the paper's Section IV-C): to change a
//! task's domain the dispatcher stops accepting work, waits until no invocation is in flight,
//! increments the routing epoch and changes the domain. Every invocation holds a [`Ticket`] for the
//! epoch it was routed in, so no invocation ever crosses an epoch.

use crate::model::DomainId;
use std::sync::{Condvar, Mutex, MutexGuard};

#[derive(Debug)]
struct State {
    epoch: u32,
    placement: Vec<DomainId>,
    accepting: bool,
    in_flight: usize,
}

/// Shared routing state of one chain.
#[derive(Debug)]
pub struct Router {
    state: Mutex<State>,
    changed: Condvar,
}

/// Permission to run one invocation of `task` in `domain` under `epoch`; give it back with
/// [`Router::finish`].
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a ticket must be finished or the router never quiesces"]
pub struct Ticket {
    pub task: usize,
    pub domain: DomainId,
    pub epoch: u32,
}

impl Router {
    pub fn new(placement: Vec<DomainId>) -> Self {
        Self {
            state: Mutex::new(State {
                epoch: 0,
                placement,
                accepting: true,
                in_flight: 0,
            }),
            changed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means another thread panicked mid-update of plain counters; the
        // state is still consistent, so keep routing.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Routes one invocation, waiting while a switch is draining.
    pub fn begin(&self, task: usize) -> Ticket {
        let mut state = self.lock();
        while !state.accepting {
            state = self.changed.wait(state).unwrap_or_else(|p| p.into_inner());
        }
        state.in_flight += 1;
        Ticket {
            task,
            domain: state.placement[task],
            epoch: state.epoch,
        }
    }

    /// Ends an invocation. Returns true if the epoch was still the ticket's (always, by design).
    pub fn finish(&self, ticket: Ticket) -> bool {
        let mut state = self.lock();
        state.in_flight -= 1;
        let same_epoch = state.epoch == ticket.epoch;
        self.changed.notify_all();
        same_epoch
    }

    /// Quiescent switch to `placement` under `epoch`: stop accepting, drain, then install.
    pub fn switch(&self, placement: &[DomainId], epoch: u32) {
        let mut state = self.lock();
        while !state.accepting {
            state = self.changed.wait(state).unwrap_or_else(|p| p.into_inner());
        }
        state.accepting = false;
        while state.in_flight > 0 {
            state = self.changed.wait(state).unwrap_or_else(|p| p.into_inner());
        }
        state.epoch = epoch;
        state.placement.clear();
        state.placement.extend_from_slice(placement);
        state.accepting = true;
        self.changed.notify_all();
    }

    pub fn epoch(&self) -> u32 {
        self.lock().epoch
    }

    pub fn placement(&self) -> Vec<DomainId> {
        self.lock().placement.clone()
    }

    pub fn in_flight(&self) -> usize {
        self.lock().in_flight
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    /// Quiescence: with four threads invoking continuously while the placement flips 50 times, no
    /// invocation finishes in an epoch other than the one it started in, and none runs on a domain
    /// other than its epoch's.
    #[test]
    fn no_invocation_crosses_an_epoch() {
        let router = Arc::new(Router::new(vec![DomainId::Linux]));
        let stop = Arc::new(AtomicBool::new(false));
        let crossed = Arc::new(AtomicUsize::new(0));
        let completed = Arc::new(AtomicUsize::new(0));
        let workers: Vec<_> = (0..4)
            .map(|_| {
                let (router, stop, crossed, completed) = (
                    router.clone(),
                    stop.clone(),
                    crossed.clone(),
                    completed.clone(),
                );
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let ticket = router.begin(0);
                        // The domain must be the one of the ticket's epoch (even epochs: Linux).
                        let expected = if ticket.epoch % 2 == 0 {
                            DomainId::Linux
                        } else {
                            DomainId::Mcu
                        };
                        if ticket.domain != expected {
                            crossed.fetch_add(1, Ordering::Relaxed);
                        }
                        std::thread::sleep(Duration::from_micros(50));
                        if !router.finish(ticket) {
                            crossed.fetch_add(1, Ordering::Relaxed);
                        }
                        completed.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        // At least 50 switches, and keep switching until the workers have done real work
        // across them (however loaded the machine is).
        let mut epoch = 0u32;
        while epoch < 50 || completed.load(Ordering::Relaxed) < 200 {
            epoch += 1;
            let domain = if epoch % 2 == 0 {
                DomainId::Linux
            } else {
                DomainId::Mcu
            };
            router.switch(&[domain], epoch);
            std::thread::sleep(Duration::from_micros(300));
        }
        stop.store(true, Ordering::Relaxed);
        workers.into_iter().for_each(|w| w.join().unwrap());
        assert_eq!(crossed.load(Ordering::Relaxed), 0);
        assert_eq!(router.epoch(), epoch);
        assert_eq!(router.in_flight(), 0);
    }
}
