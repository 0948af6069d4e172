/*
 * The qfabric syscalls from user mode (CONFIG_USERSPACE, patched kernel): a user thread runs its
 * own periodic cycles on its own CBS budget, a supervisor's deadline-miss callback watches a
 * user thread's jobs, and the verification handlers (src/syscalls.c)
 * stop with a kernel oops what a user thread must not do: negative durations, setting a
 * deadline-miss callback (it would run in interrupt context) and configuring a thread it has no
 * permission on.
 *
 * The qfabric calls run in the syscall handlers on the thread's privileged stack, and budget
 * exhaustions interrupt user code: this suite is the only one that exercises either.
 *
 * Each case runs one fresh user thread. Results travel back in ZTEST_BMEM variables (which user
 * threads may write) and are checked by the supervisor test thread after the join.
 */
#include <zephyr/kernel.h>
#include <zephyr/ztest.h>
#include <zephyr/ztest_error_hook.h>
#include <string.h>
#include <qfabric/qfabric.h>

#define TICKS_PER_MS (CONFIG_SYS_CLOCK_TICKS_PER_SEC / 1000)
#define WORKER_PRIO 5
#define STACK_SIZE 2048
/* Timer expiries and wake-ups land on the next tick boundary at the latest. */
#define SLACK_TICKS 2
#define CYCLES 3

K_THREAD_STACK_DEFINE(user_stack, STACK_SIZE);
static struct k_thread user_thread;
/* A live thread the user threads are never given permission on. */
K_THREAD_STACK_DEFINE(other_stack, 1024);
static struct k_thread other_thread;

static int ms(int milliseconds)
{
	return (int)k_ms_to_cyc_ceil32(milliseconds);
}

/* How much of the worker's privileged stack (where its syscalls run) was used, in bytes, or -1
 * where that stack cannot be inspected. Paint it before the thread starts, count what is left.
 */
#define PAINT 0xa5
#define FRAME_ROOM 64 /* the initial exception frame k_thread_create put at its top */

static int priv_stack_used = -1;

#if defined(CONFIG_ARM) && defined(CONFIG_USERSPACE)
static void priv_stack_paint(struct k_thread *thread)
{
	memset((void *)thread->arch.priv_stack_start, PAINT,
	       thread->arch.priv_stack_end - thread->arch.priv_stack_start - FRAME_ROOM);
}

static int priv_stack_measure(struct k_thread *thread)
{
	const uint8_t *p = (const uint8_t *)thread->arch.priv_stack_start;
	const uint8_t *end = (const uint8_t *)thread->arch.priv_stack_end;

	while (p < end && *p == PAINT) {
		p++;
	}
	return (int)(end - p);
}
#else
static void priv_stack_paint(struct k_thread *thread)
{
	ARG_UNUSED(thread);
}

static int priv_stack_measure(struct k_thread *thread)
{
	ARG_UNUSED(thread);
	return -1;
}
#endif

/* Runs @p entry in a new user thread (no inherited permissions: it may use only itself) and
 * waits for it to end, normally or by an oops.
 */
static void run_user_configured(k_thread_entry_t entry, void (*configure)(k_tid_t thread))
{
	k_thread_create(&user_thread, user_stack, STACK_SIZE, entry, NULL, NULL, NULL, WORKER_PRIO,
			K_USER, K_FOREVER);
	if (configure != NULL) {
		configure(&user_thread);
	}
	priv_stack_paint(&user_thread);
	k_thread_start(&user_thread);
	zassert_ok(k_thread_join(&user_thread, K_SECONDS(10)));
	priv_stack_used = priv_stack_measure(&user_thread);
}

static void run_user(k_thread_entry_t entry)
{
	run_user_configured(entry, NULL);
}

/* ---- what a user thread may do ---- */

ZTEST_BMEM static bool was_user;
ZTEST_BMEM static int period_status;
ZTEST_BMEM static int budget_status;
ZTEST_BMEM static int clear_status;
ZTEST_BMEM static int deadline_status[CYCLES + 1];
ZTEST_BMEM static int64_t woke_after[CYCLES + 1];

static void periodic_user(void *a, void *b, void *c)
{
	k_tid_t self = k_current_get();

	was_user = k_is_user_context();
	period_status = k_thread_period_set(self, ms(20));
	/* 3 ms of work per job on a 2 ms budget: the budget runs out in user code every cycle. */
	budget_status = k_thread_cbs_budget_set(self, ms(2));
	clear_status = k_thread_deadline_miss_callback_set(self, NULL, NULL);

	int64_t release = k_uptime_ticks();

	deadline_status[0] = k_thread_deadline_set(self, ms(20));
	for (int cycle = 1; cycle <= CYCLES; cycle++) {
		k_busy_wait(3000);
		deadline_status[cycle] = k_thread_deadline_set(self, ms(20));
		woke_after[cycle] = k_uptime_ticks() - release;
	}
}

/* Drains the trace ring; returns how many budget exhaustions (B_ROUT) it held. */
static int budget_exhaustions(void)
{
	struct qf_event e;
	int count = 0;

	while (qf_trace_pop(&e)) {
		if (e.kind_len == strlen("B_ROUT") && strncmp(e.kind, "B_ROUT", e.kind_len) == 0) {
			count++;
		}
	}
	return count;
}

