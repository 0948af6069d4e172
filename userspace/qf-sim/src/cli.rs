//! `qf sim`: its clap arguments and what running it does (the `qf` binary only dispatches).
//!
//! The schedule and event CSV files are written as the simulation runs, so memory stays bounded
//! by the task set whatever the horizon; the Gantt chart and the golden C header are drawn from
//! a trace kept in memory, bounded by what those outputs can hold. A run whose estimated
//! simulator events exceed `--max-events` is refused before it starts.

use std::fs::File;
use std::io::{BufWriter, IsTerminal as _, Write};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context as _};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use crate::clock::Clock;
use crate::engine::{simulate, simulate_into, Options, Outcome, Slice, Trace, TraceEvent};
use crate::output::{csv, gantt, golden_c, summary};
use crate::taskset::{self, TaskKind, TaskSet};

/// Default of `--max-events`: about a minute and a half of simulation at 10 M events/s.
pub const DEFAULT_MAX_EVENTS: u64 = 1_000_000_000;

/// Most slices, and most events, a Gantt chart is drawn with (beyond that it is unreadable and
/// its SVG would take hundreds of MB).
pub const GANTT_MAX_ROWS: usize = 1_000_000;

/// Estimated simulator events per job (a release, a wake-up and two context switches; the
/// paper's test cases and a 60-task EDF set take 3 to 5).
pub const EVENTS_PER_JOB: u64 = 4;

/// Estimated runs shorter than this many events show no progress bar.
const PROGRESS_MIN_EVENTS: u64 = 20_000_000;

/// Simulate a task set under periodic EDF + per-thread CBS (the code the Zephyr module runs).
#[derive(Args, Debug, Clone)]
pub struct SimArgs {
    /// Task-set file (TOML; see examples/).
    pub taskset: PathBuf,
    /// Write the schedule (start,end,task per execution slice) to this CSV file.
    #[arg(long, value_name = "S.csv")]
    pub schedule: Option<PathBuf>,
    /// Write the scheduler's event trace (time,task,event,budget,deadline) to this CSV file.
    #[arg(long, value_name = "E.csv")]
    pub events: Option<PathBuf>,
    /// Draw the Gantt chart (lanes, releases, deadlines, CBS budget) to this SVG file (at most
    /// 1000000 slices and events).
    #[arg(long, value_name = "G.svg")]
    pub gantt: Option<PathBuf>,
    /// Write the task set and its schedule as a C header (the Zephyr paper-case suite's golden
    /// data; at most 65535 slices and events); the C object is named after the file
    /// (golden_tc1.h → golden_tc1).
    #[arg(long, value_name = "H.h")]
    pub golden_c: Option<PathBuf>,
    /// Print the summary as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Refuse a task set whose run is estimated at more simulator events than this (about 4
    /// per job released before the horizon); raise it to run longer horizons.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_EVENTS)]
    pub max_events: u64,
}

/// A simulated task set with the clock its outputs are expressed in.
pub struct Simulated {
    /// The task set.
    pub set: TaskSet,
    /// Its time bases.
    pub clock: Clock,
    /// What the simulation produced.
    pub outcome: Outcome,
}

fn clock_of(set: &TaskSet) -> Clock {
    Clock {
        tick_hz: set.tick_hz,
        unit_ns: set.unit_ns,
        origin_ticks: 0,
    }
}

/// Loads and simulates `path`, keeping the whole trace (tests and small task sets).
pub fn simulate_file(path: &Path) -> Result<Simulated, taskset::TaskSetError> {
    let set = taskset::load(path)?;
    let clock = clock_of(&set);
    let outcome = simulate(&set, Options::default());
    Ok(Simulated {
        set,
        clock,
        outcome,
    })
}

