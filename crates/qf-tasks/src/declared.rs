//! The task declarations of this crate as Rust types: the request/response structs, their
//! encoded sizes, and the [`Task`] table (ids, names, effect classes).
// Written in the exact shape qf-decl generates; replaced by the generated file from qtasks.toml.

#![allow(missing_docs)]

use qf_abi::EffectClass;

#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AddRequest {
    pub a: i32,
    pub b: i32,
}

impl qf_abi::WireSize for AddRequest {
    const WIRE_SIZE: usize = 8;
}

#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AddResponse {
    pub value: i32,
}

impl qf_abi::WireSize for AddResponse {
    const WIRE_SIZE: usize = 4;
}

pub type Offsets = [i16; 3];

#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ProbeRequest {
    pub sequence: u64,
    pub temperature: f32,
    pub gain: f64,
    #[serde(with = "qf_abi::codec::array")]
    pub offsets: Offsets,
    pub enabled: bool,
}

impl qf_abi::WireSize for ProbeRequest {
    const WIRE_SIZE: usize = 27;
}

#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ProbeResponse {
    pub accepted: bool,
    pub checksum: u32,
}

impl qf_abi::WireSize for ProbeResponse {
    const WIRE_SIZE: usize = 5;
}

#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Crc32Request {
    #[serde(with = "qf_abi::codec::array")]
    pub block: [u8; 64],
}

impl qf_abi::WireSize for Crc32Request {
    const WIRE_SIZE: usize = 64;
}

#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Crc32Response {
    pub crc: u32,
}

impl qf_abi::WireSize for Crc32Response {
    const WIRE_SIZE: usize = 4;
}

#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FirRequest {
    #[serde(with = "qf_abi::codec::array")]
    pub samples: [i16; 32],
}

impl qf_abi::WireSize for FirRequest {
    const WIRE_SIZE: usize = 64;
}

#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FirResponse {
    #[serde(with = "qf_abi::codec::array")]
    pub samples: [i16; 32],
}

impl qf_abi::WireSize for FirResponse {
    const WIRE_SIZE: usize = 64;
}

/// Every declared task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Task {
    /// `add` (id 1, pure): AddRequest -> AddResponse.
    Add,
    /// `abi_probe` (id 2, pure): ProbeRequest -> ProbeResponse.
    AbiProbe,
    /// `crc32` (id 3, pure): Crc32Request -> Crc32Response.
    Crc32,
    /// `fir_x1` (id 4, pure): FirRequest -> FirResponse.
    FirX1,
    /// `fir_x64` (id 5, pure): FirRequest -> FirResponse.
    FirX64,
    /// `fir_x512` (id 6, pure): FirRequest -> FirResponse.
    FirX512,
}

impl Task {
    /// Number of declared tasks.
    pub const COUNT: usize = 6;
    /// Every declared task, in declaration order ([`Task::index`] order).
    pub const ALL: [Task; Task::COUNT] = [
        Task::Add,
        Task::AbiProbe,
        Task::Crc32,
        Task::FirX1,
        Task::FirX64,
        Task::FirX512,
    ];

    /// Position in [`Task::ALL`], for per-task tables.
    pub const fn index(self) -> usize {
        match self {
            Task::Add => 0,
            Task::AbiProbe => 1,
            Task::Crc32 => 2,
            Task::FirX1 => 3,
            Task::FirX64 => 4,
            Task::FirX512 => 5,
        }
    }

    /// The wire task id.
    pub const fn id(self) -> u32 {
        match self {
            Task::Add => 1,
            Task::AbiProbe => 2,
            Task::Crc32 => 3,
            Task::FirX1 => 4,
            Task::FirX64 => 5,
            Task::FirX512 => 6,
        }
    }

    /// The task with this wire id.
    pub const fn from_id(id: u32) -> Option<Task> {
        match id {
            1 => Some(Task::Add),
            2 => Some(Task::AbiProbe),
            3 => Some(Task::Crc32),
            4 => Some(Task::FirX1),
            5 => Some(Task::FirX64),
            6 => Some(Task::FirX512),
            _ => None,
        }
    }

    /// The declared name.
    pub const fn name(self) -> &'static str {
        match self {
            Task::Add => "add",
            Task::AbiProbe => "abi_probe",
            Task::Crc32 => "crc32",
            Task::FirX1 => "fir_x1",
            Task::FirX64 => "fir_x64",
            Task::FirX512 => "fir_x512",
        }
    }

    /// The task with this declared name.
    pub fn from_name(name: &str) -> Option<Task> {
        Task::ALL.into_iter().find(|task| task.name() == name)
    }

    /// The declared effect class.
    pub const fn effect(self) -> EffectClass {
        match self {
            Task::Add => EffectClass::Pure,
            Task::AbiProbe => EffectClass::Pure,
            Task::Crc32 => EffectClass::Pure,
            Task::FirX1 => EffectClass::Pure,
            Task::FirX64 => EffectClass::Pure,
            Task::FirX512 => EffectClass::Pure,
        }
    }

    /// Name of the request type.
    pub const fn request_type(self) -> &'static str {
        match self {
            Task::Add => "AddRequest",
            Task::AbiProbe => "ProbeRequest",
            Task::Crc32 => "Crc32Request",
            Task::FirX1 | Task::FirX64 | Task::FirX512 => "FirRequest",
        }
    }

    /// Name of the response type.
    pub const fn response_type(self) -> &'static str {
        match self {
            Task::Add => "AddResponse",
            Task::AbiProbe => "ProbeResponse",
            Task::Crc32 => "Crc32Response",
            Task::FirX1 | Task::FirX64 | Task::FirX512 => "FirResponse",
        }
    }

    /// Encoded request size in bytes.
    pub const fn request_size(self) -> usize {
        match self {
            Task::Add => 8,
            Task::AbiProbe => 27,
            Task::Crc32 => 64,
            Task::FirX1 | Task::FirX64 | Task::FirX512 => 64,
        }
    }

    /// Encoded response size in bytes.
    pub const fn response_size(self) -> usize {
        match self {
            Task::Add => 4,
            Task::AbiProbe => 5,
            Task::Crc32 => 4,
            Task::FirX1 | Task::FirX64 | Task::FirX512 => 64,
        }
    }
}
