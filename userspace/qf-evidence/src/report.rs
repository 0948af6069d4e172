//! `qf report DIR`: regenerates every table (Markdown + CSV) and plot (SVG) of a campaign from its
//! raw records alone, and records the SHA-256 of every input.
//!
//! Campaign layout (what `qf profile` and `qf evaluate` write):
//! * `traces/<load>/<caller>/<workload>.<domain>.csv` — per-call traces → per-call p95 with
//!   block-bootstrap CIs (Table IV) and `per_call_p95.svg`;
//! * `profile/<load>/<caller>/observations.csv` — raw profile observations with compute time →
//!   the idle decomposition of Eq. 1 (Table V), and for MCU calls dispatched by `/dev/qfabricN`
//!   where their time went ([`crate::dispatch`]);
//! * `evaluate/cells.jsonl` — replay results → chain table (Table VI), ablation (Table VII) and
//!   `chain_p95.svg`;
//! * `evaluate/decision_cost.csv` — per-decision wall times → decision cost (RQ5);
//! * traces of both callers and `resident/<load>/<caller>/observations.csv` → Section VIII-A's
//!   Eq. (1) per call and the resident chain's delay ([`crate::boundary`]).
//!
//! Output goes to `DIR/report/`. Missing inputs leave their table out with a note, never a guess.

use crate::boundary::{boundary_table, resident_table};
use crate::dispatch::dispatch_table;
use crate::evaluate::{read_cells, CellResult};
use crate::runs::{find_runs, run_tables, Run};
use crate::stats::{percentile, Bootstrap};
use crate::synthetic::{CALLERS, LOADS, WORKLOADS};
use crate::table::{ms, Table};
use crate::traces::{trace_file_name, Trace};
use anyhow::{Context, Result};
use qf_decision::model::DomainId;
use sha2::{Digest, Sha256};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The largest input whose digest is taken: the largest any reader of the report accepts
/// ([`crate::evaluate::MAX_CELLS_BYTES`], over [`crate::traces::MAX_TRACE_BYTES`]).
pub const MAX_DIGEST_BYTES: u64 = crate::evaluate::MAX_CELLS_BYTES;

/// The largest `mcu.txt` read: 1 MiB (it holds a few lines).
pub const MCU_TEXT_MAX_BYTES: u64 = 1 << 20;

/// SHA-256 of a file, hex, streamed: a regular file of at most [`MAX_DIGEST_BYTES`].
pub fn sha256_file(path: &Path) -> Result<String> {
    let reading = || format!("reading {}", path.display());
    let mut file = crate::files::open_bounded(path, MAX_DIGEST_BYTES).with_context(reading)?;
    let mut digest = Sha256::new();
    std::io::copy(&mut file, &mut digest).with_context(reading)?;
    Ok(hex::encode(digest.finalize()))
}

