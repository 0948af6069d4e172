//! # qf-sched — periodic EDF and a private Constant Bandwidth Server per thread
//!
//! The scheduling core of qfabric's Zephyr side, after *Task-Based Constant Bandwidth Server
//! in the Zephyr Operating System*: the richer EDF API (`k_thread_period_set`,
//! `k_thread_deadline_miss_callback_set`, periods handled inside `k_thread_deadline_set`) and
//! a CBS per thread whose budget is paused and resumed on every context switch.
//!
//! It is portable logic only — `#![no_std]`, no allocation, no `unsafe`, no panics, integer
//! arithmetic — and reaches the kernel through the small [`Kernel`] trait. The Zephyr module,
//! the host simulator (`qf-sim`) and the MCU emulator implement that trait and run this crate
//! unchanged.
//!
//! ## How an adapter drives it
//! - One [`Scheduler`] (a static pool of [`ControlBlock`]s) behind the kernel's scheduler lock.
//! - Thread API → [`Scheduler::attach`], [`Scheduler::period_set`],
//!   [`Scheduler::deadline_miss_callback_set`], [`Scheduler::cbs_budget_set`],
//!   [`Scheduler::deadline_set`] (may call [`Kernel::suspend_until`]),
//!   [`Scheduler::cycle_end`], [`Scheduler::detach`].
//! - Context switch → [`Scheduler::switched_out`] for the outgoing thread, then
//!   [`Scheduler::switched_in`] for the incoming one, with the new thread's identity.
//! - Timer expiry of a thread's one-shot timer → [`Scheduler::timer_expired`].
//! - Tracing → drain [`Scheduler::events`].
//!
//! Time is a `u64` in a unit the adapter picks (see [`Kernel`]); all durations use it too.
//! EDF order on Zephyr's 32-bit wrapping deadline is given by [`wrap32`].
//!
//! ```
//! use qf_sched::{Kernel, Scheduler, ThreadId};
//!
//! // A kernel that only records what it was asked to do.
//! #[derive(Default)]
//! struct Log { now: u64, sleep_until: Option<u64>, deadline: u64 }
//! impl Kernel for Log {
//!     fn now(&self) -> u64 { self.now }
//!     fn timer_arm(&mut self, _: ThreadId, _: u64) {}
//!     fn timer_cancel(&mut self, _: ThreadId) {}
//!     fn deadline_set(&mut self, _: ThreadId, deadline: u64) { self.deadline = deadline }
//!     fn suspend_until(&mut self, _: ThreadId, at: u64) { self.sleep_until = Some(at) }
//! }
//!
//! let mut sched = Scheduler::<4, 16>::new();
//! let mut kernel = Log::default();
//! let hard = ThreadId(0);
//! sched.attach(hard)?;
//! sched.period_set(hard, 7)?;
//! sched.deadline_set(&mut kernel, hard, 7)?;   // first cycle: released now, deadline 7
//! assert_eq!(kernel.deadline, 7);
//! kernel.now = 4;                               // the job took 4 units
//! sched.deadline_set(&mut kernel, hard, 7)?;   // sleeps until 7, next deadline 14
//! assert_eq!((kernel.sleep_until, kernel.deadline), (Some(7), 14));
//! # Ok::<(), qf_sched::Error>(())
//! ```
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod bandwidth;
pub mod cbs;
mod control;
mod error;
pub mod event;
mod kernel;
mod scheduler;
pub mod wrap32;

pub use bandwidth::Bandwidth;
pub use control::{Callback, CallbackFn, ControlBlock, Expiry, Notice};
pub use error::Error;
pub use event::{Event, EventKind, EventRing};
pub use kernel::{Kernel, ThreadId};
pub use scheduler::Scheduler;
