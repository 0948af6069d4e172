//! Encode and decode cost per frame (criterion): the `add` request (8-byte payload) and a
//! 988-byte payload (494 big-endian `i16`, the largest ABI v1 payload, element by element).
//! Goals on this machine: < 50 ns (`add`) and < 200 ns (988 bytes) per encode and per decode.
//!
//! Time is the benchmark thread's **CPU time** (`CLOCK_THREAD_CPUTIME_ID`), not wall time: this
//! machine is shared by several builds at once, and under that load the bench process got ~11% of
//! a core, which inflated wall-clock figures 5-10x with time spent descheduled.
//!
//! A counting global allocator proves neither direction allocates: after criterion has run, the
//! bench encodes and decodes each frame 100 000 more times, prints the allocations counted over
//! those calls, and exits non-zero unless it is 0.
//! Run: `cargo bench -p qf-abi --bench frame_codec`; medians are in
//! `target/criterion/<name>/new/estimates.json` (`median.point_estimate`, ns).

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};

use std::time::Duration;

use criterion::measurement::{Measurement, ValueFormatter};
use criterion::{criterion_group, Criterion, Throughput};
use nix::time::{clock_gettime, ClockId};
use qf_abi::{decode_frame, encode_frame, EffectClass, Header, MAX_FRAME_LEN};
use serde::{Deserialize, Serialize};

/// Counts every allocation the process makes.
struct CountingAllocator;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards every call unchanged to the system allocator, which upholds GlobalAlloc's
// contract; the counter is a relaxed atomic with no effect on the allocation itself.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same layout contract as our caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: `ptr` came from `System.alloc` with `layout`; same contract as our caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// Criterion measurement: CPU time consumed by the benchmarking thread.
struct ThreadCpuTime;

fn thread_cpu_now() -> Duration {
    let now =
        clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID).expect("Linux has a thread CPU clock");
    Duration::new(now.tv_sec() as u64, now.tv_nsec() as u32)
}

impl Measurement for ThreadCpuTime {
    type Intermediate = Duration;
    type Value = Duration;
    fn start(&self) -> Duration {
        thread_cpu_now()
    }
    fn end(&self, start: Duration) -> Duration {
        thread_cpu_now().saturating_sub(start)
    }
    fn add(&self, v1: &Duration, v2: &Duration) -> Duration {
        *v1 + *v2
    }
    fn zero(&self) -> Duration {
        Duration::ZERO
    }
    fn to_f64(&self, value: &Duration) -> f64 {
        value.as_nanos() as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        &Nanoseconds
    }
}

/// Reports every value in CPU nanoseconds.
struct Nanoseconds;

impl ValueFormatter for Nanoseconds {
    fn scale_values(&self, _typical: f64, _values: &mut [f64]) -> &'static str {
        "ns (cpu)"
    }
    fn scale_throughputs(
        &self,
        _typical: f64,
        throughput: &Throughput,
        values: &mut [f64],
    ) -> &'static str {
        let per_iteration = match *throughput {
            Throughput::Bytes(n) | Throughput::BytesDecimal(n) | Throughput::Elements(n) => {
                n as f64
            }
        };
        for value in values {
            *value = per_iteration * 1e9 / *value;
        }
        "per cpu-second"
    }
    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "ns"
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
struct AddRequest {
    a: i32,
    b: i32,
}

/// 494 × 2 bytes = 988, the largest payload.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
struct LargestPayload {
    #[serde(with = "qf_abi::codec::array")]
    samples: [i16; 494],
}

fn add_value() -> AddRequest {
    AddRequest {
        a: i32::MIN,
        b: i32::MAX,
    }
}

fn largest_value() -> LargestPayload {
    LargestPayload {
        samples: core::array::from_fn(|i| (i as i16).wrapping_mul(131)),
    }
}

fn header() -> Header {
    Header::request(1, EffectClass::Pure, 0x0102_0304_0506_0708, 7)
}

fn encode<T: Serialize>(value: &T, out: &mut [u8; MAX_FRAME_LEN]) -> usize {
    // The header is opaque too, so none of its encoding can be folded into constants.
    encode_frame(black_box(&header()), value, out).expect("encodes")
}

fn decode<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> T {
    decode_frame(bytes)
        .and_then(|frame| frame.payload_as())
        .expect("decodes")
}

fn bench_frames(c: &mut Criterion<ThreadCpuTime>) {
    let mut out = [0u8; MAX_FRAME_LEN];
    let add = add_value();
    c.bench_function("encode_add_frame", |b| {
        b.iter(|| encode(black_box(&add), &mut out))
    });
    let len = encode(&add, &mut out);
    let add_frame = out[..len].to_vec();
    c.bench_function("decode_add_frame", |b| {
        b.iter(|| decode::<AddRequest>(black_box(&add_frame)))
    });

    let largest = largest_value();
    c.bench_function("encode_988_byte_frame", |b| {
        b.iter(|| encode(black_box(&largest), &mut out))
    });
    let len = encode(&largest, &mut out);
    assert_eq!(len, MAX_FRAME_LEN);
    let largest_frame = out[..len].to_vec();
    c.bench_function("decode_988_byte_frame", |b| {
        b.iter(|| decode::<LargestPayload>(black_box(&largest_frame)))
    });
}

/// Allocations made by 100 000 encodes and decodes of each frame.
fn allocations_per_100k_round_trips() -> usize {
    let add = add_value();
    let largest = largest_value();
    let mut out = [0u8; MAX_FRAME_LEN];
    let mut frame = [0u8; MAX_FRAME_LEN];
    let before = ALLOCATIONS.load(Ordering::SeqCst);
    for _ in 0..100_000 {
        let len = encode(black_box(&add), &mut out);
        frame[..len].copy_from_slice(&out[..len]);
        black_box(decode::<AddRequest>(&frame[..len]));
        let len = encode(black_box(&largest), &mut out);
        frame[..len].copy_from_slice(&out[..len]);
        black_box(decode::<LargestPayload>(&frame[..len]));
    }
    ALLOCATIONS.load(Ordering::SeqCst) - before
}

criterion_group! {
    name = benches;
    config = Criterion::default().with_measurement(ThreadCpuTime);
    targets = bench_frames
}

fn main() {
    benches();
    Criterion::default()
        .with_measurement(ThreadCpuTime)
        .configure_from_args()
        .final_summary();
    let allocations = allocations_per_100k_round_trips();
    println!("allocations during 100000 encode+decode of each frame: {allocations}");
    if allocations != 0 {
        eprintln!("frame encode/decode allocated");
        std::process::exit(1);
    }
}
