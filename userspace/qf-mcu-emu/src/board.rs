//! The remote core on the virtual board: publishes the control block and resource table, keeps
//! the heartbeat, serves the rpmsg vrings of each attach session, releases the resident chains
//! (a crash or hang ends them: they live in the MCU's RAM, and must be installed again after a
//! restart), and crashes and restarts on command. The rules are docs/virtual-board.md's (rev 2).

use std::collections::VecDeque;
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::eventfd::{EfdFlags, EventFd};
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
use qf_abi::MAX_FRAME_LEN;
use qf_chain::ChainStats;

use crate::defect::Defect;
use crate::garbage;
use crate::ivshmem::{GuestNotifier, McuDoorbell, VECTOR_STATE, VECTOR_VRING};
use crate::layout::{
    control, McuState, CHANNEL_ADDR, HEARTBEAT_PERIOD_US, LAYOUT_VERSION, MAGIC, RSC_TABLE_OFFSET,
};
use crate::mcu::Mcu;
use crate::rpmsg::{self, NS_ADDR};
use crate::rsc_table::{self, TABLE_LEN};
use crate::shm::{SharedMemory, ShmError};
use crate::vring::{DeviceError, RpmsgDevice, Sent};

/// Name of the rpmsg channel the MCU announces.
pub const CHANNEL_NAME: &str = "qfabric";

/// Lifecycle commands.
#[derive(Debug, Clone)]
pub enum Command {
    /// Stop the heartbeat, publish `crashed`, stop serving.
    Crash,
    /// Wedge: stop the heartbeat and stop serving, but leave `mcu_state` running and the
    /// generation unchanged (only a heartbeat watchdog can notice).
    Hang,
    /// New generation, re-publish, wait for Linux to re-attach.
    Restart,
    /// Send this many garbage frames ([`crate::garbage`]) to the endpoint that last wrote.
    Garbage(u64),
    /// The chains changed (a control frame from any transport): aim the chain timer again.
    ChainsChanged,
    /// Restart as a broken image ([`crate::defect`]), or a good one again (`None`).
    Defect(Option<Defect>),
}

/// Errors of the board loop.
#[derive(Debug, thiserror::Error)]
pub enum BoardError {
    #[error(transparent)]
    Shm(#[from] ShmError),
    #[error("board: {what}: {source}")]
    Sys {
        what: &'static str,
        source: nix::Error,
    },
    #[error("board: spawning the heartbeat thread: {0}")]
    Spawn(#[source] std::io::Error),
}

/// Hands commands to a running board from other threads.
pub struct BoardControl {
    queue: Mutex<VecDeque<Command>>,
    wake: EventFd,
}

impl BoardControl {
    fn new() -> Result<BoardControl, BoardError> {
        let wake = EventFd::from_value_and_flags(0, EfdFlags::EFD_CLOEXEC | EfdFlags::EFD_NONBLOCK)
            .map_err(|source| BoardError::Sys {
                what: "creating the command eventfd",
                source,
            })?;
        Ok(BoardControl {
            queue: Mutex::new(VecDeque::new()),
            wake,
        })
    }

    /// Queues `command` for the board loop.
    pub fn send(&self, command: Command) {
        self.queue
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back(command);
        let _ = self.wake.write(1);
    }

    fn take(&self) -> Vec<Command> {
        let _ = self.wake.read();
        self.queue
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
            .collect()
    }
}

/// One attach session: the vrings of one `attach_count`.
struct Session {
    attach_count: u32,
    device: RpmsgDevice,
    /// Messages waiting for a free rx buffer: (src, dst, payload).
    outbox: VecDeque<(u32, u32, Vec<u8>)>,
    /// Where chain results go: the address of the last Linux endpoint that wrote to the
    /// channel (the Zephyr executor's rpmsg transport keeps the same rule).
    chain_dest: Option<u32>,
}

/// Counters the board reports.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct BoardStats {
    pub sessions: u64,
    pub stale_kicks: u64,
    pub foreign_messages: u64,
    /// Garbage frames delivered to Linux, and those that found no receive buffer or no
    /// endpoint to go to.
    pub garbage_sent: u64,
    pub garbage_not_sent: u64,
    /// Whether a resident chain runs, and the counters of the first installed one (those of the
    /// last one once all are removed; lateness and compute time in nanoseconds).
    pub chain_running: bool,
    pub chain: ChainStats,
    /// Times that chain's CBS budget ran out during a job (B_ROUT).
    pub chain_budget_exhaustions: u64,
    /// The broken image this MCU plays, if any.
    pub defect: Option<Defect>,
}

/// The emulated remote core.
pub struct Board {
    shm: Arc<SharedMemory>,
    doorbell: Arc<McuDoorbell>,
    guest: Arc<GuestNotifier>,
    mcu: Arc<Mcu>,
    control: Arc<BoardControl>,
    session: Option<Session>,
    /// Readable when a resident chain's release or scheduler timer is due.
    chain_wake: TimerFd,
    stats: Arc<Mutex<BoardStats>>,
    /// False while hung: the heartbeat thread skips its increments.
    heart_alive: Arc<AtomicBool>,
}

impl Board {
    /// A board over `shm`; call [`Board::run`] to boot and serve.
    pub fn new(
        shm: Arc<SharedMemory>,
        doorbell: Arc<McuDoorbell>,
        guest: Arc<GuestNotifier>,
        mcu: Arc<Mcu>,
    ) -> Result<Board, BoardError> {
        let chain_wake = TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_CLOEXEC | TimerFlags::TFD_NONBLOCK,
        )
        .map_err(|source| BoardError::Sys {
            what: "creating the chain timer",
            source,
        })?;
        let control = Arc::new(BoardControl::new()?);
        let wake = Arc::clone(&control);
        mcu.set_chains_released(Box::new(move || wake.send(Command::ChainsChanged)));
        Ok(Board {
            shm,
            doorbell,
            guest,
            mcu,
            control,
            session: None,
            chain_wake,
            stats: Arc::new(Mutex::new(BoardStats::default())),
            heart_alive: Arc::new(AtomicBool::new(true)),
        })
    }

