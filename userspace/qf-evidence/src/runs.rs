//! A campaign repeated: how stable is each Eq. (1) verdict, and what did the host do meanwhile?
//!
//! On the virtual board the guest and the MCU share the host's cores with everything else, so
//! host load reaches both paths and a single run's verdict can be the host's, not the system's.
//! `scripts/viii-a --runs N` therefore writes `DIR/run-1 … DIR/run-N`, each a whole campaign,
//! and records the host's conditions around each one in `run-K/host/`:
//!
//! * `before/loadavg`, `after/loadavg`, `before/stat`, `after/stat`: verbatim copies of the
//!   host's `/proc/loadavg` and `/proc/stat` taken just before and after the run;
//! * `spinners`: how many CPU spinners the harness itself ran on the host during the run
//!   (`--host-load K`; 0 for a run without).
//!
//! `qf report DIR` then reports each run as usual (`run-K/report/`) and writes three tables of
//! its own to `DIR/report/`, regenerated from the runs' raw records alone:
//!
//! * `stability`: per host-load setting × load × caller × workload, each run's Eq. (1) verdict
//!   ([`crate::boundary::verdict`]), whether all runs agree (a cell missing from a run is not
//!   stable), and the range of each domain's p95 across the runs;
//! * `host`: per run, the host's load averages before and after, how busy its CPUs were and the
//!   share of CPU time stolen by a hypervisor (`steal`) during the run, and the run's verdicts;
//! * `host_load` (only when runs with and without `--host-load` are present): per cell, the
//!   verdict without and with the harness's host load, and whether it changes.

use crate::boundary::{boundary_cells, BoundaryCell};
use crate::stats::Bootstrap;
use crate::table::{ms, Table};
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One run of a repeated campaign.
#[derive(Debug, Clone)]
pub struct Run {
    /// K in `run-K`, from 1.
    pub index: u32,
    pub dir: PathBuf,
}

/// The runs under `dir` (`run-1`, `run-2`, …, in number order); empty when `dir` is a single
/// campaign. Only directories are runs (a file such as `run-serial.json` beside them is not);
/// a directory named `run-` with anything but a number, or gaps in the numbering, are errors: a
/// lost run would bias the stability count.
pub fn find_runs(dir: &Path) -> Result<Vec<Run>> {
    let mut runs = Vec::new();
    let entries = std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("listing {}", dir.display()))?;
        let name = entry.file_name();
        let Some(number) = name.to_str().and_then(|n| n.strip_prefix("run-")) else {
            continue;
        };
        if !entry.path().is_dir() {
            continue;
        }
        let index: u32 = match number.parse() {
            Ok(index) if index >= 1 => index,
            _ => bail!(
                "{}: a run directory is named run-K with K = 1, 2, …",
                entry.path().display()
            ),
        };
        runs.push(Run {
            index,
            dir: entry.path(),
        });
    }
    runs.sort_by_key(|run| run.index);
    for (expected, run) in (1..).zip(&runs) {
        if run.index != expected {
            bail!(
                "{}: runs are numbered from run-1 without gaps; run-{expected} is missing",
                dir.display()
            );
        }
    }
    Ok(runs)
}

/// The aggregate `cpu` line of `/proc/stat`, in clock ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuTimes {
    /// user + nice + system + idle + iowait + irq + softirq + steal (guest time is already in
    /// user and nice).
    pub total: u64,
    /// idle + iowait.
    pub idle: u64,
    pub steal: u64,
}

impl CpuTimes {
    /// Parses the `cpu ` line of a `/proc/stat` copy; `path` names the file in errors.
    pub fn parse(text: &str, path: &Path) -> Result<CpuTimes> {
        let line = text
            .lines()
            .find(|l| l.starts_with("cpu "))
            .with_context(|| format!("{}: no aggregate `cpu ` line", path.display()))?;
        let fields: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .take(8)
            .map(|f| {
                f.parse()
                    .with_context(|| format!("{}: cpu field '{f}' is not a count", path.display()))
            })
            .collect::<Result<_>>()?;
        if fields.len() < 8 {
            bail!(
                "{}: the cpu line has {} of its 8 fields (user … steal)",
                path.display(),
                fields.len()
            );
        }
        Ok(CpuTimes {
            total: fields.iter().sum(),
            idle: fields[3] + fields[4],
            steal: fields[7],
        })
    }
}

