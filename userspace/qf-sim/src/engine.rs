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
use std::cmp::Reverse;
use std::collections::BinaryHeap;

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
    /// Events the scheduler's ring lost (always 0 when traced: it is drained after each call).
    pub lost_events: u64,
}

/// Where a simulation's trace goes as it is produced: slices, events and reports in time
/// order, jobs as they are released and complete. Memory stays bounded by the task set, not
/// the horizon, unless the receiver keeps what it is given ([`Outcome`] does).
pub trait Trace {
    /// False: nothing is traced (the receiver gets only `progress`), the fastest run.
    const RECORDS: bool = true;
    /// A maximal stretch of execution of one task, once it has ended.
    fn slice(&mut self, _slice: Slice) {}
    /// A scheduler event; events arrive in time order (equal times in the order they happened).
    fn event(&mut self, _event: TraceEvent) {}
    /// A callback report, in the order the callbacks ran.
    fn report(&mut self, _report: Report) {}
    /// A job released before the horizon (its completion is not known yet).
    fn job_released(&mut self, _job: JobRecord) {}
    /// The last job released of `task` completed.
    fn job_completed(&mut self, _task: usize, _completion_ns: u64, _completion_ticks: u64) {}
    /// Called now and then (every [`PROGRESS_EVERY`] simulator steps) with the simulated time;
    /// returning true stops the simulation there (e.g. an output could not be written).
    fn progress(&mut self, _now_ns: u64) -> bool {
        false
    }
}

/// Simulator steps between two [`Trace::progress`] calls.
pub const PROGRESS_EVERY: u64 = 1 << 14;

/// Records nothing: the statistics alone (what the summary needs).
pub struct NoTrace;

impl Trace for NoTrace {
    const RECORDS: bool = false;
}

/// Keeps the whole trace in memory (tests and small task sets).
impl Trace for Outcome {
    fn slice(&mut self, slice: Slice) {
        self.slices.push(slice);
    }
    fn event(&mut self, event: TraceEvent) {
        self.events.push(event);
    }
    fn report(&mut self, report: Report) {
        self.reports.push(report);
    }
    fn job_released(&mut self, job: JobRecord) {
        self.jobs.push(job);
    }
    fn job_completed(&mut self, task: usize, completion_ns: u64, completion_ticks: u64) {
        if let Some(record) = self.jobs.iter_mut().rev().find(|j| j.task == task) {
            record.completion_ns = Some(completion_ns);
            record.completion_ticks = Some(completion_ticks);
        }
    }
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
    ready_seq: u64,
    deadline: u64,
    /// Zephyr static priority (from the task set).
    priority: i32,
    /// Work left in the current job, ns.
    remaining_ns: u64,
    /// Index of the current job (CBS) / number of cycles started (periodic).
    job: usize,
    /// Arrival of the current job, ns, and whether it counts (released before the horizon).
    arrival_ns: u64,
    counted: bool,
    /// The current job was given to the trace (`Trace::job_released`).
    recorded: bool,
}

const DUES: [Due; 3] = [Due::Start, Due::Wake, Due::Timer];

/// The pending timeouts of all threads, earliest first: a binary heap that knows where each
/// thread's timeout of each kind sits, so disarming or re-arming one moves it in place (no
/// stale entries; at most three per thread). Written here rather than taken from a crate: the
/// indexed priority queues on crates.io (`priority-queue`) find entries by hashing their keys;
/// the slots here are small integers, so a position array does it on the simulator's hottest
/// path without hashing.
#[derive(Clone, Debug, Default)]
struct TimeoutQueue {
    /// (timeout, slot) with slot = thread * 3 + kind; `heap[0]` is the earliest.
    heap: Vec<(Timeout, u32)>,
    /// Per slot: its index in `heap`, or `NOT_QUEUED`.
    position: Vec<u32>,
}

const NOT_QUEUED: u32 = u32::MAX;

