/*
 * The qfabric MCU executor as a specification, over a loopback transport (no OpenAMP): the
 * frame service answers every input with an ABI v1 status, and a resident chain is a periodic
 * thread with its own CBS that sends one result per period. Times are kernel ticks
 * (CONFIG_SYS_CLOCK_TICKS_PER_SEC=10000: 1 ms = 10 ticks).
 */
#include <zephyr/kernel.h>
#include <zephyr/ztest.h>
#include <string.h>
#include <qfabric/qfabric.h>
#include <qfabric/executor.h>

#include "qf_test_frames.h"

#define TICKS_PER_MS (CONFIG_SYS_CLOCK_TICKS_PER_SEC / 1000)
/* Timer expiries and wake-ups land on the next tick boundary at the latest. */
#define SLACK_TICKS 2
#define CHAIN_PRIO 5

static uint8_t req[QF_FRAME_MAX_LEN + 8];
static uint8_t out[QF_FRAME_MAX_LEN];

/* Serves @p len bytes of req and checks the response header agrees with the return value. */
static int serve(size_t len, size_t cap, struct qf_served *served)
{
	int status = qf_executor_serve(req, len, out, cap, served);

	if (status >= 0) {
		zassert_true(served->len >= HEADER_LEN && served->len <= cap, "len %zu",
			     served->len);
		zassert_mem_equal(out, "QFAB", 4);
		zassert_equal(out[5], 2, "a response");
		zassert_equal(out[7], status, "header status %d, returned %d", out[7], status);
		zassert_equal(served->status, status);
	}
	return status;
}

static void *reset(void)
{
	qf_executor_replay_reset();
	return NULL;
}

/* ---- frame service ---- */

ZTEST(qfabric_executor, test_valid_frame_is_answered_ok_with_its_result)
{
	struct qf_served served;

	qf_executor_replay_reset();
	size_t len = add_request(req, 1, 0, 40, 2);

	zassert_equal(serve(len, sizeof(out), &served), QF_STATUS_OK);
	zassert_equal(served.len, HEADER_LEN + 4);
	zassert_equal(served.task_id, TASK_ADD);
	zassert_equal(get_be(out + 12, 8), 1, "invocation id echoed");
	zassert_equal((int32_t)get_be(out + HEADER_LEN, 4), 42);
}

ZTEST(qfabric_executor, test_golden_add_request_of_the_reference)
{
	struct qf_served served;

	qf_executor_replay_reset();
	memcpy(req, golden_add_request, sizeof(golden_add_request));
	zassert_equal(serve(sizeof(golden_add_request), sizeof(out), &served), QF_STATUS_OK);
	zassert_equal(get_be(out + 24, 4), 11, "contract id echoed");
	zassert_equal(get_be(out + 28, 4), 50000, "deadline echoed");
	zassert_equal((int32_t)get_be(out + HEADER_LEN, 4), -1, "INT32_MIN + INT32_MAX");

	uint8_t expected[HEADER_LEN + 4];
	static const uint8_t minus_one[4] = {0xff, 0xff, 0xff, 0xff};

	zassert_equal(expected_response(golden_add_request, QF_STATUS_OK, minus_one, 4, expected),
		      served.len);
	zassert_mem_equal(out, expected, served.len, "the whole response, byte for byte");
}

ZTEST(qfabric_executor, test_compute_time_comes_from_the_cycle_counter)
{
	uint8_t samples[64];
	struct qf_served served;

	qf_executor_replay_reset();
	for (int i = 0; i < 64; i++) {
		samples[i] = (uint8_t)(i * 37);
	}
	size_t len = request(req, TASK_FIR_X512, 1, 0, samples, sizeof(samples));
	uint64_t before = k_cyc_to_ns_floor64(k_cycle_get_32());

	zassert_equal(serve(len, sizeof(out), &served), QF_STATUS_OK);
	uint64_t elapsed = k_cyc_to_ns_floor64(k_cycle_get_32()) - before;

	zassert_equal(served.len, HEADER_LEN + 64);
	zassert_true(served.compute_ns <= elapsed + 1000, "compute %llu ns within the call's %llu",
		     served.compute_ns, elapsed);
#ifndef CONFIG_ARCH_POSIX
	/* On hardware (or QEMU icount) 512 FIR passes take cycles; native_sim's simulated clock
	 * does not advance while code runs.
	 */
	zassert_true(served.compute_ns > 0, "fir_x512 took no time");
#endif
	TC_PRINT("fir_x512: %llu ns\n", served.compute_ns);
}

ZTEST(qfabric_executor, test_malformed_frames_get_a_status)
{
	struct qf_served served;

	qf_executor_replay_reset();
	zassert_equal(serve(0, sizeof(out), &served), QF_STATUS_MALFORMED, "empty");

	size_t len = add_request(req, 2, 0, 1, 1);

	zassert_equal(serve(len - 1, sizeof(out), &served), QF_STATUS_MALFORMED, "truncated");
	req[0] = 'X';
	zassert_equal(serve(len, sizeof(out), &served), QF_STATUS_MALFORMED, "magic");

	len = add_request(req, 3, 0, 1, 1);
	req[4] = 2;
	zassert_equal(serve(len, sizeof(out), &served), QF_STATUS_VERSION_MISMATCH);

	len = add_request(req, 4, 0, 1, 1);
	put_be(req + 8, 999, 4);
	zassert_equal(serve(len, sizeof(out), &served), QF_STATUS_UNKNOWN_TASK);
	zassert_equal(served.task_id, 999, "task id echoed for the caller to match");

	len = add_request(req, 5, 0, 1, 1);
	req[5] = 2;
	zassert_equal(serve(len, sizeof(out), &served), QF_STATUS_MALFORMED, "a response");
}

