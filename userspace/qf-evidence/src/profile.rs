//! Profiling (the paper's Section IV-B): per task × domain × load × caller, warm-up invocations
//! excluded, N samples kept raw (task, domain, load, caller, request id, latency, compute,
//! outcome checked against the independent reference), and a minimum sample count that marks the
//! estimate valid. Residual = latency − compute (Eq. 1).
//!
//! Writes `OUT/profile/<load>/<caller>/observations.csv` (raw),
//! `OUT/profile/<load>/<caller>/lost.csv` (the calls that got no reply) and
//! `OUT/traces/<load>/<caller>/<task>.<domain>.csv` (the replay/trace format).
//!
//! A call that gets no reply within its time-out on a line that stays open (a serial line's lost
//! byte, `qf_execution::serial::NoReply`) is no sample: it is counted (the summary's `lost`, one
//! row of `lost.csv`) and the profile goes on; [`LOST_IN_A_ROW`] of them in a row mean the MCU
//! stopped answering. Any other failure (the MCU gone, a refusal) stops the profile: what was
//! measured before it is written all the same, and the error says where it stopped.

use crate::stats::percentile;
use crate::traces::{trace_file_name, Sample, Trace};
use anyhow::{Context, Result};
use qf_decision::model::DomainId;
use qf_execution::domain::{open_domain, Domain, McuEndpoint};
use qf_execution::load::Load;
use qf_execution::qfabric_dev::Split;
use qf_execution::rt::{set_scheduling, CallerPolicy, Scheduling};
use qf_execution::serial::is_no_reply;
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

/// Calls in a row without a reply after which the MCU counts as no longer answering: the
/// profile stops there (each such call waits its whole time-out).
pub const LOST_IN_A_ROW: usize = 3;

/// A call that got no reply (one row of `lost.csv`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LostCall {
    pub task: String,
    pub domain: DomainId,
    pub load: String,
    pub caller: String,
    pub request_id: u64,
    pub reason: String,
}

/// What one load × caller measured: the observations, the lost calls, and the failure that
/// stopped it early, if one did.
#[derive(Debug, Default)]
struct Measured {
    observations: Vec<Observation>,
    lost: Vec<LostCall>,
    stopped: Option<anyhow::Error>,
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
    /// Calls that got no reply (not samples).
    #[serde(default)]
    pub lost: usize,
    pub latency_p50_us: f64,
    pub latency_p95_us: f64,
    pub latency_p99_us: f64,
    pub compute_p50_us: f64,
    /// Eq. 1 at the median: latency p50 − compute p50.
    pub residual_p50_us: f64,
}

/// Where the profile is: the load and caller, and the next request id.
struct Place<'a> {
    load: &'a str,
    caller: &'a str,
    next_id: &'a mut u64,
}

