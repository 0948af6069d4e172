/*
 * qfabric periodic EDF and task-based CBS on a patched Zephyr kernel, as specifications:
 * each test runs one worker thread (so its control block is claimed and given back), measures
 * in kernel ticks (CONFIG_SYS_CLOCK_TICKS_PER_SEC=10000: 1 ms = 10 ticks) and, for the CBS,
 * reads the scheduler's own event trace.
 */
#include <zephyr/kernel.h>
#include <zephyr/ztest.h>
#include <string.h>
#include <qfabric/qfabric.h>
#include <qfabric/port.h>

/* The same specification for both hook modes: the patched kernel's syscalls, or the module's
 * qf_* functions on an unpatched kernel (CONFIG_TRACING_USER hooks).
 */
#ifdef CONFIG_QFABRIC_HOOKS_KERNEL_PATCH
#define deadline_set k_thread_deadline_set
#define period_set k_thread_period_set
#define miss_callback_set k_thread_deadline_miss_callback_set
#define budget_set k_thread_cbs_budget_set
#else
#define deadline_set qf_thread_deadline_set
#define period_set qf_thread_period_set
#define miss_callback_set qf_thread_deadline_miss_callback_set
#define budget_set qf_thread_cbs_budget_set
#endif

#define TICKS_PER_MS (CONFIG_SYS_CLOCK_TICKS_PER_SEC / 1000)
#define WORKER_PRIO 5
#define STACK_SIZE 2048
/* Timer expiries and wake-ups land on the next tick boundary at the latest. */
#define SLACK_TICKS 2

K_THREAD_STACK_DEFINE(worker_stack, STACK_SIZE);
K_THREAD_STACK_DEFINE(helper_stack, STACK_SIZE);
K_THREAD_STACK_DEFINE(second_helper_stack, STACK_SIZE);
static struct k_thread worker_thread;
static struct k_thread helper_thread;
static struct k_thread second_helper_thread;

static int ms(int milliseconds)
{
	return (int)k_ms_to_cyc_ceil32(milliseconds);
}

static int64_t now(void)
{
	return k_uptime_ticks();
}

static void run_worker_with(k_thread_entry_t entry, void *arg)
{
	k_thread_create(&worker_thread, worker_stack, STACK_SIZE, entry, arg, NULL, NULL,
			WORKER_PRIO, 0, K_NO_WAIT);
	zassert_ok(k_thread_join(&worker_thread, K_SECONDS(10)));
}

static void run_worker(k_thread_entry_t entry)
{
	run_worker_with(entry, NULL);
}

static void drain_trace(void)
{
	struct qf_event e;

	while (qf_trace_pop(&e)) {
	}
}

/* The kinds of this slot's events, in order, from the trace ("ARRIVAL,B_COND,..."). */
static void trace_kinds(int slot, const char *const *wanted, size_t n_wanted, char *out,
			size_t size)
{
	struct qf_event e;
	size_t len = 0;

	out[0] = '\0';
	while (qf_trace_pop(&e)) {
		bool keep = e.thread == slot;

		for (size_t i = 0; keep && i < n_wanted; i++) {
			if (strlen(wanted[i]) == e.kind_len &&
			    strncmp(wanted[i], e.kind, e.kind_len) == 0) {
				break;
			}
			if (i + 1 == n_wanted) {
				keep = false;
			}
		}
		if (keep && len + e.kind_len + 2 < size) {
			if (len > 0) {
				out[len++] = ',';
			}
			memcpy(&out[len], e.kind, e.kind_len);
			len += e.kind_len;
			out[len] = '\0';
		}
	}
}

/* First event of @p kind for @p slot in the trace (drains the ring up to it). */
static bool trace_find(int slot, const char *kind, struct qf_event *out)
{
	while (qf_trace_pop(out)) {
		if (out->thread == slot && strlen(kind) == out->kind_len &&
		    strncmp(kind, out->kind, out->kind_len) == 0) {
			return true;
		}
	}
	return false;
}