ZTEST(qfabric_executor, test_oversized_frames_get_a_status)
{
	struct qf_served served;

	memset(req, 0, sizeof(req));
	add_request(req, 6, 0, 1, 1);
	zassert_equal(serve(QF_FRAME_MAX_LEN + 1, sizeof(out), &served), QF_STATUS_OVERSIZED);
	add_request(req, 7, 0, 1, 1);
	put_be(req + 32, 989, 2); /* payload length above 988 */
	zassert_equal(serve(HEADER_LEN + 989, sizeof(out), &served), QF_STATUS_OVERSIZED);
}

ZTEST(qfabric_executor, test_response_larger_than_the_transport_buffer_is_an_error_status)
{
	uint8_t samples[64] = {1, 2, 3};
	struct qf_served served;

	qf_executor_replay_reset();
	size_t len = request(req, TASK_FIR_X1, 8, 0, samples, sizeof(samples));

	/* fir_x1 answers 36 + 64 bytes; a transport with 60 bytes gets EXECUTION_ERROR. */
	zassert_equal(serve(len, 60, &served), QF_STATUS_EXECUTION_ERROR);
	zassert_equal(served.len, HEADER_LEN);
}

ZTEST(qfabric_executor, test_unusable_arguments_are_errno_not_a_crash)
{
	struct qf_served served;
	size_t len = add_request(req, 9, 0, 1, 1);

	zassert_equal(qf_executor_serve(req, len, out, HEADER_LEN - 1, &served), -EINVAL);
	zassert_equal(qf_executor_serve(req, len, NULL, sizeof(out), &served), -EINVAL);
	zassert_equal(qf_executor_serve(req, len, out, sizeof(out), NULL), -EINVAL);
	zassert_equal(qf_executor_serve(NULL, 5, out, sizeof(out), &served), -EINVAL);
}

ZTEST(qfabric_executor, test_garbage_never_crashes)
{
	uint32_t x = 0x12345678;
	struct qf_served served;
	int statuses[8] = {0};

	for (int round = 0; round < 2000; round++) {
		size_t len;

		/* xorshift32: half the rounds keep a valid header with a random payload. */
		for (size_t i = 0; i < 128; i++) {
			x ^= x << 13;
			x ^= x >> 17;
			x ^= x << 5;
			req[i] = (uint8_t)x;
		}
		len = x % 129;
		if (round % 2 == 0) {
			uint8_t payload[64];

			memcpy(payload, req + 64, sizeof(payload));
			len = request(req, 1 + x % 7, round, 0, payload, x % 65);
		}
		int status = serve(len, sizeof(out), &served);

		zassert_true(status >= 0 && status <= QF_STATUS_EXECUTION_ERROR, "status %d",
			     status);
		statuses[status]++;
	}
	zassert_true(statuses[QF_STATUS_MALFORMED] > 0);
	zassert_true(statuses[QF_STATUS_UNKNOWN_TASK] > 0);
}

ZTEST(qfabric_executor, test_request_encode_writes_the_wire_format)
{
	uint8_t payload[8], frame[64];
	size_t len = add_request(req, 0x0102030405060708ULL, 7, 40, 2);

	put_be(req + 24, 11, 4); /* contract id */
	memcpy(payload, req + HEADER_LEN, sizeof(payload));
	zassert_equal(qf_request_encode(TASK_ADD, 0x0102030405060708ULL, 7, 11, payload,
					sizeof(payload), frame, sizeof(frame)),
		      (int)len);
	zassert_mem_equal(frame, req, len);
	zassert_equal(qf_request_encode(999, 1, 0, 0, payload, sizeof(payload), frame,
					sizeof(frame)),
		      -EINVAL, "unknown task");
	zassert_equal(qf_request_encode(TASK_ADD, 1, 0, 0, payload, sizeof(payload), frame,
					len - 1),
		      -ENOSPC, "does not fit");
}

ZTEST(qfabric_executor, test_duplicate_invocation_is_refused_and_older_epoch_is_stale)
{
	struct qf_served served;

	qf_executor_replay_reset();
	size_t len = add_request(req, 77, 5, 2, 3);

	zassert_equal(serve(len, sizeof(out), &served), QF_STATUS_OK);
	zassert_equal(serve(len, sizeof(out), &served), QF_STATUS_DUPLICATE);
	zassert_equal(served.compute_ns, 0, "a duplicate does not run");
	len = add_request(req, 78, 4, 2, 3);
	zassert_equal(serve(len, sizeof(out), &served), QF_STATUS_STALE);
	/* A malformed request does not use up its invocation id. */
	len = add_request(req, 79, 5, 2, 3);
	zassert_equal(serve(len - 1, sizeof(out), &served), QF_STATUS_MALFORMED);
	zassert_equal(serve(len, sizeof(out), &served), QF_STATUS_OK);
	/* After a reset (the MCU rebooted) the same invocation is new again. */
	qf_executor_replay_reset();
	len = add_request(req, 77, 5, 2, 3);
	zassert_equal(serve(len, sizeof(out), &served), QF_STATUS_OK);
}

