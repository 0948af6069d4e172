//! Real QEMU (`qemu-system-x86_64` 10, q35, TCG stopped with `-S`, no guest; the test plays the
//! guest through the qtest protocol: port I/O for PCI config, MMIO reads/writes) against the emulator's
//! ivshmem server: QEMU accepts the setup messages, maps the memfd as BAR2 (the control block
//! the MCU published is readable through it), reports IVPosition 1, delivers a Doorbell-register
//! write to the MCU's eventfd, and turns the MCU's eventfd into a pending MSI-X vector. A second
//! machine on the same socket while one is the guest fails to start with QEMU's error, and the
//! first keeps the board.
//!
//! Needs QEMU; run by `scripts/test.d/55-mcu-emu-qemu` with `--ignored`.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{wait_until, Rig};
use qf_mcu_emu::faults::Faults;
use qf_mcu_emu::ivshmem::{VECTOR_STATE, VECTOR_VRING};
use qf_mcu_emu::layout::{control, MAGIC};

const BAR0: u64 = 0xfeb0_0000;
const BAR1: u64 = 0xfeb1_0000;
const BAR2: u64 = 0xc000_0000;

/// QEMU's qtest protocol: one text command, one `OK ...` line back.
struct Qtest {
    writer: UnixStream,
    reader: BufReader<UnixStream>,
}

impl Qtest {
    fn cmd(&mut self, line: &str) -> u64 {
        writeln!(self.writer, "{line}").unwrap();
        loop {
            let mut reply = String::new();
            self.reader.read_line(&mut reply).unwrap();
            assert!(
                !reply.is_empty(),
                "QEMU closed the qtest socket after '{line}'"
            );
            if reply.starts_with("IRQ") {
                continue;
            }
            assert!(reply.starts_with("OK"), "qtest '{line}' -> '{reply}'");
            let value = reply.trim().trim_start_matches("OK").trim();
            return u64::from_str_radix(value.trim_start_matches("0x"), 16).unwrap_or(0);
        }
    }

    fn cfg_addr(dev: u8, offset: u8) -> u32 {
        0x8000_0000 | (u32::from(dev) << 11) | u32::from(offset & 0xfc)
    }

    fn cfg_read(&mut self, dev: u8, offset: u8) -> u32 {
        self.cmd(&format!("outl 0xcf8 {:#x}", Self::cfg_addr(dev, offset)));
        self.cmd("inl 0xcfc") as u32
    }

    fn cfg_write(&mut self, dev: u8, offset: u8, value: u32) {
        self.cmd(&format!("outl 0xcf8 {:#x}", Self::cfg_addr(dev, offset)));
        self.cmd(&format!("outl 0xcfc {value:#x}"));
    }

    fn readl(&mut self, addr: u64) -> u32 {
        self.cmd(&format!("readl {addr:#x}")) as u32
    }

    fn writel(&mut self, addr: u64, value: u32) {
        self.cmd(&format!("writel {addr:#x} {value:#x}"));
    }
}

struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
#[ignore = "needs qemu-system-x86_64; run by scripts/test.d/55-mcu-emu-qemu"]
fn qemu_10_accepts_the_server_maps_bar2_and_carries_doorbells_both_ways() {
    let qemu = std::env::var("QEMU").unwrap_or_else(|_| "qemu-system-x86_64".into());
    let rig = Rig::start("qemu", Faults::default());
    let qtest_path = rig.dir.path("qtest.sock");
    let listener = UnixListener::bind(&qtest_path).unwrap();
    let chardev = format!("socket,id=ivsh,path={}", rig.socket().display());
    let child = Command::new(&qemu)
        .args([
            "-machine",
            "q35",
            "-accel",
            "tcg",
            "-S",
            "-display",
            "none",
            "-nodefaults",
        ])
        .args(["-qtest", &format!("unix:{}", qtest_path.display())])
        .args([
            "-chardev",
            &chardev,
            "-device",
            "ivshmem-doorbell,chardev=ivsh,vectors=2",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {qemu}: {e}"));
    let mut child = KillOnDrop(child);
    listener.set_nonblocking(true).unwrap();
    let mut stream = None;
    wait_until("QEMU connects to the qtest socket", || {
        if let Ok(Some(status)) = child.0.try_wait() {
            let mut err = String::new();
            std::io::Read::read_to_string(child.0.stderr.as_mut().unwrap(), &mut err).unwrap();
            panic!("QEMU exited ({status}): {err}");
        }
        stream = listener.accept().ok().map(|(s, _)| s);
        stream.is_some()
    });
    let stream = stream.unwrap();
    stream.set_nonblocking(false).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut qt = Qtest {
        writer: stream.try_clone().unwrap(),
        reader: BufReader::new(stream),
    };
    wait_until("QEMU registered as the guest", || rig.guest.connected());

    // Find the ivshmem function (1af4:1110) on bus 0.
    let dev = (0..32u8)
        .find(|&d| qt.cfg_read(d, 0) == 0x1110_1af4)
        .expect("ivshmem-doorbell on PCI bus 0");
    // BAR2 is a 64-bit BAR sized by the memfd: 4 MiB.
    qt.cfg_write(dev, 0x18, 0xffff_ffff);
    let size_mask = qt.cfg_read(dev, 0x18) & !0xf;
    assert_eq!(!size_mask + 1, 4 << 20, "BAR2 size");
    qt.cfg_write(dev, 0x10, BAR0 as u32);
    qt.cfg_write(dev, 0x14, BAR1 as u32);
    qt.cfg_write(dev, 0x18, BAR2 as u32);
    qt.cfg_write(dev, 0x1c, 0);
    let command = qt.cfg_read(dev, 0x04);
    qt.cfg_write(dev, 0x04, command | 0x6); // memory space + bus master

    // The control block the MCU published, read through QEMU's BAR2.
    assert_eq!(qt.readl(BAR2 + control::MAGIC), MAGIC);
    assert_eq!(qt.readl(BAR2 + control::GENERATION), 1);
    // And a guest write lands in the MCU's memory.
    qt.writel(BAR2 + control::LINUX_STATE, 1);
    assert_eq!(rig.shm.load_u32(control::LINUX_STATE).unwrap(), 1);
    // IVPosition: the id the server gave QEMU.
    assert_eq!(qt.readl(BAR0 + 8), 1);

    // Guest -> MCU: Doorbell = (peer 0 << 16) | vector 0; with nobody attached it is a stale kick.
    qt.writel(BAR0 + 12, VECTOR_VRING as u32);
    wait_until("the MCU saw the doorbell", || {
        rig.board_stats().stale_kicks == 1
    });

    // MCU -> guest: enable MSI-X with the function masked, so the vector shows as pending in the PBA.
    let mut cap = qt.cfg_read(dev, 0x34) as u8;
    while qt.cfg_read(dev, cap) & 0xff != 0x11 {
        cap = (qt.cfg_read(dev, cap) >> 8) as u8;
        assert_ne!(cap, 0, "MSI-X capability");
    }
    let control_word = qt.cfg_read(dev, cap);
    qt.cfg_write(dev, cap, control_word | (0xc000 << 16)); // MSI-X enable + function mask
    let pba = qt.cfg_read(dev, cap + 8);
    assert_eq!(pba & 7, 1, "PBA lives in BAR1");
    let pba_addr = BAR1 + u64::from(pba & !7);
    assert_eq!(qt.readl(pba_addr) & 0b11, 0, "nothing pending yet");
    assert!(rig.guest.notify(VECTOR_STATE));
    wait_until("vector 1 pending in QEMU", || {
        qt.readl(pba_addr) & 0b10 != 0
    });

    drop(child);
    wait_until("the server notices QEMU left", || !rig.guest.connected());
}

/// A QEMU machine with the board's ivshmem-doorbell on `socket`, stopped before its first
/// instruction (`-S`): enough for the device's realize, where the server protocol runs.
fn machine(socket: &std::path::Path) -> Command {
    let qemu = std::env::var("QEMU").unwrap_or_else(|_| "qemu-system-x86_64".into());
    let mut command = Command::new(qemu);
    command
        .args(["-machine", "q35", "-accel", "tcg", "-S", "-display", "none"])
        .args(["-nodefaults", "-monitor", "none", "-serial", "none"])
        .args([
            "-chardev",
            &format!("socket,id=ivsh,path={}", socket.display()),
            "-device",
            "ivshmem-doorbell,chardev=ivsh,vectors=2",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    command
}

#[test]
#[ignore = "needs qemu-system-x86_64; run by scripts/test.d/55-mcu-emu-qemu"]
fn a_second_guest_machine_is_refused_with_a_message_and_the_first_keeps_the_board() {
    let rig = Rig::start("qemu-second", Faults::default());
    let first = KillOnDrop(machine(rig.socket()).spawn().unwrap());
    wait_until("the first machine is the guest", || rig.guest.connected());

    // The second machine's device is refused at realize: QEMU exits with an error naming it.
    let mut second = KillOnDrop(machine(rig.socket()).spawn().unwrap());
    let mut status = None;
    wait_until("the second machine exits", || {
        status = second.0.try_wait().unwrap();
        status.is_some()
    });
    let mut err = String::new();
    std::io::Read::read_to_string(second.0.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(!status.unwrap().success(), "the second QEMU started: {err}");
    assert!(
        err.contains("ivshmem-doorbell") && err.contains("server sent invalid ID message"),
        "QEMU's message: {err}"
    );
    assert_eq!(rig.guest.refused(), 1);
    assert!(rig.guest.connected(), "the first machine keeps the board");

    // Once the first machine is gone, the next one is the guest.
    drop(first);
    wait_until("the first machine's departure", || !rig.guest.connected());
    let _third = KillOnDrop(machine(rig.socket()).spawn().unwrap());
    wait_until("the next machine is the guest", || rig.guest.connected());
    assert_eq!(rig.guest.refused(), 1);
}
