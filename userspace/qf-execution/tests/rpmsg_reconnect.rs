//! The MCU domain through `rpmsg_char` survives the MCU going away, on the host: an emulated
//! endpoint device ([`Eptdev`]) behaves as `rpmsg_char` does when the remote processor crashes
//! (`EPIPE` on write and read, `POLLERR`/`POLLHUP` on poll, no channel to create a new endpoint
//! on until the MCU announces it again), and the transport reports the MCU down with the reason,
//! fails calls at once meanwhile, creates a new endpoint with bounded backoff once the channel is
//! back, and resumes. Before, an `rpmsg_char` endpoint was opened once: every later call failed
//! and the MCU never came back.

use nix::sys::socket::{recv, send, shutdown, socketpair, MsgFlags, Shutdown};
use nix::sys::socket::{AddressFamily, SockFlag, SockType};
use qf_abi::MAX_FRAME_LEN;
use qf_execution::domain::{Domain, McuChannel, McuTransport, RpmsgChar};
use qf_execution::reconnect::{hung_up, MAX_BACKOFF};
use qf_execution::rpmsg_char::Eptdev;
use qf_execution::workload::{encode_request, outcome_ok, random_request};
use qf_tasks::Task;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The emulated board: an MCU that announces its channel while `up`, serving each endpoint on a
/// thread with `qf_tasks::serve` (fresh replay windows after every restart, as after a reboot).
#[derive(Default)]
struct Board {
    up: AtomicBool,
    /// The MCU's side of every endpoint created since the last crash.
    mcu_sides: Mutex<Vec<OwnedFd>>,
    created: AtomicU32,
    destroyed: AtomicU32,
}

impl Board {
    fn boot(&self) {
        self.up.store(true, Ordering::SeqCst);
    }

    /// The MCU crashes: its channel is gone, and so is every endpoint on it.
    fn crash(&self) {
        self.up.store(false, Ordering::SeqCst);
        for side in self.mcu_sides.lock().unwrap().drain(..) {
            let _ = shutdown(side.as_raw_fd(), Shutdown::Both);
        }
    }

    /// `RPMSG_CREATE_EPT_IOCTL` on the control device: a new endpoint device while the channel
    /// is announced.
    fn create_endpoint(self: &Arc<Self>) -> anyhow::Result<FakeEndpoint> {
        if !self.up.load(Ordering::SeqCst) {
            anyhow::bail!(
                "no rpmsg channel named 'qfabric' under /sys/bus/rpmsg/devices (has the MCU announced it?)"
            );
        }
        let (linux, mcu) = socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_CLOEXEC,
        )?;
        let serving = mcu.try_clone()?;
        self.mcu_sides.lock().unwrap().push(mcu);
        std::thread::spawn(move || {
            let mut replay: qf_tasks::Replay = qf_tasks::Replay::new();
            let mut request = [0u8; MAX_FRAME_LEN];
            let mut reply = [0u8; MAX_FRAME_LEN];
            while let Ok(len @ 1..) = recv(serving.as_raw_fd(), &mut request, MsgFlags::empty()) {
                let Ok(served) =
                    qf_tasks::serve(&request[..len], &mut reply, &|| 0u64, &mut replay)
                else {
                    continue;
                };
                if send(
                    serving.as_raw_fd(),
                    &reply[..served.len],
                    MsgFlags::MSG_NOSIGNAL,
                )
                .is_err()
                {
                    break;
                }
            }
        });
        let n = self.created.fetch_add(1, Ordering::SeqCst);
        Ok(FakeEndpoint {
            socket: linux,
            path: PathBuf::from(format!("/dev/rpmsg{n}")),
            board: self.clone(),
        })
    }
}

/// Linux's side of one endpoint, with `rpmsg_char`'s behaviour once the channel is gone.
struct FakeEndpoint {
    socket: OwnedFd,
    path: PathBuf,
    board: Arc<Board>,
}

impl Eptdev for FakeEndpoint {
    fn path(&self) -> &Path {
        &self.path
    }

    fn send(&mut self, message: &[u8]) -> std::io::Result<()> {
        send(self.socket.as_raw_fd(), message, MsgFlags::MSG_NOSIGNAL)?;
        Ok(())
    }

    fn try_recv(&mut self, buf: &mut [u8], timeout: Duration) -> std::io::Result<Option<usize>> {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        let mut fds = [PollFd::new(self.socket.as_fd(), PollFlags::POLLIN)];
        let ms = u16::try_from(timeout.as_millis()).unwrap_or(u16::MAX);
        if poll(&mut fds, PollTimeout::from(ms))? == 0 {
            return Ok(None);
        }
        match recv(self.socket.as_raw_fd(), buf, MsgFlags::MSG_DONTWAIT)? {
            // rpmsg_char answers EPIPE once the endpoint's channel is gone.
            0 => Err(std::io::Error::from_raw_os_error(libc_epipe())),
            len => Ok(Some(len)),
        }
    }

    fn hung_up(&self) -> bool {
        hung_up(self.socket.as_fd())
    }