/* ---- resident chains, results captured by a loopback sink ---- */

#define MAX_RESULTS 16

struct result {
	int64_t at;
	uint64_t invocation;
	int32_t value;
	uint32_t contract;
	uint8_t status;
};

static struct result results[MAX_RESULTS];
static volatile int n_results;
/* Least unused stack the chain thread had when sending (its deepest point is the job). */
static size_t stack_unused_min;
static volatile bool measure_stack;
/* Microseconds each send takes (a slow transport), paid by the chain thread. */
static volatile int send_busy_us;

static int loopback(const uint8_t *frame, size_t len, void *ctx)
{
	zassert_equal(ctx, results);
	size_t unused;

	if (send_busy_us > 0) {
		k_busy_wait(send_busy_us);
	}
	if (n_results < MAX_RESULTS && len >= HEADER_LEN + 4) {
		results[n_results] = (struct result){
			.at = k_uptime_ticks(),
			.invocation = get_be(frame + 12, 8),
			.value = (int32_t)get_be(frame + HEADER_LEN, 4),
			.contract = (uint32_t)get_be(frame + 24, 4),
			.status = frame[7],
		};
		n_results++;
	}
	/* Only where asked: the scan is slow under QEMU and would use the chain's budget. */
	if (measure_stack && k_thread_stack_space_get(k_current_get(), &unused) == 0) {
		stack_unused_min = MIN(stack_unused_min, unused);
	}
	return 0;
}

static void *chains_setup(void)
{
	qf_executor_sink_set(loopback, results);
	return NULL;
}

static void drain_trace(void)
{
	struct qf_event e;

	while (qf_trace_pop(&e)) {
	}
}

static void chains_before(void *fixture)
{
	n_results = 0;
	send_busy_us = 0;
	stack_unused_min = SIZE_MAX;
	measure_stack = false;
	drain_trace();
}

static int start_add_chain(int period_ms, int budget_ms, uint64_t first_invocation)
{
	static uint8_t template[HEADER_LEN + 8];
	size_t len = add_request(template, first_invocation, 1, 40, 2);
	struct qf_chain_config config = {
		.request = template,
		.request_len = len,
		.period = (int)k_ms_to_cyc_ceil32(period_ms),
		.budget = (int)k_ms_to_cyc_ceil32(budget_ms),
		.priority = CHAIN_PRIO,
	};

	return qf_chain_start(&config);
}

ZTEST(qfabric_executor_chains, test_chain_sends_one_result_per_period)
{
	const int periods = 5;
	struct qf_chain_stats stats;
	int chain = start_add_chain(10, 2, 1000);

	zassert_true(chain >= 0, "start: %d", chain);
	/* Releases at 0, 10, ..., 40 ms; stop before the sixth. */
	k_sleep(K_MSEC(10 * periods - 5));
	zassert_ok(qf_chain_stats_get(chain, &stats));
	zassert_ok(qf_chain_stop(chain));

	zassert_equal(n_results, periods, "%d results in %d periods", n_results, periods);
	for (int k = 0; k < periods; k++) {
		int64_t offset = results[k].at - results[0].at;

		zassert_equal(results[k].status, QF_STATUS_OK);
		zassert_equal(results[k].value, 42);
		zassert_equal(results[k].invocation, 1000 + k, "job %d", k);
		zassert_true(offset >= k * 10 * TICKS_PER_MS - SLACK_TICKS &&
			     offset <= k * 10 * TICKS_PER_MS + SLACK_TICKS,
			     "result %d at +%lld ticks, expected +%d", k, offset,
			     k * 10 * TICKS_PER_MS);
	}
	zassert_equal(stats.releases, periods);
	zassert_equal(stats.results, periods);
	zassert_equal(stats.sent, periods);
	zassert_equal(stats.overruns, 0);
	zassert_equal(stats.next_invocation, 1000 + periods);
	zassert_true(stats.lateness_max <= SLACK_TICKS * (1000000000ULL / CONFIG_SYS_CLOCK_TICKS_PER_SEC),
		     "lateness %llu ns", stats.lateness_max);
	zassert_equal(qf_chain_stats_get(chain, &stats), -EINVAL, "stopped chains are gone");
}

static bool kind_is(const struct qf_event *e, const char *kind)
{
	return e->kind_len == strlen(kind) && strncmp(e->kind, kind, e->kind_len) == 0;
}

