//! A removed `journal.anchor` is said so: in `qf status`, on qfabricd's standard error and in
//! the journal, with the records nothing vouched for.

mod common;

use common::{journal_entries, wait_for, write_config, Live};
use qf_agent::daemon::query_status;
use std::time::Duration;

/// The daemon restarted on an unkeyed journal whose anchor was removed: before, it wrote a new
/// anchor vouching for whatever the journal held, and `qf status` showed nothing amiss.
#[test]
fn a_removed_anchor_is_a_warning_in_qf_status() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let config = write_config(root, "linux", "", "");
    let socket = root.join("run/qfabricd.sock");
    let daemon = Live::spawn(&config);
    wait_for(Duration::from_secs(30), "the first run", || {
        query_status(&socket).is_ok_and(|s| s.observations > 0)
    });
    let status = query_status(&socket).unwrap();
    assert_eq!(status.journal_anchor_missing, None);
    assert!(!status.journal_keyed);
    daemon.stop();
    let journal = root.join("state/decisions.jsonl");
    let records = journal_entries(&journal).len() as u64;
    std::fs::remove_file(root.join("state/journal.anchor")).unwrap();

    let daemon = Live::spawn(&config);
    wait_for(Duration::from_secs(30), "the second run", || {
        query_status(&socket).is_ok()
    });
    let status = query_status(&socket).unwrap();
    assert_eq!(status.journal_anchor_missing, Some(records));
    let mut text = Vec::new();
    qf_agent::cli::status::print_status(&status, false, &mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains(&format!(
            "WARNING: the journal's anchor {} was missing while the journal held {records} record(s)",
            root.join("state/journal.anchor").display()
        )),
        "{text}"
    );
    daemon.stop();
    let entries = journal_entries(&journal);
    let report = entries
        .iter()
        .find(|e| e["event"] == "anchor_missing")
        .expect("the missing anchor journaled");
    assert_eq!(report["records"], records);
}
