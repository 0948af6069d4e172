//! The evaluation grid (the paper's Section VII-C/D): for every workload × load, the four-node
//! chain replayed under every policy of Table III, plus the hysteresis ablation (k = 1 vs k = 3)
//! per workload × load × caller, with raw per-observation results written for `qf report`.
//!
//! Per-call traces are read from `TRACES/<load>/<caller>/<workload>.<domain>.csv` (the layout
//! `qf profile` writes), with loads `idle|cpu|rt` and callers `ordinary|fifo`. The chain has four
//! nodes `<workload>_n0..n3`; node i replays samples i, i+4, i+8, … of the workload's trace, so a
//! chain whose nodes share a domain consumes that trace exactly in measured order. The deadline is
//! Eq. 4 from the idle, ordinary-caller traces (D_G = 4·D) and the chain runs once per D_G
//! (r_v = 1/D_G) for Eq. 5.

use crate::chain::{Chain, TaskDecl};
use crate::replay::{replay, Policy, ReplayInputs, ReplayResult};
use crate::synthetic::{CALLERS, LOADS, WORKLOADS};
use crate::traces::{trace_file_name, Trace};
use anyhow::{bail, Context, Result};
use qf_decision::contract::{deadline_rule_us, ContractConfig};
use qf_decision::model::{DomainEvidence, DomainId, EffectClass};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Nodes in the paper's chain.
pub const CHAIN_NODES: usize = 4;
/// The manual expert placement of Table III.
pub const MANUAL_PLACEMENT: [DomainId; CHAIN_NODES] = [
    DomainId::Linux,
    DomainId::Mcu,
    DomainId::Mcu,
    DomainId::Linux,
];

/// One row of `cells.jsonl`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CellResult {
    /// `grid` (Table VI) or `ablation` (Table VII).
    pub experiment: String,
    pub workload: String,
    pub load: String,
    /// Caller policy of the traces replayed: `ordinary` or `fifo`.
    pub caller: String,
    /// Label of the policy row (`recovery-tuned` is recovery on FIFO-caller traces).
    pub label: String,
    pub synthetic: bool,
    pub result: ReplayResult,
}

/// Per-call traces of one workload × load × caller, one per domain.
type TracePair = [Trace; 2];

fn load_pair(root: &Path, load: &str, caller: &str, workload: &str) -> Result<TracePair> {
    let dir = root.join(load).join(caller);
    let linux = Trace::load(&dir.join(trace_file_name(workload, DomainId::Linux)))?;
    let mcu = Trace::load(&dir.join(trace_file_name(workload, DomainId::Mcu)))?;
    Ok([linux, mcu])
}

/// Builds the four-node chain's replay inputs for one cell.
fn chain_inputs(
    workload: &str,
    pair: &TracePair,
    idle: &TracePair,
    start: [DomainId; CHAIN_NODES],
) -> Result<ReplayInputs> {
    let p99s = idle.iter().map(|t| t.p99_us().unwrap_or(f64::NAN));
    let deadline_us =
        deadline_rule_us(p99s).with_context(|| format!("idle traces of `{workload}` are empty"))?;
    let graph_deadline_us = deadline_us * CHAIN_NODES as f64;
    let rate_hz = 1e6 / graph_deadline_us;
    let task = (0..CHAIN_NODES)
        .map(|node| TaskDecl {
            name: format!("{workload}_n{node}"),
            effect: EffectClass::Pure,
            domains: vec![DomainId::Linux, DomainId::Mcu],
            start: start[node],
            deadline_us: Some(deadline_us),
            rate_hz,
        })
        .collect();
    let split = |trace: &Trace, node: usize| Trace {
        path: trace.path.clone(),
        samples: trace
            .samples
            .iter()
            .skip(node)
            .step_by(CHAIN_NODES)
            .copied()
            .collect(),
    };
    let evidence: [DomainEvidence; 2] = [pair[0].evidence(), pair[1].evidence()];
    let idle_p95 = [idle[0].evidence().q95_us, idle[1].evidence().q95_us];
    Ok(ReplayInputs {
        chain: Chain { task },
        traces: (0..CHAIN_NODES)
            .map(|node| [Some(split(&pair[0], node)), Some(split(&pair[1], node))])
            .collect(),
        evidence: vec![evidence; CHAIN_NODES],
        idle_p95_us: vec![idle_p95; CHAIN_NODES],
        task_deadlines_us: vec![deadline_us; CHAIN_NODES],
        inputs: pair.iter().chain(idle).map(|t| t.path.clone()).collect(),
    })
}