ZTEST(qfabric_executor_chains, test_chain_budget_is_enforced_by_its_cbs)
{
	const int periods = 3;
	const int64_t period = 10 * TICKS_PER_MS, budget = 2 * TICKS_PER_MS;
	struct qf_event e;
	int64_t releases[4], refills[8], refill_deadlines[8], away[16], back[16];
	int n_releases = 0, n_refills = 0, n_away = 0, n_back = 0;

	/* Each job's send takes 3 ms of CPU; the chain's CBS grants Q = 2 ms per T = 10 ms. */
	send_busy_us = 3000;
	int chain = start_add_chain(10, 2, 1);

	zassert_true(chain >= 0, "start: %d", chain);
	int slot = qf_thread_slot(qf_chain_thread(chain));

	zassert_true(slot >= 0, "the chain thread has a control block");
	k_sleep(K_MSEC(10 * periods - 5));
	zassert_ok(qf_chain_stop(chain));

	zassert_equal(n_results, periods, "still one result per period");
	while (qf_trace_pop(&e)) {
		if (e.thread != slot) {
			continue;
		}
		if (kind_is(&e, "ARRIVAL") && n_releases < ARRAY_SIZE(releases)) {
			releases[n_releases++] = (int64_t)e.time;
		}
		if (kind_is(&e, "SWT_AY") && n_away < ARRAY_SIZE(away)) {
			away[n_away++] = (int64_t)e.time;
		}
		if (kind_is(&e, "SWT_TO") && n_back < ARRAY_SIZE(back)) {
			back[n_back++] = (int64_t)e.time;
		}
		if (kind_is(&e, "B_ROUT") && n_refills < ARRAY_SIZE(refills)) {
			zassert_equal(e.budget, budget, "refilled to Q");
			refill_deadlines[n_refills] = (int64_t)e.deadline;
			refills[n_refills++] = (int64_t)e.time;
		}
	}
	/* 9 ms of CPU on a 2 ms budget: the initial Q and four refills (the CBS keeps a
	 * remaining budget across releases while its deadline is still ahead); a fifth when the
	 * jobs' own code and whole-tick charging add up past 10 ms (QEMU).
	 */
	zassert_true(n_refills == 4 || n_refills == 5, "%d budget exhaustions", n_refills);
	zassert_equal(refill_deadlines[0] - releases[0], 2 * period,
		      "first exhaustion postpones the deadline by T");
	for (int i = 1; i < n_refills; i++) {
		zassert_equal(refill_deadlines[i] - refill_deadlines[i - 1], period,
			      "each exhaustion postpones the deadline by T");
	}
	zassert_true(n_releases >= periods, "%d releases traced", n_releases);
	for (int k = 0; k < periods; k++) {
		int in_job = 0;
		int64_t starter_ran = 0;

		/* Job 0 starts inside qf_chain_start(): its handshake hands the CPU back to the
		 * (cooperative, higher-priority) test thread right after the first release, until
		 * the test sleeps. That time is the starter's, not a throttle; on fast platforms it
		 * is under a tick, on qemu_riscv32 three. Later jobs must never be switched away:
		 * a soft CBS postpones the deadline and lets the job run on.
		 */
		for (int i = 0; i < n_away; i++) {
			if (away[i] <= releases[k] || away[i] >= results[k].at) {
				continue;
			}
			zassert_equal(k, 0, "job %d switched away at %lld", k, away[i]);
			for (int j = 0; j < n_back; j++) {
				if (back[j] >= away[i]) {
					starter_ran += back[j] - away[i];
					break;
				}
			}
		}
		int64_t ran = results[k].at - releases[k] - starter_ran;

		zassert_true(ran >= 3 * TICKS_PER_MS - SLACK_TICKS &&
			     ran <= 3 * TICKS_PER_MS + SLACK_TICKS,
			     "job %d: result %lld ticks after release, %lld of them running", k,
			     results[k].at - releases[k], ran);
		for (int i = 0; i < n_refills; i++) {
			in_job += refills[i] > releases[k] && refills[i] <= results[k].at;
		}
		zassert_true(in_job >= 1, "job %d of 3 ms ran out of its 2 ms budget", k);
	}
}

ZTEST(qfabric_executor_chains, test_chain_overrun_is_counted)
{
	struct qf_chain_stats stats;

	/* A 15 ms send in a 10 ms period, no server. */
	send_busy_us = 15000;
	int chain = start_add_chain(10, 0, 1);

	zassert_true(chain >= 0, "start: %d", chain);
	k_sleep(K_MSEC(40));
	zassert_ok(qf_chain_stats_get(chain, &stats));
	send_busy_us = 0;
	zassert_ok(qf_chain_stop(chain));
	zassert_true(stats.overruns >= 1, "%llu overruns", stats.overruns);
	zassert_equal(stats.results, stats.releases);
}

ZTEST(qfabric_executor_chains, test_chain_runs_the_heaviest_task_within_its_stack)
{
	uint8_t samples[64], template[HEADER_LEN + 64];

	for (int i = 0; i < 64; i++) {
		samples[i] = (uint8_t)(i * 11);
	}
	size_t len = request(template, TASK_FIR_X512, 1, 0, samples, sizeof(samples));
	/* fir_x512 takes about 110 ms on mps2/an521 under QEMU (icount shift 5). */
	struct qf_chain_config config = {
		.request = template,
		.request_len = len,
		.period = (int)k_ms_to_cyc_ceil32(300),
		.priority = CHAIN_PRIO,
	};
	measure_stack = true;
	int chain = qf_chain_start(&config);

	zassert_true(chain >= 0, "start: %d", chain);
	k_sleep(K_MSEC(250));
	zassert_ok(qf_chain_stop(chain));
	zassert_equal(n_results, 1);
	zassert_equal(results[0].status, QF_STATUS_OK);
	TC_PRINT("chain stack: %zu of %d bytes never used\n", stack_unused_min,
		 CONFIG_QFABRIC_EXECUTOR_CHAIN_STACK_SIZE);
#ifndef CONFIG_ARCH_POSIX
	/* native_sim runs threads on host stacks: only real boards tell. */
	zassert_true(stack_unused_min >= 256, "%zu bytes of stack left", stack_unused_min);
#endif
}

