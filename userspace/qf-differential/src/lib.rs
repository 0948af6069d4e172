//! # qf-differential — the kernel module against `qf sim`, event for event
//!
//! `qf sim` runs the same `qf-sched` code as the Zephyr kernel module; this crate is the
//! host side of testing the two against each other: a generator of random task sets, a
//! comparator of two event logs, and a shrinker that reduces a set on which they differ to a
//! small one. Another run (the Zephyr app printing its event log) produces a CSV in the format
//! of `qf sim --events` (`time,task,event,budget,deadline`, times in the set's unit); the
//! comparator requires it to equal the simulator's row for row, except for the by-design
//! classes below.
//!
//! - [`generate`]: the set of a `u64` seed (see [`generate::generate`] for what sets look
//!   like), in `qf sim`'s TOML format ([`spec::SetSpec`]).
//! - [`compare`]: both logs read with limits ([`compare::MAX_BYTES`], [`compare::MAX_ROWS`]),
//!   then a [`compare::Verdict`]: `Equal`, `ByDesign` (only by-design differences: the first
//!   and their count) or `Mismatch` (the first difference no class explains: its row index,
//!   both rows).
//! - [`shrink`]: greedy delta debugging over a predicate "still fails".
//! - [`run`]: a set through `qf sim` in-process, its `--events` CSV.
//! - [`line`]: a set as the one line the Zephyr differential app reads at run time.
//!
//! ## Divergence classes
//!
//! Each class names a difference the scheduling rules allow, and no more. The comparator
//! walks both logs; at a by-design difference it records it and goes on, so a `Mismatch`
//! after it is still found.
//!
//! - `tick-boundary`: the same event of the same task, its time exactly one kernel tick
//!   apart (the set's `tick_hz`, in its unit), its budget and deadline at most one tick
//!   apart. Times reach the scheduler as whole ticks: `qf sim` stamps an event with the tick
//!   at or before the instant it happens (`k_uptime_ticks`) and fires timers on the tick at or
//!   after their due time; a job that ends a hair later on hardware (its busy loop, the
//!   interrupt that ends it) lands in the next tick, which moves its completion and what is
//!   charged to its budget by that tick.
//! - `simultaneous-order`: at one instant, both logs hold the same rows, the context switches
//!   (`SWT_TO`, `SWT_AY`) at the same rows and each task's own rows in the same order; only
//!   how different tasks' other rows interleave between the switches differs. `qf-sched`
//!   records a thread's events in the order its calls make them, and the Zephyr module's
//!   tracing hooks, like `qf sim`, call `switched_out` before a switch and `switched_in` after
//!   it; what the rules leave open is the order in which the kernel handles a job completing
//!   and timers expiring on the same tick (`qf sim` handles the completion first, then the
//!   timers in the order they were armed; on hardware the tick interrupt can come first).
//! - `Mismatch`: anything else — a row missing, added, changed or moved, a different
//!   scheduling decision, one log ending first.
//!
//! ## Commands
//!
//! `qf differential` (see [`cli`]):
//! - `generate --seed S [--count N] --out DIR`: writes `set-<seed>.toml` for seeds S to
//!   S+N-1 and prints each seed with its utilisation.
//! - `compare --set SET.toml SIM.csv RUN.csv`: prints the verdict and exits 0 when equal or
//!   different only by design; a mismatch is an error naming it (exit status 1).
//! - `shrink SET.toml --against CMD [ARGS...]`: runs `CMD ARGS... CANDIDATE.toml RUN.csv`
//!   for each candidate (CMD writes the other run's event log to RUN.csv), compares it with
//!   `qf sim`'s, and prints the smallest set that still mismatches.
//! - `line SET.toml`: prints the set as one line ([`line`]) for the Zephyr app.

pub mod cli;
pub mod compare;
pub mod generate;
pub mod line;
pub mod run;
pub mod shrink;
pub mod spec;
