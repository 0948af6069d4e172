//! A task set as written in its TOML file (whole numbers in the set's unit), the form the
//! generator produces and the shrinker edits. [`SetSpec::validate`] runs it through `qf sim`'s
//! own parser, so a spec is only ever used as `qf sim` reads it.

use std::path::Path;

use serde::{Deserialize, Serialize};

use qf_sim::taskset::{self, TaskSet, TaskSetError};

/// A task set in `qf sim`'s TOML format (see `qf_sim`'s crate docs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetSpec {
    /// Time unit (`1ms`).
    pub unit: String,
    /// Kernel tick rate.
    pub tick_hz: u64,
    /// Simulated length, in units.
    pub horizon: u64,
    /// Admission-control bound (off when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission_bound: Option<f64>,
    /// The tasks.
    #[serde(default)]
    pub task: Vec<TaskSpec>,
}

/// One `[[task]]`: the fields of its kind are set, the others absent.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskSpec {
    /// Unique name.
    pub name: String,
    /// `periodic` or `cbs`.
    pub kind: String,
    /// Zephyr static priority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    /// Periodic: execution time of each job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wcet: Option<u64>,
    /// Period (periodic) or server period (cbs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period: Option<u64>,
    /// Periodic: relative deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<u64>,
    /// Periodic: first release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    /// CBS: budget Q.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<u64>,
    /// CBS: jobs as `[arrival, execution]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jobs: Option<Vec<[u64; 2]>>,
    /// CBS: hard-reservation mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hard_reservation: Option<bool>,
}

impl TaskSpec {
    /// True for a CBS task.
    pub fn is_cbs(&self) -> bool {
        self.kind == "cbs"
    }

    /// The bandwidth it asks for: `wcet / period` or `budget / period` (0 when incomplete).
    pub fn utilisation(&self) -> f64 {
        let work = if self.is_cbs() {
            self.budget
        } else {
            self.wcet
        };
        match (work, self.period) {
            (Some(c), Some(t)) if t > 0 => c as f64 / t as f64,
            _ => 0.0,
        }
    }
}

impl SetSpec {
    /// The set as TOML text `qf sim` reads.
    pub fn to_toml(&self) -> String {
        // Every field is a string, integer, float, bool or array of them: serialising cannot
        // fail, and if a future field made it fail the error is kept in the text, which
        // `validate` then refuses.
        toml::to_string(self).unwrap_or_else(|e| format!("# not serialisable: {e}\n"))
    }

    /// Reads a set from TOML text, first checked by `qf sim`'s parser (so errors name the file,
    /// line and field as `qf sim` would).
    pub fn from_toml(file: &Path, text: &str) -> Result<SetSpec, TaskSetError> {
        taskset::parse(file, text)?;
        toml::from_str(text).map_err(|e| TaskSetError {
            file: file.to_path_buf(),
            line: 0,
            column: 0,
            field: "(syntax)".into(),
            rule: e.message().to_string(),
        })
    }

    /// The set as `qf sim` parses it (an error if `qf sim` refuses it).
    pub fn validate(&self) -> Result<TaskSet, TaskSetError> {
        taskset::parse(Path::new("(generated)"), &self.to_toml())
    }

    /// Total bandwidth the tasks ask for.
    pub fn utilisation(&self) -> f64 {
        self.task.iter().map(TaskSpec::utilisation).sum()
    }
}
