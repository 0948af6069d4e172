//! Resident chains installed, started, inspected, stopped and removed with raw control frames
//! through the emulator's Unix-socket endpoint (no agent), their results arriving over rpmsg at
//! the endpoint that last wrote to the channel (where `qf resident observe` reads them), each
//! tagged with its chain id.

mod common;

use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use common::frames::Reference;
use common::linux::LinuxSide;
use common::{attached, Rig};
use qf_abi::chain::{
    ChainInstall, ChainList, ChainListRequest, ChainOp, ChainRef, ChainState, ChainStatus,
    CONTROL_EFFECT,
};
use qf_abi::{decode_frame, decode_payload, encode_frame, Header, Status, MAX_FRAME_LEN};
use qf_execution::wire::{read_message, split_reply, write_message, MAX_MESSAGE_LEN};
use qf_mcu_emu::faults::Faults;
use qf_mcu_emu::layout::CHANNEL_ADDR;
use qf_tasks::{AddRequest, Crc32Request, Task};

const LINUX_EPT: u32 = 1024;

/// A Unix-socket client sending control frames.
struct Control {
    stream: UnixStream,
    invocation: u64,
}

impl Control {
    fn connect(rig: &Rig) -> Control {
        let stream = UnixStream::connect(&rig.unix_socket).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        Control {
            stream,
            invocation: 0,
        }
    }

    fn send<T: serde::Serialize>(&mut self, op: ChainOp, payload: &T) -> (Status, Vec<u8>) {
        self.invocation += 1;
        let header = Header::request(op.task_id(), CONTROL_EFFECT, self.invocation, 0);
        let mut frame = [0u8; MAX_FRAME_LEN];
        let len = encode_frame(&header, payload, &mut frame).unwrap();
        write_message(&mut self.stream, &frame[..len], None).unwrap();
        let mut body = [0u8; MAX_MESSAGE_LEN];
        let n = read_message(&mut self.stream, &mut body).unwrap().unwrap();
        let (reply, _) = split_reply(&body[..n]).unwrap();
        let reply = decode_frame(reply).unwrap();
        assert_eq!(reply.header.invocation_id, self.invocation);
        (reply.header.status, reply.payload.to_vec())
    }

    fn op(&mut self, op: ChainOp, chain_id: u32) -> Status {
        self.send(op, &ChainRef { chain_id }).0
    }

    fn install(&mut self, install: &ChainInstall) -> Status {
        self.send(ChainOp::Install, install).0
    }

    fn status(&mut self, chain_id: u32) -> Option<ChainStatus> {
        let (status, payload) = self.send(ChainOp::Status, &ChainRef { chain_id });
        (status == Status::Ok).then(|| decode_payload(&payload).unwrap())
    }

    fn list(&mut self) -> ChainList {
        let (status, payload) = self.send(ChainOp::List, &ChainListRequest {});
        assert_eq!(status, Status::Ok);
        decode_payload(&payload).unwrap()
    }
}

fn template<T: serde::Serialize>(task: Task, first_id: u64, request: &T) -> Vec<u8> {
    let header = Header::request(task.id(), task.effect(), first_id, 0);
    let mut frame = [0u8; MAX_FRAME_LEN];
    let len = encode_frame(&header, request, &mut frame).unwrap();
    frame[..len].to_vec()
}

fn install(chain_id: u32, template: &[u8], period_us: u32, budget_us: u32) -> ChainInstall {
    ChainInstall::new(chain_id, template, period_us, budget_us).unwrap()
}

fn add_template(chain_id: u32) -> Vec<u8> {
    template(
        Task::Add,
        u64::from(chain_id) << 32,
        &AddRequest { a: 20, b: 22 },
    )
}

fn crc_template(chain_id: u32) -> Vec<u8> {
    let block = core::array::from_fn(|i| (i * 3) as u8);
    template(
        Task::Crc32,
        u64::from(chain_id) << 32,
        &Crc32Request { block },
    )
}

/// Binds `LINUX_EPT` at the MCU with one ordinary request, so results come to it.
fn bind(linux: &mut LinuxSide) {
    let request = common::frames::add_request(1, 4, 2, 3);
    linux.send(LINUX_EPT, CHANNEL_ADDR, &request);
    linux
        .recv(Duration::from_secs(5))
        .expect("the binding reply");
}

/// The results that arrive within `window`: (chain id, invocation id, frame).
fn results(linux: &mut LinuxSide, window: Duration) -> Vec<(u32, u64, Vec<u8>)> {
    let end = Instant::now() + window;
    let mut got = Vec::new();
    while let Some(left) = end.checked_duration_since(Instant::now()) {
        let Some(message) = linux.recv(left) else {
            break;
        };
        let header = decode_frame(&message.payload).unwrap().header;
        got.push((header.contract_id, header.invocation_id, message.payload));
    }
    got
}

/// The answer the dispatcher gives to `template` with invocation id `id`, tagged `chain_id`.
fn expected(template: &[u8], id: u64, chain_id: u32) -> Vec<u8> {
    let mut request = template.to_vec();
    request[12..20].copy_from_slice(&id.to_be_bytes());
    let mut answer = Reference::new().answer(&request);
    answer[24..28].copy_from_slice(&chain_id.to_be_bytes());
    answer
}

