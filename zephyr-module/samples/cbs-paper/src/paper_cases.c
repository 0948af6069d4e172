/*
 * Runs a golden task set on the real kernel as the simulator runs it (userspace/qf-sim):
 * a periodic task loops k_thread_deadline_set(D) + WCET of work; a CBS task serves its jobs,
 * emulating irregular arrivals as the paper does by setting, before each job's deadline_set, the
 * period that separates it from the previous arrival. Periods, WCETs, budgets and (optionally)
 * deadline-miss callbacks are set from this thread before the tasks start, so task i holds
 * control block i.
 * A job's work is CPU time the thread itself consumes (its runtime statistics), not the paper's
 * k_busy_wait(C), which counts wall time and so shortens preempted jobs.
 */
#include <zephyr/kernel.h>
#include <qfabric/qfabric.h>

#include "paper_cases.h"
#include "paper_baseline.h"
#include "golden_tc1.h"
#include "golden_tc2.h"

#ifdef CONFIG_QFABRIC_HOOKS_KERNEL_PATCH
#define deadline_set k_thread_deadline_set
#define period_set k_thread_period_set
#define budget_set k_thread_cbs_budget_set
#else
#define deadline_set qf_thread_deadline_set
#define period_set qf_thread_period_set
#define budget_set qf_thread_cbs_budget_set
#endif

#define TASK_PRIO 5
#define STACK_SIZE 2048
/* Tasks a set may have (the paper's have at most 3; a build may allow more). */
#ifndef PAPER_CASES_MAX_TASKS
#define PAPER_CASES_MAX_TASKS 3
#endif
#define MAX_TASKS PAPER_CASES_MAX_TASKS

K_THREAD_STACK_ARRAY_DEFINE(task_stacks, MAX_TASKS, STACK_SIZE);
static struct k_thread tasks[MAX_TASKS];
static int slots[MAX_TASKS];
static atomic_t misses[MAX_TASKS];
static const struct qf_golden *running;
static int unit_ms;
static int64_t time_zero;

const struct qf_golden *paper_case(int which)
{
	return which == 2 ? &golden_tc2 : &golden_tc1;
}

/* @p ns of the task set in microseconds of this run's unit (exact for whole-µs scalings). */
static uint64_t scaled_us(uint64_t ns)
{
	return ns * (uint64_t)unit_ms * 1000U / running->unit_ns;
}

int64_t paper_case_ticks(const struct qf_golden *set, uint64_t ns)
{
	return (int64_t)k_us_to_ticks_ceil64(ns * (uint64_t)unit_ms * 1000U / set->unit_ns);
}

int64_t paper_case_ticks_per_unit(void)
{
	return (int64_t)k_ms_to_ticks_ceil64(unit_ms);
}

static int cycles(uint64_t ns)
{
	return (int)k_us_to_cyc_ceil32(scaled_us(ns));
}

/* Runs for @p ns (scaled) of this thread's own CPU time. */
static void execute(uint64_t ns)
{
	k_thread_runtime_stats_t stats;
	uint64_t target;

	k_thread_runtime_stats_get(k_current_get(), &stats);
	target = stats.execution_cycles + k_us_to_cyc_ceil64(scaled_us(ns));
	while (stats.execution_cycles < target) {
		k_busy_wait(10);
		k_thread_runtime_stats_get(k_current_get(), &stats);
	}
}

/* The absolute tick of @p ns (scaled) from this run's time zero. */
static int64_t tick_of(uint64_t ns)
{
	return time_zero + paper_case_ticks(running, ns);
}

static void sleep_until(uint64_t ns)
{
	k_sleep(K_TIMEOUT_ABS_TICKS(tick_of(ns)));
}

