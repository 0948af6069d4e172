//! The two tables that answer the QFabric paper's Section VIII-A for a campaign: does the
//! boundary of Eq. (1) move when the MCU is reached without a userspace relay, and what does
//! Linux interference still do to a resident chain? Read by `qf report` from the raw records:
//!
//! * `traces/<load>/<caller>/<workload>.<domain>.csv` → per load × caller × workload: p95 of
//!   each domain with its block-bootstrap CI, their ratio, Eq. (1)'s verdict (the MCU is better
//!   only if its whole CI lies below Linux's), and each domain's p99 added over idle (same
//!   caller) — the paper's finding was that load inflates the MCU path far more than Linux's;
//! * `resident/<load>/<caller>/observations.csv` (`qf resident observe`) → the chain's delivery
//!   delay percentiles, p99 added over idle, lost results and wrong outputs, and through
//!   `/dev/qfabricN` the delay's p99 up to the kernel having the result and the reader's wake-up
//!   after it.

use crate::resident::{summarize, ResultObservation};
use crate::stats::{percentile, Bootstrap, Estimate};
use crate::synthetic::{LOADS, WORKLOADS};
use crate::table::{ms, read_csv, Table};
use crate::traces::{trace_file_name, Trace};
use anyhow::Result;
use qf_decision::model::DomainId;
use qf_execution::rt::CallerPolicy;
use std::path::{Path, PathBuf};

/// Eq. (1) at p95 with the intervals: the MCU path is better only when its interval lies wholly
/// below Linux's, worse when wholly above.
pub fn verdict(linux: &Estimate, mcu: &Estimate) -> &'static str {
    if mcu.ci_high < linux.ci_low {
        "MCU better"
    } else if mcu.ci_low > linux.ci_high {
        "Linux better"
    } else {
        "not separable"
    }
}

/// What the table needs of one trace.
#[derive(Debug, Clone, Copy)]
struct TraceFigures {
    p95: Estimate,
    p99: f64,
    wrong: usize,
}

/// p95 with CI, p99 and wrong outputs of one trace, `None` if absent or empty.
fn trace_figures(
    path: &Path,
    bootstrap: Bootstrap,
    inputs: &mut Vec<PathBuf>,
) -> Result<Option<TraceFigures>> {
    if !path.exists() {
        return Ok(None);
    }
    let trace = Trace::load(path)?;
    inputs.push(path.to_owned());
    let latencies = trace.latencies();
    let wrong = trace.samples.iter().filter(|s| !s.ok).count();
    Ok(bootstrap
        .percentile_ci(&latencies, 0.95)
        .zip(percentile(&latencies, 0.99))
        .map(|(p95, p99)| TraceFigures { p95, p99, wrong }))
}

/// One cell of the Eq. (1) table: both domains' figures and the verdict.
#[derive(Debug, Clone)]
pub struct BoundaryCell {
    pub load: &'static str,
    pub caller: &'static str,
    pub workload: &'static str,
    pub linux: Estimate,
    pub mcu: Estimate,
    pub verdict: &'static str,
    /// Each domain's p99 added over idle (same caller and workload), µs; `None` without idle.
    pub p99_added: [Option<f64>; 2],
    /// Wrong outputs, Linux then MCU.
    pub wrong: [usize; 2],
}

/// Eq. (1) per load × caller × workload, where both domains were measured, in table order.
pub fn boundary_cells(
    traces: &Path,
    bootstrap: Bootstrap,
    inputs: &mut Vec<PathBuf>,
) -> Result<Vec<BoundaryCell>> {
    let mut cells = Vec::new();
    for caller in CallerPolicy::ALL.map(CallerPolicy::as_str) {
        for workload in WORKLOADS {
            let mut idle_p99 = [None; 2];
            for load in LOADS {
                let dir = traces.join(load).join(caller);
                let mut both = Vec::new();
                for domain in DomainId::ALL {
                    let path = dir.join(trace_file_name(workload, domain));
                    both.push(trace_figures(&path, bootstrap, inputs)?);
                }
                let (Some(linux), Some(mcu)) = (both[0], both[1]) else {
                    continue;
                };
                if load == "idle" {
                    idle_p99 = [Some(linux.p99), Some(mcu.p99)];
                }
                cells.push(BoundaryCell {
                    load,
                    caller,
                    workload,
                    linux: linux.p95,
                    mcu: mcu.p95,
                    verdict: verdict(&linux.p95, &mcu.p95),
                    p99_added: [
                        idle_p99[0].map(|idle| linux.p99 - idle),
                        idle_p99[1].map(|idle| mcu.p99 - idle),
                    ],
                    wrong: [linux.wrong, mcu.wrong],
                });
            }
        }
    }
    Ok(cells)
}

