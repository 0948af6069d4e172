//! Test rig: the emulator's threads on a temporary socket, and `LinuxSide`, a driver that does
//! what Linux 6.12 does on the other side of the board — QEMU's ivshmem client, `qfabric_rproc`'s
//! attach/kick per the contract, `rp_find_vq` + `virtio_ring`'s split-ring driver, and
//! `virtio_rpmsg_bus`'s buffer handling — so the device side is driven exactly as in the guest.
#![allow(dead_code)]

pub mod frames;
pub mod linux;

use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;

use nix::sys::eventfd::{EfdFlags, EventFd};
use qf_mcu_emu::board::{Board, BoardControl, BoardStats};
use qf_mcu_emu::faults::Faults;
use qf_mcu_emu::ivshmem::{GuestNotifier, IvshmemServer, McuDoorbell};
use qf_mcu_emu::mcu::Mcu;
use qf_mcu_emu::shm::SharedMemory;
use qf_mcu_emu::unix_endpoint::UnixEndpoint;

/// A private directory for sockets, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("qf-mcu-emu-{tag}-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The emulator's threads (ivshmem server, board, optional Unix endpoint).
pub struct Rig {
    pub dir: TempDir,
    pub socket: PathBuf,
    pub unix_socket: PathBuf,
    pub shm: Arc<SharedMemory>,
    pub mcu: Arc<Mcu>,
    pub control: Arc<BoardControl>,
    pub board_stats: Arc<std::sync::Mutex<BoardStats>>,
    pub doorbell: Arc<McuDoorbell>,
    pub guest: Arc<GuestNotifier>,
    stop: Arc<EventFd>,
    threads: Vec<JoinHandle<()>>,
}

impl Rig {
    pub fn start(tag: &str, faults: Faults) -> Rig {
        Self::start_inner(tag, faults, true)
    }

    /// Only the ivshmem server (no board serving the doorbell).
    pub fn server_only(tag: &str) -> Rig {
        Self::start_inner(tag, Faults::default(), false)
    }

    fn start_inner(tag: &str, faults: Faults, with_board: bool) -> Rig {
        let dir = TempDir::new(tag);
        let socket = dir.path("ivshmem.sock");
        let unix_socket = dir.path("mcu.sock");
        let shm = Arc::new(SharedMemory::create(4 << 20).unwrap());
        let server = Arc::new(IvshmemServer::bind(&socket, shm.file()).unwrap());
        let mcu = Arc::new(Mcu::new(faults));
        let mut board = Board::new(
            Arc::clone(&shm),
            server.mcu_doorbell(),
            server.guest_notifier(),
            Arc::clone(&mcu),
        )
        .unwrap();
        let endpoint = UnixEndpoint::bind(&unix_socket).unwrap();
        let stop = Arc::new(EventFd::from_value_and_flags(0, EfdFlags::EFD_CLOEXEC).unwrap());
        let (control, board_stats) = (board.control(), board.stats());
        let (doorbell, guest) = (server.mcu_doorbell(), server.guest_notifier());
        let mut threads = Vec::new();
        {
            let (server, stop) = (Arc::clone(&server), Arc::clone(&stop));
            threads.push(std::thread::spawn(move || {
                server.run(stop.as_fd()).unwrap()
            }));
        }
        if with_board {
            let stop = Arc::clone(&stop);
            threads.push(std::thread::spawn(move || board.run(stop.as_fd()).unwrap()));
        }
        {
            let (stop, mcu) = (Arc::clone(&stop), Arc::clone(&mcu));
            threads.push(std::thread::spawn(move || {
                endpoint.run(stop.as_fd(), &mcu).unwrap()
            }));
        }
        if with_board {
            wait_until("the board publishes generation 1", || {
                shm.load_u32(qf_mcu_emu::layout::control::MCU_STATE)
                    .unwrap()
                    == 2
            });
        }
        Rig {
            dir,
            socket,
            unix_socket,
            shm,
            mcu,
            control,
            board_stats,
            doorbell,
            guest,
            stop,
            threads,
        }
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }

    pub fn board_stats(&self) -> BoardStats {
        *self.board_stats.lock().unwrap()
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        self.stop.write(1).unwrap();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Polls `condition` for up to 5 s; panics naming `what` if it never holds.
pub fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !condition() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting until {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// A board with Linux attached and the name-service announcement consumed.
pub fn attached(tag: &str, faults: Faults) -> (Rig, linux::LinuxSide) {
    let rig = Rig::start(tag, faults);
    let mut linux = linux::LinuxSide::connect(rig.socket());
    linux.attach();
    let ns = linux
        .recv(std::time::Duration::from_secs(5))
        .expect("name-service announcement");
    assert_eq!(ns.dst, qf_mcu_emu::rpmsg::NS_ADDR);
    (rig, linux)
}
