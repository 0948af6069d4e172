/*
 * The MCU executor's UART transport (CONFIG_QFABRIC_EXECUTOR_UART): what its receiver dropped
 * while finding messages again on a line that loses or corrupts bytes, and what did not fit in
 * its transmit buffer. The rules are in src/executor_uart.c and docs/virtual-board.md ("MCU
 * endpoint on a serial line").
 */
#ifndef QFABRIC_EXECUTOR_UART_H_
#define QFABRIC_EXECUTOR_UART_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Counters since boot (each one 32-bit word, read without tearing). */
struct qf_uart_stats {
	/** Whole messages received (each served). */
	uint32_t messages;
	/** Length prefixes outside 36..1032. */
	uint32_t bad_lengths;
	/** Bodies that did not begin with "QFAB". */
	uint32_t bad_magic;
	/** Messages ended by a silent line before their last byte (dropped). */
	uint32_t truncated;
	/** Bytes dropped while hunting for the next message. */
	uint32_t discarded_bytes;
	/** Requests answered with a status other than OK. */
	uint32_t rejected;
	/** Bytes lost because the receive ring was full. */
	uint32_t rx_overruns;
	/** Replies or chain results dropped because the transmit ring was full. */
	uint32_t tx_dropped;
};

/** Copies the counters; 0, or -EINVAL for a NULL @p out. */
int qf_executor_uart_stats_get(struct qf_uart_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* QFABRIC_EXECUTOR_UART_H_ */
