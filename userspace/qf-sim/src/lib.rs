//! # qf-sim — a deterministic simulator of Zephyr running qf-sched
//!
//! Reads a task set (TOML), simulates a uniprocessor Zephyr scheduler driving the very same
//! `qf-sched` code the Zephyr module runs (through its `Kernel` trait), and writes the
//! schedule, the scheduler's event trace, a Gantt chart and a summary. `qf sim` is its CLI.
//! The trace goes to a [`engine::Trace`] receiver as it is produced, in time order, so a run's
//! memory is bounded by its task set, not its horizon (`cli` streams the CSV files).
//!
//! Task-set format (integers in the set's `unit`; `unit`, `tick_hz`, `priority`, `deadline`,
//! `offset`, `hard_reservation`, `admission_bound` optional):
//! ```toml
//! unit = "1ms"          # ns, us, ms or s, alone or after a count
//! tick_hz = 10000       # kernel tick: timers fire on it
//! horizon = 35
//! admission_bound = 1.0 # enables admission control (off when absent)
//! [[task]]
//! name = "hard1"
//! kind = "periodic"     # k_thread_period_set + k_thread_deadline_set loop
//! wcet = 4
//! period = 7            # deadline = period unless `deadline` is given
//! [[task]]
//! name = "cbs1"
//! kind = "cbs"          # a thread with a private CBS
//! budget = 3
//! period = 8
//! jobs = [[3, 4], [13, 3]]   # [arrival, execution]
//! ```
//!
//! Limits (`taskset`): [`taskset::MAX_TASKS`] tasks, [`taskset::MAX_JOBS`] CBS jobs,
//! [`taskset::MAX_ITEMS`] TOML keys and values and [`taskset::MAX_FILE_BYTES`], counted before
//! the file is parsed whole; a period, deadline or budget of at least one tick
//! ([`taskset::rounded_to_ticks`] names those the kernel rounds up). `examples/README.md` has
//! the figures and what admission control tests.

pub mod cli;
pub mod clock;
pub mod engine;
pub mod output;
pub mod taskset;

pub use engine::{simulate, Options, Outcome};
pub use taskset::{load, parse, TaskSet, TaskSetError};
