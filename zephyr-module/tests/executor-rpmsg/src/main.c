/*
 * The MCU executor's rpmsg transport (CONFIG_QFABRIC_EXECUTOR_RPMSG) as a specification, end to
 * end: the image runs the executor unchanged (resource table, IPM, endpoint "qfabric") and also
 * plays the other core (src/host.c: OpenAMP in the virtio driver role, what Linux remoteproc and
 * virtio_rpmsg_bus do), linked by a loopback mailbox. Every reply is compared byte for byte with
 * the response the ABI prescribes (../common/qf_test_frames.h, with the reference's golden
 * vectors).
 *
 * The suites run in the order of test_main() below, because the link has a history: the host
 * first brings the vdev up, then chain results are refused until the host has written, then
 * frames and chains run on the open channel, and last the host closes it.
 * Times are kernel ticks (CONFIG_SYS_CLOCK_TICKS_PER_SEC=10000: 1 ms = 10 ticks).
 */
#include <string.h>

#include <zephyr/kernel.h>
#include <zephyr/ztest.h>

#include <openamp/open_amp.h>
#include <qfabric/executor.h>

#include "host.h"
#include "qf_test_frames.h"

#define TICKS_PER_MS (CONFIG_SYS_CLOCK_TICKS_PER_SEC / 1000)
/* Timer expiries and wake-ups land on the next tick boundary at the latest. */
#define SLACK_TICKS 2
#define CHAIN_PRIO 5
#define PERIOD_MS 10
/* The tests' chain id: the template's contract id, which every result carries (tagged). */
#define CHAIN_ID 9
/* A 512-byte rpmsg buffer less its 16-byte header. */
#define MESSAGE_MAX (RPMSG_BUFFER_SIZE - 16)
#define REPLY_TIMEOUT K_MSEC(100)

/*
 * The sink call of every chain result (executor_port.c, called by the Rust chains), which the
 * rpmsg transport implements. No header exports it; the test calls it as a chain does, with
 * frames no declared task can produce (the largest response is 100 bytes).
 */
int qf_executor_port_send(const uint8_t *frame, size_t len);

/* The address the executor announced for "qfabric" (set by the bring-up suite). */
static uint32_t mcu_addr;
static bool host_up;

static uint8_t frame[QF_FRAME_MAX_LEN];
static uint8_t expected[QF_FRAME_MAX_LEN];
static struct host_msg msg;

/* The next message must arrive at host endpoint @p ept from "qfabric", @p len bytes of @p bytes. */
static void expect_message(enum host_endpoint ept, const uint8_t *bytes, size_t len)
{
	zassert_ok(host_receive(&msg, REPLY_TIMEOUT), "no message from the MCU");
	zassert_equal(msg.ept, ept, "arrived at host endpoint %d, expected %d", msg.ept, ept);
	zassert_equal(msg.src, mcu_addr, "from 0x%x, not qfabric's 0x%x", msg.src, mcu_addr);
	zassert_equal(msg.len, len, "%zu bytes, expected %zu", msg.len, len);
	if (memcmp(msg.data, bytes, len) != 0) {
		TC_PRINT("received:");
		for (size_t i = 0; i < len; i++) {
			TC_PRINT(" %02x", msg.data[i]);
		}
		TC_PRINT("\nexpected:");
		for (size_t i = 0; i < len; i++) {
			TC_PRINT(" %02x", bytes[i]);
		}
		TC_PRINT("\n");
	}
	zassert_mem_equal(msg.data, bytes, len, "the %zu bytes differ", len);
}

/* Sends the first @p len bytes of frame from @p ept; the reply must be a @p status rejection. */
static void expect_rejection(enum host_endpoint ept, size_t len, uint8_t status)
{
	zassert_equal(host_send(ept, frame, len), (int)len);
	expect_message(ept, expected, expected_response(frame, status, NULL, 0, expected));
}

static void expect_silence(k_timeout_t timeout)
{
	int status = host_receive(&msg, timeout);

	zassert_equal(status, -EAGAIN, "a %zu-byte message arrived at host endpoint %d", msg.len,
		      msg.ept);
}

/* The chain a test started, stopped by the test or, if it failed midway, after it. */
static int running_chain = -1;

