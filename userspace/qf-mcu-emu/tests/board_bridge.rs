//! The board wired through the mailbox (docs/virtual-board.md, *Mailbox*): the bridge owns the
//! shared-memory file and the ivshmem server, the emulator is the MCU on the mailbox socket (as
//! the Zephyr image on the M33 is), and the Linux-6.12-faithful driver side talks to the bridge
//! as QEMU would. Everything the direct board does must work the same through the bytes.

mod common;

use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use common::frames::{request, Reference};
use common::linux::LinuxSide;
use common::{wait_until, TempDir};
use nix::sys::eventfd::{EfdFlags, EventFd};
use qf_mcu_emu::board::{Board, BoardControl, Command};
use qf_mcu_emu::defect::Defect;
use qf_mcu_emu::faults::Faults;
use qf_mcu_emu::ivshmem::{Bridge, BridgeStats, IvshmemServer, MailboxPeer, VECTOR_STATE};
use qf_mcu_emu::layout::{control, CHANNEL_ADDR};
use qf_mcu_emu::mcu::Mcu;
use qf_mcu_emu::rpmsg::NS_ADDR;
use qf_mcu_emu::shm::SharedMemory;

const T: Duration = Duration::from_secs(5);
const LINUX_EPT: u32 = 1024;

struct Wired {
    dir: TempDir,
    ivshmem: std::path::PathBuf,
    mailbox: std::path::PathBuf,
    shm_file: std::path::PathBuf,
    bridge_stats: Arc<std::sync::Mutex<BridgeStats>>,
    stop: Arc<EventFd>,
    threads: Vec<JoinHandle<()>>,
}

impl Wired {
    /// The bridge alone: shared memory, ivshmem server, mailbox.
    fn bridge(tag: &str) -> Wired {
        let dir = TempDir::new(tag);
        let (ivshmem, mailbox, shm_file) = (
            dir.path("ivshmem.sock"),
            dir.path("mailbox.sock"),
            dir.path("board.shm"),
        );
        let shm = SharedMemory::create_file(&shm_file, 16 << 20).unwrap();
        let server = Arc::new(IvshmemServer::bind(&ivshmem, shm.file()).unwrap());
        let bridge = Arc::new(
            Bridge::bind(&mailbox, server.mcu_doorbell(), server.guest_notifier()).unwrap(),
        );
        let bridge_stats = bridge.stats();
        let stop = Arc::new(EventFd::from_value_and_flags(0, EfdFlags::EFD_CLOEXEC).unwrap());
        let mut threads = Vec::new();
        {
            let stop = Arc::clone(&stop);
            threads.push(std::thread::spawn(move || {
                server.run(stop.as_fd()).unwrap()
            }));
        }
        {
            let stop = Arc::clone(&stop);
            threads.push(std::thread::spawn(move || {
                bridge.run(stop.as_fd()).unwrap()
            }));
        }
        Wired {
            dir,
            ivshmem,
            mailbox,
            shm_file,
            bridge_stats,
            stop,
            threads,
        }
    }

    /// The emulator as the MCU on the mailbox, over the bridge's shared-memory file.
    fn start_mcu(&mut self) -> Arc<BoardControl> {
        self.start_broken_mcu(None)
    }

    /// The same MCU playing a broken image (`qf-mcu-emu --defect`).
    fn start_broken_mcu(&mut self, defect: Option<Defect>) -> Arc<BoardControl> {
        let shm = Arc::new(SharedMemory::open_file(&self.shm_file).unwrap());
        let peer = Arc::new(MailboxPeer::connect(&self.mailbox, T).unwrap());
        let mut board = Board::new(
            Arc::clone(&shm),
            peer.mcu_doorbell(),
            peer.guest_notifier(),
            Arc::new(Mcu::new(Faults::default())),
        )
        .unwrap()
        .with_defect(defect);
        let control = board.control();
        {
            let stop = Arc::clone(&self.stop);
            self.threads
                .push(std::thread::spawn(move || board.run(stop.as_fd()).unwrap()));
        }
        {
            let stop = Arc::clone(&self.stop);
            self.threads.push(std::thread::spawn(move || {
                let _ = peer.run(stop.as_fd());
            }));
        }
        if defect != Some(Defect::NoBoot) {
            wait_until("the MCU publishes running", || {
                shm.load_u32(control::MCU_STATE).unwrap() == 2
            });
        }
        control
    }

    fn stats(&self) -> BridgeStats {
        *self.bridge_stats.lock().unwrap()
    }
}

impl Drop for Wired {
    fn drop(&mut self) {
        self.stop.write(1).unwrap();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        let _ = &self.dir;
    }
}

#[test]
fn through_the_mailbox_linux_attaches_gets_the_announcement_and_correct_replies() {
    let mut wired = Wired::bridge("bridge-frames");
    wired.start_mcu();
    let mut linux = LinuxSide::connect(&wired.ivshmem);
    assert_eq!(linux.shm.size(), 16 << 20, "BAR2 is the whole board file");
    linux.attach();
    let ns = linux
        .recv(T)
        .expect("name-service announcement through the bridge");
    assert_eq!((ns.src, ns.dst), (CHANNEL_ADDR, NS_ADDR));
    let mut reference = Reference::new();
    for id in 1..=300u64 {
        let frame = request(id);
        linux.send(LINUX_EPT, CHANNEL_ADDR, &frame);
        let reply = linux
            .recv(T)
            .unwrap_or_else(|| panic!("reply to invocation {id}"));
        assert_eq!(reply.payload, reference.answer(&frame), "invocation {id}");
    }
    let stats = wired.stats();
    assert_eq!(stats.mcu_connections, 1);
    assert!(stats.to_mcu >= 301, "every kick reached the MCU: {stats:?}");
    assert!(stats.to_linux >= 1, "replies raised vector 0: {stats:?}");
    assert_eq!(stats.bad_bytes, 0);
}