    /// Boots as a broken image (`qf-mcu-emu --defect`).
    pub fn with_defect(self, defect: Option<Defect>) -> Board {
        self.lock_stats().defect = defect;
        self
    }

    fn defect(&self) -> Option<Defect> {
        self.lock_stats().defect
    }

    /// The handle for crash/restart commands.
    pub fn control(&self) -> Arc<BoardControl> {
        Arc::clone(&self.control)
    }

    /// Live counters.
    pub fn stats(&self) -> Arc<Mutex<BoardStats>> {
        Arc::clone(&self.stats)
    }

    /// Boots (generation 1), then serves doorbells and commands until `stop` is readable.
    /// The heartbeat runs on its own thread for as long as this call.
    pub fn run(&mut self, stop: BorrowedFd<'_>) -> Result<(), BoardError> {
        self.shm.clear_control()?;
        self.boot()?;
        let beating = Arc::new(AtomicBool::new(true));
        let heartbeat = {
            let (shm, beating) = (Arc::clone(&self.shm), Arc::clone(&beating));
            let alive = Arc::clone(&self.heart_alive);
            std::thread::Builder::new()
                .name("heartbeat".into())
                .spawn(move || heartbeat_loop(&shm, &beating, &alive))
                .map_err(BoardError::Spawn)?
        };
        let result = self.serve(stop);
        beating.store(false, Ordering::SeqCst);
        let _ = heartbeat.join();
        let _ = self
            .shm
            .store_u32(control::MCU_STATE, McuState::Offline as u32);
        result
    }

    fn serve(&mut self, stop: BorrowedFd<'_>) -> Result<(), BoardError> {
        let control = Arc::clone(&self.control);
        let doorbell = Arc::clone(&self.doorbell);
        loop {
            self.arm_chain_wake()?;
            let mut fds = [
                PollFd::new(stop, PollFlags::POLLIN),
                PollFd::new(doorbell.fd(VECTOR_VRING), PollFlags::POLLIN),
                PollFd::new(doorbell.fd(VECTOR_STATE), PollFlags::POLLIN),
                PollFd::new(control.wake.as_fd(), PollFlags::POLLIN),
                PollFd::new(self.chain_wake.as_fd(), PollFlags::POLLIN),
            ];
            match poll(&mut fds, PollTimeout::NONE) {
                Err(nix::Error::EINTR) => continue,
                other => other.map_err(|source| BoardError::Sys {
                    what: "polling the doorbell",
                    source,
                })?,
            };
            let ready: Vec<bool> = fds
                .iter()
                .map(|f| f.revents().is_some_and(|r| !r.is_empty()))
                .collect();
            if ready[0] {
                return Ok(());
            }
            // The chains' releases first: on the MCU their timer interrupt preempts the rpmsg
            // thread.
            if ready[4] {
                let _ = self.chain_wake.wait();
                self.release_chains()?;
            }
            if ready[3] {
                for command in control.take() {
                    self.command(command)?;
                }
            }
            if ready[2] {
                // Linux -> MCU on vector 1 has no meaning in this contract; consume it.
                doorbell.take(VECTOR_STATE);
            }
            if ready[1] && doorbell.take(VECTOR_VRING) {
                self.kick()?;
            }
        }
    }

