//! qf-agent: QFabric's front ends, the only crate that ties the others together.
//!
//! * [`cli`]: `qf run|profile|replay|resident|evaluate|report|status` (the `qf` binary of
//!   `qf-cli` dispatches to these);
//! * [`daemon`]: `qfabricd`, a declared chain run live under the guarded recovery controller,
//!   [`residents`], the MCU-resident chains it keeps installed, and [`status_socket`], the
//!   bounded exchange behind `qf status`;
//! * `src/bin/qf-executor.rs`: the persistent Linux executor process the agent spawns.
//!
//! Below it: `qf-decision` (the decision path), `qf-execution` (domains, framing, caller policies,
//! loads) and `qf-evidence` (statistics, traces, profiling, journal, replay, evaluation, reports).
#![forbid(unsafe_code)]

pub mod cli;
pub mod daemon;
pub mod residents;
pub mod status_socket;