/// Generates the report for campaign `dir`; returns the files written. A repeated campaign
/// (`run-1`, `run-2`, … under `dir`, [`crate::runs`]) gets each run's report and the tables
/// that compare the runs.
pub fn generate(dir: &Path, bootstrap: Bootstrap, progress: bool) -> Result<Vec<PathBuf>> {
    let runs = find_runs(dir)?;
    if !runs.is_empty() {
        return generate_runs(dir, &runs, bootstrap, progress);
    }
    let out = dir.join("report");
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let mut inputs: Vec<PathBuf> = Vec::new();
    let mut tables: Vec<(&str, Table)> = Vec::new();
    let mut notes = Vec::new();
    let mut written = Vec::new();

    let traces_root = dir.join("traces");
    let per_call = per_call_table(&traces_root, bootstrap, progress, &mut inputs)?;
    match per_call {
        Some((table, points)) => {
            tables.push(("per_call_p95", table));
            let svg = out.join("per_call_p95.svg");
            plot_per_call(&svg, &points)?;
            written.push(svg);
        }
        None => notes.push(format!(
            "no per-call traces under {}",
            traces_root.display()
        )),
    }

    match decomposition_table(&dir.join("profile"), &mut inputs)? {
        Some(table) => tables.push(("decomposition", table)),
        None => notes.push(
            "no profile observations (profile/idle/ordinary/observations.csv): no decomposition"
                .into(),
        ),
    }

    match boundary_table(&traces_root, bootstrap, &mut inputs)? {
        Some(table) => tables.push(("boundary", table)),
        None => notes.push("no load with both domains measured: no Eq. (1) table".into()),
    }
    match dispatch_table(&dir.join("profile"), &mut inputs)? {
        Some(table) => tables.push(("dispatch", table)),
        None => notes.push(
            "no kernel-dispatched MCU calls (qf profile --mcu-dev): no dispatch split table".into(),
        ),
    }
    match resident_table(&dir.join("resident"), bootstrap, &mut inputs)? {
        Some(table) => tables.push(("resident", table)),
        None => notes.push("no resident-chain observations (resident/): no resident table".into()),
    }

    let cells_path = dir.join("evaluate").join("cells.jsonl");
    if cells_path.exists() {
        inputs.push(cells_path.clone());
        let cells = read_cells(&cells_path)?;
        if cells.iter().any(|c| c.synthetic) {
            notes.push("chain results come from SYNTHETIC traces shaped after the paper's Table IV, not measurements".into());
        }
        tables.push(("chain", chain_table(&cells)));
        tables.push(("ablation", ablation_table(&cells)));
        let svg = out.join("chain_p95.svg");
        plot_chain(&svg, &cells)?;
        written.push(svg);
    } else {
        notes.push(format!(
            "no {}: no chain or ablation tables",
            cells_path.display()
        ));
    }

    let cost_path = dir.join("evaluate").join("decision_cost.csv");
    if cost_path.exists() {
        inputs.push(cost_path.clone());
        tables.push(("decision_cost", decision_cost_table(&cost_path, bootstrap)?));
    } else {
        notes.push(format!(
            "no {}: no decision-cost table",
            cost_path.display()
        ));
    }

    let mut index = String::from(
        "# QFabric campaign report\n\nGenerated by `qf report` from raw records only.\n",
    );
    index.push_str(&mcu_description(dir, &mut inputs)?);
    write_report(dir, index, bootstrap, &notes, &tables, inputs, &mut written)?;
    Ok(written)
}

/// The report of a repeated campaign: each run's own, then [`crate::runs`]' tables.
fn generate_runs(
    dir: &Path,
    runs: &[Run],
    bootstrap: Bootstrap,
    progress: bool,
) -> Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    let mut inputs = Vec::new();
    let mut index = format!(
        "# QFabric repeated campaign report\n\nGenerated by `qf report` from raw records only: \
         {} runs (run-1 … run-{}), each with its own report under run-K/report/.\n",
        runs.len(),
        runs.len()
    );
    for run in runs {
        written.extend(generate(&run.dir, bootstrap, progress)?);
    }
    index.push_str(&mcu_description(&runs[0].dir, &mut inputs)?);
    let tables = run_tables(runs, bootstrap, &mut inputs)?;
    write_report(dir, index, bootstrap, &[], &tables, inputs, &mut written)?;
    Ok(written)
}

/// What `DIR/mcu.txt` says about the MCU that answered (`scripts/viii-a` writes it: which MCU,
/// and how its time was kept), as a paragraph of the report's index; nothing without the file.
fn mcu_description(dir: &Path, inputs: &mut Vec<PathBuf>) -> Result<String> {
    let path = dir.join("mcu.txt");
    if !path.exists() {
        return Ok(String::new());
    }
    let text = crate::files::read_regular_text(&path, MCU_TEXT_MAX_BYTES)
        .with_context(|| format!("reading {}", path.display()))?;
    inputs.push(path);
    let mut paragraph = String::from("\nThe MCU that answered (mcu.txt):\n\n");
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let _ = writeln!(paragraph, "- {}", line.trim());
    }
    Ok(paragraph)
}

/// Writes every table (Markdown + CSV), the inputs' digests and the index to `dir/report/`.
fn write_report(
    dir: &Path,
    mut index: String,
    bootstrap: Bootstrap,
    notes: &[String],
    tables: &[(&str, Table)],
    mut inputs: Vec<PathBuf>,
    written: &mut Vec<PathBuf>,
) -> Result<()> {
    let out = dir.join("report");
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    index.push_str("\nPercentiles: linear interpolation between closest ranks (type 7); CIs: circular block bootstrap ");
    let _ = writeln!(
        index,
        "({} resamples, block {}, seed {}).\n",
        bootstrap.resamples(),
        bootstrap.block(),
        bootstrap.seed()
    );
    for note in notes {
        let _ = writeln!(index, "- Note: {note}");
    }
    for (name, table) in tables {
        let md = out.join(format!("{name}.md"));
        let csv_path = out.join(format!("{name}.csv"));
        std::fs::write(&md, table.markdown())
            .with_context(|| format!("writing {}", md.display()))?;
        std::fs::write(&csv_path, table.csv()?)
            .with_context(|| format!("writing {}", csv_path.display()))?;
        let _ = write!(index, "\n{}", table.markdown());
        written.extend([md, csv_path]);
    }
    let mut digests = String::new();
    inputs.sort();
    inputs.dedup();
    for input in &inputs {
        let relative = input.strip_prefix(dir).unwrap_or(input);
        let _ = writeln!(digests, "{}  {}", sha256_file(input)?, relative.display());
    }
    let digest_path = out.join("inputs.sha256");
    std::fs::write(&digest_path, &digests)
        .with_context(|| format!("writing {}", digest_path.display()))?;
    let _ = write!(index, "\n## Inputs (SHA-256)\n\n```\n{digests}```\n");
    let index_path = out.join("README.md");
    std::fs::write(&index_path, index)
        .with_context(|| format!("writing {}", index_path.display()))?;
    written.extend([digest_path, index_path]);
    Ok(())
}

