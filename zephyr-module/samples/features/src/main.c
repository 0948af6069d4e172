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

#define PERIOD_MS 10
#define JOBS 3
#define BUDGET_MS 2
#define JOB_MS 5

static const char *on(bool enabled)
{
	return enabled ? "on" : "off";
}

static int cycles(int ms)
{
	return (int)k_ms_to_cyc_ceil32(ms);
}

/* Three jobs of a periodic thread: each deadline set after the first sleeps until the next
 * release, PERIOD_MS after the one before (to the tick, give or take one).
 */
static const char *check_periodic_edf(void)
{
	const int64_t period = k_ms_to_ticks_ceil64(PERIOD_MS);
	int64_t released[JOBS];

	if (!IS_ENABLED(CONFIG_QFABRIC_EDF)) {
		return "the image has no periodic EDF";
	}
	if (period_set(k_current_get(), cycles(PERIOD_MS)) != 0) {
		return "the period was refused";
	}
	for (int job = 0; job < JOBS; job++) {
		if (deadline_set(k_current_get(), cycles(PERIOD_MS)) != 0) {
			return "a deadline set failed";
		}
		released[job] = k_uptime_ticks();
		k_busy_wait(1000);
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
	printk("qfabric: periodic EDF: %d jobs released %d ms apart\n", JOBS, PERIOD_MS);
	return NULL;
}

/* One job of JOB_MS on a BUDGET_MS budget (server period = relative deadline = PERIOD_MS):
 * each exhaustion postpones the thread's EDF deadline by PERIOD_MS and refills the budget.
 */
static const char *check_cbs(void)
{
#ifndef CONFIG_QFABRIC_CBS
	return "the image has no CBS";
#else
	int changes = 0;

	if (budget_set(k_current_get(), cycles(BUDGET_MS)) != 0) {
		return "the budget was refused";
	}
	if (deadline_set(k_current_get(), cycles(PERIOD_MS)) != 0) {
		return "a deadline set failed";
	}
	int deadline = k_current_get()->base.prio_deadline;

	for (int slice = 0; slice < JOB_MS * 10; slice++) {
		k_busy_wait(100);
		if (k_current_get()->base.prio_deadline != deadline) {
			deadline = k_current_get()->base.prio_deadline;
			changes++;
		}
	}
	(void)budget_set(k_current_get(), 0);
	if (changes == 0) {
		return "the deadline was never postponed: the budget is not enforced";
	}
	printk("qfabric: CBS: the %d ms budget postponed the deadline %d times in one %d ms job\n",
	       BUDGET_MS, changes, JOB_MS);
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
