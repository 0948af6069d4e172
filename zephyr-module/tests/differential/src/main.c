/*
 * The kernel against `qf sim`, one task set per run. The set runs on the real kernel with the
 * qfabric module exactly as the paper cases do (samples/cbs-paper/src/paper_cases.c: periodic
 * EDF threads looping deadline_set + WCET of their own CPU time, CBS threads serving their job
 * lists, every task with a deadline-miss callback), from a common time zero to the horizon;
 * then every traced event is printed in `qf sim --events`' CSV format
 * (`time,task,event,budget,deadline`, times in the set's unit, from time zero), between the
 * lines `--- events` and `--- end`, for `qf differential compare`.
 *
 * Where the set comes from:
 * - default: the command line, as the fields of one `qf differential line` (native_sim:
 *   `zephyr.exe -testargs qfset1 tick_hz=... task=...`); one process per set;
 * - with CONFIG_DIFFERENTIAL_CONSOLE (boards/mps2_an521_cpu0.conf): one such line per set on
 *   the console, sets run one after the other in one boot;
 * - CONFIG_DIFFERENTIAL_FIXED: src/fixed_set.h (`qf sim SET.toml --golden-c`), run as a ztest
 *   case that requires every event to be the simulator's, in its order.
 *
 * A set the image cannot run as written is refused before it runs, with exit status 3 and a
 * line `# differential: unsupported: WHY`: another tick rate than the image's, an admission
 * bound other than the image's (off, or 1.0 with CONFIG_QFABRIC_ADMISSION), a hard
 * reservation (the Zephyr API has no switch for it).
 */
#include <zephyr/kernel.h>
#include <string.h>
#include <qfabric/qfabric.h>

#include "paper_cases.h"
#include "set_line.h"

#ifdef CONFIG_ARCH_POSIX
#include <posix_board_if.h>
/* boards/native/native_sim/cmdline.h: the arguments after -testargs. */
void native_get_test_cmd_line_args(int *argc, char ***argv);
#endif

#define EXIT_MISMATCH 1
#define EXIT_BAD_SET 2
#define EXIT_UNSUPPORTED 3

/* One traced event of the run, times in ticks from time zero. */
struct row {
	int64_t time;
	int64_t budget;
	int64_t deadline;
	int task;
	char kind[16];
};

#define MAX_ROWS CONFIG_QFABRIC_TRACE_EVENTS
static struct row rows[MAX_ROWS];

/* @p ticks in the set's unit: num / den with at most 6 fractional digits, trailing zeros cut,
 * as qf sim's clock::decimal writes it.
 */
static void print_units(int64_t ticks, const struct qf_golden *set)
{
	uint64_t den = (uint64_t)set->tick_hz * set->unit_ns;
	uint64_t num = (uint64_t)(ticks < 0 ? -ticks : ticks) * 1000000000ULL;
	uint64_t rem = num % den;
	char frac[8];
	int n = 0;

	printk("%s%llu", ticks < 0 ? "-" : "", num / den);
	while (rem != 0 && n < 6) {
		rem *= 10;
		frac[n++] = (char)('0' + rem / den);
		rem %= den;
	}
	while (n > 0 && frac[n - 1] == '0') {
		n--;
	}
	if (n > 0) {
		frac[n] = '\0';
		printk(".%s", frac);
	}
}

static int task_of_slot(const struct qf_golden *set, int slot)
{
	for (int i = 0; i < set->n_tasks; i++) {
		if (paper_case_slot(i) == slot) {
			return i;
		}
	}
	return -1;
}

static void drain(void)
{
	struct qf_event e;

	while (qf_trace_pop(&e)) {
	}
}

/*
 * Runs @p set and collects its events before the horizon into rows[]. Returns their number, or
 * a negative errno (-ENOSPC: more events than the ring holds; set-up errors as paper_case_run).
 */
