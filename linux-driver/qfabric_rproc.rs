// SPDX-License-Identifier: GPL-2.0
//! `qfabric_rproc`: the remoteproc driver of the virtual Linux+MCU board.
//!
//! It binds QEMU's ivshmem-doorbell PCI device (BAR0 registers, BAR2 memory shared with the MCU
//! emulator, two MSI-X vectors), waits for the MCU to publish its resource table in BAR2, and
//! attaches to the running MCU through the remoteproc core, which then brings up the rpmsg
//! virtio device. Vrings and rpmsg buffers live in BAR2 (carveouts); kicks ring the doorbell;
//! vector 0 becomes `rproc_vq_interrupt`; a watchdog thread watches the MCU's heartbeat and
//! reports a crash to the core, whose recovery re-attaches once the MCU runs again.
//! The shared-memory contract is `docs/virtual-board.md`. On a real board (STM32MP1/MP2,
//! i.MX8/i.MX93, AM62) the vendor's remoteproc driver takes this module's place.

use core::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, Ordering};
use kernel::error::code::*;
use kernel::prelude::*;
use kernel::{bindings, c_str};

mod qfabric;

use qfabric::board::{self, ControlBlock, NotReady};
use qfabric::irq::{self, IrqThread, ThreadedIrq};
use qfabric::kthread::{self, KThread, ThreadBody, Waker};
use qfabric::pci::{self, Device};
use qfabric::rproc::{self, Owned, Platform, Rproc, RprocCell, Subdev, SubdevHooks};
use qfabric::shm::Shm;

qfabric::module! {
    type: QfabricRproc,
    name: "qfabric_rproc",
    author: "qfabric",
    description: "remoteproc driver for the qfabric virtual board (ivshmem-doorbell)",
    license: "GPL",
}

const IVSHMEM_VENDOR: u32 = 0x1af4;
const IVSHMEM_DEVICE: u32 = 0x1110;

/// How often the watchdog looks at the control block.
const WATCHDOG_POLL_MS: u32 = 20;
/// A heartbeat that did not move for this long is a crash. The contract asks for 100 ms; under
/// QEMU TCG on a loaded 2-core host the emulator process is sometimes not scheduled for that
/// long while perfectly healthy, so the driver waits longer (see the report to the emulator).
const HEARTBEAT_TIMEOUT_MS: i64 = 500;
/// While waiting for the MCU to come back, log again after this long.
const WAIT_LOG_EVERY_MS: i64 = 5000;

struct QfabricRproc {
    _driver: pci::Registration,
}

impl kernel::Module for QfabricRproc {
    fn init(module: &'static ThisModule) -> Result<Self> {
        let driver = pci::Registration::new(
            c_str!("qfabric_rproc"),
            IVSHMEM_VENDOR,
            IVSHMEM_DEVICE,
            probe,
            remove,
            module,
        )?;
        Ok(Self { _driver: driver })
    }
}

/// What the interrupt handlers, the remoteproc callbacks and the watchdog share.
struct Board {
    dev: Device,
    regs: pci::IoMap,
    /// BAR2 `[0, BUFFER_OFFSET)`: control block, resource table, vrings.
    shm: Shm,
    bar2_pa: u64,
    rproc: RprocCell,
    /// Last in the subdevice list: opens the vring interrupt path after the vdev started and
    /// closes it before the vdev's virtqueues are deleted.
    gate: Subdev,
    gate_open: AtomicBool,
    vring_irq: AtomicU32,
    /// Set first thing in `remove`: waits end, attaches become degraded, kicks stop.
    stopping: AtomicBool,
    waker: Waker,
    attach_count: AtomicU32,
    attached_generation: AtomicU32,
    crash_reported: AtomicBool,
    last_heartbeat: AtomicU32,
    heartbeat_changed_ns: AtomicI64,
}

