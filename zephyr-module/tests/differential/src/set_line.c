/* The line format of set_line.h: a bounded parser that names the field it refuses. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "set_line.h"

static char names[SET_LINE_MAX_TASKS][SET_LINE_NAME_LEN];
static struct qf_golden_task tasks[SET_LINE_MAX_TASKS];
static struct qf_golden_job jobs[SET_LINE_MAX_TASKS][SET_LINE_MAX_JOBS];

/* Reads a decimal u64 at *p up to one of @p ends (or the string's end); advances *p past it. */
static bool number(const char **p, const char *ends, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;

	if (*s < '0' || *s > '9') {
		return false;
	}
	while (*s >= '0' && *s <= '9') {
		if (v > (UINT64_MAX - 9) / 10) {
			return false;
		}
		v = v * 10 + (uint64_t)(*s - '0');
		s++;
	}
	if (*s != '\0' && strchr(ends, *s) == NULL) {
		return false;
	}
	*p = *s == '\0' ? s : s + 1;
	*out = v;
	return true;
}

static const char *value_of(const char *field, const char *key)
{
	size_t n = strlen(key);

	return strncmp(field, key, n) == 0 && field[n] == '=' ? field + n + 1 : NULL;
}

static int task_of(const char *v, struct qf_golden_task *t, int index, const char **why)
{
	const char *comma = strchr(v, ',');
	uint64_t prio, a, b, c, d;

	if (comma == NULL || comma == v || comma - v >= SET_LINE_NAME_LEN) {
		*why = "task: name missing or longer than 15 characters";
		return -EINVAL;
	}
	memcpy(names[index], v, comma - v);
	names[index][comma - v] = '\0';
	t->name = names[index];
	v = comma + 1;
	if (strncmp(v, "periodic,", 9) == 0) {
		v += 9;
		t->kind = QF_GOLDEN_PERIODIC;
		if (!number(&v, ",", &prio) || !number(&v, ",", &a) || !number(&v, ",", &b) ||
		    !number(&v, ",", &c) || !number(&v, "", &d) || *v != '\0') {
			*why = "task: periodic wants NAME,periodic,PRIO,WCET,PERIOD,DEADLINE,OFFSET";
			return -EINVAL;
		}
		t->wcet_ns = a;
		t->period_ns = b;
		t->deadline_ns = c;
		t->offset_ns = d;
	} else if (strncmp(v, "cbs,", 4) == 0) {
		v += 4;
		t->kind = QF_GOLDEN_CBS;
		if (!number(&v, ",", &prio) || !number(&v, ",", &a) || !number(&v, ",", &b) ||
		    !number(&v, ",", &c) || c > 1) {
			*why = "task: cbs wants NAME,cbs,PRIO,BUDGET,PERIOD,HARD(0|1),JOBS";
			return -EINVAL;
		}
		t->budget_ns = a;
		t->period_ns = b;
		t->hard_reservation = c == 1;
		t->n_jobs = 0;
		while (*v != '\0') {
			if (t->n_jobs == SET_LINE_MAX_JOBS) {
				*why = "task: more than 64 jobs";
				return -EINVAL;
			}
			if (!number(&v, ":", &a) || !number(&v, ";", &b)) {
				*why = "task: a job is ARRIVAL:WORK, jobs separated by ;";
				return -EINVAL;
			}
			jobs[index][t->n_jobs++] = (struct qf_golden_job){a, b};
		}
		if (t->n_jobs == 0) {
			*why = "task: a cbs task needs at least one job";
			return -EINVAL;
		}
		t->jobs = jobs[index];
	} else {
		*why = "task: kind is periodic or cbs";
		return -EINVAL;
	}
	/* Priorities are small (qf sim's TOML: Zephyr static priorities relative to the tasks'). */
	t->priority = (int)(int64_t)prio;
	if (prio > 8) {
		*why = "task: priority above 8";
		return -EINVAL;
	}
	return 0;
}

int set_line_parse(int n, char **fields, struct set_line *out, const char **why)
{
	uint64_t tick_hz = 0, unit_ns = 0, horizon_ns = 0, v;
	bool version = false, admission = false;
	int n_tasks = 0;

	memset(out, 0, sizeof(*out));
	memset(tasks, 0, sizeof(tasks));
	out->admission_ppm = -1;
	for (int i = 0; i < n; i++) {
		const char *f = fields[i];
		const char *val;

		if (strcmp(f, "qfset1") == 0) {
			version = true;
		} else if ((val = value_of(f, "tick_hz")) != NULL) {
			if (!number(&val, "", &tick_hz) || tick_hz == 0) {
				*why = "tick_hz: not a positive number";
				return -EINVAL;
			}
		} else if ((val = value_of(f, "unit_ns")) != NULL) {
			if (!number(&val, "", &unit_ns) || unit_ns == 0) {
				*why = "unit_ns: not a positive number";
				return -EINVAL;
			}
		} else if ((val = value_of(f, "horizon_ns")) != NULL) {
			if (!number(&val, "", &horizon_ns) || horizon_ns == 0) {
				*why = "horizon_ns: not a positive number";
				return -EINVAL;
			}
		} else if ((val = value_of(f, "admission_ppm")) != NULL) {
			admission = true;
			if (strcmp(val, "none") != 0) {
				if (!number(&val, "", &v) || v > 1000000) {
					*why = "admission_ppm: none or 0..1000000";
					return -EINVAL;
				}
				out->admission_ppm = (int64_t)v;
			}
		} else if ((val = value_of(f, "task")) != NULL) {
			if (n_tasks == SET_LINE_MAX_TASKS) {
				*why = "task: more than 8 tasks";
				return -EINVAL;
			}
			int err = task_of(val, &tasks[n_tasks], n_tasks, why);

			if (err != 0) {
				return err;
			}
			n_tasks++;
		} else {
			*why = "unknown field (not qfset1, tick_hz, unit_ns, horizon_ns, "
			       "admission_ppm or task)";
			return -EINVAL;
		}
	}
	if (!version || tick_hz == 0 || unit_ns == 0 || horizon_ns == 0 || !admission ||
	    n_tasks == 0) {
		*why = "a set needs qfset1, tick_hz, unit_ns, horizon_ns, admission_ppm and a task";
		return -EINVAL;
	}
	out->set.source = "(command line)";
	out->set.unit_ns = unit_ns;
	out->set.horizon_ns = horizon_ns;
	out->set.tick_hz = (uint32_t)tick_hz;
	out->set.tasks = tasks;
	out->set.n_tasks = (uint16_t)n_tasks;
	return 0;
}