static int run_set(const struct qf_golden *set)
{
	int64_t horizon = k_us_to_ticks_ceil64(set->horizon_ns / 1000U);
	struct qf_event e;
	int n = 0;
	int64_t zero;
	uint64_t lost_before = qf_trace_lost();

	drain();
	/* Times are handed over in ns with a unit of 1 ms (the set's own unit only prints). */
	struct qf_golden ms = *set;

	ms.unit_ns = 1000000U;
	zero = paper_case_run(&ms, 1, true);
	if (zero < 0) {
		return (int)zero;
	}
	if (qf_trace_lost() != lost_before) {
		return -ENOSPC;
	}
	while (qf_trace_pop(&e)) {
		struct row r = {
			.time = (int64_t)e.time - zero,
			.budget = (int64_t)e.budget,
			.deadline = (int64_t)e.deadline - zero,
			.task = task_of_slot(set, e.thread),
		};

		if (r.time >= horizon || r.task < 0) {
			continue;
		}
		if (n == MAX_ROWS) {
			return -ENOSPC;
		}
		memcpy(r.kind, e.kind, MIN(e.kind_len, sizeof(r.kind) - 1));
		/* In time order, as qf sim lists them: the ring holds events in the order they were
		 * recorded, and a periodic thread's RELEASE is recorded when it calls deadline_set
		 * after its job, with the later time of the release. Ties keep the ring's order.
		 */
		int at = n++;

		while (at > 0 && rows[at - 1].time > r.time) {
			rows[at] = rows[at - 1];
			at--;
		}
		rows[at] = r;
	}
	return n;
}

static void print_rows(const struct qf_golden *set, int n)
{
	printk("--- events\n");
	printk("time,task,event,budget,deadline\n");
	for (int i = 0; i < n; i++) {
		print_units(rows[i].time, set);
		printk(",%s,%s,", set->tasks[rows[i].task].name, rows[i].kind);
		print_units(rows[i].budget, set);
		printk(",");
		print_units(rows[i].deadline, set);
		printk("\n");
	}
	printk("--- end\n");
}

/* Why this image cannot run @p set as written, or NULL. */
static const char *unsupported(const struct qf_golden *set, int64_t admission_ppm)
{
	if (set->tick_hz != CONFIG_SYS_CLOCK_TICKS_PER_SEC) {
		return "tick_hz differs from the image's CONFIG_SYS_CLOCK_TICKS_PER_SEC";
	}
	if (admission_ppm >= 0 && admission_ppm != 1000000) {
		return "admission_bound below 1.0 (the kernel's admission control has bound 1.0)";
	}
	if (IS_ENABLED(CONFIG_QFABRIC_ADMISSION) && admission_ppm < 0) {
		return "no admission_bound: run it on an image without CONFIG_QFABRIC_ADMISSION";
	}
	if (!IS_ENABLED(CONFIG_QFABRIC_ADMISSION) && admission_ppm >= 0) {
		return "admission_bound 1.0: run it on an image with CONFIG_QFABRIC_ADMISSION";
	}
	if (set->n_tasks > CONFIG_QFABRIC_MAX_THREADS) {
		return "more tasks than CONFIG_QFABRIC_MAX_THREADS";
	}
	for (int i = 0; i < set->n_tasks; i++) {
		if (set->tasks[i].kind == QF_GOLDEN_CBS && set->tasks[i].hard_reservation) {
			return "hard reservation (the Zephyr API has no switch for it)";
		}
	}
	return NULL;
}

#ifdef CONFIG_DIFFERENTIAL_FIXED
#include <zephyr/ztest.h>
#include "fixed_set.h"

/* Every event is the simulator's, in its order: time, task, kind, budget and deadline. */
ZTEST(qfabric_differential, test_fixed_set_runs_as_qf_sim_runs_it)
{
	const struct qf_golden *set = &FIXED_SET;
	const char *why = unsupported(set, FIXED_SET_ADMISSION_PPM);

	zassert_is_null(why, "%s: %s", set->source, why);
	int n = run_set(set);

	zassert_true(n >= 0, "%s could not be run: %d", set->source, n);
	print_rows(set, n);
	for (int i = 0; i < MIN(n, set->n_events); i++) {
		const struct qf_golden_event *want = &set->events[i];
		int64_t time = (int64_t)k_ns_to_ticks_floor64(want->time_ns);

		zassert_true(rows[i].task == want->task && strcmp(rows[i].kind, want->kind) == 0 &&
				     rows[i].time == time &&
				     rows[i].budget ==
					     (int64_t)k_ns_to_ticks_floor64(want->budget_ns) &&
				     rows[i].deadline ==
					     (int64_t)k_ns_to_ticks_floor64(want->deadline_ns),
			     "row %d: tick %lld %s %s budget %lld deadline %lld; qf sim: tick %lld %s "
			     "%s budget %llu ns deadline %llu ns",
			     i, rows[i].time, set->tasks[rows[i].task].name, rows[i].kind,
			     rows[i].budget, rows[i].deadline, time, set->tasks[want->task].name,
			     want->kind, want->budget_ns, want->deadline_ns);
	}
	zassert_equal(n, set->n_events, "%d events, qf sim has %d", n, set->n_events);
}