    fn boot(&mut self) -> Result<(), BoardError> {
        self.shm.store_u32(control::GENERATION, 0)?;
        self.publish()
    }

    /// Publishes a fresh resource table under a new generation and goes `running` (or, as a
    /// broken image, does what that image does).
    fn publish(&mut self) -> Result<(), BoardError> {
        let defect = self.defect();
        let shm = &self.shm;
        self.session = None;
        if defect == Some(Defect::NoBoot) {
            shm.store_u32(control::MCU_STATE, McuState::Offline as u32)?;
            shm.store_u32(control::MAGIC, 0)?;
            log::warn!("mcu: defect no-boot: {}", Defect::NoBoot.what());
            return Ok(());
        }
        shm.store_u32(control::MCU_STATE, McuState::Booting as u32)?;
        let generation = shm.bump_u32(control::GENERATION)?;
        shm.store_u32(control::MAGIC, MAGIC)?;
        shm.store_u32(control::LAYOUT_VERSION, LAYOUT_VERSION)?;
        let mut table = rsc_table::encode();
        if let Some(defect) = defect {
            defect.corrupt(&mut table);
            log::warn!("mcu: defect {}: {}", defect.name(), defect.what());
        }
        shm.write(RSC_TABLE_OFFSET, &table)?;
        shm.store_u32(control::RSC_TABLE_OFFSET, RSC_TABLE_OFFSET as u32)?;
        let size = defect.map_or(TABLE_LEN as u32, |d| d.published_size(TABLE_LEN as u32));
        shm.store_u32(control::RSC_TABLE_SIZE, size)?;
        shm.store_u32(control::HEARTBEAT_PERIOD_US, HEARTBEAT_PERIOD_US)?;
        shm.store_u32(control::CHANNEL_ADDR, CHANNEL_ADDR)?;
        shm.store_u32(control::SERVED_ATTACH_COUNT, 0)?;
        shm.store_u32(control::MCU_STATE, McuState::Running as u32)?;
        log::info!("mcu: running, generation {generation}");
        self.guest.notify(VECTOR_STATE);
        Ok(())
    }

    fn command(&mut self, command: Command) -> Result<(), BoardError> {
        match command {
            Command::Crash => {
                self.shm
                    .store_u32(control::MCU_STATE, McuState::Crashed as u32)?;
                self.mcu.crash();
                self.session = None;
                self.publish_chain_stats();
                log::info!("mcu: crashed (heartbeat stopped, not serving)");
                self.guest.notify(VECTOR_STATE);
            }
            Command::Hang => {
                self.heart_alive.store(false, Ordering::SeqCst);
                self.mcu.crash();
                self.session = None;
                self.publish_chain_stats();
                log::info!("mcu: hung (heartbeat stopped, not serving, state left running)");
            }
            Command::Restart => {
                self.mcu.restart();
                self.heart_alive.store(true, Ordering::SeqCst);
                self.publish()?;
            }
            Command::Garbage(n) => self.send_garbage(n)?,
            Command::ChainsChanged => self.publish_chain_stats(),
            Command::Defect(defect) => {
                self.lock_stats().defect = defect;
                self.mcu.restart();
                self.heart_alive.store(true, Ordering::SeqCst);
                self.publish()?;
            }
        }
        Ok(())
    }

    /// Sends `n` garbage frames to the endpoint that last wrote, like chain results: only to a
    /// live session, never queued.
    fn send_garbage(&mut self, n: u64) -> Result<(), BoardError> {
        let live = self.live_attach()?;
        let (mut sent, mut interrupt, mut failed) = (0, false, None);
        if let Some(session) = self.session.as_mut() {
            let dest = session
                .chain_dest
                .filter(|_| live == Some(session.attach_count) && session.outbox.is_empty());
            if let Some(dst) = dest {
                let mut out = [0u8; rpmsg::MAX_PAYLOAD];
                for index in 0..n {
                    let (len, _) = garbage::frame(index, &mut out);
                    match session.device.send(CHANNEL_ADDR, dst, &out[..len]) {
                        Ok(Sent::Delivered { interrupt: i }) => {
                            sent += 1;
                            interrupt |= i;
                        }
                        Ok(Sent::NoBuffer) => break,
                        Err(e) => {
                            failed = Some(e);
                            break;
                        }
                    }
                }
            }
        }
        if interrupt {
            self.guest.notify(VECTOR_VRING);
        }
        {
            let mut stats = self.lock_stats();
            stats.garbage_sent += sent;
            stats.garbage_not_sent += n - sent;
        }
        log::info!("mcu: {sent} of {n} garbage frames sent");
        if let Some(e) = failed {
            self.end_session(&e)?;
        }
        Ok(())
    }

