//! Requests for the declared tasks: seeded random inputs for profiling, JSON for `qf run`, and
//! the outcome check against an **independent reference** (the paper checks every result against a
//! separate implementation): written here differently from `qf-tasks` — a table-driven CRC-32, FIR
//! as an exact 64-bit convolution, addition in 64-bit arithmetic.

use anyhow::{bail, Context, Result};
use qf_abi::{decode_frame, encode_frame, Header, Status, MAX_FRAME_LEN};
use qf_tasks::{
    AddRequest, AddResponse, Crc32Request, Crc32Response, FirRequest, FirResponse, ProbeRequest,
    ProbeResponse, Task,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A typed request for any declared task.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Request {
    Add(AddRequest),
    Probe(ProbeRequest),
    Crc32(Crc32Request),
    Fir(FirRequest),
}

/// A typed response.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Response {
    Add(AddResponse),
    Probe(ProbeResponse),
    Crc32(Crc32Response),
    Fir(FirResponse),
}

/// FIR passes of a task (None for non-FIR tasks).
fn fir_passes(task: Task) -> Option<u32> {
    match task {
        Task::FirX1 => Some(1),
        Task::FirX64 => Some(64),
        Task::FirX512 => Some(512),
        _ => None,
    }
}

/// Looks a task up by its declared name, listing the valid names otherwise.
pub fn task_by_name(name: &str) -> Result<Task> {
    Task::from_name(name).with_context(|| {
        let names: Vec<&str> = Task::ALL.iter().map(|t| t.name()).collect();
        format!(
            "unknown task `{}` (declared: {})",
            crate::shown::shown(name),
            names.join(", ")
        )
    })
}

/// A request with inputs drawn from `seed` (reproducible).
pub fn random_request(task: Task, seed: u64) -> Request {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    match task {
        Task::Add => Request::Add(AddRequest {
            a: rng.gen(),
            b: rng.gen(),
        }),
        Task::AbiProbe => Request::Probe(ProbeRequest {
            sequence: rng.gen(),
            temperature: rng.gen_range(-40.0..125.0),
            gain: rng.gen_range(0.0..10.0),
            offsets: [rng.gen(), rng.gen(), rng.gen()],
            enabled: rng.gen(),
        }),
        Task::Crc32 => {
            let mut block = [0u8; 64];
            rng.fill(&mut block[..]);
            Request::Crc32(Crc32Request { block })
        }
        Task::FirX1 | Task::FirX64 | Task::FirX512 => {
            let mut samples = [0i16; 32];
            samples.iter_mut().for_each(|s| *s = rng.gen());
            Request::Fir(FirRequest { samples })
        }
    }
}

/// Parses a JSON request for `task` (the request type's fields, e.g. `{"a": 1, "b": 2}`).
pub fn request_from_json(task: Task, json: &str) -> Result<Request> {
    // serde's message quotes the offending value or key: a long one is cut.
    let context = |e: serde_json::Error| {
        anyhow::anyhow!(
            "request JSON for task `{}` (type {}): {}",
            task.name(),
            task.request_type(),
            crate::shown::shown_in(&e.to_string())
        )
    };
    Ok(match task {
        Task::Add => Request::Add(serde_json::from_str(json).map_err(context)?),
        Task::AbiProbe => Request::Probe(serde_json::from_str(json).map_err(context)?),
        Task::Crc32 => Request::Crc32(serde_json::from_str(json).map_err(context)?),
        Task::FirX1 | Task::FirX64 | Task::FirX512 => {
            Request::Fir(serde_json::from_str(json).map_err(context)?)
        }
    })
}

/// Encodes a request frame into `out`; returns its length.
pub fn encode_request(
    task: Task,
    request: &Request,
    invocation_id: u64,
    epoch: u32,
    out: &mut [u8; MAX_FRAME_LEN],
) -> Result<usize> {
    let header = Header::request(task.id(), task.effect(), invocation_id, epoch);
    let result = match request {
        Request::Add(r) => encode_frame(&header, r, out),
        Request::Probe(r) => encode_frame(&header, r, out),
        Request::Crc32(r) => encode_frame(&header, r, out),
        Request::Fir(r) => encode_frame(&header, r, out),
    };
    result.map_err(|e| anyhow::anyhow!("encoding a `{}` request: {e}", task.name()))
}