/*
 * A caller with a small stack (an application thread, or a sample's main): qf_chain_start()
 * must not need the table's install and the template's dry run room on it. Its request and
 * config live on that stack and are gone (overwritten) once it returns; the chain runs on.
 */
#define STARTER_STACK 1024
K_THREAD_STACK_DEFINE(starter_stack, STARTER_STACK);
static struct k_thread starter_thread;
static volatile int starter_chain;

static void start_fir_chain_from_the_stack(void *a, void *b, void *c)
{
	uint8_t samples[64], template[HEADER_LEN + 64];

	for (int i = 0; i < 64; i++) {
		samples[i] = (uint8_t)(i * 7);
	}
	size_t len = request(template, TASK_FIR_X512, 7000, 0, samples, sizeof(samples));
	struct qf_chain_config config = {
		.request = template,
		.request_len = len,
		.period = (int)k_ms_to_cyc_ceil32(300),
		.priority = CHAIN_PRIO,
	};

	starter_chain = qf_chain_start(&config);
}

ZTEST(qfabric_executor_chains, test_chain_started_from_a_small_stack_outlives_its_config)
{
	const int periods = 3;

	starter_chain = -1;
	k_tid_t starter = k_thread_create(&starter_thread, starter_stack, STARTER_STACK,
					  start_fir_chain_from_the_stack, NULL, NULL, NULL,
					  CHAIN_PRIO - 1, 0, K_NO_WAIT);
	zassert_ok(k_thread_join(starter, K_SECONDS(5)));
	int chain = starter_chain;

	zassert_true(chain >= 0, "start: %d", chain);
#ifndef CONFIG_ARCH_POSIX
	/* native_sim runs threads on host stacks: only real boards tell. */
	size_t unused = 0;

	zassert_ok(k_thread_stack_space_get(starter, &unused));
	TC_PRINT("starter stack: %zu of %d bytes never used\n", unused, STARTER_STACK);
	zassert_true(unused >= 128, "qf_chain_start left %zu bytes of a %d-byte stack", unused,
		     STARTER_STACK);
#endif
	/* The caller's request and config are gone: the chain must hold its own copies. */
	memset(K_THREAD_STACK_BUFFER(starter_stack), 0x99, K_THREAD_STACK_SIZEOF(starter_stack));
	/* fir_x512 takes about 110 ms a job under QEMU: releases at 0, 300, 600 ms. */
	k_sleep(K_MSEC(300 * periods - 150));
	zassert_ok(qf_chain_stop(chain));
	zassert_equal(n_results, periods, "%d results in %d periods", n_results, periods);
	for (int k = 0; k < periods; k++) {
		zassert_equal(results[k].status, QF_STATUS_OK, "job %d", k);
		zassert_equal(results[k].invocation, 7000 + k, "job %d", k);
		zassert_equal(results[k].value, results[0].value, "job %d", k);
	}
}

ZTEST(qfabric_executor_chains, test_chain_start_refuses_what_it_cannot_run)
{
	uint8_t template[HEADER_LEN + 8];
	size_t len = add_request(template, 1, 0, 1, 1);
	struct qf_chain_config config = {
		.request = template,
		.request_len = len,
		.period = (int)k_ms_to_cyc_ceil32(10),
		.budget = 0,
		.priority = CHAIN_PRIO,
	};
	int chains[CONFIG_QFABRIC_EXECUTOR_MAX_CHAINS];

	zassert_equal(qf_chain_start(NULL), -EINVAL);
	config.period = 0;
	zassert_equal(qf_chain_start(&config), -EINVAL, "no period");
	config.period = (int)k_ms_to_cyc_ceil32(10);
	config.request_len = len - 1;
	zassert_equal(qf_chain_start(&config), -EINVAL, "truncated request");
	config.request_len = len;
	put_be(template + 8, 999, 4);
	zassert_equal(qf_chain_start(&config), -EINVAL, "unknown task");
	put_be(template + 8, TASK_ADD, 4);
	config.priority = K_LOWEST_APPLICATION_THREAD_PRIO + 1;
	zassert_equal(qf_chain_start(&config), -EINVAL, "priority");
	config.priority = CHAIN_PRIO;
	config.budget = (int)k_ms_to_cyc_ceil32(20);
	zassert_equal(qf_chain_start(&config), -EINVAL, "budget above the period");
	/* 60 % and 60 % of one CPU: admission refuses the second. */
	config.budget = (int)k_ms_to_cyc_ceil32(6);
	chains[0] = qf_chain_start(&config);
	zassert_true(chains[0] >= 0, "first 60 %%: %d", chains[0]);
	zassert_equal(qf_chain_start(&config), -ENOSPC, "over the admission bound");
	zassert_ok(qf_chain_stop(chains[0]));
	config.budget = 0;

	for (int i = 0; i < ARRAY_SIZE(chains); i++) {
		chains[i] = qf_chain_start(&config);
		zassert_true(chains[i] >= 0, "chain %d: %d", i, chains[i]);
	}
	zassert_equal(qf_chain_start(&config), -ENOMEM, "table full");
	for (int i = 0; i < ARRAY_SIZE(chains); i++) {
		zassert_ok(qf_chain_stop(chains[i]));
	}
	zassert_equal(qf_chain_stop(chains[0]), -EINVAL, "already stopped");
	zassert_equal(qf_chain_stop(-1), -EINVAL);
	zassert_equal(qf_chain_stop(CONFIG_QFABRIC_EXECUTOR_MAX_CHAINS), -EINVAL);
	/* A slot is reusable once stopped. */
	chains[0] = qf_chain_start(&config);
	zassert_true(chains[0] >= 0);
	zassert_ok(qf_chain_stop(chains[0]));
}