impl TimeoutQueue {
    fn new(threads: usize) -> TimeoutQueue {
        TimeoutQueue {
            heap: Vec::with_capacity(3 * threads),
            position: vec![NOT_QUEUED; 3 * threads],
        }
    }

    fn first(&self) -> Option<(Timeout, u32)> {
        self.heap.first().copied()
    }

    /// Arms `slot` at `timeout` (moving it if it was armed).
    fn set(&mut self, slot: u32, timeout: Timeout) {
        let at = self.position[slot as usize];
        if at == NOT_QUEUED {
            self.heap.push((timeout, slot));
            let last = self.heap.len() - 1;
            self.position[slot as usize] = last as u32;
            self.up(last);
        } else {
            let at = at as usize;
            let earlier = timeout < self.heap[at].0;
            self.heap[at].0 = timeout;
            if earlier {
                self.up(at);
            } else {
                self.down(at);
            }
        }
    }

    /// Disarms `slot` if it is armed.
    fn remove(&mut self, slot: u32) {
        let at = self.position[slot as usize];
        if at == NOT_QUEUED {
            return;
        }
        let at = at as usize;
        self.position[slot as usize] = NOT_QUEUED;
        let last = self.heap.pop().expect("an armed slot is in the heap");
        if at < self.heap.len() {
            let moved_earlier = last.0 < self.heap[at].0;
            self.heap[at] = last;
            self.position[last.1 as usize] = at as u32;
            if moved_earlier {
                self.up(at);
            } else {
                self.down(at);
            }
        }
    }

    /// Moves the entry at `at` towards the root while it is earlier than its parent.
    fn up(&mut self, mut at: usize) {
        let entry = self.heap[at];
        while at > 0 {
            let parent = (at - 1) / 2;
            if entry.0 >= self.heap[parent].0 {
                break;
            }
            self.heap[at] = self.heap[parent];
            self.position[self.heap[at].1 as usize] = at as u32;
            at = parent;
        }
        self.heap[at] = entry;
        self.position[entry.1 as usize] = at as u32;
    }

    /// Moves the entry at `at` towards the leaves while a child is earlier.
    fn down(&mut self, mut at: usize) {
        let entry = self.heap[at];
        let len = self.heap.len();
        loop {
            let left = 2 * at + 1;
            if left >= len {
                break;
            }
            let right = left + 1;
            let child = if right < len && self.heap[right].0 < self.heap[left].0 {
                right
            } else {
                left
            };
            if entry.0 <= self.heap[child].0 {
                break;
            }
            self.heap[at] = self.heap[child];
            self.position[self.heap[at].1 as usize] = at as u32;
            at = child;
        }
        self.heap[at] = entry;
        self.position[entry.1 as usize] = at as u32;
    }
}

/// The simulated kernel: what qf-sched's `Kernel` trait acts on.
struct SimKernel {
    clock: Clock,
    now_ns: u64,
    seq: u64,
    threads: Vec<KThread>,
    /// Bit `i` set: thread `i` is started, not finished and not blocked (`MAX_TASKS` <= 64).
    runnable: u64,
    /// Every armed timeout, earliest first.
    queue: TimeoutQueue,
}

impl SimKernel {
    /// Updates thread `i`'s bit in `runnable` after its flags changed.
    fn refresh(&mut self, i: usize) {
        let t = &self.threads[i];
        if t.started && !t.finished && !t.blocked {
            self.runnable |= 1 << i;
        } else {
            self.runnable &= !(1 << i);
        }
    }

    /// Arms (or re-arms) thread `i`'s timeout of kind `what`.
    fn schedule(&mut self, i: usize, what: Due, at_ns: u64) {
        self.seq += 1;
        let timeout = Timeout {
            at_ns: at_ns.max(self.now_ns),
            seq: self.seq,
        };
        self.queue.set((i * 3 + what as usize) as u32, timeout);
    }

    /// Disarms thread `i`'s timeout of kind `what`.
    fn clear(&mut self, i: usize, what: Due) {
        self.queue.remove((i * 3 + what as usize) as u32);
    }

