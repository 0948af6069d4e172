/*
 * The MCU executor on a UART (CONFIG_QFABRIC_EXECUTOR_UART): for boards whose Linux is another
 * chip joined by a serial line instead of remoteproc and rpmsg (the Arduino UNO Q, with Arduino's
 * router stopped), and for QEMU with the UART on a host chardev.
 *
 * The bytes are those of qfabric's stream framing (userspace/qf-execution/src/wire.rs, the
 * agent's Unix socket): a request is a u16 big-endian length L then L bytes holding one QFabric
 * frame; a reply is a u16 big-endian length, the response frame from qf_executor_serve() and the
 * 8-byte compute trailer (u64 big-endian nanoseconds the task ran, from the cycle counter).
 * Resident chains' results go out the same way without a trailer. The receiver finds messages
 * again after lost or corrupted bytes by the same rules as the Rust Deframer:
 *
 *  - L must be 36..1032 and the body must begin with "QFAB"; otherwise the receiver hunts, one
 *    byte at a time, until the last six bytes are a valid length followed by "QFAB";
 *  - a line silent for CONFIG_QFABRIC_EXECUTOR_UART_GAP_MS inside a message ends it (dropped);
 *  - a body that passes both and does not decode is answered with its rejection status.
 *
 * Each is counted (qf_executor_uart_stats_get()). Receiving is interrupt-driven into a ring
 * buffer, served by one thread; a reply or chain result is queued whole into the transmit ring
 * (never blocking: a message that does not fit is dropped and counted) and sent by the UART's
 * transmit interrupt.
 */
#include <zephyr/kernel.h>
#include <zephyr/device.h>
#include <zephyr/drivers/uart.h>
#include <zephyr/logging/log.h>
#include <zephyr/sys/ring_buffer.h>
#include <zephyr/sys/byteorder.h>

#include <qfabric/executor.h>
#include <qfabric/executor_uart.h>

LOG_MODULE_REGISTER(qfabric_executor_uart, LOG_LEVEL_INF);

#if !DT_HAS_CHOSEN(qfabric_executor_uart)
#error "CONFIG_QFABRIC_EXECUTOR_UART needs the chosen node qfabric,executor-uart (the UART to serve)"
#endif

#define QF_PREFIX_LEN 2
#define QF_HEADER_LEN 36
#define QF_TRAILER_LEN 8
#define QF_MESSAGE_MAX (QF_FRAME_MAX_LEN + QF_TRAILER_LEN)
#define QF_HUNT_LEN (QF_PREFIX_LEN + 4)

static const struct device *const qf_uart = DEVICE_DT_GET(DT_CHOSEN(qfabric_executor_uart));
static const uint8_t qf_magic[4] = {'Q', 'F', 'A', 'B'};

RING_BUF_DECLARE(qf_uart_rx, CONFIG_QFABRIC_EXECUTOR_UART_RX_BUF);
RING_BUF_DECLARE(qf_uart_tx, CONFIG_QFABRIC_EXECUTOR_UART_TX_BUF);
static struct k_spinlock qf_uart_lock;
static K_SEM_DEFINE(qf_uart_rx_sem, 0, 1);
static struct qf_uart_stats qf_stats;

/* --- The deframer (the rules above; one state machine, fed byte by byte). --- */

enum qf_deframe_state { QF_PREFIX, QF_BODY, QF_HUNT };

static struct {
	enum qf_deframe_state state;
	size_t have;
	size_t len;
	uint8_t prefix[QF_PREFIX_LEN];
	uint8_t body[QF_MESSAGE_MAX];
	uint8_t window[QF_HUNT_LEN];
	size_t window_len;
} qf_rx;

static bool qf_len_valid(size_t len)
{
	return len >= QF_HEADER_LEN && len <= QF_MESSAGE_MAX;
}

static void qf_shift_out(void)
{
	if (qf_rx.window_len > 0) {
		memmove(qf_rx.window, qf_rx.window + 1, qf_rx.window_len - 1);
		qf_rx.window_len--;
		qf_stats.discarded_bytes++;
	}
}

static void qf_shift_in(uint8_t byte)
{
	if (qf_rx.window_len == QF_HUNT_LEN) {
		qf_shift_out();
	}
	qf_rx.window[qf_rx.window_len++] = byte;
}

static void qf_try_sync(void)
{
	if (qf_rx.window_len < QF_HUNT_LEN) {
		return;
	}
	size_t len = sys_get_be16(qf_rx.window);

	if (qf_len_valid(len) && memcmp(qf_rx.window + QF_PREFIX_LEN, qf_magic, 4) == 0) {
		memcpy(qf_rx.body, qf_rx.window + QF_PREFIX_LEN, 4);
		qf_rx.window_len = 0;
		qf_rx.state = QF_BODY;
		qf_rx.len = len;
		qf_rx.have = 4;
	}
}