/* ---- resident chains controlled by frames (docs/resident-chains.md) ---- */

#define CTL_INSTALL 0xFFFFFF01u
#define CTL_START 0xFFFFFF02u
#define CTL_STOP 0xFFFFFF03u
#define CTL_REMOVE 0xFFFFFF04u
#define CTL_STATUS 0xFFFFFF05u
#define CTL_LIST 0xFFFFFF06u
#define STATEFUL 3
#define ST_OVER_BOUND 8
#define ST_BAD_TEMPLATE 9
#define ST_TABLE_FULL 10
#define ST_OUT_OF_RANGE 11
#define ST_ID_IN_USE 12
#define ST_NOT_INSTALLED 13
#define INSTALL_LEN 154
#define STATUS_LEN 97
#define LIST_LEN 49

static uint64_t ctl_invocation;

/* A control request for @p op with @p payload into req; returns its length. */
static size_t control_request(uint32_t op, const uint8_t *payload, uint16_t len)
{
	size_t n = request(req, op, ++ctl_invocation, 1, payload, len);

	req[6] = STATEFUL;
	return n;
}

/* Serves a control request and returns the response's status; the payload is at out + 36. */
static int control(uint32_t op, const uint8_t *payload, uint16_t len)
{
	struct qf_served served;
	int status = serve(control_request(op, payload, len), sizeof(out), &served);

	zassert_true(status >= 0, "control %x: %d", op, status);
	zassert_equal(get_be(out + 8, 4), op, "the response names the operation");
	if (status != QF_STATUS_OK) {
		zassert_equal(served.len, HEADER_LEN, "a refusal carries no payload");
	}
	return status;
}

static int chain_op(uint32_t op, uint32_t chain_id)
{
	uint8_t ref[4];

	put_be(ref, chain_id, 4);
	return control(op, ref, sizeof(ref));
}

struct install {
	uint32_t chain_id, task_id, period_us, deadline_us, budget_us, delay_us;
	uint16_t template_len;
	uint8_t template[128];
};

/* An install of chain @p id running add(40, 2) every @p period_us with @p budget_us. */
static struct install add_install(uint32_t id, uint32_t period_us, uint32_t budget_us)
{
	struct install in = {
		.chain_id = id,
		.task_id = TASK_ADD,
		.period_us = period_us,
		.budget_us = budget_us,
	};

	in.template_len = (uint16_t)add_request(in.template, 100 * id, 1, 40, 2);
	return in;
}

static int install(const struct install *in)
{
	uint8_t p[INSTALL_LEN] = {0};

	put_be(p, in->chain_id, 4);
	put_be(p + 4, in->task_id, 4);
	put_be(p + 8, in->period_us, 4);
	put_be(p + 12, in->deadline_us, 4);
	put_be(p + 16, in->budget_us, 4);
	put_be(p + 20, in->delay_us, 4);
	put_be(p + 24, in->template_len, 2);
	memcpy(p + 26, in->template, sizeof(in->template));
	return control(CTL_INSTALL, p, sizeof(p));
}

struct status {
	uint8_t state;
	uint32_t reserved_ppm;
	uint64_t releases, results, overruns, not_delivered;
};

static struct status chain_status(uint32_t id)
{
	zassert_equal(chain_op(CTL_STATUS, id), QF_STATUS_OK, "status of %u", id);
	const uint8_t *p = out + HEADER_LEN;

	zassert_equal(get_be(p, 4), id);
	return (struct status){
		.state = p[4],
		.reserved_ppm = (uint32_t)get_be(p + 21, 4),
		.releases = get_be(p + 25, 8),
		.results = get_be(p + 33, 8),
		.overruns = get_be(p + 41, 8),
		.not_delivered = get_be(p + 81, 8),
	};
}

/* The list response payload: every chain's id and state and the MCU's reserved bandwidth. */
static void list(uint8_t copy[LIST_LEN])
{
	zassert_equal(control(CTL_LIST, NULL, 0), QF_STATUS_OK);
	memcpy(copy, out + HEADER_LEN, LIST_LEN);
}

static int results_of(uint32_t contract)
{
	int n = 0;

	for (int i = 0; i < n_results; i++) {
		n += results[i].contract == contract;
	}
	return n;
}

