//! The discrete-event model of a uniprocessor Zephyr kernel running qf-sched.
//!
//! Scheduling rules: static priority first (lower number wins), then EDF on the absolute
//! deadline compared as Zephyr does (wrapping 32-bit); a running thread is not preempted by an
//! equal deadline; otherwise the thread that became ready first runs first. Timers (sleep
//! wake-ups, the per-thread qf-sched timer) fire on kernel ticks, in the order they were armed
//! when due on the same tick. Jobs consume CPU time exactly as written, as the paper's
//! `k_busy_wait` jobs mean to. At one instant the running job's completion is handled first,
//! then due timers, then the scheduling decision.
//!
//! Threads behave like the paper's sample tasks: a periodic task calls `k_thread_period_set`
//! once and then loops `k_thread_deadline_set` + work; a CBS task emulates its job arrivals by
//! setting its period to the time until its next arrival before each `k_thread_deadline_set`.
//! A thread's very first API call happens the instant it starts (Zephyr gives a new thread
//! deadline 0, so it preempts at once to declare its real one).

use std::cell::RefCell;

use qf_sched::{wrap32, Bandwidth, Callback, Error, Event, Kernel, Notice, Scheduler, ThreadId};

use crate::clock::Clock;
use crate::taskset::{TaskKind, TaskSet, MAX_TASKS};

/// The scheduler instance the simulator runs: one slot per task, a ring drained after every
/// call.
pub type SimScheduler = Scheduler<MAX_TASKS, 64>;

/// How to run a simulation.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Offset added to the scheduler's tick clock (tests the 32-bit deadline wrap).
    pub origin_ticks: u64,
    /// Keep the schedule slices and the event trace (off for throughput measurements).
    pub discard_trace: bool,
}

/// One maximal stretch of execution of one task (idle time is not recorded).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Slice {
    /// Start, ns.
    pub start_ns: u64,
    /// End, ns.
    pub end_ns: u64,
    /// Task index.
    pub task: usize,
}

/// A scheduler trace event with its time converted back to real time.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TraceEvent {
    /// Real time of the event, ns (the start of its tick).
    pub time_ns: u64,
    /// The event as qf-sched recorded it (times in scheduler ticks).
    pub event: Event,
}

/// Per-task results.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskStats {
    /// Jobs released before the horizon.
    pub jobs: u64,
    /// Jobs completed before the horizon.
    pub completed: u64,
    /// Deadline-miss callbacks run (each at the missed absolute deadline).
    pub deadline_misses: u64,
    /// Largest completion − arrival over completed jobs, ns.
    pub max_response_ns: u64,
    /// CPU time consumed, ns.
    pub busy_ns: u64,
    /// `PERIOD_OVERRUN` statuses returned to the task.
    pub period_overruns: u64,
    /// Budget-overrun callbacks run (CBS budget exhausted with work left).
    pub budget_overruns: u64,
    /// Admission control refused the task (it never ran); the scheduler's message.
    pub rejected: Option<String>,
}

/// What a callback reported, in the order they ran.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Report {
    /// Deadline-miss callback.
    DeadlineMiss(Notice),
    /// Budget-overrun callback.
    BudgetOverrun(Notice),
}

/// One job as the simulation saw it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct JobRecord {
    /// Task index.
    pub task: usize,
    /// Arrival (a CBS job's nominal arrival, else its release), ns.
    pub arrival_ns: u64,
    /// Release of its cycle, scheduler ticks.
    pub release_ticks: u64,
    /// Absolute deadline when the cycle started (what the miss check watches), ticks.
    pub deadline_ticks: u64,
    /// Completion, ns (`None`: still running at the horizon).
    pub completion_ns: Option<u64>,
    /// Completion as the scheduler's clock read it, ticks.
    pub completion_ticks: Option<u64>,
}

/// Everything a simulation produced.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Execution slices in time order (empty with `discard_trace`).
    pub slices: Vec<Slice>,
    /// Scheduler events, stably sorted by time (empty with `discard_trace`).
    pub events: Vec<TraceEvent>,
    /// Callback reports (empty with `discard_trace`).
    pub reports: Vec<Report>,
    /// Every job released before the horizon (empty with `discard_trace`).
    pub jobs: Vec<JobRecord>,
    /// Per task, in task-set order.
    pub stats: Vec<TaskStats>,
    /// Simulator events processed (completions, timer expiries, context switches).
    pub sim_events: u64,
    /// Events the scheduler's ring lost (always 0: it is drained after each call).
    pub lost_events: u64,
}