    /// Copies the chains' summary into the board's counters; a removed chain's last counters
    /// stay there until another is installed.
    fn publish_chain_stats(&self) {
        let (running, chain, exhaustions) = self.mcu.chain_summary();
        let mut stats = self.lock_stats();
        stats.chain_running = running;
        if chain != ChainStats::default() || running {
            stats.chain = chain;
            stats.chain_budget_exhaustions = exhaustions;
        }
    }

    /// Points the chain timer at the earliest instant a running chain needs the loop.
    fn arm_chain_wake(&self) -> Result<(), BoardError> {
        let armed = match self.mcu.chains_next_due() {
            Some(at) => self.chain_wake.set(
                Expiration::OneShot(at),
                TimerSetTimeFlags::TFD_TIMER_ABSTIME,
            ),
            None => self.chain_wake.unset(),
        };
        armed.map_err(|source| BoardError::Sys {
            what: "arming the chain timer",
            source,
        })
    }

    /// The chains' due releases: each job's result goes to the endpoint that last wrote to
    /// the channel, if Linux is attached and has a free buffer right now. A result is never
    /// queued: a late result is worth less than the next one, and the MCU must not wait on
    /// Linux.
    fn release_chains(&mut self) -> Result<(), BoardError> {
        let live = self.live_attach()?;
        let mut interrupt = false;
        let mut failed = None;
        let mut session = self.session.as_mut();
        let mut send = |frame: &[u8]| -> bool {
            let Some(session) = session.as_deref_mut() else {
                return false;
            };
            let dest = session
                .chain_dest
                .filter(|_| live == Some(session.attach_count) && session.outbox.is_empty());
            let Some(dst) = dest.filter(|_| failed.is_none()) else {
                return false;
            };
            match session.device.send(CHANNEL_ADDR, dst, frame) {
                Ok(Sent::Delivered { interrupt: wanted }) => {
                    interrupt |= wanted;
                    true
                }
                Ok(Sent::NoBuffer) => false,
                Err(e) => {
                    failed = Some(e);
                    false
                }
            }
        };
        self.mcu.release_chains(&mut send);
        if interrupt {
            self.guest.notify(VECTOR_VRING);
        }
        self.publish_chain_stats();
        if let Some(e) = failed {
            self.end_session(&e)?;
        }
        Ok(())
    }

    /// The attach count of the session Linux currently holds, if the MCU runs and serves.
    fn live_attach(&self) -> Result<Option<u32>, BoardError> {
        let shm = &self.shm;
        let running =
            McuState::from_u32(shm.load_u32(control::MCU_STATE)?) == Some(McuState::Running);
        let attached = shm.load_u32(control::LINUX_STATE)? == 1
            && shm.load_u32(control::ATTACHED_GENERATION)? == shm.load_u32(control::GENERATION)?;
        let hung = !self.heart_alive.load(Ordering::SeqCst);
        Ok((running && attached && !hung).then_some(shm.load_u32(control::ATTACH_COUNT)?))
    }

    /// Drops a session whose vrings failed.
    fn end_session(&mut self, e: &DeviceError) -> Result<(), BoardError> {
        let attach_count = self.session.as_ref().map_or(0, |s| s.attach_count);
        log::error!("mcu: session {attach_count} stopped: {e}");
        self.session = None;
        self.shm.store_u32(control::SERVED_ATTACH_COUNT, 0)?;
        Ok(())
    }

    /// A vector-0 doorbell: serve the vrings if the kick belongs to the current attach.
    fn kick(&mut self) -> Result<(), BoardError> {
        // A hung MCU looks running from outside but serves nothing.
        let live = self.live_attach()?;
        let tag = self.shm.load_u32(control::KICK_TAG)?;
        let Some(attach_count) = live.filter(|&count| count == tag && count != 0) else {
            self.lock_stats().stale_kicks += 1;
            log::debug!("mcu: kick ignored (live attach {live:?}, tag {tag})");
            return Ok(());
        };
        if self.session.as_ref().map(|s| s.attach_count) != Some(attach_count) {
            self.session = None;
            match self.start_session(attach_count) {
                Ok(session) => self.session = Some(session),
                Err(e) => {
                    log::error!("mcu: cannot serve attach {attach_count}: {e}");
                    return Ok(());
                }
            }
        }
        if let Err(e) = self.serve_session() {
            self.end_session(&e)?;
        }
        Ok(())
    }

