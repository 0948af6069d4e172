//! The dispatcher as executors see it: a request frame in, a response frame out, every rejection
//! answered with its status and the request's ids.

use std::cell::Cell;

use qf_abi::{
    decode_frame, encode_frame, encode_frame_raw, EffectClass, Header, MessageKind, Status,
};
use qf_tasks::{
    serve, AddRequest, AddResponse, Crc32Request, Crc32Response, FirRequest, FirResponse, Replay,
    Served, Task,
};

/// A clock that advances 250 ns per reading, so a kernel's compute time is exactly 250.
struct SteppingClock(Cell<u64>);

impl qf_tasks::Clock for SteppingClock {
    fn now_ns(&self) -> u64 {
        let now = self.0.get();
        self.0.set(now + 250);
        now
    }
}

fn request<T: serde::Serialize>(task: Task, invocation: u64, epoch: u32, value: &T) -> Vec<u8> {
    let mut out = vec![0u8; 1024];
    let header = Header::request(task.id(), task.effect(), invocation, epoch);
    let len = encode_frame(&header, value, &mut out).expect("encodes");
    out.truncate(len);
    out
}

fn serve_one(frame: &[u8], replay: &mut Replay) -> (Served, Vec<u8>) {
    let mut out = vec![0u8; 1024];
    let served =
        serve(frame, &mut out, &SteppingClock(Cell::new(0)), replay).expect("out holds a frame");
    out.truncate(served.len);
    (served, out)
}

/// The golden `add-request-integer-boundaries` frame from the QFabric reference.
const GOLDEN_ADD: &str =
    "5146414201010100000000010102030405060708000000070000000b0000c35000080000800000007fffffff";

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn the_golden_add_request_is_served_with_a_matching_response() {
    let mut replay = Replay::new();
    let (served, response) = serve_one(&unhex(GOLDEN_ADD), &mut replay);
    assert_eq!(served.status, Status::Ok);
    assert_eq!(served.task, Some(Task::Add));
    assert_eq!(served.compute_ns, 250);
    let frame = decode_frame(&response).expect("a valid response frame");
    assert_eq!(frame.header.kind, MessageKind::Response);
    assert_eq!(frame.header.invocation_id, 0x0102_0304_0506_0708);
    assert_eq!(
        (
            frame.header.epoch,
            frame.header.contract_id,
            frame.header.deadline_us
        ),
        (7, 11, 50_000)
    );
    // -2147483648 + 2147483647 = -1
    assert_eq!(
        frame.payload_as::<AddResponse>().unwrap(),
        AddResponse { value: -1 }
    );
}

#[test]
fn crc32_and_fir_tasks_answer_with_their_kernels_results() {
    let mut replay = Replay::new();
    let mut block = [0u8; 64];
    block[..9].copy_from_slice(b"123456789");
    let crc_request = Crc32Request { block };
    let (_, response) = serve_one(&request(Task::Crc32, 1, 0, &crc_request), &mut replay);
    let crc: Crc32Response = decode_frame(&response).unwrap().payload_as().unwrap();
    assert_eq!(crc, qf_tasks::kernels::crc32(&crc_request));

    let fir_request = FirRequest {
        samples: core::array::from_fn(|n| n as i16 * 500),
    };
    for (task, passes) in [(Task::FirX1, 1), (Task::FirX64, 64), (Task::FirX512, 512)] {
        let (served, response) = serve_one(&request(task, 1, 0, &fir_request), &mut replay);
        assert_eq!(served.status, Status::Ok, "{task:?}");
        let fir: FirResponse = decode_frame(&response).unwrap().payload_as().unwrap();
        assert_eq!(
            fir,
            qf_tasks::kernels::fir(&fir_request, passes),
            "{task:?}"
        );
    }
}

#[test]
fn a_repeated_invocation_is_duplicate_and_an_older_epoch_stale() {
    let mut replay = Replay::new();
    let add = AddRequest { a: 1, b: 2 };
    assert_eq!(
        serve_one(&request(Task::Add, 9, 3, &add), &mut replay)
            .0
            .status,
        Status::Ok
    );
    let (served, response) = serve_one(&request(Task::Add, 9, 3, &add), &mut replay);
    assert_eq!(served.status, Status::Duplicate);
    assert_eq!(served.compute_ns, 0, "a rejected request does not run");
    let frame = decode_frame(&response).unwrap();
    assert_eq!(
        (
            frame.header.status,
            frame.header.invocation_id,
            frame.payload.len()
        ),
        (Status::Duplicate, 9, 0)
    );
    assert_eq!(
        serve_one(&request(Task::Add, 10, 2, &add), &mut replay)
            .0
            .status,
        Status::Stale
    );
    // Windows are per task: the same id is new for crc32.
    let crc = Crc32Request { block: [0; 64] };
    assert_eq!(
        serve_one(&request(Task::Crc32, 9, 3, &crc), &mut replay)
            .0
            .status,
        Status::Ok
    );
}