ZTEST_SUITE(qfabric_differential, NULL, NULL, NULL, NULL, NULL);

#else

/* Runs the set of @p argc fields and prints its log; the exit status of the run. */
static int run_fields(int argc, char **argv)
{
	static struct set_line line;
	const char *why = NULL;

	if (set_line_parse(argc, argv, &line, &why) != 0) {
		printk("# differential: bad set: %s\n", why);
		return EXIT_BAD_SET;
	}
	why = unsupported(&line.set, line.admission_ppm);
	if (why != NULL) {
		printk("# differential: unsupported: %s\n", why);
		return EXIT_UNSUPPORTED;
	}
	int n = run_set(&line.set);

	if (n < 0) {
		printk("# differential: the set could not be run: %d%s\n", n,
		       n == -ENOSPC ? " (more events than CONFIG_QFABRIC_TRACE_EVENTS)" : "");
		return EXIT_MISMATCH;
	}
	print_rows(&line.set, n);
	return 0;
}

#ifdef CONFIG_DIFFERENTIAL_CONSOLE
#include <zephyr/drivers/uart.h>

#define MAX_FIELDS (8 + SET_LINE_MAX_TASKS)
#define MAX_LINE 4096

/*
 * Reads one line from the console UART by polling (the console's interrupt-driven line input
 * never leaves its interrupt on mps2's CMSDK UART, whose "pending" includes an idle
 * transmitter); NUL-terminated, without its end. Returns false for a line longer than
 * MAX_LINE - 1 (the rest of it is read and dropped).
 */
static bool read_line(const struct device *uart, char *line)
{
	size_t n = 0;
	bool fits = true;
	unsigned char c;

	while (true) {
		if (uart_poll_in(uart, &c) != 0) {
			k_msleep(1);
			continue;
		}
		if (c == '\r' || c == '\n') {
			if (n == 0 && fits) {
				continue; /* the other half of CR LF, or an empty line */
			}
			line[n] = '\0';
			return fits;
		}
		if (n < MAX_LINE - 1) {
			line[n++] = (char)c;
		} else {
			fits = false;
		}
	}
}

/*
 * Boards without a command line (QEMU): one set per console line, run one after the other in
 * one boot (each run ends by aborting its threads, which frees their control blocks). Before
 * each set `# differential: ready`; after it `# differential: status N`.
 */
int main(void)
{
	const struct device *uart = DEVICE_DT_GET(DT_CHOSEN(zephyr_console));
	static char text[MAX_LINE];
	static char *fields[MAX_FIELDS];

	while (true) {
		int n = 0;
		char *save = NULL;

		printk("# differential: ready\n");
		if (!read_line(uart, text)) {
			printk("# differential: bad set: a line longer than %d bytes\n", MAX_LINE - 1);
			printk("# differential: status %d\n", EXIT_BAD_SET);
			continue;
		}
		char *f = strtok_r(text, " ", &save);

		for (; f != NULL && n < MAX_FIELDS; f = strtok_r(NULL, " ", &save)) {
			fields[n++] = f;
		}
		if (f != NULL) {
			printk("# differential: bad set: more than %d fields\n", MAX_FIELDS);
			printk("# differential: status %d\n", EXIT_BAD_SET);
			continue;
		}
		printk("# differential: status %d\n", run_fields(n, fields));
	}
	return 0;
}
#else
static void finish(int status)
{
#ifdef CONFIG_ARCH_POSIX
	posix_exit(status);
#else
	printk("# differential: exit %d\n", status);
#endif
}

int main(void)
{
	int argc = 0;
	char **argv = NULL;

#ifdef CONFIG_ARCH_POSIX
	native_get_test_cmd_line_args(&argc, &argv);
#endif
	finish(run_fields(argc, argv));
	return 0;
}
#endif
#endif
