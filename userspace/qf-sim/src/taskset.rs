//! Task-set files: the TOML format of `qf sim` (see the crate docs), parsed with spans so
//! every error names the file, line, field and the rule broken, then converted to
//! nanoseconds for the simulator.

use std::fmt;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

/// Largest number of tasks one set may hold (the simulator's scheduler pool size).
pub const MAX_TASKS: usize = 64;

/// A validated task set, all times in nanoseconds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskSet {
    /// Length of the set's time unit in nanoseconds (`unit = "1ms"` → 1 000 000).
    pub unit_ns: u64,
    /// The unit as written (for reports).
    pub unit_name: String,
    /// Kernel tick rate; timers fire on its ticks.
    pub tick_hz: u64,
    /// Simulated time span, from 0.
    pub horizon_ns: u64,
    /// Admission-control bound in parts per million of one CPU, if enabled.
    pub admission_bound_ppm: Option<u64>,
    /// The tasks, in file order (their thread ids are their indices).
    pub tasks: Vec<Task>,
}

/// One task of the set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Task {
    /// Unique name.
    pub name: String,
    /// Zephyr static priority (lower is more urgent); EDF orders threads of equal priority.
    pub priority: i32,
    /// What the task does.
    pub kind: TaskKind,
}

/// The two kinds of thread the paper's test cases use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TaskKind {
    /// A hard periodic EDF thread: `k_thread_period_set(period)`, then a loop of
    /// `k_thread_deadline_set(deadline)` and `wcet` of busy work.
    Periodic {
        /// Execution time of each job.
        wcet_ns: u64,
        /// Period.
        period_ns: u64,
        /// Relative deadline.
        deadline_ns: u64,
        /// First release.
        offset_ns: u64,
    },
    /// A thread with a private CBS serving a list of jobs (arrival, execution time).
    Cbs {
        /// Maximum budget Q.
        budget_ns: u64,
        /// Server period T (the relative deadline it passes to `deadline_set`).
        period_ns: u64,
        /// Jobs as (arrival, execution), arrivals non-decreasing.
        jobs: Vec<(u64, u64)>,
        /// Hard-reservation mode.
        hard_reservation: bool,
    },
}

/// A task-set file that could not be used: where, which field, and what rule it breaks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct TaskSetError {
    /// The file.
    pub file: PathBuf,
    /// 1-based line (0 when the file could not be read: shown as `cannot read FILE: rule`).
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// The field concerned (`task[2].budget`), or `(file)` / `(syntax)`.
    pub field: String,
    /// The rule broken, with the offending value.
    pub rule: String,
}

impl fmt::Display for TaskSetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            return write!(f, "cannot read {}: {}", self.file.display(), self.rule);
        }
        write!(
            f,
            "{}:{}:{}: {}: {}",
            self.file.display(),
            self.line,
            self.column,
            self.field,
            self.rule
        )
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTaskSet {
    unit: Option<Spanned<String>>,
    tick_hz: Option<Spanned<u64>>,
    horizon: Option<Spanned<u64>>,
    admission_bound: Option<Spanned<f64>>,
    #[serde(default)]
    task: Vec<Spanned<RawTask>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTask {
    name: Option<Spanned<String>>,
    kind: Option<Spanned<String>>,
    priority: Option<Spanned<i32>>,
    wcet: Option<Spanned<u64>>,
    period: Option<Spanned<u64>>,
    deadline: Option<Spanned<u64>>,
    offset: Option<Spanned<u64>>,
    budget: Option<Spanned<u64>>,
    jobs: Option<Spanned<Vec<Spanned<Vec<u64>>>>>,
    hard_reservation: Option<Spanned<bool>>,
}

/// Default unit and tick rate: the paper's 1 ms unit and 100 µs tick.
pub const DEFAULT_UNIT: &str = "1ms";
/// Default kernel tick rate (10 kHz, the paper's 100 µs tick).
pub const DEFAULT_TICK_HZ: u64 = 10_000;

struct Source<'a> {
    file: &'a Path,
    text: &'a str,
}

impl Source<'_> {
    fn error(&self, span: std::ops::Range<usize>, field: &str, rule: String) -> TaskSetError {
        let offset = span.start.min(self.text.len());
        let before = &self.text[..offset];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        TaskSetError {
            file: self.file.to_path_buf(),
            line,
            column,
            field: field.to_string(),
            rule,
        }
    }
}

/// Parses a duration like `1ms`, `100us`, `10 ms`, `1s`, `500ns`, or a bare unit (`ms` is
/// `1ms`), into nanoseconds.
pub fn parse_unit(text: &str) -> Option<u64> {
    let text = text.trim();
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let count: u64 = match &text[..digits] {
        "" => 1,
        number => number.parse().ok()?,
    };
    let scale = match text[digits..].trim() {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        _ => return None,
    };
    count.checked_mul(scale).filter(|&ns| ns > 0)
}

