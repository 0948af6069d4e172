/*
 * QFabric ABI v1 frames for the Twister suites (tests/executor, tests/executor-rpmsg): the
 * request builders, the reference's golden vectors, and the expected response to a request, all
 * written from the ABI's definition (../shared/reference/qfabric-abi-v1/README.md), not from the
 * dispatcher under test, so a suite can compare the executor's bytes with them.
 */
#ifndef QF_TEST_FRAMES_H_
#define QF_TEST_FRAMES_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define HEADER_LEN 36

enum task_id {
	TASK_ADD = 1,
	TASK_ABI_PROBE = 2,
	TASK_CRC32 = 3,
	TASK_FIR_X1 = 4,
	TASK_FIR_X512 = 6,
};

static inline void put_be(uint8_t *p, uint64_t value, int bytes)
{
	for (int i = bytes - 1; i >= 0; i--) {
		p[i] = (uint8_t)value;
		value >>= 8;
	}
}

static inline uint64_t get_be(const uint8_t *p, int bytes)
{
	uint64_t value = 0;

	for (int i = 0; i < bytes; i++) {
		value = (value << 8) | p[i];
	}
	return value;
}

/* An ABI v1 request frame (pure, no contract or deadline) into @p buf; returns its length. */
static inline size_t request(uint8_t *buf, uint32_t task, uint64_t invocation, uint32_t epoch,
			     const uint8_t *payload, uint16_t len)
{
	memcpy(buf, "QFAB", 4);
	buf[4] = 1; /* version */
	buf[5] = 1; /* request */
	buf[6] = 1; /* pure */
	buf[7] = 0; /* status */
	put_be(buf + 8, task, 4);
	put_be(buf + 12, invocation, 8);
	put_be(buf + 20, epoch, 4);
	put_be(buf + 24, 0, 4);
	put_be(buf + 28, 0, 4);
	put_be(buf + 32, len, 2);
	put_be(buf + 34, 0, 2);
	memcpy(buf + HEADER_LEN, payload, len);
	return HEADER_LEN + len;
}

static inline size_t add_request(uint8_t *buf, uint64_t invocation, uint32_t epoch, int32_t a,
				 int32_t b)
{
	uint8_t payload[8];

	put_be(payload, (uint32_t)a, 4);
	put_be(payload + 4, (uint32_t)b, 4);
	return request(buf, TASK_ADD, invocation, epoch, payload, sizeof(payload));
}

/*
 * The response an executor owes @p req (at least a whole header): the request's header in
 * version 1 with message type "response", @p status and @p len payload bytes (the ABI echoes
 * every id, the effect class, contract and deadline). Rejections carry no payload. Returns the
 * frame length.
 */
static inline size_t expected_response(const uint8_t *req, uint8_t status, const uint8_t *payload,
				       uint16_t len, uint8_t *out)
{
	memcpy(out, req, HEADER_LEN);
	out[4] = 1; /* an ABI v1 executor answers in v1, also to another version */
	out[5] = 2; /* response */
	out[7] = status;
	put_be(out + 32, len, 2);
	put_be(out + 34, 0, 2);
	if (len > 0) {
		memcpy(out + HEADER_LEN, payload, len);
	}
	return HEADER_LEN + len;
}

/* "add-request-integer-boundaries" of the QFabric ABI v1 golden vectors: task 1, invocation
 * 0x0102030405060708, epoch 7, contract 11, deadline 50000 us, a = INT32_MIN, b = INT32_MAX.
 */
static const uint8_t golden_add_request[] __attribute__((unused)) = {
	0x51, 0x46, 0x41, 0x42, 0x01, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x01,
	0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x00, 0x00, 0x00, 0x07,
	0x00, 0x00, 0x00, 0x0b, 0x00, 0x00, 0xc3, 0x50, 0x00, 0x08, 0x00, 0x00,
	0x80, 0x00, 0x00, 0x00, 0x7f, 0xff, 0xff, 0xff,
};

/* "probe-request-composite": task 2 (abi_probe), invocation and epoch all ones; sequence
 * u64::MAX, temperature 12.5, gain -0.25, offsets [-32768, 0, 32767], enabled.
 */
static const uint8_t golden_probe_request[] __attribute__((unused)) = {
	0x51, 0x46, 0x41, 0x42, 0x01, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x02,
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1b, 0x00, 0x00,
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x41, 0x48, 0x00, 0x00,
	0xbf, 0xd0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00,
	0x7f, 0xff, 0x01,
};

/* "probe-response": accepted, checksum 0x89abcdef. The prototype's checksum is a fixture;
 * qf-tasks' abi_probe answers the CRC-32 of the request payload instead
 * (GOLDEN_PROBE_REQUEST_CRC32), so only the header is the executor's to match byte for byte.
 */
static const uint8_t golden_probe_response[] __attribute__((unused)) = {
	0x51, 0x46, 0x41, 0x42, 0x01, 0x02, 0x01, 0x00, 0x00, 0x00, 0x00, 0x02,
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00,
	0x01, 0x89, 0xab, 0xcd, 0xef,
};

/* CRC-32 (IEEE, zlib's crc32()) of golden_probe_request's 27-byte payload. */
#define GOLDEN_PROBE_REQUEST_CRC32 0x04de28abU

#endif /* QF_TEST_FRAMES_H_ */
