//! Profiling (the paper's Section IV-B): per task × domain × load × caller, warm-up invocations
//! excluded, N samples kept raw (task, domain, load, caller, request id, latency, compute,
//! outcome checked against the independent reference), and a minimum sample count that marks the
//! estimate valid. Residual = latency − compute (Eq. 1).
//!
//! Writes `OUT/profile/<load>/<caller>/observations.csv` (raw) and
//! `OUT/traces/<load>/<caller>/<task>.<domain>.csv` (the replay/trace format).

use crate::stats::percentile;
use crate::traces::{trace_file_name, Sample, Trace};
use anyhow::{Context, Result};
use qf_decision::model::DomainId;
use qf_execution::domain::{open_domain, Domain, McuEndpoint};
use qf_execution::load::Load;
use qf_execution::qfabric_dev::Split;
use qf_execution::rt::{set_scheduling, CallerPolicy, Scheduling};
use qf_execution::session::Session;
use qf_execution::workload::{outcome_ok, random_request};
use qf_tasks::Task;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// One raw observation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    pub task: String,
    pub domain: DomainId,
    pub load: String,
    pub caller: String,
    pub request_id: u64,
    pub latency_us: f64,
    /// Executor-reported compute; NaN when the endpoint does not report it.
    pub compute_us: f64,
    pub ok: bool,
    /// Where a kernel-dispatched MCU call's time went ([`qf_execution::qfabric_dev::Split`]), in µs;
    /// NaN on the other paths and in campaigns recorded before these columns existed.
    #[serde(default = "not_measured")]
    pub entry_us: f64,
    #[serde(default = "not_measured")]
    pub send_us: f64,
    #[serde(default = "not_measured")]
    pub remote_us: f64,
    #[serde(default = "not_measured")]
    pub wake_us: f64,
    #[serde(default = "not_measured")]
    pub exit_us: f64,
}

fn not_measured() -> f64 {
    f64::NAN
}

/// What to profile.
#[derive(Debug, Clone)]
pub struct ProfileSpec {
    pub tasks: Vec<Task>,
    pub domains: Vec<DomainId>,
    pub loads: Vec<Load>,
    pub callers: Vec<CallerPolicy>,
    pub warmup: usize,
    pub samples: usize,
    pub min_samples: usize,
    pub executor: PathBuf,
    pub mcu: Option<McuEndpoint>,
    pub out: PathBuf,
    pub seed: u64,
    pub progress: bool,
}

/// Summary line of one profiled cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellSummary {
    pub task: String,
    pub domain: DomainId,
    pub load: String,
    pub caller: String,
    pub samples: usize,
    pub valid: bool,
    pub wrong_outputs: usize,
    pub latency_p50_us: f64,
    pub latency_p95_us: f64,
    pub latency_p99_us: f64,
    pub compute_p50_us: f64,
    /// Eq. 1 at the median: latency p50 − compute p50.
    pub residual_p50_us: f64,
}

/// Profiles one task on one endpoint; returns the kept observations.
fn profile_cell(
    spec: &ProfileSpec,
    endpoint: &mut dyn Domain,
    task: Task,
    load: &str,
    caller: &str,
    next_id: &mut u64,
    session: &mut Session,
) -> Result<Vec<Observation>> {
    let mut kept = Vec::with_capacity(spec.samples);
    for index in 0..spec.warmup + spec.samples {
        let request_id = *next_id;
        *next_id += 1;
        let request = random_request(task, spec.seed ^ request_id);
        // The request id numbers the sample (and seeds its input); the wire carries a session id
        // no other client uses (see qf_execution::session). A request the MCU refused without
        // running it (STALE twice, DUPLICATE) stops the profile: it is no sample.
        let invocation = session
            .invoke(endpoint, task, &request)
            .with_context(|| format!("sample {request_id} of `{}`", task.name()))?
            .invocation;
        if index < spec.warmup {
            continue;
        }
        let ok = outcome_ok(task, &request, invocation.frame()).unwrap_or(false);
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        let segment =
            |pick: fn(&Split) -> Duration| invocation.dispatch.map_or(f64::NAN, |s| us(pick(&s)));
        kept.push(Observation {
            task: task.name().into(),
            domain: endpoint.id(),
            load: load.into(),
            caller: caller.into(),
            request_id,
            latency_us: invocation.latency.as_secs_f64() * 1e6,
            compute_us: invocation
                .compute
                .map_or(f64::NAN, |c| c.as_secs_f64() * 1e6),
            ok,
            entry_us: segment(|s| s.entry),
            send_us: segment(|s| s.send),
            remote_us: segment(|s| s.remote),
            wake_us: segment(|s| s.wake),
            exit_us: segment(|s| s.exit),
        });
    }
    Ok(kept)
}

/// Summarises one cell's observations.
pub fn summarize(observations: &[Observation], min_samples: usize) -> Option<CellSummary> {
    let first = observations.first()?;
    let latency: Vec<f64> = observations.iter().map(|o| o.latency_us).collect();
    let compute: Vec<f64> = observations
        .iter()
        .map(|o| o.compute_us)
        .filter(|c| c.is_finite())
        .collect();
    let latency_p50 = percentile(&latency, 0.5).unwrap_or(f64::NAN);
    let compute_p50 = percentile(&compute, 0.5).unwrap_or(f64::NAN);
    Some(CellSummary {
        task: first.task.clone(),
        domain: first.domain,
        load: first.load.clone(),
        caller: first.caller.clone(),
        samples: observations.len(),
        valid: observations.len() >= min_samples,
        wrong_outputs: observations.iter().filter(|o| !o.ok).count(),
        latency_p50_us: latency_p50,
        latency_p95_us: percentile(&latency, 0.95).unwrap_or(f64::NAN),
        latency_p99_us: percentile(&latency, 0.99).unwrap_or(f64::NAN),
        compute_p50_us: compute_p50,
        residual_p50_us: latency_p50 - compute_p50,
    })
}