#[test]
fn two_chains_run_at_once_told_apart_by_their_id_then_stop_and_go() {
    let (rig, mut linux) = attached("chain-control", Faults::default());
    let mut control = Control::connect(&rig);
    assert_eq!(control.list().count, 0);
    bind(&mut linux);
    let (add, crc) = (add_template(5), crc_template(6));
    assert_eq!(control.install(&install(5, &add, 2_000, 200)), Status::Ok);
    assert_eq!(control.install(&install(6, &crc, 3_000, 300)), Status::Ok);
    assert!(
        results(&mut linux, Duration::from_millis(30)).is_empty(),
        "installed chains do not run"
    );
    assert_eq!(control.op(ChainOp::Start, 5), Status::Ok);
    assert_eq!(control.op(ChainOp::Start, 6), Status::Ok);

    let got = results(&mut linux, Duration::from_millis(200));
    for (chain_id, template) in [(5, &add), (6, &crc)] {
        let ids: Vec<u64> = got
            .iter()
            .filter(|r| r.0 == chain_id)
            .map(|r| r.1)
            .collect();
        assert!(ids.len() >= 10, "chain {chain_id}: {} results", ids.len());
        let first = u64::from(chain_id) << 32;
        assert_eq!(ids, (first..first + ids.len() as u64).collect::<Vec<_>>());
        for (_, id, frame) in got.iter().filter(|r| r.0 == chain_id) {
            assert_eq!(
                frame,
                &expected(template, *id, chain_id),
                "chain {chain_id}"
            );
        }
    }
    assert!(got.iter().all(|r| r.0 == 5 || r.0 == 6));

    let status = control.status(5).unwrap();
    assert_eq!(
        ChainState::from_code(status.state),
        Some(ChainState::Running)
    );
    assert_eq!((status.period_us, status.budget_us), (2_000, 200));
    assert_eq!(status.reserved_ppm, 100_000);
    assert!(status.releases >= 10);
    assert_eq!(status.results, status.releases);
    assert_eq!(status.rejected, 0);

    assert_eq!(control.op(ChainOp::Stop, 5), Status::Ok);
    results(&mut linux, Duration::from_millis(10));
    let stopped = control.status(5).unwrap();
    assert_eq!(
        ChainState::from_code(stopped.state),
        Some(ChainState::Stopped)
    );
    let late = results(&mut linux, Duration::from_millis(60));
    assert!(late.iter().all(|r| r.0 == 6), "chain 5 sent after its stop");
    assert!(late.iter().any(|r| r.0 == 6), "chain 6 goes on");
    let still = control.status(5).unwrap();
    assert_eq!(still.releases, stopped.releases, "no release after stop");
    assert!(stopped.results >= status.results);

    // Started again, chain 5 goes on with the next invocation ids.
    let last = got.iter().filter(|r| r.0 == 5).map(|r| r.1).max().unwrap();
    assert_eq!(control.op(ChainOp::Start, 5), Status::Ok);
    let resumed = results(&mut linux, Duration::from_millis(30));
    let next = resumed.iter().find(|r| r.0 == 5).expect("chain 5 again").1;
    assert!(next > last, "{next:#x} after {last:#x}");

    assert_eq!(control.op(ChainOp::Remove, 5), Status::Ok);
    assert_eq!(control.op(ChainOp::Remove, 6), Status::Ok);
    assert_eq!(control.list().count, 0);
    results(&mut linux, Duration::from_millis(10));
    assert!(results(&mut linux, Duration::from_millis(30)).is_empty());
    assert_eq!(control.status(5), None);
}

#[test]
fn refusals_through_the_socket_name_their_reason_and_change_nothing() {
    let (rig, _linux) = attached("chain-refusals", Faults::default());
    let mut control = Control::connect(&rig);
    let add = add_template(1);
    assert_eq!(control.install(&install(1, &add, 1_000, 900)), Status::Ok);
    let snapshot = |control: &mut Control| (control.list(), control.status(1));
    let before = snapshot(&mut control);
    let mut wrong_task = install(2, &add, 1_000, 0);
    wrong_task.task_id = Task::Crc32.id();
    for (what, request, status) in [
        (
            "over the bound",
            install(2, &add, 1_000, 200),
            Status::OverBound,
        ),
        ("id in use", install(1, &add, 1_000, 0), Status::IdInUse),
        ("period", install(2, &add, 50, 0), Status::OutOfRange),
        ("template of another task", wrong_task, Status::BadTemplate),
    ] {
        assert_eq!(control.install(&request), status, "{what}");
        assert_eq!(snapshot(&mut control), before, "{what}");
    }
    assert_eq!(control.op(ChainOp::Stop, 9), Status::NotInstalled);
    assert_eq!(snapshot(&mut control), before);
    // Removing the first makes room for the one over the bound.
    assert_eq!(control.op(ChainOp::Remove, 1), Status::Ok);
    assert_eq!(control.install(&install(2, &add, 1_000, 200)), Status::Ok);
    assert_eq!(control.list().reserved_ppm, 200_000);
}
