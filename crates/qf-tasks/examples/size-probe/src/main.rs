//! Size probe: the MCU side of the wire ABI as an executor links it — frame validation, replay
//! windows, every task kernel, response encoding — behind one exported entry, so
//! `--gc-sections` keeps exactly that code. Buffers are atomics standing in for shared memory,
//! so nothing is optimised away and no `unsafe` is needed.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU32, AtomicU8, Ordering::Relaxed};

use qf_tasks::{serve, Replay};

const FRAME: usize = 1024;

/// Stand-ins for the shared-memory request and response slots and a cycle counter.
static REQUEST: [AtomicU8; FRAME] = [const { AtomicU8::new(0) }; FRAME];
static RESPONSE: [AtomicU8; FRAME] = [const { AtomicU8::new(0) }; FRAME];
static CYCLES: AtomicU32 = AtomicU32::new(0);

/// Serves the `len`-byte request in `REQUEST`; writes the response to `RESPONSE`; returns its
/// length and status (`len << 8 | status`), or -1 if no response could be written.
// Exported by name (no_mangle) only so the linker has an entry to keep code from.
#[no_mangle]
pub extern "C" fn qf_serve_probe(len: u32) -> i32 {
    let mut request = [0u8; FRAME];
    let len = len as usize;
    for (byte, slot) in request.iter_mut().zip(&REQUEST).take(len) {
        *byte = slot.load(Relaxed);
    }
    let mut replay: Replay<64> = Replay::new();
    let mut response = [0u8; FRAME];
    let clock = || u64::from(CYCLES.load(Relaxed));
    let request = request.get(..len).unwrap_or(&[]);
    match serve(request, &mut response, &clock, &mut replay) {
        Ok(served) => {
            for (slot, &byte) in RESPONSE.iter().zip(&response).take(served.len) {
                slot.store(byte, Relaxed);
            }
            ((served.len as i32) << 8) | i32::from(served.status.code())
        }
        Err(_) => -1,
    }
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {}
}
