/*
 * What an application with only CONFIG_QFABRIC=y in its prj.conf gets: prints which qfabric
 * features the image has (from its Kconfig), then checks the two that matter at run time:
 * periodic EDF (a thread with a period sleeps in k_thread_deadline_set() until its next
 * release) and the per-thread CBS (a thread that runs past its budget has its deadline
 * postponed by one server period, without calling anything). The last line says "done (ok)"
 * or which check failed. On native_sim the program then exits by itself.
 */
#include <zephyr/kernel.h>
#include <qfabric/qfabric.h>

#ifdef CONFIG_ARCH_POSIX
#include <posix_board_if.h>
#endif

/* The patched kernel's API, or the module's own on an unpatched kernel (CONFIG_TRACING_USER). */
#ifdef CONFIG_QFABRIC_HOOKS_KERNEL_PATCH
#define HOOKS "kernel-patch"
#define deadline_set k_thread_deadline_set
#define period_set k_thread_period_set
#define budget_set k_thread_cbs_budget_set
#else
#define HOOKS "tracing-user"
#define deadline_set qf_thread_deadline_set
#define period_set qf_thread_period_set
#define budget_set qf_thread_cbs_budget_set
#endif

/* In kernel ticks, so that the checks hold at any tick rate (native_sim and mps2 default to
 * 100 Hz: 2 ms would round up to a whole 10 ms tick).
 */
#define PERIOD_TICKS 10
#define JOBS 3
#define BUDGET_TICKS 2
#define JOB_TICKS 5
#define US_PER_TICK (1000000 / CONFIG_SYS_CLOCK_TICKS_PER_SEC)

static const char *on(bool enabled)
{
	return enabled ? "on" : "off";
}

static int cycles(int ticks)
{
	return (int)k_ticks_to_cyc_ceil32(ticks);
}

/* Three jobs of a periodic thread: each deadline set after the first sleeps until the next
 * release, PERIOD_TICKS after the one before (give or take one tick).
 */
static const char *check_periodic_edf(void)
{
	const int64_t period = PERIOD_TICKS;
	int64_t released[JOBS];

	if (!IS_ENABLED(CONFIG_QFABRIC_EDF)) {
		return "the image has no periodic EDF";
	}
	if (period_set(k_current_get(), cycles(PERIOD_TICKS)) != 0) {
		return "the period was refused";
	}
	for (int job = 0; job < JOBS; job++) {
		if (deadline_set(k_current_get(), cycles(PERIOD_TICKS)) != 0) {
			return "a deadline set failed";
		}
		released[job] = k_uptime_ticks();
		k_busy_wait(US_PER_TICK);
	}
	(void)period_set(k_current_get(), 0);
	for (int job = 1; job < JOBS; job++) {
		int64_t apart = released[job] - released[job - 1];

		if (apart < period - 1 || apart > period + 1) {
			printk("qfabric: periodic EDF: jobs %d and %d released %lld ticks apart, "
			       "not %lld\n", job - 1, job, apart, period);
			return "jobs were not released one period apart";
		}
	}
	printk("qfabric: periodic EDF: %d jobs released one period (%d ticks) apart\n", JOBS,
	       PERIOD_TICKS);
	return NULL;
}

/* One job of JOB_TICKS on a BUDGET_TICKS budget (server period = relative deadline =
 * PERIOD_TICKS): each exhaustion postpones the thread's EDF deadline by one server period and
 * refills the budget.
 */
static const char *check_cbs(void)
{
#ifndef CONFIG_QFABRIC_CBS
	return "the image has no CBS";
#else
	int changes = 0;

	if (budget_set(k_current_get(), cycles(BUDGET_TICKS)) != 0) {
		return "the budget was refused";
	}
	if (deadline_set(k_current_get(), cycles(PERIOD_TICKS)) != 0) {
		return "a deadline set failed";
	}
	int deadline = k_current_get()->base.prio_deadline;

	for (int slice = 0; slice < JOB_TICKS * 10; slice++) {
		k_busy_wait(US_PER_TICK / 10);
		if (k_current_get()->base.prio_deadline != deadline) {
			deadline = k_current_get()->base.prio_deadline;
			changes++;
		}
	}
	(void)budget_set(k_current_get(), 0);
	if (changes == 0) {
		return "the deadline was never postponed: the budget is not enforced";
	}
	printk("qfabric: CBS: a %d-tick budget postponed the deadline %d times in one %d-tick job\n",
	       BUDGET_TICKS, changes, JOB_TICKS);
	return NULL;
#endif
}

int main(void)
{
	const char *failed;

	printk("qfabric: hooks %s, periodic EDF %s, CBS %s, admission %s, trace %s, "
	       "executor %s, %d control blocks\n",
	       HOOKS, on(IS_ENABLED(CONFIG_QFABRIC_EDF)), on(IS_ENABLED(CONFIG_QFABRIC_CBS)),
	       on(IS_ENABLED(CONFIG_QFABRIC_ADMISSION)), on(IS_ENABLED(CONFIG_QFABRIC_TRACE)),
	       on(IS_ENABLED(CONFIG_QFABRIC_EXECUTOR)), CONFIG_QFABRIC_MAX_THREADS);
	failed = check_periodic_edf();
	if (failed == NULL) {
		failed = check_cbs();
	}
	if (failed == NULL) {
		printk("qfabric features: done (ok)\n");
	} else {
		printk("qfabric features: done (FAILED: %s)\n", failed);
	}
#ifdef CONFIG_ARCH_POSIX
	posix_exit(failed == NULL ? 0 : 1);
#endif
	return 0;
}