thread_local! {
    /// Callbacks are plain `fn`s; they hand their notice to the simulation running on this
    /// thread through this queue.
    static CALLBACK_REPORTS: RefCell<Vec<Report>> = const { RefCell::new(Vec::new()) };
}

fn on_deadline_miss(notice: &Notice) {
    CALLBACK_REPORTS.with(|r| r.borrow_mut().push(Report::DeadlineMiss(*notice)));
}

fn on_budget_overrun(notice: &Notice) {
    CALLBACK_REPORTS.with(|r| r.borrow_mut().push(Report::BudgetOverrun(*notice)));
}

/// The kinds of timeout a simulated thread can have pending: at most one of each.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Due {
    /// The thread's start delay.
    Start,
    /// The end of a `suspend_until`.
    Wake,
    /// The thread's qf-sched one-shot timer.
    Timer,
}

/// A pending timeout: when it fires (ns) and the order it was armed in (ties fire in arming
/// order, as Zephyr's timeout list does).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Timeout {
    at_ns: u64,
    seq: u64,
}

/// Kernel-side state of one simulated thread.
#[derive(Clone, Debug, Default)]
struct KThread {
    started: bool,
    finished: bool,
    blocked: bool,
    /// Pending timeouts, indexed by `Due as usize`.
    timeouts: [Option<Timeout>; 3],
    ready_seq: u64,
    deadline: u64,
    /// Work left in the current job, ns.
    remaining_ns: u64,
    /// Index of the current job (CBS) / number of cycles started (periodic).
    job: usize,
    /// Arrival of the current job, ns, and whether it counts (released before the horizon).
    arrival_ns: u64,
    counted: bool,
    /// Index of the current job's record in `Outcome::jobs`.
    record: Option<usize>,
}

/// The simulated kernel: what qf-sched's `Kernel` trait acts on.
struct SimKernel {
    clock: Clock,
    now_ns: u64,
    seq: u64,
    threads: Vec<KThread>,
    /// The earliest pending timeout, or `None` when it must be searched for again.
    earliest: Option<Option<(Timeout, usize, Due)>>,
}

impl SimKernel {
    /// Arms (or re-arms) thread `i`'s timeout of kind `what`.
    fn schedule(&mut self, i: usize, what: Due, at_ns: u64) {
        self.seq += 1;
        let timeout = Timeout {
            at_ns: at_ns.max(self.now_ns),
            seq: self.seq,
        };
        self.clear(i, what);
        self.threads[i].timeouts[what as usize] = Some(timeout);
        if let Some(earliest) = self.earliest {
            if earliest.is_none_or(|(e, _, _)| timeout < e) {
                self.earliest = Some(Some((timeout, i, what)));
            }
        }
    }

    /// Disarms thread `i`'s timeout of kind `what`.
    fn clear(&mut self, i: usize, what: Due) {
        if self.threads[i].timeouts[what as usize].take().is_some()
            && self
                .earliest
                .is_some_and(|e| e.is_some_and(|(_, ei, ew)| ei == i && ew == what))
        {
            self.earliest = None;
        }
    }

    /// The earliest pending timeout (ties: first armed) — a scan, since a thread has at most
    /// three and a set at most `MAX_TASKS` threads.
    fn next_due(&mut self) -> Option<(Timeout, usize, Due)> {
        if let Some(earliest) = self.earliest {
            return earliest;
        }
        let mut best: Option<(Timeout, usize, Due)> = None;
        for (i, thread) in self.threads.iter().enumerate() {
            for (what, slot) in [Due::Start, Due::Wake, Due::Timer]
                .into_iter()
                .zip(thread.timeouts)
            {
                if let Some(timeout) = slot {
                    if best.is_none_or(|(b, _, _)| timeout < b) {
                        best = Some((timeout, i, what));
                    }
                }
            }
        }
        self.earliest = Some(best);
        best
    }
}

impl Kernel for SimKernel {
    fn now(&self) -> u64 {
        self.clock.ticks_at(self.now_ns)
    }
    fn timer_arm(&mut self, thread: ThreadId, at: u64) {
        let at_ns = self.clock.ns_of_tick(at);
        self.schedule(thread.index(), Due::Timer, at_ns);
    }
    fn timer_cancel(&mut self, thread: ThreadId) {
        self.clear(thread.index(), Due::Timer);
    }
    fn deadline_set(&mut self, thread: ThreadId, deadline: u64) {
        // The simulator makes its scheduling decision again after every event anyway.
        self.threads[thread.index()].deadline = deadline;
    }
    fn suspend_until(&mut self, thread: ThreadId, at: u64) {
        self.threads[thread.index()].blocked = true;
        let at_ns = self.clock.ns_of_tick(at);
        self.schedule(thread.index(), Due::Wake, at_ns);
    }
}

