//! Resident-chain control: the ABI v1 frames that install, start, stop, remove and inspect the
//! chains an MCU runs on its own timer (a declared task released once per period on a fixed
//! request, sending only its result).
//!
//! Control frames are ordinary ABI v1 requests and responses to six reserved task ids
//! ([`ChainOp`], `0xFFFF_FF01..=0xFFFF_FF06`, effect class STATEFUL). A peer that predates them
//! answers each with UNKNOWN_TASK and changes nothing; `list` is the capability probe (it has no
//! other reason to be UNKNOWN_TASK). Control requests take no part in replay protection: each
//! operation is safe to repeat (a repeated install is refused with ID_IN_USE, start, stop and
//! remove of a chain already in that state answer as the first did).
//!
//! | op | task id | request payload | OK response payload |
//! | --- | ---: | --- | --- |
//! | install | `0xFFFF_FF01` | [`ChainInstall`] (154 bytes) | [`ChainRef`] (4) |
//! | start | `0xFFFF_FF02` | [`ChainRef`] | [`ChainRef`] |
//! | stop | `0xFFFF_FF03` | [`ChainRef`] | [`ChainRef`] |
//! | remove | `0xFFFF_FF04` | [`ChainRef`] | [`ChainRef`] |
//! | status | `0xFFFF_FF05` | [`ChainRef`] | [`ChainStatus`] (97) |
//! | list | `0xFFFF_FF06` | [`ChainListRequest`] (0) | [`ChainList`] (49) |
//!
//! A refusal is a response whose header status names the reason (MALFORMED, OUT_OF_RANGE,
//! UNKNOWN_TASK, BAD_TEMPLATE, ID_IN_USE, TABLE_FULL, OVER_BOUND, NOT_INSTALLED) with an empty
//! payload, and changes nothing on the MCU. Every field is big-endian, as everywhere in ABI v1.
//!
//! Results of an installed chain are ordinary response frames of the chain's task, with the
//! chain id in the header's contract-id field (the MCU writes it into every job's request) and
//! invocation ids counting up from the template's: a v1 reader that ignores the contract id reads
//! them as before.

use serde::{Deserialize, Serialize};

use crate::codec::array;
use crate::{EffectClass, WireSize};

/// First task id of the range reserved for MCU control (`0xFFFF_FF00..=0xFFFF_FFFF`); no declared
/// task may use it.
pub const CONTROL_TASK_BASE: u32 = 0xFFFF_FF00;

/// The effect class every control frame carries: it changes the MCU's state.
pub const CONTROL_EFFECT: EffectClass = EffectClass::Stateful;

/// Bytes of a request template an install carries (a whole request frame, header included).
pub const TEMPLATE_CAPACITY: usize = 128;

/// Most chains a [`ChainList`] names; an MCU holds at most this many.
pub const MAX_LISTED_CHAINS: usize = 8;

/// Shortest and longest period (µs) any MCU accepts; an MCU may narrow the range.
pub const PERIOD_US_MIN: u32 = 100;
/// One hour.
pub const PERIOD_US_MAX: u32 = 3_600_000_000;

/// The golden vectors of the control frames and of a chain result (`golden/chain-vectors.json`,
/// in the style of the reference's `golden-vectors.json`): checked by this crate's tests, emitted
/// in the C header `qf abi generate` writes.
pub const GOLDEN_VECTORS_JSON: &str = include_str!("../golden/chain-vectors.json");

/// The six control operations, one reserved task id each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum ChainOp {
    Install = CONTROL_TASK_BASE + 1,
    Start = CONTROL_TASK_BASE + 2,
    Stop = CONTROL_TASK_BASE + 3,
    Remove = CONTROL_TASK_BASE + 4,
    Status = CONTROL_TASK_BASE + 5,
    List = CONTROL_TASK_BASE + 6,
}

impl ChainOp {
    /// Every operation, in task-id order.
    pub const ALL: [ChainOp; 6] = [
        ChainOp::Install,
        ChainOp::Start,
        ChainOp::Stop,
        ChainOp::Remove,
        ChainOp::Status,
        ChainOp::List,
    ];

    /// The reserved task id.
    pub const fn task_id(self) -> u32 {
        self as u32
    }

    /// The operation a task id names, if any.
    pub const fn from_task_id(task_id: u32) -> Option<ChainOp> {
        match task_id.wrapping_sub(CONTROL_TASK_BASE) {
            1 => Some(ChainOp::Install),
            2 => Some(ChainOp::Start),
            3 => Some(ChainOp::Stop),
            4 => Some(ChainOp::Remove),
            5 => Some(ChainOp::Status),
            6 => Some(ChainOp::List),
            _ => None,
        }
    }

