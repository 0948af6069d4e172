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
//!
//! On a serial line (`qf_execution::serial`, `qf-mcu-emu --serial`, the Zephyr executor's
//! `CONFIG_QFABRIC_EXECUTOR_UART`) the bytes are the same, and the receiver finds messages again
//! after lost or corrupted bytes with [`Deframer`]:
//!
//! * a message's length must be 36..=1032 (a header, at most a whole frame and its trailer) and
//!   its body must begin with the frame magic `QFAB`; otherwise the receiver **hunts**: it drops
//!   one byte at a time until the last six bytes are a valid length followed by `QFAB`, and reads
//!   that message (each bad length or magic counts one resynchronisation, each dropped byte one
//!   discarded byte);
//! * a line silent for [`SERIAL_GAP`] in the middle of a message ends it: the partial message is
//!   dropped (counted as truncated) and the next byte is read as a length prefix. Senders write
//!   each message without pauses, and a request/reply protocol leaves the line idle between
//!   calls, so a lost byte costs the one call it was in;
//! * a body that passes both checks and still does not decode is answered by the dispatcher with
//!   its rejection status (MALFORMED, VERSION_MISMATCH, ...), as on a socket.
//!
//! Neither the framing nor ABI v1 carries a checksum: corruption that leaves a well-formed frame
//! (a flipped bit in a payload) is not detected on the line. The caller matches each reply to its
//! request by invocation id and compares the outputs it can check.
//!
//! **Frames sent unasked** (an MCU's resident-chain results): a client that wants them sends the
//! **subscribe** message, an empty body (length 0), and the endpoint answers with an empty
//! body. From then on the endpoint may send this client, between or before its replies, frames
//! nobody asked for, each with the top bit of its length prefix set ([`UNASKED`]): a client that
//! never subscribed never sees one, and one that did tells them from replies by that bit. An
//! endpoint that predates subscriptions answers the empty body with a MALFORMED response frame,
//! which tells the client it delivers nothing unasked.

use qf_abi::{HEADER_LEN, MAX_FRAME_LEN};
use std::io::{self, Read, Write};

/// Bytes of the length prefix.
pub const PREFIX_LEN: usize = 2;
/// Bytes of the optional compute trailer.
pub const TRAILER_LEN: usize = 8;
/// Largest message body: a whole frame plus the trailer.
pub const MAX_MESSAGE_LEN: usize = MAX_FRAME_LEN + TRAILER_LEN;
/// The length prefix's flag of a frame sent unasked to a subscribed client.
pub const UNASKED: u16 = 0x8000;

/// One message read by [`read_any`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message {
    /// The body is `buf[..len]`.
    pub len: usize,
    /// Sent unasked (length prefix with [`UNASKED`]).
    pub unasked: bool,
}

/// Writes one frame sent unasked (the prefix carries [`UNASKED`]; no trailer).
pub fn write_unasked(stream: &mut impl Write, frame: &[u8]) -> io::Result<()> {
    if frame.len() > MAX_FRAME_LEN {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("frame of {} bytes exceeds {MAX_FRAME_LEN}", frame.len()),
        ));
    }
    let mut message = [0u8; PREFIX_LEN + MAX_FRAME_LEN];
    message[..PREFIX_LEN].copy_from_slice(&(frame.len() as u16 | UNASKED).to_be_bytes());
    message[PREFIX_LEN..PREFIX_LEN + frame.len()].copy_from_slice(frame);
    stream.write_all(&message[..PREFIX_LEN + frame.len()])?;
    stream.flush()
}

/// Reads one message of a subscribed client: a reply, or a frame sent unasked; `Ok(None)` on a
/// clean end of stream before a prefix.
pub fn read_any(
    stream: &mut impl Read,
    buf: &mut [u8; MAX_MESSAGE_LEN],
) -> io::Result<Option<Message>> {
    let mut prefix = [0u8; PREFIX_LEN];
    match stream.read_exact(&mut prefix) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let raw = u16::from_be_bytes(prefix);
    let unasked = raw & UNASKED != 0;
    let len = usize::from(raw & !UNASKED);
    let limit = if unasked {
        MAX_FRAME_LEN
    } else {
        MAX_MESSAGE_LEN
    };
    if len > limit {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("message length {len} exceeds {limit}"),
        ));
    }
    stream.read_exact(&mut buf[..len])?;
    Ok(Some(Message { len, unasked }))
}