static int start_add_chain(uint64_t first_invocation)
{
	static uint8_t template[HEADER_LEN + 8];
	struct qf_chain_config config = {
		.request = template,
		.request_len = add_request(template, first_invocation, 1, 40, 2),
		.period = (int)k_ms_to_cyc_ceil32(PERIOD_MS),
		.budget = (int)k_ms_to_cyc_ceil32(2),
		.priority = CHAIN_PRIO,
	};

	put_be(template + 24, CHAIN_ID, 4);

	running_chain = qf_chain_start(&config);
	return running_chain;
}

static int stop_chain(void)
{
	int status = qf_chain_stop(running_chain);

	running_chain = -1;
	return status;
}

/*
 * The next message must be the add chain's result for @p invocation (40 + 2), tagged with its
 * chain id, at @p ept.
 */
static void expect_chain_result(enum host_endpoint ept, uint64_t invocation)
{
	static const uint8_t sum[4] = {0, 0, 0, 42};
	uint8_t req[HEADER_LEN + 8];

	add_request(req, invocation, 1, 40, 2);
	put_be(req + 24, CHAIN_ID, 4);
	expect_message(ept, expected,
		       expected_response(req, QF_STATUS_OK, sum, sizeof(sum), expected));
}

/* Receives @p count results from invocation @p first on at @p ept, one per period. */
static void expect_chain_results(enum host_endpoint ept, uint64_t first, int count)
{
	int64_t first_at = 0;

	for (int k = 0; k < count; k++) {
		expect_chain_result(ept, first + k);
		if (k == 0) {
			first_at = msg.at;
		}
		int64_t offset = msg.at - first_at;

		zassert_true(offset >= k * PERIOD_MS * TICKS_PER_MS - SLACK_TICKS &&
				     offset <= k * PERIOD_MS * TICKS_PER_MS + SLACK_TICKS,
			     "result %d at +%lld ticks, expected +%d", k, offset,
			     k * PERIOD_MS * TICKS_PER_MS);
	}
}

/* The reference's golden add request from "qfabric" on the host; answered INT32_MIN + INT32_MAX. */
static void send_golden_add_request(void)
{
	static const uint8_t minus_one[4] = {0xff, 0xff, 0xff, 0xff};

	memcpy(frame, golden_add_request, sizeof(golden_add_request));
	zassert_equal(host_send(HOST_EPT_QFABRIC, frame, sizeof(golden_add_request)),
		      sizeof(golden_add_request));
	expect_message(HOST_EPT_QFABRIC, expected,
		       expected_response(golden_add_request, QF_STATUS_OK, minus_one,
					 sizeof(minus_one), expected));
}

static void host_must_be_up(void *fixture)
{
	ARG_UNUSED(fixture);
	zassume_true(host_up, "the host did not bring the link up");
	qf_executor_replay_reset();
	/* What a failed test left on its way is not the next test's (each test ends checking
	 * that nothing more arrived).
	 */
	while (host_receive(&msg, K_MSEC(5)) == 0) {
	}
}

static void nothing_lost(void *fixture)
{
	ARG_UNUSED(fixture);
	if (running_chain >= 0) {
		(void)stop_chain();
	}
	host_close(HOST_EPT_AUX);
	zassert_equal(host_lost(), 0, "the host dropped messages");
	zassert_equal(host_stray_kicks(), 0, "the MCU signalled no vring");
}

/* ---- 1: bring-up ---- */