/// An estimate of the simulator events a run of `set` takes: [`EVENTS_PER_JOB`] per job
/// released before the horizon, a CBS job counting once per budget it uses up.
pub fn estimated_events(set: &TaskSet) -> u64 {
    let horizon = u128::from(set.horizon_ns);
    let tick_ns = (1_000_000_000 / u128::from(set.tick_hz)).max(1);
    let jobs: u128 = set
        .tasks
        .iter()
        .map(|task| match &task.kind {
            TaskKind::Periodic {
                period_ns,
                offset_ns,
                ..
            } => horizon
                .saturating_sub(u128::from(*offset_ns))
                .div_ceil(u128::from(*period_ns).max(tick_ns)),
            TaskKind::Cbs {
                budget_ns, jobs, ..
            } => jobs
                .iter()
                .take_while(|(arrival, _)| u128::from(*arrival) < horizon)
                .map(|(_, work)| {
                    1 + u128::from(*work)
                        .min(horizon)
                        .div_ceil(u128::from(*budget_ns).max(tick_ns))
                })
                .sum(),
        })
        .sum();
    u64::try_from(jobs.saturating_mul(u128::from(EVENTS_PER_JOB))).unwrap_or(u64::MAX)
}

/// A CSV file written row by row.
struct CsvFile {
    path: PathBuf,
    what: &'static str,
    out: BufWriter<File>,
}

impl CsvFile {
    fn create(path: &Path, what: &'static str, header: &str) -> anyhow::Result<CsvFile> {
        let file = create(path, what)?;
        let mut out = BufWriter::with_capacity(1 << 16, file);
        out.write_all(header.as_bytes())
            .with_context(|| format!("cannot write the {what} to {}", path.display()))?;
        Ok(CsvFile {
            path: path.to_path_buf(),
            what,
            out,
        })
    }

    fn failed(&self, error: std::io::Error) -> anyhow::Error {
        anyhow!(error).context(format!(
            "cannot write the {} to {}",
            self.what,
            self.path.display()
        ))
    }
}

fn create(path: &Path, what: &str) -> anyhow::Result<File> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create directory {} for the {what}", dir.display()))?;
    }
    File::create(path).with_context(|| format!("cannot write the {what} to {}", path.display()))
}

fn write(path: &Path, what: &str, text: &str) -> anyhow::Result<()> {
    let mut file = create(path, what)?;
    file.write_all(text.as_bytes())
        .with_context(|| format!("cannot write the {what} to {}", path.display()))
}

/// A progress bar over simulated time, on a terminal only.
struct Progress {
    bar: Option<ProgressBar>,
    unit_ns: u64,
}

