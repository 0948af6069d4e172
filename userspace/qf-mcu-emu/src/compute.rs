//! How long the emulated MCU computes. The emulator runs the task kernels on the host, which is
//! far faster than a Cortex-M33 — and, on the virtual board, faster than the Linux guest under
//! QEMU's TCG — so by itself it would make the MCU look fast. The `paper-m33` model stretches
//! every served kernel to the compute time the QFabric paper measured on its Cortex-M33 (STM32U585
//! on the Arduino UNO Q, Table V, p50, inside the MCU executor), by busy-waiting as the MCU would
//! be busy; a kernel the host runs slower than that keeps the host's time. Tasks the paper did
//! not measure keep the host's time too.

use std::time::{Duration, Instant};

use qf_tasks::Task;

/// The MCU's compute-time model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ComputeModel {
    /// The host's own speed.
    Host,
    /// The paper's Cortex-M33 (Table V compute p50).
    PaperM33,
}

impl ComputeModel {
    /// `host` or `paper-m33`.
    pub fn parse(text: &str) -> Result<ComputeModel, String> {
        match text {
            "host" => Ok(ComputeModel::Host),
            "paper-m33" => Ok(ComputeModel::PaperM33),
            other => Err(format!(
                "compute model '{other}': expected 'host' or 'paper-m33'"
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ComputeModel::Host => "host",
            ComputeModel::PaperM33 => "paper-m33",
        }
    }

    /// The compute time the modelled MCU takes for `task`, of which the host took `host_ns`.
    pub fn target_ns(self, task: Option<Task>, host_ns: u64) -> u64 {
        let modelled = match (self, task) {
            (ComputeModel::PaperM33, Some(task)) => paper_m33_p50_ns(task),
            _ => None,
        };
        modelled.map_or(host_ns, |ns| ns.max(host_ns))
    }

    /// Busy-waits until the kernel that ran for `host_ns` (ending now) has taken the modelled
    /// time, and returns that time.
    pub fn stretch(self, task: Option<Task>, host_ns: u64) -> u64 {
        let target = self.target_ns(task, host_ns);
        let until = Instant::now() + Duration::from_nanos(target - host_ns);
        while Instant::now() < until {
            std::hint::spin_loop();
        }
        target
    }
}

/// The paper's Table V, MCU compute p50 in µs: add 0.8, CRC-32 26.9, FIR×1 52.4, FIR×64 3231.2,
/// FIR×512 25842.1.
fn paper_m33_p50_ns(task: Task) -> Option<u64> {
    let us = match task {
        Task::Add => 0.8,
        Task::Crc32 => 26.9,
        Task::FirX1 => 52.4,
        Task::FirX64 => 3231.2,
        Task::FirX512 => 25842.1,
        Task::AbiProbe => return None,
    };
    Some((us * 1000.0_f64).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_paper_model_takes_table_v_unless_the_host_was_slower() {
        let m = ComputeModel::PaperM33;
        assert_eq!(m.target_ns(Some(Task::Crc32), 1_000), 26_900);
        assert_eq!(m.target_ns(Some(Task::FirX512), 1_000), 25_842_100);
        assert_eq!(m.target_ns(Some(Task::Add), 5_000), 5_000, "host slower");
        assert_eq!(
            m.target_ns(Some(Task::AbiProbe), 700),
            700,
            "not in the paper"
        );
        assert_eq!(
            m.target_ns(None, 300),
            300,
            "rejected before any kernel ran"
        );
        assert_eq!(ComputeModel::Host.target_ns(Some(Task::FirX64), 9), 9);
    }

    #[test]
    fn stretching_busy_waits_at_least_the_difference() {
        let start = Instant::now();
        assert_eq!(
            ComputeModel::PaperM33.stretch(Some(Task::FirX1), 400),
            52_400
        );
        assert!(start.elapsed() >= Duration::from_nanos(52_000));
    }

    #[test]
    fn models_parse_by_name_and_bad_names_are_named() {
        for m in [ComputeModel::Host, ComputeModel::PaperM33] {
            assert_eq!(ComputeModel::parse(m.name()), Ok(m));
        }
        assert!(ComputeModel::parse("m4").unwrap_err().contains("'m4'"));
    }
}