/// Runs `set` from time 0 to its horizon.
pub fn simulate(set: &TaskSet, options: Options) -> Outcome {
    Simulation::new(set, options).run()
}

struct Simulation<'a> {
    set: &'a TaskSet,
    options: Options,
    kernel: SimKernel,
    sched: Box<SimScheduler>,
    running: Option<usize>,
    ready_counter: u64,
    out: Outcome,
}

impl<'a> Simulation<'a> {
    fn new(set: &'a TaskSet, options: Options) -> Self {
        let clock = Clock {
            tick_hz: set.tick_hz,
            unit_ns: set.unit_ns,
            origin_ticks: options.origin_ticks,
        };
        let mut kernel = SimKernel {
            clock,
            now_ns: 0,
            seq: 0,
            earliest: None,
            threads: vec![KThread::default(); set.tasks.len()],
        };
        let mut sched = Box::new(SimScheduler::new());
        sched.admission_bound_set(
            set.admission_bound_ppm
                .and_then(|ppm| Bandwidth::ratio(ppm, 1_000_000)),
        );
        for (i, task) in set.tasks.iter().enumerate() {
            let start = match task.kind {
                TaskKind::Periodic { offset_ns, .. } => offset_ns,
                TaskKind::Cbs { ref jobs, .. } => jobs[0].0,
            };
            // Thread start delays expire on a tick, like every kernel timeout.
            let start = clock.ns_of_tick(clock.tick_at_or_after(start));
            kernel.schedule(i, Due::Start, start);
        }
        CALLBACK_REPORTS.with(|r| r.borrow_mut().clear());
        Simulation {
            set,
            options,
            kernel,
            sched,
            running: None,
            ready_counter: 0,
            out: Outcome {
                stats: vec![TaskStats::default(); set.tasks.len()],
                ..Outcome::default()
            },
        }
    }

    fn ticks(&self, ns: u64) -> u64 {
        self.kernel.clock.duration_ticks(ns)
    }

    /// Moves the scheduler's trace and callback reports into the outcome.
    fn collect(&mut self) {
        let clock = self.kernel.clock;
        let keep = !self.options.discard_trace;
        let horizon = self.set.horizon_ns;
        for event in self.sched.events().drain() {
            // A cycle started at the end of the last job may be released at or after the
            // horizon; it is outside the simulated span.
            if keep && clock.ns_of_tick(event.time) < horizon {
                self.out.events.push(TraceEvent {
                    time_ns: clock.ns_of_tick(event.time),
                    event,
                });
            }
        }
        self.out.lost_events = self.sched.events().lost();
        CALLBACK_REPORTS.with(|r| {
            for report in r.borrow_mut().drain(..) {
                match report {
                    Report::DeadlineMiss(n) if clock.ns_of_tick(n.time) < horizon => {
                        self.out.stats[n.thread.index()].deadline_misses += 1
                    }
                    Report::BudgetOverrun(n) => {
                        self.out.stats[n.thread.index()].budget_overruns += 1
                    }
                    Report::DeadlineMiss(_) => {}
                }
                if keep {
                    self.out.reports.push(report);
                }
            }
        });
    }

    fn make_ready(&mut self, i: usize) {
        self.ready_counter += 1;
        self.kernel.threads[i].ready_seq = self.ready_counter;
    }

    /// The thread's `k_thread_deadline_set` call; counts overrun statuses and rejections.
    fn deadline_set(&mut self, i: usize, rel_ns: u64) -> bool {
        let rel = self.ticks(rel_ns);
        let result = self
            .sched
            .deadline_set(&mut self.kernel, ThreadId(i as u16), rel);
        let admitted = match result {
            Ok(()) => true,
            Err(Error::PeriodOverrun { .. }) => {
                self.out.stats[i].period_overruns += 1;
                true
            }
            Err(e) => {
                self.out.stats[i].rejected = Some(e.to_string());
                false
            }
        };
        self.collect();
        admitted
    }