    /// Whether a task id lies in the control range (`0xFFFF_FF00..`), named or not.
    pub const fn is_control(task_id: u32) -> bool {
        task_id >= CONTROL_TASK_BASE
    }

    /// `chain_install`, `chain_start`, ...: the name `qf abi decode` prints.
    pub const fn name(self) -> &'static str {
        match self {
            ChainOp::Install => "chain_install",
            ChainOp::Start => "chain_start",
            ChainOp::Stop => "chain_stop",
            ChainOp::Remove => "chain_remove",
            ChainOp::Status => "chain_status",
            ChainOp::List => "chain_list",
        }
    }

    /// The name of the request payload type.
    pub const fn request_type(self) -> &'static str {
        match self {
            ChainOp::Install => "ChainInstall",
            ChainOp::List => "ChainListRequest",
            _ => "ChainRef",
        }
    }

    /// The name of the OK response payload type.
    pub const fn response_type(self) -> &'static str {
        match self {
            ChainOp::Status => "ChainStatus",
            ChainOp::List => "ChainList",
            _ => "ChainRef",
        }
    }
}

/// Install a chain (stopped): admitted or refused, nothing runs until [`ChainOp::Start`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainInstall {
    /// 1..=u32::MAX, chosen by Linux; results carry it as their contract id.
    pub chain_id: u32,
    /// The declared task the chain runs; the template must name it.
    pub task_id: u32,
    /// Release period, [`PERIOD_US_MIN`]..=[`PERIOD_US_MAX`] µs.
    pub period_us: u32,
    /// Relative deadline of each job, budget..=period µs; 0 means the period.
    pub deadline_us: u32,
    /// CBS budget per period, µs; 0: no server (the chain reserves no bandwidth).
    pub budget_us: u32,
    /// First release this long after `start`, ≤ period µs; 0: at once.
    pub start_delay_us: u32,
    /// Bytes of `template` in use (36..=128); the rest must be zero.
    pub template_len: u16,
    /// The request frame each job sends to the dispatcher (its invocation id is the first job's).
    #[serde(with = "array")]
    pub template: [u8; TEMPLATE_CAPACITY],
}

impl ChainInstall {
    /// An install of the request frame `template` (its task id read from it) every
    /// `period_us` with a CBS budget of `budget_us` (0: none), deadline the period, no start
    /// delay; `None` if the template is longer than [`TEMPLATE_CAPACITY`]. Nothing else is
    /// checked: that is the MCU's business.
    pub fn new(chain_id: u32, template: &[u8], period_us: u32, budget_us: u32) -> Option<Self> {
        let mut bytes = [0u8; TEMPLATE_CAPACITY];
        bytes.get_mut(..template.len())?.copy_from_slice(template);
        let task_id = template
            .get(crate::header::offset::TASK_ID..crate::header::offset::TASK_ID + 4)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u32::from_be_bytes);
        Some(ChainInstall {
            chain_id,
            task_id,
            period_us,
            deadline_us: 0,
            budget_us,
            start_delay_us: 0,
            // At most TEMPLATE_CAPACITY (128): fits.
            template_len: template.len() as u16,
            template: bytes,
        })
    }

    /// The template bytes in use, or `None` if `template_len` exceeds the capacity.
    pub fn template(&self) -> Option<&[u8]> {
        self.template.get(..usize::from(self.template_len))
    }
}

/// The chain a start, stop, remove or status names; also the OK answer to all but status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainRef {
    pub chain_id: u32,
}

/// The (empty) request of [`ChainOp::List`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ChainListRequest {}

/// Where a chain is in its life (byte `state` of [`ChainStatus`] and [`ChainEntry`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ChainState {
    /// Admitted, never started.
    Installed = 1,
    /// Releasing jobs.
    Running = 2,
    /// Stopped: its thread is gone, its reservation and counters stay until removed.
    Stopped = 3,
}

impl ChainState {
    /// The wire byte.
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// Parses a wire byte; `None` outside 1..=3.
    pub const fn from_code(code: u8) -> Option<ChainState> {
        match code {
            1 => Some(ChainState::Installed),
            2 => Some(ChainState::Running),
            3 => Some(ChainState::Stopped),
            _ => None,
        }
    }

    /// `installed`, `running`, `stopped`.
    pub const fn name(self) -> &'static str {
        match self {
            ChainState::Installed => "installed",
            ChainState::Running => "running",
            ChainState::Stopped => "stopped",
        }
    }
}

