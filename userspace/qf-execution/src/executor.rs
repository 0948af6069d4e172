//! The Linux executor: a persistent process that serves request frames from its input stream
//! (the agent's pipe) with `qf-tasks`, answering each with the response frame and its own compute
//! time measured on CLOCK_MONOTONIC (see [`crate::wire`] for the framing). Never a process per
//! call: the paper's earlier release lost its Linux numbers to exactly that (Section VI-F).

use crate::wire::{read_message, write_message, MAX_MESSAGE_LEN};
use qf_abi::MAX_FRAME_LEN;
use qf_tasks::{serve, Replay};
use std::io::{self, Read, Write};

/// CLOCK_MONOTONIC in nanoseconds, the executor's compute clock.
pub fn monotonic_clock() -> u64 {
    crate::qfabric_dev::monotonic_ns()
}

/// Serves requests until the input closes. Returns the number served.
pub fn serve_stream(input: &mut impl Read, output: &mut impl Write) -> io::Result<u64> {
    let mut replay: Replay = Replay::new();
    let mut request = [0u8; MAX_MESSAGE_LEN];
    let mut response = [0u8; MAX_FRAME_LEN];
    let mut served = 0u64;
    while let Some(len) = read_message(input, &mut request)? {
        let result = serve(
            &request[..len],
            &mut response,
            &monotonic_clock,
            &mut replay,
        )
        .map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("serving a request: {e}"),
            )
        })?;
        write_message(output, &response[..result.len], Some(result.compute_ns))?;
        served += 1;
    }
    Ok(served)
}
