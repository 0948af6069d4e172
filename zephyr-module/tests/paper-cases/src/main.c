/*
 * The CBS paper's Test Case 1 and 2 with a 10 ms time unit (100 ticks), checked against the
 * CBS events the theory gives for them (Abeni & Buttazzo's rules, worked out below). Only the
 * CBS thread's budget events are compared: they are what the paper's figures annotate, and they
 * do not depend on how EDF breaks deadline ties.
 */
#include <zephyr/kernel.h>
#include <zephyr/ztest.h>
#include <string.h>
#include <qfabric/qfabric.h>

#include "paper_cases.h"

#define UNIT_MS 10
#define TICKS_PER_UNIT (UNIT_MS * CONFIG_SYS_CLOCK_TICKS_PER_SEC / 1000)
/* Releases and budget timers land on tick boundaries; busy waits may add a tick. */
#define SLACK_TICKS 3

struct expected {
	const char *kind;
	int at;       /* in units from time zero */
	int deadline; /* server deadline after the event, in units */
};

static bool is(const struct qf_event *e, const char *kind)
{
	return strlen(kind) == e->kind_len && strncmp(kind, e->kind, e->kind_len) == 0;
}

/* Compares the CBS thread's B_COND / B_ROUT / ARRIVAL events with @p want, in order. */
static void check_cbs_events(int64_t zero, const struct expected *want, size_t n)
{
	int slot = paper_case_cbs_slot();
	struct qf_event e;
	size_t i = 0;

	zassert_true(slot >= 0, "the CBS task got a control block");
	while (qf_trace_pop(&e)) {
		if (e.thread != slot ||
		    !(is(&e, "B_COND") || is(&e, "B_ROUT") || is(&e, "ARRIVAL"))) {
			continue;
		}
		if (i == n) {
			break;
		}
		int64_t at = (int64_t)e.time - zero;
		int64_t deadline = (int64_t)e.deadline - zero;

		zassert_true(is(&e, want[i].kind), "event %zu is %.*s, expected %s", i,
			     (int)e.kind_len, e.kind, want[i].kind);
		zassert_true(at >= want[i].at * TICKS_PER_UNIT &&
			     at <= want[i].at * TICKS_PER_UNIT + SLACK_TICKS,
			     "%s at tick %lld, expected unit %d", want[i].kind, at, want[i].at);
		zassert_true(deadline >= want[i].deadline * TICKS_PER_UNIT - SLACK_TICKS &&
			     deadline <= want[i].deadline * TICKS_PER_UNIT + SLACK_TICKS,
			     "%s deadline tick %lld, expected unit %d", want[i].kind, deadline,
			     want[i].deadline);
		i++;
	}
	zassert_equal(i, n, "%zu of %zu expected CBS events seen", i, n);
}

static void drain(void)
{
	struct qf_event e;

	while (qf_trace_pop(&e)) {
	}
}

/*
 * Test Case 1: tau1 (4, 7) from t = 0; CBS (3, 8); J1 (4) at 3, J2 (3) at 13.
 *  3: J1 arrives at a fresh server: B_COND, d = 11, c = 3 (tau1, d = 7, runs until 4).
 *  7: J1 ran 4..7, budget exhausted: B_ROUT, c = 3, d = 19 (tau1's d = 14 now wins).
 * 13: J2 arrives with c = 2, d = 19: 2·8 = 16 < (19 − 13)·3 = 18, keeps d = 19 (no B_COND).
 * 15: J2 ran 13..15, exhausted: B_ROUT, d = 27.
 */
ZTEST(qfabric_paper, test_case_1_matches_the_cbs_schedule)
{
	static const struct expected want[] = {
		{"ARRIVAL", 3, 11}, {"B_COND", 3, 11}, {"B_ROUT", 7, 19},
		{"ARRIVAL", 13, 19}, {"B_ROUT", 15, 27},
	};

	drain();
	int64_t zero = paper_case_run(1, UNIT_MS, 24);

	check_cbs_events(zero, want, ARRAY_SIZE(want));
}

/*
 * Test Case 2: tau1 (2, 6), tau2 (3, 9) from t = 0; CBS (2, 6); J1 (3) at 2, J2 (3) at 12,
 * J3 (1) at 20.
 *  2: J1 at a fresh server: B_COND, d = 8 (tau1 ran 0..2; tau2's d = 9 loses).
 *  4: J1 ran 2..4, exhausted: B_ROUT, d = 14.
 * 12: J2 arrives with c = 1, d = 14: 1·6 = 6 ≥ (14 − 12)·2 = 4: B_COND, d = 18.
 * (Later events depend on how EDF orders the three threads that then share deadline 18.)
 */
ZTEST(qfabric_paper, test_case_2_matches_the_cbs_schedule)
{
	static const struct expected want[] = {
		{"ARRIVAL", 2, 8}, {"B_COND", 2, 8}, {"B_ROUT", 4, 14},
		{"ARRIVAL", 12, 18}, {"B_COND", 12, 18},
	};

	drain();
	int64_t zero = paper_case_run(2, UNIT_MS, 24);

	check_cbs_events(zero, want, ARRAY_SIZE(want));
}

ZTEST_SUITE(qfabric_paper, NULL, NULL, NULL, NULL, NULL);
