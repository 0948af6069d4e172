//! The generated C header, compiled with the system C compiler (`-std=c99 -Wall -Wextra
//! -pedantic -Werror`) and run: it decodes the reference golden payloads to the reference
//! values, re-encodes them to the same bytes, and rejects bad bools, NaN and wrong lengths.

use std::process::Command;

const PROGRAM: &str = r#"
#include "qtasks.h"
#include <stdio.h>
#include <string.h>

static size_t unhex(const char *text, uint8_t *out) {
    size_t n = 0;
    for (; text[0] && text[1]; text += 2) {
        unsigned value;
        sscanf(text, "%2x", &value);
        out[n++] = (uint8_t)value;
    }
    return n;
}

#define CHECK(condition) do { if (!(condition)) { printf("failed: %s (line %d)\n", #condition, __LINE__); return 1; } } while (0)

int main(void) {
    uint8_t in[128], out[128];
    size_t n;

    AddRequest add;
    n = unhex("800000007fffffff", in);
    CHECK(AddRequest_decode(&add, in, n) == QF_STATUS_OK);
    CHECK(add.a == INT32_MIN && add.b == INT32_MAX);
    CHECK(AddRequest_encode(&add, out, sizeof out) == 8 && memcmp(in, out, 8) == 0);
    CHECK(AddRequest_decode(&add, in, 7) == QF_STATUS_MALFORMED);
    CHECK(AddRequest_encode(&add, out, 7) == -QF_STATUS_EXECUTION_ERROR);

    ProbeRequest probe;
    n = unhex("ffffffffffffffff41480000bfd0000000000000800000007fff01", in);
    CHECK(n == ProbeRequest_WIRE_SIZE);
    CHECK(ProbeRequest_decode(&probe, in, n) == QF_STATUS_OK);
    CHECK(probe.sequence == UINT64_MAX && probe.temperature == 12.5f && probe.gain == -0.25);
    CHECK(probe.offsets[0] == -32768 && probe.offsets[1] == 0 && probe.offsets[2] == 32767);
    CHECK(probe.enabled == true);
    CHECK(ProbeRequest_encode(&probe, out, sizeof out) == (int)n && memcmp(in, out, n) == 0);
    in[26] = 2; /* bool byte */
    CHECK(ProbeRequest_decode(&probe, in, n) == QF_STATUS_MALFORMED);
    in[26] = 1; in[8] = 0x7f; in[9] = 0xc0; in[10] = 0; in[11] = 0; /* NaN temperature */
    CHECK(ProbeRequest_decode(&probe, in, n) == QF_STATUS_MALFORMED);
    CHECK(ProbeRequest_decode(&probe, in, 989) == QF_STATUS_OVERSIZED);

    ProbeResponse response;
    n = unhex("0189abcdef", in);
    CHECK(ProbeResponse_decode(&response, in, n) == QF_STATUS_OK);
    CHECK(response.accepted == true && response.checksum == 0x89abcdefu);
    CHECK(ProbeResponse_encode(&response, out, sizeof out) == 5 && memcmp(in, out, 5) == 0);

    FirRequest fir;
    for (int i = 0; i < 32; i++) fir.samples[i] = (int16_t)(i * 1000 - 16000);
    CHECK(FirRequest_encode(&fir, out, sizeof out) == 64);
    CHECK(out[0] == 0xc1 && out[1] == 0x80); /* -16000 big-endian */
    FirRequest back;
    CHECK(FirRequest_decode(&back, out, 64) == QF_STATUS_OK && memcmp(&back, &fir, sizeof fir) == 0);

    CHECK(QF_TASK_ADD_ID == 1u && QF_TASK_ABI_PROBE_ID == 2u && QF_TASK_FIR_X512_ID == 6u);
    CHECK(QF_TASK_CRC32_EFFECT == QF_EFFECT_PURE && QF_TASK_CRC32_REQUEST_SIZE == 64u);
    puts("ok");
    return 0;
}
"#;

#[test]
fn the_c_header_round_trips_the_golden_payloads_and_enforces_the_rules() {
    let schema = qf_decl::cli::default_schema().expect("qf-tasks declarations are valid");
    let header = qf_decl::c::generate(&schema, "crates/qf-tasks/qtasks.toml", "QTASKS_H");
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("qtasks.h"), header).unwrap();
    std::fs::write(dir.path().join("main.c"), PROGRAM).unwrap();
    let binary = dir.path().join("golden");
    let compile = Command::new("cc")
        .args([
            "-std=c99",
            "-Wall",
            "-Wextra",
            "-pedantic",
            "-Werror",
            "-O1",
            "-o",
        ])
        .arg(&binary)
        .arg(dir.path().join("main.c"))
        .output()
        .expect("a C compiler (`cc`, also Rust's linker) is installed");
    assert!(
        compile.status.success(),
        "{}",
        String::from_utf8_lossy(&compile.stderr)
    );
    let run = Command::new(&binary).output().expect("runs");
    assert_eq!(String::from_utf8_lossy(&run.stdout), "ok\n");
    assert!(run.status.success());
}
