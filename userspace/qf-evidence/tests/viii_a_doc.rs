//! `docs/viii-a.md` quotes the Section VIII-A tables in the form `scripts/viii-a` prints them
//! (`qf report`'s `report/boundary.md`, `dispatch.md`, `resident.md`). This test writes a small
//! campaign with every input those tables read, generates the report, and checks that each table
//! the doc quotes is the one the report writes under that file name, with the same title and
//! columns, and that the doc quotes all three. The same for the tables of a repeated campaign
//! (`scripts/viii-a --runs N --host-load K`: `stability.md`, `host.md`, `host_load.md`), from two
//! such campaigns as runs, one with host spinners.

use qf_evidence::report::generate;
use qf_evidence::stats::Bootstrap;
use std::fmt::Write as _;
use std::path::Path;

const TABLES: [&str; 3] = ["boundary", "dispatch", "resident"];
const RUN_TABLES: [&str; 3] = ["stability", "host", "host_load"];

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A campaign with one cell of each input: traces of both domains, kernel-dispatched MCU profile
/// observations with their split, and a resident chain's results with the kernel's times.
fn campaign(dir: &Path) {
    let cell = dir.join("traces/idle/ordinary");
    for (domain, base) in [("linux", 100.0), ("mcu", 150.0)] {
        let mut text = String::from("latency_us,ok\n");
        for i in 0..120 {
            let _ = writeln!(text, "{},1", base + f64::from(i));
        }
        write(&cell.join(format!("add.{domain}.csv")), &text);
    }
    let mut text = String::from(
        "task,domain,load,caller,request_id,latency_us,compute_us,ok,entry_us,send_us,remote_us,wake_us,exit_us\n",
    );
    for i in 0..50 {
        let _ = writeln!(
            text,
            "add,mcu,idle,ordinary,{i},{},1.0,true,1.0,10.0,{},12.0,1.0",
            70.0 + f64::from(i),
            45.0 + f64::from(i)
        );
    }
    write(&dir.join("profile/idle/ordinary/observations.csv"), &text);
    let mut text =
        String::from("load,caller,invocation_id,arrival_us,delay_us,ok,kernel_delay_us,wake_us\n");
    for i in 0..50u32 {
        let _ = writeln!(
            text,
            "idle,ordinary,{i},{},{},true,{},5.0",
            i * 10_000,
            f64::from(i % 7) * 10.0,
            f64::from(i % 5)
        );
    }
    write(&dir.join("resident/idle/ordinary/observations.csv"), &text);
}

/// `campaign` as run `run` of a repeated campaign, with the host's records.
fn run(dir: &Path, run: u32, spinners: u32) {
    let dir = dir.join(format!("run-{run}"));
    campaign(&dir);
    write(&dir.join("host/spinners"), &format!("{spinners}\n"));
    for when in ["before", "after"] {
        write(
            &dir.join("host").join(when).join("loadavg"),
            "0.1 0.2 0.3 1/100 7\n",
        );
    }
    write(&dir.join("host/before/stat"), "cpu  1 0 1 10 0 0 0 0 0 0\n");
    write(&dir.join("host/after/stat"), "cpu  5 0 2 20 0 0 0 1 0 0\n");
}

/// The doc's quoted tables: (file name, the quoted lines), each a fenced block right after a
/// line naming `report/NAME.md`.
fn quoted_tables(doc: &str) -> Vec<(String, Vec<String>)> {
    let lines: Vec<&str> = doc.lines().collect();
    let mut quoted = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].starts_with("```") && i > 0 {
            let name = lines[..i]
                .iter()
                .rev()
                .find(|l| !l.trim().is_empty())
                .and_then(|l| l.split("`report/").nth(1))
                .and_then(|rest| rest.split(".md`").next());
            let end = lines[i + 1..]
                .iter()
                .position(|l| l.starts_with("```"))
                .map(|p| i + 1 + p)
                .expect("an unclosed code block in docs/viii-a.md");
            if let Some(name) = name {
                let block = lines[i + 1..end].iter().map(|l| l.to_string()).collect();
                quoted.push((name.to_string(), block));
            }
            i = end;
        }
        i += 1;
    }
    quoted
}

#[test]
fn every_table_the_doc_quotes_is_one_the_report_writes_with_the_same_columns() {
    let dir = tempfile::tempdir().unwrap();
    campaign(dir.path());
    let bootstrap = Bootstrap::new(
        100,
        qf_evidence::stats::BOOTSTRAP_BLOCK,
        qf_evidence::stats::DEFAULT_SEED,
    )
    .unwrap();
    generate(dir.path(), bootstrap, false).unwrap();
    let repeated = tempfile::tempdir().unwrap();
    run(repeated.path(), 1, 0);
    run(repeated.path(), 2, 2);
    generate(repeated.path(), bootstrap, false).unwrap();

    let doc_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/viii-a.md");
    let doc = std::fs::read_to_string(&doc_path).unwrap();
    let quoted = quoted_tables(&doc);
    for table in TABLES.iter().chain(&RUN_TABLES) {
        assert!(
            quoted.iter().any(|(name, _)| name == table),
            "docs/viii-a.md does not quote report/{table}.md"
        );
    }
    for (name, block) in &quoted {
        let source = if TABLES.contains(&name.as_str()) {
            dir.path()
        } else if RUN_TABLES.contains(&name.as_str()) {
            repeated.path()
        } else {
            panic!("docs/viii-a.md quotes report/{name}.md, which scripts/viii-a does not print")
        };
        let written = std::fs::read_to_string(source.join(format!("report/{name}.md")))
            .unwrap_or_else(|e| panic!("the report wrote no {name}.md: {e}"));
        // Title, blank line, header row, separator: what the doc quotes of each table.
        let head: Vec<&str> = written.lines().take(4).collect();
        assert_eq!(
            block, &head,
            "docs/viii-a.md's quote of report/{name}.md differs from what the report writes"
        );
    }
}