ZTEST(qfabric_executor_control, test_install_start_stop_start_remove)
{
	uint8_t listed[LIST_LEN];
	struct install in = add_install(7, 10000, 2000);

	zassert_equal(install(&in), QF_STATUS_OK);
	zassert_equal(get_be(out + HEADER_LEN, 4), 7, "the install answers the chain id");
	struct status st = chain_status(7);

	zassert_equal(st.state, 1, "installed, not running");
	zassert_equal(st.reserved_ppm, 200000, "Q/T = 2 ms / 10 ms");
	list(listed);
	zassert_equal(listed[0], 1, "one chain");
	zassert_equal(get_be(listed + 1, 4), 7);
	zassert_equal(get_be(listed + 41, 4), 200000, "the MCU's reserved bandwidth");
	zassert_equal(get_be(listed + 45, 4), 1000000, "bound: one CPU");
	k_sleep(K_MSEC(25));
	zassert_equal(n_results, 0, "an installed chain does not run");

	zassert_equal(chain_op(CTL_START, 7), QF_STATUS_OK);
	zassert_equal(chain_op(CTL_START, 7), QF_STATUS_OK, "start again: still running");
	k_sleep(K_MSEC(35));
	zassert_equal(chain_op(CTL_STOP, 7), QF_STATUS_OK);
	int first = n_results;

	zassert_true(first >= 3 && first <= 5, "%d results in 35 ms of a 10 ms period", first);
	for (int i = 0; i < first; i++) {
		zassert_equal(results[i].contract, 7, "result %d tagged with the chain id", i);
		zassert_equal(results[i].invocation, 700 + i, "result %d", i);
		zassert_equal(results[i].value, 42);
	}
	st = chain_status(7);
	zassert_equal(st.state, 3, "stopped");
	zassert_equal(st.results, first, "a stopped chain's counters stay readable");
	zassert_equal(st.releases, first);
	zassert_equal(st.reserved_ppm, 200000, "a stopped chain keeps its reservation");
	list(listed);
	zassert_equal(get_be(listed + 41, 4), 200000);
	k_sleep(K_MSEC(25));
	zassert_equal(n_results, first, "a stopped chain sends nothing");

	zassert_equal(chain_op(CTL_START, 7), QF_STATUS_OK, "a stopped chain starts again");
	k_sleep(K_MSEC(15));
	zassert_equal(chain_op(CTL_REMOVE, 7), QF_STATUS_OK, "remove stops a running chain");
	zassert_true(n_results > first, "it ran again");
	zassert_equal(results[first].invocation, 700 + first, "invocation ids go on");
	zassert_equal(chain_op(CTL_STATUS, 7), ST_NOT_INSTALLED);
	list(listed);
	zassert_equal(listed[0], 0, "the slot is free");
	zassert_equal(get_be(listed + 41, 4), 0, "the reservation is given back");
}

ZTEST(qfabric_executor_control, test_every_refusal_is_named_and_changes_nothing)
{
	uint8_t before[LIST_LEN], after[LIST_LEN];
	struct install in = add_install(1, 10000, 6000);
	struct status st_before;

	zassert_equal(install(&in), QF_STATUS_OK, "60 %% reserved");
	list(before);
	st_before = chain_status(1);

#define REFUSED(expr, expected, what)                                                               \
	do {                                                                                      \
		zassert_equal((expr), (expected), what);                                          \
		list(after);                                                                      \
		zassert_mem_equal(before, after, LIST_LEN, what ": the list changed");            \
		struct status st = chain_status(1);                                               \
		zassert_true(st.state == st_before.state &&                                       \
				     st.reserved_ppm == st_before.reserved_ppm &&                 \
				     st.releases == st_before.releases,                           \
			     what ": chain 1 changed");                                           \
	} while (0)

	REFUSED(control(CTL_LIST, (const uint8_t *)"x", 1), QF_STATUS_MALFORMED, "payload length");
	{
		struct qf_served served;
		size_t n = control_request(CTL_LIST, NULL, 0);

		req[6] = 1; /* pure */
		REFUSED(serve(n, sizeof(out), &served), QF_STATUS_MALFORMED, "effect not STATEFUL");
	}
	REFUSED(chain_op(0xFFFFFF07u, 1), QF_STATUS_UNKNOWN_TASK, "unnamed control id");
	in = add_install(0, 10000, 0);
	REFUSED(install(&in), ST_OUT_OF_RANGE, "chain id 0");
	in = add_install(1, 10000, 0);
	REFUSED(install(&in), ST_ID_IN_USE, "id in use");
	in = add_install(2, 50, 0);
	REFUSED(install(&in), ST_OUT_OF_RANGE, "period below 100 us");
	in = add_install(2, 10000, 10001);
	REFUSED(install(&in), ST_OUT_OF_RANGE, "budget above the period");
	in = add_install(2, 10000, 0);
	in.deadline_us = 20000;
	REFUSED(install(&in), ST_OUT_OF_RANGE, "deadline above the period");
	in = add_install(2, 10000, 0);
	in.template_len = 10;
	REFUSED(install(&in), ST_OUT_OF_RANGE, "template shorter than a header");
	in = add_install(2, 10000, 0);
	in.task_id = 999;
	REFUSED(install(&in), QF_STATUS_UNKNOWN_TASK, "undeclared task");
	in = add_install(2, 10000, 0);
	in.task_id = TASK_CRC32;
	REFUSED(install(&in), ST_BAD_TEMPLATE, "template of another task");
	in = add_install(2, 10000, 0);
	in.template[in.template_len + 3] = 1;
	REFUSED(install(&in), ST_BAD_TEMPLATE, "bytes past the template");
	in = add_install(2, 10000, 5000);
	REFUSED(install(&in), ST_OVER_BOUND, "60 %% + 50 %% of one CPU");
	REFUSED(chain_op(CTL_START, 99), ST_NOT_INSTALLED, "start of no chain");
	REFUSED(chain_op(CTL_STOP, 99), ST_NOT_INSTALLED, "stop of no chain");
	REFUSED(chain_op(CTL_REMOVE, 99), ST_NOT_INSTALLED, "remove of no chain");
	REFUSED(chain_op(CTL_STATUS, 99), ST_NOT_INSTALLED, "status of no chain");

	/* Fill the table (the last slot), then one more. */
	for (uint32_t id = 2; id <= CONFIG_QFABRIC_EXECUTOR_MAX_CHAINS; id++) {
		in = add_install(id, 10000, 0);
		zassert_equal(install(&in), QF_STATUS_OK, "chain %u", id);
	}
	list(before);
	in = add_install(50, 10000, 0);
	REFUSED(install(&in), ST_TABLE_FULL, "every slot taken");
#undef REFUSED
	for (uint32_t id = 1; id <= CONFIG_QFABRIC_EXECUTOR_MAX_CHAINS; id++) {
		zassert_equal(chain_op(CTL_REMOVE, id), QF_STATUS_OK);
	}
	zassert_equal(n_results, 0, "nothing ran");
}

