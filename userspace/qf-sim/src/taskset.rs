//! Task-set files: the TOML format of `qf sim` (see the crate docs), parsed with spans so
//! every error names the file, line, field and the rule broken, then converted to
//! nanoseconds for the simulator.

use std::fmt;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use toml_parser::lexer::TokenKind;

use serde::Deserialize;
use toml::Spanned;

use crate::clock::{decimal, Clock};

const NS_PER_S: u128 = 1_000_000_000;

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

/// Largest number of CBS jobs one set may list (all tasks together). The TOML parser keeps
/// about 900 bytes per job while it reads them (three values with their spans and layout), so
/// this keeps a set under about 100 MB however it is written.
pub const MAX_JOBS: usize = 100_000;

/// Largest number of TOML keys, values, arrays and tables a task-set file may hold: three per
/// CBS job (the pair and its two numbers) and room for [`MAX_TASKS`] tasks' fields. Counted
/// before the file is parsed, so a file of many small values is refused before the parser
/// allocates for them.
pub const MAX_ITEMS: usize = 3 * MAX_JOBS + 4096;

/// Largest task-set file read: [`MAX_JOBS`] jobs of two 19-digit numbers (TOML's largest
/// integers), one a line, take 4.4 MB, so 8 MiB leaves room for comments and layout.
pub const MAX_FILE_BYTES: u64 = 8 << 20;

/// Longest a task set arriving through a pipe or FIFO (`qf sim <(generate)`) is waited for,
/// from the open to its end.
pub const MAX_PIPE_WAIT: Duration = Duration::from_secs(10);

/// Reads and validates a task-set file: a regular file of at most [`MAX_FILE_BYTES`], or a
/// pipe or FIFO read for at most [`MAX_PIPE_WAIT`] (opened without waiting for a writer, so a
/// FIFO nobody writes to is refused in time rather than blocking). Directories, devices and
/// sockets are refused.
pub fn load(path: &Path) -> Result<TaskSet, TaskSetError> {
    parse(path, &read_text(path)?)
}

/// The text of a task-set file, read as [`load`] reads it (bounded, never blocking in open), for
/// a caller that parses it further itself.
pub fn read_text(path: &Path) -> Result<String, TaskSetError> {
    let unreadable = |rule: String| TaskSetError {
        file: path.to_path_buf(),
        line: 0,
        column: 0,
        field: "(file)".into(),
        rule,
    };
    let bytes = read_bounded(path).map_err(unreadable)?;
    String::from_utf8(bytes).map_err(|e| {
        unreadable(format!(
            "not UTF-8 text (byte {})",
            e.utf8_error().valid_up_to()
        ))
    })
}

fn too_large() -> String {
    format!(
        "larger than {} MiB, the most a task set is read from ({MAX_TASKS} tasks, {MAX_JOBS} jobs)",
        MAX_FILE_BYTES >> 20
    )
}

/// The bytes of the file at `path`, bounded in size (and, for a pipe, in time), read with
/// [`qf_input`].
fn read_bounded(path: &Path) -> Result<Vec<u8>, String> {
    use std::os::unix::fs::FileTypeExt as _;
    // Opening a FIFO for reading does not wait for a writer.
    let file = qf_input::open(path).map_err(|e| e.to_string())?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    let kind = meta.file_type();
    let bytes = if kind.is_file() {
        if meta.len() > MAX_FILE_BYTES {
            return Err(format!("{} bytes: {}", meta.len(), too_large()));
        }
        qf_input::read_at_most(file, MAX_FILE_BYTES).map_err(|e| e.to_string())?
    } else if kind.is_fifo() {
        read_pipe(file)?
    } else {
        let what = qf_input::special_kind(&kind).unwrap_or("not a regular file");
        return Err(format!(
            "{what}: a task set is read from a regular file, a pipe or a FIFO"
        ));
    };
    bytes.ok_or_else(too_large)
}