ZTEST(rpmsg_bringup, test_host_sets_up_the_vdev_and_the_executor_announces_qfabric)
{
	struct host_announcement ns;
	struct fw_rsc_vdev *rsc;
	uintptr_t shm;

	zassert_ok(host_start(), "host vdev set-up");
	/* The executor polls the table's status every millisecond until DRIVER_OK. */
	zassert_ok(host_wait_announcement(&ns, K_SECONDS(1)), "no name-service announcement");
	zassert_str_equal(ns.name, "qfabric");
	zassert_true(ns.addr >= RPMSG_RESERVED_ADDRESSES && ns.addr != RPMSG_ADDR_ANY,
		     "address 0x%x", ns.addr);

	rsc = host_vdev_rsc();
	shm = (uintptr_t)host_shm();
	zassert_equal(rsc->id, VIRTIO_ID_RPMSG);
	zassert_true(rsc->status & VIRTIO_CONFIG_STATUS_DRIVER_OK);
	zassert_true(rsc->gfeatures & BIT(VIRTIO_RPMSG_F_NS), "name service negotiated");
	for (int i = 0; i < 2; i++) {
		zassert_true(rsc->vring[i].da >= shm &&
				     rsc->vring[i].da < shm + host_shm_size(),
			     "vring %d at 0x%x", i, rsc->vring[i].da);
	}

	mcu_addr = ns.addr;
	zassert_ok(host_open(HOST_EPT_QFABRIC, "qfabric", mcu_addr));
	zassert_equal(host_mtu(HOST_EPT_QFABRIC), MESSAGE_MAX);
	k_sleep(K_MSEC(PERIOD_MS));
	zassert_equal(host_announcements(), 1, "one announcement, once");
	host_up = true;
}

/* ---- 2: before the host has written ---- */

ZTEST(rpmsg_silent_host, test_chain_results_are_send_failures_until_the_host_writes)
{
	struct qf_chain_stats stats;
	int chain = start_add_chain(1000);

	zassert_true(chain >= 0, "start: %d", chain);
	/* Releases at 0, 10 and 20 ms: "qfabric" is open on the host, which has not written. */
	k_sleep(K_MSEC(3 * PERIOD_MS - 5));
	zassert_ok(qf_chain_stats_get(chain, &stats));
	zassert_equal(stats.releases, 3);
	zassert_equal(stats.results, 3);
	zassert_equal(stats.sent, 0);
	zassert_equal(stats.send_failures, 3, "%llu send failures", stats.send_failures);
	expect_silence(K_NO_WAIT);
	zassert_equal(qf_executor_port_send(golden_add_request, sizeof(golden_add_request)),
		      -ENOTCONN, "the sink has no destination yet");

	/* The host's first frame, the reference's golden add request, is answered ... */
	send_golden_add_request();
	/* ... and from the next release on every result reaches the host, one per period. */
	expect_chain_results(HOST_EPT_QFABRIC, 1003, 3);
	k_sleep(K_MSEC(PERIOD_MS / 2));
	zassert_ok(qf_chain_stats_get(chain, &stats));
	zassert_ok(stop_chain());
	zassert_equal(stats.releases, 6);
	zassert_equal(stats.sent, 3);
	zassert_equal(stats.send_failures, 3, "no more failures once the host wrote");
	expect_silence(K_MSEC(2 * PERIOD_MS));
}

/* ---- 3: frames on the open channel ---- */

ZTEST(rpmsg_frames, test_golden_add_request_is_answered_byte_for_byte)
{
	send_golden_add_request();
	/* The executor's replay window sees the frame once: the same frame again is refused. */
	expect_rejection(HOST_EPT_QFABRIC, sizeof(golden_add_request), QF_STATUS_DUPLICATE);
}

ZTEST(rpmsg_frames, test_golden_probe_request_is_answered_with_the_reference_header)
{
	uint8_t answer[5] = {1 /* accepted: the probe was enabled */};

	put_be(answer + 1, GOLDEN_PROBE_REQUEST_CRC32, 4);
	size_t len = expected_response(golden_probe_request, QF_STATUS_OK, answer,
				       sizeof(answer), expected);

	/* The expectation is the reference's "probe-response" frame but for its checksum. */
	zassert_equal(len, sizeof(golden_probe_response));
	zassert_mem_equal(expected, golden_probe_response, HEADER_LEN + 1);

	memcpy(frame, golden_probe_request, sizeof(golden_probe_request));
	zassert_equal(host_send(HOST_EPT_QFABRIC, frame, sizeof(golden_probe_request)),
		      sizeof(golden_probe_request));
	expect_message(HOST_EPT_QFABRIC, expected, len);
}