    /// A new cycle started (deadline_set returned): set up its job. Response times count from
    /// `arrival_ns` (a CBS job's nominal arrival) or else from the cycle's release.
    fn begin_job(&mut self, i: usize, arrival_ns: Option<u64>, work_ns: u64) {
        let now = self.kernel.now_ns;
        let (release, deadline) = self.sched.thread(ThreadId(i as u16)).map_or((0, 0), |b| {
            (b.release(), b.miss_check_at().unwrap_or(b.deadline()))
        });
        let release_ns = self.kernel.clock.ns_of_tick(release).max(now);
        let counted = release_ns < self.set.horizon_ns;
        let thread = &mut self.kernel.threads[i];
        thread.remaining_ns = work_ns;
        thread.arrival_ns = arrival_ns.map_or(release_ns, |a| a.min(release_ns));
        thread.counted = counted;
        thread.record = None;
        if counted {
            self.out.stats[i].jobs += 1;
            if !self.options.discard_trace {
                thread.record = Some(self.out.jobs.len());
                self.out.jobs.push(JobRecord {
                    task: i,
                    arrival_ns: thread.arrival_ns,
                    release_ticks: release,
                    deadline_ticks: deadline,
                    completion_ns: None,
                    completion_ticks: None,
                });
            }
        }
        if !self.kernel.threads[i].blocked {
            self.make_ready(i);
        }
    }

    /// The thread's first instant: it takes the CPU, declares itself, and the kernel
    /// reschedules.
    fn start(&mut self, i: usize) {
        let id = ThreadId(i as u16);
        let _ = self.sched.attach(id);
        if self.running != Some(i) {
            if let Some(r) = self.running {
                let _ = self
                    .sched
                    .switched_out(&mut self.kernel, ThreadId(r as u16));
            }
            let _ = self.sched.switched_in(&mut self.kernel, id);
            self.running = Some(i);
            self.out.sim_events += 1;
        }
        self.kernel.threads[i].started = true;
        let miss = Some(Callback {
            func: on_deadline_miss,
            arg: i,
        });
        let _ = self.sched.deadline_miss_callback_set(id, miss);
        let set = self.set;
        match &set.tasks[i].kind {
            TaskKind::Periodic {
                wcet_ns,
                period_ns,
                deadline_ns,
                ..
            } => {
                let _ = self.sched.period_set(id, self.ticks(*period_ns));
                let _ = self.sched.wcet_set(id, self.ticks(*wcet_ns));
                if self.deadline_set(i, *deadline_ns) {
                    self.begin_job(i, None, *wcet_ns);
                } else {
                    self.kernel.threads[i].finished = true;
                }
            }
            TaskKind::Cbs {
                budget_ns,
                period_ns,
                jobs,
                hard_reservation,
            } => {
                let _ = self.sched.cbs_budget_set(id, self.ticks(*budget_ns));
                let _ = self.sched.hard_reservation_set(id, *hard_reservation);
                let overrun = Some(Callback {
                    func: on_budget_overrun,
                    arg: i,
                });
                let _ = self.sched.budget_overrun_callback_set(id, overrun);
                if self.deadline_set(i, *period_ns) {
                    self.begin_job(i, Some(jobs[0].0), jobs[0].1);
                } else {
                    self.kernel.threads[i].finished = true;
                }
            }
        }
    }

    /// The running job of thread `i` finished at `now`.
    fn complete(&mut self, i: usize) {
        let now = self.kernel.now_ns;
        let thread = &self.kernel.threads[i];
        if let Some(record) = thread.record.and_then(|r| self.out.jobs.get_mut(r)) {
            record.completion_ns = Some(now);
            record.completion_ticks = Some(self.kernel.clock.ticks_at(now));
        }
        if thread.counted {
            let stats = &mut self.out.stats[i];
            stats.completed += 1;
            stats.max_response_ns = stats.max_response_ns.max(now - thread.arrival_ns);
        }
        let id = ThreadId(i as u16);
        let set = self.set;
        match &set.tasks[i].kind {
            TaskKind::Periodic {
                wcet_ns,
                deadline_ns,
                ..
            } => {
                if self.deadline_set(i, *deadline_ns) {
                    self.kernel.threads[i].job += 1;
                    self.begin_job(i, None, *wcet_ns);
                } else {
                    self.kernel.threads[i].finished = true;
                }
            }
            TaskKind::Cbs {
                period_ns, jobs, ..
            } => {
                let next = self.kernel.threads[i].job + 1;
                if let Some(&(arrival_ns, work_ns)) = jobs.get(next) {
                    // The paper's emulation of irregular arrivals: the period is the time from
                    // this cycle's release to the next arrival (none if it is already due).
                    let release = self.sched.thread(id).map_or(0, |b| b.release());
                    let arrival = self.kernel.clock.tick_at_or_after(arrival_ns);
                    let _ = self.sched.period_set(id, arrival.saturating_sub(release));
                    if self.deadline_set(i, *period_ns) {
                        self.kernel.threads[i].job = next;
                        self.begin_job(i, Some(arrival_ns), work_ns);
                    } else {
                        self.kernel.threads[i].finished = true;
                    }
                } else {
                    let _ = self.sched.cycle_end(&mut self.kernel, id);
                    self.collect();
                    self.kernel.threads[i].finished = true;
                }
            }
        }
    }