    /// The earliest pending timeout (ties: first armed).
    fn next_due(&self) -> Option<(Timeout, usize, Due)> {
        self.queue
            .first()
            .map(|(timeout, slot)| (timeout, slot as usize / 3, DUES[slot as usize % 3]))
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
        self.refresh(thread.index());
        let at_ns = self.clock.ns_of_tick(at);
        self.schedule(thread.index(), Due::Wake, at_ns);
    }
}

/// A scheduler event waiting for time to pass it: events are stamped with their tick, and a
/// cycle's release may lie ahead of the instant it is recorded.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Pending {
    time_ns: u64,
    seq: u64,
    event: Event,
}

impl Ord for Pending {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.time_ns, self.seq).cmp(&(other.time_ns, other.seq))
    }
}

impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// Runs `set` from time 0 to its horizon, keeping the whole trace in the outcome (none of it
/// with `discard_trace`).
pub fn simulate(set: &TaskSet, options: Options) -> Outcome {
    if options.discard_trace {
        let mut trace = NoTrace;
        let (stats, sim_events, lost_events) = simulate_into(set, options, &mut trace);
        return Outcome {
            stats,
            sim_events,
            lost_events,
            ..Outcome::default()
        };
    }
    let mut outcome = Outcome::default();
    let (stats, sim_events, lost_events) = simulate_into(set, options, &mut outcome);
    Outcome {
        stats,
        sim_events,
        lost_events,
        ..outcome
    }
}

/// Runs `set` from time 0 to its horizon (or until `trace` asks to stop), handing the trace to
/// `trace` as it is produced; returns the per-task statistics, the simulator events processed
/// and the events the scheduler's ring lost.
pub fn simulate_into<T: Trace>(
    set: &TaskSet,
    options: Options,
    trace: &mut T,
) -> (Vec<TaskStats>, u64, u64) {
    let simulation = Simulation::new(set, options, trace);
    simulation.run()
}

struct Simulation<'a, T: Trace> {
    set: &'a TaskSet,
    kernel: SimKernel,
    sched: Box<SimScheduler>,
    running: Option<usize>,
    ready_counter: u64,
    stats: Vec<TaskStats>,
    sim_events: u64,
    lost_events: u64,
    trace: &'a mut T,
    /// The slice still growing (sent to the trace once it ends).
    slice: Option<Slice>,
    /// Events not yet passed by time, earliest first, and the count of events ever buffered.
    pending: BinaryHeap<Reverse<Pending>>,
    pending_seq: u64,
}

impl<'a, T: Trace> Simulation<'a, T> {
    fn new(set: &'a TaskSet, options: Options, trace: &'a mut T) -> Self {
        let clock = Clock {
            tick_hz: set.tick_hz,
            unit_ns: set.unit_ns,
            origin_ticks: options.origin_ticks,
        };
        let mut kernel = SimKernel {
            clock,
            now_ns: 0,
            seq: 0,
            threads: set
                .tasks
                .iter()
                .map(|task| KThread {
                    priority: task.priority,
                    ..KThread::default()
                })
                .collect(),
            runnable: 0,
            queue: TimeoutQueue::new(set.tasks.len()),
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
            kernel,
            sched,
            running: None,
            ready_counter: 0,
            stats: vec![TaskStats::default(); set.tasks.len()],
            sim_events: 0,
            lost_events: 0,
            trace,
            slice: None,
            pending: BinaryHeap::new(),
            pending_seq: 0,
        }
    }

    fn ticks(&self, ns: u64) -> u64 {
        self.kernel.clock.duration_ticks(ns)
    }