/// The three load averages of a `/proc/loadavg` copy.
pub fn parse_loadavg(text: &str, path: &Path) -> Result<[f64; 3]> {
    let fields: Vec<&str> = text.split_whitespace().take(3).collect();
    let mut averages = [0.0; 3];
    if fields.len() < 3 {
        bail!("{}: expected three load averages", path.display());
    }
    for (slot, field) in averages.iter_mut().zip(fields) {
        *slot = field
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v >= 0.0)
            .with_context(|| {
                format!("{}: load average '{field}' is not a number", path.display())
            })?;
    }
    Ok(averages)
}

/// The host around one run, from `run-K/host/`.
#[derive(Debug, Clone, PartialEq)]
pub struct HostConditions {
    /// CPU spinners the harness ran on the host during the run.
    pub spinners: u32,
    pub loadavg_before: [f64; 3],
    pub loadavg_after: [f64; 3],
    /// Share of the host's CPU time that was not idle during the run, %.
    pub busy_percent: f64,
    /// Share of the host's CPU time stolen by the hypervisor during the run, %.
    pub steal_percent: f64,
}

/// The largest file of `run/host/` read: 1 MiB (each holds a line or two).
pub const HOST_FILE_MAX_BYTES: u64 = 1 << 20;

impl HostConditions {
    /// Reads `run/host/`, regular files of at most [`HOST_FILE_MAX_BYTES`] each; every
    /// missing, special, oversized or malformed file is an error naming it.
    pub fn read(run: &Path, inputs: &mut Vec<PathBuf>) -> Result<HostConditions> {
        let host = run.join("host");
        let mut read = |name: &str| -> Result<(String, PathBuf)> {
            let path = host.join(name);
            let text =
                crate::files::read_regular_text(&path, HOST_FILE_MAX_BYTES).with_context(|| {
                    format!(
                        "reading {} (scripts/viii-a --runs records the host's conditions there)",
                        path.display()
                    )
                })?;
            inputs.push(path.clone());
            Ok((text, path))
        };
        let (text, path) = read("spinners")?;
        let spinners = text.trim().parse().with_context(|| {
            format!(
                "{}: '{}' is not a spinner count",
                path.display(),
                text.trim()
            )
        })?;
        let (text, path) = read("before/loadavg")?;
        let loadavg_before = parse_loadavg(&text, &path)?;
        let (text, path) = read("after/loadavg")?;
        let loadavg_after = parse_loadavg(&text, &path)?;
        let (text, path) = read("before/stat")?;
        let before = CpuTimes::parse(&text, &path)?;
        let (text, path) = read("after/stat")?;
        let after = CpuTimes::parse(&text, &path)?;
        let delta = |a: u64, b: u64| a.checked_sub(b);
        let (Some(total), Some(idle), Some(steal)) = (
            delta(after.total, before.total),
            delta(after.idle, before.idle),
            delta(after.steal, before.steal),
        ) else {
            bail!(
                "{}: CPU times went backwards between before/stat and after/stat (host rebooted?)",
                host.display()
            );
        };
        let percent = |part: u64| {
            if total == 0 {
                0.0
            } else {
                100.0 * part as f64 / total as f64
            }
        };
        Ok(HostConditions {
            spinners,
            loadavg_before,
            loadavg_after,
            busy_percent: percent(total - idle.min(total)),
            steal_percent: percent(steal),
        })
    }
}

/// One run's host conditions and Eq. (1) cells.
struct RunResult {
    index: u32,
    host: HostConditions,
    cells: Vec<BoundaryCell>,
}