ZTEST(qfabric_executor_control, test_two_chains_run_at_once_each_tagged)
{
	uint8_t listed[LIST_LEN];
	struct install a = add_install(21, 10000, 2000), b = add_install(22, 20000, 3000);

	zassert_equal(install(&a), QF_STATUS_OK);
	zassert_equal(install(&b), QF_STATUS_OK);
	list(listed);
	zassert_equal(get_be(listed + 41, 4), 350000, "20 %% + 15 %%");
	zassert_equal(chain_op(CTL_START, 21), QF_STATUS_OK);
	zassert_equal(chain_op(CTL_START, 22), QF_STATUS_OK);
	list(listed);
	zassert_equal(listed[5], 2, "21 running");
	zassert_equal(listed[10], 2, "22 running");
	k_sleep(K_MSEC(55));
	zassert_equal(chain_op(CTL_STOP, 21), QF_STATUS_OK);
	zassert_equal(chain_op(CTL_STOP, 22), QF_STATUS_OK);
	int n21 = results_of(21), n22 = results_of(22);

	zassert_true(n21 >= 5 && n21 <= 7, "%d results of the 10 ms chain in 55 ms", n21);
	zassert_true(n22 >= 3 && n22 <= 4, "%d results of the 20 ms chain in 55 ms", n22);
	zassert_equal(n21 + n22, n_results, "every result names its chain");
	zassert_equal(chain_status(21).results, n21);
	zassert_equal(chain_status(22).results, n22);
	zassert_equal(chain_op(CTL_REMOVE, 21), QF_STATUS_OK);
	zassert_equal(chain_op(CTL_REMOVE, 22), QF_STATUS_OK);
}

K_THREAD_STACK_DEFINE(app_stack, 1024);
static struct k_thread app_thread;

static void app_entry(void *a, void *b, void *c)
{
}

ZTEST(qfabric_executor_control, test_an_application_cbs_thread_and_the_firmware_count_too)
{
	uint8_t listed[LIST_LEN];
	k_tid_t app = k_thread_create(&app_thread, app_stack, K_THREAD_STACK_SIZEOF(app_stack),
				      app_entry, NULL, NULL, NULL, CHAIN_PRIO, 0, K_FOREVER);

	/* The application's own CBS thread: 70 % of the CPU. */
	zassert_ok(qf_thread_period_set(app, (int)k_ms_to_cyc_ceil32(10)));
	zassert_ok(qf_thread_cbs_budget_set(app, (int)k_ms_to_cyc_ceil32(7)));
	struct install in = add_install(31, 10000, 4000);

	zassert_equal(install(&in), ST_OVER_BOUND, "70 %% + 40 %%");
	in = add_install(31, 10000, 2000);
	zassert_equal(install(&in), QF_STATUS_OK, "70 %% + 20 %%");
	/* The firmware's own chain goes through the same table and the same test. */
	zassert_equal(start_add_chain(10, 2, 1), -ENOSPC, "90 %% + 20 %%");
	int fw = start_add_chain(10, 1, 1);

	zassert_true(fw >= 0, "90 %% + 10 %%: %d", fw);
	list(listed);
	zassert_equal(listed[0], 2, "the firmware's chain is listed");
	zassert_equal(get_be(listed + 41, 4), 1000000);
	zassert_ok(qf_chain_stop(fw));
	zassert_equal(chain_op(CTL_REMOVE, 31), QF_STATUS_OK);
	k_thread_abort(app);
	list(listed);
	zassert_equal(get_be(listed + 41, 4), 0, "every reservation given back");
}

ZTEST_SUITE(qfabric_executor, NULL, reset, NULL, NULL, NULL);
ZTEST_SUITE(qfabric_executor_chains, NULL, chains_setup, chains_before, NULL, NULL);
ZTEST_SUITE(qfabric_executor_control, NULL, chains_setup, chains_before, NULL, NULL);