#[test]
fn a_malformed_payload_does_not_use_up_its_invocation_id() {
    let mut replay = Replay::new();
    let short = request(Task::Add, 5, 0, &(1i32,)); // 4 bytes where AddRequest needs 8
    let (served, _) = serve_one(&short, &mut replay);
    assert_eq!(served.status, Status::Malformed);
    assert_eq!(served.rejection.map(|e| e.field), Some("b"));
    let good = request(Task::Add, 5, 0, &AddRequest { a: 1, b: 1 });
    assert_eq!(serve_one(&good, &mut replay).0.status, Status::Ok);
}

#[test]
fn an_undeclared_task_id_is_unknown_task() {
    let mut out = vec![0u8; 64];
    let header = Header::request(77, EffectClass::Pure, 4, 0);
    let len = encode_frame_raw(&header, &[], &mut out).unwrap();
    let (served, response) = serve_one(&out[..len], &mut Replay::new());
    assert_eq!(served.status, Status::UnknownTask);
    assert_eq!(decode_frame(&response).unwrap().header.task_id, 77);
}

#[test]
fn an_effect_class_differing_from_the_declaration_is_malformed() {
    let mut out = vec![0u8; 64];
    let header = Header::request(Task::Add.id(), EffectClass::Actuating, 4, 0);
    let len = encode_frame(&header, &AddRequest { a: 1, b: 1 }, &mut out).unwrap();
    let (served, _) = serve_one(&out[..len], &mut Replay::new());
    assert_eq!(served.status, Status::Malformed);
    assert_eq!(served.rejection.map(|e| e.field), Some("effect"));
}

#[test]
fn a_response_frame_sent_as_request_is_malformed() {
    let mut frame = unhex(GOLDEN_ADD);
    frame[5] = MessageKind::Response.code();
    assert_eq!(
        serve_one(&frame, &mut Replay::new()).0.status,
        Status::Malformed
    );
}

#[test]
fn broken_frames_are_answered_with_their_status_and_salvaged_ids() {
    let mut frame = unhex(GOLDEN_ADD);
    frame[4] = 2; // version
    let (served, response) = serve_one(&frame, &mut Replay::new());
    assert_eq!(served.status, Status::VersionMismatch);
    let header = decode_frame(&response).unwrap().header;
    assert_eq!(
        (header.task_id, header.invocation_id, header.epoch),
        (1, 0x0102_0304_0506_0708, 7)
    );

    let oversized = vec![0u8; 1025];
    assert_eq!(
        serve_one(&oversized, &mut Replay::new()).0.status,
        Status::Oversized
    );
    assert_eq!(
        serve_one(&[0x51, 0x46], &mut Replay::new()).0.status,
        Status::Malformed
    );
}

#[test]
fn an_output_too_small_for_the_response_yields_execution_error() {
    let fir = request(Task::FirX1, 1, 0, &FirRequest { samples: [0; 32] });
    let mut out = [0u8; 64]; // the response needs 36 + 64
    let served = serve(&fir, &mut out, &|| 0u64, &mut Replay::<64>::new()).unwrap();
    assert_eq!(served.status, Status::ExecutionError);
    assert_eq!(
        decode_frame(&out[..served.len]).unwrap().header.status,
        Status::ExecutionError
    );
    let mut tiny = [0u8; 35];
    assert!(serve(&fir, &mut tiny, &|| 0u64, &mut Replay::<64>::new()).is_err());
}

#[test]
fn every_task_has_distinct_ids_and_names_and_the_reference_ids() {
    assert_eq!(Task::Add.id(), 1);
    assert_eq!(Task::AbiProbe.id(), 2);
    for task in Task::ALL {
        assert_eq!(Task::from_id(task.id()), Some(task));
        assert_eq!(Task::from_name(task.name()), Some(task));
        assert_eq!(Task::ALL[task.index()], task);
    }
}
