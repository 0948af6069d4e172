//! `qf report DIR`: tables and plots regenerated from a campaign's raw records.

use anyhow::{bail, Result};
use qf_evidence::stats::{
    Bootstrap, BootstrapError, BOOTSTRAP_BLOCK, BOOTSTRAP_RESAMPLES, DEFAULT_SEED,
};
use std::io::Write;
use std::path::PathBuf;

/// Regenerate every table (Markdown + CSV) and SVG plot of a campaign directory.
#[derive(Debug, Clone, clap::Args)]
pub struct ReportArgs {
    /// Campaign directory (traces/, profile/, evaluate/); output goes to DIR/report/.
    pub dir: PathBuf,
    /// Bootstrap resamples for the CIs (100 to 100000).
    #[arg(long, default_value_t = BOOTSTRAP_RESAMPLES, value_parser = super::count_in(super::bounds::RESAMPLES))]
    pub resamples: usize,
    /// Bootstrap block length (1 to 100000).
    #[arg(long, default_value_t = BOOTSTRAP_BLOCK, value_parser = super::count_in(super::bounds::BLOCK))]
    pub block: usize,
    /// Bootstrap seed.
    #[arg(long, default_value_t = DEFAULT_SEED)]
    pub seed: u64,
    /// Hide progress bars.
    #[arg(long)]
    pub quiet: bool,
}

impl ReportArgs {
    pub fn run(&self) -> Result<()> {
        if !self.dir.is_dir() {
            bail!("campaign directory {} does not exist", self.dir.display());
        }
        let bootstrap =
            Bootstrap::new(self.resamples, self.block, self.seed).map_err(|error| match error {
                BootstrapError::Resamples(n) => anyhow::anyhow!("--resamples {n}: {error}"),
                BootstrapError::Block(n) => anyhow::anyhow!("--block {n}: {error}"),
            })?;
        let written = qf_evidence::report::generate(&self.dir, bootstrap, !self.quiet)?;
        let mut out = std::io::stdout().lock();
        for path in written {
            writeln!(out, "{}", path.display())?;
        }
        Ok(())
    }
}