/// Eq. (1) per load × caller × workload, where both domains were measured.
pub fn boundary_table(
    traces: &Path,
    bootstrap: Bootstrap,
    inputs: &mut Vec<PathBuf>,
) -> Result<Option<Table>> {
    let mut table = Table::new(
        "Section VIII-A: Eq. (1) per call, Linux vs MCU (ms; p95 with 95% block-bootstrap CI; p99 added over idle, same caller)",
        &[
            "load",
            "caller",
            "workload",
            "linux p95",
            "linux CI",
            "mcu p95",
            "mcu CI",
            "mcu/linux",
            "Eq. (1) at p95",
            "linux p99 added",
            "mcu p99 added",
            "wrong linux/mcu",
        ],
    );
    for cell in boundary_cells(traces, bootstrap, inputs)? {
        let (linux, mcu) = (cell.linux, cell.mcu);
        let added = |added: Option<f64>| added.map_or("n/a".into(), ms);
        table.rows.push(vec![
            cell.load.to_string(),
            cell.caller.to_string(),
            cell.workload.to_string(),
            ms(linux.value),
            format!("{}–{}", ms(linux.ci_low), ms(linux.ci_high)),
            ms(mcu.value),
            format!("{}–{}", ms(mcu.ci_low), ms(mcu.ci_high)),
            format!("{:.2}", mcu.value / linux.value),
            cell.verdict.to_string(),
            added(cell.p99_added[0]),
            added(cell.p99_added[1]),
            format!("{}/{}", cell.wrong[0], cell.wrong[1]),
        ]);
    }
    Ok((!table.rows.is_empty()).then_some(table))
}

/// A resident chain's delivery delay per load × caller.
pub fn resident_table(
    root: &Path,
    bootstrap: Bootstrap,
    inputs: &mut Vec<PathBuf>,
) -> Result<Option<Table>> {
    let mut table = Table::new(
        "Section VIII-A: resident chain, results read from Linux (ms; delay over the fastest delivery, p95 with 95% CI; p99 added over idle, same caller)",
        &[
            "load",
            "caller",
            "results",
            "lost",
            "wrong",
            "delay p50",
            "delay p95",
            "p95 CI",
            "delay p99",
            "p99 added",
            "kernel delay p99",
            "reader wake p99",
        ],
    );
    for caller in CallerPolicy::ALL.map(CallerPolicy::as_str) {
        let mut idle_p99 = None;
        for load in LOADS {
            let path = root.join(load).join(caller).join("observations.csv");
            if !path.exists() {
                continue;
            }
            let rows: Vec<ResultObservation> = read_csv(&path)?;
            inputs.push(path);
            let delays: Vec<f64> = rows.iter().map(|r| r.delay_us).collect();
            let Some(p95) = bootstrap.percentile_ci(&delays, 0.95) else {
                continue;
            };
            let summary = summarize(load, caller, &rows);
            let p99 = summary.delay_p99_us;
            if load == "idle" {
                idle_p99 = Some(p99);
            }
            table.rows.push(vec![
                load.to_string(),
                caller.to_string(),
                summary.results.to_string(),
                summary.lost.to_string(),
                summary.wrong_outputs.to_string(),
                ms(summary.delay_p50_us),
                ms(p95.value),
                format!("{}–{}", ms(p95.ci_low), ms(p95.ci_high)),
                ms(p99),
                idle_p99.map_or("n/a".into(), |i| ms(p99 - i)),
                split_p99(&rows, |r| r.kernel_delay_us),
                split_p99(&rows, |r| r.wake_us),
            ]);
        }
    }
    Ok((!table.rows.is_empty()).then_some(table))
}

