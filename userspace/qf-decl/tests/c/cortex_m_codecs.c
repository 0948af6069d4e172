/* Instantiates every generated codec of crates/qf-tasks/qtasks.toml as an MCU would use it, so
 * scripts/test.d/30-abi can compile the generated header for a bare Cortex-M33
 * (freestanding, no libc) and report the code size. */
#include "qtasks.h"

#define CODEC(T)                                                                  \
    int qf_mcu_encode_##T(const T *v, uint8_t *out, size_t capacity) {            \
        return T##_encode(v, out, capacity);                                       \
    }                                                                              \
    int qf_mcu_decode_##T(T *v, const uint8_t *in, size_t len) {                   \
        return T##_decode(v, in, len);                                             \
    }

CODEC(AddRequest)
CODEC(AddResponse)
CODEC(ProbeRequest)
CODEC(ProbeResponse)
CODEC(Crc32Request)
CODEC(Crc32Response)
CODEC(FirRequest)
CODEC(FirResponse)

/* The task table must agree with the Rust side (crates/qf-tasks): ids 1..6. */
typedef char qf_check_ids[(QF_TASK_ADD_ID == 1u && QF_TASK_ABI_PROBE_ID == 2u && QF_TASK_CRC32_ID == 3u
                           && QF_TASK_FIR_X1_ID == 4u && QF_TASK_FIR_X64_ID == 5u
                           && QF_TASK_FIR_X512_ID == 6u) ? 1 : -1];