    fn destroy(self) -> anyhow::Result<()> {
        self.board.destroyed.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

fn libc_epipe() -> i32 {
    nix::errno::Errno::EPIPE as i32
}

fn add_request(id: u64) -> ([u8; MAX_FRAME_LEN], usize, qf_execution::workload::Request) {
    let request = random_request(Task::Add, id);
    let mut frame = [0u8; MAX_FRAME_LEN];
    let len = encode_request(Task::Add, &request, id, 1, &mut frame).unwrap();
    (frame, len, request)
}

fn served(channel: &mut McuChannel<RpmsgChar<FakeEndpoint>>, id: u64) -> anyhow::Result<()> {
    let (frame, len, request) = add_request(id);
    let invocation = channel.invoke(&frame[..len])?;
    anyhow::ensure!(
        outcome_ok(Task::Add, &request, invocation.frame())?,
        "wrong reply"
    );
    Ok(())
}

/// Polls `check_available` until it holds, at most `limit`.
fn until_up(channel: &mut McuChannel<RpmsgChar<FakeEndpoint>>, limit: Duration) {
    let start = Instant::now();
    while !channel.check_available() {
        assert!(start.elapsed() < limit, "the channel did not come back");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn an_rpmsg_endpoint_reconnects_after_the_mcu_went_away() {
    let board = Arc::new(Board::default());
    board.boot();
    let opener = {
        let board = board.clone();
        move || board.create_endpoint()
    };
    let mut channel = McuChannel::new(RpmsgChar::with_opener(opener), Duration::from_secs(2));
    assert!(channel.check_available());
    served(&mut channel, 1).unwrap();

    // The MCU crashes between calls: the next check notices, and it stays down, with the reason,
    // while the channel is not announced; calls meanwhile fail at once, without a new endpoint.
    board.crash();
    assert!(!channel.check_available());
    let reason = channel.down_reason().unwrap();
    assert!(
        reason.contains("no rpmsg channel named 'qfabric'"),
        "{reason}"
    );
    let start = Instant::now();
    for id in 2..102 {
        let error = format!("{:#}", served(&mut channel, id).unwrap_err());
        assert!(error.contains("the MCU's rpmsg channel"), "{error}");
    }
    // (a blocking attempt per call would take 100 × the 2 s time-out)
    assert!(start.elapsed() < Duration::from_secs(5));
    assert_eq!(board.created.load(Ordering::SeqCst), 1);

    // It comes back: a new endpoint within the backoff's bound, and calls are served again.
    board.boot();
    until_up(&mut channel, MAX_BACKOFF + Duration::from_secs(1));
    assert_eq!(channel.down_reason(), None);
    served(&mut channel, 200).unwrap();
    assert_eq!(board.created.load(Ordering::SeqCst), 2);

    // The MCU crashes with no check in between: the call itself fails naming what happened
    // (not repeated), the endpoint is dropped, and the next check creates a new one.
    board.crash();
    board.boot();
    let error = format!("{:#}", served(&mut channel, 201).unwrap_err());
    assert!(error.contains("went away"), "{error}");
    until_up(&mut channel, Duration::from_secs(1));
    served(&mut channel, 202).unwrap();
    assert_eq!(board.created.load(Ordering::SeqCst), 3);

    // Endpoints whose channel went away are not destroyed again (the kernel did); the live one
    // is, when the channel is dropped.
    assert_eq!(board.destroyed.load(Ordering::SeqCst), 0);
    drop(channel);
    assert_eq!(board.destroyed.load(Ordering::SeqCst), 1);
}

/// On the host there is no rpmsg bus: the daemon's rpmsg endpoint is reported down with the
/// reason and kept (to be created once the channel appears), not dropped for the whole run.
#[test]
fn a_reconnecting_rpmsg_endpoint_without_a_channel_is_down_with_the_reason() {
    let mut mcu = qf_execution::domain::McuEndpoint::Rpmsg
        .open_reconnecting(Duration::from_secs(1))
        .unwrap();
    if Path::new("/sys/bus/rpmsg/devices").exists() {
        return; // a machine with an rpmsg bus: what it says depends on its MCU
    }
    assert!(!mcu.check_available());
    let reason = mcu.down_reason().unwrap();
    assert!(reason.contains("/sys/bus/rpmsg/devices"), "{reason}");
}

/// The transport's `receive` passes the same loss rule on.
#[test]
fn a_receive_on_a_vanished_channel_loses_the_endpoint() {
    let board = Arc::new(Board::default());
    board.boot();
    let opener = {
        let board = board.clone();
        move || board.create_endpoint()
    };
    let mut transport = RpmsgChar::with_opener(opener);
    let mut buf = [0u8; MAX_FRAME_LEN];
    assert_eq!(transport.receive(&mut buf, Duration::ZERO).unwrap(), None);
    board.crash();
    let error = format!(
        "{:#}",
        transport
            .receive(&mut buf, Duration::from_millis(100))
            .unwrap_err()
    );
    assert!(error.contains("went away"), "{error}");
    assert!(!transport.check_available());
}
