//! The MCU's frame service, shared by both transports (rpmsg and the Unix endpoint): runs
//! `qf_tasks::serve` (frame codec, dispatcher, per-task replay windows of `qf-abi`) under the
//! fault knobs, and keeps the compute-time statistics the emulator reports.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use nix::sys::time::TimeSpec;
use std::sync::Arc;

use qf_abi::{Status, MAX_FRAME_LEN};
use qf_chain::{serve_with_chains, ChainStats, ChainTable};

use qf_tasks::Replay;

use crate::compute::ComputeModel;
use crate::faults::{Faults, Verdict};
use crate::resident::McuChains;
use crate::subscribers::Subscribers;

/// Counters of the frame service.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct McuStats {
    /// Requests handed to the dispatcher.
    pub requests: u64,
    /// Replies sent (after faults).
    pub replies: u64,
    /// Responses whose status was not OK.
    pub rejected: u64,
    /// Requests that got no reply (crashed, silent or dropped).
    pub unanswered: u64,
    /// Sum and last value of the kernels' compute time (as the compute model has it), in
    /// nanoseconds.
    pub compute_ns_total: u64,
    pub compute_ns_last: u64,
}

struct State {
    replay: Replay,
    stats: McuStats,
    /// The installed resident chains and their threads (RAM: a crash loses them).
    chains: ChainTable,
    executor: McuChains,
}

/// One emulated MCU: its replay windows (RAM that a restart wipes), its fault knobs and
/// whether it is crashed.
/// Wakes the loop that releases the chains.
pub type ChainWaker = Box<dyn Fn() + Send + Sync>;

pub struct Mcu {
    state: Mutex<State>,
    chain_waker: Mutex<Option<ChainWaker>>,
    /// Unix-socket clients that take the chains' results.
    subscribers: Arc<Subscribers>,
    faults: Faults,
    crashed: AtomicBool,
    origin: Instant,
    compute: ComputeModel,
}

/// A reply ready to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply {
    pub len: usize,
    pub status: Status,
    pub compute_ns: u64,
}

impl Mcu {
    /// A running MCU with these knobs.
    pub fn new(faults: Faults) -> Mcu {
        Mcu {
            state: Mutex::new(State {
                replay: Replay::new(),
                stats: McuStats::default(),
                chains: ChainTable::new(),
                executor: McuChains::new(ComputeModel::Host),
            }),
            chain_waker: Mutex::new(None),
            subscribers: Arc::new(Subscribers::default()),
            faults,
            crashed: AtomicBool::new(false),
            origin: Instant::now(),
            compute: ComputeModel::Host,
        }
    }

    /// The same MCU computing at the speed `compute` models.
    pub fn with_compute(mut self, compute: ComputeModel) -> Mcu {
        self.compute = compute;
        self.lock().executor = McuChains::new(compute);
        self
    }

    /// The compute-time model.
    pub fn compute_model(&self) -> ComputeModel {
        self.compute
    }

    /// The fault knobs.
    pub fn faults(&self) -> &Faults {
        &self.faults
    }

    /// Counters so far.
    pub fn stats(&self) -> McuStats {
        self.lock().stats
    }

    /// Stops answering on every transport (the `crash` command). The chains live in the MCU's
    /// RAM: they are gone, and must be installed again after the restart.
    pub fn crash(&self) {
        self.crashed.store(true, Ordering::SeqCst);
        let state = &mut *self.lock();
        state.chains.clear(&mut state.executor);
    }

    /// Declares that a board loop releases the chains ([`Self::release_chains`]), and how to
    /// wake it when a control frame from any transport changed them; without one, starting a
    /// chain is refused.
    pub fn set_chains_released(&self, wake: ChainWaker) {
        self.lock().executor.set_released(true);
        *self.chain_waker.lock().unwrap_or_else(|p| p.into_inner()) = Some(wake);
    }