/// (load, workload, domain, p95 µs) for the per-call plot.
type PerCallPoint = (usize, usize, DomainId, f64);

fn per_call_table(
    root: &Path,
    bootstrap: Bootstrap,
    progress: bool,
    inputs: &mut Vec<PathBuf>,
) -> Result<Option<(Table, Vec<PerCallPoint>)>> {
    let mut table = Table::new(
        "Per-call p95 latency (ms), ordinary callers, 95% block-bootstrap CIs",
        &[
            "load",
            "workload",
            "samples",
            "linux p95",
            "linux CI low",
            "linux CI high",
            "mcu p95",
            "mcu CI low",
            "mcu CI high",
        ],
    );
    let mut points = Vec::new();
    let bar = if progress {
        indicatif::ProgressBar::new((LOADS.len() * WORKLOADS.len()) as u64)
    } else {
        indicatif::ProgressBar::hidden()
    };
    for (load_index, load) in LOADS.iter().enumerate() {
        for (workload_index, workload) in WORKLOADS.iter().enumerate() {
            bar.inc(1);
            let dir = root.join(load).join(CALLERS[0]);
            let mut row = vec![load.to_string(), workload.to_string()];
            let mut cells = Vec::new();
            let mut samples = 0;
            for domain in DomainId::ALL {
                let path = dir.join(trace_file_name(workload, domain));
                if !path.exists() {
                    cells.extend(["n/a".to_string(), String::new(), String::new()]);
                    continue;
                }
                let trace = Trace::load(&path)?;
                inputs.push(path);
                samples = samples.max(trace.samples.len());
                match bootstrap.percentile_ci(&trace.latencies(), 0.95) {
                    Some(estimate) => {
                        points.push((load_index, workload_index, domain, estimate.value));
                        cells.extend([
                            ms(estimate.value),
                            ms(estimate.ci_low),
                            ms(estimate.ci_high),
                        ]);
                    }
                    None => cells.extend(["empty".to_string(), String::new(), String::new()]),
                }
            }
            if samples == 0 {
                continue;
            }
            row.push(samples.to_string());
            row.extend(cells);
            table.rows.push(row);
        }
    }
    bar.finish_and_clear();
    Ok((!table.rows.is_empty()).then_some((table, points)))
}

#[derive(serde::Deserialize)]
struct ProfileRow {
    task: String,
    domain: DomainId,
    latency_us: f64,
    compute_us: f64,
}

fn decomposition_table(profile_root: &Path, inputs: &mut Vec<PathBuf>) -> Result<Option<Table>> {
    let path = profile_root
        .join("idle")
        .join("ordinary")
        .join("observations.csv");
    if !path.exists() {
        return Ok(None);
    }
    inputs.push(path.clone());
    let mut reader =
        csv::Reader::from_path(&path).with_context(|| format!("opening {}", path.display()))?;
    let mut groups: std::collections::BTreeMap<(String, DomainId), (Vec<f64>, Vec<f64>)> =
        Default::default();
    for (index, row) in reader.deserialize::<ProfileRow>().enumerate() {
        let row = row.with_context(|| format!("{} line {}", path.display(), index + 2))?;
        let entry = groups.entry((row.task, row.domain)).or_default();
        entry.0.push(row.latency_us);
        // Endpoints that do not report compute (no trailer) leave it NaN: not a measurement.
        if row.compute_us.is_finite() {
            entry.1.push(row.compute_us);
        }
    }
    let mut table = Table::new(
        "Idle per-call decomposition (Eq. 1): residual = median latency − median compute",
        &[
            "task",
            "domain",
            "samples",
            "latency p50 (us)",
            "compute p50 (us)",
            "residual p50 (us)",
        ],
    );
    for ((task, domain), (latency, compute)) in groups {
        let latency_p50 = percentile(&latency, 0.5).unwrap_or(f64::NAN);
        let compute_p50 = percentile(&compute, 0.5);
        let shown = |value: Option<f64>| value.map_or("n/a".to_string(), |v| format!("{v:.2}"));
        table.rows.push(vec![
            task,
            domain.to_string(),
            latency.len().to_string(),
            format!("{latency_p50:.2}"),
            shown(compute_p50),
            shown(compute_p50.map(|c| latency_p50 - c)),
        ]);
    }
    Ok(Some(table))
}

