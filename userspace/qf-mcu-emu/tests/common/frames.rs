//! Request frames for the tests, and the answer `qf_tasks::serve` itself gives to them.

use qf_abi::{encode_frame, Header, MAX_FRAME_LEN};
use qf_tasks::{serve, AddRequest, Crc32Request, FirRequest, Replay, Task};

/// A request frame for invocation `id` of one of the five workloads (cycling through them).
pub fn request(id: u64) -> Vec<u8> {
    let task = [Task::Add, Task::Crc32, Task::FirX1, Task::FirX64, Task::Add][(id % 5) as usize];
    task_request(task, id, 0)
}

/// A request frame of `task` for invocation `id` in `epoch`, its input derived from `id`.
pub fn task_request(task: Task, id: u64, epoch: u32) -> Vec<u8> {
    let header = Header::request(task.id(), task.effect(), id, epoch);
    let mut out = [0u8; MAX_FRAME_LEN];
    let len = match task {
        Task::Add => encode_frame(
            &header,
            &AddRequest {
                a: id as i32,
                b: -7,
            },
            &mut out,
        ),
        Task::Crc32 => encode_frame(
            &header,
            &Crc32Request {
                block: [id as u8; 64],
            },
            &mut out,
        ),
        _ => encode_frame(
            &header,
            &FirRequest {
                samples: [id as i16; 32],
            },
            &mut out,
        ),
    }
    .unwrap();
    out[..len].to_vec()
}

/// An `add` request with an explicit epoch.
pub fn add_request(id: u64, epoch: u32, a: i32, b: i32) -> Vec<u8> {
    let header = Header::request(Task::Add.id(), Task::Add.effect(), id, epoch);
    let mut out = [0u8; MAX_FRAME_LEN];
    let len = encode_frame(&header, &AddRequest { a, b }, &mut out).unwrap();
    out[..len].to_vec()
}

/// The reference: what the dispatcher answers, replaying `requests` in order on fresh windows.
pub struct Reference {
    replay: Replay,
}

impl Reference {
    pub fn new() -> Reference {
        Reference {
            replay: Replay::new(),
        }
    }

    pub fn answer(&mut self, request: &[u8]) -> Vec<u8> {
        let mut out = [0u8; MAX_FRAME_LEN];
        let served = serve(request, &mut out, &|| 0u64, &mut self.replay).unwrap();
        out[..served.len].to_vec()
    }
}