impl ProfileSpec {
    /// Runs every cell; the caller policy is applied to a dedicated measuring thread.
    pub fn run(&self) -> Result<Vec<CellSummary>> {
        let cells = self.loads.len() * self.callers.len() * self.domains.len() * self.tasks.len();
        let bar = if self.progress {
            indicatif::ProgressBar::new(cells as u64)
        } else {
            indicatif::ProgressBar::hidden()
        };
        let mut summaries = Vec::new();
        // Invocation ids are unique over the whole run, not per cell: an MCU endpoint keeps its
        // replay windows from one cell to the next (unlike a fresh Linux executor), and would
        // answer a reused id as a duplicate.
        let per_thread =
            (self.domains.len() * self.tasks.len() * (self.warmup + self.samples)) as u64;
        let mut first_id = 1u64;
        for load in &self.loads {
            // Loads stop by themselves after an hour at the latest, and when the guard drops.
            let _guard = load.start(Duration::from_secs(3600))?;
            for caller in &self.callers {
                let spec = self.clone();
                let thread_first_id = first_id;
                first_id += per_thread;
                let (load_name, caller) = (load.name().to_string(), *caller);
                let bar_thread = bar.clone();
                let observations = std::thread::spawn(move || -> Result<Vec<Observation>> {
                    set_scheduling(0, caller.scheduling()).context("applying the caller policy")?;
                    let mut all = Vec::new();
                    let mut next_id = thread_first_id;
                    let mut session = Session::from_clock();
                    for &domain in &spec.domains {
                        let mut endpoint = open_domain(
                            domain,
                            &spec.executor,
                            spec.mcu.as_ref(),
                            caller.scheduling(),
                        )?;
                        for &task in &spec.tasks {
                            bar_thread.set_message(format!(
                                "{load_name}/{}/{domain}/{}",
                                caller.as_str(),
                                task.name()
                            ));
                            all.extend(profile_cell(
                                &spec,
                                endpoint.as_mut(),
                                task,
                                &load_name,
                                caller.as_str(),
                                &mut next_id,
                                &mut session,
                            )?);
                            bar_thread.inc(1);
                        }
                    }
                    set_scheduling(0, Scheduling::Other).ok();
                    Ok(all)
                })
                .join()
                .map_err(|_| anyhow::anyhow!("the measuring thread panicked"))??;
                summaries.extend(self.write_cell(load.name(), caller, &observations)?);
            }
        }
        bar.finish_and_clear();
        Ok(summaries)
    }

    fn write_cell(
        &self,
        load: &str,
        caller: CallerPolicy,
        observations: &[Observation],
    ) -> Result<Vec<CellSummary>> {
        let raw_dir = self.out.join("profile").join(load).join(caller.as_str());
        let trace_dir = self.out.join("traces").join(load).join(caller.as_str());
        for dir in [&raw_dir, &trace_dir] {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let raw_path = raw_dir.join("observations.csv");
        let mut writer = csv::Writer::from_path(&raw_path)
            .with_context(|| format!("creating {}", raw_path.display()))?;
        for observation in observations {
            writer.serialize(observation)?;
        }
        writer.flush()?;
        let mut summaries = Vec::new();
        for &domain in &self.domains {
            for &task in &self.tasks {
                let cell: Vec<Observation> = observations
                    .iter()
                    .filter(|o| o.domain == domain && o.task == task.name())
                    .cloned()
                    .collect();
                let samples: Vec<Sample> = cell
                    .iter()
                    .map(|o| Sample {
                        latency_us: o.latency_us,
                        ok: o.ok,
                    })
                    .collect();
                Trace::write(
                    &trace_dir.join(trace_file_name(task.name(), domain)),
                    &samples,
                )?;
                summaries.extend(summarize(&cell, self.min_samples));
            }
        }
        Ok(summaries)
    }
}

/// Prints summaries as an aligned table.
pub fn print_summaries(out: &mut impl Write, summaries: &[CellSummary]) -> std::io::Result<()> {
    writeln!(
        out,
        "{:<9} {:<6} {:<5} {:<9} {:>7} {:>5} {:>6} {:>10} {:>10} {:>10} {:>11} {:>12}",
        "task",
        "domain",
        "load",
        "caller",
        "samples",
        "valid",
        "wrong",
        "p50 us",
        "p95 us",
        "p99 us",
        "compute p50",
        "residual p50"
    )?;
    for s in summaries {
        writeln!(
            out,
            "{:<9} {:<6} {:<5} {:<9} {:>7} {:>5} {:>6} {:>10.2} {:>10.2} {:>10.2} {:>11.2} {:>12.2}",
            s.task, s.domain.as_str(), s.load, s.caller, s.samples, s.valid, s.wrong_outputs, s.latency_p50_us, s.latency_p95_us, s.latency_p99_us, s.compute_p50_us, s.residual_p50_us
        )?;
    }
    Ok(())
}