/* ---- durations ---- */

/* The port's cycles-to-ticks conversion (every duration argument of the thread API) is
 * Zephyr's k_cyc_to_ticks_ceil64, however it is computed: at the tick boundaries and at the
 * ends of the argument's range.
 */
ZTEST(qfabric_edf, test_cycles_to_ticks_is_the_kernels_ceiling)
{
	const uint32_t tick = k_ticks_to_cyc_floor32(1);
	const uint32_t cycles[] = {0U,        1U,           tick - 1U, tick,      tick + 1U,
				   2U * tick, 3U * tick - 1U, ms(1),     ms(1) + 1U, INT32_MAX,
				   UINT32_MAX - 1U, UINT32_MAX};

	for (size_t i = 0; i < ARRAY_SIZE(cycles); i++) {
		zassert_equal(qf_port_cycles_to_ticks(cycles[i]), k_cyc_to_ticks_ceil64(cycles[i]),
			      "%u cycles", cycles[i]);
	}
}

/* ---- deadline set without a period ---- */

static void plain_deadline(void *a, void *b, void *c)
{
	uint32_t before = k_cycle_get_32();

	zassert_ok(deadline_set(k_current_get(), ms(10)));
	int32_t offset = (int32_t)(k_current_get()->base.prio_deadline - before);

	zassert_true(offset >= ms(10) && offset <= ms(10) + ms(1),
		     "deadline %d cycles ahead, expected %d", offset, ms(10));
}

ZTEST(qfabric_edf, test_deadline_set_without_control_block_is_upstream_edf)
{
	run_worker(plain_deadline);
}

static void attached_aperiodic(void *a, void *b, void *c)
{
	/* Period 0: a control block, but aperiodic: deadline_set only sets the deadline. */
	zassert_ok(period_set(k_current_get(), 0));
	zassert_true(qf_thread_slot(k_current_get()) >= 0);
	int64_t t0 = now();

	zassert_ok(deadline_set(k_current_get(), ms(10)));
	zassert_true(now() - t0 <= 1, "aperiodic deadline_set must not sleep");
	int32_t offset = (int32_t)(k_current_get()->base.prio_deadline - k_cycle_get_32());

	zassert_true(offset > ms(8) && offset <= ms(10) + ms(1), "offset %d", offset);
}

ZTEST(qfabric_edf, test_deadline_set_without_period_does_not_suspend)
{
	run_worker(attached_aperiodic);
}

/* ---- deadline set with a period ---- */

static void periodic(void *a, void *b, void *c)
{
	zassert_ok(period_set(k_current_get(), ms(20)));
	/* Read before the call: the job is released at the tick the call starts, and the call
	 * (admission control included) can end a tick later; the slack covers the other way.
	 */
	int64_t release = now();

	zassert_ok(deadline_set(k_current_get(), ms(20)));
	for (int cycle = 1; cycle <= 3; cycle++) {
		k_busy_wait(3000);
		zassert_ok(deadline_set(k_current_get(), ms(20)));
		int64_t woke = now() - release;

		zassert_true(woke >= cycle * 20 * TICKS_PER_MS &&
			     woke <= cycle * 20 * TICKS_PER_MS + SLACK_TICKS,
			     "cycle %d released %lld ticks after the first", cycle, woke);
	}
}

ZTEST(qfabric_edf, test_deadline_set_with_period_releases_every_period)
{
	run_worker(periodic);
}

static void period_change_mid_cycle(void *a, void *b, void *c)
{
	zassert_ok(period_set(k_current_get(), ms(20)));
	int64_t release = now(); /* before the call, as in periodic() */

	zassert_ok(deadline_set(k_current_get(), ms(20)));
	k_busy_wait(2000);
	/* Shorter period mid-cycle: the next activation uses it at once. */
	zassert_ok(period_set(k_current_get(), ms(10)));
	zassert_ok(deadline_set(k_current_get(), ms(10)));
	int64_t woke = now() - release;

	zassert_true(woke >= 10 * TICKS_PER_MS && woke <= 10 * TICKS_PER_MS + SLACK_TICKS,
		     "released %lld ticks after the first, expected 100", woke);
}

