//! `dev-abuse`: the error contract of `/dev/qfabricN` (`docs/qfabric-dev.md`). Every row of its
//! error table is provoked and must give exactly its errno (the rows that need a second party,
//! EBUSY, EINTR and ETIMEDOUT, are raced in [`crate::races`]); then thousands of ioctls with
//! random numbers, structures and pointers may fail any way but must return; then the device
//! must still answer a normal request. Raw `libc` calls on purpose: the safe wrapper refuses bad input
//! before the kernel could see it. The `unsafe` is those calls and the guard mappings.
#![allow(unsafe_code)]

use std::collections::BTreeMap;
use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use nix::errno::Errno;
use nix::sys::ioctl::ioctl_num_type;
use qf_abi::{header::offset, MAX_FRAME_LEN};
use qf_execution::qfabric_dev::{Device, QfInvoke, QfStats, IOC_TYPE, QF_IOC_INVOKE, QF_IOC_STATS};

use crate::traffic::{Mirror, Rng};
use crate::{dev, races};

/// Random-argument ioctls after the documented cases.
pub const RANDOM_IOCTLS: usize = 2000;
/// Waiting on a documented case that sends (a response-side fault shows only once the reply
/// is there); random cases wait at most 50 ms.
const CASE_TIMEOUT_MS: u32 = 5000;
const RANDOM_TIMEOUT_MS: u64 = 50;
/// A call that has not returned after this long is a hang.
const HANG: Duration = Duration::from_secs(15);
/// Invocation ids of the documented cases, the random ones and the final check: apart from
/// each other and from every other command's.
const CASE_IDS: u64 = 0x00ab_0000_0000;
const RANDOM_IDS: u64 = 0x00ac_0000_0000;
const FINAL_IDS: u64 = 0x00ad_0000_0000;
/// Addresses no user pointer may have: the kernel's half, and a non-canonical one.
const KERNEL_ADDRESS: u64 = 0xffff_ffff_8100_0000;
const NON_CANONICAL: u64 = 0x8000_0000_0000_0000;

/// Anonymous memory: `readable` bytes read-write followed by `guard` bytes with no access.
struct Mapping {
    base: *mut u8,
    len: usize,
    readable: usize,
}

