//! Host round-trip latency of a minimal QFabric frame (`add`), p50/p95/p99 over 10 000 calls:
//! over the agent's Unix-socket endpoint, and over the virtual board's rpmsg path (shared-memory
//! vrings + eventfd doorbells, driven by the Linux-faithful driver side of the tests).
//! Host numbers: no QEMU, no guest kernel. `cargo bench -p qf-mcu-emu` (env QF_BENCH_CALLS).

#[path = "../tests/common/mod.rs"]
#[allow(unused_imports)]
mod common;

use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use common::frames::add_request;
use common::linux::LinuxSide;
use common::Rig;
use qf_execution::wire::{read_message, write_message, MAX_MESSAGE_LEN};
use qf_mcu_emu::faults::Faults;
use qf_mcu_emu::layout::CHANNEL_ADDR;

fn percentiles(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let at = |p: f64| samples[((samples.len() as f64 * p) as usize).min(samples.len() - 1)];
    println!(
        "{name}: n={} p50={:.1} us p95={:.1} us p99={:.1} us max={:.1} us",
        samples.len(),
        at(0.50).as_secs_f64() * 1e6,
        at(0.95).as_secs_f64() * 1e6,
        at(0.99).as_secs_f64() * 1e6,
        samples[samples.len() - 1].as_secs_f64() * 1e6
    );
}

fn main() {
    let calls: u64 = std::env::var("QF_BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let rig = Rig::start("bench", Faults::default());

    let mut stream = UnixStream::connect(&rig.unix_socket).unwrap();
    let mut reply = [0u8; MAX_MESSAGE_LEN];
    let mut unix = Vec::with_capacity(calls as usize);
    for id in 0..calls + 100 {
        let frame = add_request(id, 0, id as i32, 1);
        let start = Instant::now();
        write_message(&mut stream, &frame, None).unwrap();
        read_message(&mut stream, &mut reply)
            .unwrap()
            .expect("reply");
        if id >= 100 {
            unix.push(start.elapsed());
        }
    }
    percentiles("unix-socket round trip (add)", unix);

    let mut linux = LinuxSide::connect(rig.socket());
    linux.attach();
    linux.recv(Duration::from_secs(5)).expect("announcement");
    let mut rpmsg = Vec::with_capacity(calls as usize);
    for id in 0..calls + 100 {
        let frame = add_request(1_000_000 + id, 0, id as i32, 1);
        let start = Instant::now();
        linux.send(1024, CHANNEL_ADDR, &frame);
        linux.recv(Duration::from_secs(5)).expect("reply");
        if id >= 100 {
            rpmsg.push(start.elapsed());
        }
    }
    percentiles("rpmsg over vrings + eventfd doorbells, host (add)", rpmsg);
}