/// Decodes a request frame of a declared task: its header, task and typed request.
pub fn decode_request(frame: &[u8]) -> Result<(Header, Task, Request)> {
    let decoded = decode_frame(frame).map_err(|e| anyhow::anyhow!("request frame: {e}"))?;
    let header = decoded.header;
    let task = Task::from_id(header.task_id)
        .with_context(|| format!("request frame: task id {} is not declared", header.task_id))?;
    let payload = |e| anyhow::anyhow!("request payload of `{}`: {e}", task.name());
    let request = match task {
        Task::Add => Request::Add(decoded.payload_as().map_err(payload)?),
        Task::AbiProbe => Request::Probe(decoded.payload_as().map_err(payload)?),
        Task::Crc32 => Request::Crc32(decoded.payload_as().map_err(payload)?),
        Task::FirX1 | Task::FirX64 | Task::FirX512 => {
            Request::Fir(decoded.payload_as().map_err(payload)?)
        }
    };
    Ok((header, task, request))
}

/// Decodes a response frame for `task`: its status and, when OK, the typed response.
pub fn decode_response(task: Task, frame: &[u8]) -> Result<(Header, Option<Response>)> {
    let decoded = decode_frame(frame).map_err(|e| anyhow::anyhow!("response frame: {e}"))?;
    let header = decoded.header;
    if header.status != Status::Ok {
        return Ok((header, None));
    }
    let payload = |e| anyhow::anyhow!("response payload of `{}`: {e}", task.name());
    let response = match task {
        Task::Add => Response::Add(decoded.payload_as().map_err(payload)?),
        Task::AbiProbe => Response::Probe(decoded.payload_as().map_err(payload)?),
        Task::Crc32 => Response::Crc32(decoded.payload_as().map_err(payload)?),
        Task::FirX1 | Task::FirX64 | Task::FirX512 => {
            Response::Fir(decoded.payload_as().map_err(payload)?)
        }
    };
    Ok((header, Some(response)))
}

/// The response as JSON.
pub fn response_json(response: &Response) -> serde_json::Value {
    let value = match response {
        Response::Add(r) => serde_json::to_value(r),
        Response::Probe(r) => serde_json::to_value(r),
        Response::Crc32(r) => serde_json::to_value(r),
        Response::Fir(r) => serde_json::to_value(r),
    };
    value.unwrap_or(serde_json::Value::Null)
}

/// Table-driven CRC-32 (IEEE 802.3, reflected), byte at a time.
fn reference_crc32(bytes: &[u8]) -> u32 {
    let mut table = [0u32; 256];
    for (index, entry) in table.iter_mut().enumerate() {
        *entry = (0..8).fold(index as u32, |c, _| {
            if c & 1 == 1 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            }
        });
    }
    !bytes.iter().fold(!0u32, |crc, &b| {
        table[((crc ^ u32::from(b)) & 0xFF) as usize] ^ (crc >> 8)
    })
}

/// FIR from its definition: triangular Q15 taps round(w·32768/72), per-pass perturbation
/// ((37p + 11n) mod 61) − 30, exact i64 convolution from zero history, round half up, clamp;
/// the floor of the mean over passes.
fn reference_fir(samples: &[i16; 32], passes: u32) -> [i16; 32] {
    let taps: Vec<i64> = (0..16i64)
        .map(|k| ((if k < 8 { k + 1 } else { 16 - k }) * 32768 + 36) / 72)
        .collect();
    let clamp = |v: i64| v.clamp(-32768, 32767);
    let mut totals = [0i64; 32];
    for pass in 0..i64::from(passes) {
        let input: Vec<i64> = (0..32)
            .map(|n| clamp(i64::from(samples[n]) + (pass * 37 + n as i64 * 11) % 61 - 30))
            .collect();
        for (n, total) in totals.iter_mut().enumerate() {
            let sum: i64 = (0..=n.min(15)).map(|k| taps[k] * input[n - k]).sum();
            *total += clamp((sum + 16384).div_euclid(32768));
        }
    }
    totals.map(|total| total.div_euclid(i64::from(passes.max(1))) as i16)
}

