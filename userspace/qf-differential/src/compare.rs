//! Comparing two event logs (`time,task,event,budget,deadline`, as `qf sim --events` writes
//! them): equal row for row, or the first divergence with a named class. See the crate docs
//! for the classes and why each exists.

use std::fmt;
use std::io::Read;
use std::path::Path;

use qf_sim::TaskSet;

/// Header both logs must start with.
pub const HEADER: [&str; 5] = ["time", "task", "event", "budget", "deadline"];
/// Largest log read (bytes): a few hundred units of a small set take a few KiB.
pub const MAX_BYTES: u64 = 64 << 20;
/// Most rows a log may hold.
pub const MAX_ROWS: usize = 1_000_000;
/// Longest task or event name accepted.
pub const MAX_NAME: usize = 64;
/// Fractional digits `qf sim` writes at most (times are cut, not rounded, after them).
const MICRO: i128 = 1_000_000;

/// One row, its times in millionths of the set's unit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// 1-based line in its file.
    pub line: usize,
    /// Time.
    pub time: i128,
    /// Task name.
    pub task: String,
    /// Event name (`RELEASE`, `SWT_TO`, ...).
    pub event: String,
    /// Remaining budget after the event.
    pub budget: i128,
    /// Absolute deadline after the event.
    pub deadline: i128,
}

impl Row {
    /// The same event (every field but the line).
    pub fn same_as(&self, other: &Row) -> bool {
        (
            self.time,
            &self.task,
            &self.event,
            self.budget,
            self.deadline,
        ) == (
            other.time,
            &other.task,
            &other.event,
            other.budget,
            other.deadline,
        )
    }

    /// A context switch (`SWT_TO` or `SWT_AY`).
    pub fn is_switch(&self) -> bool {
        self.event == "SWT_TO" || self.event == "SWT_AY"
    }
}

impl fmt::Display for Row {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{},{},{},{},{}",
            micro_text(self.time),
            self.task,
            self.event,
            micro_text(self.budget),
            micro_text(self.deadline)
        )
    }
}

fn micro_text(value: i128) -> String {
    let sign = if value < 0 { "-" } else { "" };
    let (whole, frac) = (value.abs() / MICRO, value.abs() % MICRO);
    if frac == 0 {
        return format!("{sign}{whole}");
    }
    let digits = format!("{frac:06}");
    format!("{sign}{whole}.{}", digits.trim_end_matches('0'))
}

/// A log that could not be read: which file, line and field, and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {field}: {rule}")]
pub struct LogError {
    /// The file (as named by the caller).
    pub file: String,
    /// 1-based line (0: the file as a whole).
    pub line: usize,
    /// The column concerned, or `(file)`.
    pub field: String,
    /// What was wrong, with the offending value (cut when long).
    pub rule: String,
}

/// `value` for an error message: at most 40 characters, marked when cut.
fn shown(value: &str) -> String {
    if value.chars().count() <= 40 {
        return format!("{value:?}");
    }
    let cut: String = value.chars().take(40).collect();
    format!("{cut:?}... ({} bytes)", value.len())
}

/// Parses a decimal like `12`, `3.5` or `0.000001` (at most 6 fractional digits) into
/// millionths.
fn parse_micro(text: &str) -> Option<i128> {
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    let digits = |s: &str| !s.is_empty() && s.len() <= 20 && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || (text.contains('.') && (!digits(frac) || frac.len() > 6)) {
        return None;
    }
    let whole: i128 = whole.parse().ok()?;
    let frac_value: i128 = if frac.is_empty() {
        0
    } else {
        format!("{frac:0<6}").parse().ok()?
    };
    Some(whole * MICRO + frac_value)
}