/*
 * Returns at the tick of @p ns, already running. A periodic task's first deadline_set is its
 * first release, and the rest of its period grid follows from it: woken at that tick, the task
 * would be released a wake-up later (interrupt, switch, return from k_sleep), which under QEMU
 * icount can cross a tick boundary. Its grid would then lag the CBS tasks' by a tick, and the
 * task sets' deadline ties (Test Case 2 at t = 12) would become strict orders.
 */
static void run_from(uint64_t ns)
{
	int64_t at = tick_of(ns);

	if (IS_ENABLED(PAPER_CASES_WAKE_AT_RELEASE)) {
		/* Where a wake-up takes no time (native_sim): woken by its timer at the tick, in
		 * the order the timers were armed, as qf sim releases it.
		 */
		k_sleep(K_TIMEOUT_ABS_TICKS(at));
		return;
	}
	k_sleep(K_TIMEOUT_ABS_TICKS(at - 1));
	while (k_uptime_ticks() < at) {
		k_busy_wait(1); /* advances time on native_sim too */
	}
}

/* Declares task @p t's period and WCET, or its budget, for @p tid; 0 or a negative errno. */
static int declare(k_tid_t tid, const struct qf_golden_task *t)
{
	bool periodic = t->kind == QF_GOLDEN_PERIODIC;
	int err = periodic ? period_set(tid, cycles(t->period_ns))
			   : budget_set(tid, cycles(t->budget_ns));

	if (!periodic && !IS_ENABLED(CONFIG_QFABRIC_CBS) && err == -ENOTSUP) {
		/* A kernel without the CBS (the paper's hook work measured with no qfabric budget
		 * timer in the queue): the server's jobs run unbudgeted, released as before.
		 */
		err = period_set(tid, 0);
	}
	if (err == 0 && periodic) {
		err = qf_thread_wcet_set(tid, cycles(t->wcet_ns));
	}
	return err;
}

/*
 * With PAPER_CASES_DECLARE_AT_START a task declares itself at its first release (offset or
 * first arrival) and runs no more once admission control refuses a declaration, period or
 * deadline_set, as qf sim's threads do; otherwise it is declared before time zero and a
 * refusal stops the whole run.
 */
static void stop_if_refused(int err)
{
	if (IS_ENABLED(PAPER_CASES_DECLARE_AT_START) && err != 0 && err != -ETIMEDOUT) {
		k_sleep(K_FOREVER);
	}
}

static void run_periodic(void *task, void *b, void *c)
{
	const struct qf_golden_task *t = task;

	run_from(t->offset_ns);
	if (IS_ENABLED(PAPER_CASES_DECLARE_AT_START)) {
		stop_if_refused(declare(k_current_get(), t));
	}
	while (true) {
		stop_if_refused(deadline_set(k_current_get(), cycles(t->deadline_ns)));
		execute(t->wcet_ns);
	}
}

