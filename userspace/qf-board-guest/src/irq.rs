//! `irq-fifo`: sets the scheduling of a threaded interrupt handler's kernel thread
//! (`irq/<N>-<name>`), which the kernel starts at SCHED_FIFO 50. The Section VIII-A harness uses
//! it to ask whether the MCU path's tail under a SCHED_FIFO load is the interrupt thread waiting
//! behind that load (busybox has no `chrt`).

use std::path::Path;

use anyhow::{bail, Context, Result};

/// The pids of the kernel threads named `irq/<N>-<name>`, from `/proc/<pid>/comm` under `proc`.
pub fn irq_threads(proc: &Path, name: &str) -> Result<Vec<i32>> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir(proc).with_context(|| format!("read {}", proc.display()))? {
        let entry = entry?;
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        // A process may exit between the listing and the read: skip it.
        let Ok(comm) = std::fs::read_to_string(entry.path().join("comm")) else {
            continue;
        };
        let comm = comm.trim_end();
        if comm
            .strip_prefix("irq/")
            .and_then(|rest| rest.split_once('-'))
            .is_some_and(|(number, thread)| {
                !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()) && thread == name
            })
        {
            pids.push(pid);
        }
    }
    pids.sort_unstable();
    Ok(pids)
}

/// Puts every `irq/<N>-<name>` thread at SCHED_FIFO `priority` and prints what it did.
pub fn set_fifo(name: &str, priority: u64) -> Result<()> {
    if !(1..=99).contains(&priority) {
        bail!("--priority {priority}: SCHED_FIFO priorities are 1..=99");
    }
    let pids = irq_threads(Path::new("/proc"), name)?;
    if pids.is_empty() {
        bail!("no kernel thread irq/<N>-{name} (is the driver that requests it loaded?)");
    }
    for &pid in &pids {
        let param = libc::sched_param {
            sched_priority: priority as libc::c_int,
        };
        // SAFETY: a plain system call on a pid with a valid sched_param.
        if unsafe { libc::sched_setscheduler(pid, libc::SCHED_FIFO, &param) } != 0 {
            bail!(
                "sched_setscheduler(irq/{name}, pid {pid}, SCHED_FIFO {priority}): {}",
                std::io::Error::last_os_error()
            );
        }
    }
    println!("irq-fifo: irq/*-{name} (pids {pids:?}) at SCHED_FIFO {priority}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_interrupt_threads_of_one_name_only() {
        let proc = tempfile::tempdir().unwrap();
        for (pid, comm) in [
            ("12", "irq/24-qfabric-vring\n"),
            ("13", "irq/25-qfabric-state\n"),
            ("14", "irq/26-qfabric-vring\n"),
            ("15", "qfabric-vring\n"),
            ("16", "irq/x-qfabric-vring\n"),
            ("self", "irq/24-qfabric-vring\n"),
        ] {
            std::fs::create_dir(proc.path().join(pid)).unwrap();
            std::fs::write(proc.path().join(pid).join("comm"), comm).unwrap();
        }
        std::fs::create_dir(proc.path().join("17")).unwrap(); // gone before its comm was read
        assert_eq!(
            irq_threads(proc.path(), "qfabric-vring").unwrap(),
            vec![12, 14]
        );
        assert!(irq_threads(proc.path(), "qfabric").unwrap().is_empty());
    }

    #[test]
    fn refuses_priorities_outside_sched_fifo() {
        assert!(set_fifo("qfabric-vring", 0)
            .unwrap_err()
            .to_string()
            .contains("1..=99"));
        assert!(set_fifo("qfabric-vring", 100)
            .unwrap_err()
            .to_string()
            .contains("100"));
    }
}
