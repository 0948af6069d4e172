//! Status codes carried in byte 7 of every frame header (0 on requests).
//!
//! Codes 0–7 are QFabric ABI v1's own; 8–13 are the refusal reasons of resident-chain control
//! ([`crate::chain`]), sent only in answer to a control request, so a peer that predates them
//! never receives one unless it asked (and then rejects the frame as MALFORMED, never misreads
//! it). `name()` gives the lowercase spelling the CLI and JSON use, `from_name()` parses it back.

use core::fmt;

/// Outcome of a frame or an invocation, as carried on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Status {
    /// Accepted (requests always carry 0) or executed successfully.
    Ok = 0,
    /// Structurally invalid: bad magic, length mismatch, non-zero flags, bad bool, NaN, ...
    Malformed = 1,
    /// Frame longer than [`crate::MAX_FRAME_LEN`] or payload longer than [`crate::MAX_PAYLOAD_LEN`].
    Oversized = 2,
    /// Protocol version other than [`crate::PROTOCOL_VERSION`].
    VersionMismatch = 3,
    /// The receiver has no task with this id.
    UnknownTask = 4,
    /// The request's epoch is older than the receiver's current epoch for this task.
    Stale = 5,
    /// The invocation id was already accepted in the current epoch's replay window.
    Duplicate = 6,
    /// The task ran but could not produce a response (e.g. the response did not fit).
    ExecutionError = 7,
    /// Resident-chain control: admitting the chain's CBS reservation would take the MCU's
    /// reserved bandwidth over its bound ([`crate::chain`]).
    OverBound = 8,
    /// Resident-chain control: the request template is no request the dispatcher would serve
    /// with status OK, or names another task than the install.
    BadTemplate = 9,
    /// Resident-chain control: every chain slot of the MCU is taken.
    TableFull = 10,
    /// Resident-chain control: a period, budget, deadline, start delay, chain id or template
    /// length outside its range.
    OutOfRange = 11,
    /// Resident-chain control: a chain with this id is already installed.
    IdInUse = 12,
    /// Resident-chain control: no chain with this id is installed.
    NotInstalled = 13,
}

impl Status {
    /// Every status, in wire order.
    pub const ALL: [Status; 14] = [
        Status::Ok,
        Status::Malformed,
        Status::Oversized,
        Status::VersionMismatch,
        Status::UnknownTask,
        Status::Stale,
        Status::Duplicate,
        Status::ExecutionError,
        Status::OverBound,
        Status::BadTemplate,
        Status::TableFull,
        Status::OutOfRange,
        Status::IdInUse,
        Status::NotInstalled,
    ];

    /// The wire byte.
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// Parses a wire byte; `None` for codes ABI v1 does not define.
    pub const fn from_code(code: u8) -> Option<Status> {
        match code {
            0 => Some(Status::Ok),
            1 => Some(Status::Malformed),
            2 => Some(Status::Oversized),
            3 => Some(Status::VersionMismatch),
            4 => Some(Status::UnknownTask),
            5 => Some(Status::Stale),
            6 => Some(Status::Duplicate),
            7 => Some(Status::ExecutionError),
            8 => Some(Status::OverBound),
            9 => Some(Status::BadTemplate),
            10 => Some(Status::TableFull),
            11 => Some(Status::OutOfRange),
            12 => Some(Status::IdInUse),
            13 => Some(Status::NotInstalled),
            _ => None,
        }
    }

    /// Lowercase name used by the CLI and JSON (`ok`, `malformed`, `version_mismatch`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Malformed => "malformed",
            Status::Oversized => "oversized",
            Status::VersionMismatch => "version_mismatch",
            Status::UnknownTask => "unknown_task",
            Status::Stale => "stale",
            Status::Duplicate => "duplicate",
            Status::ExecutionError => "execution_error",
            Status::OverBound => "over_bound",
            Status::BadTemplate => "bad_template",
            Status::TableFull => "table_full",
            Status::OutOfRange => "out_of_range",
            Status::IdInUse => "id_in_use",
            Status::NotInstalled => "not_installed",
        }
    }

    /// Parses a name as printed by [`Status::name`]; also accepts the reference's
    /// upper-case spelling (`VERSION_MISMATCH`).
    pub fn from_name(name: &str) -> Option<Status> {
        Status::ALL
            .into_iter()
            .find(|status| status.name().eq_ignore_ascii_case(name))
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
