//! Encode and decode cost per frame (criterion): the `add` request (8-byte payload) and a
//! 988-byte payload (494 big-endian `i16`, the largest ABI v1 payload, element by element).
//! Goals on this machine: < 50 ns (`add`) and < 200 ns (988 bytes) per encode and per decode.
//!
//! A counting global allocator proves neither direction allocates: after criterion has run, the
//! bench encodes and decodes each frame 100 000 more times, prints the allocations counted over
//! those calls, and exits non-zero unless it is 0.
//! Run: `cargo bench -p qf-abi --bench frame_codec`; medians are in
//! `target/criterion/<name>/new/estimates.json` (`median.point_estimate`, ns).

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};

use criterion::{criterion_group, Criterion};
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
    encode_frame(&header(), value, out).expect("encodes")
}

fn decode<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> T {
    decode_frame(bytes)
        .and_then(|frame| frame.payload_as())
        .expect("decodes")
}

fn bench_frames(c: &mut Criterion) {
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

criterion_group!(benches, bench_frames);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    let allocations = allocations_per_100k_round_trips();
    println!("allocations during 100000 encode+decode of each frame: {allocations}");
    if allocations != 0 {
        eprintln!("frame encode/decode allocated");
        std::process::exit(1);
    }
}
