//! qf-agent: the Linux control plane of QFabric (paper seed 000, Sections II, IV, VI, VII).
//!
//! Contracts and the deadline rule ([`contract`]), admission ([`admission`]), the guarded
//! recovery controller ([`controller`]), statistics ([`stats`]), ordered trace replay
//! ([`replay`]) and the `qf` subcommands built on them ([`cli`]).
#![forbid(unsafe_code)]

pub mod admission;
pub mod chain;
pub mod cli;
pub mod contract;
pub mod controller;
pub mod decision_cost;
pub mod evaluate;
pub mod journal;
pub mod model;
pub mod replay;
pub mod report;
pub mod router;
pub mod stats;
pub mod synthetic;
pub mod traces;
