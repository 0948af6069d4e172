//! Built-in load conditions (the paper's Section VI-B): idle; CPU load (N SCHED_OTHER spinners);
//! RT contention (M SCHED_FIFO 80 workers at 50% duty in 10 ms slices). Every worker stops by
//! itself at its deadline, and earlier when the [`LoadGuard`] is dropped.

use crate::rt::{set_scheduling, Scheduling, RT_PRIORITY};
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// RT worker period and busy share of it.
pub const RT_PERIOD: Duration = Duration::from_millis(10);
pub const RT_BUSY: Duration = Duration::from_millis(5);

/// A load condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "kind")]
pub enum Load {
    Idle,
    Cpu { workers: usize },
    Rt { workers: usize },
}

impl Load {
    pub fn name(&self) -> &'static str {
        match self {
            Load::Idle => "idle",
            Load::Cpu { .. } => "cpu",
            Load::Rt { .. } => "rt",
        }
    }

    /// Parses `idle`, `cpu[:N]` (default 8 workers, as in the paper) or `rt[:M]` (default 4).
    pub fn parse(text: &str) -> Result<Load, String> {
        let (kind, count) = match text.split_once(':') {
            Some((kind, count)) => {
                let count = count.parse::<usize>().map_err(|_| {
                    format!("load `{text}`: worker count `{count}` is not a number")
                })?;
                (kind, Some(count))
            }
            None => (text, None),
        };
        match kind {
            "idle" if count.is_none() => Ok(Load::Idle),
            "cpu" => Ok(Load::Cpu {
                workers: count.unwrap_or(8),
            }),
            "rt" => Ok(Load::Rt {
                workers: count.unwrap_or(4),
            }),
            _ => Err(format!(
                "unknown load `{text}` (expected idle, cpu[:N] or rt[:M])"
            )),
        }
    }

    /// Starts the workers; they run at most `limit`.
    pub fn start(&self, limit: Duration) -> Result<LoadGuard> {
        let stop = Arc::new(AtomicBool::new(false));
        let deadline = Instant::now() + limit;
        let (count, rt) = match *self {
            Load::Idle => (0, false),
            Load::Cpu { workers } => (workers, false),
            Load::Rt { workers } => (workers, true),
        };
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let workers = (0..count)
            .map(|_| {
                let stop = stop.clone();
                let ready = ready_tx.clone();
                std::thread::spawn(move || {
                    if rt {
                        let result = set_scheduling(0, Scheduling::Fifo(RT_PRIORITY))
                            .map_err(|e| e.to_string());
                        let failed = result.is_err();
                        let _ = ready.send(result);
                        if failed {
                            return;
                        }
                        rt_worker(&stop, deadline);
                    } else {
                        let _ = ready.send(Ok(()));
                        spin_until(&stop, deadline);
                    }
                })
            })
            .collect();
        drop(ready_tx);
        let guard = LoadGuard { stop, workers };
        for _ in 0..count {
            if let Ok(Err(message)) = ready_rx.recv() {
                anyhow::bail!("starting the RT contention load: {message}");
            }
        }
        Ok(guard)
    }
}

fn spin_until(stop: &AtomicBool, deadline: Instant) {
    let mut x = 0u64;
    while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
        for _ in 0..1000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
}

fn rt_worker(stop: &AtomicBool, deadline: Instant) {
    while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
        let slice_start = Instant::now();
        spin_until(stop, (slice_start + RT_BUSY).min(deadline));
        let rest = RT_PERIOD.saturating_sub(slice_start.elapsed());
        std::thread::sleep(rest.min(deadline.saturating_duration_since(Instant::now())));
    }
}

/// Running load workers; dropping stops and joins them.
#[derive(Debug)]
pub struct LoadGuard {
    stop: Arc<AtomicBool>,
    workers: Vec<JoinHandle<()>>,
}

impl LoadGuard {
    pub fn workers(&self) -> usize {
        self.workers.len()
    }
}

impl Drop for LoadGuard {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for worker in self.workers.drain(..) {
            let _ = worker.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_parse_with_paper_defaults() {
        assert_eq!(Load::parse("idle"), Ok(Load::Idle));
        assert_eq!(Load::parse("cpu"), Ok(Load::Cpu { workers: 8 }));
        assert_eq!(Load::parse("rt:1"), Ok(Load::Rt { workers: 1 }));
        assert!(Load::parse("gpu").unwrap_err().contains("gpu"));
        assert!(Load::parse("cpu:x").unwrap_err().contains("`x`"));
    }

    #[test]
    fn workers_stop_by_themselves_at_their_deadline() {
        let started = Instant::now();
        let guard = Load::Cpu { workers: 1 }
            .start(Duration::from_millis(50))
            .unwrap();
        assert_eq!(guard.workers(), 1);
        // Nobody raises the stop flag: the worker must end on its own deadline.
        while !guard.workers.iter().all(|w| w.is_finished()) {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "the worker outlived its deadline"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(started.elapsed() >= Duration::from_millis(50));
        drop(guard);
    }

    #[test]
    fn an_rt_worker_runs_at_fifo_80_or_reports_the_privilege() {
        match (Load::Rt { workers: 1 }).start(Duration::from_millis(30)) {
            Ok(guard) => drop(guard),
            Err(error) => assert!(error.to_string().contains("CAP_SYS_NICE"), "{error}"),
        }
    }
}
