//! `dev-recv`: the contract of `QF_IOC_RECV` (`docs/qfabric-dev.md`) on a device with at least
//! one unsolicited frame queued (tier 50 runs it after the MCU sent garbage). A bad buffer or a
//! short one fails and leaves the frame queued; a good one gets it with a kernel timestamp from
//! the past; an empty queue gives `EAGAIN`, at once or after the wait; bad flags and timeouts
//! give `EINVAL`. Raw ioctls on purpose (`dev-abuse`'s): the safe wrapper would refuse first.

use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use nix::errno::Errno;
use qf_abi::MAX_FRAME_LEN;
use qf_execution::qfabric_dev::{monotonic_ns, Device, QfRecv, QF_IOC_RECV};

/// One raw `QF_IOC_RECV` with its argument at `arg`: the errno, `UnknownErrno` on success.
fn recv_at(device: &Device, arg: u64) -> Errno {
    crate::abuse::ioctl(device.as_raw_fd(), QF_IOC_RECV, arg)
        .map_or_else(|e| e, |_| Errno::UnknownErrno)
}

fn recv(device: &Device, arg: &mut QfRecv) -> Errno {
    recv_at(device, arg as *mut QfRecv as u64)
}

/// Records a case whose errno is not the documented one.
fn expect(wrong: &mut Vec<String>, what: &str, got: Errno, want: Errno) {
    if got != want {
        wrong.push(format!("{what}: {got:?}, expected {want:?}"));
    }
}

pub fn check(device: &Device) -> Result<()> {
    let mut wrong = Vec::new();
    let mut buf = [0u8; MAX_FRAME_LEN];
    let args = |buffer: u64, capacity: u32, timeout_ms: u32, flags: u32| QfRecv {
        buffer,
        capacity,
        timeout_ms,
        flags,
        ..QfRecv::default()
    };
    let good = buf.as_mut_ptr() as u64;
    expect(
        &mut wrong,
        "flags 1",
        recv(device, &mut args(good, 512, 0, 1)),
        Errno::EINVAL,
    );
    expect(
        &mut wrong,
        "timeout 60001",
        recv(device, &mut args(good, 512, 60_001, 0)),
        Errno::EINVAL,
    );
    expect(
        &mut wrong,
        "argument at 16",
        recv_at(device, 16),
        Errno::EFAULT,
    );
    // A frame must be queued from here on, and survive the failures.
    expect(
        &mut wrong,
        "NULL buffer",
        recv(device, &mut args(0, 512, 0, 0)),
        Errno::EFAULT,
    );
    expect(
        &mut wrong,
        "1-byte buffer",
        recv(device, &mut args(good, 1, 0, 0)),
        Errno::EMSGSIZE,
    );
    let before = monotonic_ns();
    let mut arg = args(good, 512, 0, 0);
    expect(
        &mut wrong,
        "a queued frame",
        recv(device, &mut arg),
        Errno::UnknownErrno,
    );
    if arg.len == 0 || arg.len as usize > MAX_FRAME_LEN {
        wrong.push(format!("a queued frame: length {}", arg.len));
    }
    if arg.received_ns == 0 || arg.received_ns > before {
        wrong.push(format!(
            "a queued frame: received_ns {} is not in the past (now {before})",
            arg.received_ns
        ));
    }
    // Empty the queue, then ask again: at once, and with a 30 ms wait.
    let mut taken = 1;
    while recv(device, &mut args(good, 512, 0, 0)) == Errno::UnknownErrno {
        taken += 1;
    }
    expect(
        &mut wrong,
        "empty, no wait",
        recv(device, &mut args(good, 512, 0, 0)),
        Errno::EAGAIN,
    );
    let start = Instant::now();
    expect(
        &mut wrong,
        "empty, 30 ms",
        recv(device, &mut args(good, 512, 30, 0)),
        Errno::EAGAIN,
    );
    let waited = start.elapsed();
    if waited < Duration::from_millis(30) {
        wrong.push(format!("empty, 30 ms: returned after {waited:?}"));
    }
    if !wrong.is_empty() {
        bail!("dev-recv: {}", wrong.join("; "));
    }
    println!(
        "dev-recv: 9 cases as documented; took {taken} frames (the first, {} bytes, {} us after the kernel queued it); an empty 30 ms wait took {} ms",
        arg.len,
        before.saturating_sub(arg.received_ns) / 1000,
        waited.as_millis()
    );
    Ok(())
}