/// One chain's configuration and counters (answer to [`ChainOp::Status`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ChainStatus {
    pub chain_id: u32,
    /// [`ChainState`] code.
    pub state: u8,
    pub task_id: u32,
    pub period_us: u32,
    /// The relative deadline in force (the period when installed with 0).
    pub deadline_us: u32,
    pub budget_us: u32,
    /// The bandwidth admitted for the chain, parts per million of the CPU.
    pub reserved_ppm: u32,
    /// Jobs released.
    pub releases: u64,
    /// Jobs whose response carried status OK.
    pub results: u64,
    /// Jobs released a period or more late (the periodic EDF restarted the cycle at once).
    pub overruns: u64,
    /// Times the CBS budget ran out during a job.
    pub budget_exhaustions: u64,
    /// Jobs still running at their absolute deadline.
    pub deadline_misses: u64,
    /// Largest lateness of a release, µs.
    pub lateness_max_us: u64,
    /// Largest compute time of a job, ns.
    pub compute_max_ns: u64,
    /// Results the transport could not take (no reader bound, no buffer).
    pub not_delivered: u64,
    /// Jobs whose response carried another status than OK.
    pub rejected: u64,
}

/// One slot of a [`ChainList`]; `state` 0 marks an unused entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ChainEntry {
    pub chain_id: u32,
    pub state: u8,
}

/// Every installed chain (answer to [`ChainOp::List`]) and the MCU's reserved bandwidth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ChainList {
    /// Entries in use, at the front of `chains`.
    pub count: u8,
    pub chains: [ChainEntry; MAX_LISTED_CHAINS],
    /// Bandwidth reserved on the MCU (chains and, on Zephyr, the application's own CBS
    /// threads), and the bound admission keeps it under, parts per million.
    pub reserved_ppm: u32,
    pub bound_ppm: u32,
}

impl WireSize for ChainInstall {
    const WIRE_SIZE: usize = 6 * 4 + 2 + TEMPLATE_CAPACITY;
}
impl WireSize for ChainRef {
    const WIRE_SIZE: usize = 4;
}
impl WireSize for ChainListRequest {
    const WIRE_SIZE: usize = 0;
}
impl WireSize for ChainStatus {
    const WIRE_SIZE: usize = 4 + 1 + 5 * 4 + 9 * 8;
}
impl WireSize for ChainEntry {
    const WIRE_SIZE: usize = 4 + 1;
}
impl WireSize for ChainList {
    const WIRE_SIZE: usize = 1 + MAX_LISTED_CHAINS * ChainEntry::WIRE_SIZE + 2 * 4;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{decode_payload, encode_payload};

    /// The constants agree with what the codec writes.
    #[test]
    fn the_documented_sizes_hold() {
        let mut out = [0u8; 988];
        let install = ChainInstall {
            chain_id: 1,
            task_id: 1,
            period_us: 1,
            deadline_us: 0,
            budget_us: 0,
            start_delay_us: 0,
            template_len: 0,
            template: [0; TEMPLATE_CAPACITY],
        };
        assert_eq!(encode_payload(&install, &mut out), Ok(154));
        assert_eq!(decode_payload::<ChainInstall>(&out[..154]), Ok(install));
        assert_eq!(encode_payload(&ChainStatus::default(), &mut out), Ok(97));
        assert_eq!(encode_payload(&ChainList::default(), &mut out), Ok(49));
        assert_eq!(encode_payload(&ChainListRequest {}, &mut out), Ok(0));
        assert_eq!(ChainInstall::WIRE_SIZE, 154);
        assert_eq!(ChainRef::WIRE_SIZE, 4);
        assert_eq!(ChainListRequest::WIRE_SIZE, 0);
        assert_eq!(ChainStatus::WIRE_SIZE, 97);
        assert_eq!(ChainList::WIRE_SIZE, 49);
    }

    #[test]
    fn task_ids_name_their_operation_and_nothing_else() {
        for op in ChainOp::ALL {
            assert_eq!(ChainOp::from_task_id(op.task_id()), Some(op));
            assert!(ChainOp::is_control(op.task_id()));
        }
        for id in [0, 1, 6, CONTROL_TASK_BASE, CONTROL_TASK_BASE + 7, u32::MAX] {
            assert_eq!(ChainOp::from_task_id(id), None, "{id:#x}");
        }
        assert!(!ChainOp::is_control(CONTROL_TASK_BASE - 1));
    }
}
