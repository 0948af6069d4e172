/*
 * qfabric public C API: periodic EDF and a private CBS per thread, run by the Rust qf-sched core.
 *
 * With CONFIG_QFABRIC_HOOKS_KERNEL_PATCH the same operations are also the kernel syscalls
 * k_thread_deadline_set(), k_thread_period_set(), k_thread_deadline_miss_callback_set() and
 * k_thread_cbs_budget_set(); these qf_* functions work in both hook modes (supervisor only).
 *
 * Units: every duration is in hardware cycles, like k_thread_deadline_set() (convert with
 * k_ms_to_cyc_ceil32() and friends). Internally qfabric counts kernel ticks, so a duration is
 * rounded up to whole ticks.
 *
 * Errors are negative errno values: -EINVAL (bad argument, or deadline_set on another thread
 * that has a control block), -ENOMEM (control-block pool full), -ENOSPC (admission control
 * refused the bandwidth; nothing changed), -ETIMEDOUT (the previous cycle overran its period:
 * the new cycle has started anyway).
 */
#ifndef QFABRIC_QFABRIC_H_
#define QFABRIC_QFABRIC_H_

#include <stdint.h>
#include <zephyr/kernel.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Called (in timer interrupt context) when @p thread is still in its cycle at its deadline. */
typedef void (*qf_deadline_miss_cb_t)(k_tid_t thread, void *arg);

/** Relative deadline @p deadline (cycles) for @p thread; periodic threads sleep here. */
int qf_thread_deadline_set(k_tid_t thread, int deadline);
/** Period (cycles, 0 clears) enforced by the thread's next deadline_set. */
int qf_thread_period_set(k_tid_t thread, int period);
/** Deadline-miss callback (NULL clears) armed by the thread's next deadline_set. */
int qf_thread_deadline_miss_callback_set(k_tid_t thread, qf_deadline_miss_cb_t cb, void *arg);
/** Private CBS maximum budget (cycles, 0 removes the server); period = relative deadline. */
int qf_thread_cbs_budget_set(k_tid_t thread, int budget);
/** Worst-case execution time (cycles) of a periodic thread, for admission control only. */
int qf_thread_wcet_set(k_tid_t thread, int wcet);

/** One scheduling event as the trace records it (times and budgets in kernel ticks). */
struct qf_event {
	uint64_t time;
	uint64_t budget;
	uint64_t deadline;
	uint16_t thread;
	/** Event name (B_COND, B_ROUT, SWT_TO, ...), not NUL-terminated: print with %.*s. */
	const char *kind;
	size_t kind_len;
};

/**
 * Takes the oldest traced event out of the ring. Returns 1 with @p out filled, 0 when the ring
 * is empty (always 0 without CONFIG_QFABRIC_TRACE).
 */
int qf_trace_pop(struct qf_event *out);
/** Events overwritten because the ring was full. */
uint64_t qf_trace_lost(void);
/** Prints every traced event with printk() as CSV, header first (`qf sim --events` format). */
void qf_trace_dump(void);
/** One context switch of a thread with a control block (CONFIG_QFABRIC_TRACE_SWITCHES). */
struct qf_switch {
	uint64_t time;        /* kernel ticks */
	uint16_t thread;      /* qfabric slot */
	uint8_t switched_in;  /* 1: switched in, 0: switched out */
};

/**
 * Takes the oldest logged switch. Returns 1 with @p out filled, 0 when the log is empty (always
 * 0 with CONFIG_QFABRIC_TRACE_SWITCHES=0).
 */
int qf_switch_pop(struct qf_switch *out);
/** The qfabric slot (CSV thread column) of @p thread, or -1 if it has no control block. */
int qf_thread_slot(k_tid_t thread);

#ifdef __cplusplus
}
#endif

#endif /* QFABRIC_QFABRIC_H_ */
