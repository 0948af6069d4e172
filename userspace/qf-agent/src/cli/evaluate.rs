//! `qf evaluate`: the whole grid (workloads × loads × policies) and the hysteresis ablation.

use super::ContractArgs;
use anyhow::{bail, Context, Result};
use qf_decision::decision_cost::Rig;
use qf_evidence::evaluate::{write_synthetic_traces, Evaluation};
use qf_evidence::synthetic::WORKLOADS;
use std::io::Write;
use std::path::PathBuf;

/// Run the evaluation grid and the k = 1 / k = 3 ablation, writing raw results under OUT.
#[derive(Debug, Clone, clap::Args)]
pub struct EvaluateArgs {
    /// Campaign directory; results go to OUT/evaluate/.
    #[arg(long)]
    pub out: PathBuf,
    /// Per-call traces, `TRACES/<load>/<caller>/<workload>.<domain>.csv` (default: OUT/traces).
    #[arg(long, conflicts_with = "synthetic")]
    pub traces: Option<PathBuf>,
    /// Generate synthetic traces shaped after the paper's Table IV into OUT/traces with this seed
    /// (labelled synthetic in every result; for exercising the pipeline without a board).
    #[arg(long, value_name = "SEED")]
    pub synthetic: Option<u64>,
    /// Samples per synthetic trace (1 to 1000000).
    #[arg(long, default_value_t = 2000, value_parser = super::count_in(super::bounds::SYNTHETIC_ROWS))]
    pub synthetic_rows: usize,
    /// Chain observations per cell (1 to 1000000).
    #[arg(long, default_value_t = 500, value_parser = super::count_in(super::bounds::OBSERVATIONS))]
    pub observations: usize,
    /// Controller decisions timed for the decision-cost table (1 to 1000000).
    #[arg(long, default_value_t = 1000, value_parser = super::count_in(super::bounds::DECISIONS))]
    pub decisions: usize,
    #[command(flatten)]
    pub contract: ContractArgs,
    /// Workloads to evaluate, comma-separated (each needs its traces for every load and caller).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "add,crc32,fir_x1,fir_x64,fir_x512"
    )]
    pub workloads: Vec<String>,
    /// Hide the progress bar.
    #[arg(long)]
    pub quiet: bool,
}

impl EvaluateArgs {
    pub fn run(&self) -> Result<()> {
        let config = self.contract.config()?;
        if let Some(unknown) = self
            .workloads
            .iter()
            .find(|w| !WORKLOADS.contains(&w.as_str()))
        {
            bail!(
                "--workloads: unknown workload `{unknown}` (expected some of {})",
                WORKLOADS.join(",")
            );
        }
        let traces = match (&self.traces, self.synthetic) {
            (Some(dir), None) => dir.clone(),
            (None, Some(seed)) => {
                let dir = self.out.join("traces");
                write_synthetic_traces(&dir, self.synthetic_rows, seed)?;
                dir
            }
            (None, None) => self.out.join("traces"),
            (Some(_), Some(_)) => bail!("--traces and --synthetic exclude each other"),
        };
        let evaluation = Evaluation {
            traces,
            out: self.out.clone(),
            observations: self.observations,
            config,
            synthetic: self.synthetic.is_some(),
            progress: !self.quiet,
            workloads: self.workloads.clone(),
        };
        let cells = evaluation.run()?;
        let cost_path = self.out.join("evaluate").join("decision_cost.csv");
        let mut times = Vec::with_capacity(self.decisions);
        Rig::new().run(&mut times);
        let mut file = std::io::BufWriter::new(
            std::fs::File::create(&cost_path)
                .with_context(|| format!("creating {}", cost_path.display()))?,
        );
        writeln!(file, "decision_ns")?;
        for time in times {
            writeln!(file, "{time}")?;
        }
        file.flush()?;
        let grid: Vec<_> = cells.iter().filter(|c| c.experiment == "grid").collect();
        let recovery_switches: usize = grid
            .iter()
            .filter(|c| c.label.starts_with("recovery"))
            .map(|c| c.result.switches)
            .sum();
        let ablation_k1: Vec<_> = cells
            .iter()
            .filter(|c| c.experiment == "ablation" && c.result.hysteresis == 1)
            .collect();
        writeln!(
            std::io::stdout(),
            "evaluate: {} grid cells, recovery switches {}, k=1 ablation: switched in {} of {} cells, {} rollbacks; raw results in {}",
            grid.len(),
            recovery_switches,
            ablation_k1.iter().filter(|c| c.result.switches > 0).count(),
            ablation_k1.len(),
            ablation_k1.iter().map(|c| c.result.rollbacks).sum::<usize>(),
            self.out.join("evaluate").display()
        )?;
        Ok(())
    }
}