ZTEST(qfabric_edf, test_period_change_mid_cycle_takes_effect_at_once)
{
	run_worker(period_change_mid_cycle);
}

static void overrun(void *a, void *b, void *c)
{
	zassert_ok(period_set(k_current_get(), ms(10)));
	zassert_ok(deadline_set(k_current_get(), ms(10)));
	k_busy_wait(15000);
	int64_t before = now();

	int status = deadline_set(k_current_get(), ms(10));

	/* This libc's number: ETIMEDOUT is 110 on glibc, 116 on newlib. */
	zassert_equal(status, -ETIMEDOUT, "status %d", status);
	zassert_true(now() - before <= 1, "an overrun cycle starts the next one at once");
}

ZTEST(qfabric_edf, test_period_overrun_is_an_error)
{
	run_worker(overrun);
}

static void deliberate_shortening(void *a, void *b, void *c)
{
	zassert_ok(period_set(k_current_get(), ms(20)));
	zassert_ok(deadline_set(k_current_get(), ms(20)));
	k_busy_wait(12000);
	/* The thread itself shortens its period below the time this cycle already took. */
	zassert_ok(period_set(k_current_get(), ms(10)));
	int64_t before = now();

	zassert_ok(deadline_set(k_current_get(), ms(10)));
	zassert_true(now() - before <= 1, "no suspension: the period is already over");
}

ZTEST(qfabric_edf, test_deliberate_period_shortening_is_not_an_error)
{
	run_worker(deliberate_shortening);
}

/* ---- error statuses: the C library's own errno values ---- */

static void bad_arguments(void *a, void *b, void *c)
{
	/* Refused by the module before the scheduler core is asked. */
	zassert_equal(period_set(k_current_get(), -1), -EINVAL, "negative period");
	zassert_ok(period_set(k_current_get(), 0));
	/* Refused by qf-sched itself (Error::ZeroDeadline), mapped to this libc's EINVAL. */
	zassert_equal(deadline_set(k_current_get(), 0), -EINVAL, "zero relative deadline");
	zassert_ok(deadline_set(k_current_get(), ms(10)));
}

ZTEST(qfabric_edf, test_bad_arguments_are_einval)
{
	run_worker(bad_arguments);
}

/* ---- deadline-miss callback ---- */

static int64_t missed_at;
static int misses;

static void on_miss(k_tid_t thread, void *arg)
{
	zassert_equal(thread, (k_tid_t)arg);
	missed_at = now();
	misses++;
}

static void late_job(void *a, void *b, void *c)
{
	misses = 0;
	zassert_ok(miss_callback_set(k_current_get(), on_miss,
						       k_current_get()));
	int64_t release = now();

	zassert_ok(deadline_set(k_current_get(), ms(5)));
	k_busy_wait(8000);
	zassert_equal(misses, 1, "one miss for one late cycle");
	zassert_true(missed_at - release >= 5 * TICKS_PER_MS &&
		     missed_at - release <= 5 * TICKS_PER_MS + SLACK_TICKS,
		     "callback ran %lld ticks after release, deadline was 50",
		     missed_at - release);
	/* A cycle that ends in time does not fire. */
	zassert_ok(deadline_set(k_current_get(), ms(5)));
	k_busy_wait(2000);
	zassert_ok(deadline_set(k_current_get(), ms(5)));
	k_busy_wait(1000);
	zassert_equal(misses, 1);
	zassert_ok(miss_callback_set(k_current_get(), NULL, NULL));
}

