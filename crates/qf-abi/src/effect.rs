//! Effect classes (header byte 6): what a task does to the world, which decides whether the
//! runtime may move or retry it.

use core::fmt;

/// Semantic class of a task, declared once and carried in every frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum EffectClass {
    /// No side effects: may migrate between domains automatically.
    Pure = 1,
    /// Repeating it changes nothing further: may be retried by explicit policy.
    Idempotent = 2,
    /// Keeps state in its domain: pinned. The default for a declaration without an effect.
    #[default]
    Stateful = 3,
    /// Drives hardware: pinned, never retried.
    Actuating = 4,
}

impl EffectClass {
    /// Every class, in wire order.
    pub const ALL: [EffectClass; 4] = [
        EffectClass::Pure,
        EffectClass::Idempotent,
        EffectClass::Stateful,
        EffectClass::Actuating,
    ];

    /// The wire byte.
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// Parses a wire byte; `None` outside 1..=4.
    pub const fn from_code(code: u8) -> Option<EffectClass> {
        match code {
            1 => Some(EffectClass::Pure),
            2 => Some(EffectClass::Idempotent),
            3 => Some(EffectClass::Stateful),
            4 => Some(EffectClass::Actuating),
            _ => None,
        }
    }

    /// Lowercase name used in declarations, the CLI and JSON.
    pub const fn name(self) -> &'static str {
        match self {
            EffectClass::Pure => "pure",
            EffectClass::Idempotent => "idempotent",
            EffectClass::Stateful => "stateful",
            EffectClass::Actuating => "actuating",
        }
    }

    /// Parses a name as printed by [`EffectClass::name`] (case-insensitive).
    pub fn from_name(name: &str) -> Option<EffectClass> {
        EffectClass::ALL
            .into_iter()
            .find(|class| class.name().eq_ignore_ascii_case(name))
    }

    /// Only PURE tasks may be migrated between domains without an explicit policy.
    pub const fn may_migrate_automatically(self) -> bool {
        matches!(self, EffectClass::Pure)
    }

    /// PURE and IDEMPOTENT tasks may be re-issued by an explicit retry policy.
    pub const fn may_retry(self) -> bool {
        matches!(self, EffectClass::Pure | EffectClass::Idempotent)
    }
}

impl fmt::Display for EffectClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