/// Settings of one evaluation run.
#[derive(Debug, Clone)]
pub struct Evaluation {
    pub traces: PathBuf,
    pub out: PathBuf,
    pub observations: usize,
    pub config: ContractConfig,
    pub synthetic: bool,
    pub progress: bool,
    /// Workloads to evaluate (names from [`WORKLOADS`]).
    pub workloads: Vec<String>,
}

impl Evaluation {
    /// Runs the grid and the ablation; writes `OUT/evaluate/{cells.jsonl,observations.csv}`.
    pub fn run(&self) -> Result<Vec<CellResult>> {
        let dir = self.out.join("evaluate");
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let cells = self.workloads.len() * LOADS.len();
        let bar = if self.progress {
            indicatif::ProgressBar::new(cells as u64)
        } else {
            indicatif::ProgressBar::hidden()
        };
        bar.set_style(
            indicatif::ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar.set_prefix("evaluate");
        let mut results = Vec::new();
        for workload in self.workloads.iter().map(String::as_str) {
            let idle = load_pair(&self.traces, "idle", "ordinary", workload)?;
            for load in LOADS {
                bar.set_message(format!("{workload} / {load}"));
                let ordinary = load_pair(&self.traces, load, "ordinary", workload)?;
                let fifo = load_pair(&self.traces, load, "fifo", workload)?;
                let on_linux = [DomainId::Linux; CHAIN_NODES];
                let ordinary_inputs = chain_inputs(workload, &ordinary, &idle, on_linux)?;
                let fifo_inputs = chain_inputs(workload, &fifo, &idle, on_linux)?;
                let manual_inputs = chain_inputs(workload, &ordinary, &idle, MANUAL_PLACEMENT)?;
                let grid: [(&str, &str, Policy, &ReplayInputs); 8] = [
                    (
                        "ordinary-linux",
                        "ordinary",
                        Policy::OrdinaryLinux,
                        &ordinary_inputs,
                    ),
                    ("tuned-linux", "fifo", Policy::TunedLinux, &fifo_inputs),
                    ("mcu-first", "ordinary", Policy::McuFirst, &ordinary_inputs),
                    ("manual", "ordinary", Policy::Manual, &manual_inputs),
                    ("static", "ordinary", Policy::Static, &ordinary_inputs),
                    ("recovery", "ordinary", Policy::Recovery, &ordinary_inputs),
                    ("recovery-tuned", "fifo", Policy::Recovery, &fifo_inputs),
                    ("oracle", "ordinary", Policy::Oracle, &ordinary_inputs),
                ];
                for (label, caller, policy, inputs) in grid {
                    let result = replay(inputs, policy, self.config, self.observations)
                        .with_context(|| format!("cell {workload}/{load}, policy {label}"))?;
                    results.push(self.cell("grid", workload, load, caller, label, result));
                }
                for (caller, inputs) in [(CALLERS[0], &ordinary_inputs), (CALLERS[1], &fifo_inputs)]
                {
                    for k in [1, 3] {
                        let config = ContractConfig {
                            hysteresis: k,
                            ..self.config
                        };
                        let result = replay(inputs, Policy::Recovery, config, self.observations)
                            .with_context(|| {
                                format!("ablation {workload}/{load}/{caller}, k = {k}")
                            })?;
                        results.push(self.cell(
                            "ablation",
                            workload,
                            load,
                            caller,
                            &format!("recovery-k{k}"),
                            result,
                        ));
                    }
                }
                bar.inc(1);
            }
        }
        bar.finish_and_clear();
        write_results(&dir, &results)?;
        Ok(results)
    }

    fn cell(
        &self,
        experiment: &str,
        workload: &str,
        load: &str,
        caller: &str,
        label: &str,
        result: ReplayResult,
    ) -> CellResult {
        CellResult {
            experiment: experiment.into(),
            workload: workload.into(),
            load: load.into(),
            caller: caller.into(),
            label: label.into(),
            synthetic: self.synthetic,
            result,
        }
    }
}

fn write_results(dir: &Path, results: &[CellResult]) -> Result<()> {
    let cells_path = dir.join("cells.jsonl");
    let mut cells = std::io::BufWriter::new(
        std::fs::File::create(&cells_path)
            .with_context(|| format!("creating {}", cells_path.display()))?,
    );
    let observations_path = dir.join("observations.csv");
    let mut observations = std::io::BufWriter::new(
        std::fs::File::create(&observations_path)
            .with_context(|| format!("creating {}", observations_path.display()))?,
    );
    writeln!(
        observations,
        "experiment,workload,load,caller,label,hysteresis,observation,latency_us,miss"
    )?;
    for cell in results {
        serde_json::to_writer(&mut cells, cell)?;
        writeln!(cells)?;
        for (index, latency) in cell.result.latencies_us.iter().enumerate() {
            let miss = u8::from(*latency > cell.result.graph_deadline_us);
            writeln!(
                observations,
                "{},{},{},{},{},{},{index},{latency},{miss}",
                cell.experiment,
                cell.workload,
                cell.load,
                cell.caller,
                cell.label,
                cell.result.hysteresis
            )?;
        }
    }
    cells.flush()?;
    observations.flush()?;
    Ok(())
}

/// The most lines `cells.jsonl` is read with: 100,000. The grid and the ablation write one line
/// a cell, a few hundred in all.
pub const MAX_CELLS: usize = 100_000;

/// The largest `cells.jsonl` read: 256 MiB. A line is under 1 KiB plus about 200 bytes a
/// recorded decision (the policies switch tens of times a cell), so a real file is well under
/// 1 MiB; the bound keeps a wrong path from being read into memory.
pub const MAX_CELLS_BYTES: u64 = 256 << 20;

/// Reads `cells.jsonl` back (the report's input), streaming: a regular file of at most
/// [`MAX_CELLS_BYTES`] and [`MAX_CELLS`] lines (a FIFO or device is refused without waiting
/// on it); errors name the file and the line, or the limit.
pub fn read_cells(path: &Path) -> Result<Vec<CellResult>> {
    read_cells_within(path, MAX_CELLS_BYTES, MAX_CELLS)
}

fn read_cells_within(path: &Path, max_bytes: u64, max_lines: usize) -> Result<Vec<CellResult>> {
    use std::io::BufRead as _;
    let file = crate::files::open_bounded(path, max_bytes)
        .with_context(|| format!("reading {}", path.display()))?;
    let mut reader = std::io::BufReader::new(file);
    let mut cells = Vec::new();
    let mut line = String::new();
    for number in 1.. {
        line.clear();
        if reader
            .read_line(&mut line)
            .with_context(|| format!("{} line {number}", path.display()))?
            == 0
        {
            break;
        }
        if number > max_lines {
            bail!(
                "{} line {number}: more than {max_lines} lines, the limit",
                path.display()
            );
        }
        if line.trim().is_empty() {
            continue;
        }
        cells.push(
            serde_json::from_str(&line)
                .with_context(|| format!("{} line {number}", path.display()))?,
        );
    }
    Ok(cells)
}

/// Writes synthetic traces for the whole grid under `root` (see [`crate::synthetic`]).
pub fn write_synthetic_traces(root: &Path, rows: usize, seed: u64) -> Result<()> {
    for (load_index, load) in LOADS.iter().enumerate() {
        for (caller_index, caller) in CALLERS.iter().enumerate() {
            let dir = root.join(load).join(caller);
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            for (workload_index, workload) in WORKLOADS.iter().enumerate() {
                for domain in DomainId::ALL {
                    let shape =
                        crate::synthetic::shape(workload_index, load_index, caller_index, domain);
                    let trace_seed = seed
                        ^ ((load_index * 100 + caller_index * 10 + workload_index) as u64) << 8
                        ^ domain.index() as u64;
                    let samples = crate::synthetic::generate(shape, rows, trace_seed);
                    Trace::write(&dir.join(trace_file_name(workload, domain)), &samples)?;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A FIFO with no writer is refused at once by what it is; a file over the byte limit by
    /// its size, before a byte is read (a sparse 1 TiB file: reading it would never end); a
    /// file with a line past the line limit at that line.
    #[test]
    fn a_fifo_an_oversized_file_and_too_many_lines_are_refused_naming_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("cells.jsonl");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let error = crate::files::within(move || format!("{:#}", read_cells(&fifo).unwrap_err()));
        assert!(error.contains("cells.jsonl") && error.contains("a FIFO, not a regular file"));

        let huge = dir.path().join("huge.jsonl");
        std::fs::File::create(&huge)
            .unwrap()
            .set_len(1 << 40)
            .unwrap();
        assert_eq!(
            format!("{:#}", read_cells(&huge).unwrap_err()),
            format!(
                "reading {}: 1099511627776 bytes (1048576 MiB), over the limit of 268435456 \
                 bytes (256 MiB)",
                huge.display()
            )
        );

        let lines = dir.path().join("lines.jsonl");
        std::fs::write(&lines, "\n\n\n").unwrap();
        assert!(read_cells_within(&lines, 1 << 20, 3).unwrap().is_empty());
        assert_eq!(
            format!("{:#}", read_cells_within(&lines, 1 << 20, 2).unwrap_err()),
            format!("{} line 3: more than 2 lines, the limit", lines.display())
        );
    }
}
