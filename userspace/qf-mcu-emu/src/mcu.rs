//! The MCU's frame service, shared by both transports (rpmsg and the Unix endpoint): runs
//! `qf_tasks::serve` (frame codec, dispatcher, per-task replay windows of `qf-abi`) under the
//! fault knobs, and keeps the compute-time statistics the emulator reports.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use qf_abi::{Status, MAX_FRAME_LEN};
use qf_tasks::{serve, Replay};

use crate::compute::ComputeModel;
use crate::faults::{Faults, Verdict};

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
}

/// One emulated MCU: its replay windows (RAM that a restart wipes), its fault knobs and
/// whether it is crashed.
pub struct Mcu {
    state: Mutex<State>,
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
            }),
            faults,
            crashed: AtomicBool::new(false),
            origin: Instant::now(),
            compute: ComputeModel::Host,
        }
    }

    /// The same MCU computing at the speed `compute` models.
    pub fn with_compute(mut self, compute: ComputeModel) -> Mcu {
        self.compute = compute;
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

    /// Stops answering on every transport (the `crash` command).
    pub fn crash(&self) {
        self.crashed.store(true, Ordering::SeqCst);
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
            match serve(request, out, &clock, &mut state.replay) {
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