/// Reads a non-blocking pipe to its end, at most [`MAX_FILE_BYTES`] (`None`: more), waiting
/// for data for at most [`MAX_PIPE_WAIT`] in all ([`qf_input::Deadline`]). Linux reports a
/// FIFO readable only once a writer has opened it: until then the wait goes on.
fn read_pipe(pipe: std::fs::File) -> Result<Option<Vec<u8>>, String> {
    let mut bytes = Vec::new();
    let read = qf_input::Deadline::new(pipe, MAX_PIPE_WAIT)
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes);
    match read {
        Ok(_) => Ok((bytes.len() as u64 <= MAX_FILE_BYTES).then_some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::TimedOut => Err(format!(
            "a pipe or FIFO that did not end within {} s (read {} bytes); write the task set \
             to a file",
            MAX_PIPE_WAIT.as_secs(),
            bytes.len()
        )),
        Err(e) => Err(e.to_string()),
    }
}

/// Counts what the file holds before the TOML parser allocates for it: the tasks (array-table
/// headers and inline tables, the only tables a task set has) and every key, value, array and
/// table. The first task past [`MAX_TASKS`] or item past [`MAX_ITEMS`] is refused at its line;
/// the lexer keeps no tokens, so this takes no memory beyond the text.
fn prescan(src: &Source<'_>) -> Result<(), TaskSetError> {
    let mut tasks = 0usize;
    let mut items = 0usize;
    // Brackets open in a value; a header is a `[` at the start of a line outside any value.
    let mut depth = 0usize;
    let mut line_start = true;
    let mut header = false;
    let mut previous_open = false;
    for token in toml_parser::Source::new(src.text).lex() {
        let span = token.span().start()..token.span().end();
        let mut counted = false;
        match token.kind() {
            TokenKind::Whitespace | TokenKind::Comment => continue,
            TokenKind::Newline => {
                line_start = depth == 0;
                header = false;
                previous_open = false;
                continue;
            }
            TokenKind::Eof => break,
            TokenKind::LeftSquareBracket if header => {
                // `[[`: an array-table header, a task (whatever its name: any other is an
                // error the parser reports).
                if previous_open {
                    tasks += 1;
                    counted = true;
                }
            }
            TokenKind::LeftSquareBracket if line_start && depth == 0 => {
                header = true;
                previous_open = true;
                line_start = false;
                continue;
            }
            TokenKind::LeftSquareBracket => {
                depth += 1;
                items += 1;
            }
            TokenKind::LeftCurlyBracket => {
                depth += 1;
                items += 1;
                tasks += 1;
                counted = true;
            }
            TokenKind::RightSquareBracket | TokenKind::RightCurlyBracket => {
                depth = depth.saturating_sub(1);
            }
            TokenKind::Atom
            | TokenKind::BasicString
            | TokenKind::LiteralString
            | TokenKind::MlBasicString
            | TokenKind::MlLiteralString => items += 1,
            TokenKind::Dot | TokenKind::Equals | TokenKind::Comma => {}
        }
        line_start = false;
        previous_open = false;
        if counted && tasks > MAX_TASKS {
            return Err(src.error(
                span,
                "task",
                format!("at most {MAX_TASKS} tasks are supported (this is task {tasks})"),
            ));
        }
        if items > MAX_ITEMS {
            return Err(src.error(
                span,
                "(file)",
                format!(
                    "more than {MAX_ITEMS} TOML keys and values, more than a task set holds \
                     ({MAX_TASKS} tasks, {MAX_JOBS} jobs)"
                ),
            ));
        }
    }
    Ok(())
}