    /// Moves the scheduler's events and callback reports to the statistics and the trace.
    fn collect(&mut self) {
        let clock = self.kernel.clock;
        let horizon = self.set.horizon_ns;
        if T::RECORDS {
            for event in self.sched.events().drain() {
                // A cycle started at the end of the last job may be released at or after the
                // horizon; it is outside the simulated span.
                let time_ns = clock.ns_of_tick(event.time);
                if time_ns < horizon {
                    self.pending_seq += 1;
                    self.pending.push(Reverse(Pending {
                        time_ns,
                        seq: self.pending_seq,
                        event,
                    }));
                }
            }
            self.lost_events = self.sched.events().lost();
            // Every event recorded from now on is stamped at the current tick or later.
            let passed = clock.ns_of_tick(clock.ticks_at(self.kernel.now_ns));
            self.release_events(passed);
        }
        CALLBACK_REPORTS.with(|r| {
            for report in r.borrow_mut().drain(..) {
                match report {
                    Report::DeadlineMiss(n) if clock.ns_of_tick(n.time) < horizon => {
                        self.stats[n.thread.index()].deadline_misses += 1
                    }
                    Report::BudgetOverrun(n) => self.stats[n.thread.index()].budget_overruns += 1,
                    Report::DeadlineMiss(_) => {}
                }
                if T::RECORDS {
                    self.trace.report(report);
                }
            }
        });
    }

    /// Hands the trace the buffered events stamped at or before `until_ns`, in time order.
    fn release_events(&mut self, until_ns: u64) {
        while let Some(Reverse(first)) = self.pending.peek() {
            if first.time_ns > until_ns {
                break;
            }
            let Reverse(Pending { time_ns, event, .. }) = self.pending.pop().expect("peeked");
            self.trace.event(TraceEvent { time_ns, event });
        }
    }

    fn make_ready(&mut self, i: usize) {
        self.ready_counter += 1;
        self.kernel.threads[i].ready_seq = self.ready_counter;
    }