/* Starts hunting over @p seen, the bytes that failed (a message may start from the second). */
static void qf_start_hunt(const uint8_t *seen, size_t n)
{
	qf_rx.state = QF_HUNT;
	qf_rx.window_len = 0;
	for (size_t i = 0; i < n; i++) {
		qf_shift_in(seen[i]);
	}
	qf_shift_out();
	qf_try_sync();
}

/* The line was silent for the gap: a partial message is dropped. */
static void qf_deframe_idle(void)
{
	switch (qf_rx.state) {
	case QF_BODY:
		qf_stats.truncated++;
		break;
	case QF_PREFIX:
		qf_stats.discarded_bytes += qf_rx.have;
		break;
	case QF_HUNT:
		qf_stats.discarded_bytes += qf_rx.window_len;
		break;
	}
	qf_rx.state = QF_PREFIX;
	qf_rx.have = 0;
}

static bool qf_deframe_at_boundary(void)
{
	return qf_rx.state == QF_PREFIX && qf_rx.have == 0;
}

/* Takes one byte; true when it completed a message (qf_rx.body, qf_rx.len bytes). */
static bool qf_deframe_push(uint8_t byte)
{
	switch (qf_rx.state) {
	case QF_PREFIX:
		qf_rx.prefix[qf_rx.have++] = byte;
		if (qf_rx.have < QF_PREFIX_LEN) {
			return false;
		}
		qf_rx.len = sys_get_be16(qf_rx.prefix);
		qf_rx.have = 0;
		if (qf_len_valid(qf_rx.len)) {
			qf_rx.state = QF_BODY;
		} else {
			qf_stats.bad_lengths++;
			qf_start_hunt(qf_rx.prefix, QF_PREFIX_LEN);
		}
		return false;
	case QF_BODY:
		qf_rx.body[qf_rx.have++] = byte;
		if (qf_rx.have == 4 && memcmp(qf_rx.body, qf_magic, 4) != 0) {
			uint8_t seen[QF_HUNT_LEN];

			qf_stats.bad_magic++;
			memcpy(seen, qf_rx.prefix, QF_PREFIX_LEN);
			memcpy(seen + QF_PREFIX_LEN, qf_rx.body, 4);
			qf_start_hunt(seen, sizeof(seen));
			return false;
		}
		if (qf_rx.have < qf_rx.len) {
			return false;
		}
		qf_stats.messages++;
		qf_rx.state = QF_PREFIX;
		qf_rx.have = 0;
		return true;
	case QF_HUNT:
		qf_shift_in(byte);
		qf_try_sync();
		return false;
	}
	return false;
}

/* --- Transmit: whole messages into the ring, drained by the UART's interrupt. --- */

/* Queues prefix + @p frame (+ trailer if @p compute_ns is not NULL); -ENOBUFS if it does not fit. */
static int qf_uart_queue(const uint8_t *frame, size_t len, const uint64_t *compute_ns)
{
	size_t body = len + (compute_ns != NULL ? QF_TRAILER_LEN : 0);
	uint8_t prefix[QF_PREFIX_LEN];
	uint8_t trailer[QF_TRAILER_LEN];

	if (body > QF_MESSAGE_MAX) {
		return -EMSGSIZE;
	}
	sys_put_be16((uint16_t)body, prefix);
	if (compute_ns != NULL) {
		sys_put_be64(*compute_ns, trailer);
	}
	k_spinlock_key_t key = k_spin_lock(&qf_uart_lock);

	if (ring_buf_space_get(&qf_uart_tx) < QF_PREFIX_LEN + body) {
		qf_stats.tx_dropped++;
		k_spin_unlock(&qf_uart_lock, key);
		return -ENOBUFS;
	}
	ring_buf_put(&qf_uart_tx, prefix, QF_PREFIX_LEN);
	ring_buf_put(&qf_uart_tx, frame, len);
	if (compute_ns != NULL) {
		ring_buf_put(&qf_uart_tx, trailer, QF_TRAILER_LEN);
	}
	k_spin_unlock(&qf_uart_lock, key);
	uart_irq_tx_enable(qf_uart);
	return 0;
}

/* The sink of chain results: never blocks a chain. */
static int qf_uart_send(const uint8_t *frame, size_t len, void *ctx)
{
	ARG_UNUSED(ctx);
	return qf_uart_queue(frame, len, NULL);
}

/*
 * One pass per interrupt: CMSDK's (the AN521's) irq_is_pending() stays true while its transmit
 * buffer is empty, so a loop on it would never end; a level-triggered UART (STM32) comes back.
 */
