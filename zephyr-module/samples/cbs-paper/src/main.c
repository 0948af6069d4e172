/*
 * Runs one of the CBS paper's test cases (CONFIG_CBS_PAPER_CASE) with the chosen time unit
 * (CONFIG_CBS_PAPER_UNIT_MS), then prints the scheduler's event log as CSV in the format of
 * `qf sim --events` (times in kernel ticks; one unit = the ticks printed first).
 */
#include <zephyr/kernel.h>
#include <qfabric/qfabric.h>

#include "paper_cases.h"

int main(void)
{
	int64_t zero = paper_case_run(CONFIG_CBS_PAPER_CASE, CONFIG_CBS_PAPER_UNIT_MS,
				      CONFIG_CBS_PAPER_HORIZON);

	printk("# cbs-paper: test case %d, time zero %lld ticks, %lld ticks per unit, "
	       "CBS thread %d\n",
	       CONFIG_CBS_PAPER_CASE, zero, k_ms_to_ticks_ceil64(CONFIG_CBS_PAPER_UNIT_MS),
	       paper_case_cbs_slot());
	qf_trace_dump();
	printk("# cbs-paper: done (%llu events lost)\n", qf_trace_lost());
	return 0;
}