fn chain_table(cells: &[CellResult]) -> Table {
    let mut table = Table::new(
        "Replayed four-node chain (p95 in ms, miss rate in %)",
        &[
            "load",
            "workload",
            "D_G (ms)",
            "policy",
            "caller",
            "observations",
            "p95",
            "miss %",
            "switches",
            "commits",
            "rollbacks",
            "open at end",
        ],
    );
    for cell in cells.iter().filter(|c| c.experiment == "grid") {
        let r = &cell.result;
        table.rows.push(vec![
            cell.load.clone(),
            cell.workload.clone(),
            ms(r.graph_deadline_us),
            cell.label.clone(),
            cell.caller.clone(),
            r.observations.to_string(),
            ms(r.p95_us),
            format!("{:.1}", 100.0 * r.miss_rate),
            r.switches.to_string(),
            r.commits.to_string(),
            r.rollbacks.to_string(),
            r.open_at_end.to_string(),
        ]);
    }
    table
}

fn ablation_table(cells: &[CellResult]) -> Table {
    let mut table = Table::new(
        "Hysteresis ablation: k = 1 against k = 3 (first switch window, p95 ms and miss % k=3 → k=1)",
        &["load", "workload", "caller", "k=1 first switch window", "p95 k=3", "p95 k=1", "miss % k=3", "miss % k=1", "k=1 outcome", "k=3 switches"],
    );
    let ablation: Vec<&CellResult> = cells
        .iter()
        .filter(|c| c.experiment == "ablation")
        .collect();
    for k1 in ablation.iter().filter(|c| c.result.hysteresis == 1) {
        let Some(k3) = ablation.iter().find(|c| {
            c.result.hysteresis == 3
                && c.workload == k1.workload
                && c.load == k1.load
                && c.caller == k1.caller
        }) else {
            continue;
        };
        let first_switch = k1
            .result
            .decisions
            .iter()
            .find(|d| d.action == qf_decision::controller::Action::Switch);
        let outcome = match (
            first_switch,
            k1.result.rollbacks,
            k1.result.commits,
            k1.result.open_at_end,
        ) {
            (None, ..) => "no switch".to_string(),
            (Some(_), rollbacks, commits, open) => {
                format!(
                    "{rollbacks} rolled back, {commits} committed{}",
                    if open { ", open at end" } else { "" }
                )
            }
        };
        table.rows.push(vec![
            k1.load.clone(),
            k1.workload.clone(),
            k1.caller.clone(),
            first_switch.map_or("-".into(), |d| d.window.to_string()),
            ms(k3.result.p95_us),
            ms(k1.result.p95_us),
            format!("{:.1}", 100.0 * k3.result.miss_rate),
            format!("{:.1}", 100.0 * k1.result.miss_rate),
            outcome,
            k3.result.switches.to_string(),
        ]);
    }
    table
}

fn decision_cost_table(path: &Path, bootstrap: Bootstrap) -> Result<Table> {
    let mut reader =
        csv::Reader::from_path(path).with_context(|| format!("opening {}", path.display()))?;
    let mut times = Vec::new();
    for (index, row) in reader.deserialize::<(f64,)>().enumerate() {
        times.push(
            row.with_context(|| format!("{} line {}", path.display(), index + 2))?
                .0,
        );
    }
    let mut table = Table::new(
        "Decision cost (wall time per decision, µs)",
        &[
            "decisions",
            "median",
            "p95",
            "p95 CI low",
            "p95 CI high",
            "paper p95",
        ],
    );
    if let Some(p95) = bootstrap.percentile_ci(&times, 0.95) {
        table.rows.push(vec![
            times.len().to_string(),
            format!("{:.3}", percentile(&times, 0.5).unwrap_or(f64::NAN) / 1e3),
            format!("{:.3}", p95.value / 1e3),
            format!("{:.3}", p95.ci_low / 1e3),
            format!("{:.3}", p95.ci_high / 1e3),
            "177.2".into(),
        ]);
    }
    Ok(table)
}

