//! Stream framing shared by the Linux executor pipe and the MCU endpoint's Unix socket.
//!
//! * **Request**: a `u16` big-endian length `L`, then `L` bytes holding exactly one QFabric frame
//!   (ABI v1: 36-byte header + payload, at most 1024 bytes).
//! * **Reply**: a `u16` big-endian length `L`, then `L` bytes: one response frame, optionally
//!   followed by an 8-byte **compute trailer**, the executor's own compute time for the request in
//!   nanoseconds as a `u64` big-endian. The frame's header gives its length
//!   (36 + payload length), so the trailer is whatever follows it: 0 bytes (compute unknown) or
//!   exactly 8. Any other remainder is a protocol error.
//!
//! One reply per request, in order. The Linux executor always sends the trailer; an MCU endpoint
//! that cannot time itself may omit it.

use qf_abi::{HEADER_LEN, MAX_FRAME_LEN};
use std::io::{self, Read, Write};

/// Bytes of the length prefix.
pub const PREFIX_LEN: usize = 2;
/// Bytes of the optional compute trailer.
pub const TRAILER_LEN: usize = 8;
/// Largest message body: a whole frame plus the trailer.
pub const MAX_MESSAGE_LEN: usize = MAX_FRAME_LEN + TRAILER_LEN;

/// Writes one length-prefixed message (a frame, and for replies an optional trailer).
pub fn write_message(
    stream: &mut impl Write,
    frame: &[u8],
    compute_ns: Option<u64>,
) -> io::Result<()> {
    let trailer = compute_ns.map(u64::to_be_bytes);
    let body_len = frame.len() + trailer.map_or(0, |t| t.len());
    if body_len > MAX_MESSAGE_LEN {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("message of {body_len} bytes exceeds {MAX_MESSAGE_LEN}"),
        ));
    }
    let mut message = [0u8; PREFIX_LEN + MAX_MESSAGE_LEN];
    message[..PREFIX_LEN].copy_from_slice(&(body_len as u16).to_be_bytes());
    message[PREFIX_LEN..PREFIX_LEN + frame.len()].copy_from_slice(frame);
    if let Some(trailer) = trailer {
        message[PREFIX_LEN + frame.len()..PREFIX_LEN + body_len].copy_from_slice(&trailer);
    }
    stream.write_all(&message[..PREFIX_LEN + body_len])?;
    stream.flush()
}

/// Reads one message body into `buf`; `Ok(None)` on a clean end of stream before a prefix.
pub fn read_message(
    stream: &mut impl Read,
    buf: &mut [u8; MAX_MESSAGE_LEN],
) -> io::Result<Option<usize>> {
    let mut prefix = [0u8; PREFIX_LEN];
    match stream.read_exact(&mut prefix) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = usize::from(u16::from_be_bytes(prefix));
    if len > MAX_MESSAGE_LEN {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("message length {len} exceeds {MAX_MESSAGE_LEN}"),
        ));
    }
    stream.read_exact(&mut buf[..len])?;
    Ok(Some(len))
}

/// Splits a reply body into the response frame and the compute trailer (if present).
pub fn split_reply(body: &[u8]) -> io::Result<(&[u8], Option<u64>)> {
    if body.len() < HEADER_LEN {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("reply of {} bytes is shorter than a header", body.len()),
        ));
    }
    // Payload length: header bytes 32..34, big-endian.
    let frame_len = HEADER_LEN + usize::from(u16::from_be_bytes([body[32], body[33]]));
    match body.len().checked_sub(frame_len) {
        Some(0) => Ok((body, None)),
        Some(TRAILER_LEN) => {
            let mut trailer = [0u8; TRAILER_LEN];
            trailer.copy_from_slice(&body[frame_len..]);
            Ok((&body[..frame_len], Some(u64::from_be_bytes(trailer))))
        }
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("reply of {} bytes holds a {frame_len}-byte frame and a remainder that is not an 8-byte compute trailer", body.len()),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qf_abi::{encode_frame, EffectClass, Header};

    #[test]
    fn replies_with_and_without_a_trailer_split_correctly() {
        let mut frame = [0u8; MAX_FRAME_LEN];
        let len = encode_frame(
            &Header::request(1, EffectClass::Pure, 9, 0),
            &qf_tasks::AddRequest { a: 1, b: 2 },
            &mut frame,
        )
        .unwrap();
        for compute in [None, Some(1234u64)] {
            let mut stream = Vec::new();
            write_message(&mut stream, &frame[..len], compute).unwrap();
            let mut buf = [0u8; MAX_MESSAGE_LEN];
            let body_len = read_message(&mut &stream[..], &mut buf).unwrap().unwrap();
            let (reply, trailer) = split_reply(&buf[..body_len]).unwrap();
            assert_eq!((reply, trailer), (&frame[..len], compute));
        }
        let mut bad = frame[..len].to_vec();
        bad.extend_from_slice(&[0, 1, 2]);
        assert!(split_reply(&bad).is_err());
        assert!(read_message(&mut &[][..], &mut [0u8; MAX_MESSAGE_LEN])
            .unwrap()
            .is_none());
        assert!(read_message(&mut &[0xff, 0xff][..], &mut [0u8; MAX_MESSAGE_LEN]).is_err());
    }
}