/// Profiles one task on one endpoint into `measured`; an error is the failure that stops the
/// profile (a lost call is counted and skipped, [`LOST_IN_A_ROW`] in a row stop it).
fn profile_cell(
    spec: &ProfileSpec,
    endpoint: &mut dyn Domain,
    task: Task,
    place: &mut Place<'_>,
    session: &mut Session,
    measured: &mut Measured,
) -> Result<()> {
    let mut lost_in_a_row = 0;
    for index in 0..spec.warmup + spec.samples {
        let request_id = *place.next_id;
        *place.next_id += 1;
        let request = random_request(task, spec.seed ^ request_id);
        // The request id numbers the sample (and seeds its input); the wire carries a session id
        // no other client uses (see qf_execution::session). A request the MCU refused without
        // running it (STALE twice, DUPLICATE) stops the profile: it is no sample.
        let invocation = match session.invoke(endpoint, task, &request) {
            Ok(answered) => answered.invocation,
            Err(error) if is_no_reply(&error) && lost_in_a_row + 1 < LOST_IN_A_ROW => {
                lost_in_a_row += 1;
                measured.lost.push(LostCall {
                    task: task.name().into(),
                    domain: endpoint.id(),
                    load: place.load.into(),
                    caller: place.caller.into(),
                    request_id,
                    reason: format!("{error:#}"),
                });
                continue;
            }
            Err(error) => {
                let error = if is_no_reply(&error) {
                    error.context(format!("{LOST_IN_A_ROW} calls in a row got no reply"))
                } else {
                    error
                };
                return Err(error.context(format!(
                    "the profile stopped at sample {request_id} of `{}` on {} (load {}, caller {})",
                    task.name(),
                    endpoint.id(),
                    place.load,
                    place.caller
                )));
            }
        };
        lost_in_a_row = 0;
        if index < spec.warmup {
            continue;
        }
        let ok = outcome_ok(task, &request, invocation.frame()).unwrap_or(false);
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        let segment =
            |pick: fn(&Split) -> Duration| invocation.dispatch.map_or(f64::NAN, |s| us(pick(&s)));
        measured.observations.push(Observation {
            task: task.name().into(),
            domain: endpoint.id(),
            load: place.load.into(),
            caller: place.caller.into(),
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
    Ok(())
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
        lost: 0,
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
                let measured = std::thread::spawn(move || -> Measured {
                    let mut measured = Measured::default();
                    if let Err(error) = set_scheduling(0, caller.scheduling()) {
                        measured.stopped =
                            Some(anyhow::Error::new(error).context("applying the caller policy"));
                        return measured;
                    }
                    let mut next_id = thread_first_id;
                    let mut session = Session::from_clock();
                    let mut place = Place {
                        load: &load_name,
                        caller: caller.as_str(),
                        next_id: &mut next_id,
                    };
                    let mut run = || -> Result<()> {
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
                                profile_cell(
                                    &spec,
                                    endpoint.as_mut(),
                                    task,
                                    &mut place,
                                    &mut session,
                                    &mut measured,
                                )?;
                                bar_thread.inc(1);
                            }
                        }
                        Ok(())
                    };
                    measured.stopped = run().err();
                    set_scheduling(0, Scheduling::Other).ok();
                    measured
                })
                .join()
                .map_err(|_| anyhow::anyhow!("the measuring thread panicked"))?;
                summaries.extend(self.write_cell(load.name(), caller, &measured)?);
                if let Some(error) = measured.stopped {
                    bar.finish_and_clear();
                    return Err(error.context(format!(
                        "qf profile stopped; the {} samples measured before (and {} lost calls) \
                         are written under {}",
                        measured.observations.len(),
                        measured.lost.len(),
                        self.out.join("profile").display()
                    )));
                }
            }
        }
        bar.finish_and_clear();
        Ok(summaries)
    }

    fn write_cell(
        &self,
        load: &str,
        caller: CallerPolicy,
        measured: &Measured,
    ) -> Result<Vec<CellSummary>> {
        let observations = &measured.observations;
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
        let lost_path = raw_dir.join("lost.csv");
        let mut writer = csv::WriterBuilder::new()
            .has_headers(false)
            .from_path(&lost_path)
            .with_context(|| format!("creating {}", lost_path.display()))?;
        writer.write_record(["task", "domain", "load", "caller", "request_id", "reason"])?;
        for lost in &measured.lost {
            writer.serialize(lost)?;
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
                let lost = measured
                    .lost
                    .iter()
                    .filter(|l| l.domain == domain && l.task == task.name())
                    .count();
                // A cell the profile never reached (it stopped before) has no trace.
                if cell.is_empty() && lost == 0 {
                    continue;
                }
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
                summaries
                    .extend(summarize(&cell, self.min_samples).map(|s| CellSummary { lost, ..s }));
            }
        }
        Ok(summaries)
    }
}

/// Prints summaries as an aligned table.
pub fn print_summaries(out: &mut impl Write, summaries: &[CellSummary]) -> std::io::Result<()> {
    writeln!(
        out,
        "{:<9} {:<6} {:<5} {:<9} {:>7} {:>5} {:>6} {:>5} {:>10} {:>10} {:>10} {:>11} {:>12}",
        "task",
        "domain",
        "load",
        "caller",
        "samples",
        "valid",
        "wrong",
        "lost",
        "p50 us",
        "p95 us",
        "p99 us",
        "compute p50",
        "residual p50"
    )?;
    for s in summaries {
        writeln!(
            out,
            "{:<9} {:<6} {:<5} {:<9} {:>7} {:>5} {:>6} {:>5} {:>10.2} {:>10.2} {:>10.2} {:>11.2} {:>12.2}",
            s.task, s.domain.as_str(), s.load, s.caller, s.samples, s.valid, s.wrong_outputs, s.lost, s.latency_p50_us, s.latency_p95_us, s.latency_p99_us, s.compute_p50_us, s.residual_p50_us
        )?;
    }
    Ok(())
}
