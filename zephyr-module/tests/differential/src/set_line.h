/*
 * A task set as one line of text (`qf differential line SET.toml` writes it), read into the
 * struct qf_golden that paper_case_run() runs. Space-separated fields, times in ns:
 *
 *   qfset1 tick_hz=T unit_ns=U horizon_ns=H admission_ppm=A|none
 *          task=NAME,periodic,PRIO,WCET,PERIOD,DEADLINE,OFFSET
 *          task=NAME,cbs,PRIO,BUDGET,PERIOD,HARD(0|1),ARRIVAL:WORK;ARRIVAL:WORK...
 *
 * The fields may also come as separate arguments (native_sim's -testargs).
 */
#ifndef SET_LINE_H_
#define SET_LINE_H_

#include <stdint.h>
#include "golden_tc1.h" /* struct qf_golden */

#define SET_LINE_MAX_TASKS 8
#define SET_LINE_MAX_JOBS 64
#define SET_LINE_NAME_LEN 16

/** A set read from a line: the golden struct (no schedule) and its admission bound. */
struct set_line {
	struct qf_golden set;
	/** Admission bound in millionths, or -1 when admission control is off. */
	int64_t admission_ppm;
};

/**
 * Reads the @p n fields @p fields into @p out (its storage is static: one set at a time).
 * Returns 0, or -EINVAL with @p why naming the field that is wrong.
 */
int set_line_parse(int n, char **fields, struct set_line *out, const char **why);

#endif /* SET_LINE_H_ */
