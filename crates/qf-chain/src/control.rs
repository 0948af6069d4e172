//! The executor's one entry for frames from Linux: resident-chain control requests (reserved
//! task ids, [`qf_abi::chain`]) go to the [`ChainTable`], everything else to
//! [`qf_tasks::serve`] unchanged.
//!
//! A control request is recognised by its task id (bytes 8–11) before any decoding, then decoded
//! once with [`qf_abi::decode_frame`] like every frame. Every rejection is answered, as `serve`
//! answers: a response with the status and an empty payload, echoing the request's ids.

use qf_abi::chain::{ChainInstall, ChainListRequest, ChainOp, ChainRef, CONTROL_EFFECT};
use qf_abi::header::offset;
use qf_abi::{
    decode_frame, encode_frame, encode_frame_raw, AbiError, Header, MessageKind, Problem, Status,
};
use qf_tasks::{serve, Clock, Replay, Served};

use crate::table::{ChainExecutor, ChainTable};

/// Whether `request` names a control task id (read from the raw bytes; a frame too short to
/// have one is not).
pub fn is_control(request: &[u8]) -> bool {
    request
        .get(offset::TASK_ID..offset::TASK_ID + 4)
        .and_then(|bytes| bytes.try_into().ok())
        .is_some_and(|bytes| ChainOp::is_control(u32::from_be_bytes(bytes)))
}

/// Serves one frame from Linux: control requests change `table` through `executor`, other
/// frames are served by [`qf_tasks::serve`] with `clock` and `replay`. The response is written
/// to the front of `out`; `Err` only if `out` cannot hold a header.
pub fn serve_with_chains<C, E, const N: usize>(
    request: &[u8],
    out: &mut [u8],
    clock: &C,
    replay: &mut Replay<N>,
    table: &mut ChainTable,
    executor: &mut E,
) -> Result<Served, AbiError>
where
    C: Clock + ?Sized,
    E: ChainExecutor + ?Sized,
{
    if is_control(request) {
        control(request, out, table, executor)
    } else {
        serve(request, out, clock, replay)
    }
}

/// Serves one control request (a frame whose task id is in the control range).
pub fn control<E: ChainExecutor + ?Sized>(
    request: &[u8],
    out: &mut [u8],
    table: &mut ChainTable,
    executor: &mut E,
) -> Result<Served, AbiError> {
    let frame = match decode_frame(request) {
        Ok(frame) => frame,
        Err(error) => return reject(Header::salvage(request, error.status), error, out),
    };
    let header = frame.header;
    if header.kind != MessageKind::Request {
        let error = header_error(Status::Malformed, offset::KIND, "kind", Problem::WrongKind);
        return reject(header, error, out);
    }
    let Some(op) = ChainOp::from_task_id(header.task_id) else {
        let problem = Problem::NoSuchTask {
            task_id: header.task_id,
        };
        let error = header_error(Status::UnknownTask, offset::TASK_ID, "task_id", problem);
        return reject(header, error, out);
    };
    if header.effect != CONTROL_EFFECT {
        let problem = Problem::EffectMismatch {
            declared: CONTROL_EFFECT.code(),
            found: header.effect.code(),
        };
        let error = header_error(Status::Malformed, offset::EFFECT, "effect", problem);
        return reject(header, error, out);
    }
    let ok = header.response_to(Status::Ok);
    let outcome = match op {
        ChainOp::Install => frame.payload_as::<ChainInstall>().and_then(|install| {
            table.install(&install, executor)?;
            let chain_id = install.chain_id;
            encode_frame(&ok, &ChainRef { chain_id }, out)
        }),
        ChainOp::Start => frame.payload_as::<ChainRef>().and_then(|chain| {
            table.start(chain.chain_id, executor)?;
            encode_frame(&ok, &chain, out)
        }),
        ChainOp::Stop => frame.payload_as::<ChainRef>().and_then(|chain| {
            table.stop(chain.chain_id, executor)?;
            encode_frame(&ok, &chain, out)
        }),
        ChainOp::Remove => frame.payload_as::<ChainRef>().and_then(|chain| {
            table.remove(chain.chain_id, executor)?;
            encode_frame(&ok, &chain, out)
        }),
        ChainOp::Status => frame.payload_as::<ChainRef>().and_then(|chain| {
            let status = table.status(chain.chain_id, executor)?;
            encode_frame(&ok, &status, out)
        }),
        ChainOp::List => frame
            .payload_as::<ChainListRequest>()
            .and_then(|_| encode_frame(&ok, &table.list(executor), out)),
    };
    match outcome {
        Ok(len) => Ok(Served {
            len,
            status: Status::Ok,
            task: None,
            compute_ns: 0,
            rejection: None,
        }),
        Err(error) => reject(header, error, out),
    }
}

fn header_error(status: Status, at: usize, field: &'static str, problem: Problem) -> AbiError {
    AbiError {
        status,
        offset: at,
        field,
        problem,
    }
}

/// A payload-less response carrying `error.status`.
fn reject(request: Header, error: AbiError, out: &mut [u8]) -> Result<Served, AbiError> {
    let len = encode_frame_raw(&request.response_to(error.status), &[], out)?;
    Ok(Served {
        len,
        status: error.status,
        task: None,
        compute_ns: 0,
        rejection: Some(error),
    })
}