ZTEST(qfabric_edf, test_deadline_miss_callback_runs_at_the_deadline)
{
	run_worker(late_job);
}

/* ---- CBS ---- */

static const char *const arrivals[] = {"ARRIVAL", "B_COND"};

static void cbs_condition(void *a, void *b, void *c)
{
	int slot;
	char kinds[96];

	zassert_ok(budget_set(k_current_get(), ms(3)));
	slot = qf_thread_slot(k_current_get());
	drain_trace();
	/* Job 1: fresh server (c = 0, d = 0), always replenishes: d = r + 8, c = 3. */
	zassert_ok(deadline_set(k_current_get(), ms(8)));
	k_busy_wait(1000);
	/* Job 2 at r + 1: c·T = 2·8 = 16 < (d − r)·Q = 7·3 = 21: keeps c and d. */
	zassert_ok(deadline_set(k_current_get(), ms(8)));
	k_msleep(6);
	/* Job 3 at r + 7: 2·8 = 16 ≥ 1·3: replenishes. */
	zassert_ok(deadline_set(k_current_get(), ms(8)));
	trace_kinds(slot, arrivals, ARRAY_SIZE(arrivals), kinds, sizeof(kinds));
	zassert_str_equal(kinds, "ARRIVAL,B_COND,ARRIVAL,ARRIVAL,B_COND");
}

ZTEST(qfabric_edf, test_cbs_replenishment_condition_both_ways)
{
	Z_TEST_SKIP_IFNDEF(CONFIG_QFABRIC_CBS);
	run_worker(cbs_condition);
}

static void higher_priority_burst(void *a, void *b, void *c)
{
	k_busy_wait(3000);
}

static void cbs_preempted(void *a, void *b, void *c)
{
	struct qf_event arrival, away, back, done;
	int slot;

	zassert_ok(budget_set(k_current_get(), ms(5)));
	slot = qf_thread_slot(k_current_get());
	drain_trace();
	zassert_ok(deadline_set(k_current_get(), ms(20)));
	k_busy_wait(1000);
	/* Preempted for 3 ms by a higher-priority thread: no budget consumed meanwhile. */
	k_thread_create(&helper_thread, helper_stack, STACK_SIZE, higher_priority_burst, NULL,
			NULL, NULL, WORKER_PRIO - 2, 0, K_NO_WAIT);
	k_busy_wait(1000);
	zassert_ok(deadline_set(k_current_get(), ms(20)));
	zassert_true(trace_find(slot, "B_COND", &arrival), "arrival with a fresh budget traced");
	zassert_true(trace_find(slot, "SWT_AY", &away), "switch away traced");
	zassert_true(trace_find(slot, "SWT_TO", &back), "switch back traced");
	zassert_true(trace_find(slot, "COMPLETE", &done), "cycle end traced");
	zassert_equal(arrival.budget, 5 * TICKS_PER_MS, "full budget at the arrival");

	/* The budget pays exactly the time the thread ran, to the tick: compare it with the
	 * trace's own clock rather than with the nominal 1 ms busy waits, whose surroundings
	 * (thread creation, switches, the hooks) take a platform-dependent share of a tick or
	 * more (2 ticks on qemu_riscv32 under icount).
	 */
	int64_t ran_before = (int64_t)(away.time - arrival.time);
	int64_t ran_total = ran_before + (int64_t)(done.time - back.time);
	int64_t charged_before = (int64_t)(arrival.budget - away.budget);
	int64_t charged_total = (int64_t)(arrival.budget - done.budget);

	zassert_true(ran_before >= 1 * TICKS_PER_MS, "ran %lld ticks before preemption",
		     ran_before);
	zassert_true(charged_before >= ran_before - 1 && charged_before <= ran_before + 1,
		     "charged %lld ticks for %lld ticks of running", charged_before, ran_before);
	zassert_equal(back.budget, away.budget, "paused while preempted");
	zassert_true(back.time - away.time >= 3 * TICKS_PER_MS, "preempted for 3 ms");
	zassert_true(charged_total >= ran_total - 1 && charged_total <= ran_total + 1,
		     "charged %lld ticks for %lld ticks of running, preemption excluded",
		     charged_total, ran_total);
	k_thread_join(&helper_thread, K_FOREVER);
}