fn plot_error(error: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("plotting: {error}")
}

/// One plotted series in one load panel: x is the workload index, y in ms.
struct Series {
    label: String,
    color: plotters::style::RGBColor,
    points: Vec<(f64, f64)>,
    /// Joined by lines (chain policies) or drawn as dots (per-call domains).
    line: bool,
}

/// One panel per load, workloads on x, a shared log-scale y axis.
fn plot_by_load(path: &Path, caption: &str, y_desc: &str, panels: &[Vec<Series>]) -> Result<()> {
    use plotters::prelude::*;
    let values = || {
        panels
            .iter()
            .flatten()
            .flat_map(|s| s.points.iter().map(|p| p.1))
    };
    let max = values().fold(1.0, f64::max) * 2.0;
    let min = values().fold(max, f64::min).max(1e-3) / 2.0;
    let root = SVGBackend::new(path, (900, 420)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_error)?;
    let areas = root.split_evenly((1, panels.len()));
    for ((load, area), panel) in LOADS.iter().zip(&areas).zip(panels) {
        let mut chart = ChartBuilder::on(area)
            .caption(format!("{caption}, {load}"), ("sans-serif", 16))
            .margin(8)
            .x_label_area_size(30)
            .y_label_area_size(45)
            .build_cartesian_2d(
                -0.5f64..(WORKLOADS.len() as f64 - 0.5),
                (min..max).log_scale(),
            )
            .map_err(plot_error)?;
        chart
            .configure_mesh()
            .x_labels(WORKLOADS.len())
            .x_label_formatter(&|x| {
                WORKLOADS
                    .get(x.round() as usize)
                    .map_or(String::new(), |w| w.to_string())
            })
            .y_desc(y_desc)
            .draw()
            .map_err(plot_error)?;
        for series in panel {
            let color = series.color;
            let drawn = if series.line {
                chart.draw_series(LineSeries::new(series.points.clone(), color))
            } else {
                chart.draw_series(
                    series
                        .points
                        .iter()
                        .map(|&(x, y)| Circle::new((x, y), 4, color.filled())),
                )
            };
            drawn
                .map_err(plot_error)?
                .label(series.label.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 15, y)], color));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(plot_error)?;
    }
    root.present().map_err(plot_error)?;
    Ok(())
}

fn plot_per_call(path: &Path, points: &[PerCallPoint]) -> Result<()> {
    use plotters::style::{BLUE, RED};
    let panels: Vec<Vec<Series>> = (0..LOADS.len())
        .map(|load| {
            [(DomainId::Linux, BLUE), (DomainId::Mcu, RED)]
                .into_iter()
                .map(|(domain, color)| Series {
                    label: domain.as_str().into(),
                    color,
                    points: points
                        .iter()
                        .filter(|p| p.0 == load && p.2 == domain)
                        .map(|p| (p.1 as f64, p.3 / 1000.0))
                        .collect(),
                    line: false,
                })
                .collect()
        })
        .collect();
    plot_by_load(path, "per call", "p95 per call (ms)", &panels)
}

fn plot_chain(path: &Path, cells: &[CellResult]) -> Result<()> {
    use plotters::style::{BLACK, BLUE, CYAN, GREEN, RED};
    let labels = [
        "ordinary-linux",
        "tuned-linux",
        "mcu-first",
        "recovery",
        "oracle",
    ];
    let colors = [BLUE, CYAN, RED, GREEN, BLACK];
    let panels: Vec<Vec<Series>> = LOADS
        .iter()
        .map(|load| {
            labels
                .iter()
                .zip(colors)
                .map(|(label, color)| Series {
                    label: label.to_string(),
                    color,
                    points: WORKLOADS
                        .iter()
                        .enumerate()
                        .filter_map(|(w, workload)| {
                            cells
                                .iter()
                                .find(|c| {
                                    c.experiment == "grid"
                                        && c.load == *load
                                        && c.workload == *workload
                                        && c.label == *label
                                })
                                .map(|c| (w as f64, c.result.p95_us / 1000.0))
                        })
                        .collect(),
                    line: true,
                })
                .collect()
        })
        .collect();
    plot_by_load(path, "chain", "chain p95 (ms)", &panels)
}