ZTEST(qfabric_user, test_user_thread_runs_periodic_cycles_on_its_budget)
{
	(void)budget_exhaustions();
	memset(deadline_status, 0xff, sizeof(deadline_status));
	run_user(periodic_user);

	zassert_true(was_user, "the worker ran in user mode");
	zassert_ok(period_status, "k_thread_period_set from user mode");
	zassert_ok(budget_status, "k_thread_cbs_budget_set from user mode");
	zassert_ok(clear_status, "a user thread may clear its deadline-miss callback");
	for (int cycle = 0; cycle <= CYCLES; cycle++) {
		zassert_ok(deadline_status[cycle], "k_thread_deadline_set, cycle %d", cycle);
	}
	for (int cycle = 1; cycle <= CYCLES; cycle++) {
		zassert_true(woke_after[cycle] >= cycle * 20 * TICKS_PER_MS &&
				     woke_after[cycle] <= cycle * 20 * TICKS_PER_MS + SLACK_TICKS,
			     "cycle %d released %lld ticks after the first", cycle,
			     woke_after[cycle]);
	}
	/* Only the worker has a budget here, so every exhaustion traced is its own. */
	zassert_true(budget_exhaustions() >= CYCLES, "the budget ran out in every cycle");
	/* The heaviest qfabric syscall path (admission control's 128-bit division in the first
	 * k_thread_deadline_set) must leave room on the default privileged stack.
	 */
	if (priv_stack_used >= 0) {
		TC_PRINT("privileged stack used: %d of %d bytes\n", priv_stack_used,
			 CONFIG_PRIVILEGED_STACK_SIZE);
		zassert_true(priv_stack_used <= CONFIG_PRIVILEGED_STACK_SIZE * 3 / 4,
			     "syscalls used %d of the %d-byte privileged stack", priv_stack_used,
			     CONFIG_PRIVILEGED_STACK_SIZE);
	}
}

/* A supervisor watches a user thread: it sets the thread's miss callback (which user mode may
 * not) before the thread starts, and the callback runs in the timer interrupt that finds the
 * user code still in its job at the deadline.
 */
static int64_t missed_at;
static k_tid_t missed_thread;
static void *missed_arg;
ZTEST_BMEM static int64_t job_released;
ZTEST_BMEM static int late_status;

static void on_late_job(k_tid_t thread, void *arg)
{
	missed_at = k_uptime_ticks();
	missed_thread = thread;
	missed_arg = arg;
}

static void watch(k_tid_t thread)
{
	zassert_ok(k_thread_deadline_miss_callback_set(thread, on_late_job, &missed_at));
}

static void late_user_job(void *a, void *b, void *c)
{
	job_released = k_uptime_ticks();
	late_status = k_thread_deadline_set(k_current_get(), ms(5));
	k_busy_wait(8000);
}

ZTEST(qfabric_user, test_supervisor_miss_callback_fires_for_a_user_thread)
{
	missed_thread = NULL;
	late_status = -1;
	run_user_configured(late_user_job, watch);

	zassert_ok(late_status, "k_thread_deadline_set from user mode");
	zassert_equal(missed_thread, &user_thread, "the callback named the late thread");
	zassert_equal(missed_arg, &missed_at, "the callback got its argument");
	zassert_true(missed_at - job_released >= 5 * TICKS_PER_MS &&
			     missed_at - job_released <= 5 * TICKS_PER_MS + SLACK_TICKS,
		     "missed %lld ticks after the release, deadline 5 ms", missed_at - job_released);
}

/* ---- what the verification handlers refuse ---- */

ZTEST_BMEM static bool returned;

static void on_miss(k_tid_t thread, void *arg)
{
	ARG_UNUSED(thread);
	ARG_UNUSED(arg);
}

static void negative_period(void *a, void *b, void *c)
{
	ztest_set_fault_valid(true);
	(void)k_thread_period_set(k_current_get(), -1);
	returned = true;
}

static void negative_budget(void *a, void *b, void *c)
{
	ztest_set_fault_valid(true);
	(void)k_thread_cbs_budget_set(k_current_get(), -1);
	returned = true;
}

static void miss_callback(void *a, void *b, void *c)
{
	ztest_set_fault_valid(true);
	(void)k_thread_deadline_miss_callback_set(k_current_get(), on_miss, NULL);
	returned = true;
}

static void foreign_thread(void *a, void *b, void *c)
{
	ztest_set_fault_valid(true);
	(void)k_thread_period_set(&other_thread, ms(20));
	returned = true;
}

/* Runs @p entry as a user thread and checks its call never returned: an oops ended it. */
static void expect_oops(k_thread_entry_t entry)
{
	returned = false;
	run_user(entry);
	zassert_false(returned, "the syscall returned to user mode instead of oopsing");
}

ZTEST(qfabric_user, test_negative_period_oopses)
{
	expect_oops(negative_period);
}

ZTEST(qfabric_user, test_negative_budget_oopses)
{
	expect_oops(negative_budget);
}

ZTEST(qfabric_user, test_setting_a_miss_callback_oopses)
{
	expect_oops(miss_callback);
}

static void other_body(void *a, void *b, void *c)
{
	k_sleep(K_FOREVER);
}

ZTEST(qfabric_user, test_configuring_a_thread_without_permission_oopses)
{
	k_thread_create(&other_thread, other_stack, K_THREAD_STACK_SIZEOF(other_stack), other_body,
			NULL, NULL, NULL, WORKER_PRIO, 0, K_NO_WAIT);
	expect_oops(foreign_thread);
	/* Nothing reached the scheduler: the thread has no control block. */
	zassert_equal(qf_thread_slot(&other_thread), -1);
	k_thread_abort(&other_thread);
}

ZTEST_SUITE(qfabric_user, NULL, NULL, NULL, NULL, NULL);