impl Mapping {
    fn new(readable: usize, guard: usize) -> Result<Mapping> {
        let len = readable + guard;
        // SAFETY: a fresh private anonymous mapping; nothing else refers to it.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            bail!("mmap {len} bytes: {}", std::io::Error::last_os_error());
        }
        let mapping = Mapping {
            base: base.cast(),
            len,
            readable,
        };
        // SAFETY: the first `readable` bytes of our own mapping.
        if readable > 0
            && unsafe { libc::mprotect(base, readable, libc::PROT_READ | libc::PROT_WRITE) } != 0
        {
            bail!("mprotect: {}", std::io::Error::last_os_error());
        }
        Ok(mapping)
    }

    fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: the readable part is ours, initialized (anonymous memory is zeroed) and only
        // borrowed through `&mut self`.
        unsafe { std::slice::from_raw_parts_mut(self.base, self.readable) }
    }

    /// The address of byte `at`, which may be in the guard.
    fn address(&self, at: usize) -> u64 {
        self.base as u64 + at.min(self.len - 1) as u64
    }

    /// The first byte no access is allowed to.
    fn guard(&self) -> u64 {
        self.address(self.readable)
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: our own mapping, unmapped once.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// An ioctl's result: the return value, or the errno. Also `dev-recv`'s (`crate::recv`).
pub(crate) fn ioctl(fd: i32, number: ioctl_num_type, arg: u64) -> Result<i32, Errno> {
    // SAFETY: the kernel may write to `arg` only what the number says, and every address the
    // callers pass is either one the kernel must refuse or inside one of their own buffers,
    // large enough for what the number and the structure at `arg` let the kernel write (here:
    // 16 KiB, any size a number can encode; in `dev-recv`: a `struct qf_recv` naming a buffer
    // of its stated capacity).
    let rc = unsafe { libc::ioctl(fd, number, arg as *mut libc::c_void) };
    if rc < 0 {
        Err(Errno::last())
    } else {
        Ok(rc)
    }
}

/// A change that makes a valid invocation invalid, given the mtu.
type Change = fn(&mut QfInvoke, u32);

/// What the watchdog sees: the call in progress and when it started.
type Current = Arc<Mutex<(String, Instant)>>;

struct Abuse {
    /// The device's descriptor.
    fd: i32,
    mtu: usize,
    /// The request frame's buffer (large, so any length below 64 KiB reads our own memory).
    request: Mapping,
    /// A response buffer, also used for random structures (any encodable size fits).
    response: Mapping,
    /// Two pages: a frame may sit at the end of the first, the second faults.
    edge: Mapping,
    /// Addresses in here always fault.
    forbidden: Mapping,
    mirror: Mirror,
    current: Current,
    cases: usize,
    wrong: Vec<String>,
}

impl Abuse {
    /// A fresh valid request (an `add`) at the start of the request buffer; returns its length.
    fn frame(&mut self) -> Result<usize> {
        let mut frame = [0u8; MAX_FRAME_LEN];
        let len = self.mirror.request(0, &mut frame)?;
        self.request.bytes()[..len].copy_from_slice(&frame[..len]);
        Ok(len)
    }

    /// An invocation of a fresh valid frame that the kernel would accept.
    fn valid(&mut self) -> Result<QfInvoke> {
        let len = self.frame()?;
        Ok(QfInvoke {
            request: self.request.address(0),
            response: self.response.address(0),
            request_len: len as u32,
            response_cap: self.mtu as u32,
            timeout_ms: CASE_TIMEOUT_MS,
            ..QfInvoke::default()
        })
    }

    /// Tells the watchdog that `what` starts now.
    fn mark(&self, what: &str) {
        if let Ok(mut current) = self.current.lock() {
            *current = (what.to_string(), Instant::now());
        }
    }

    fn call(&self, what: &str, f: impl FnOnce() -> Result<i32, Errno>) -> Result<i32, Errno> {
        self.mark(what);
        f()
    }

    /// Records a documented case: `got` must be exactly `expected`.
    fn expect(&mut self, name: &str, expected: Errno, got: Result<i32, Errno>) {
        self.cases += 1;
        match got {
            Err(errno) if errno == expected => {}
            Err(errno) => self
                .wrong
                .push(format!("{name}: {errno:?}, expected {expected:?}")),
            Ok(rc) => self
                .wrong
                .push(format!("{name}: returned {rc}, expected {expected:?}")),
        }
    }

    /// Copies `arg` into the middle of the response buffer (a reply goes to its start), where
    /// even an ioctl that wrongly wrote back as many bytes as any number can encode (16 KiB)
    /// stays in our own memory; returns its address.
    fn place(&mut self, arg: &QfInvoke) -> u64 {
        let at = 32 * 1024;
        let size = std::mem::size_of::<QfInvoke>();
        // SAFETY: `QfInvoke` is plain old data without padding, `size` bytes long.
        let bytes =
            unsafe { std::slice::from_raw_parts(arg as *const QfInvoke as *const u8, size) };
        self.response.bytes()[at..at + size].copy_from_slice(bytes);
        self.response.address(at)
    }

    /// QF_IOC_INVOKE on `arg` must fail with `expected`.
    fn invoke_case(&mut self, name: &str, arg: QfInvoke, expected: Errno) {
        let address = self.place(&arg);
        let got = self.call(name, || ioctl(self.fd, QF_IOC_INVOKE, address));
        self.expect(name, expected, got);
    }

    /// `number` with a pointer to a valid invocation must fail with `expected`.
    fn number_case(&mut self, name: &str, number: ioctl_num_type, expected: Errno) -> Result<()> {
        let arg = self.valid()?;
        let address = self.place(&arg);
        let got = self.call(name, || ioctl(self.fd, number, address));
        self.expect(name, expected, got);
        Ok(())
    }

    /// Every row of the contract's error table.
    fn documented(&mut self) -> Result<()> {
        use Errno::{EAGAIN, EFAULT, EINVAL, ENOTTY};
        let mtu = self.mtu as u32;
        let forbidden = self.forbidden.address(0);

        // EFAULT: the request, the response or the argument itself not accessible.
        for (name, address) in [
            ("request NULL", 0),
            ("request in a PROT_NONE page", forbidden),
            ("request at a kernel address", KERNEL_ADDRESS),
            ("request at a non-canonical address", NON_CANONICAL),
        ] {
            let arg = QfInvoke {
                request: address,
                ..self.valid()?
            };
            self.invoke_case(name, arg, EFAULT);
        }
        let len = self.frame()?;
        let edge_start = self.edge.readable - len;
        let frame = self.request.bytes()[..len].to_vec();
        self.edge.bytes()[edge_start..].copy_from_slice(&frame);
        let arg = QfInvoke {
            request: self.edge.guard() - len as u64,
            request_len: len as u32 + 1,
            ..self.valid()?
        };
        self.invoke_case("request running into a PROT_NONE page", arg, EFAULT);
        for (name, address) in [
            ("response NULL", 0),
            ("response in a PROT_NONE page", forbidden),
            ("response at a kernel address", KERNEL_ADDRESS),
        ] {
            let arg = QfInvoke {
                response: address,
                ..self.valid()?
            };
            self.invoke_case(name, arg, EFAULT);
        }
        for (name, address) in [
            ("argument NULL", 0),
            ("argument in a PROT_NONE page", forbidden),
            ("argument at a kernel address", KERNEL_ADDRESS),
        ] {
            let got = self.call(name, || ioctl(self.fd, QF_IOC_INVOKE, address));
            self.expect(name, EFAULT, got);
            let name = format!("QF_IOC_STATS {name}");
            let got = self.call(&name, || ioctl(self.fd, QF_IOC_STATS, address));
            self.expect(&name, EFAULT, got);
        }

        // EINVAL: flags, lengths, capacity, timeout.
        let cases: [(&str, Change); 9] = [
            ("flags 1", |a, _| a.flags = 1),
            ("flags 1 << 63", |a, _| a.flags = 1 << 63),
            ("request_len 0", |a, _| a.request_len = 0),
            ("request_len 35", |a, _| a.request_len = 35),
            ("request_len mtu + 1", |a, mtu| a.request_len = mtu + 1),
            ("request_len 0xffffffff", |a, _| a.request_len = u32::MAX),
            ("response_cap mtu - 1", |a, mtu| a.response_cap = mtu - 1),
            ("response_cap 0", |a, _| a.response_cap = 0),
            ("timeout_ms 60001", |a, _| a.timeout_ms = 60_001),
        ];
        for (name, change) in cases {
            let mut arg = self.valid()?;
            change(&mut arg, mtu);
            self.invoke_case(name, arg, EINVAL);
        }
        // EINVAL: not a v1 request frame.
        for (name, at, value) in [
            ("bad magic", offset::MAGIC, b'X'),
            ("version 2", offset::VERSION, 2),
            ("version 0", offset::VERSION, 0),
            ("message type 2 (response)", offset::KIND, 2),
            ("message type 0", offset::KIND, 0),
            ("message type 3", offset::KIND, 3),
        ] {
            let arg = self.valid()?;
            self.request.bytes()[at] = value;
            self.invoke_case(name, arg, EINVAL);
        }

        // ENOTTY: any other number, including the real ones with another size or direction.
        let size = std::mem::size_of::<QfInvoke>();
        let numbers: [(&str, ioctl_num_type); 8] = [
            (
                "_IOWR('q', 0x42, 72)",
                nix::request_code_readwrite!(IOC_TYPE, 0x42, size),
            ),
            (
                "_IOWR('q', 0x3f, 72)",
                nix::request_code_readwrite!(IOC_TYPE, 0x3f, size),
            ),
            (
                "_IOWR('r', 0x40, 72)",
                nix::request_code_readwrite!(b'r', 0x40, size),
            ),
            (
                "_IOWR('q', 0x40, 64)",
                nix::request_code_readwrite!(IOC_TYPE, 0x40, 64),
            ),
            (
                "_IOWR('q', 0x40, 80)",
                nix::request_code_readwrite!(IOC_TYPE, 0x40, 80),
            ),
            (
                "_IOW('q', 0x40, 72)",
                nix::request_code_write!(IOC_TYPE, 0x40, size),
            ),
            ("_IO('q', 0x40)", nix::request_code_none!(IOC_TYPE, 0x40)),
            (
                "_IOR('q', 0x41, 72)",
                nix::request_code_read!(IOC_TYPE, 0x41, size),
            ),
        ];
        for (name, number) in numbers {
            self.number_case(&format!("ioctl {name}"), number, ENOTTY)?;
        }

        // write() is not supported, whatever it carries.
        let len = self.frame()?;
        let address = self.request.address(0);
        let got = self.call("write", || {
            // SAFETY: `len` bytes of our request buffer.
            let n = unsafe { libc::write(self.fd, address as *const libc::c_void, len) };
            if n < 0 {
                Err(Errno::last())
            } else {
                Ok(n as i32)
            }
        });
        self.expect("write() of a valid frame", EINVAL, got);

        // read() with nothing queued, non-blocking: EAGAIN even for a 1-byte buffer.
        let (drained, flags) = self.drain()?;
        let address = self.response.address(0);
        let got = self.call("read", || {
            // SAFETY: 1 byte of our response buffer.
            let n = unsafe { libc::read(self.fd, address as *mut libc::c_void, 1) };
            if n < 0 {
                Err(Errno::last())
            } else {
                Ok(n as i32)
            }
        });
        self.expect(
            &format!("read() of 1 byte, O_NONBLOCK, queue empty ({drained} drained first)"),
            EAGAIN,
            got,
        );
        // Blocking again: the contract does not say what O_NONBLOCK does to an invocation.
        // SAFETY: fcntl on our open descriptor.
        if unsafe { libc::fcntl(self.fd, libc::F_SETFL, flags) } < 0 {
            bail!("fcntl: {}", std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// Switches the file to non-blocking and reads every queued frame; returns how many, and
    /// the file's flags before.
    fn drain(&mut self) -> Result<(usize, libc::c_int)> {
        // SAFETY: fcntl on our open descriptor.
        let flags = unsafe { libc::fcntl(self.fd, libc::F_GETFL) };
        // SAFETY: as above.
        if flags < 0 || unsafe { libc::fcntl(self.fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0
        {
            bail!("fcntl O_NONBLOCK: {}", std::io::Error::last_os_error());
        }
        let mut drained = 0;
        let buf = self.response.bytes();
        loop {
            // SAFETY: into our response buffer, at most its length.
            let n = unsafe { libc::read(self.fd, buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                break;
            }
            drained += 1;
            if drained > 10_000 {
                bail!("read() keeps returning frames: more than 10000 queued");
            }
        }
        Ok((drained, flags))
    }

    /// A pointer the kernel must refuse, or one into our own buffers.
    fn random_pointer(&self, rng: &mut Rng, ours: u64) -> u64 {
        match rng.next() % 10 {
            0 => 0,
            1 => 1 + rng.next() % 4095,
            2 => KERNEL_ADDRESS + (rng.next() % (1 << 20)),
            3 => NON_CANONICAL | (rng.next() >> 1),
            4 | 5 => self.forbidden.address((rng.next() % (1 << 20)) as usize),
            _ => ours,
        }
    }

    /// A random ioctl number: mostly the device's own, some random `'q'` ones and some fully
    /// random, never one of the generic types the VFS handles itself for any file (`'T'`
    /// termios/FIO*, `'X'` freeze, `'f'` and `0x94` filesystem ioctls): those act on the
    /// descriptor or the filesystem, not the driver.
    fn random_number(rng: &mut Rng) -> ioctl_num_type {
        let n = rng.next() as u32;
        let n = match rng.next() % 4 {
            0 => QF_IOC_INVOKE as u32,
            1 => QF_IOC_STATS as u32,
            2 => (n & !0xff00) | (u32::from(IOC_TYPE) << 8),
            _ => n,
        };
        let n = match (n >> 8) & 0xff {
            0x54 | 0x58 | 0x66 | 0x94 => n ^ 0x0100,
            _ => n,
        };
        n as ioctl_num_type
    }

    /// One random ioctl; returns its errno (`None`: it succeeded).
    fn random(&mut self, rng: &mut Rng, index: usize) -> Result<Option<Errno>> {
        let number = Self::random_number(rng);
        let len = self.frame()?;
        // A random structure: pointers valid or not, lengths near the limits or anything.
        let request = self.random_pointer(rng, self.request.address(0));
        let response = self.random_pointer(rng, self.response.address(0));
        let mtu = self.mtu as u32;
        let pick =
            |rng: &mut Rng, choices: &[u32]| choices[(rng.next() % choices.len() as u64) as usize];
        let request_len = match rng.next() % 3 {
            0 => rng.next() as u32,
            _ => pick(rng, &[0, 35, 36, len as u32, mtu, mtu + 1, 4096]),
        };
        let response_cap = match rng.next() % 3 {
            0 => rng.next() as u32,
            _ => pick(rng, &[0, mtu - 1, mtu, 4096]),
        };
        if rng.next() % 4 == 0 {
            // Random bytes where the frame was, header included.
            let noise = rng.next().to_le_bytes();
            let at = (rng.next() % len as u64) as usize;
            self.request.bytes()[at] ^= noise[0] | 1;
        }
        let arg = QfInvoke {
            request,
            response,
            request_len,
            response_cap,
            timeout_ms: 1 + (rng.next() % RANDOM_TIMEOUT_MS) as u32,
            response_len: rng.next() as u32,
            entered_ns: rng.next(),
            sent_ns: rng.next(),
            replied_ns: rng.next(),
            woken_ns: rng.next(),
            flags: if rng.next() % 4 == 0 { rng.next() } else { 0 },
        };
        let ours = self.place(&arg);
        let address = if rng.next() % 5 == 0 {
            self.random_pointer(rng, ours)
        } else {
            ours
        };
        let what = format!("random ioctl {index}: number {number:#x}, argument {address:#x}");
        match self.call(&what, || ioctl(self.fd, number, address)) {
            Ok(_) => Ok(None),
            Err(errno) => Ok(Some(errno)),
        }
    }
}

/// Exits the process if a call has not returned within [`HANG`].
fn watchdog(current: Current) {
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let Ok(current) = current.lock() else { return };
        if current.1.elapsed() > HANG {
            println!(
                "qf-board-guest: error: dev-abuse: {} has not returned after {} s",
                current.0,
                HANG.as_secs()
            );
            std::process::exit(1);
        }
    }
}

impl Abuse {
    /// The harness on descriptor `fd` of a channel with `mtu`, its calls watched by `current`.
    fn new(fd: i32, mtu: usize, epoch: u32, current: Current) -> Result<Abuse> {
        let page = 4096;
        Ok(Abuse {
            fd,
            mtu,
            request: Mapping::new(64 * 1024, page)?,
            response: Mapping::new(64 * 1024, page)?,
            edge: Mapping::new(page, page)?,
            forbidden: Mapping::new(0, 1 << 20)?,
            mirror: Mirror::starting_at(epoch, CASE_IDS),
            current,
            cases: 0,
            wrong: Vec::new(),
        })
    }

    /// `count` random ioctls; returns how often each errno (or success) came back.
    fn random_phase(&mut self, epoch: u32, count: usize) -> Result<BTreeMap<String, usize>> {
        self.mirror = Mirror::starting_at(epoch, RANDOM_IDS);
        let mut rng = Rng(0x5eed_0000_0000_0001 ^ u64::from(epoch));
        let mut errnos = BTreeMap::<String, usize>::new();
        for index in 0..count {
            let outcome = self.random(&mut rng, index)?;
            let name = outcome.map_or("success".to_string(), |e| format!("{e:?}"));
            *errnos.entry(name).or_default() += 1;
        }
        Ok(errnos)
    }
}

/// Every documented error, the races, [`RANDOM_IOCTLS`] random ioctls, then one normal
/// invocation.
pub fn abuse(device: &Device, epoch: u32) -> Result<()> {
    let current: Current = Arc::new(Mutex::new(("opening".to_string(), Instant::now())));
    let watched = current.clone();
    std::thread::spawn(move || watchdog(watched));
    let mut abuse = Abuse::new(device.as_raw_fd(), device.mtu(), epoch, current)?;
    abuse.documented()?;
    let tick = |what: &str| abuse.mark(what);
    let races = [
        (Errno::EBUSY, races::busy(device, epoch, &tick)?),
        (Errno::EINTR, races::interrupted(device, epoch, &tick)?),
        (Errno::ETIMEDOUT, races::timed_out(device, epoch, &tick)?),
    ];
    let mut raced = Vec::new();
    for (errno, race) in races {
        raced.push(race.summary(errno));
        abuse.wrong.extend(race.wrong);
    }
    let raced = format!(
        "races (provoked/attempts): {}, counters agree",
        raced.join(", ")
    );
    let errnos = abuse.random_phase(epoch, RANDOM_IOCTLS)?;

    // Callers of the random phase that timed out left nothing behind; the device still works.
    let settle = Instant::now();
    let mut stats: QfStats = device.stats()?;
    while stats.in_flight != 0 && settle.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
        stats = device.stats()?;
    }
    let mut mirror = Mirror::starting_at(epoch, FINAL_IDS);
    let mut frame = [0u8; MAX_FRAME_LEN];
    let len = mirror.request(0, &mut frame)?;
    let after = dev::exchange(
        device,
        &mut mirror,
        &frame[..len],
        "the invocation after the abuse",
    );
    let histogram: Vec<String> = errnos.iter().map(|(e, n)| format!("{e} {n}")).collect();
    let random = format!(
        "{RANDOM_IOCTLS} random ioctls returned ({})",
        histogram.join(", ")
    );
    if stats.in_flight != 0 {
        abuse.wrong.push(format!(
            "{} callers still in flight 5 s after the random ioctls",
            stats.in_flight
        ));
    }
    if let Err(error) = after {
        abuse.wrong.push(format!("{error:#}"));
    }
    if abuse.wrong.is_empty() {
        println!(
            "abuse: {} cases as documented; {raced}; {random}; the device still answers (in_flight 0, {} malformed, {} late replies)",
            abuse.cases, stats.malformed, stats.late_replies
        );
        return Ok(());
    }
    println!(
        "abuse: {} of {} cases as documented; {random}",
        abuse.cases - abuse.wrong.len().min(abuse.cases),
        abuse.cases
    );
    bail!("dev-abuse: {}", abuse.wrong.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On /dev/null, which knows no ioctl and takes any write, only the ENOTTY cases hold:
    /// every other case is reported, with what came back instead, and the random phase returns.
    #[test]
    fn a_file_that_is_no_qfabric_device_fails_every_case_but_enotty() {
        let null = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/null")
            .unwrap();
        let current = Arc::new(Mutex::new((String::new(), Instant::now())));
        let mut abuse = Abuse::new(null.as_raw_fd(), 496, 9, current).unwrap();
        abuse.documented().unwrap();
        assert_eq!(abuse.cases, 39);
        assert_eq!(abuse.wrong.len(), 39 - 8, "{:#?}", abuse.wrong);
        assert!(abuse
            .wrong
            .contains(&"request NULL: ENOTTY, expected EFAULT".to_string()));
        assert!(abuse
            .wrong
            .iter()
            .any(|w| w.starts_with("write() of a valid frame: returned")));
        assert!(!abuse.wrong.iter().any(|w| w.starts_with("ioctl _IO")));
        let errnos = abuse.random_phase(9, 300).unwrap();
        assert_eq!(errnos.values().sum::<usize>(), 300);
    }

    #[test]
    fn random_numbers_never_name_the_generic_vfs_ioctls() {
        let mut rng = Rng(42);
        let mut own = 0;
        for _ in 0..10_000 {
            let n = Abuse::random_number(&mut rng) as u32;
            assert!(
                ![0x54, 0x58, 0x66, 0x94].contains(&((n >> 8) & 0xff)),
                "{n:#x}"
            );
            own += usize::from(n == QF_IOC_INVOKE as u32 || n == QF_IOC_STATS as u32);
        }
        assert!(own > 4000, "{own}");
    }

    #[test]
    fn the_guard_pages_fault_and_the_rest_is_ours() {
        let mut mapping = Mapping::new(4096, 4096).unwrap();
        mapping.bytes()[4095] = 7;
        assert_eq!(mapping.bytes().len(), 4096);
        assert_eq!(mapping.guard(), mapping.address(0) + 4096);
        // The kernel refuses to copy from the guard: a write(2) from it into a pipe faults.
        let mut fds = [0; 2];
        // SAFETY: two descriptors into a local array.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: the kernel reads (or refuses to read) 16 bytes at the guard.
        let n = unsafe { libc::write(fds[1], mapping.guard() as *const libc::c_void, 16) };
        assert_eq!((n, Errno::last()), (-1, Errno::EFAULT));
        // SAFETY: 16 bytes of the readable part, which end right before the guard.
        let n = unsafe { libc::write(fds[1], (mapping.guard() - 16) as *const libc::c_void, 16) };
        assert_eq!(n, 16);
        for fd in fds {
            // SAFETY: our own descriptors, closed once.
            unsafe { libc::close(fd) };
        }
    }
}