static void run_server(void *task, void *b, void *c)
{
	const struct qf_golden_task *t = task;

	/* This cycle's release (ticks) and the period it was started with, tracked as qf-sched
	 * sets them: the next activation release + period, or the call's time when that is past.
	 */
	int64_t release = 0, period = 0;

	sleep_until(t->jobs[0].arrival_ns);
	if (IS_ENABLED(PAPER_CASES_DECLARE_AT_START)) {
		stop_if_refused(declare(k_current_get(), t));
	}
	for (int j = 0; j < t->n_jobs; j++) {
		if (j > 0 && IS_ENABLED(PAPER_CASES_ARRIVAL_FROM_RELEASE)) {
			/* As qf sim emulates arrivals: the period from this cycle's release to job j's
			 * arrival (0: already due), so that a job released late (its predecessor
			 * overran) does not delay the arrivals after it.
			 */
			period = MAX(tick_of(t->jobs[j].arrival_ns) - release, 0);
			stop_if_refused(period_set(k_current_get(), (int)k_ticks_to_cyc_ceil32(period)));
		} else if (j > 0) {
			/* Ending job j - 1 waits for job j's arrival. */
			period_set(k_current_get(),
				   cycles(t->jobs[j].arrival_ns - t->jobs[j - 1].arrival_ns));
		}
		if (IS_ENABLED(PAPER_CASES_ARRIVAL_FROM_RELEASE)) {
			/* Exact where reading the clock takes no time (native_sim). */
			int64_t now = k_uptime_ticks();

			release = j > 0 && period > 0 && now <= release + period ? release + period
										   : now;
		}
		if (IS_ENABLED(CONFIG_CBS_PAPER_BASELINE)) {
			paper_baseline_job_end(paper_case_ticks(running, t->budget_ns));
		}
		stop_if_refused(deadline_set(k_current_get(), cycles(t->period_ns)));
		if (IS_ENABLED(CONFIG_CBS_PAPER_BASELINE)) {
			paper_baseline_job_start(paper_case_ticks(running, t->budget_ns),
						 cycles(t->period_ns));
		}
		execute(t->jobs[j].work_ns);
	}
	/* The last job is done: wait for a next one that arrives after the horizon. */
	period_set(k_current_get(),
		   cycles(running->horizon_ns + running->unit_ns - t->jobs[t->n_jobs - 1].arrival_ns));
	(void)deadline_set(k_current_get(), cycles(t->period_ns));
	k_sleep(K_FOREVER);
}

static void count_miss(k_tid_t thread, void *task)
{
	ARG_UNUSED(thread);
	atomic_inc(&misses[(uintptr_t)task]);
}

/* Creates task @p i (not started) with its period or budget set (unless it declares itself at
 * start); 0 or a negative errno.
 */
static int create(int i, bool watch_misses)
{
	const struct qf_golden_task *t = &running->tasks[i];
	bool periodic = t->kind == QF_GOLDEN_PERIODIC;
	k_tid_t tid = k_thread_create(&tasks[i], task_stacks[i], STACK_SIZE,
				      periodic ? run_periodic : run_server, (void *)t, NULL, NULL,
				      TASK_PRIO + t->priority, 0, K_FOREVER);
	int err;

	if (t->kind == QF_GOLDEN_CBS && t->hard_reservation) {
		return -ENOTSUP; /* the Zephyr API has no hard-reservation switch */
	}
	err = IS_ENABLED(PAPER_CASES_DECLARE_AT_START) ? 0 : declare(tid, t);
	if (err == 0 && watch_misses) {
		err = qf_thread_deadline_miss_callback_set(tid, count_miss, (void *)(uintptr_t)i);
	}
	slots[i] = qf_thread_slot(tid);
	return err;
}

int64_t paper_case_run(const struct qf_golden *set, int milliseconds_per_unit, bool watch_misses)
{
	int n = 0;
	int err = 0;

	if (set->n_tasks > MAX_TASKS) {
		return -EINVAL;
	}
	running = set;
	unit_ms = milliseconds_per_unit;
	for (n = 0; n < set->n_tasks && err == 0; n++) {
		atomic_set(&misses[n], 0);
		err = create(n, watch_misses);
	}
	/* Every task must be asleep before time zero: one that reaches its k_sleep() later
	 * wakes a tick late and shifts its whole period grid (on QEMU the way there takes ticks).
	 */
	time_zero = k_uptime_ticks() + k_ms_to_ticks_ceil64(10);
	for (int i = 0; i < n && err == 0; i++) {
		k_thread_start(&tasks[i]);
	}
	if (err == 0) {
		sleep_until(set->horizon_ns);
	}
	for (int i = 0; i < n; i++) {
		k_thread_abort(&tasks[i]);
	}
	return err == 0 ? time_zero : err;
}

int paper_case_slot(int task)
{
	return task >= 0 && task < MAX_TASKS ? slots[task] : -1;
}

int paper_case_misses(int task)
{
	return task >= 0 && task < MAX_TASKS ? (int)atomic_get(&misses[task]) : 0;
}
