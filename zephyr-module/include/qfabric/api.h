/*
 * The qfabric C API of qfabric.h without Zephyr's headers: only <stdint.h>, <stddef.h> and a
 * forward-declared struct k_thread (k_tid_t is `struct k_thread *`). Applications include
 * qfabric.h; this header exists so that the Rust side's bindgen run (zephyr-module/build.rs)
 * can parse the same declarations outside a Zephyr build (CI, host tests).
 *
 * Units and errors: see qfabric.h.
 */
#ifndef QFABRIC_API_H_
#define QFABRIC_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct k_thread;

/** Called (in timer interrupt context) when @p thread is still in its cycle at its deadline. */
typedef void (*qf_deadline_miss_cb_t)(struct k_thread *thread, void *arg);

/** Relative deadline @p deadline (cycles) for @p thread; periodic threads sleep here. */
int qf_thread_deadline_set(struct k_thread *thread, int deadline);
/** Period (cycles, 0 clears) enforced by the thread's next deadline_set. */
int qf_thread_period_set(struct k_thread *thread, int period);
/** Deadline-miss callback (NULL clears) armed by the thread's next deadline_set. */
int qf_thread_deadline_miss_callback_set(struct k_thread *thread, qf_deadline_miss_cb_t cb,
					 void *arg);
/** Private CBS maximum budget (cycles, 0 removes the server); period = relative deadline.
 *  -ENOTSUP without CONFIG_QFABRIC_CBS.
 */
int qf_thread_cbs_budget_set(struct k_thread *thread, int budget);
/** Worst-case execution time (cycles) of a periodic thread, for admission control only. */
int qf_thread_wcet_set(struct k_thread *thread, int wcet);

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
int qf_thread_slot(struct k_thread *thread);

#ifdef __cplusplus
}
#endif

#endif /* QFABRIC_API_H_ */
