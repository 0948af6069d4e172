//! `qf run TASK --domain linux|mcu JSON`: one invocation, printed with its result and timings.

use crate::cli::McuArgs;
use anyhow::Result;
use qf_decision::model::DomainId;
use qf_execution::domain::{executor_path, open_domain};
use qf_execution::rt::CallerPolicy;
use qf_execution::session::Session;
use qf_execution::workload::{
    decode_response, reference, request_from_json, response_json, task_by_name,
};
use std::io::Write;
use std::path::PathBuf;

/// Run one invocation of a declared task in a domain.
#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// Declared task name (add, abi_probe, crc32, fir_x1, fir_x64, fir_x512).
    pub task: String,
    /// Request as JSON, the request type's fields (e.g. '{"a": 2, "b": 3}').
    pub request: String,
    /// Execution domain.
    #[arg(long, value_enum, default_value_t = DomainId::Linux)]
    pub domain: DomainId,
    /// Caller (and Linux executor) scheduling policy.
    #[arg(long, value_enum, default_value_t = CallerPolicy::Ordinary)]
    pub caller: CallerPolicy,
    #[command(flatten)]
    pub mcu: McuArgs,
    /// Linux executor binary (default: qf-executor next to this program, or $QF_EXECUTOR).
    #[arg(long)]
    pub executor: Option<PathBuf>,
}

impl RunArgs {
    pub fn run(&self) -> Result<()> {
        let text = serde_json::to_string_pretty(&self.execute()?)?;
        writeln!(std::io::stdout(), "{text}")?;
        Ok(())
    }

    /// Runs the invocation; returns the printed JSON object.
    pub fn execute(&self) -> Result<serde_json::Value> {
        let task = task_by_name(&self.task)?;
        let request = request_from_json(task, &self.request)?;
        qf_execution::rt::set_scheduling(0, self.caller.scheduling())?;
        let mut endpoint = open_domain(
            self.domain,
            &executor_path(self.executor.as_deref())?,
            self.mcu.endpoint()?.as_ref(),
            self.caller.scheduling(),
        )?;
        // A fresh epoch and id in every process: a restarted client is not a replay. A STALE
        // reply is retried once in a re-established session; DUPLICATE, or STALE twice, is an
        // error (the task did not run), never a result.
        let mut session = Session::from_clock();
        let answered = session.invoke(endpoint.as_mut(), task, &request)?;
        if let Some((id, epoch)) = answered.stale_first {
            eprintln!(
                "qf: the MCU refused invocation {id} (epoch {epoch}) as stale: another client had moved it to a newer epoch; sent again as invocation {} in epoch {}",
                answered.invocation_id, answered.epoch
            );
        }
        let invocation = answered.invocation;
        let (header, response) = decode_response(task, invocation.frame())?;
        let expected = reference(task, &request)?;
        let latency_us = invocation.latency.as_secs_f64() * 1e6;
        let compute_us = invocation.compute.map(|c| c.as_secs_f64() * 1e6);
        Ok(serde_json::json!({
            "task": task.name(),
            "domain": self.domain,
            "caller": self.caller,
            "status": header.status.name(),
            "result": response.as_ref().map(response_json),
            "matches_reference": response == Some(expected),
            "latency_us": latency_us,
            "compute_us": compute_us,
            "residual_us": compute_us.map(|c| latency_us - c),
            "invocation_id": answered.invocation_id,
            "epoch": answered.epoch,
            "stale_retry": answered.stale_first.map(|(id, epoch)| serde_json::json!({
                "refused_invocation_id": id,
                "refused_epoch": epoch,
            })),
        }))
    }
}
