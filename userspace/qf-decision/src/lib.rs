//! qf-decision: QFabric's decision path (paper seed 000, Sections II-B, IV and VII): what the
//! controller decides and nothing else. Pure logic: no I/O, no process, no clock read on the path,
//! and no heap allocation after construction (the `decision_cost` bench fails on any).
//!
//! * [`model`]: domains, effect classes and the per-task evidence the controller sees;
//! * [`contract`]: Eqs. 3, 4, 7 and every named parameter;
//! * [`admission`]: Eqs. 2, 5, 6 and the stable rejection codes;
//! * [`controller`]: hysteresis, quiescent switch, probation, commit/rollback, cooldown;
//! * [`router`]: routing epochs with drain;
//! * [`quantile`]: the allocation-free type-7 percentile of a window;
//! * [`decision_cost`]: the RQ5 rig that times one decision (`cargo bench -p qf-decision`).
//!
//! It depends on no other agent crate; `qf-execution`, `qf-evidence` and `qf-agent` build on it.
//! It is a std crate: [`router`] blocks on a `Mutex`/`Condvar` pair, the contract's rounding uses
//! `f64::ceil`/`floor` (std-only without a libm), and [`model::DomainId`] is a clap value.
#![forbid(unsafe_code)]

pub mod admission;
pub mod contract;
pub mod controller;
pub mod decision_cost;
pub mod model;
pub mod quantile;
pub mod router;