ZTEST(qfabric_edf, test_cbs_budget_pauses_across_preemption)
{
	Z_TEST_SKIP_IFNDEF(CONFIG_QFABRIC_CBS);
	run_worker(cbs_preempted);
}

static void cbs_exhausted(void *a, void *b, void *c)
{
	struct qf_event arrival;
	struct qf_event replenished;
	int slot;

	zassert_ok(budget_set(k_current_get(), ms(2)));
	slot = qf_thread_slot(k_current_get());
	drain_trace();
	zassert_ok(deadline_set(k_current_get(), ms(10)));
	int64_t returned = now();

	k_busy_wait(3000);
	zassert_true(trace_find(slot, "ARRIVAL", &arrival), "job arrival traced");
	zassert_true(trace_find(slot, "B_ROUT", &replenished), "budget exhaustion traced");
	/* The release is stamped when the call starts, and the call itself may take more than a
	 * tick (admission control, tracing), so the budget is measured from the trace's own
	 * release, not from a clock read after the call: the thread runs from its release on,
	 * so its 2 ms budget runs out 2 ms later.
	 */
	zassert_true((int64_t)arrival.time <= returned, "released at %llu, after the call (%lld)",
		     arrival.time, returned);
	zassert_true(replenished.time - arrival.time >= 2 * TICKS_PER_MS &&
		     replenished.time - arrival.time <= 2 * TICKS_PER_MS + SLACK_TICKS,
		     "exhausted %llu ticks after the release", replenished.time - arrival.time);
	zassert_equal(replenished.budget, 2 * TICKS_PER_MS, "refilled to Q");
	zassert_equal(replenished.deadline, arrival.deadline + 10 * TICKS_PER_MS,
		      "deadline postponed by one server period");
}

ZTEST(qfabric_edf, test_cbs_budget_exhaustion_postpones_the_deadline)
{
	Z_TEST_SKIP_IFNDEF(CONFIG_QFABRIC_CBS);
	run_worker(cbs_exhausted);
}

/* Who ran to the end, in order: one letter per thread. */
static char finish_order[4];
static atomic_t finish_count;

static void finished(char who)
{
	atomic_val_t at = atomic_inc(&finish_count);

	if (at < (atomic_val_t)sizeof(finish_order) - 1) {
		finish_order[at] = who;
	}
}

static void edf_peer(void *who, void *b, void *c)
{
	k_busy_wait(500);
	finished((char)(uintptr_t)who);
}

/* A plain EDF thread at the worker's priority, queued with a relative deadline. */
static void start_edf_peer(struct k_thread *thread, k_thread_stack_t *stack, char who,
			   int deadline_ms)
{
	k_thread_create(thread, stack, STACK_SIZE, edf_peer, (void *)(uintptr_t)who, NULL, NULL,
			WORKER_PRIO, 0, K_FOREVER);
	zassert_ok(deadline_set(thread, ms(deadline_ms)));
	k_thread_start(thread);
}

/* Two plain EDF peers' relative deadlines, and the order the three threads must finish in. */
struct peers_case {
	int a_ms;
	int b_ms;
	const char *order;
};