/// Shortest message body: one frame header.
pub const MIN_MESSAGE_LEN: usize = HEADER_LEN;
/// On a serial line, silence this long inside a message ends it ([`Deframer::idle`]): longer than
/// a sender's stalls inside a message (QEMU's emulated UART on a loaded host stalls over 20 ms),
/// far shorter than a call's time-out, after which the next request comes.
pub const SERIAL_GAP: std::time::Duration = std::time::Duration::from_millis(100);

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

/// What a [`Deframer`] dropped so far.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct DeframeCounters {
    /// Whole messages delivered.
    pub messages: u64,
    /// Length prefixes outside 36..=1032.
    pub bad_lengths: u64,
    /// Bodies that did not begin with `QFAB`.
    pub bad_magic: u64,
    /// Messages ended by a silent line before their last byte.
    pub truncated: u64,
    /// Bytes dropped while hunting for the next message.
    pub discarded_bytes: u64,
}

/// Where a [`Deframer`] is in the byte stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DeframeState {
    /// `have` bytes of a length prefix (0 or 1).
    Prefix { have: usize },
    /// `have` of `len` body bytes.
    Body { len: usize, have: usize },
    /// Looking for a valid prefix followed by `QFAB` in the last six bytes.
    Hunt,
    /// A message was delivered; the next byte starts a prefix.
    Delivered,
}

/// Finds [`read_message`]'s messages in a byte stream that may lose or corrupt bytes (a serial
/// line): the rules are the module's. Bytes go in one at a time with [`Deframer::push`];
/// [`Deframer::idle`] says the line was silent for [`SERIAL_GAP`]. No I/O, no allocation.
#[derive(Debug, Clone)]
pub struct Deframer {
    state: DeframeState,
    prefix: [u8; PREFIX_LEN],
    body: [u8; MAX_MESSAGE_LEN],
    /// The last bytes seen while hunting (`window_len` of them, oldest first).
    window: [u8; PREFIX_LEN + 4],
    window_len: usize,
    counters: DeframeCounters,
}

impl Default for Deframer {
    fn default() -> Self {
        Self::new()
    }
}

impl Deframer {
    pub const fn new() -> Self {
        Deframer {
            state: DeframeState::Prefix { have: 0 },
            prefix: [0; PREFIX_LEN],
            body: [0; MAX_MESSAGE_LEN],
            window: [0; PREFIX_LEN + 4],
            window_len: 0,
            counters: DeframeCounters {
                messages: 0,
                bad_lengths: 0,
                bad_magic: 0,
                truncated: 0,
                discarded_bytes: 0,
            },
        }
    }

    /// What was dropped so far.
    pub fn counters(&self) -> DeframeCounters {
        self.counters
    }

    /// Whether no message is under way (the next byte would start a length prefix).
    pub fn at_boundary(&self) -> bool {
        matches!(
            self.state,
            DeframeState::Prefix { have: 0 } | DeframeState::Delivered
        )
    }

    /// The line was silent for [`SERIAL_GAP`]: a partial message is dropped, a hunt ends, and the
    /// next byte starts a length prefix.
    pub fn idle(&mut self) {
        match self.state {
            DeframeState::Body { .. } => self.counters.truncated += 1,
            DeframeState::Prefix { have } => self.counters.discarded_bytes += have as u64,
            DeframeState::Hunt => self.counters.discarded_bytes += self.window_len as u64,
            DeframeState::Delivered => {}
        }
        self.state = DeframeState::Prefix { have: 0 };
    }

