//! `qf status`: asks a running `qfabricd` for placements, window miss rates, controller state and
//! the last decisions.

use crate::daemon::{query_status, Status};
use anyhow::Result;
use std::io::Write;
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
        print_status(&status, self.json, &mut std::io::stdout().lock())
    }
}

/// Prints a status (JSON or text); a closed stdout is an error, not a panic.
pub fn print_status(status: &Status, json: bool, out: &mut impl Write) -> Result<()> {
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(status)?)?;
        return Ok(out.flush()?);
    }
    writeln!(
        out,
        "qfabricd pid {} run {} up {:.1} s, {} chain observations ({} refused by the MCU, not scored), epoch {} (wire {})",
        status.pid,
        status.run_id,
        status.uptime_s,
        status.observations,
        status.rejected_releases,
        status.epoch,
        status.wire_epoch
    )?;
    writeln!(
        out,
        "controller: {}",
        status
            .controller
            .map(|p| serde_json::to_string(&p).unwrap_or_default())
            .unwrap_or_default()
    )?;
    let mcu = match (status.mcu_available, &status.mcu_down_reason) {
        (true, _) => "up".to_owned(),
        (false, Some(reason)) => format!("down ({reason})"),
        (false, None) => "down".to_owned(),
    };
    writeln!(
        out,
        "D_G {:.0} us, window {} (miss rate so far {:.1}%), MCU endpoint {mcu}",
        status.graph_deadline_us,
        status.window_index,
        100.0 * status.current_window_miss_rate,
    )?;
    for (task, domain) in &status.placement {
        writeln!(out, "  {task}: {domain}")?;
    }
    let rates: Vec<String> = status
        .recent_window_miss_rates
        .iter()
        .map(|r| format!("{:.1}%", 100.0 * r))
        .collect();
    writeln!(out, "recent windows: [{}]", rates.join(", "))?;
    for d in &status.last_decisions {
        writeln!(out, "  {}", d.line())?;
    }
    for r in &status.resident {
        writeln!(
            out,
            "resident chain {} ({}): {}, {} releases, {} results, {} not delivered, {} rejected, {} deadline misses, installed {} time(s){}",
            r.chain,
            r.task,
            r.state,
            r.releases,
            r.results,
            r.not_delivered,
            r.rejected,
            r.deadline_misses,
            r.installs,
            r.error.as_deref().map(|e| format!("; {e}")).unwrap_or_default()
        )?;
    }
    writeln!(
        out,
        "journal {} ({} records{}, head {}, anchored in {})",
        status.journal.display(),
        status.journal_records,
        if status.journal_keyed { ", keyed" } else { "" },
        status.journal_head,
        status.journal_anchor.display()
    )?;
    if let Some(records) = status.journal_anchor_missing {
        writeln!(
            out,
            "{}",
            qf_evidence::journal::anchor_missing_warning(&status.journal_anchor, records)
        )?;
    }
    Ok(out.flush()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stdout that was closed (`qf status | head -3`).
    pub struct ClosedPipe;

    impl Write for ClosedPipe {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
    }

    fn broken_pipe(result: Result<()>) -> bool {
        result.is_err_and(|e| {
            e.downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
        })
    }

    /// A journal whose anchor was missing is said so, with the anchor and the records nothing
    /// vouched for (the status only showed where the anchor is).
    #[test]
    fn a_missing_anchor_is_a_warning_in_qf_status() {
        let status = Status {
            journal_anchor: "/var/lib/qfabric/journal.anchor".into(),
            journal_anchor_missing: Some(12),
            ..Status::default()
        };
        let mut text = Vec::new();
        print_status(&status, false, &mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.contains("WARNING: the journal's anchor /var/lib/qfabric/journal.anchor was missing while the journal held 12 record(s)"),
            "{text}"
        );
    }

    /// `println!` panicked on a closed stdout ("failed printing to stdout"); the printers now
    /// return the BrokenPipe error for qf's main to end on quietly.
    #[test]
    fn a_closed_stdout_is_a_broken_pipe_error_not_a_panic() {
        let status = Status::default();
        assert!(broken_pipe(print_status(&status, false, &mut ClosedPipe)));
        assert!(broken_pipe(print_status(&status, true, &mut ClosedPipe)));
        let mut text = Vec::new();
        print_status(&status, false, &mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains("MCU endpoint down"));
        assert!(!text.contains("WARNING"), "{text}");
        let replay = qf_evidence::replay::ReplayResult {
            policy: qf_evidence::replay::Policy::Recovery,
            observations: 0,
            window: 20,
            hysteresis: 3,
            probation: 6,
            graph_deadline_us: 1.0,
            p95_us: 1.0,
            miss_rate: 0.0,
            misses: 0,
            switches: 0,
            commits: 0,
            rollbacks: 0,
            open_at_end: false,
            final_placement: Default::default(),
            decisions: Vec::new(),
            latencies_us: Vec::new(),
        };
        for json in [false, true] {
            assert!(broken_pipe(crate::cli::replay::print_result(
                &replay,
                json,
                &mut ClosedPipe
            )));
        }
    }
}