/// p99 of a split column, `n/a` when the cell's transport gave no kernel times.
fn split_p99(rows: &[ResultObservation], column: fn(&ResultObservation) -> f64) -> String {
    let values: Vec<f64> = rows.iter().map(column).filter(|v| v.is_finite()).collect();
    percentile(&values, 0.99).map_or("n/a".into(), ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn estimate(value: f64, low: f64, high: f64) -> Estimate {
        Estimate {
            value,
            ci_low: low,
            ci_high: high,
        }
    }

    #[test]
    fn eq1_needs_the_whole_interval_on_one_side() {
        let linux = estimate(100.0, 90.0, 110.0);
        assert_eq!(verdict(&linux, &estimate(50.0, 40.0, 89.0)), "MCU better");
        assert_eq!(
            verdict(&linux, &estimate(200.0, 111.0, 300.0)),
            "Linux better"
        );
        assert_eq!(
            verdict(&linux, &estimate(95.0, 80.0, 105.0)),
            "not separable"
        );
    }

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn the_tables_come_from_the_raw_records_with_added_tails_over_idle() {
        let dir = std::env::temp_dir().join(format!("qf-boundary-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let trace = |values: &[f64]| {
            let mut text = String::from("latency_us,ok\n");
            for v in values {
                text += &format!("{v},{}\n", u8::from(*v != 1990.0));
            }
            text
        };
        let fast: Vec<f64> = (0..100).map(|i| 100.0 + f64::from(i)).collect();
        let slow: Vec<f64> = (0..100).map(|i| 1000.0 + 10.0 * f64::from(i)).collect();
        for load in ["idle", "rt"] {
            let d = dir.join("traces").join(load).join("ordinary");
            write(
                &d.join(trace_file_name("add", DomainId::Linux)),
                &trace(&fast),
            );
            let mcu = if load == "idle" { &fast } else { &slow };
            write(&d.join(trace_file_name("add", DomainId::Mcu)), &trace(mcu));
        }
        let bootstrap = Bootstrap::new(
            200,
            crate::stats::BOOTSTRAP_BLOCK,
            crate::stats::DEFAULT_SEED,
        )
        .unwrap();
        let mut inputs = Vec::new();
        let table = boundary_table(&dir.join("traces"), bootstrap, &mut inputs)
            .unwrap()
            .unwrap();
        assert_eq!(table.rows.len(), 2);
        let rt = &table.rows[1];
        assert_eq!(&rt[..3], ["rt", "ordinary", "add"]);
        assert_eq!(rt[8], "Linux better");
        assert_eq!(rt[9], "0.000", "Linux's tail did not move");
        // The MCU's p99 moved from 198.01 µs to 1980.1 µs.
        assert_eq!(rt[10], "1.782");
        assert_eq!(rt[11], "0/1", "one wrong MCU output under rt");
        assert_eq!(inputs.len(), 4);

        let results = |delays: &[f64]| {
            let mut text = String::from("load,caller,invocation_id,arrival_us,delay_us,ok\n");
            for (i, d) in delays.iter().enumerate() {
                let id = if i == 2 { 10 + i + 1 } else { 10 + i };
                text += &format!("x,ordinary,{id},{},{d},{}\n", i * 10_000, i != 0);
            }
            text
        };
        write(
            &dir.join("resident/idle/ordinary/observations.csv"),
            &results(&[0.0, 100.0, 200.0]),
        );
        write(
            &dir.join("resident/cpu/ordinary/observations.csv"),
            &results(&[0.0, 5000.0, 9000.0]),
        );
        let table = resident_table(&dir.join("resident"), bootstrap, &mut inputs)
            .unwrap()
            .unwrap();
        let rows: Vec<&[String]> = table.rows.iter().map(|r| &r[..5]).collect();
        assert_eq!(rows[0], ["idle", "ordinary", "3", "1", "1"]);
        assert_eq!(rows[1], ["cpu", "ordinary", "3", "1", "1"]);
        assert_eq!(table.rows[1][9], ms(8920.0 - 198.0));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
