//! qf-evidence: QFabric's evidence and experiments (paper seed 000, Sections VI, VII and VIII-A).
//!
//! * Evidence: [`stats`] (type-7 percentiles, circular block bootstrap), [`traces`], [`profile`]
//!   (raw observations per domain × load × caller), [`journal`] (hash-chained, fsync'd decision
//!   log), [`files`] (bounded reads of the agent's small input files).
//! * Experiments: [`chain`] files, [`resident`] (a resident chain's results observed from
//!   Linux), [`replay`] (ordered trace replay and the Table III policies), [`evaluate`] (grid and
//!   hysteresis ablation), [`synthetic`] (labelled synthetic traces), [`report`] (tables, plots,
//!   input digests) with its [`table`] helpers, the Section VIII-A tables of [`boundary`] and
//!   [`dispatch`], and [`runs`] (a repeated campaign: verdict stability and host conditions).
//!
//! It builds on `qf-decision` (replay drives the real controller) and `qf-execution` (profiling
//! and the resident chain run in its domains).
#![forbid(unsafe_code)]

pub mod boundary;
pub mod chain;
pub mod dispatch;
pub mod evaluate;
pub mod files;
pub mod journal;
pub mod profile;
pub mod replay;
pub mod report;
pub mod resident;
pub mod runs;
pub mod stats;
pub mod synthetic;
pub mod table;
pub mod traces;
