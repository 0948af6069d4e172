/*
 * The two task sets of "Task-Based Constant Bandwidth Server in the Zephyr Operating System"
 * (Section 5), run on qfabric's periodic EDF and private CBS. Shared by the sample and the
 * Twister suite that checks the resulting schedule.
 */
#ifndef PAPER_CASES_H_
#define PAPER_CASES_H_

#include <zephyr/kernel.h>

/** Run paper test case @p which (1 or 2) with one time unit = @p unit_ms, for @p horizon units
 *  from a common release at the next tick; returns after the horizon with every task stopped.
 *  Returns the absolute tick of time 0.
 */
int64_t paper_case_run(int which, int unit_ms, int horizon_units);

/** The qfabric slot of the CBS-served task of the last run (CSV thread column). */
int paper_case_cbs_slot(void);

#endif /* PAPER_CASES_H_ */
