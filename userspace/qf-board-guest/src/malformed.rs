//! Malformed frames from Linux, one of each kind the ABI names: a bad header (magic, version,
//! kind, a header cut short), a bad payload length (longer and shorter than the frame), an
//! unknown task, a replayed invocation and a stale epoch. Each must be answered with its status,
//! byte for byte as `qf_tasks::serve` answers it, and the MCU must keep serving afterwards.

use anyhow::{bail, Result};
use qf_abi::{header::offset, Status, MAX_FRAME_LEN};

use crate::traffic::Mirror;

/// One malformed frame: its name, how it is made from a valid `add` request, and the status
/// the MCU must answer it with.
pub struct Case {
    pub name: &'static str,
    pub status: Status,
    /// Makes the frame from a fresh valid request (`frame`, its length); returns the length.
    make: fn(&mut [u8; MAX_FRAME_LEN], usize) -> usize,
}

fn put_u16(frame: &mut [u8], at: usize, value: u16) {
    frame[at..at + 2].copy_from_slice(&value.to_be_bytes());
}

fn put_u32(frame: &mut [u8], at: usize, value: u32) {
    frame[at..at + 4].copy_from_slice(&value.to_be_bytes());
}

fn payload_len(frame: &[u8]) -> u16 {
    u16::from_be_bytes([frame[offset::PAYLOAD_LEN], frame[offset::PAYLOAD_LEN + 1]])
}

/// Every case, in the order they are sent. `replayed` and `stale` need the request before them
/// (they resend it, or send it with an older epoch): [`run`] handles them.
pub const CASES: &[Case] = &[
    Case {
        name: "bad-magic",
        status: Status::Malformed,
        make: |f, n| {
            f[offset::MAGIC] = b'X';
            n
        },
    },
    Case {
        name: "bad-version",
        status: Status::VersionMismatch,
        make: |f, n| {
            f[offset::VERSION] = 2;
            n
        },
    },
    Case {
        name: "response-kind",
        status: Status::Malformed,
        make: |f, n| {
            f[offset::KIND] = 2;
            n
        },
    },
    Case {
        name: "header-cut-short",
        status: Status::Malformed,
        make: |_, _| 20,
    },
    Case {
        name: "payload-length-too-long",
        status: Status::Malformed,
        make: |f, n| {
            let len = payload_len(&f[..]);
            put_u16(&mut f[..], offset::PAYLOAD_LEN, len + 1);
            n
        },
    },
    Case {
        name: "payload-length-too-short",
        status: Status::Malformed,
        make: |f, n| {
            let len = payload_len(&f[..]);
            put_u16(&mut f[..], offset::PAYLOAD_LEN, len - 1);
            n
        },
    },
    Case {
        name: "unknown-task",
        status: Status::UnknownTask,
        make: |f, n| {
            put_u32(&mut f[..], offset::TASK_ID, 0xdead);
            n
        },
    },
    Case {
        name: "replayed-invocation",
        status: Status::Duplicate,
        make: |_, n| n,
    },
    Case {
        name: "stale-epoch",
        status: Status::Stale,
        make: |_, n| n,
    },
];

/// Sends every case through `exchange` (which carries one frame, checks the reply against the
/// mirror and returns it) and checks each reply's status; then a valid request. Returns the
/// summary line.
pub fn run(
    mirror: &mut Mirror,
    epoch: u32,
    mut exchange: impl FnMut(&mut Mirror, &[u8], &str) -> Result<Vec<u8>>,
) -> Result<String> {
    if epoch == 0 {
        bail!("malformed: --epoch must be at least 1 (the stale case sends epoch - 1)");
    }
    let mut frame = [0u8; MAX_FRAME_LEN];
    let mut answered = Vec::new();
    for case in CASES {
        let n = mirror.request(0, &mut frame)?;
        let sent = match case.name {
            // The valid request first, then the same bytes again.
            "replayed-invocation" => {
                exchange(mirror, &frame[..n], "replayed-invocation: the original")?;
                n
            }
            // A request of the current epoch first, then one of the epoch before.
            "stale-epoch" => {
                exchange(mirror, &frame[..n], "stale-epoch: the current epoch")?;
                let n = mirror.request(0, &mut frame)?;
                put_u32(&mut frame[..], offset::EPOCH, epoch - 1);
                n
            }
            _ => (case.make)(&mut frame, n),
        };
        let reply = exchange(mirror, &frame[..sent], case.name)?;
        let status = reply
            .get(offset::STATUS)
            .copied()
            .and_then(Status::from_code);
        if status != Some(case.status) {
            bail!(
                "{}: answered with status {status:?}, expected {}",
                case.name,
                case.status.name()
            );
        }
        answered.push(format!("{} {}", case.name, case.status.name()));
    }
    let n = mirror.request(0, &mut frame)?;
    let reply = exchange(
        mirror,
        &frame[..n],
        "valid request after the malformed ones",
    )?;
    if reply.get(offset::STATUS) != Some(&Status::Ok.code()) {
        bail!("the valid request after the malformed ones was not answered OK");
    }
    Ok(format!(
        "malformed: {} frames each answered with its status as qf_tasks::serve answers it ({}); \
         a valid request after them answered OK",
        CASES.len(),
        answered.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The MCU's side, here: the mirror's own dispatcher (a fresh replay window).
    #[test]
    fn every_case_gets_the_status_it_is_named_for_from_qf_tasks_serve() {
        let epoch = 5;
        let mut mcu = Mirror::new(epoch);
        let mut mirror = Mirror::new(epoch);
        let summary = run(&mut mirror, epoch, |_, request, _| {
            let mut out = [0u8; MAX_FRAME_LEN];
            let n = mcu.expect(request, &mut out)?;
            Ok(out[..n].to_vec())
        })
        .unwrap();
        assert!(
            summary.contains("replayed-invocation duplicate"),
            "{summary}"
        );
        assert!(
            summary.contains("bad-version version_mismatch"),
            "{summary}"
        );
    }

    #[test]
    fn a_dispatcher_that_answers_everything_ok_is_caught() {
        let mut mirror = Mirror::new(5);
        let e = run(&mut mirror, 5, |m, request, _| {
            let mut out = [0u8; MAX_FRAME_LEN];
            let n = m.expect(request, &mut out)?;
            out[offset::STATUS] = 0;
            Ok(out[..n].to_vec())
        })
        .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("bad-magic: answered with status Some(Ok)"),
            "{e}"
        );
    }
}
