//! Chain files (TOML): the tasks of a chain G = (V, E) in chain order, with effect, allowed
//! domains, initial placement, per-task deadline and invocation rate.
//!
//! ```toml
//! [[task]]
//! name = "fir64"
//! effect = "pure"              # pure | idempotent | stateful | actuating (default stateful)
//! domains = ["linux", "mcu"]   # where it may run
//! start = "linux"              # initial placement
//! deadline_us = 1000           # per-task D; if absent, Eq. 4 from the idle traces
//! rate_hz = 50                 # invocation rate, for MCU headroom (Eq. 5)
//! ```

use anyhow::{bail, Context, Result};
use qf_decision::model::{effect_name, DomainId, EffectClass};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One `[[task]]` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskDecl {
    pub name: String,
    #[serde(default, with = "effect_name")]
    pub effect: EffectClass,
    pub domains: Vec<DomainId>,
    pub start: DomainId,
    pub deadline_us: Option<f64>,
    /// Defaults to 0 Hz (no MCU load accounted) when absent.
    #[serde(default)]
    pub rate_hz: f64,
}

/// A whole chain file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Chain {
    pub task: Vec<TaskDecl>,
}

/// The largest chain file read: 1 MiB. A chain names a few tasks in a few hundred bytes each,
/// so a bigger file is not a chain; the bound keeps a wrong path from being read into memory.
pub const MAX_CHAIN_BYTES: u64 = 1 << 20;

impl Chain {
    /// Reads and validates a chain file, a regular file of at most [`MAX_CHAIN_BYTES`] (a FIFO
    /// or device is refused without waiting on it); errors name the file, the task and the field.
    pub fn load(path: &Path) -> Result<Chain> {
        let text = crate::files::read_regular_text(path, MAX_CHAIN_BYTES)
            .with_context(|| format!("reading chain file {}", path.display()))?;
        Chain::parse(&text).with_context(|| format!("chain file {}", path.display()))
    }

    pub fn parse(text: &str) -> Result<Chain> {
        let chain: Chain = toml::from_str(text)?;
        chain.validate()?;
        Ok(chain)
    }

    fn validate(&self) -> Result<()> {
        if self.task.is_empty() {
            bail!("no [[task]] entries");
        }
        for (index, task) in self.task.iter().enumerate() {
            let label = format!("task {index} (`{}`)", task.name);
            let name_ok = !task.name.is_empty()
                && task
                    .name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if !name_ok {
                bail!("{label}: field `name` must be non-empty ASCII letters, digits, `_` or `-` (it names trace files)");
            }
            if self.task[..index]
                .iter()
                .any(|other| other.name == task.name)
            {
                bail!("{label}: field `name` repeats an earlier task");
            }
            if task.domains.is_empty() {
                bail!("{label}: field `domains` is empty");
            }
            if !task.domains.contains(&task.start) {
                bail!(
                    "{label}: field `start` = \"{}\" is not in `domains`",
                    task.start
                );
            }
            if let Some(deadline) = task.deadline_us {
                if !(deadline > 0.0 && deadline.is_finite()) {
                    bail!("{label}: field `deadline_us` = {deadline} must be a positive number");
                }
            }
            if !(task.rate_hz >= 0.0 && task.rate_hz.is_finite()) {
                bail!(
                    "{label}: field `rate_hz` = {} must be a non-negative number",
                    task.rate_hz
                );
            }
        }
        Ok(())
    }

    /// The declared initial placement.
    pub fn start_placement(&self) -> Vec<DomainId> {
        self.task.iter().map(|t| t.start).collect()
    }
}

impl TaskDecl {
    pub fn allowed(&self) -> [bool; 2] {
        let mut allowed = [false; 2];
        self.domains.iter().for_each(|d| allowed[d.index()] = true);
        allowed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_example() {
        let chain = Chain::parse(
            r#"
            [[task]]
            name = "fir64"
            effect = "pure"
            domains = ["linux", "mcu"]
            start = "linux"
            deadline_us = 1000
            rate_hz = 50
            [[task]]
            name = "log"
            domains = ["linux"]
            start = "linux"
            "#,
        )
        .unwrap();
        assert_eq!(chain.task[0].effect, EffectClass::Pure);
        assert_eq!(
            chain.task[1].effect,
            EffectClass::Stateful,
            "default effect"
        );
        assert_eq!(chain.task[1].allowed(), [true, false]);
    }

    #[test]
    fn errors_name_the_task_and_field() {
        let err = Chain::parse("[[task]]\nname = \"a\"\ndomains = [\"linux\"]\nstart = \"mcu\"\n")
            .unwrap_err();
        assert!(format!("{err:#}").contains("field `start`"), "{err:#}");
        let err = Chain::parse("[[task]]\nname = \"a\"\ndomains = [\"gpu\"]\nstart = \"linux\"\n")
            .unwrap_err();
        assert!(format!("{err:#}").contains("gpu"), "{err:#}");
        let err = Chain::parse(
            "[[task]]\nname = \"a\"\ndomains = [\"linux\"]\nstart = \"linux\"\nrate = 3\n",
        )
        .unwrap_err();
        assert!(format!("{err:#}").contains("rate"), "{err:#}");
    }
}
