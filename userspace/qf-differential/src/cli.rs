//! `qf differential`: its clap arguments and what each subcommand does (the `qf` binary only
//! dispatches).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use clap::{Args, Subcommand};

use crate::compare::{compare, read_log, read_log_file, Tick, Verdict};
use crate::generate::generate;
use crate::line::line_of;
use crate::run::simulate_csv;
use crate::shrink::shrink;
use crate::spec::SetSpec;

/// Differential testing against `qf sim`: generate task sets, compare event logs, shrink a
/// failing set.
#[derive(Args, Debug, Clone)]
pub struct DifferentialArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: DifferentialCommand,
}

/// The subcommands.
#[derive(Subcommand, Debug, Clone)]
pub enum DifferentialCommand {
    /// Write the random task sets of seeds S..S+N-1 as DIR/set-<seed>.toml.
    Generate {
        /// First seed.
        #[arg(long)]
        seed: u64,
        /// Number of sets.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
        count: u64,
        /// Directory to write them to (created if missing).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// Compare the simulator's event log with another run's; a mismatch is an error (exit status 1).
    Compare {
        /// The task set both ran (its tick defines `tick-boundary`).
        #[arg(long, value_name = "SET.toml")]
        set: PathBuf,
        /// `qf sim --events` output.
        #[arg(value_name = "SIM.csv")]
        sim: PathBuf,
        /// The other run's event log.
        #[arg(value_name = "RUN.csv")]
        run: PathBuf,
    },
    /// Print a set as the one line the Zephyr differential app reads (`zephyr-module/tests/differential`).
    Line {
        /// The task set.
        #[arg(value_name = "SET.toml")]
        set: PathBuf,
    },
    /// Shrink a set on which CMD's event log mismatches `qf sim`'s to a small one.
    Shrink {
        /// The failing set.
        #[arg(value_name = "SET.toml")]
        set: PathBuf,
        /// Write the smallest set here (default: standard output).
        #[arg(long, value_name = "MIN.toml")]
        out: Option<PathBuf>,
        /// Most candidate runs.
        #[arg(long, default_value_t = 2000)]
        max_tries: usize,
        /// Seconds one run of CMD may take before it is killed (and counts as not failing).
        #[arg(long, default_value_t = 60)]
        timeout: u64,
        /// The other run: `CMD ARGS... CANDIDATE.toml RUN.csv` writes its event log to RUN.csv.
        #[arg(long, required = true, num_args = 1.., allow_hyphen_values = true, value_name = "CMD")]
        against: Vec<String>,
    },
}

/// Runs `qf differential`.
pub fn run(args: &DifferentialArgs) -> anyhow::Result<()> {
    match &args.command {
        DifferentialCommand::Generate { seed, count, out } => run_generate(*seed, *count, out),
        DifferentialCommand::Compare { set, sim, run } => run_compare(set, sim, run),
        DifferentialCommand::Line { set } => run_line(set),
        DifferentialCommand::Shrink {
            set,
            out,
            max_tries,
            timeout,
            against,
        } => run_shrink(set, out.as_deref(), *max_tries, *timeout, against),
    }
}

fn run_generate(seed: u64, count: u64, out: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let mut stdout = std::io::stdout().lock();
    for offset in 0..count {
        let Some(seed) = seed.checked_add(offset) else {
            bail!("--seed {seed} + --count {count} passes the largest seed (2^64 - 1)");
        };
        let spec = generate(seed);
        let path = out.join(format!("set-{seed}.toml"));
        std::fs::write(&path, spec.to_toml())
            .with_context(|| format!("cannot write {}", path.display()))?;
        writeln!(
            stdout,
            "seed {seed}: {} ({} tasks, utilisation {:.3})",
            path.display(),
            spec.task.len(),
            spec.utilisation()
        )?;
    }
    Ok(())
}

/// Reads a set file: `qf sim`'s checks first (its errors, its size limit), then the spec.
fn load_spec(path: &Path) -> anyhow::Result<SetSpec> {
    // Read once (a set given as a pipe can be read only once), checked by qf sim, then the spec.
    let text = qf_sim::taskset::read_text(path)?;
    qf_sim::parse(path, &text)?;
    Ok(SetSpec::from_toml(path, &text)?)
}

fn run_compare(set: &Path, sim: &Path, run: &Path) -> anyhow::Result<()> {
    let parsed = qf_sim::load(set)?;
    let sim_rows = read_log_file(sim)?;
    let run_rows = read_log_file(run)?;
    let verdict = compare(&sim_rows, &run_rows, Tick::of(&parsed));
    let mut stdout = std::io::stdout().lock();
    match verdict {
        Verdict::Equal => writeln!(stdout, "equal: {} rows", sim_rows.len())?,
        Verdict::ByDesign { first, count } => writeln!(
            stdout,
            "equal but for {count} by-design difference(s); the first: {first}"
        )?,
        Verdict::Mismatch(divergence) => bail!(
            "{} and {} differ: {divergence}",
            sim.display(),
            run.display()
        ),
    }
    Ok(())
}

fn run_line(path: &Path) -> anyhow::Result<()> {
    let set = qf_sim::load(path)?;
    let line = line_of(&set).map_err(|why| anyhow::anyhow!("{}: {why}", path.display()))?;
    writeln!(std::io::stdout().lock(), "{line}")?;
    Ok(())
}

/// A line on standard error for the user; a closed standard error loses it rather than
/// stopping the search (`eprintln!` would panic).
fn note(message: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{message}");
}

/// Runs `against` on one candidate and compares its log with the simulator's; true on a
/// mismatch. A run that fails, times out or writes an unreadable log counts as not
/// mismatching (it is a different failure), and says so on standard error.
fn mismatches(
    against: &[String],
    timeout: Duration,
    dir: &Path,
    spec: &SetSpec,
    set: &qf_sim::TaskSet,
) -> anyhow::Result<bool> {
    let set_path = dir.join("candidate.toml");
    let log_path = dir.join("run.csv");
    std::fs::write(&set_path, spec.to_toml())
        .with_context(|| format!("cannot write {}", set_path.display()))?;
    let _ = std::fs::remove_file(&log_path);
    let mut child = Command::new(&against[0])
        .args(&against[1..])
        .arg(&set_path)
        .arg(&log_path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .with_context(|| format!("cannot run --against {:?}", against[0]))?;
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if started.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            note(&format!(
                "qf differential: {:?} took over {timeout:?}; killed",
                against[0]
            ));
            return Ok(false);
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    if !status.success() {
        note(&format!(
            "qf differential: {:?} exited with {status}",
            against[0]
        ));
        return Ok(false);
    }
    let run_rows = match read_log_file(&log_path) {
        Ok(rows) => rows,
        Err(e) => {
            note(&format!("qf differential: {e}"));
            return Ok(false);
        }
    };
    let sim = simulate_csv(set);
    let sim_rows = read_log("(qf sim)", sim.csv.as_bytes())?;
    Ok(compare(&sim_rows, &run_rows, Tick::of(set)).is_mismatch())
}

fn run_shrink(
    path: &Path,
    out: Option<&Path>,
    max_tries: usize,
    timeout: u64,
    against: &[String],
) -> anyhow::Result<()> {
    let spec = load_spec(path)?;
    let parsed = spec.validate()?;
    let dir = tempfile::tempdir().context("cannot create a temporary directory")?;
    let timeout = Duration::from_secs(timeout);
    if !mismatches(against, timeout, dir.path(), &spec, &parsed)? {
        bail!(
            "{}: {:?} does not mismatch qf sim on this set: nothing to shrink",
            path.display(),
            against[0]
        );
    }
    let mut failure = None;
    let shrunk = shrink(&spec, max_tries, |candidate, parsed| {
        match mismatches(against, timeout, dir.path(), candidate, parsed) {
            Ok(result) => result,
            Err(e) => {
                failure.get_or_insert(e);
                false
            }
        }
    });
    if let Some(e) = failure {
        return Err(e);
    }
    let text = shrunk.set.to_toml();
    match out {
        Some(out) => {
            std::fs::write(out, &text).with_context(|| format!("cannot write {}", out.display()))?
        }
        None => std::io::stdout().lock().write_all(text.as_bytes())?,
    }
    note(&format!(
        "qf differential: {} tasks after {} steps, {} runs{}",
        shrunk.set.task.len(),
        shrunk.steps,
        shrunk.tries,
        if shrunk.limited {
            " (--max-tries reached: not minimal)"
        } else {
            ""
        }
    ));
    Ok(())
}