    /// Takes one byte; returns the body of a message it completed (valid until the next call).
    pub fn push(&mut self, byte: u8) -> Option<&[u8]> {
        match self.state {
            DeframeState::Delivered => {
                self.state = DeframeState::Prefix { have: 0 };
                self.push(byte)
            }
            DeframeState::Prefix { have } => {
                self.prefix[have] = byte;
                if have + 1 < PREFIX_LEN {
                    self.state = DeframeState::Prefix { have: have + 1 };
                    return None;
                }
                let len = usize::from(u16::from_be_bytes(self.prefix));
                if (MIN_MESSAGE_LEN..=MAX_MESSAGE_LEN).contains(&len) {
                    self.state = DeframeState::Body { len, have: 0 };
                } else {
                    self.counters.bad_lengths += 1;
                    self.start_hunt(&self.prefix.clone());
                }
                None
            }
            DeframeState::Body { len, have } => {
                self.body[have] = byte;
                let have = have + 1;
                if have == qf_abi::header::MAGIC.len() && self.body[..have] != qf_abi::header::MAGIC
                {
                    self.counters.bad_magic += 1;
                    let mut seen = [0u8; PREFIX_LEN + 4];
                    seen[..PREFIX_LEN].copy_from_slice(&self.prefix);
                    seen[PREFIX_LEN..].copy_from_slice(&self.body[..4]);
                    self.start_hunt(&seen);
                    return None;
                }
                if have < len {
                    self.state = DeframeState::Body { len, have };
                    return None;
                }
                self.counters.messages += 1;
                self.state = DeframeState::Delivered;
                Some(&self.body[..len])
            }
            DeframeState::Hunt => {
                self.shift_in(byte);
                self.try_sync();
                None
            }
        }
    }

    /// Starts hunting with `seen`, the bytes that failed, still candidates for a message start
    /// from their second byte on.
    fn start_hunt(&mut self, seen: &[u8]) {
        self.state = DeframeState::Hunt;
        self.window_len = 0;
        for &byte in seen {
            self.shift_in(byte);
        }
        // The failed prefix itself is no start; a later one in `seen` may be.
        self.shift_out_first();
        self.try_sync();
    }

    fn shift_in(&mut self, byte: u8) {
        if self.window_len == self.window.len() {
            self.shift_out_first();
        }
        self.window[self.window_len] = byte;
        self.window_len += 1;
    }

    fn shift_out_first(&mut self) {
        if self.window_len > 0 {
            self.window.copy_within(1..self.window_len, 0);
            self.window_len -= 1;
            self.counters.discarded_bytes += 1;
        }
    }

