//! `qf-mcu-emu`: the emulated MCU core of qfabric's virtual board.
//!
//! It is the ivshmem server QEMU's `ivshmem-doorbell` connects to ([`ivshmem`]), publishes the
//! control block and remoteproc resource table in the shared memory ([`layout`], [`rsc_table`]),
//! serves the rpmsg virtqueues as the virtio device ([`vring`], [`rpmsg`]) as the remote core
//! ([`board`]), and answers QFabric frames with `qf-tasks` ([`mcu`]) over rpmsg and over a Unix
//! socket for the host agent ([`unix_endpoint`]) and on a serial line ([`serial_endpoint`]: a tty
//! or a pty), under fault knobs ([`faults`], [`control`]).
//! It also runs resident chains, periodic `qf-sched` threads released by the MCU's own timer
//! ([`resident`], over the kernel interface of [`kernel`]; without the board by [`chain_loop`],
//! their results to the socket's [`subscribers`]), and can take a
//! Cortex-M33's compute time instead of the host's ([`compute`]), and send garbage that answers
//! nothing ([`garbage`]), or behave as a broken image would ([`defect`]).
//! The contract with the Linux driver is `docs/virtual-board.md`.
#![deny(unsafe_code)]

pub mod board;
pub mod chain_loop;
pub mod compute;
pub mod control;
pub mod defect;
pub mod faults;
pub mod garbage;
pub mod ivshmem;
pub mod kernel;
pub mod layout;
pub mod listen;
pub mod mcu;
pub mod process;
pub mod resident;
pub mod rpmsg;
pub mod rsc_table;
pub mod serial_endpoint;
pub mod shm;
pub mod subscribers;
pub mod unix_endpoint;
pub mod vring;
