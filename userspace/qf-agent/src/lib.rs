//! qf-agent: the Linux control plane of QFabric (paper seed 000, Sections II, IV, VI, VII).
//!
//! * Decision path (allocation-free after construction): [`contract`] (Eqs. 3, 4, 7 and every
//!   named parameter), [`admission`] (Eqs. 2, 5, 6 and the stable rejection codes),
//!   [`controller`] (hysteresis, quiescent switch, probation, commit/rollback, cooldown),
//!   [`router`] (routing epochs with drain).
//! * Evidence: [`stats`] (type-7 percentiles, circular block bootstrap), [`traces`], [`profile`]
//!   (raw observations, [`workload`]'s independent reference checks), [`journal`]
//!   (hash-chained, fsync'd decision log).
//! * Execution: [`domain`] (the `Domain` trait, the persistent Linux executor of [`executor`],
//!   the MCU endpoint on a Unix socket, through Linux's rpmsg_char ([`rpmsg_char`]) or through
//!   the kernel dispatch device `/dev/qfabricN` ([`qfabric_dev`])), [`wire`]
//!   (the stream framing: a u16 big-endian length prefix, one frame, and on replies an optional
//!   8-byte compute trailer), [`rt`] (caller policies), [`load`] (idle / CPU / RT-contention
//!   generators).
//! * Experiments: [`chain`] files, [`resident`] (a resident chain's results observed from
//!   Linux), [`replay`] (ordered trace replay and the Table III policies),
//!   [`evaluate`] (grid and hysteresis ablation), [`report`] (tables, plots, input digests;
//!   [`boundary`]: the Section VIII-A tables),
//!   [`synthetic`] (labelled synthetic traces), [`decision_cost`] (RQ5 rig).
//! * Front ends: [`cli`] (`qf run|profile|replay|evaluate|report|status`) and [`daemon`]
//!   (`qfabricd`).
//!
//! The only `unsafe` is in [`rt`] (two libc scheduler calls), [`rpmsg_char`] (two ioctls),
//! [`qfabric_dev`] (two ioctls and a poll) and the counting allocator of the decision-cost bench.
#![deny(unsafe_code)]

pub mod admission;
pub mod boundary;
pub mod chain;
pub mod cli;
pub mod contract;
pub mod controller;
pub mod daemon;
pub mod decision_cost;
pub mod dispatch;
pub mod domain;
pub mod evaluate;
pub mod executor;
pub mod journal;
pub mod load;
pub mod model;
pub mod profile;
pub mod qfabric_dev;
pub mod quantile;
pub mod replay;
pub mod report;
pub mod resident;
pub mod router;
pub mod rpmsg_char;
pub mod rt;
pub mod stats;
pub mod synthetic;
pub mod table;
pub mod traces;
pub mod wire;
pub mod workload;
