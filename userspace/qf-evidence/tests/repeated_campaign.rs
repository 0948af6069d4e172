//! `qf report` on a repeated campaign (`scripts/viii-a --runs N [--host-load K]`): four runs
//! written as the harness writes them, two without host load and two with two spinners, whose
//! Eq. (1) verdicts are known by construction. The combined report must mark each cell stable or
//! not per host-load setting, say which cells change under host load, and give each run's host
//! conditions from its /proc copies.

use qf_evidence::report::generate;
use qf_evidence::stats::Bootstrap;
use std::fmt::Write as _;
use std::path::Path;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// 200 latencies around `base` µs, spread by 10%.
fn trace(base: f64) -> String {
    let mut text = String::from("latency_us,ok\n");
    for i in 0..200 {
        let _ = writeln!(text, "{},1", base * (1.0 + f64::from(i % 20) / 200.0));
    }
    text
}

/// One run: per cell (load, workload) the Linux and MCU base latencies, and the host's records.
/// (load, workload, Linux base µs, MCU base µs).
type Cell = (&'static str, &'static str, f64, f64);

fn run(dir: &Path, cells: &[Cell], spinners: u32, stat: [&str; 2]) {
    for (load, workload, linux, mcu) in cells {
        let cell = dir.join("traces").join(load).join("ordinary");
        write(&cell.join(format!("{workload}.linux.csv")), &trace(*linux));
        write(&cell.join(format!("{workload}.mcu.csv")), &trace(*mcu));
    }
    write(&dir.join("host/spinners"), &format!("{spinners}\n"));
    write(
        &dir.join("host/before/loadavg"),
        "0.50 0.40 0.30 2/200 100\n",
    );
    write(
        &dir.join("host/after/loadavg"),
        "2.50 1.40 0.80 4/210 200\n",
    );
    write(&dir.join("host/before/stat"), stat[0]);
    write(&dir.join("host/after/stat"), stat[1]);
    write(
        &dir.join("mcu.txt"),
        "mcu: emulator (qf-mcu-emu)\ntime: compute model paper-m33\n",
    );
}

fn rows(path: &Path) -> Vec<Vec<String>> {
    csv::Reader::from_path(path)
        .unwrap()
        .records()
        .map(|r| r.unwrap().iter().map(str::to_string).collect())
        .collect()
}

