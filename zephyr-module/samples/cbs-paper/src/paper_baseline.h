/*
 * The kernel work of the paper's CBS hooks, run in place for comparison with qfabric's
 * (CONFIG_CBS_PAPER_BASELINE; see paper_baseline.c).
 */
#ifndef PAPER_BASELINE_H_
#define PAPER_BASELINE_H_

#include <stdint.h>

/** The paper's switch-in and switch-out for the calling thread with a budget of
 *  @p budget_ticks, at the end of a job (before the thread sleeps until its next one) and at the
 *  start of the next; at the start also its budget callback, at the next tick, which
 *  postpones the thread's deadline by @p period_cycles (the server period) and puts it back
 *  after being counted.
 */
void paper_baseline_job_end(int64_t budget_ticks);
void paper_baseline_job_start(int64_t budget_ticks, int period_cycles);

#endif /* PAPER_BASELINE_H_ */