static void qf_uart_isr(const struct device *dev, void *user_data)
{
	ARG_UNUSED(user_data);

	if (uart_irq_update(dev) <= 0) {
		return;
	}
	while (uart_irq_rx_ready(dev) > 0) {
		uint8_t bytes[16];
		int n = uart_fifo_read(dev, bytes, sizeof(bytes));

		if (n <= 0) {
			break;
		}
		k_spinlock_key_t key = k_spin_lock(&qf_uart_lock);
		uint32_t put = ring_buf_put(&qf_uart_rx, bytes, (uint32_t)n);

		qf_stats.rx_overruns += (uint32_t)n - put;
		k_spin_unlock(&qf_uart_lock, key);
		k_sem_give(&qf_uart_rx_sem);
	}
	while (uart_irq_tx_ready(dev) > 0) {
		uint8_t bytes[16];
		k_spinlock_key_t key = k_spin_lock(&qf_uart_lock);
		uint32_t n = ring_buf_peek(&qf_uart_tx, bytes, sizeof(bytes));
		int sent = n > 0 ? uart_fifo_fill(dev, bytes, (int)n) : 0;

		if (sent > 0) {
			ring_buf_get(&qf_uart_tx, NULL, (uint32_t)sent);
		}
		k_spin_unlock(&qf_uart_lock, key);
		if (n == 0) {
			uart_irq_tx_disable(dev);
			break;
		}
		if (sent <= 0) {
			break;
		}
	}
}

int qf_executor_uart_stats_get(struct qf_uart_stats *out)
{
	if (out == NULL) {
		return -EINVAL;
	}
	k_spinlock_key_t key = k_spin_lock(&qf_uart_lock);

	*out = qf_stats;
	k_spin_unlock(&qf_uart_lock, key);
	return 0;
}

static void qf_uart_serve(void)
{
	/* Only this thread serves, so one response buffer does. */
	static uint8_t response[QF_FRAME_MAX_LEN];
	struct qf_served served;
	int status = qf_executor_serve(qf_rx.body, qf_rx.len, response, sizeof(response), &served);

	if (status < 0) {
		LOG_ERR("%zu-byte message not served: %d", qf_rx.len, status);
		return;
	}
	if (status != QF_STATUS_OK) {
		qf_stats.rejected++;
		LOG_DBG("task %u: status %d", served.task_id, status);
	}
	(void)qf_uart_queue(response, served.len, &served.compute_ns);
}

static void qf_uart_thread(void *arg1, void *arg2, void *arg3)
{
	ARG_UNUSED(arg1);
	ARG_UNUSED(arg2);
	ARG_UNUSED(arg3);

	if (!device_is_ready(qf_uart)) {
		LOG_ERR("UART %s is not ready", qf_uart->name);
		return;
	}
	int status = uart_irq_callback_user_data_set(qf_uart, qf_uart_isr, NULL);

	if (status != 0) {
		LOG_ERR("UART %s: no interrupt-driven API (%d)", qf_uart->name, status);
		return;
	}
	/* Whatever the line held before we listened is not a message boundary. */
	uint8_t stale;

	while (uart_poll_in(qf_uart, &stale) == 0) {
	}
	qf_executor_sink_set(qf_uart_send, NULL);
	uart_irq_rx_enable(qf_uart);
	LOG_INF("serving QFabric frames on %s (length-prefixed, gap %d ms)", qf_uart->name,
		CONFIG_QFABRIC_EXECUTOR_UART_GAP_MS);

	while (true) {
		k_timeout_t wait = qf_deframe_at_boundary()
					   ? K_FOREVER
					   : K_MSEC(CONFIG_QFABRIC_EXECUTOR_UART_GAP_MS);

		if (k_sem_take(&qf_uart_rx_sem, wait) != 0) {
			/* Silent for the gap with a message under way. */
			qf_deframe_idle();
			continue;
		}
		uint8_t bytes[64];
		uint32_t n;

		do {
			k_spinlock_key_t key = k_spin_lock(&qf_uart_lock);

			n = ring_buf_get(&qf_uart_rx, bytes, sizeof(bytes));
			k_spin_unlock(&qf_uart_lock, key);
			for (uint32_t i = 0; i < n; i++) {
				/* The deframer and its counters are this thread's. */
				if (qf_deframe_push(bytes[i])) {
					qf_uart_serve();
				}
			}
		} while (n > 0);
	}
}

K_THREAD_DEFINE(qf_uart_thread_id, CONFIG_QFABRIC_EXECUTOR_UART_STACK_SIZE, qf_uart_thread, NULL,
		NULL, NULL, CONFIG_QFABRIC_EXECUTOR_UART_PRIORITY, 0, 0);