    fn start_session(&mut self, attach_count: u32) -> Result<Session, DeviceError> {
        let mut table = [0u8; TABLE_LEN];
        self.shm.read(RSC_TABLE_OFFSET, &mut table)?;
        let vdev = rsc_table::decode_vdev(&table)?;
        let bar2_pa = self.shm.load_u64(control::BAR2_PA)?;
        let device = RpmsgDevice::new(self.shm.file(), self.shm.size(), bar2_pa, &vdev)?;
        self.shm
            .store_u32(control::SERVED_ATTACH_COUNT, attach_count)?;
        self.lock_stats().sessions += 1;
        let mut outbox = VecDeque::new();
        if self.defect() == Some(Defect::NoAnnounce) {
            log::warn!("mcu: serving attach {attach_count} (BAR2 at {bar2_pa:#x}); defect no-announce: not announcing '{CHANNEL_NAME}'");
        } else {
            log::info!("mcu: serving attach {attach_count} (BAR2 at {bar2_pa:#x}); announcing '{CHANNEL_NAME}' at {CHANNEL_ADDR:#x}");
            outbox.push_back((
                CHANNEL_ADDR,
                NS_ADDR,
                rpmsg::ns_announcement(CHANNEL_NAME, CHANNEL_ADDR).to_vec(),
            ));
        }
        Ok(Session {
            attach_count,
            device,
            outbox,
            chain_dest: None,
        })
    }

    fn serve_session(&mut self) -> Result<(), DeviceError> {
        let Some(session) = self.session.as_mut() else {
            return Ok(());
        };
        let mut inbox = Vec::new();
        let mut interrupt = false;
        // Answering may take a while (latency knob); deliver replies as they are produced so
        // Linux's rx buffers are recycled, and re-read vring1 until it is empty.
        loop {
            flush(session, &mut interrupt)?;
            inbox.clear();
            session.device.receive(&mut inbox)?;
            if inbox.is_empty() {
                break;
            }
            for message in inbox.drain(..) {
                if message.dst != CHANNEL_ADDR {
                    self.stats
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .foreign_messages += 1;
                    log::warn!(
                        "mcu: message from {} to unknown address {} dropped",
                        message.src,
                        message.dst
                    );
                    continue;
                }
                session.chain_dest = Some(message.src);
                let mut out = [0u8; MAX_FRAME_LEN];
                if let Some(reply) = self.mcu.handle(&message.payload, &mut out) {
                    session.outbox.push_back((
                        CHANNEL_ADDR,
                        message.src,
                        out[..reply.len].to_vec(),
                    ));
                    flush(session, &mut interrupt)?;
                    if interrupt {
                        self.guest.notify(VECTOR_VRING);
                        interrupt = false;
                    }
                }
            }
        }
        if interrupt {
            self.guest.notify(VECTOR_VRING);
        }
        Ok(())
    }

    fn lock_stats(&self) -> std::sync::MutexGuard<'_, BoardStats> {
        self.stats.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Sends queued messages while Linux has rx buffers.
fn flush(session: &mut Session, interrupt: &mut bool) -> Result<(), DeviceError> {
    while let Some((src, dst, payload)) = session.outbox.front() {
        if payload.len() > rpmsg::MAX_PAYLOAD {
            log::warn!(
                "mcu: a {}-byte reply exceeds the rpmsg payload limit; not sent",
                payload.len()
            );
            session.outbox.pop_front();
            continue;
        }
        match session.device.send(*src, *dst, payload)? {
            Sent::Delivered { interrupt: wanted } => {
                *interrupt |= wanted;
                session.outbox.pop_front();
            }
            Sent::NoBuffer => break,
        }
    }
    Ok(())
}

fn heartbeat_loop(shm: &SharedMemory, beating: &AtomicBool, alive: &AtomicBool) {
    let period = Duration::from_micros(u64::from(HEARTBEAT_PERIOD_US));
    while beating.load(Ordering::SeqCst) {
        std::thread::sleep(period);
        let running = shm.load_u32(control::MCU_STATE).ok() == Some(McuState::Running as u32);
        if running && alive.load(Ordering::SeqCst) {
            let _ = shm.bump_u32(control::HEARTBEAT);
        }
    }
}
