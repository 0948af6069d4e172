/*
 * qfabric MCU executor sample: the rpmsg endpoint "qfabric" (started by the module, see
 * CONFIG_QFABRIC_EXECUTOR_RPMSG) answers every QFabric frame Linux sends, and one resident
 * chain computes the CRC-32 of a fixed block every period and sends only its result.
 */
#include <zephyr/kernel.h>
#include <zephyr/logging/log.h>
#include <zephyr/sys/util.h>

#include <qfabric/executor.h>
#ifdef CONFIG_QFABRIC_EXECUTOR_UART
#include <qfabric/executor_uart.h>
#endif

LOG_MODULE_REGISTER(qfabric_sample, LOG_LEVEL_INF);

#define TASK_CRC32 3
#define STATS_EVERY K_SECONDS(10)

/* On a UART, what the line's receiver dropped and what did not fit (every STATS_EVERY). */
static void log_uart_stats(void)
{
#ifdef CONFIG_QFABRIC_EXECUTOR_UART
	struct qf_uart_stats uart;

	if (qf_executor_uart_stats_get(&uart) == 0) {
		LOG_INF("uart: %u messages, %u rejected; dropped: %u bad lengths, %u bad magic, "
			"%u cut by silence, %u bytes hunted past, %u rx overruns, %u tx full",
			uart.messages, uart.rejected, uart.bad_lengths, uart.bad_magic,
			uart.truncated, uart.discarded_bytes, uart.rx_overruns, uart.tx_dropped);
	}
#endif
}

#ifdef CONFIG_QFABRIC_SAMPLE_CHAIN
static int start_crc_chain(void)
{
	/* Crc32Request is one fixed 64-byte block: the wire encoding is the bytes themselves. */
	uint8_t block[64];
	uint8_t request[36 + sizeof(block)];
	uint32_t contract = CONFIG_QFABRIC_SAMPLE_CHAIN_CONTRACT;

	for (size_t i = 0; i < sizeof(block); i++) {
		block[i] = (uint8_t)i;
	}
	/* Invocation ids contract << 32, +1 per period: never those of another chain. */
	int len = qf_request_encode(TASK_CRC32, (uint64_t)contract << 32, 1, contract, block,
				    sizeof(block), request, sizeof(request));
	if (len < 0) {
		return len;
	}
	/* What Linux checks the results against: qf resident observe --template HEX. */
	char hex[2 * sizeof(request) + 1];

	if (bin2hex(request, (size_t)len, hex, sizeof(hex)) > 0) {
		LOG_INF("chain template %s", hex);
	}
	struct qf_chain_config config = {
		.request = request,
		.request_len = (size_t)len,
		.period = (int)k_ms_to_cyc_ceil32(CONFIG_QFABRIC_SAMPLE_CHAIN_PERIOD_MS),
		.budget = (int)k_us_to_cyc_ceil32(CONFIG_QFABRIC_SAMPLE_CHAIN_BUDGET_US),
		.priority = CONFIG_QFABRIC_SAMPLE_CHAIN_PRIORITY,
	};

	return qf_chain_start(&config);
}
#endif

int main(void)
{
#ifdef CONFIG_QFABRIC_SAMPLE_CHAIN
	int chain = start_crc_chain();

	if (chain < 0) {
		LOG_ERR("resident chain not started: %d", chain);
		return 0;
	}
	LOG_INF("resident chain %d: crc32 every %d ms, budget %d us, contract %d", chain,
		CONFIG_QFABRIC_SAMPLE_CHAIN_PERIOD_MS, CONFIG_QFABRIC_SAMPLE_CHAIN_BUDGET_US,
		CONFIG_QFABRIC_SAMPLE_CHAIN_CONTRACT);
	while (true) {
		struct qf_chain_stats stats;

		k_sleep(STATS_EVERY);
		if (qf_chain_stats_get(chain, &stats) == 0) {
			LOG_INF("chain %d: %llu releases, %llu sent, %llu not sent (Linux not "
				"bound yet?), %llu overruns, compute max %llu ns",
				chain, stats.releases, stats.sent, stats.send_failures,
				stats.overruns, stats.compute_ns_max);
		}
		log_uart_stats();
	}
#else
	LOG_INF("no resident chain; serving requests only");
	while (IS_ENABLED(CONFIG_QFABRIC_EXECUTOR_UART)) {
		k_sleep(STATS_EVERY);
		log_uart_stats();
	}
#endif
	return 0;
}
