/*
 * qfabric MCU executor (CONFIG_QFABRIC_EXECUTOR): serves QFabric ABI v1 frames with the same
 * dispatcher as Linux and the MCU emulator (qf-tasks' serve: decode, validate, replay window per
 * task, run the task timed on the hardware cycle counter, encode), and runs resident chains.
 *
 * A resident chain is a periodic EDF thread with its own CBS, released once per period by its
 * own timer (qf_thread_period_set + qf_thread_cbs_budget_set), that runs one declared task on a
 * fixed request and sends only the response frame (the result) to the sink. The request is an
 * ordinary ABI v1 request frame (the template); job k carries the template's invocation id + k,
 * the chain's id in its contract-id field, and echoes its epoch and deadline, so Linux can
 * match each result. Linux installs, starts, stops, removes and inspects chains with the control
 * frames of docs/resident-chains.md, served by qf_executor_serve() through qf-chain's table,
 * which qf_chain_start() uses too.
 *
 * Transport: with CONFIG_QFABRIC_EXECUTOR_RPMSG the rpmsg endpoint "qfabric" (OpenAMP
 * resource-table mode) answers every message with qf_executor_serve() and is the sink; without
 * it, set any sink with qf_executor_sink_set() (e.g. a loopback in tests).
 */
#ifndef QFABRIC_EXECUTOR_H_
#define QFABRIC_EXECUTOR_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Longest frame of ABI v1 (header 36 + payload 988). */
#define QF_FRAME_MAX_LEN 1024
/** ABI v1 status codes (header byte 7). */
enum qf_status {
	QF_STATUS_OK = 0,
	QF_STATUS_MALFORMED = 1,
	QF_STATUS_OVERSIZED = 2,
	QF_STATUS_VERSION_MISMATCH = 3,
	QF_STATUS_UNKNOWN_TASK = 4,
	QF_STATUS_STALE = 5,
	QF_STATUS_DUPLICATE = 6,
	QF_STATUS_EXECUTION_ERROR = 7,
};

/** What qf_executor_serve() wrote. */
struct qf_served {
	/** Bytes of the response frame at the front of the output buffer. */
	size_t len;
	/** Task id the request named (0 if the header was unreadable). */
	uint32_t task_id;
	/** The status the response carries (enum qf_status). */
	uint8_t status;
	/** Nanoseconds the task ran, from the hardware cycle counter; 0 if it did not run. */
	uint64_t compute_ns;
};

/**
 * Serves one request frame of @p len bytes into @p out (@p cap bytes; 100 hold every declared
 * response, a larger one is answered EXECUTION_ERROR). Any bytes are answered: a malformed,
 * oversized, stale or duplicate request gets a response frame with that status.
 *
 * Returns the response's status (>= 0, enum qf_status) with @p served filled, or a negative errno
 * and no response: -EINVAL (NULL pointer, or @p cap below the 36-byte header), -EBUSY (called
 * from an interrupt: the dispatcher runs under a mutex).
 */
int qf_executor_serve(const uint8_t *req, size_t len, uint8_t *out, size_t cap,
		      struct qf_served *served);

/**
 * Writes an ABI v1 request frame for declared task @p task_id (with its declared effect class,
 * no deadline) carrying @p payload, which must already be the task's request in the wire
 * encoding (big-endian, fixed width). Returns the frame length, -EINVAL (unknown task, NULL
 * pointer) or -ENOSPC (payload above 988 bytes, or @p cap too small).
 */
int qf_request_encode(uint32_t task_id, uint64_t invocation_id, uint32_t epoch,
		      uint32_t contract_id, const uint8_t *payload, size_t payload_len, uint8_t *out,
		      size_t cap);

/** Forgets every task's replay window (what a reboot does), e.g. when Linux reattaches.
 * Thread context only (in an interrupt it does nothing). */
void qf_executor_replay_reset(void);

/** Sends one frame to Linux; returns 0 if the transport took it, a negative errno otherwise. */
typedef int (*qf_executor_sink_t)(const uint8_t *frame, size_t len, void *ctx);

/** Where chain results go (replaces the previous sink; NULL drops them, counted as failures). */
void qf_executor_sink_set(qf_executor_sink_t sink, void *ctx);

/**
 * The rpmsg transport's shared memory (vrings and buffers, the size of the chosen zephyr,ipc_shm
 * node) as this core addresses it. The module's definition is weak and returns the chosen node's
 * address, which is right on every board; an image whose shared memory has no fixed address
 * (native_sim, whose memory is the host process's) defines its own
 * (CONFIG_QFABRIC_EXECUTOR_RPMSG only).
 */
void *qf_executor_rpmsg_shm(void);

/** A resident chain to start. */
struct qf_chain_config {
	/** ABI v1 request frame run every period (copied; checked by a dry run of the task). */
	const uint8_t *request;
	size_t request_len;
	/** Period and relative deadline, in hardware cycles (k_ms_to_cyc_ceil32()). */
	int period;
	/** CBS budget per period, in cycles (0: no server, the thread is only periodic). */
	int budget;
	/** Zephyr priority of the chain thread; EDF orders the threads of one priority. */
	int priority;
};

/** Counters of one chain (times and lateness in nanoseconds). */
struct qf_chain_stats {
	uint64_t releases;
	uint64_t results;
	uint64_t rejected;
	uint64_t overruns;
	uint64_t sent;
	uint64_t send_failures;
	uint64_t compute_ns_last;
	uint64_t compute_ns_max;
	uint64_t lateness_max;
	/** Invocation id of the next job. */
	uint64_t next_invocation;
};

/**
 * Installs and starts a resident chain through the same chain table as the control frames from
 * Linux (docs/resident-chains.md): the same checks in the same order, admission by qf-sched's
 * bandwidth test over every CBS reservation of the MCU, the same thread. The chain's id (the
 * contract id of its results) is the request's contract id, or the lowest free id if that is 0
 * or taken. @p period and @p budget are converted to microseconds (rounded up). The install and
 * start run on a thread of the module's own (CONFIG_QFABRIC_EXECUTOR_CHAIN_CONTROL_STACK_SIZE),
 * at the caller's priority, while the caller waits: the caller's stack needs room only for the
 * call, and @p config and its request may go out of scope once it returns. Returns the
 * chain's handle (its slot, >= 0) or -EINVAL (NULL config, period <= 0, negative budget, a
 * budget above the period, a request the dispatcher would not answer OK, an invalid priority:
 * the reason is printed), -ENOMEM (every slot taken), -ENOSPC (admission control refused the
 * bandwidth), -EBUSY (interrupt context).
 */
int qf_chain_start(const struct qf_chain_config *config);

/**
 * Removes a chain (as the remove control frame does): stops it at once (its thread is woken and
 * joined; a job still running after two periods, or one second, is aborted), gives its
 * reservation back and frees its slot. Returns 0, -EINVAL (no such chain) or -EBUSY (interrupt
 * context).
 */
int qf_chain_stop(int chain);

/** Copies an installed chain's counters (as of its last job). Returns 0 or -EINVAL (no such
 * chain). */
int qf_chain_stats_get(int chain, struct qf_chain_stats *out);

/** The chain's thread, e.g. for qf_thread_slot() (NULL if no such chain). */
struct k_thread *qf_chain_thread(int chain);

#ifdef __cplusplus
}
#endif

#endif /* QFABRIC_EXECUTOR_H_ */