    fn runnable(&self, i: usize) -> bool {
        let t = &self.kernel.threads[i];
        t.started && !t.finished && !t.blocked
    }

    /// True if thread `a` should run rather than `b`.
    fn better(&self, a: usize, b: usize, incumbent: Option<usize>) -> bool {
        let (pa, pb) = (self.set.tasks[a].priority, self.set.tasks[b].priority);
        if pa != pb {
            return pa < pb;
        }
        let (da, db) = (
            self.kernel.threads[a].deadline,
            self.kernel.threads[b].deadline,
        );
        if wrap32::deadline32(da) != wrap32::deadline32(db) {
            return wrap32::deadline_precedes(da, db);
        }
        if incumbent == Some(a) {
            return true;
        }
        if incumbent == Some(b) {
            return false;
        }
        self.kernel.threads[a].ready_seq < self.kernel.threads[b].ready_seq
    }

    /// The scheduling decision; repeats while a switch-in throttles the chosen thread.
    fn pick(&mut self, incumbent: Option<usize>) {
        loop {
            let mut best: Option<usize> = None;
            for i in 0..self.kernel.threads.len() {
                if self.runnable(i) && best.is_none_or(|b| self.better(i, b, incumbent)) {
                    best = Some(i);
                }
            }
            if best == self.running {
                return;
            }
            if let Some(r) = self.running {
                let _ = self
                    .sched
                    .switched_out(&mut self.kernel, ThreadId(r as u16));
            }
            self.running = best;
            self.out.sim_events += 1;
            if let Some(b) = best {
                let _ = self.sched.switched_in(&mut self.kernel, ThreadId(b as u16));
            }
            self.collect();
        }
    }

    fn record_slice(&mut self, task: usize, start_ns: u64, end_ns: u64) {
        self.out.stats[task].busy_ns += end_ns - start_ns;
        if self.options.discard_trace || end_ns == start_ns {
            return;
        }
        match self.out.slices.last_mut() {
            Some(last) if last.task == task && last.end_ns == start_ns => last.end_ns = end_ns,
            _ => self.out.slices.push(Slice {
                start_ns,
                end_ns,
                task,
            }),
        }
    }

    fn run(mut self) -> Outcome {
        let horizon = self.set.horizon_ns;
        loop {
            let now = self.kernel.now_ns;
            let next_due = self.kernel.next_due().map_or(u64::MAX, |(t, _, _)| t.at_ns);
            let completion = self.running.map_or(u64::MAX, |r| {
                now.saturating_add(self.kernel.threads[r].remaining_ns)
            });
            let t = next_due.min(completion).min(horizon);
            if let Some(r) = self.running {
                self.kernel.threads[r].remaining_ns -= t - now;
                self.record_slice(r, now, t);
            }
            self.kernel.now_ns = t;
            if t >= horizon {
                break;
            }
            let incumbent = self.running;
            if let Some(r) = self.running {
                if self.kernel.threads[r].remaining_ns == 0 {
                    self.out.sim_events += 1;
                    self.complete(r);
                }
            }
            while let Some((timeout, i, due)) = self.kernel.next_due() {
                if timeout.at_ns != t {
                    break;
                }
                self.kernel.clear(i, due);
                self.out.sim_events += 1;
                match due {
                    Due::Start => self.start(i),
                    Due::Wake => {
                        self.kernel.threads[i].blocked = false;
                        self.make_ready(i);
                    }
                    Due::Timer => {
                        let _ = self
                            .sched
                            .timer_expired(&mut self.kernel, ThreadId(i as u16));
                        self.collect();
                    }
                }
            }
            self.pick(incumbent);
        }
        self.out.events.sort_by_key(|e| e.time_ns);
        self.out
    }
}