type CellKey = (&'static str, &'static str, &'static str);

/// A cell's verdicts across the runs of one host-load setting.
struct Agreement {
    /// (run index, verdict), `None` for a run without the cell.
    verdicts: Vec<(u32, Option<&'static str>)>,
    linux_p95: Vec<f64>,
    mcu_p95: Vec<f64>,
}

impl Agreement {
    /// The verdict every run gave, `None` if they differ or a run lacks the cell.
    fn stable(&self) -> Option<&'static str> {
        let first = self.verdicts.first()?.1?;
        self.verdicts
            .iter()
            .all(|(_, v)| *v == Some(first))
            .then_some(first)
    }

    /// "MCU better (1, 3); not separable (2)".
    fn listed(&self) -> String {
        let mut by_verdict: Vec<(&str, Vec<String>)> = Vec::new();
        for (run, verdict) in &self.verdicts {
            let verdict = verdict.unwrap_or("missing");
            match by_verdict.iter_mut().find(|(v, _)| *v == verdict) {
                Some((_, runs)) => runs.push(run.to_string()),
                None => by_verdict.push((verdict, vec![run.to_string()])),
            }
        }
        by_verdict
            .iter()
            .map(|(verdict, runs)| format!("{verdict} ({})", runs.join(", ")))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

fn range(values: &[f64]) -> String {
    let low = values.iter().copied().fold(f64::INFINITY, f64::min);
    let high = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if values.is_empty() {
        "n/a".into()
    } else {
        format!("{}–{}", ms(low), ms(high))
    }
}

fn ratio_range(linux: &[f64], mcu: &[f64]) -> String {
    let ratios: Vec<f64> = linux.iter().zip(mcu).map(|(l, m)| m / l).collect();
    let low = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    let high = ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if ratios.is_empty() {
        "n/a".into()
    } else {
        format!("{low:.2}–{high:.2}")
    }
}

/// The tables of a repeated campaign ([module docs](self)), named as their files are.
pub fn run_tables(
    runs: &[Run],
    bootstrap: Bootstrap,
    inputs: &mut Vec<PathBuf>,
) -> Result<Vec<(&'static str, Table)>> {
    let mut results = Vec::new();
    for run in runs {
        results.push(RunResult {
            index: run.index,
            host: HostConditions::read(&run.dir, inputs)?,
            cells: boundary_cells(&run.dir.join("traces"), bootstrap, inputs)?,
        });
    }
    // Cells in table order (as the first run that has them lists them), per host-load setting.
    let mut order: Vec<CellKey> = Vec::new();
    for cell in results.iter().flat_map(|r| &r.cells) {
        let key = (cell.load, cell.caller, cell.workload);
        if !order.contains(&key) {
            order.push(key);
        }
    }
    let mut settings: Vec<u32> = results.iter().map(|r| r.host.spinners).collect();
    settings.sort_unstable();
    settings.dedup();
    let mut agreements: BTreeMap<(u32, CellKey), Agreement> = BTreeMap::new();
    for &spinners in &settings {
        for &key in &order {
            let mut agreement = Agreement {
                verdicts: Vec::new(),
                linux_p95: Vec::new(),
                mcu_p95: Vec::new(),
            };
            for result in results.iter().filter(|r| r.host.spinners == spinners) {
                let cell = result
                    .cells
                    .iter()
                    .find(|c| (c.load, c.caller, c.workload) == key);
                agreement
                    .verdicts
                    .push((result.index, cell.map(|c| c.verdict)));
                if let Some(cell) = cell {
                    agreement.linux_p95.push(cell.linux.value);
                    agreement.mcu_p95.push(cell.mcu.value);
                }
            }
            agreements.insert((spinners, key), agreement);
        }
    }

    let mut stability = Table::new(
        "Section VIII-A: Eq. (1) verdicts across runs (stable: every run gave the same verdict; p95 ranges across the runs, ms)",
        &[
            "host spinners",
            "load",
            "caller",
            "workload",
            "runs",
            "verdicts (runs)",
            "stable",
            "linux p95 range",
            "mcu p95 range",
            "mcu/linux range",
        ],
    );
    for &spinners in &settings {
        for &key in &order {
            let agreement = &agreements[&(spinners, key)];
            stability.rows.push(vec![
                spinners.to_string(),
                key.0.into(),
                key.1.into(),
                key.2.into(),
                agreement.verdicts.len().to_string(),
                agreement.listed(),
                agreement
                    .stable()
                    .map_or("no".into(), |v| format!("yes: {v}")),
                range(&agreement.linux_p95),
                range(&agreement.mcu_p95),
                ratio_range(&agreement.linux_p95, &agreement.mcu_p95),
            ]);
        }
    }

    let mut host = Table::new(
        "Section VIII-A: the host around each run (/proc/loadavg before and after; CPU busy and stolen during the run, % of all CPU time; the run's Eq. (1) verdicts)",
        &[
            "run",
            "host spinners",
            "loadavg before",
            "loadavg after",
            "busy %",
            "steal %",
            "MCU better",
            "Linux better",
            "not separable",
        ],
    );
    for result in &results {
        let count = |verdict: &str| {
            result
                .cells
                .iter()
                .filter(|c| c.verdict == verdict)
                .count()
                .to_string()
        };
        let averages = |a: [f64; 3]| format!("{:.2} {:.2} {:.2}", a[0], a[1], a[2]);
        host.rows.push(vec![
            result.index.to_string(),
            result.host.spinners.to_string(),
            averages(result.host.loadavg_before),
            averages(result.host.loadavg_after),
            format!("{:.1}", result.host.busy_percent),
            format!("{:.2}", result.host.steal_percent),
            count("MCU better"),
            count("Linux better"),
            count("not separable"),
        ]);
    }

    let mut tables = vec![("stability", stability), ("host", host)];
    if let (Some(&quiet), true) = (settings.first(), settings.len() > 1) {
        let mut host_load = Table::new(
            "Section VIII-A: Eq. (1) verdicts without and with CPU spinners on the host (a verdict only where every run of that setting agreed)",
            &[
                "load",
                "caller",
                "workload",
                "host spinners",
                "verdict without",
                "verdict with",
                "changes under host load",
            ],
        );
        for &loaded in &settings[1..] {
            for &key in &order {
                let without = agreements[&(quiet, key)].stable();
                let with = agreements[&(loaded, key)].stable();
                let changes = match (without, with) {
                    (Some(a), Some(b)) if a == b => "no",
                    (Some(_), Some(_)) => "yes: another verdict",
                    (Some(_), None) => "yes: no longer stable",
                    (None, Some(_)) => "unstable without host load",
                    (None, None) => "unstable either way",
                };
                let shown = |v: Option<&str>| v.unwrap_or("unstable").to_string();
                host_load.rows.push(vec![
                    key.0.into(),
                    key.1.into(),
                    key.2.into(),
                    format!("{quiet} → {loaded}"),
                    shown(without),
                    shown(with),
                    changes.into(),
                ]);
            }
        }
        tables.push(("host_load", host_load));
    }
    Ok(tables)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_files_parse_and_name_the_file_when_they_do_not() {
        let path = Path::new("run-1/host/before/stat");
        let stat = "cpu  10 1 5 80 4 0 0 3 0 0\ncpu0 5 0 2 40 2 0 0 1 0 0\nintr 1\n";
        assert_eq!(
            CpuTimes::parse(stat, path).unwrap(),
            CpuTimes {
                total: 103,
                idle: 84,
                steal: 3
            }
        );
        let error = CpuTimes::parse("cpu  1 2 3\n", path).unwrap_err();
        assert!(format!("{error:#}").contains("run-1/host/before/stat"));
        assert!(CpuTimes::parse("intr 1\n", path).is_err());
        assert!(CpuTimes::parse("cpu  1 2 x 4 5 6 7 8\n", path).is_err());
        assert_eq!(
            parse_loadavg("0.52 1.10 2.00 3/250 99\n", path).unwrap(),
            [0.52, 1.1, 2.0]
        );
        assert!(parse_loadavg("0.5 -1 2\n", path).is_err());
        assert!(parse_loadavg("0.5\n", path).is_err());
    }

    #[test]
    fn runs_are_numbered_without_gaps() {
        let dir = tempfile::tempdir().unwrap();
        assert!(find_runs(dir.path()).unwrap().is_empty());
        for run in ["run-1", "run-2", "run-3"] {
            std::fs::create_dir(dir.path().join(run)).unwrap();
        }
        let runs = find_runs(dir.path()).unwrap();
        assert_eq!(runs.iter().map(|r| r.index).collect::<Vec<_>>(), [1, 2, 3]);
        std::fs::remove_dir(dir.path().join("run-2")).unwrap();
        let error = find_runs(dir.path()).unwrap_err().to_string();
        assert!(error.contains("run-2 is missing"), "{error}");
        std::fs::create_dir(dir.path().join("run-2")).unwrap();
        std::fs::write(dir.path().join("run-serial.json"), "{}").unwrap();
        assert_eq!(find_runs(dir.path()).unwrap().len(), 3, "a file is no run");
        std::fs::create_dir(dir.path().join("run-x")).unwrap();
        assert!(find_runs(dir.path()).is_err());
    }
}