#[test]
fn stability_per_cell_and_setting_and_what_host_load_changes() {
    let dir = tempfile::tempdir().unwrap();
    let stat = [
        "cpu  1000 0 500 8000 100 0 0 0 0 0\n",
        // 2000 ticks later: 1000 idle+iowait, 100 stolen: 50% busy, 5% steal.
        "cpu  1700 0 700 9000 100 0 0 100 0 0\n",
    ];
    // idle/add: MCU better everywhere (stable, unchanged by host load).
    // cpu/add: MCU better without host load, Linux better with it (flips).
    // idle/crc32: MCU better in run 1, not separable in run 2; Linux better in runs 3 and 4.
    // rt/add: Linux better in runs 1 and 2, MCU better in run 3, missing from run 4.
    let runs: [(&[Cell], u32); 4] = [
        (
            &[
                ("idle", "add", 100.0, 50.0),
                ("cpu", "add", 400.0, 100.0),
                ("idle", "crc32", 100.0, 50.0),
                ("rt", "add", 100.0, 300.0),
            ],
            0,
        ),
        (
            &[
                ("idle", "add", 100.0, 50.0),
                ("cpu", "add", 400.0, 100.0),
                ("idle", "crc32", 100.0, 100.0),
                ("rt", "add", 100.0, 300.0),
            ],
            0,
        ),
        (
            &[
                ("idle", "add", 100.0, 50.0),
                ("cpu", "add", 100.0, 400.0),
                ("idle", "crc32", 50.0, 100.0),
                ("rt", "add", 300.0, 100.0),
            ],
            2,
        ),
        (
            &[
                ("idle", "add", 100.0, 50.0),
                ("cpu", "add", 100.0, 400.0),
                ("idle", "crc32", 50.0, 100.0),
            ],
            2,
        ),
    ];
    for (index, (cells, spinners)) in runs.iter().enumerate() {
        run(
            &dir.path().join(format!("run-{}", index + 1)),
            cells,
            *spinners,
            stat,
        );
    }
    let bootstrap = Bootstrap::new(
        200,
        qf_evidence::stats::BOOTSTRAP_BLOCK,
        qf_evidence::stats::DEFAULT_SEED,
    )
    .unwrap();
    generate(dir.path(), bootstrap, false).unwrap();
    let report = dir.path().join("report");

    // Each run has its own report.
    for run in 1..=4 {
        assert!(dir
            .path()
            .join(format!("run-{run}/report/boundary.csv"))
            .exists());
    }

    // (spinners, load, workload) -> (verdicts, stable)
    let stability = rows(&report.join("stability.csv"));
    let find = |spinners: &str, load: &str, workload: &str| {
        let row = stability
            .iter()
            .find(|r| r[0] == spinners && r[1] == load && r[3] == workload)
            .unwrap_or_else(|| panic!("no stability row {spinners} {load} {workload}"));
        (row[5].clone(), row[6].clone())
    };
    assert_eq!(stability.len(), 8, "4 cells x 2 settings: {stability:?}");
    assert_eq!(
        find("0", "idle", "add"),
        ("MCU better (1, 2)".into(), "yes: MCU better".into())
    );
    assert_eq!(
        find("2", "cpu", "add"),
        ("Linux better (3, 4)".into(), "yes: Linux better".into())
    );
    assert_eq!(
        find("0", "idle", "crc32"),
        ("MCU better (1); not separable (2)".into(), "no".into())
    );
    assert_eq!(
        find("2", "rt", "add"),
        ("MCU better (3); missing (4)".into(), "no".into())
    );
    let idle_add = stability
        .iter()
        .find(|r| r[0] == "0" && r[1] == "idle" && r[3] == "add")
        .unwrap();
    assert_eq!(idle_add[4], "2", "runs in the setting");
    assert!(idle_add[9].starts_with("0.5"), "mcu/linux {}", idle_add[9]);

    let host_load = rows(&report.join("host_load.csv"));
    let change = |load: &str, workload: &str| {
        let row = host_load
            .iter()
            .find(|r| r[0] == load && r[2] == workload)
            .unwrap();
        (row[3].clone(), row[6].clone())
    };
    assert_eq!(change("idle", "add"), ("0 → 2".into(), "no".into()));
    assert_eq!(change("cpu", "add").1, "yes: another verdict");
    assert_eq!(change("idle", "crc32").1, "unstable without host load");
    assert_eq!(change("rt", "add").1, "yes: no longer stable");

    let host = rows(&report.join("host.csv"));
    assert_eq!(host.len(), 4);
    assert_eq!(
        host[2][..6],
        ["3", "2", "0.50 0.40 0.30", "2.50 1.40 0.80", "50.0", "5.00"]
    );
    // Run 1: idle/add, cpu/add and idle/crc32 MCU better, rt/add Linux better.
    assert_eq!(host[0][6..], ["3", "1", "0"]);

    let index = std::fs::read_to_string(report.join("README.md")).unwrap();
    assert!(index.contains("4 runs"), "{index}");
    assert!(index.contains("- mcu: emulator (qf-mcu-emu)"), "{index}");
    let digests = std::fs::read_to_string(report.join("inputs.sha256")).unwrap();
    assert!(digests.contains("run-4/host/after/stat"), "{digests}");
    assert!(digests.contains("run-1/traces/idle/ordinary/add.mcu.csv"));
}

#[test]
fn a_run_without_host_records_is_named_in_the_error() {
    let dir = tempfile::tempdir().unwrap();
    run(
        &dir.path().join("run-1"),
        &[("idle", "add", 100.0, 50.0)],
        0,
        ["cpu  1 0 0 1 0 0 0 0\n", "cpu  2 0 0 2 0 0 0 0\n"],
    );
    std::fs::remove_file(dir.path().join("run-1/host/after/loadavg")).unwrap();
    let error = generate(dir.path(), Bootstrap::default(), false).unwrap_err();
    assert!(
        format!("{error:#}").contains("run-1/host/after/loadavg"),
        "{error:#}"
    );
    std::fs::write(dir.path().join("run-1/host/after/loadavg"), "1 2 3\n").unwrap();
    std::fs::write(
        dir.path().join("run-1/host/after/stat"),
        "cpu  0 0 0 0 0 0 0 0\n",
    )
    .unwrap();
    let error = generate(dir.path(), Bootstrap::default(), false).unwrap_err();
    assert!(format!("{error:#}").contains("went backwards"), "{error:#}");
}