/// Largest task-set file read (a million CBS jobs take about 16 MiB).
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// Reads and validates a task-set file (at most [`MAX_FILE_BYTES`] are read).
pub fn load(path: &Path) -> Result<TaskSet, TaskSetError> {
    let unreadable = |rule: String| TaskSetError {
        file: path.to_path_buf(),
        line: 0,
        column: 0,
        field: "(file)".into(),
        rule,
    };
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| unreadable(e.to_string()))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(unreadable(format!(
            "larger than {} MiB, more than a task set needs",
            MAX_FILE_BYTES >> 20
        )));
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        unreadable(format!(
            "not UTF-8 text (byte {})",
            e.utf8_error().valid_up_to()
        ))
    })?;
    parse(path, &text)
}

/// Validates task-set `text` (named `file` in errors).
pub fn parse(file: &Path, text: &str) -> Result<TaskSet, TaskSetError> {
    let src = Source { file, text };
    let raw: RawTaskSet = toml::from_str(text).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        src.error(span, "(syntax)", e.message().to_string())
    })?;

    let (unit_name, unit_ns) = match &raw.unit {
        None => (DEFAULT_UNIT.to_string(), 1_000_000),
        Some(u) => match parse_unit(u.get_ref()) {
            Some(ns) => (u.get_ref().clone(), ns),
            None => {
                return Err(src.error(
                    u.span(),
                    "unit",
                    format!(
                        "must be ns, us, ms or s, optionally after a positive whole number \
                         (1ms, 100us; got {:?})",
                        u.get_ref()
                    ),
                ))
            }
        },
    };
    let tick_hz = match &raw.tick_hz {
        None => DEFAULT_TICK_HZ,
        Some(t) if (1..=1_000_000_000).contains(t.get_ref()) => *t.get_ref(),
        Some(t) => {
            return Err(src.error(
                t.span(),
                "tick_hz",
                format!("must be between 1 and 1000000000 (got {})", t.get_ref()),
            ))
        }
    };
    let to_ns = |value: &Spanned<u64>, field: &str| -> Result<u64, TaskSetError> {
        value.get_ref().checked_mul(unit_ns).ok_or_else(|| {
            src.error(
                value.span(),
                field,
                format!(
                    "{} {unit_name} does not fit in 64-bit nanoseconds",
                    value.get_ref()
                ),
            )
        })
    };
    let horizon_ns = match &raw.horizon {
        None => {
            return Err(src.error(
                0..0,
                "horizon",
                "is required (simulated length, in the set's unit)".into(),
            ))
        }
        Some(h) if *h.get_ref() == 0 => {
            return Err(src.error(h.span(), "horizon", "must be greater than 0 (got 0)".into()))
        }
        Some(h) => to_ns(h, "horizon")?,
    };
    let admission_bound_ppm = match &raw.admission_bound {
        None => None,
        Some(b) if b.get_ref().is_finite() && *b.get_ref() > 0.0 && *b.get_ref() <= 1000.0 => {
            Some((b.get_ref() * 1e6).round() as u64)
        }
        Some(b) => {
            return Err(src.error(
                b.span(),
                "admission_bound",
                format!(
                    "must be a utilisation above 0 (1.0 = one CPU), got {}",
                    b.get_ref()
                ),
            ))
        }
    };
    if raw.task.is_empty() {
        return Err(src.error(0..0, "task", "at least one [[task]] is required".into()));
    }
    if raw.task.len() > MAX_TASKS {
        return Err(src.error(
            raw.task[MAX_TASKS].span(),
            "task",
            format!(
                "at most {MAX_TASKS} tasks are supported (got {})",
                raw.task.len()
            ),
        ));
    }

    let mut tasks: Vec<Task> = Vec::with_capacity(raw.task.len());
    for (index, spanned) in raw.task.iter().enumerate() {
        let task = spanned.get_ref();
        let field = |name: &str| format!("task[{index}].{name}");
        let missing = |name: &str, why: &str| {
            src.error(spanned.span(), &field(name), format!("is required {why}"))
        };
        let positive =
            |value: &Option<Spanned<u64>>, name: &str, why: &str| -> Result<u64, TaskSetError> {
                match value {
                    None => Err(missing(name, why)),
                    Some(v) if *v.get_ref() == 0 => Err(src.error(
                        v.span(),
                        &field(name),
                        "must be greater than 0 (got 0)".into(),
                    )),
                    Some(v) => to_ns(v, &field(name)),
                }
            };
        let name = match &task.name {
            None => return Err(missing("name", "(a unique task name)")),
            Some(n) if n.get_ref().trim().is_empty() || n.get_ref().contains([',', '\n', '"']) => {
                return Err(src.error(
                    n.span(),
                    &field("name"),
                    format!(
                        "must be non-empty without commas, quotes or newlines (got {:?})",
                        n.get_ref()
                    ),
                ))
            }
            Some(n) if tasks.iter().any(|t| &t.name == n.get_ref()) => {
                return Err(src.error(
                    n.span(),
                    &field("name"),
                    format!(
                        "must be unique ({:?} is used by an earlier task)",
                        n.get_ref()
                    ),
                ))
            }
            Some(n) => n.get_ref().clone(),
        };
        let priority = task.priority.as_ref().map_or(0, |p| *p.get_ref());
        let forbid =
            |present: bool, span: Option<std::ops::Range<usize>>, name: &str, kind: &str| {
                if present {
                    Err(src.error(
                        span.unwrap_or(spanned.span()),
                        &field(name),
                        format!("does not apply to kind = \"{kind}\""),
                    ))
                } else {
                    Ok(())
                }
            };
        let kind = match task.kind.as_ref().map(|k| (k.get_ref().as_str(), k.span())) {
            None => return Err(missing("kind", "(\"periodic\" or \"cbs\")")),
            Some(("periodic", _)) => {
                forbid(
                    task.budget.is_some(),
                    task.budget.as_ref().map(|v| v.span()),
                    "budget",
                    "periodic",
                )?;
                forbid(
                    task.jobs.is_some(),
                    task.jobs.as_ref().map(|v| v.span()),
                    "jobs",
                    "periodic",
                )?;
                forbid(
                    task.hard_reservation.is_some(),
                    task.hard_reservation.as_ref().map(|v| v.span()),
                    "hard_reservation",
                    "periodic",
                )?;
                let wcet_ns = positive(&task.wcet, "wcet", "for a periodic task")?;
                let period_ns = positive(&task.period, "period", "for a periodic task")?;
                let deadline_ns = match &task.deadline {
                    None => period_ns,
                    Some(_) => positive(&task.deadline, "deadline", "")?,
                };
                let offset_ns = match &task.offset {
                    None => 0,
                    Some(o) => to_ns(o, &field("offset"))?,
                };
                TaskKind::Periodic {
                    wcet_ns,
                    period_ns,
                    deadline_ns,
                    offset_ns,
                }
            }
            Some(("cbs", _)) => {
                forbid(
                    task.wcet.is_some(),
                    task.wcet.as_ref().map(|v| v.span()),
                    "wcet",
                    "cbs",
                )?;
                forbid(
                    task.deadline.is_some(),
                    task.deadline.as_ref().map(|v| v.span()),
                    "deadline",
                    "cbs",
                )?;
                forbid(
                    task.offset.is_some(),
                    task.offset.as_ref().map(|v| v.span()),
                    "offset",
                    "cbs",
                )?;
                let budget_ns = positive(&task.budget, "budget", "for a cbs task")?;
                let period_ns = positive(&task.period, "period", "for a cbs task")?;
                let Some(jobs_spanned) = &task.jobs else {
                    return Err(missing(
                        "jobs",
                        "for a cbs task: [[arrival, execution], ...]",
                    ));
                };
                let mut jobs = Vec::with_capacity(jobs_spanned.get_ref().len());
                for (j, job) in jobs_spanned.get_ref().iter().enumerate() {
                    let jfield = field(&format!("jobs[{j}]"));
                    let &[arrival, execution] = job.get_ref().as_slice() else {
                        return Err(src.error(
                            job.span(),
                            &jfield,
                            format!(
                                "must be [arrival, execution] (got {} numbers)",
                                job.get_ref().len()
                            ),
                        ));
                    };
                    if execution == 0 {
                        return Err(src.error(
                            job.span(),
                            &jfield,
                            "execution must be greater than 0".into(),
                        ));
                    }
                    if let Some(&(previous, _)) = jobs.last() {
                        if arrival.checked_mul(unit_ns).is_some_and(|a| a < previous) {
                            return Err(src.error(
                                job.span(),
                                &jfield,
                                format!("arrivals must not decrease (arrival {arrival} comes after a later one)"),
                            ));
                        }
                    }
                    let fits = |v: u64| v.checked_mul(unit_ns);
                    match (fits(arrival), fits(execution)) {
                        (Some(a), Some(e)) => jobs.push((a, e)),
                        _ => {
                            return Err(src.error(
                                job.span(),
                                &jfield,
                                format!("[{arrival}, {execution}] {unit_name} does not fit in 64-bit nanoseconds"),
                            ))
                        }
                    }
                }
                if jobs.is_empty() {
                    return Err(src.error(
                        jobs_spanned.span(),
                        &field("jobs"),
                        "must list at least one job".into(),
                    ));
                }
                TaskKind::Cbs {
                    budget_ns,
                    period_ns,
                    jobs,
                    hard_reservation: task.hard_reservation.as_ref().is_some_and(|h| *h.get_ref()),
                }
            }
            Some((other, span)) => {
                return Err(src.error(
                    span,
                    &field("kind"),
                    format!("must be \"periodic\" or \"cbs\" (got {other:?})"),
                ))
            }
        };
        tasks.push(Task {
            name,
            priority,
            kind,
        });
    }
    Ok(TaskSet {
        unit_ns,
        unit_name,
        tick_hz,
        horizon_ns,
        admission_bound_ppm,
        tasks,
    })
}
