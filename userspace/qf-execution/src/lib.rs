//! qf-execution: where QFabric's invocations run (paper seed 000, Sections II-B and VI).
//!
//! * [`domain`]: the `Domain` trait and its domains: the persistent Linux executor of
//!   [`executor`], and the MCU endpoint on a Unix socket, through Linux's rpmsg_char
//!   ([`rpmsg_char`]), through the kernel dispatch device `/dev/qfabricN` ([`qfabric_dev`]) or
//!   on a serial line ([`serial`]);
//! * [`reconnect`]: reconnecting with bounded backoff, one rule for every MCU endpoint that can
//!   go away;
//! * [`chains`]: resident-chain control (install, start, stop, remove, status, list) through
//!   any MCU endpoint; [`subscribed`]: the socket endpoint that also brings chain results;
//! * [`wire`]: the stream framing (a u16 big-endian length prefix, one frame, and on replies an
//!   optional 8-byte compute trailer), and its resynchronisation on a serial line;
//! * [`rt`]: caller policies and Linux scheduling classes;
//! * [`load`]: idle / CPU / RT-contention generators;
//! * [`workload`]: requests for the declared tasks and their independent reference check;
//! * [`session`]: a client's epoch and invocation ids, fresh in every process;
//! * [`shown`]: how an error shows a value the user gave (a long one cut).
//!
//! It depends on `qf-decision` only for [`qf_decision::model::DomainId`].
//! The only `unsafe` is in [`rt`] (two libc scheduler calls), [`rpmsg_char`] (two ioctls) and
//! [`qfabric_dev`] (two ioctls and a poll).
#![deny(unsafe_code)]

pub mod chains;
pub mod domain;
pub mod executor;
pub mod load;
pub mod qfabric_dev;
pub mod reconnect;
pub mod rpmsg_char;
pub mod rt;
pub mod serial;
pub mod session;
pub mod shown;
pub mod subscribed;
pub mod wire;
pub mod workload;
