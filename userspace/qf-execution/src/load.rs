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

/// Most load workers per CPU `cpu:N` and `rt:M` may start: the paper's 8 spinners fit a single
/// CPU; beyond a few per CPU more workers only add threads, not load.
pub const MAX_WORKERS_PER_CPU: usize = 8;

/// Most workers one load may start here: [`MAX_WORKERS_PER_CPU`] times the CPUs this process
/// may run on (`available_parallelism`; 1 if unknown).
pub fn max_workers() -> usize {
    cpus().saturating_mul(MAX_WORKERS_PER_CPU)
}

fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

/// Starts one load worker (a named thread); a seam so a test can make spawning fail.
type Spawn<'a> =
    dyn FnMut(usize, Box<dyn FnOnce() + Send + 'static>) -> std::io::Result<JoinHandle<()>> + 'a;

fn spawn_thread(
    index: usize,
    work: Box<dyn FnOnce() + Send + 'static>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(format!("qf-load-{index}"))
        .spawn(work)
}

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

    /// Workers the load starts.
    pub fn workers(&self) -> usize {
        match *self {
            Load::Idle => 0,
            Load::Cpu { workers } | Load::Rt { workers } => workers,
        }
    }

    /// Refuses a worker count above [`max_workers`], naming the load, the count and the limit.
    pub fn check(&self) -> Result<(), String> {
        let (count, max) = (self.workers(), max_workers());
        if count > max {
            return Err(format!(
                "load `{}:{count}`: {count} workers is more than {max} ({MAX_WORKERS_PER_CPU} \
                 per CPU x {} CPUs)",
                self.name(),
                cpus()
            ));
        }
        Ok(())
    }

    /// Parses `idle`, `cpu[:N]` (default 8 workers, as in the paper) or `rt[:M]` (default 4);
    /// N and M at most [`max_workers`].
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
        let load = match kind {
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
        }?;
        load.check()?;
        Ok(load)
    }

    /// Starts the workers; they run at most `limit`. A count above [`max_workers`] is refused,
    /// and a worker that cannot be started is an error (the ones started are stopped first).
    pub fn start(&self, limit: Duration) -> Result<LoadGuard> {
        self.start_with(limit, &mut spawn_thread)
    }

    fn start_with(&self, limit: Duration, spawn: &mut Spawn<'_>) -> Result<LoadGuard> {
        self.check().map_err(anyhow::Error::msg)?;
        let stop = Arc::new(AtomicBool::new(false));
        let deadline = Instant::now() + limit;
        let (count, rt) = (self.workers(), matches!(self, Load::Rt { .. }));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        // Dropped on an early return: stops and joins the workers started so far.
        let mut guard = LoadGuard {
            stop: stop.clone(),
            workers: Vec::with_capacity(count),
        };
        for index in 0..count {
            let stop = stop.clone();
            let ready = ready_tx.clone();
            let work = Box::new(move || {
                if rt {
                    let result =
                        set_scheduling(0, Scheduling::Fifo(RT_PRIORITY)).map_err(|e| e.to_string());
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
            });
            let worker = spawn(index, work).map_err(|e| {
                anyhow::anyhow!(
                    "starting the {} load: worker {} of {count} could not be started: {e}",
                    self.name(),
                    index + 1
                )
            })?;
            guard.workers.push(worker);
        }
        drop(ready_tx);
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
    fn worker_counts_are_bounded_by_the_cpus() {
        let max = max_workers();
        assert!(max >= MAX_WORKERS_PER_CPU);
        assert_eq!(
            Load::parse(&format!("cpu:{max}")),
            Ok(Load::Cpu { workers: max })
        );
        for kind in ["cpu", "rt"] {
            let error = Load::parse(&format!("{kind}:1000000")).unwrap_err();
            assert_eq!(
                error,
                format!(
                    "load `{kind}:1000000`: 1000000 workers is more than {max} \
                     ({MAX_WORKERS_PER_CPU} per CPU x {} CPUs)",
                    cpus()
                )
            );
        }
        // A load made some other way (deserialised) is refused by start, before any thread.
        let mut spawned = 0;
        let error = (Load::Cpu { workers: max + 1 })
            .start_with(Duration::from_millis(10), &mut |index, work| {
                spawned += 1;
                spawn_thread(index, work)
            })
            .unwrap_err();
        assert!(
            error.to_string().contains("workers is more than"),
            "{error}"
        );
        assert_eq!(spawned, 0);
    }

    #[test]
    fn a_worker_that_cannot_be_spawned_is_an_error_and_the_others_stop() {
        // The third spawn fails as a thread limit makes it (EAGAIN).
        let mut started = Vec::new();
        let error = (Load::Cpu { workers: 4 })
            .start_with(Duration::from_secs(600), &mut |index, work| {
                if index == 2 {
                    return Err(std::io::Error::from_raw_os_error(libc::EAGAIN));
                }
                let handle = spawn_thread(index, work)?;
                started.push(handle.thread().id());
                Ok(handle)
            })
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "starting the cpu load: worker 3 of 4 could not be started: {}",
                std::io::Error::from_raw_os_error(libc::EAGAIN)
            )
        );
        // start_with returned only after stopping and joining the two it started (their
        // deadline is ten minutes away), so the test ends.
        assert_eq!(started.len(), 2);
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