impl Board {
    fn control(&self) -> ControlBlock<'_> {
        ControlBlock::new(&self.shm)
    }

    fn stopping(&self) -> bool {
        self.stopping.load(Ordering::Acquire)
    }

    /// Waits until the MCU runs with a valid table and a moving heartbeat; `None` if the driver
    /// is being removed meanwhile.
    fn wait_for_running_mcu(&self) -> Option<(usize, usize, u32)> {
        let started = qfabric::now_ns();
        let mut logged = started;
        let first_heartbeat = self.control().status().heartbeat;
        loop {
            if self.stopping() {
                return None;
            }
            let status = self.control().status();
            if let Ok((offset, size)) = self.control().resource_table() {
                if status.heartbeat != first_heartbeat {
                    return Some((offset, size, status.generation));
                }
            }
            let now = qfabric::now_ns();
            if now - logged > WAIT_LOG_EVERY_MS * 1_000_000 {
                logged = now;
                pr_info!(
                    "waiting for the MCU to run ({} ms): state {}, generation {}\n",
                    qfabric::ns_to_ms(now - started),
                    status.mcu_state,
                    status.generation
                );
            }
            qfabric::sleep_ms(5);
        }
    }

    /// One watchdog look at an attached MCU: report a crash the first time something is wrong.
    fn check_health(&self, rproc: &Rproc) {
        if rproc.state() != rproc::State::Attached || self.crash_reported.load(Ordering::Acquire) {
            return;
        }
        let status = self.control().status();
        let now = qfabric::now_ns();
        if status.heartbeat != self.last_heartbeat.load(Ordering::Relaxed) {
            self.last_heartbeat
                .store(status.heartbeat, Ordering::Relaxed);
            self.heartbeat_changed_ns.store(now, Ordering::Relaxed);
        }
        let stalled_ms = qfabric::ns_to_ms(now - self.heartbeat_changed_ns.load(Ordering::Relaxed));
        let attached_generation = self.attached_generation.load(Ordering::Acquire);
        if status.magic != board::MAGIC {
            pr_err!(
                "watchdog: control block lost its magic ({:#x})\n",
                status.magic
            );
        } else if status.mcu_state == board::MCU_CRASHED {
            pr_err!("watchdog: MCU reports it crashed\n");
        } else if status.generation != attached_generation {
            pr_err!(
                "watchdog: MCU restarted (generation {} -> {})\n",
                attached_generation,
                status.generation
            );
        } else if stalled_ms > HEARTBEAT_TIMEOUT_MS {
            pr_err!("watchdog: MCU heartbeat stalled for {} ms\n", stalled_ms);
        } else {
            return;
        }
        self.crash_reported.store(true, Ordering::Release);
        rproc.report_watchdog_crash();
    }
}

/// remoteproc callbacks.
impl Platform for Board {
    type Data = Board;

    fn prepare(rproc: &Rproc, b: &Board) -> Result {
        // Registered on every full attach: `rproc_resource_cleanup` frees them on shutdown.
        let vrings = [
            (board::VRING0_OFFSET, c_str!("vdev0vring0")),
            (board::VRING1_OFFSET, c_str!("vdev0vring1")),
        ];
        for (offset, name) in vrings {
            let va = b.shm.ptr(offset, board::VRING_SLOT_LEN)?;
            let da = board::DA_BASE + offset as u32;
            rproc.add_carveout(
                rproc.dev(),
                va,
                b.bar2_pa + offset as u64,
                board::VRING_SLOT_LEN,
                da,
                name,
            )?;
        }
        // No kernel mapping: `rproc_add_virtio_dev` hands the range to
        // `dma_declare_coherent_memory`, so rpmsg allocates its buffers inside BAR2.
        rproc.add_carveout(
            rproc.dev(),
            core::ptr::null_mut(),
            b.bar2_pa + board::BUFFER_OFFSET as u64,
            board::BUFFER_LEN,
            board::DA_BASE + board::BUFFER_OFFSET as u32,
            c_str!("vdev0buffer"),
        )
    }

    fn resource_table(_rproc: &Rproc, b: &Board) -> Result<(*mut u8, usize)> {
        match b.control().resource_table() {
            Ok((offset, size)) => Ok((b.shm.ptr(offset, size)?, size)),
            Err(why) => {
                pr_err!("no usable resource table: {:?}\n", why);
                Err(EAGAIN)
            }
        }
    }

    fn attach(rproc: &Rproc, b: &Board) -> Result {
        let Some((offset, size, generation)) = b.wait_for_running_mcu() else {
            // Recovery was cut short by `remove`: let the core finish on its private table
            // copy so that `rproc_del` can shut everything down cleanly.
            rproc.forget_clean_table_after_recovery();
            pr_info!("attach abandoned: driver is being removed\n");
            return Ok(());
        };
        rproc.reinstall_table_after_recovery(b.shm.ptr(offset, size)?, size)?;
        let count = b.control().announce_attach(b.bar2_pa, generation);
        b.attach_count.store(count, Ordering::Release);
        b.attached_generation.store(generation, Ordering::Release);
        b.last_heartbeat
            .store(b.control().status().heartbeat, Ordering::Relaxed);
        b.heartbeat_changed_ns
            .store(qfabric::now_ns(), Ordering::Relaxed);
        b.crash_reported.store(false, Ordering::Release);
        b.gate.move_to_tail(rproc);
        pr_info!(
            "attached to MCU generation {} (attach #{})\n",
            generation,
            count
        );
        Ok(())
    }