/// The expected response by the independent reference.
pub fn reference(task: Task, request: &Request) -> Result<Response> {
    Ok(match (task, request) {
        (Task::Add, Request::Add(r)) => Response::Add(AddResponse {
            value: ((i64::from(r.a) + i64::from(r.b)).rem_euclid(1 << 32) as u32) as i32,
        }),
        (Task::Crc32, Request::Crc32(r)) => Response::Crc32(Crc32Response {
            crc: reference_crc32(&r.block),
        }),
        (Task::AbiProbe, Request::Probe(r)) => {
            let mut encoded = [0u8; 64];
            let len = qf_abi::encode_payload(r, &mut encoded)
                .map_err(|e| anyhow::anyhow!("probe request: {e}"))?;
            Response::Probe(ProbeResponse {
                accepted: r.enabled,
                checksum: reference_crc32(&encoded[..len]),
            })
        }
        (task, Request::Fir(r)) if fir_passes(task).is_some() => Response::Fir(FirResponse {
            samples: reference_fir(&r.samples, fir_passes(task).unwrap_or(1)),
        }),
        (task, request) => bail!(
            "task `{}` does not take a{} request",
            task.name(),
            match request {
                Request::Add(_) => "n add",
                Request::Probe(_) => "n abi_probe",
                Request::Crc32(_) => " crc32",
                Request::Fir(_) => " FIR",
            }
        ),
    })
}

/// Outcome of one invocation: status OK and the response equal to the reference.
pub fn outcome_ok(task: Task, request: &Request, frame: &[u8]) -> Result<bool> {
    let (_, response) = decode_response(task, frame)?;
    Ok(match response {
        Some(response) => response == reference(task, request)?,
        None => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use qf_tasks::kernels;

    #[test]
    fn the_reference_agrees_with_the_kernels_on_random_inputs() {
        for seed in 0..40 {
            for task in Task::ALL {
                let request = random_request(task, seed);
                let kernel = match (task, request) {
                    (Task::Add, Request::Add(r)) => Response::Add(kernels::add(&r)),
                    (Task::AbiProbe, Request::Probe(r)) => Response::Probe(kernels::abi_probe(&r)),
                    (Task::Crc32, Request::Crc32(r)) => Response::Crc32(kernels::crc32(&r)),
                    (Task::FirX1, Request::Fir(r)) => Response::Fir(kernels::fir_x1(&r)),
                    (Task::FirX64, Request::Fir(r)) => Response::Fir(kernels::fir_x64(&r)),
                    (Task::FirX512, Request::Fir(r)) => Response::Fir(kernels::fir_x512(&r)),
                    _ => unreachable!("random_request matches the task"),
                };
                assert_eq!(
                    reference(task, &request).unwrap(),
                    kernel,
                    "{} seed {seed}",
                    task.name()
                );
            }
        }
        assert_eq!(reference_crc32(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn json_requests_name_the_task_and_type_on_error() {
        assert_eq!(
            request_from_json(Task::Add, r#"{"a": 2, "b": 3}"#).unwrap(),
            Request::Add(AddRequest { a: 2, b: 3 })
        );
        let err = format!(
            "{:#}",
            request_from_json(Task::Add, r#"{"a": 2}"#).unwrap_err()
        );
        assert!(
            err.contains("add") && err.contains("AddRequest") && err.contains("`b`"),
            "{err}"
        );
        assert!(task_by_name("mul")
            .unwrap_err()
            .to_string()
            .contains("fir_x64"));
    }

    /// The mismatch named the request as a Rust debug struct (`Crc32(Crc32Request { .. })`).
    #[test]
    fn a_request_of_another_task_is_named_in_words() {
        let request = random_request(Task::Crc32, 1);
        let error = reference(Task::Add, &request).unwrap_err().to_string();
        assert_eq!(error, "task `add` does not take a crc32 request");
    }
}
