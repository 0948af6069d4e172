//! Where a kernel-dispatched MCU call's time goes, per load × caller × workload: the Section
//! VIII-A question behind the Eq. (1) table. When load inflates the MCU path, is it the MCU and
//! the transport (`remote`: up to the receive callback matching the reply, which includes the
//! scheduling of the thread running that callback) or the caller's own wake-up (`wake`)?
//!
//! Read by `qf report` from `profile/<load>/<caller>/observations.csv`, the MCU rows that carry
//! the kernel's split (`qf profile --mcu-dev`, [`qf_execution::qfabric_dev::Split`]).

use crate::profile::Observation;
use crate::stats::percentile;
use crate::synthetic::LOADS;
use crate::table::{ms, read_csv, Table};
use anyhow::Result;
use qf_decision::model::DomainId;
use qf_execution::rt::CallerPolicy;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The split's segments of one cell, in µs, one entry per call.
#[derive(Debug, Default)]
struct Segments {
    syscall: Vec<f64>,
    send: Vec<f64>,
    remote: Vec<f64>,
    wake: Vec<f64>,
}

impl Segments {
    fn push(&mut self, o: &Observation) {
        self.syscall.push(o.entry_us + o.exit_us);
        self.send.push(o.send_us);
        self.remote.push(o.remote_us);
        self.wake.push(o.wake_us);
    }
}

/// The table, `None` when no campaign cell has kernel-dispatched MCU calls.
pub fn dispatch_table(profile_root: &Path, inputs: &mut Vec<PathBuf>) -> Result<Option<Table>> {
    let mut table = Table::new(
        "Section VIII-A: where a kernel-dispatched MCU call's time goes (ms; /dev/qfabricN's timestamps: system call, send path, MCU + transport + receive callback, caller wake-up)",
        &[
            "load",
            "caller",
            "workload",
            "calls",
            "syscall p50",
            "send p50",
            "remote p50",
            "remote p99",
            "wake p50",
            "wake p99",
        ],
    );
    for caller in CallerPolicy::ALL.map(CallerPolicy::as_str) {
        for load in LOADS {
            let path = profile_root
                .join(load)
                .join(caller)
                .join("observations.csv");
            if !path.exists() {
                continue;
            }
            let mut cells: BTreeMap<String, Segments> = BTreeMap::new();
            for o in read_csv::<Observation>(&path)? {
                if o.domain == DomainId::Mcu && o.remote_us.is_finite() {
                    cells.entry(o.task.clone()).or_default().push(&o);
                }
            }
            if cells.is_empty() {
                continue;
            }
            inputs.push(path);
            for (workload, s) in cells {
                let p = |values: &[f64], q: f64| percentile(values, q).map_or("n/a".into(), ms);
                table.rows.push(vec![
                    load.to_string(),
                    caller.to_string(),
                    workload,
                    s.remote.len().to_string(),
                    p(&s.syscall, 0.5),
                    p(&s.send, 0.5),
                    p(&s.remote, 0.5),
                    p(&s.remote, 0.99),
                    p(&s.wake, 0.5),
                    p(&s.wake, 0.99),
                ]);
            }
        }
    }
    Ok((!table.rows.is_empty()).then_some(table))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn observation(domain: DomainId, remote_us: f64, wake_us: f64) -> Observation {
        Observation {
            task: "add".into(),
            domain,
            load: "rt".into(),
            caller: "ordinary".into(),
            request_id: 1,
            latency_us: 100.0,
            compute_us: f64::NAN,
            ok: true,
            entry_us: 1.0,
            send_us: 2.0,
            remote_us,
            wake_us,
            exit_us: 3.0,
        }
    }

    fn write(path: &Path, rows: &[Observation]) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut writer = csv::Writer::from_path(path).unwrap();
        for row in rows {
            writer.serialize(row).unwrap();
        }
        writer.flush().unwrap();
    }

    #[test]
    fn only_kernel_dispatched_mcu_calls_count_and_segments_come_out_in_ms() {
        let dir = tempfile::tempdir().unwrap();
        let mut rows: Vec<Observation> = (0..100)
            .map(|i| observation(DomainId::Mcu, 40.0, if i == 99 { 5000.0 } else { 10.0 }))
            .collect();
        // Linux rows and MCU rows without a split (rpmsg_char) are not this table's.
        rows.push(observation(DomainId::Linux, f64::NAN, f64::NAN));
        rows.push(observation(DomainId::Mcu, f64::NAN, f64::NAN));
        write(&dir.path().join("rt/ordinary/observations.csv"), &rows);
        let mut inputs = Vec::new();
        let table = dispatch_table(dir.path(), &mut inputs).unwrap().unwrap();
        assert_eq!(inputs.len(), 1);
        assert_eq!(table.rows.len(), 1);
        let row = &table.rows[0];
        assert_eq!(row[..4], ["rt", "ordinary", "add", "100"]);
        assert_eq!(row[4], "0.004", "entry + exit");
        assert_eq!(row[5], "0.002");
        assert_eq!(row[6], "0.040");
        assert_eq!(row[8], "0.010", "wake p50");
        assert!(
            row[9].parse::<f64>().unwrap() > 0.01,
            "wake p99 sees the outlier"
        );
    }

    #[test]
    fn campaigns_without_the_split_have_no_table_and_still_parse() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("idle/ordinary/observations.csv");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        // The columns before the split existed.
        std::fs::write(
            &path,
            "task,domain,load,caller,request_id,latency_us,compute_us,ok\nadd,mcu,idle,ordinary,1,90.0,NaN,true\n",
        )
        .unwrap();
        assert!(dispatch_table(dir.path(), &mut Vec::new())
            .unwrap()
            .is_none());
    }
}