/// Reads an event log from `input` (named `file` in errors): at most [`MAX_BYTES`] bytes and
/// [`MAX_ROWS`] rows, the exact header, five fields a row.
pub fn read_log(file: &str, input: impl Read) -> Result<Vec<Row>, LogError> {
    let error = |line: usize, field: &str, rule: String| LogError {
        file: file.to_string(),
        line,
        field: field.to_string(),
        rule,
    };
    let mut bytes = Vec::new();
    input
        .take(MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| error(0, "(file)", format!("cannot read: {e}")))?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(error(
            0,
            "(file)",
            format!("larger than {} MiB", MAX_BYTES >> 20),
        ));
    }
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(bytes.as_slice());
    let mut rows = Vec::new();
    let mut record = csv::StringRecord::new();
    let mut index = 0usize;
    loop {
        let line = index + 1;
        match reader.read_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => return Err(error(line, "(row)", format!("not CSV text: {e}"))),
        }
        index += 1;
        if record.len() != HEADER.len() {
            return Err(error(
                line,
                "(row)",
                format!("has {} fields, not 5 ({})", record.len(), HEADER.join(",")),
            ));
        }
        if line == 1 {
            if record.iter().ne(HEADER) {
                return Err(error(
                    1,
                    "(header)",
                    format!(
                        "must be {} (got {})",
                        HEADER.join(","),
                        shown(&record.iter().collect::<Vec<_>>().join(","))
                    ),
                ));
            }
            continue;
        }
        if rows.len() == MAX_ROWS {
            return Err(error(line, "(row)", format!("more than {MAX_ROWS} rows")));
        }
        let number = |column: usize| {
            parse_micro(&record[column]).ok_or_else(|| {
                error(
                    line,
                    HEADER[column],
                    format!(
                        "must be a non-negative decimal with at most 6 fractional digits (got {})",
                        shown(&record[column])
                    ),
                )
            })
        };
        let name = |column: usize| {
            let value = &record[column];
            if value.is_empty() || value.len() > MAX_NAME {
                Err(error(
                    line,
                    HEADER[column],
                    format!("must be 1 to {MAX_NAME} bytes (got {})", shown(value)),
                ))
            } else {
                Ok(value.to_string())
            }
        };
        rows.push(Row {
            line,
            time: number(0)?,
            task: name(1)?,
            event: name(2)?,
            budget: number(3)?,
            deadline: number(4)?,
        });
    }
    if index == 0 {
        return Err(error(
            0,
            "(header)",
            format!(
                "is missing: the file is empty (expected {})",
                HEADER.join(",")
            ),
        ));
    }
    Ok(rows)
}

/// Reads the event log at `path`.
pub fn read_log_file(path: &Path) -> Result<Vec<Row>, LogError> {
    let name = path.display().to_string();
    // A regular file only, refused by size before it is read (qf_input): opening a FIFO with no
    // writer blocked here.
    let file = qf_input::open_bounded(path, MAX_BYTES).map_err(|e| LogError {
        file: name.clone(),
        line: 0,
        field: "(file)".into(),
        rule: format!("cannot open: {e}"),
    })?;
    read_log(&name, file)
}

/// Why two logs differ at a row.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Class {
    /// The same event of the same task, its time one tick apart, budget and deadline at most
    /// one tick apart.
    TickBoundary,
    /// At one instant, the same rows in another order: the context switches (`SWT_TO`,
    /// `SWT_AY`) at the same rows, each task's own rows in the same order; only how different
    /// tasks' other rows interleave between the switches differs.
    SimultaneousOrder,
    /// Anything else, including one log ending before the other.
    Mismatch,
}

impl Class {
    /// The class's name in reports.
    pub const fn name(self) -> &'static str {
        match self {
            Class::TickBoundary => "tick-boundary",
            Class::SimultaneousOrder => "simultaneous-order",
            Class::Mismatch => "Mismatch",
        }
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where two logs differ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence {
    /// 0-based index of the row (header excluded) in both logs.
    pub index: usize,
    /// The simulator's row there (`None`: its log ended).
    pub sim: Option<Row>,
    /// The other run's row there (`None`: its log ended).
    pub run: Option<Row>,
    /// The class.
    pub class: Class,
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let side = |row: &Option<Row>| {
            row.as_ref().map_or("(log ended)".to_string(), |r| {
                format!("line {}: {r}", r.line)
            })
        };
        write!(
            f,
            "{} at row {}\n  sim: {}\n  run: {}",
            self.class,
            self.index,
            side(&self.sim),
            side(&self.run)
        )
    }
}

