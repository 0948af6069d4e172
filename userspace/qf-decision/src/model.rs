//! The system model of the paper's Section II-B as the controller sees it: execution domains,
//! effect classes, and per task the profiled evidence for each domain.

use serde::{Deserialize, Serialize};

/// An execution domain d(v) ∈ {L, M}.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum DomainId {
    Linux,
    Mcu,
}

impl DomainId {
    pub const ALL: [DomainId; 2] = [DomainId::Linux, DomainId::Mcu];

    /// Dense index for per-domain arrays.
    pub const fn index(self) -> usize {
        match self {
            DomainId::Linux => 0,
            DomainId::Mcu => 1,
        }
    }

    /// The other domain (there are two).
    pub const fn other(self) -> DomainId {
        match self {
            DomainId::Linux => DomainId::Mcu,
            DomainId::Mcu => DomainId::Linux,
        }
    }

    /// Name used in file names, JSON and the CLI.
    pub const fn as_str(self) -> &'static str {
        match self {
            DomainId::Linux => "linux",
            DomainId::Mcu => "mcu",
        }
    }
}

impl std::fmt::Display for DomainId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for DomainId {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "linux" => Ok(DomainId::Linux),
            "mcu" => Ok(DomainId::Mcu),
            other => Err(format!(
                "unknown domain `{other}` (expected `linux` or `mcu`)"
            )),
        }
    }
}

/// Effect classes are the wire ABI's (one definition, in `qf-abi`); only PURE tasks move.
pub use qf_abi::EffectClass;

/// Serde for an [`EffectClass`] as its lowercase declaration name (`pure`, `idempotent`,
/// `stateful`, `actuating`), for chain files and JSON.
pub mod effect_name {
    use qf_abi::EffectClass;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(
        effect: &EffectClass,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(effect.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<EffectClass, D::Error> {
        let name = String::deserialize(deserializer)?;
        EffectClass::from_name(&name).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown effect `{name}` (expected pure, idempotent, stateful or actuating)"
            ))
        })
    }
}

/// What the profile says about one task in one domain.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DomainEvidence {
    /// Valid samples behind the estimate (0 = never profiled in this domain).
    pub samples: usize,
    /// Profiled 95th-percentile latency q.95(v, d), microseconds.
    pub q95_us: f64,
}

impl DomainEvidence {
    pub const NONE: DomainEvidence = DomainEvidence {
        samples: 0,
        q95_us: f64::NAN,
    };
}

/// One task of the chain as the controller needs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskModel {
    pub name: String,
    #[serde(with = "effect_name")]
    pub effect: EffectClass,
    /// Domains with an implementation of this task, indexed by [`DomainId::index`].
    pub allowed: [bool; 2],
    /// Invocation rate r_v in Hz, for the MCU headroom test (Eq. 5).
    pub rate_hz: f64,
    /// Profiled evidence per domain, indexed by [`DomainId::index`].
    pub evidence: [DomainEvidence; 2],
}

impl TaskModel {
    pub fn allows(&self, domain: DomainId) -> bool {
        self.allowed[domain.index()]
    }

    pub fn evidence(&self, domain: DomainId) -> DomainEvidence {
        self.evidence[domain.index()]
    }
}