    fn detach(_rproc: &Rproc, b: &Board) -> Result {
        b.control().announce_detach();
        pr_info!("detached from MCU\n");
        Ok(())
    }

    fn kick(_rproc: &Rproc, b: &Board, _vqid: i32) {
        if b.stopping() {
            return;
        }
        // The MCU scans both vrings on any vector-0 doorbell; the tag says which attach the
        // new buffers belong to.
        b.control().tag_kick(b.attach_count.load(Ordering::Acquire));
        let _ = b
            .regs
            .write32(board::REG_DOORBELL, board::doorbell(board::VECTOR_VRING));
    }
}

/// Vector 0: the MCU advanced a used ring.
struct VringIrq;
impl IrqThread for VringIrq {
    type Data = Board;
    fn handle(b: &Board) {
        if !b.gate_open.load(Ordering::Acquire) {
            return;
        }
        if let Some(rproc) = b.rproc.get() {
            rproc.vq_interrupt(0);
            rproc.vq_interrupt(1);
        }
    }
}

/// Vector 1: the MCU changed state; let the watchdog look now.
struct StateIrq;
impl IrqThread for StateIrq {
    type Data = Board;
    fn handle(b: &Board) {
        b.waker.wake();
    }
}

/// The gate subdevice's hooks.
struct VringGate;
impl SubdevHooks for VringGate {
    type Data = Board;
    fn start(b: &Board) {
        b.gate_open.store(true, Ordering::Release);
        // Anything the MCU answered before the gate opened (the name-service announcement
        // follows the first kick at once) is picked up by running the handler once.
        irq::wake_thread::<VringIrq>(b.vring_irq.load(Ordering::Acquire), b);
    }
    fn stop(b: &Board) {
        b.gate_open.store(false, Ordering::Release);
        irq::synchronize(b.vring_irq.load(Ordering::Acquire));
    }
}

/// The rproc and the board, shared by the watchdog thread.
struct Monitor {
    // Declared first: released before the board it points into.
    remote: Owned,
    board: KBox<Board>,
}

/// The watchdog: attaches once the MCU is up, then watches it.
struct Watchdog;
impl ThreadBody for Watchdog {
    type Data = Monitor;
    fn run(m: &Monitor) {
        let b = &*m.board;
        let mut gave_up = false;
        let mut last_reason: Option<NotReady> = None;
        while !kthread::should_stop() {
            if !m.remote.is_added() {
                if !gave_up && !b.stopping() {
                    match b.control().resource_table() {
                        Ok(_) => {
                            pr_info!("MCU published its resource table; attaching\n");
                            if let Err(e) = m.remote.add() {
                                pr_err!("attach failed ({:?}); reload the module to retry\n", e);
                                gave_up = true;
                            }
                        }
                        Err(why) => {
                            if last_reason != Some(why) {
                                match why {
                                    NotReady::Malformed(defect) => pr_err!(
                                        "the MCU's resource table is malformed, not attaching: {:?}\n",
                                        defect
                                    ),
                                    NotReady::BadTable { .. } => pr_err!(
                                        "the MCU's resource table is malformed, not attaching: {:?}\n",
                                        why
                                    ),
                                    _ => pr_info!(
                                        "waiting for the MCU's resource table: {:?}\n",
                                        why
                                    ),
                                }
                                last_reason = Some(why);
                            }
                        }
                    }
                }
            } else if let Some(rproc) = b.rproc.get() {
                b.check_health(&rproc);
            }
            kthread::sleep_interruptible_ms(WATCHDOG_POLL_MS);
        }
    }
}

/// Everything a bound device holds, torn down in `Probed::remove`'s order.
struct Probed {
    state_irq: Option<ThreadedIrq>,
    watchdog: Option<KThread>,
    vring_irq: Option<ThreadedIrq>,
    // Dropped in declaration order from here on.
    _vectors: pci::MsixVectors,
    monitor: KBox<Monitor>,
    _bar2: pci::Region,
    _enabled: pci::Enabled,
}

