//! The decision-cost rig (the paper's RQ5), shared by the `decision_cost` bench (which also counts
//! heap allocations) and `qf evaluate` (which keeps the raw per-decision times for the report).
//!
//! A measured decision is the `observe` call that closes a window of a four-node chain with
//! k = 1: Eq. 3, Eq. 7 and a full admission (Eqs. 2, 5, 6) of all four one-task moves, each
//! rejected (the MCU is predicted slower than the observed p95), so every decision does the same
//! work and the controller stays in Stable.

use crate::contract::ContractConfig;
use crate::controller::{Controller, Decision};
use crate::model::{DomainEvidence, DomainId, EffectClass, TaskModel};
use std::time::Instant;

/// A controller set up for repeated full decisions; all allocation happens in [`Rig::new`].
#[derive(Debug, Clone)]
pub struct Rig {
    controller: Controller,
    /// Rejections reported so far (4 per decision when the rig works as intended).
    pub rejections: usize,
}

impl Default for Rig {
    fn default() -> Self {
        Self::new()
    }
}

impl Rig {
    pub fn new() -> Self {
        let tasks = (0..4)
            .map(|i| TaskModel {
                name: format!("fir_x64_n{i}"),
                effect: EffectClass::Pure,
                allowed: [true, true],
                rate_hz: 10.0,
                evidence: [
                    DomainEvidence {
                        samples: 2000,
                        q95_us: 450.0,
                    },
                    DomainEvidence {
                        samples: 2000,
                        q95_us: 23_070.0,
                    },
                ],
            })
            .collect();
        let config = ContractConfig {
            hysteresis: 1,
            ..ContractConfig::default()
        };
        let controller = Controller::new(config, tasks, vec![DomainId::Linux; 4], 96_000.0)
            .expect("the rig's model is valid");
        Self {
            controller,
            rejections: 0,
        }
    }

    /// Runs `times_ns.capacity() - times_ns.len()` decisions, pushing each one's wall time in ns.
    /// Allocation-free as long as `times_ns` has the capacity.
    pub fn run(&mut self, times_ns: &mut Vec<f64>) {
        let window = self.controller.config().window;
        let mut rejections = 0usize;
        let mut sink = |_: &Decision| rejections += 1;
        let mut i = 0usize;
        while times_ns.len() < times_ns.capacity() {
            for j in 0..window - 1 {
                let latency = if j == 0 {
                    120_000.0
                } else {
                    1_800.0 + (i % 7) as f64
                };
                self.controller.observe(latency, true, &mut sink);
            }
            let start = Instant::now();
            self.controller.observe(1_900.0, true, &mut sink);
            times_ns.push(start.elapsed().as_nanos() as f64);
            i += 1;
        }
        self.rejections += rejections;
    }
}