/// The result of a comparison.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Row for row equal.
    Equal,
    /// Every difference is of a by-design class: the first, and how many there are.
    ByDesign {
        /// The first by-design divergence.
        first: Divergence,
        /// Number of by-design divergences.
        count: usize,
    },
    /// A difference no by-design class explains (the first one; by-design ones before it are
    /// skipped over).
    Mismatch(Divergence),
}

impl Verdict {
    /// True when a [`Class::Mismatch`] was found.
    pub fn is_mismatch(&self) -> bool {
        matches!(self, Verdict::Mismatch(_))
    }
}

/// One tick in millionths of the set's unit, as the range a difference of "one tick" may take
/// in the logs (`qf sim` cuts times after 6 fractional digits, so one either side).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Tick {
    /// Smallest difference that is one tick.
    pub min: i128,
    /// Largest difference that is one tick.
    pub max: i128,
}

impl Tick {
    /// The tick of `set` (its `tick_hz` and `unit`).
    pub fn of(set: &TaskSet) -> Tick {
        // One tick in units = 1e9 / (tick_hz * unit_ns); in millionths, 1e15 / (...).
        let den = i128::from(set.tick_hz) * i128::from(set.unit_ns);
        let num = 1_000_000_000 * MICRO;
        let floor = num / den;
        let ceil = floor + i128::from(num % den != 0);
        Tick {
            min: (floor - 1).max(1),
            max: ceil + 1,
        }
    }

    fn within_one(self, a: i128, b: i128) -> bool {
        (a - b).abs() <= self.max
    }

    fn exactly_one(self, a: i128, b: i128) -> bool {
        (self.min..=self.max).contains(&(a - b).abs())
    }
}

/// Compares the simulator's log with another run's.
pub fn compare(sim: &[Row], run: &[Row], tick: Tick) -> Verdict {
    let mut first: Option<Divergence> = None;
    let mut count = 0usize;
    let mut i = 0usize;
    while i < sim.len().min(run.len()) {
        let (a, b) = (&sim[i], &run[i]);
        if a.same_as(b) {
            i += 1;
            continue;
        }
        let (class, rows) = if let Some(len) = reordered_instant(&sim[i..], &run[i..]) {
            (Class::SimultaneousOrder, len)
        } else if a.task == b.task
            && a.event == b.event
            && tick.exactly_one(a.time, b.time)
            && tick.within_one(a.budget, b.budget)
            && tick.within_one(a.deadline, b.deadline)
        {
            (Class::TickBoundary, 1)
        } else {
            (Class::Mismatch, 0)
        };
        let divergence = Divergence {
            index: i,
            sim: Some(a.clone()),
            run: Some(b.clone()),
            class,
        };
        if class == Class::Mismatch {
            return Verdict::Mismatch(divergence);
        }
        count += 1;
        first.get_or_insert(divergence);
        i += rows;
    }
    if sim.len() != run.len() {
        return Verdict::Mismatch(Divergence {
            index: i,
            sim: sim.get(i).cloned(),
            run: run.get(i).cloned(),
            class: Class::Mismatch,
        });
    }
    match first {
        None => Verdict::Equal,
        Some(first) => Verdict::ByDesign { first, count },
    }
}