    /// Leaves the hunt when the window is a valid prefix and `QFAB`.
    fn try_sync(&mut self) {
        if self.window_len < self.window.len() {
            return;
        }
        let len = usize::from(u16::from_be_bytes([self.window[0], self.window[1]]));
        if (MIN_MESSAGE_LEN..=MAX_MESSAGE_LEN).contains(&len)
            && self.window[PREFIX_LEN..] == qf_abi::header::MAGIC
        {
            self.prefix.copy_from_slice(&self.window[..PREFIX_LEN]);
            self.body[..4].copy_from_slice(&self.window[PREFIX_LEN..]);
            self.window_len = 0;
            self.state = DeframeState::Body { len, have: 4 };
        }
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

    fn framed(invocation: u64) -> Vec<u8> {
        let mut frame = [0u8; MAX_FRAME_LEN];
        let len = encode_frame(
            &Header::request(1, EffectClass::Pure, invocation, 0),
            &qf_tasks::AddRequest { a: 1, b: 2 },
            &mut frame,
        )
        .unwrap();
        let mut stream = Vec::new();
        write_message(&mut stream, &frame[..len], Some(invocation)).unwrap();
        stream
    }

    /// Feeds `bytes` (an idle line where `None`), returning the invocation ids of the messages.
    fn deframe(deframer: &mut Deframer, bytes: &[Option<u8>]) -> Vec<u64> {
        let mut found = Vec::new();
        for byte in bytes {
            match byte {
                None => deframer.idle(),
                Some(byte) => {
                    if let Some(body) = deframer.push(*byte) {
                        // A damaged message can still be delivered; it shows as u64::MAX.
                        let id = split_reply(body)
                            .ok()
                            .and_then(|(frame, _)| qf_abi::decode_frame(frame).ok())
                            .map_or(u64::MAX, |frame| frame.header.invocation_id);
                        found.push(id);
                    }
                }
            }
        }
        found
    }

    fn line(chunks: &[&[u8]]) -> Vec<Option<u8>> {
        chunks
            .iter()
            .flat_map(|c| c.iter().copied().map(Some))
            .collect()
    }

    #[test]
    fn a_deframer_reads_a_clean_stream_as_read_message_does() {
        let mut deframer = Deframer::new();
        let stream: Vec<u8> = (1..=5).flat_map(framed).collect();
        assert_eq!(
            deframe(&mut deframer, &line(&[&stream])),
            vec![1, 2, 3, 4, 5]
        );
        let c = deframer.counters();
        assert_eq!(
            (c.messages, c.bad_lengths, c.bad_magic, c.discarded_bytes),
            (5, 0, 0, 0)
        );
    }

    #[test]
    fn a_deframer_hunts_past_garbage_and_bad_lengths() {
        let mut deframer = Deframer::new();
        // Noise (including a lone `QFAB` without a valid length before it), a length of 0xffff,
        // a prefix whose body is not a frame, then two good messages back to back.
        let noise: &[u8] = b"\x00\x01noise QFAB \xff\xff\x00\x40XXXXXXXX";
        let stream = line(&[noise, &framed(7), &framed(8)]);
        assert_eq!(deframe(&mut deframer, &stream), vec![7, 8]);
        let c = deframer.counters();
        assert_eq!(c.bad_lengths + c.bad_magic, 1, "one hunt: {c:?}");
        assert_eq!(c.discarded_bytes as usize, noise.len(), "{c:?}");
    }

    #[test]
    fn a_lost_byte_costs_only_its_own_message_when_the_line_goes_idle() {
        let mut deframer = Deframer::new();
        let mut first = framed(1);
        first.remove(20);
        let mut stream = line(&[&first]);
        stream.push(None);
        stream.extend(line(&[&framed(2), &framed(3)]));
        assert_eq!(deframe(&mut deframer, &stream), vec![2, 3]);
        assert_eq!(deframer.counters().truncated, 1);
        // Without the idle line, the damaged message swallows the start of the next one, and
        // the hunt finds the one after.
        let mut deframer = Deframer::new();
        let stream = line(&[&first, &framed(2), &framed(3)]);
        let found = deframe(&mut deframer, &stream);
        assert_eq!(found.last(), Some(&3), "{found:?}");
        assert!(!found.contains(&2), "{found:?}");
    }

    #[test]
    fn a_deframer_recovers_from_random_damage() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(25);
        let mut deframer = Deframer::new();
        let mut recovered = 0;
        for round in 0..500u64 {
            let mut message = framed(round);
            match rng.gen_range(0..4) {
                0 => {
                    let at = rng.gen_range(0..message.len());
                    message.remove(at);
                }
                1 => {
                    let at = rng.gen_range(0..message.len());
                    message[at] ^= 1 << rng.gen_range(0..8);
                }
                2 => {
                    let noise: Vec<u8> = (0..rng.gen_range(1..40)).map(|_| rng.gen()).collect();
                    message.splice(0..0, noise);
                }
                _ => {}
            }
            // Every call ends with an idle line (the caller waits for the reply); the next,
            // undamaged message must always come through.
            let mut stream = line(&[&message]);
            stream.push(None);
            stream.extend(line(&[&framed(1_000_000 + round)]));
            stream.push(None);
            let found = deframe(&mut deframer, &stream);
            assert_eq!(
                found.last(),
                Some(&(1_000_000 + round)),
                "round {round}: {found:?}"
            );
            recovered += 1;
        }
        assert_eq!(recovered, 500);
    }

    #[test]
    fn frames_sent_unasked_are_flagged_and_only_a_subscriber_reads_them() {
        let frame = b"0123456789abcdef0123456789abcdef0123";
        let mut stream = Vec::new();
        write_unasked(&mut stream, frame).unwrap();
        write_message(&mut stream, frame, Some(7)).unwrap();
        let mut buf = [0u8; MAX_MESSAGE_LEN];
        let mut reader = &stream[..];
        let first = read_any(&mut reader, &mut buf).unwrap().unwrap();
        assert_eq!((first.len, first.unasked), (frame.len(), true));
        assert_eq!(&buf[..first.len], frame);
        let second = read_any(&mut reader, &mut buf).unwrap().unwrap();
        assert_eq!(
            (second.len, second.unasked),
            (frame.len() + TRAILER_LEN, false)
        );
        assert!(read_any(&mut reader, &mut buf).unwrap().is_none());
        // A client that never subscribed takes the flagged prefix for an oversized message.
        assert!(read_message(&mut &stream[..], &mut buf).is_err());
        assert!(write_unasked(&mut Vec::new(), &[0; MAX_FRAME_LEN + 1]).is_err());
        // An unasked frame carries no trailer: longer than a frame is refused.
        let long = ((MAX_FRAME_LEN as u16 + 1) | UNASKED).to_be_bytes();
        assert!(read_any(&mut &long[..], &mut buf).is_err());
    }
}
