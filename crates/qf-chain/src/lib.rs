//! Resident chains of the MCU executor: a declared `qf-tasks` task that the MCU runs once per
//! period on a fixed request, sending only the response frame (the result) to Linux.
//!
//! This is the portable half, shared by every MCU executor (the Zephyr module, and the MCU
//! emulator when it runs chains): it builds each job's request frame from the chain's template,
//! runs it through the one dispatcher ([`qf_tasks::serve`]), and keeps the release bookkeeping
//! and result counters. Threads, timers, CBS budgets and the transport belong to the executor.
//!
//! * [`Chain`]: one chain — its request template, next invocation id, private replay window and
//!   counters ([`ChainStats`]).
//! * [`Releases`]: when each job was due and how late it started, re-anchored after an overrun.
//! * [`ChainTable`]: the chains an MCU holds, installed, started, stopped and removed by the
//!   control frames of [`qf_abi::chain`] (validation, and admission through the executor's
//!   qf-sched scheduler, [`ChainExecutor`]); [`serve_with_chains`] is the executor's one entry
//!   for frames from Linux.
//!
//! `#![no_std]`, no allocation, never panics on any template bytes.
#![no_std]
#![forbid(unsafe_code)]

mod chain;
mod control;
mod releases;
mod table;

pub use chain::{
    Chain, ChainStats, Job, CHAIN_REPLAY_WINDOW, MAX_CHAIN_REQUEST_LEN, MAX_CHAIN_RESPONSE_LEN,
};
pub use control::{control, is_control, serve_with_chains};
pub use releases::{Release, Releases};
pub use table::{
    reserve_thread, ChainExecutor, ChainTable, ChainTiming, NoTimers, ThreadCounters, MAX_CHAINS,
};
