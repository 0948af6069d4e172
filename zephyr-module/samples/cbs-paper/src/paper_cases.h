/*
 * The two task sets of "Task-Based Constant Bandwidth Server in the Zephyr Operating System"
 * (Section 5), run on qfabric's periodic EDF and private CBS. The task sets come from the
 * golden headers `qf sim` writes from examples/test-case-{1,2}.toml (golden_tc{1,2}.h), which
 * also hold the schedule the simulator computed. Shared by the sample and the Twister suite
 * that compares the two.
 */
#ifndef PAPER_CASES_H_
#define PAPER_CASES_H_

#include <zephyr/kernel.h>

struct qf_golden;

/** The task set and golden schedule of paper test case @p which (1 or 2). */
const struct qf_golden *paper_case(int which);

/** Runs @p set with one time unit = @p unit_ms from a common release 10 ms ahead until its
 *  horizon, then stops every task. With @p watch_misses every task gets a deadline-miss
 *  callback (as `qf sim` gives them; the paper's tasks have none). Returns the absolute tick of
 *  time 0, or a negative errno if a task could not be set up as the set describes.
 */
int64_t paper_case_run(const struct qf_golden *set, int unit_ms, bool watch_misses);

/** The qfabric slot (CSV task column) task @p task of the last run held, or -1. */
int paper_case_slot(int task);

/** Deadline-miss callbacks task @p task received in the last run. */
int paper_case_misses(int task);

/** Kernel ticks of one time unit of the last run. */
int64_t paper_case_ticks_per_unit(void);

/** A time of @p set (ns from time zero) in kernel ticks of the last run's unit, from time 0. */
int64_t paper_case_ticks(const struct qf_golden *set, uint64_t ns);

#endif /* PAPER_CASES_H_ */