static void cbs_exhausted_among_peers(void *arg, void *b, void *c)
{
	const struct peers_case *peers = arg;

	memset(finish_order, 0, sizeof(finish_order));
	atomic_clear(&finish_count);
	zassert_ok(budget_set(k_current_get(), ms(2)));
	zassert_ok(deadline_set(k_current_get(), ms(10)));
	/* Same priority, later deadlines than this thread's 10 ms: both wait behind it. */
	start_edf_peer(&helper_thread, helper_stack, 'A', peers->a_ms);
	start_edf_peer(&second_helper_thread, second_helper_stack, 'B', peers->b_ms);
	/* At 2 ms the budget runs out and the deadline moves to 20 ms: the peers due before
	 * that now run first, and this thread resumes before the others.
	 */
	k_busy_wait(3000);
	finished('W');
	zassert_ok(k_thread_join(&helper_thread, K_SECONDS(1)));
	zassert_ok(k_thread_join(&second_helper_thread, K_SECONDS(1)));
	zassert_str_equal(finish_order, peers->order, "finished in the order %s, not %s",
			  finish_order, peers->order);
}

ZTEST(qfabric_edf, test_cbs_budget_exhaustion_requeues_by_the_new_deadline)
{
	/* Between the peers, behind both (the queue's tail), and still ahead of both. */
	static const struct peers_case cases[] = {
		{.a_ms = 15, .b_ms = 25, .order = "AWB"},
		{.a_ms = 15, .b_ms = 17, .order = "ABW"},
		{.a_ms = 22, .b_ms = 25, .order = "WAB"},
	};

	Z_TEST_SKIP_IFNDEF(CONFIG_QFABRIC_CBS);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		run_worker_with(cbs_exhausted_among_peers, (void *)&cases[i]);
	}
}

/* ---- admission control ---- */

static int second_status;

static void second_server(void *a, void *b, void *c)
{
	zassert_ok(budget_set(k_current_get(), ms(6)));
	second_status = deadline_set(k_current_get(), ms(10));
}

static void first_server(void *a, void *b, void *c)
{
	zassert_ok(budget_set(k_current_get(), ms(6)));
	zassert_ok(deadline_set(k_current_get(), ms(10)));
	/* 0.6 admitted; another 0.6 would exceed one CPU. */
	k_thread_create(&helper_thread, helper_stack, STACK_SIZE, second_server, NULL, NULL,
			NULL, WORKER_PRIO - 1, 0, K_NO_WAIT);
	k_thread_join(&helper_thread, K_FOREVER);
	zassert_equal(second_status, -ENOSPC, "second server admitted: %d", second_status);
}

ZTEST(qfabric_edf, test_admission_rejects_over_one_cpu)
{
	Z_TEST_SKIP_IFNDEF(CONFIG_QFABRIC_CBS); /* the servers' bandwidth is their budget */
	run_worker(first_server);
	/* The first server's thread exited: its bandwidth is free again. */
	k_thread_create(&helper_thread, helper_stack, STACK_SIZE, second_server, NULL, NULL, NULL,
			WORKER_PRIO, 0, K_NO_WAIT);
	k_thread_join(&helper_thread, K_FOREVER);
	zassert_ok(second_status);
}

/* ---- without the CBS (CONFIG_QFABRIC_CBS=n) ---- */

static void budget_refused(void *a, void *b, void *c)
{
	zassert_equal(budget_set(k_current_get(), ms(2)), -ENOTSUP, "a budget without the CBS");
	/* The thread still gets its control block and its periodic EDF. */
	zassert_ok(period_set(k_current_get(), ms(5)));
	zassert_true(qf_thread_slot(k_current_get()) >= 0);
}

ZTEST(qfabric_edf, test_without_the_cbs_budgets_are_refused_and_switches_not_hooked)
{
	Z_TEST_SKIP_IFDEF(CONFIG_QFABRIC_CBS);
	/* Nothing else in this suite's configuration instruments switches: that qfabric does
	 * not ask for it means the context-switch path is upstream's.
	 */
	zassert_false(IS_ENABLED(CONFIG_INSTRUMENT_THREAD_SWITCHING));
	run_worker(budget_refused);
}

ZTEST_SUITE(qfabric_edf, NULL, NULL, NULL, NULL, NULL);
