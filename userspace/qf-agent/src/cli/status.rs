//! `qf status`: asks a running `qfabricd` for placements, window miss rates, controller state and
//! the last decisions.

use crate::daemon::query_status;
use anyhow::Result;
use std::path::PathBuf;

/// Show the state of a running qfabricd.
#[derive(Debug, Clone, clap::Args)]
pub struct StatusArgs {
    /// The daemon's status socket.
    #[arg(long, default_value = "/run/qfabric/qfabricd.sock")]
    pub socket: PathBuf,
    /// Print the raw JSON.
    #[arg(long)]
    pub json: bool,
}

impl StatusArgs {
    pub fn run(&self) -> Result<()> {
        let status = query_status(&self.socket)?;
        if self.json {
            println!("{}", serde_json::to_string_pretty(&status)?);
            return Ok(());
        }
        println!(
            "qfabricd pid {} run {} up {:.1} s, {} chain observations, epoch {}",
            status.pid, status.run_id, status.uptime_s, status.observations, status.epoch
        );
        println!(
            "controller: {}",
            status
                .controller
                .map(|p| serde_json::to_string(&p).unwrap_or_default())
                .unwrap_or_default()
        );
        println!(
            "D_G {:.0} us, window {} (miss rate so far {:.1}%), MCU endpoint {}",
            status.graph_deadline_us,
            status.window_index,
            100.0 * status.current_window_miss_rate,
            if status.mcu_available { "up" } else { "down" }
        );
        for (task, domain) in &status.placement {
            println!("  {task}: {domain}");
        }
        let rates: Vec<String> = status
            .recent_window_miss_rates
            .iter()
            .map(|r| format!("{:.1}%", 100.0 * r))
            .collect();
        println!("recent windows: [{}]", rates.join(", "));
        for d in &status.last_decisions {
            println!("  {}", d.line());
        }
        println!(
            "journal {} ({} records)",
            status.journal.display(),
            status.journal_records
        );
        Ok(())
    }
}