/// Validates task-set `text` (named `file` in errors).
pub fn parse(file: &Path, text: &str) -> Result<TaskSet, TaskSetError> {
    let src = Source { file, text };
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(src.error(0..0, "(file)", too_large()));
    }
    prescan(&src)?;
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
    let mut jobs_listed = 0usize;
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
        // A period, deadline or budget of less than one tick cannot be kept by a tick-based
        // kernel: rounded up to a whole tick, it would change the task's utilisation by any
        // factor (a 50 us period at a 100 us tick halves it), so it is refused.
        let tick_or_more = |ns: u64, value: &Option<Spanned<u64>>, what: &str| {
            if u128::from(ns) * u128::from(tick_hz) >= NS_PER_S {
                return Ok(ns);
            }
            let written = value.as_ref().map_or(0, |v| *v.get_ref());
            let clock = Clock {
                tick_hz,
                unit_ns,
                origin_ticks: 0,
            };
            Err(src.error(
                value.as_ref().map_or(spanned.span(), |v| v.span()),
                &field(what),
                format!(
                    "task {name:?}: {what} {written} x {unit_name} is shorter than one kernel \
                     tick ({} x {unit_name} at tick_hz = {tick_hz}), and the kernel rounds it \
                     up to whole ticks; lengthen it or raise tick_hz",
                    clock.ticks_in_units(1)
                ),
            ))
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
                let period_ns = tick_or_more(period_ns, &task.period, "period")?;
                let deadline_ns = match &task.deadline {
                    None => period_ns,
                    Some(_) => tick_or_more(
                        positive(&task.deadline, "deadline", "")?,
                        &task.deadline,
                        "deadline",
                    )?,
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
                let budget_ns = tick_or_more(budget_ns, &task.budget, "budget")?;
                let period_ns = positive(&task.period, "period", "for a cbs task")?;
                let period_ns = tick_or_more(period_ns, &task.period, "period")?;
                let Some(jobs_spanned) = &task.jobs else {
                    return Err(missing(
                        "jobs",
                        "for a cbs task: [[arrival, execution], ...]",
                    ));
                };
                jobs_listed += jobs_spanned.get_ref().len();
                if jobs_listed > MAX_JOBS {
                    return Err(src.error(
                        jobs_spanned.span(),
                        &field("jobs"),
                        format!(
                            "task {name:?}: at most {MAX_JOBS} jobs in a set (all tasks \
                             together; this makes {jobs_listed})"
                        ),
                    ));
                }
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

/// The periods, deadlines and budgets of `set` that are not a whole number of kernel ticks:
/// the kernel (and so the simulation) rounds each up to the next tick, as Zephyr's `K_USEC` and
/// `K_MSEC` do, which lowers the task's utilisation or moves its deadline. One sentence per
/// value, naming the task, the value as written, the tick and what the rounding changes.
pub fn rounded_to_ticks(set: &TaskSet) -> Vec<String> {
    let clock = Clock {
        tick_hz: set.tick_hz,
        unit_ns: set.unit_ns,
        origin_ticks: 0,
    };
    let tick_hz = u128::from(set.tick_hz);
    let mut notes = Vec::new();
    for task in &set.tasks {
        let rounded = |what: &str, ns: u64| -> Option<String> {
            if clock.divides(ns) {
                return None;
            }
            let ticks = clock.duration_ticks(ns);
            Some(format!(
                "task {:?}: {what} {} x {unit} is {} ticks at tick_hz = {}; the kernel rounds it \
                 up to {ticks} ticks ({} x {unit})",
                task.name,
                clock.ns_in_units(ns),
                decimal(u128::from(ns) * tick_hz, NS_PER_S),
                set.tick_hz,
                clock.ticks_in_units(ticks),
                unit = set.unit_name,
            ))
        };
        let ticks = |ns: u64| u128::from(clock.duration_ticks(ns));
        match &task.kind {
            TaskKind::Periodic {
                wcet_ns,
                period_ns,
                deadline_ns,
                ..
            } => {
                if let Some(note) = rounded("period", *period_ns) {
                    notes.push(format!(
                        "{note}: its utilisation is {}, not {}",
                        decimal(u128::from(*wcet_ns) * tick_hz, ticks(*period_ns) * NS_PER_S),
                        decimal(u128::from(*wcet_ns), u128::from(*period_ns)),
                    ));
                }
                if deadline_ns != period_ns {
                    if let Some(note) = rounded("deadline", *deadline_ns) {
                        notes.push(format!("{note}: its deadline is that much later"));
                    }
                }
            }
            TaskKind::Cbs {
                budget_ns,
                period_ns,
                ..
            } => {
                let server = || {
                    format!(
                        ": its server's bandwidth is {}, not {}",
                        decimal(ticks(*budget_ns), ticks(*period_ns)),
                        decimal(u128::from(*budget_ns), u128::from(*period_ns)),
                    )
                };
                for (what, ns) in [("budget", *budget_ns), ("period", *period_ns)] {
                    if let Some(note) = rounded(what, ns) {
                        notes.push(note + &server());
                    }
                }
            }
        }
    }
    notes
}