ZTEST(rpmsg_frames, test_rejected_frames_are_answered_with_their_status)
{
	size_t len = add_request(frame, 1, 0, 1, 1);

	expect_rejection(HOST_EPT_QFABRIC, len - 1, QF_STATUS_MALFORMED);
	put_be(frame + 8, 999, 4);
	expect_rejection(HOST_EPT_QFABRIC, len, QF_STATUS_UNKNOWN_TASK);
	len = add_request(frame, 2, 0, 1, 1);
	frame[4] = 2;
	expect_rejection(HOST_EPT_QFABRIC, len, QF_STATUS_VERSION_MISMATCH);
	len = add_request(frame, 3, 0, 1, 1);
	frame[5] = 2;
	expect_rejection(HOST_EPT_QFABRIC, len, QF_STATUS_MALFORMED);
}

ZTEST(rpmsg_frames, test_each_frame_is_answered_to_its_sender)
{
	static const uint8_t seven[4] = {0, 0, 0, 7};
	size_t len = add_request(frame, 10, 0, 3, 4);

	/* A second host endpoint (no name: OpenAMP announces nothing for it) on the same MCU
	 * endpoint.
	 */
	zassert_ok(host_open(HOST_EPT_AUX, "", mcu_addr));
	zassert_equal(host_send(HOST_EPT_AUX, frame, len), (int)len);
	expect_message(HOST_EPT_AUX, expected,
		       expected_response(frame, QF_STATUS_OK, seven, sizeof(seven), expected));
	len = add_request(frame, 11, 0, 3, 4);
	zassert_equal(host_send(HOST_EPT_QFABRIC, frame, len), (int)len);
	expect_message(HOST_EPT_QFABRIC, expected,
		       expected_response(frame, QF_STATUS_OK, seven, sizeof(seven), expected));
	host_close(HOST_EPT_AUX);
	expect_silence(K_MSEC(1));
}

ZTEST(rpmsg_frames, test_a_message_carries_at_most_496_bytes)
{
	/* An add request made 496 bytes long by its payload (460 bytes, length field to match):
	 * it arrives whole and the dispatcher refuses the payload, not the transport.
	 */
	static const uint8_t zeros[MESSAGE_MAX + 1 - HEADER_LEN];

	request(frame, TASK_ADD, 20, 0, zeros, MESSAGE_MAX - HEADER_LEN);
	zassert_equal(host_mtu(HOST_EPT_QFABRIC), MESSAGE_MAX);
	expect_rejection(HOST_EPT_QFABRIC, MESSAGE_MAX, QF_STATUS_MALFORMED);

	/* One byte more cannot arrive whole: an OpenAMP host cuts the message to 496 bytes (Linux's
	 * virtio_rpmsg_bus refuses it with -EMSGSIZE), and the frame's own payload length (461)
	 * tells the executor it lost a byte.
	 */
	request(frame, TASK_ADD, 21, 0, zeros, MESSAGE_MAX + 1 - HEADER_LEN);
	zassert_equal(host_send(HOST_EPT_QFABRIC, frame, MESSAGE_MAX + 1), MESSAGE_MAX,
		      "OpenAMP sends the first 496 bytes");
	expect_message(HOST_EPT_QFABRIC, expected,
		       expected_response(frame, QF_STATUS_MALFORMED, NULL, 0, expected));
}

/* ---- 4: resident chains on the open channel ---- */

ZTEST(rpmsg_chains, test_chain_results_go_to_the_endpoint_that_last_wrote)
{
	static const uint8_t seven[4] = {0, 0, 0, 7};
	struct qf_chain_stats stats;
	size_t len = add_request(frame, 30, 0, 3, 4);

	/* A second host endpoint writes (as Linux's /dev/qfabricN does beside an rpmsg_char
	 * endpoint, two addresses on the one channel): it is answered, and the chain's results
	 * follow it ...
	 */
	zassert_ok(host_open(HOST_EPT_AUX, "", mcu_addr));
	zassert_equal(host_send(HOST_EPT_AUX, frame, len), (int)len);
	expect_message(HOST_EPT_AUX, expected,
		       expected_response(frame, QF_STATUS_OK, seven, sizeof(seven), expected));

	int chain = start_add_chain(2000);

	zassert_true(chain >= 0, "start: %d", chain);
	expect_chain_results(HOST_EPT_AUX, 2000, 3);
	/* ... until "qfabric" writes, right after a result: from the next release on, the results
	 * reach "qfabric" (and none is lost on the way).
	 */
	len = add_request(frame, 31, 0, 3, 4);
	zassert_equal(host_send(HOST_EPT_QFABRIC, frame, len), (int)len);
	expect_message(HOST_EPT_QFABRIC, expected,
		       expected_response(frame, QF_STATUS_OK, seven, sizeof(seven), expected));
	expect_chain_results(HOST_EPT_QFABRIC, 2003, 2);
	k_sleep(K_MSEC(PERIOD_MS / 2));
	zassert_ok(qf_chain_stats_get(chain, &stats));
	zassert_ok(stop_chain());
	host_close(HOST_EPT_AUX);
	zassert_equal(stats.releases, 5);
	zassert_equal(stats.sent, 5);
	zassert_equal(stats.send_failures, 0);
	zassert_equal(stats.next_invocation, 2005);
	expect_silence(K_MSEC(2 * PERIOD_MS));
}