impl Probed {
    fn new(dev: Device) -> Result<KBox<Self>> {
        let enabled = dev.enable()?;
        let regs = dev.iomap(0, c_str!("qfabric_rproc"))?;
        let bar2 = dev.request_region(2, c_str!("qfabric_rproc"))?;
        let (bar2_pa, bar2_len) = dev.resource(2)?;
        if bar2_len < board::MIN_SHM_LEN {
            pr_err!(
                "BAR2 is {} bytes, the board needs at least {}\n",
                bar2_len,
                board::MIN_SHM_LEN
            );
            return Err(EINVAL);
        }
        let shm = Shm::map_wc(bar2_pa, board::BUFFER_OFFSET)?;
        dev.set_master();
        let vectors = dev.alloc_msix(board::VECTORS)?;
        let peer = regs.read32(board::REG_IV_POSITION)?;
        pr_info!(
            "ivshmem peer {}, BAR2 {:#x} ({} KiB), MSI-X vectors {}\n",
            peer,
            bar2_pa,
            bar2_len / 1024,
            board::VECTORS
        );

        let board = KBox::new(
            Board {
                dev,
                regs,
                shm,
                bar2_pa,
                rproc: RprocCell::new(),
                gate: Subdev::new::<VringGate>(),
                gate_open: AtomicBool::new(false),
                vring_irq: AtomicU32::new(0),
                stopping: AtomicBool::new(false),
                waker: Waker::new(),
                attach_count: AtomicU32::new(0),
                attached_generation: AtomicU32::new(0),
                crash_reported: AtomicBool::new(false),
                last_heartbeat: AtomicU32::new(0),
                heartbeat_changed_ns: AtomicI64::new(0),
            },
            GFP_KERNEL,
        )?;
        // SAFETY: the board is heap-allocated and outlives the rproc: `Monitor` releases the
        // rproc before dropping the board.
        let remote =
            unsafe { Owned::alloc::<Board>(board.dev.as_dev(), c_str!("qfabric-mcu"), &*board)? };
        board.rproc.set(remote.rproc());
        // SAFETY: `VringGate::Data` is `Board`; the gate lives inside the board, which neither
        // moves (boxed) nor dies before the rproc.
        unsafe { board.gate.bind(&*board) };
        let monitor = KBox::new(Monitor { remote, board }, GFP_KERNEL)?;
        let b: &Board = &monitor.board;

        let irq0 = vectors.irq(board::VECTOR_VRING)?;
        // SAFETY: the board outlives the IRQ: `Probed::remove` frees it before the monitor.
        let vring_irq =
            unsafe { ThreadedIrq::request::<VringIrq>(irq0, c_str!("qfabric-vring"), b)? };
        b.vring_irq.store(irq0, Ordering::Release);
        let irq1 = vectors.irq(board::VECTOR_STATE)?;
        // SAFETY: as above.
        let state_irq =
            unsafe { ThreadedIrq::request::<StateIrq>(irq1, c_str!("qfabric-state"), b)? };
        // SAFETY: the monitor outlives the thread: `Probed::remove` stops it first.
        let watchdog =
            unsafe { KThread::spawn::<Watchdog>(c_str!("qfabric-watchdog"), &*monitor)? };
        // SAFETY: the only waker caller is the state IRQ, freed before the thread is stopped.
        unsafe { b.waker.arm(&watchdog) };

        Ok(KBox::new(
            Probed {
                state_irq: Some(state_irq),
                watchdog: Some(watchdog),
                vring_irq: Some(vring_irq),
                _vectors: vectors,
                monitor,
                _bar2: bar2,
                _enabled: enabled,
            },
            GFP_KERNEL,
        )?)
    }

    fn remove(mut self: KBox<Self>) {
        self.monitor.board.stopping.store(true, Ordering::Release);
        self.state_irq = None; // nothing wakes the watchdog any more
        self.watchdog = None; // no more attaches or crash reports
        self.monitor.remote.release(); // waits for recovery, rproc_del, rproc_free
        self.vring_irq = None;
        pr_info!("removed\n");
        // The rest drops in declaration order: vectors, board mappings, BAR2's claim, device.
    }
}

unsafe extern "C" fn probe(
    pdev: *mut bindings::pci_dev,
    _id: *const bindings::pci_device_id,
) -> kernel::ffi::c_int {
    // SAFETY: the PCI core passes the device being probed; we use it until `remove` returns.
    let dev = unsafe { Device::from_raw(pdev) };
    match Probed::new(dev) {
        Ok(probed) => {
            dev.set_drvdata(KBox::into_raw(probed).cast());
            0
        }
        Err(e) => {
            pr_err!("probe failed: {:?}\n", e);
            e.to_errno()
        }
    }
}

unsafe extern "C" fn remove(pdev: *mut bindings::pci_dev) {
    // SAFETY: as in `probe`.
    let dev = unsafe { Device::from_raw(pdev) };
    let probed = dev.drvdata().cast::<Probed>();
    dev.set_drvdata(core::ptr::null_mut());
    if !probed.is_null() {
        // SAFETY: `probe` stored a `KBox<Probed>` leaked with `into_raw`; taken back once.
        unsafe { KBox::from_raw(probed) }.remove();
    }
}
