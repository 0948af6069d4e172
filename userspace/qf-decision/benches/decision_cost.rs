//! Decision cost (the paper's RQ5): wall time and heap allocations of one controller decision.
//!
//! A decision is the `observe` call that closes a window (see `qf_decision::decision_cost`). The paper's Python took
//! 177.2 µs at p95; the goal here is ≤ 1 µs at p95 with zero allocations. Prints the median, p95
//! and allocations per decision; exits non-zero if any decision allocated.
//! Run: `cargo bench -p qf-decision --bench decision_cost`.

use qf_decision::decision_cost::Rig;
use qf_decision::quantile::percentile_sorted;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

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
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

fn main() {
    let decisions_wanted = 20_000;
    let mut rig = Rig::new();
    let mut times_ns = Vec::with_capacity(decisions_wanted);
    let allocations_before = ALLOCATIONS.load(Ordering::Relaxed);
    rig.run(&mut times_ns);
    let allocations = ALLOCATIONS.load(Ordering::Relaxed) - allocations_before;
    let rejected = rig.rejections;
    times_ns.sort_unstable_by(f64::total_cmp);
    let median = percentile_sorted(&times_ns, 0.5).unwrap_or(f64::NAN);
    let p95 = percentile_sorted(&times_ns, 0.95).unwrap_or(f64::NAN);
    println!("decision_cost: {decisions_wanted} decisions of a 4-node chain (4 candidates each, {rejected} rejections reported)");
    println!(
        "decision_cost: median {:.3} us, p95 {:.3} us (goal <= 1 us; paper's Python 177.2 us)",
        median / 1e3,
        p95 / 1e3
    );
    println!(
        "decision_cost: heap allocations on the decision path: {allocations} ({:.3} per decision)",
        allocations as f64 / decisions_wanted as f64
    );
    println!(
        "decision_cost: p95 ratio paper/qfabric = {:.0}x",
        177_200.0 / p95
    );
    if allocations != 0 {
        eprintln!("decision_cost: FAIL: the decision path allocated");
        std::process::exit(1);
    }
    if rejected != decisions_wanted * 4 {
        eprintln!("decision_cost: FAIL: expected 4 rejections per decision, got {rejected}");
        std::process::exit(1);
    }
}