    /// Whether a setter of thread `i`'s reservation (period, WCET, budget) succeeded; a
    /// refusal (admission control's) is recorded as the task's rejection.
    fn admitted(&mut self, i: usize, result: Result<(), Error>) -> bool {
        match result {
            Ok(()) => true,
            Err(e) => {
                self.stats[i].rejected = Some(e.to_string());
                self.collect();
                false
            }
        }
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
                self.stats[i].period_overruns += 1;
                true
            }
            Err(e) => {
                self.stats[i].rejected = Some(e.to_string());
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
        thread.recorded = counted && T::RECORDS;
        if counted {
            self.stats[i].jobs += 1;
            if T::RECORDS {
                self.trace.job_released(JobRecord {
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
            self.sim_events += 1;
        }
        self.kernel.threads[i].started = true;
        self.kernel.refresh(i);
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
                // With admission control on, qf-sched admits WCET/period here, as the
                // kernel's k_thread_wcet_set does: a refusal leaves the task unable to run as
                // declared, so it stops, like a refusal of its first deadline_set.
                let (period, wcet) = (self.ticks(*period_ns), self.ticks(*wcet_ns));
                let declared = self.sched.period_set(id, period);
                let declared = declared.and_then(|()| self.sched.wcet_set(id, wcet));
                if self.admitted(i, declared) && self.deadline_set(i, *deadline_ns) {
                    self.begin_job(i, None, *wcet_ns);
                } else {
                    self.finish(i);
                }
            }
            TaskKind::Cbs {
                budget_ns,
                period_ns,
                jobs,
                hard_reservation,
            } => {
                let budget = self.sched.cbs_budget_set(id, self.ticks(*budget_ns));
                if !self.admitted(i, budget) {
                    self.finish(i);
                    return;
                }
                let _ = self.sched.hard_reservation_set(id, *hard_reservation);
                let overrun = Some(Callback {
                    func: on_budget_overrun,
                    arg: i,
                });
                let _ = self.sched.budget_overrun_callback_set(id, overrun);
                if self.deadline_set(i, *period_ns) {
                    self.begin_job(i, Some(jobs[0].0), jobs[0].1);
                } else {
                    self.finish(i);
                }
            }
        }
    }

    /// The running job of thread `i` finished at `now`.
    fn complete(&mut self, i: usize) {
        let now = self.kernel.now_ns;
        let thread = &self.kernel.threads[i];
        if thread.recorded {
            let ticks = self.kernel.clock.ticks_at(now);
            self.trace.job_completed(i, now, ticks);
        }
        if thread.counted {
            let stats = &mut self.stats[i];
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
                    self.finish(i);
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
                    let period = self.sched.period_set(id, arrival.saturating_sub(release));
                    if self.admitted(i, period) && self.deadline_set(i, *period_ns) {
                        self.kernel.threads[i].job = next;
                        self.begin_job(i, Some(arrival_ns), work_ns);
                    } else {
                        self.finish(i);
                    }
                } else {
                    let _ = self.sched.cycle_end(&mut self.kernel, id);
                    self.collect();
                    self.finish(i);
                }
            }
        }
    }

    /// Thread `i` will run no more (admission refused it, or its last job is done).
    fn finish(&mut self, i: usize) {
        self.kernel.threads[i].finished = true;
        self.kernel.refresh(i);
    }

    /// True if thread `a` should run rather than `b`.
    fn better(&self, a: usize, b: usize, incumbent: Option<usize>) -> bool {
        let (ta, tb) = (&self.kernel.threads[a], &self.kernel.threads[b]);
        if ta.priority != tb.priority {
            return ta.priority < tb.priority;
        }
        let (da, db) = (ta.deadline, tb.deadline);
        if wrap32::deadline32(da) != wrap32::deadline32(db) {
            return wrap32::deadline_precedes(da, db);
        }
        if incumbent == Some(a) {
            return true;
        }
        if incumbent == Some(b) {
            return false;
        }
        ta.ready_seq < tb.ready_seq
    }

    /// The scheduling decision; repeats while a switch-in throttles the chosen thread.
    fn pick(&mut self, incumbent: Option<usize>) {
        loop {
            let mut best: Option<usize> = None;
            let mut candidates = self.kernel.runnable;
            while candidates != 0 {
                let i = candidates.trailing_zeros() as usize;
                candidates &= candidates - 1;
                if best.is_none_or(|b| self.better(i, b, incumbent)) {
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
            self.sim_events += 1;
            if let Some(b) = best {
                let _ = self.sched.switched_in(&mut self.kernel, ThreadId(b as u16));
            }
            self.collect();
        }
    }

    fn record_slice(&mut self, task: usize, start_ns: u64, end_ns: u64) {
        self.stats[task].busy_ns += end_ns - start_ns;
        if !T::RECORDS || end_ns == start_ns {
            return;
        }
        match &mut self.slice {
            Some(last) if last.task == task && last.end_ns == start_ns => last.end_ns = end_ns,
            slot => {
                if let Some(done) = slot.replace(Slice {
                    start_ns,
                    end_ns,
                    task,
                }) {
                    self.trace.slice(done);
                }
            }
        }
    }

    fn run(mut self) -> (Vec<TaskStats>, u64, u64) {
        let horizon = self.set.horizon_ns;
        let mut steps: u64 = 0;
        loop {
            steps += 1;
            if steps % PROGRESS_EVERY == 0 && self.trace.progress(self.kernel.now_ns) {
                break;
            }
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
                    self.sim_events += 1;
                    self.complete(r);
                }
            }
            while let Some((timeout, i, due)) = self.kernel.next_due() {
                if timeout.at_ns != t {
                    break;
                }
                self.kernel.clear(i, due);
                self.sim_events += 1;
                match due {
                    Due::Start => self.start(i),
                    Due::Wake => {
                        self.kernel.threads[i].blocked = false;
                        self.kernel.refresh(i);
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
        if T::RECORDS {
            if let Some(last) = self.slice.take() {
                self.trace.slice(last);
            }
            self.release_events(u64::MAX);
        }
        (self.stats, self.sim_events, self.lost_events)
    }
}
