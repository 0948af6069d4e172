//! QEMU's ivshmem server protocol (`docs/specs/ivshmem-spec.rst`): the server the emulator runs
//! for QEMU's `ivshmem-doorbell`, and the client side QEMU implements, used to test the server
//! and to drive the board from the host without QEMU; and the mailbox that joins the server to
//! an MCU that is a machine of its own ([`mailbox`]).

mod client;
pub mod mailbox;
mod server;

pub use client::IvshmemClient;
pub use mailbox::{Bridge, BridgeStats, MailboxPeer};
pub use server::{GuestNotifier, IvshmemServer, McuDoorbell};

/// Protocol version the server announces first.
pub const PROTOCOL_VERSION: i64 = 0;
/// Interrupt vectors per peer (QEMU must be started with `vectors=2`).
pub const VECTORS: usize = 2;
/// Peer id of the MCU (the emulator itself).
pub const MCU_PEER_ID: u16 = 0;
/// Peer id given to the guest.
pub const GUEST_PEER_ID: u16 = 1;
/// Vector 0: virtqueue notifications.
pub const VECTOR_VRING: usize = 0;
/// Vector 1: MCU state changes.
pub const VECTOR_STATE: usize = 1;

/// Errors of the ivshmem transport.
#[derive(Debug, thiserror::Error)]
pub enum IvshmemError {
    #[error("ivshmem socket {path}: {source}")]
    Socket {
        path: String,
        source: std::io::Error,
    },
    #[error("{0}")]
    Listen(#[source] std::io::Error),
    #[error("ivshmem {what}: {source}")]
    Sys {
        what: &'static str,
        source: nix::Error,
    },
    #[error("ivshmem protocol: {0}")]
    Protocol(String),
}

pub(crate) fn sys(what: &'static str) -> impl FnOnce(nix::Error) -> IvshmemError {
    move |source| IvshmemError::Sys { what, source }
}