#[test]
fn an_mcu_restart_raises_the_state_vector_in_the_guest_through_the_bridge() {
    let mut wired = Wired::bridge("bridge-state");
    let control = wired.start_mcu();
    let linux = LinuxSide::connect(&wired.ivshmem);
    // The boot's own state interrupt may predate the guest: take it away first.
    let _ = linux.client.take_interrupt(VECTOR_STATE);
    control.send(Command::Restart);
    assert!(
        linux.wait_state_interrupt(T),
        "vector 1 reached the guest: {:?}",
        wired.stats()
    );
    assert_eq!(linux.control(control::GENERATION), 2);
}

#[test]
fn a_second_mcu_is_refused_and_the_first_keeps_serving() {
    let mut wired = Wired::bridge("bridge-second");
    wired.start_mcu();
    let second = UnixStream::connect(&wired.mailbox).unwrap();
    wait_until("the second MCU is refused", || {
        wired.stats().mcu_refused == 1
    });
    drop(second);
    let mut linux = LinuxSide::connect(&wired.ivshmem);
    linux.attach();
    assert!(linux.recv(T).is_some(), "announcement from the first MCU");
    assert_eq!(wired.stats().mcu_connections, 1);
}

#[test]
fn bytes_naming_no_vector_are_counted_and_the_next_mcu_is_served() {
    let mut wired = Wired::bridge("bridge-late");
    // A raw MCU that writes one bad byte and leaves.
    {
        let mut raw = UnixStream::connect(&wired.mailbox).unwrap();
        std::io::Write::write_all(&mut raw, &[7]).unwrap();
        wait_until("the bad byte is counted", || wired.stats().bad_bytes == 1);
    }
    wait_until("the raw MCU's departure is seen", || {
        wired.stats().mcu_disconnects == 1
    });
    // The MCU that stays.
    wired.start_mcu();
    wait_until("the second MCU is accepted", || {
        wired.stats().mcu_connections == 2
    });
    let mut linux = LinuxSide::connect(&wired.ivshmem);
    linux.attach();
    assert!(linux.recv(T).is_some(), "announcement from the second MCU");
}

/// `qf-board-bridge SUBCOMMAND --shm-file FILE ARGS...`: (success, stdout + stderr).
fn bridge_says(wired: &Wired, subcommand: &str, args: &[&str]) -> (bool, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_qf-board-bridge"))
        .arg(subcommand)
        .arg("--shm-file")
        .arg(&wired.shm_file)
        .args(args)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

#[test]
fn the_bridges_checks_pass_a_good_mcu_and_its_announcement() {
    let mut wired = Wired::bridge("bridge-check-good");
    wired.start_mcu();
    let (ok, said) = bridge_says(&wired, "check", &["--timeout-s", "10"]);
    assert!(
        ok && said.starts_with("ok: the MCU runs: generation 1"),
        "{said}"
    );
    let mut linux = LinuxSide::connect(&wired.ivshmem);
    linux.attach();
    let (ok, said) = bridge_says(&wired, "announced", &["--timeout-s", "10"]);
    assert!(
        ok && said.starts_with("ok: the MCU announced 'qfabric' from 0x400"),
        "{said}"
    );
}

#[test]
fn the_bridges_check_names_an_mcu_that_does_not_boot_and_every_malformed_table() {
    for &defect in Defect::ALL {
        if defect == Defect::NoAnnounce {
            continue;
        }
        let mut wired = Wired::bridge("bridge-check-defect");
        wired.start_broken_mcu(Some(defect));
        let (ok, said) = bridge_says(&wired, "check", &["--timeout-s", "1"]);
        let expected = match (defect, defect.expected()) {
            (Defect::NoBoot, _) => {
                "after 1 s: the MCU did not boot: the control block has no magic".to_string()
            }
            (Defect::TableSlot, _) => {
                "after 1 s: malformed resource table: BadTable { offset: 4096, size: 8192 }"
                    .to_string()
            }
            (_, Some(rule)) => format!("after 1 s: malformed resource table: {rule}"),
            (_, None) => unreachable!("{defect:?} has a table rule"),
        };
        assert!(!ok, "{}: {said}", defect.name());
        assert!(said.contains(&expected), "{}: {said}", defect.name());
    }
}

#[test]
fn the_bridges_announcement_check_names_an_mcu_that_stays_silent() {
    let mut wired = Wired::bridge("bridge-check-silent");
    wired.start_broken_mcu(Some(Defect::NoAnnounce));
    let (ok, said) = bridge_says(&wired, "check", &["--timeout-s", "10"]);
    assert!(ok, "its table is good: {said}");
    let (ok, said) = bridge_says(&wired, "announced", &["--attach-timeout-s", "1"]);
    assert!(
        !ok && said.contains("Linux did not attach in 1 s"),
        "{said}"
    );
    let mut linux = LinuxSide::connect(&wired.ivshmem);
    linux.attach();
    let (ok, said) = bridge_says(&wired, "announced", &["--timeout-s", "1"]);
    assert!(
        !ok && said.contains("the MCU did not announce its channel: Linux attached 1 s ago"),
        "{said}"
    );
    assert!(linux.recv(Duration::from_millis(200)).is_none());
    // Frames are still served: only the announcement is missing.
    linux.send(LINUX_EPT, CHANNEL_ADDR, &request(1));
    assert!(linux.recv(T).is_some());
}