    fn wake_chains(&self) {
        if let Some(wake) = &*self.chain_waker.lock().unwrap_or_else(|p| p.into_inner()) {
            wake();
        }
    }

    /// The earliest instant a running chain needs the board loop (`CLOCK_MONOTONIC`).
    pub fn chains_next_due(&self) -> Option<TimeSpec> {
        self.lock().executor.next_due()
    }

    /// The Unix-socket clients subscribed to the chains' results.
    pub fn subscribers(&self) -> &Arc<Subscribers> {
        &self.subscribers
    }

    /// Runs the due jobs of every running chain, handing each result to `send` (true: the
    /// transport took it) and to every subscribed socket client; a result neither took is
    /// counted as not delivered. Nothing runs while the MCU is down.
    pub fn release_chains(&self, send: &mut dyn FnMut(&[u8]) -> bool) {
        if self.is_crashed() {
            return;
        }
        let subscribers = Arc::clone(&self.subscribers);
        let mut deliver = |frame: &[u8]| {
            let sent = send(frame);
            subscribers.deliver(frame) || sent
        };
        let state = &mut *self.lock();
        for (slot, chain, counters) in state.executor.release_due(&mut deliver) {
            state.chains.ended(slot, chain, counters);
        }
    }

    /// Whether a chain runs, and the counters of the first installed one (lateness and
    /// compute time in nanoseconds) with its budget exhaustions, for the status line.
    pub fn chain_summary(&self) -> (bool, ChainStats, u64) {
        let state = &*self.lock();
        state.chains.summary(&state.executor)
    }

    /// Boots again with empty replay windows (the `restart` command).
    pub fn restart(&self) {
        self.lock().replay = Replay::new();
        self.crashed.store(false, Ordering::SeqCst);
    }

    /// True between `crash` and `restart`.
    pub fn is_crashed(&self) -> bool {
        self.crashed.load(Ordering::SeqCst)
    }

    /// Answers one request frame into `out`; `None` if no reply is to be sent (crashed, silent,
    /// dropped). Sleeps for the latency knob before returning a reply.
    pub fn handle(&self, request: &[u8], out: &mut [u8; MAX_FRAME_LEN]) -> Option<Reply> {
        let silent = self.faults.knobs().2;
        if self.is_crashed() || silent {
            self.lock().stats.unanswered += 1;
            return None;
        }
        let clock = || self.origin.elapsed().as_nanos() as u64;
        let served = {
            let mut state = self.lock();
            state.stats.requests += 1;
            let state = &mut *state;
            let served = serve_with_chains(
                request,
                out,
                &clock,
                &mut state.replay,
                &mut state.chains,
                &mut state.executor,
            );
            match served {
                Ok(mut served) => {
                    if served.status == Status::Ok {
                        served.compute_ns = self.compute.stretch(served.task, served.compute_ns);
                    }
                    state.stats.compute_ns_total += served.compute_ns;
                    state.stats.compute_ns_last = served.compute_ns;
                    if served.status != Status::Ok {
                        state.stats.rejected += 1;
                    }
                    if let Some(why) = &served.rejection {
                        log::debug!("request rejected: {why:?}");
                    }
                    served
                }
                Err(e) => {
                    // Only an output buffer shorter than a header fails; `out` is a whole frame.
                    log::error!("dispatcher failed: {e:?}");
                    state.stats.unanswered += 1;
                    return None;
                }
            }
        };
        if served.status == Status::Ok && qf_chain::is_control(request) {
            self.wake_chains();
        }
        match self.faults.verdict() {
            Verdict::Reply { delay } => {
                if !delay.is_zero() {
                    std::thread::sleep(delay);
                }
                self.lock().stats.replies += 1;
                Some(Reply {
                    len: served.len,
                    status: served.status,
                    compute_ns: served.compute_ns,
                })
            }
            Verdict::Drop | Verdict::Silent => {
                self.lock().stats.unanswered += 1;
                None
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
