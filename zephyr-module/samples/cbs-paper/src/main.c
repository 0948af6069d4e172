/*
 * Runs one of the CBS paper's test cases (CONFIG_CBS_PAPER_CASE) with the chosen time unit
 * (CONFIG_CBS_PAPER_UNIT_MS) up to its horizon, then prints the scheduler's event log as CSV in
 * the format of `qf sim --events` (times in kernel ticks, task = qfabric slot = the task's index
 * in examples/test-case-N.toml). With CONFIG_CBS_PAPER_REPEAT the case runs that many times
 * and the log is the last run's. On native_sim the program then exits by itself.
 */
#include <zephyr/kernel.h>
#include <qfabric/qfabric.h>

#include "paper_cases.h"

#ifdef CONFIG_ARCH_POSIX
#include <posix_board_if.h>
#endif

int main(void)
{
	int64_t zero = 0;

	/* No deadline-miss callbacks: the paper's tasks have none. */
	for (int run = 0; run < CONFIG_CBS_PAPER_REPEAT && zero >= 0; run++) {
		zero = paper_case_run(paper_case(CONFIG_CBS_PAPER_CASE), CONFIG_CBS_PAPER_UNIT_MS,
				      false);
	}

	if (zero < 0) {
		printk("# cbs-paper: test case %d could not be set up (%lld)\n",
		       CONFIG_CBS_PAPER_CASE, zero);
	} else {
		printk("# cbs-paper: test case %d, time zero %lld ticks, %lld ticks per unit\n",
		       CONFIG_CBS_PAPER_CASE, zero, paper_case_ticks_per_unit());
		qf_trace_dump();
		printk("# cbs-paper: done (%llu events lost)\n", qf_trace_lost());
	}
#ifdef CONFIG_ARCH_POSIX
	posix_exit(zero < 0 ? 1 : 0);
#endif
	return 0;
}
