//! Garbage from the MCU: the `garbage N` fault knob sends N frames that are not replies to
//! anything, so the Linux receive path (`qfabric_rpmsg`'s callback, `rpmsg_char`) is shown to
//! survive whatever a broken or hostile MCU puts on the channel.
//!
//! The frames cycle through five kinds, so a test that knows N knows what Linux must count:
//! four kinds that are no QFabric response (`malformed` in `/dev/qfabricN`'s counters) and one
//! well-formed response nobody asked for (queued for `read()` or dropped when the queue is full).
//! The bytes come from a fixed-seed generator: two runs send the same frames.

use crate::rpmsg::MAX_PAYLOAD;
use qf_abi::header::{offset, HEADER_LEN, MAGIC, PROTOCOL_VERSION};
use qf_abi::MessageKind;

/// What a garbage frame is, as Linux must classify it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Random bytes, any length from 0 to the payload limit; never starts with the magic.
    Noise,
    /// The magic followed by fewer bytes than a header.
    Truncated,
    /// A whole response header with a protocol version Linux does not speak.
    BadVersion,
    /// A well-formed request: the MCU never sends requests to Linux.
    Request,
    /// A well-formed response with random task and invocation ids and payload.
    StrayResponse,
}

impl Kind {
    const CYCLE: [Kind; 5] = [
        Kind::Noise,
        Kind::Truncated,
        Kind::BadVersion,
        Kind::Request,
        Kind::StrayResponse,
    ];

    /// The kind of the `index`-th frame.
    pub fn of(index: u64) -> Kind {
        Kind::CYCLE[(index % 5) as usize]
    }

    /// Whether Linux must see it as something other than a QFabric response.
    pub fn is_malformed(self) -> bool {
        self != Kind::StrayResponse
    }
}

/// splitmix64: small, fixed-seed, good enough to spread bytes and lengths.
struct Bytes(u64);

impl Bytes {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound as u64) as usize
    }

    fn fill(&mut self, out: &mut [u8]) {
        for byte in out {
            *byte = self.next() as u8;
        }
    }
}

/// Writes the `index`-th garbage frame into `out` (at least [`MAX_PAYLOAD`] bytes) and returns
/// its length and kind.
pub fn frame(index: u64, out: &mut [u8]) -> (usize, Kind) {
    let mut bytes = Bytes(index.wrapping_mul(0x2545_f491_4f6c_dd1d) ^ 0x5146_4142);
    let kind = Kind::of(index);
    let len = match kind {
        Kind::Noise => bytes.below(MAX_PAYLOAD + 1),
        Kind::Truncated => MAGIC.len() + bytes.below(HEADER_LEN - MAGIC.len()),
        _ => HEADER_LEN + bytes.below(MAX_PAYLOAD - HEADER_LEN + 1),
    };
    let out = &mut out[..len];
    bytes.fill(out);
    match kind {
        Kind::Noise => {
            if let Some(first) = out.first_mut() {
                if *first == MAGIC[0] {
                    *first = !MAGIC[0];
                }
            }
        }
        Kind::Truncated => out[..MAGIC.len()].copy_from_slice(&MAGIC),
        Kind::BadVersion | Kind::Request | Kind::StrayResponse => {
            out[..MAGIC.len()].copy_from_slice(&MAGIC);
            out[offset::VERSION] = if kind == Kind::BadVersion {
                PROTOCOL_VERSION.wrapping_add(1 + bytes.below(254) as u8)
            } else {
                PROTOCOL_VERSION
            };
            out[offset::KIND] = if kind == Kind::Request {
                MessageKind::Request.code()
            } else {
                MessageKind::Response.code()
            };
        }
    }
    (len, kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classify(frame: &[u8]) -> &'static str {
        // What `qfabric_rpmsg` does (linux-driver/qfabric_rpmsg/abi.rs): a response is at least
        // a header, with the magic, version 1 and message type 2.
        if frame.len() >= HEADER_LEN
            && frame[..4] == MAGIC
            && frame[offset::VERSION] == PROTOCOL_VERSION
            && frame[offset::KIND] == MessageKind::Response.code()
        {
            "response"
        } else {
            "malformed"
        }
    }

    #[test]
    fn every_kind_is_what_linux_must_count_it_as() {
        let mut out = [0u8; MAX_PAYLOAD];
        let mut lengths = std::collections::BTreeSet::new();
        for index in 0..5000 {
            let (len, kind) = frame(index, &mut out);
            assert!(len <= MAX_PAYLOAD, "frame {index}: {len} bytes");
            let expected = if kind.is_malformed() {
                "malformed"
            } else {
                "response"
            };
            assert_eq!(classify(&out[..len]), expected, "frame {index} ({kind:?})");
            lengths.insert(len);
        }
        // Lengths spread from empty to the payload limit.
        assert!(lengths.contains(&0) || lengths.iter().any(|&l| l < 4));
        assert!(lengths.len() > 300, "{} distinct lengths", lengths.len());
    }

    #[test]
    fn the_same_index_gives_the_same_bytes() {
        let (mut a, mut b) = ([0u8; MAX_PAYLOAD], [0u8; MAX_PAYLOAD]);
        let (la, ka) = frame(42, &mut a);
        let (lb, kb) = frame(42, &mut b);
        assert_eq!((la, ka), (lb, kb));
        assert_eq!(a[..la], b[..lb]);
        let (lc, _) = frame(47, &mut b);
        assert!(la != lc || a[..la] != b[..lc]);
    }

    #[test]
    fn one_in_five_is_a_stray_response() {
        let strays = (0..1000).filter(|&i| !Kind::of(i).is_malformed()).count();
        assert_eq!(strays, 200);
    }
}