impl Progress {
    fn new(set: &TaskSet, estimated_events: u64) -> Progress {
        let show = estimated_events >= PROGRESS_MIN_EVENTS && std::io::stderr().is_terminal();
        let bar = show.then(|| {
            let bar = ProgressBar::new(set.horizon_ns / set.unit_ns);
            bar.set_style(
                ProgressStyle::with_template(&format!(
                    "{{bar:40}} {{pos}}/{{len}} x {} simulated, {{elapsed}} (ETA {{eta}})",
                    set.unit_name
                ))
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar
        });
        Progress {
            bar,
            unit_ns: set.unit_ns,
        }
    }

    fn at(&self, now_ns: u64) {
        if let Some(bar) = &self.bar {
            bar.set_position(now_ns / self.unit_ns);
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// Only the statistics, with progress.
struct Quiet(Progress);

impl Trace for Quiet {
    const RECORDS: bool = false;
    fn progress(&mut self, now_ns: u64) -> bool {
        self.0.at(now_ns);
        false
    }
}

/// The requested outputs, fed as the simulation runs.
struct Outputs<'a> {
    set: &'a TaskSet,
    clock: Clock,
    schedule: Option<CsvFile>,
    events: Option<CsvFile>,
    /// The trace kept for the Gantt chart and the golden header, and the flag and limit of
    /// the smallest of them.
    kept: Option<(Outcome, &'static str, &'a Path, usize)>,
    progress: Progress,
    /// The first error; the simulation stops at its next progress call.
    error: Option<anyhow::Error>,
}

impl Outputs<'_> {
    /// One row: written to its CSV file (if requested) and kept for the chart and header (if
    /// requested); nothing more after the first error.
    fn record(
        &mut self,
        file: fn(&mut Self) -> &mut Option<CsvFile>,
        write: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
        push: impl FnOnce(&mut Outcome) -> usize,
        rows: &str,
    ) {
        if self.error.is_some() {
            return;
        }
        let failed = file(self)
            .as_mut()
            .and_then(|f| write(&mut f.out).err().map(|e| f.failed(e)));
        if failed.is_some() {
            self.error = failed;
            return;
        }
        self.keep(push, rows);
    }

    fn keep(&mut self, push: impl FnOnce(&mut Outcome) -> usize, rows: &str) {
        if let Some((outcome, flag, path, limit)) = &mut self.kept {
            if push(outcome) > *limit && self.error.is_none() {
                self.error = Some(anyhow!(
                    "{flag} {}: the run has more than {limit} {rows}, more than this output \
                     holds; shorten the horizon",
                    path.display()
                ));
            }
        }
    }
}

impl Trace for Outputs<'_> {
    fn slice(&mut self, slice: Slice) {
        let (set, clock) = (self.set, self.clock);
        self.record(
            |o| &mut o.schedule,
            |out| csv::write_slice(out, set, &clock, &slice),
            |kept| {
                kept.slices.push(slice);
                kept.slices.len()
            },
            "slices",
        );
    }

    fn event(&mut self, event: TraceEvent) {
        let (set, clock) = (self.set, self.clock);
        self.record(
            |o| &mut o.events,
            |out| csv::write_event(out, set, &clock, &event),
            |kept| {
                kept.events.push(event);
                kept.events.len()
            },
            "events",
        );
    }

    fn progress(&mut self, now_ns: u64) -> bool {
        self.progress.at(now_ns);
        self.error.is_some()
    }
}

/// The file a path leads to, to tell whether two paths name the same one: its device and
/// inode when it exists (so hard and symbolic links match), else its absolute path with every
/// existing directory and link on the way resolved and `.` and `..` applied to the rest (what
/// `create` makes of it).
#[derive(Debug, PartialEq, Eq)]
enum Place {
    Inode(u64, u64),
    Path(PathBuf),
}

/// Most symbolic links followed to a file that does not exist yet (Linux's own limit).
const MAX_LINKS: usize = 40;

fn place(path: &Path) -> Place {
    use std::os::unix::fs::MetadataExt as _;
    let mut path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    for _ in 0..MAX_LINKS {
        if let Ok(meta) = std::fs::metadata(&path) {
            return Place::Inode(meta.dev(), meta.ino());
        }
        // A dangling link: the file is created where it points.
        match std::fs::read_link(&path) {
            Ok(target) => {
                let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
                path = dir.join(target);
            }
            Err(_) => break,
        }
    }
    let parts: Vec<_> = path.components().collect();
    let (mut resolved, rest) = (0..=parts.len())
        .rev()
        .find_map(|n| {
            let prefix: PathBuf = parts[..n].iter().collect();
            let canonical = prefix.canonicalize().ok()?;
            Some((canonical, &parts[n..]))
        })
        .unwrap_or_else(|| (PathBuf::new(), &parts[..]));
    for part in rest {
        match part {
            std::path::Component::ParentDir => {
                resolved.pop();
            }
            std::path::Component::CurDir => {}
            other => resolved.push(other),
        }
    }
    Place::Path(resolved)
}

/// Refuses outputs that would overwrite the task set or each other (a mixed or truncated
/// file), naming both.
fn check_outputs(args: &SimArgs) -> anyhow::Result<()> {
    let outputs: Vec<(&str, &Path, Place)> = [
        ("--schedule", args.schedule.as_deref()),
        ("--events", args.events.as_deref()),
        ("--gantt", args.gantt.as_deref()),
        ("--golden-c", args.golden_c.as_deref()),
    ]
    .into_iter()
    .filter_map(|(flag, path)| path.map(|p| (flag, p, place(p))))
    .collect();
    let input = place(&args.taskset);
    for (at, (flag, path, output)) in outputs.iter().enumerate() {
        if *output == input {
            bail!(
                "{flag} {} is the task set {}: it would be overwritten; choose another file",
                path.display(),
                args.taskset.display()
            );
        }
        if let Some((other, other_path, _)) = outputs[..at].iter().find(|(_, _, p)| p == output) {
            bail!(
                "{other} {} and {flag} {} are the same file: each output needs its own",
                other_path.display(),
                path.display()
            );
        }
    }
    Ok(())
}

/// Runs `qf sim`.
pub fn run(args: &SimArgs) -> anyhow::Result<()> {
    check_outputs(args)?;
    let set = taskset::load(&args.taskset)?;
    for note in taskset::rounded_to_ticks(&set) {
        // A warning that cannot be written (stderr closed) does not stop the run.
        let _ = writeln!(
            std::io::stderr(),
            "qf sim: warning: {}: {note}",
            args.taskset.display()
        );
    }
    let clock = clock_of(&set);
    let estimate = estimated_events(&set);
    if estimate > args.max_events {
        bail!(
            "{}: horizon {} x {} means about {estimate} simulator events, more than \
             --max-events {}; pass --max-events {estimate} (or more) to run it anyway",
            args.taskset.display(),
            set.horizon_ns / set.unit_ns,
            set.unit_name,
            args.max_events
        );
    }
    let golden_name = match &args.golden_c {
        None => None,
        Some(path) => {
            let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
            let name = golden_c::identifier(stem.as_deref().unwrap_or("golden"))
                .map_err(|why| anyhow!("--golden-c {}: {why}", path.display()))?;
            Some((path, name))
        }
    };
    let progress = Progress::new(&set, estimate);
    let traced = args.schedule.is_some()
        || args.events.is_some()
        || args.gantt.is_some()
        || args.golden_c.is_some();
    let mut kept = None;
    let (stats, sim_events, lost_events) = if traced {
        let limits = [
            (args.golden_c.as_deref(), "--golden-c", golden_c::MAX_ROWS),
            (args.gantt.as_deref(), "--gantt", GANTT_MAX_ROWS),
        ];
        let mut outputs = Outputs {
            set: &set,
            clock,
            schedule: match &args.schedule {
                Some(path) => Some(CsvFile::create(path, "schedule", csv::SCHEDULE_HEADER)?),
                None => None,
            },
            events: match &args.events {
                Some(path) => Some(CsvFile::create(path, "event trace", csv::EVENTS_HEADER)?),
                None => None,
            },
            kept: limits
                .into_iter()
                .find_map(|(path, flag, limit)| Some((Outcome::default(), flag, path?, limit))),
            progress,
            error: None,
        };
        let result = simulate_into(&set, Options::default(), &mut outputs);
        if let Some(error) = outputs.error.take() {
            return Err(error);
        }
        for file in [outputs.schedule.take(), outputs.events.take()]
            .into_iter()
            .flatten()
        {
            let mut out = file.out;
            if let Err(e) = out.flush() {
                return Err(anyhow!(e).context(format!(
                    "cannot write the {} to {}",
                    file.what,
                    file.path.display()
                )));
            }
        }
        kept = outputs.kept.take().map(|(outcome, ..)| outcome);
        result
    } else {
        simulate_into(&set, Options::default(), &mut Quiet(progress))
    };
    let mut outcome = kept.unwrap_or_default();
    outcome.stats = stats;
    outcome.sim_events = sim_events;
    outcome.lost_events = lost_events;
    if let Some(path) = &args.gantt {
        let title = args.taskset.file_name().map_or_else(
            || args.taskset.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        write(
            path,
            "Gantt chart",
            &gantt::svg(&set, &clock, &outcome, &title),
        )?;
    }
    if let Some((path, name)) = golden_name {
        let source = args.taskset.display().to_string();
        write(
            path,
            "golden C header",
            &golden_c::header(&source, &name, &set, &clock, &outcome),
        )?;
    }
    let summary = summary::summarise(&set, &clock, &outcome);
    let mut stdout = std::io::stdout().lock();
    if args.json {
        writeln!(stdout, "{}", serde_json::to_string_pretty(&summary)?)?;
    } else {
        stdout.write_all(summary::text(&summary).as_bytes())?;
    }
    stdout.flush()?;
    Ok(())
}
