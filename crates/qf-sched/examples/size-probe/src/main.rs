//! Size probe: every qf-sched entry point a kernel calls, monomorphised for an MCU port whose
//! `Kernel` writes to memory-mapped-style atomics. One exported function dispatches to them;
//! it is the link's entry, so `--gc-sections` keeps exactly the scheduler code a port uses.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU32, Ordering::Relaxed};

use qf_sched::{Callback, Kernel, Notice, Scheduler, ThreadId};

static CLOCK_LO: AtomicU32 = AtomicU32::new(0);
static CLOCK_HI: AtomicU32 = AtomicU32::new(0);
static PORT: AtomicU32 = AtomicU32::new(0);

/// A kernel port reduced to stores, so nothing it does is optimised away.
struct Port;

impl Kernel for Port {
    fn now(&self) -> u64 {
        (u64::from(CLOCK_HI.load(Relaxed)) << 32) | u64::from(CLOCK_LO.load(Relaxed))
    }
    fn timer_arm(&mut self, thread: ThreadId, at: u64) {
        PORT.store(u32::from(thread.0) ^ at as u32, Relaxed);
    }
    fn timer_cancel(&mut self, thread: ThreadId) {
        PORT.store(u32::from(thread.0), Relaxed);
    }
    fn deadline_set(&mut self, thread: ThreadId, deadline: u64) {
        PORT.store(
            qf_sched::wrap32::deadline32(deadline) as u32 ^ u32::from(thread.0),
            Relaxed,
        );
    }
    fn suspend_until(&mut self, thread: ThreadId, at: u64) {
        PORT.store(u32::from(thread.0).wrapping_add(at as u32), Relaxed);
    }
}

fn notify(notice: &Notice) {
    PORT.store(notice.arg as u32, Relaxed);
}

/// The one root of the image: runs entry point `op` on thread `id` with `value`, on a
/// scheduler whose state the optimiser must treat as unknown.
// Exported by name (no_mangle) only so the linker has an entry to keep code from.
#[no_mangle]
pub extern "C" fn qf_probe(op: u32, id: u16, value: u64) -> i32 {
    let mut sched = Scheduler::<8, 32>::new();
    let sched = core::hint::black_box(&mut sched);
    let mut port = Port;
    let id = ThreadId(id);
    let callback = Some(Callback {
        func: notify,
        arg: value as usize,
    });
    let status = match op {
        0 => sched.attach(id),
        1 => sched.period_set(id, value),
        2 => sched.deadline_miss_callback_set(id, callback),
        3 => sched.cbs_budget_set(id, value),
        4 => sched.deadline_set(&mut port, id, value),
        5 => sched.switched_in(&mut port, id),
        6 => sched.switched_out(&mut port, id),
        7 => sched.timer_expired(&mut port, id).map(drop),
        8 => sched.cycle_end(&mut port, id),
        9 => sched.budget_overrun_callback_set(id, callback),
        10 => sched.hard_reservation_set(id, value != 0),
        11 => sched.detach(&mut port, id),
        _ => Ok(PORT.store(sched.events().drain().map(|e| e.time as u32).sum(), Relaxed)),
    };
    // A port turns an error into its own C library's errno (the Zephyr module does, in
    // api.rs); the probe needs no numbers, only the status.
    match status {
        Ok(()) => 0,
        Err(_) => -1,
    }
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {
        core::hint::spin_loop();
    }
}
