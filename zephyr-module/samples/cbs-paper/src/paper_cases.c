/*
 * Test Case 1: hard task (C, T) = (4, 7) and a CBS (Q, T) = (3, 8); jobs J1 (C = 4) at t = 3 and
 * J2 (C = 3) at t = 13. Test Case 2: hard tasks (2, 6) and (3, 9), a CBS (2, 6); jobs J1 (C = 3)
 * at t = 2, J2 (C = 3) at t = 12, J3 (C = 1) at t = 20. The CBS task emulates irregular
 * arrivals as in the paper, by setting at the end of each job the period that separates it from
 * the next arrival. A job's C is CPU time the thread itself consumes (its runtime statistics),
 * not the paper's k_busy_wait(C), which counts wall time and so shortens preempted jobs.
 */
#include <zephyr/kernel.h>
#include <qfabric/qfabric.h>

#include "paper_cases.h"

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
#define MAX_TASKS 3
#define MAX_JOBS 3

struct hard_task {
	int cost;
	int period;
};

struct paper_case {
	struct hard_task hard[2];
	int n_hard;
	int budget;
	int server_period;
	int arrival[MAX_JOBS];
	int cost[MAX_JOBS];
	int n_jobs;
};

static const struct paper_case cases[] = {
	{.hard = {{4, 7}}, .n_hard = 1, .budget = 3, .server_period = 8,
	 .arrival = {3, 13}, .cost = {4, 3}, .n_jobs = 2},
	{.hard = {{2, 6}, {3, 9}}, .n_hard = 2, .budget = 2, .server_period = 6,
	 .arrival = {2, 12, 20}, .cost = {3, 3, 1}, .n_jobs = 3},
};

K_THREAD_STACK_ARRAY_DEFINE(task_stacks, MAX_TASKS, STACK_SIZE);
static struct k_thread tasks[MAX_TASKS];
static int unit_ms;
static int64_t time_zero;
static int cbs_slot = -1;

static int cycles(int units)
{
	return (int)k_ms_to_cyc_ceil32(units * unit_ms);
}

/* Runs for @p units of this thread's own CPU time. */
static void execute(int units)
{
	k_thread_runtime_stats_t stats;
	uint64_t target;

	k_thread_runtime_stats_get(k_current_get(), &stats);
	target = stats.execution_cycles + k_ms_to_cyc_ceil64((int64_t)units * unit_ms);
	while (stats.execution_cycles < target) {
		k_busy_wait(10);
		k_thread_runtime_stats_get(k_current_get(), &stats);
	}
}

static void sleep_until_unit(int units)
{
	k_sleep(K_TIMEOUT_ABS_TICKS(time_zero + k_ms_to_ticks_ceil64((int64_t)units * unit_ms)));
}

static void run_hard(void *task, void *b, void *c)
{
	const struct hard_task *t = task;

	sleep_until_unit(0);
	period_set(k_current_get(), cycles(t->period));
	while (true) {
		(void)deadline_set(k_current_get(), cycles(t->period));
		execute(t->cost);
	}
}

static void run_server(void *pc, void *b, void *c)
{
	const struct paper_case *p = pc;

	budget_set(k_current_get(), cycles(p->budget));
	cbs_slot = qf_thread_slot(k_current_get());
	sleep_until_unit(p->arrival[0]);
	for (int j = 0; j < p->n_jobs; j++) {
		/* Ending job j - 1 waits for job j's arrival: the period is the gap between the
		 * two arrivals (for the first job, which starts at once, the gap to the next).
		 */
		int gap = j > 0 ? p->arrival[j] - p->arrival[j - 1] : p->arrival[1] - p->arrival[0];

		period_set(k_current_get(), cycles(gap));
		(void)deadline_set(k_current_get(), cycles(p->server_period));
		execute(p->cost[j]);
	}
	/* Done: the server's last job has completed; wait to be stopped. */
	k_sleep(K_FOREVER);
}

int64_t paper_case_run(int which, int milliseconds_per_unit, int horizon_units)
{
	const struct paper_case *p = &cases[which == 2 ? 1 : 0];
	int n = 0;

	unit_ms = milliseconds_per_unit;
	time_zero = k_uptime_ticks() + 2;
	for (int i = 0; i < p->n_hard; i++, n++) {
		k_thread_create(&tasks[n], task_stacks[n], STACK_SIZE, run_hard,
				(void *)&p->hard[i], NULL, NULL, TASK_PRIO, 0, K_NO_WAIT);
	}
	k_thread_create(&tasks[n], task_stacks[n], STACK_SIZE, run_server, (void *)p, NULL, NULL,
			TASK_PRIO, 0, K_NO_WAIT);
	n++;
	sleep_until_unit(horizon_units);
	for (int i = 0; i < n; i++) {
		k_thread_abort(&tasks[i]);
	}
	return time_zero;
}

int paper_case_cbs_slot(void)
{
	return cbs_slot;
}