/// If both logs start with rows at one instant that are the same rows in an order the rules
/// leave open (see [`Class::SimultaneousOrder`]), the number of those rows.
fn reordered_instant(sim: &[Row], run: &[Row]) -> Option<usize> {
    let time = sim.first()?.time;
    let len = sim.iter().take_while(|r| r.time == time).count();
    if run.iter().take_while(|r| r.time == time).count() != len {
        return None;
    }
    let (a, b) = (&sim[..len], &run[..len]);
    let key = |r: &Row| (r.task.clone(), r.event.clone(), r.budget, r.deadline);
    // The context switches where they were, the same switches.
    let switches_kept = a
        .iter()
        .zip(b)
        .all(|(x, y)| x.is_switch() == y.is_switch() && (!x.is_switch() || x.same_as(y)));
    // Each task's rows in the same order (with equal lengths, the same rows).
    let mut tasks: Vec<&String> = a.iter().map(|r| &r.task).collect();
    tasks.sort();
    tasks.dedup();
    let per_task = tasks.iter().all(|task| {
        let of = |rows: &[Row]| -> Vec<_> {
            rows.iter().filter(|r| &&r.task == task).map(key).collect()
        };
        of(a) == of(b)
    });
    let covered = b.iter().all(|r| tasks.contains(&&r.task));
    (switches_kept && per_task && covered).then_some(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(time: i128, task: &str, event: &str) -> Row {
        Row {
            line: 0,
            time,
            task: task.into(),
            event: event.into(),
            budget: 0,
            deadline: 0,
        }
    }

    /// An event log that is a FIFO nobody writes to blocked `File::open` for good; one over the
    /// size limit is refused before it is read.
    #[test]
    fn a_fifo_or_an_oversized_log_is_refused_at_once() {
        let dir = std::env::temp_dir().join(format!("qf-differential-logs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("run.csv");
        let _ = std::fs::remove_file(&fifo);
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let refused = qf_input::within({
            let fifo = fifo.clone();
            move || read_log_file(&fifo).unwrap_err()
        });
        assert!(refused.rule.contains("a FIFO"), "{refused:?}");
        let big = dir.join("big.csv");
        std::fs::File::create(&big)
            .unwrap()
            .set_len(MAX_BYTES + 1)
            .unwrap();
        let refused = read_log_file(&big).unwrap_err();
        assert!(refused.rule.contains("over the limit"), "{refused:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_tick_that_is_no_whole_number_of_millionths_allows_the_cut_digit() {
        // 300 Hz in 1 ms units: a tick is 3.333333... units, written cut at 6 digits.
        let set = qf_sim::parse(
            Path::new("t.toml"),
            "tick_hz = 300\nhorizon = 10\n[[task]]\nname = \"a\"\nkind = \"periodic\"\nwcet = 4\nperiod = 10\n",
        )
        .unwrap();
        let tick = Tick::of(&set);
        assert_eq!((tick.min, tick.max), (3_333_332, 3_333_335));
        assert!(tick.exactly_one(6_666_666, 3_333_333));
        assert!(!tick.exactly_one(6_666_666, 3_000_000));
    }

    #[test]
    fn a_longer_log_is_a_mismatch_where_the_shorter_ends() {
        let tick = Tick { min: 1, max: 1 };
        let sim = [row(0, "a", "RELEASE"), row(5, "a", "COMPLETE")];
        match compare(&sim, &sim[..1], tick) {
            Verdict::Mismatch(d) => assert_eq!((d.index, d.run), (1, None)),
            other => panic!("{other:?}"),
        }
        // A by-design difference before a mismatch does not hide it.
        let run = [row(1, "a", "RELEASE"), row(6, "a", "COMPLETE")];
        let late = [row(1, "a", "RELEASE"), row(9, "a", "COMPLETE")];
        assert!(matches!(
            compare(&sim, &run, tick),
            Verdict::ByDesign { count: 2, .. }
        ));
        assert!(matches!(compare(&sim, &late, tick), Verdict::Mismatch(d) if d.index == 1));
    }

    #[test]
    fn decimals_parse_exactly_or_not_at_all() {
        assert_eq!(parse_micro("12"), Some(12_000_000));
        assert_eq!(parse_micro("0.000001"), Some(1));
        assert_eq!(parse_micro("3.5"), Some(3_500_000));
        for bad in [
            "",
            ".5",
            "5.",
            "1e3",
            "+1",
            "1.0000001",
            "99999999999999999999999",
        ] {
            assert_eq!(parse_micro(bad), None, "{bad:?}");
        }
        assert_eq!(micro_text(3_500_000), "3.5");
    }
}