ZTEST(rpmsg_chains, test_a_result_above_496_bytes_is_refused_with_emsgsize)
{
	for (int i = 0; i < MESSAGE_MAX + 1; i++) {
		frame[i] = (uint8_t)(i * 7);
	}
	/* The largest result goes out whole ... */
	zassert_ok(qf_executor_port_send(frame, MESSAGE_MAX));
	expect_message(HOST_EPT_QFABRIC, frame, MESSAGE_MAX);
	/* ... one byte more is refused, not cut (OpenAMP's own send would cut it). */
	zassert_equal(qf_executor_port_send(frame, MESSAGE_MAX + 1), -EMSGSIZE);
	expect_silence(K_MSEC(PERIOD_MS));
}

/* ---- 5: the host closes the channel ---- */

ZTEST(rpmsg_host_closes, test_chain_results_are_send_failures_again_after_the_host_closes)
{
	struct qf_chain_stats stats;

	/* OpenAMP tells the MCU with a name-service "destroy" for "qfabric"; the executor's
	 * endpoint forgets its destination (its unbind callback logs it).
	 */
	host_close(HOST_EPT_QFABRIC);
	k_sleep(K_MSEC(1));
	int chain = start_add_chain(3000);

	zassert_true(chain >= 0, "start: %d", chain);
	k_sleep(K_MSEC(3 * PERIOD_MS - 5));
	zassert_ok(qf_chain_stats_get(chain, &stats));
	zassert_ok(stop_chain());
	zassert_equal(stats.releases, 3);
	zassert_equal(stats.sent, 0);
	zassert_equal(stats.send_failures, 3);
	zassert_equal(qf_executor_port_send(golden_add_request, sizeof(golden_add_request)),
		      -ENOTCONN);
	expect_silence(K_MSEC(PERIOD_MS));
}

/* The phases of the link, in order; each suite runs in one (its predicate). */
enum phase {
	PHASE_BRINGUP,
	PHASE_SILENT_HOST,
	PHASE_OPEN,
	PHASE_CLOSING,
	PHASE_COUNT,
};

static bool in_bringup(const void *phase)
{
	return *(const enum phase *)phase == PHASE_BRINGUP;
}

static bool in_silent_host(const void *phase)
{
	return *(const enum phase *)phase == PHASE_SILENT_HOST;
}

static bool in_open(const void *phase)
{
	return *(const enum phase *)phase == PHASE_OPEN;
}

static bool in_closing(const void *phase)
{
	return *(const enum phase *)phase == PHASE_CLOSING;
}

ZTEST_SUITE(rpmsg_bringup, in_bringup, NULL, NULL, nothing_lost, NULL);
ZTEST_SUITE(rpmsg_silent_host, in_silent_host, NULL, host_must_be_up, nothing_lost, NULL);
ZTEST_SUITE(rpmsg_frames, in_open, NULL, host_must_be_up, nothing_lost, NULL);
ZTEST_SUITE(rpmsg_chains, in_open, NULL, host_must_be_up, nothing_lost, NULL);
ZTEST_SUITE(rpmsg_host_closes, in_closing, NULL, host_must_be_up, nothing_lost, NULL);

void test_main(void)
{
	for (enum phase phase = 0; phase < PHASE_COUNT; phase++) {
		ztest_run_test_suites(&phase, false, 1, 1);
	}
	ztest_verify_all_test_suites_ran();
}
