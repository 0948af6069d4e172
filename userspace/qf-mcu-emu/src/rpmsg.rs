//! rpmsg as Linux 6.12's `virtio_rpmsg_bus` speaks it: the 16-byte header, buffer sizes and the
//! name-service announcement.

/// `sizeof(struct rpmsg_hdr)`.
pub const HEADER_LEN: usize = 16;
/// `MAX_RPMSG_BUF_SIZE`.
pub const BUFFER_SIZE: usize = 512;
/// Largest payload of one message.
pub const MAX_PAYLOAD: usize = BUFFER_SIZE - HEADER_LEN;
/// `RPMSG_NS_ADDR`.
pub const NS_ADDR: u32 = 53;
/// `RPMSG_NAME_SIZE`.
pub const NAME_SIZE: usize = 32;
/// `sizeof(struct rpmsg_ns_msg)`.
pub const NS_MSG_LEN: usize = NAME_SIZE + 8;
/// `RPMSG_NS_CREATE`.
pub const NS_CREATE: u32 = 0;

/// A parsed rpmsg header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub src: u32,
    pub dst: u32,
    pub len: u16,
    pub flags: u16,
}

/// Why bytes read from a tx buffer are not an rpmsg message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RpmsgError {
    #[error("rpmsg buffer of {0} bytes is shorter than the 16-byte header")]
    Short(usize),
    #[error("rpmsg header len {declared} exceeds the {available} bytes after the header")]
    Length { declared: usize, available: usize },
    #[error("rpmsg payload of {0} bytes exceeds the {MAX_PAYLOAD}-byte limit")]
    TooBig(usize),
}

impl Header {
    /// Writes the header (little-endian, as a little-endian legacy virtio device).
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut h = [0u8; HEADER_LEN];
        h[0..4].copy_from_slice(&self.src.to_le_bytes());
        h[4..8].copy_from_slice(&self.dst.to_le_bytes());
        h[12..14].copy_from_slice(&self.len.to_le_bytes());
        h[14..16].copy_from_slice(&self.flags.to_le_bytes());
        h
    }
}

/// Splits a buffer into header and exactly `len` payload bytes.
pub fn decode(buffer: &[u8]) -> Result<(Header, &[u8]), RpmsgError> {
    let Some((h, rest)) = buffer.split_first_chunk::<HEADER_LEN>() else {
        return Err(RpmsgError::Short(buffer.len()));
    };
    let word = |at: usize| u32::from_le_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]]);
    let header = Header {
        src: word(0),
        dst: word(4),
        len: u16::from_le_bytes([h[12], h[13]]),
        flags: u16::from_le_bytes([h[14], h[15]]),
    };
    let len = usize::from(header.len);
    let payload = rest.get(..len).ok_or(RpmsgError::Length {
        declared: len,
        available: rest.len(),
    })?;
    Ok((header, payload))
}

/// Builds a whole message (header + payload) into `out`; returns its length.
pub fn encode(
    src: u32,
    dst: u32,
    payload: &[u8],
    out: &mut [u8; BUFFER_SIZE],
) -> Result<usize, RpmsgError> {
    if payload.len() > MAX_PAYLOAD {
        return Err(RpmsgError::TooBig(payload.len()));
    }
    let header = Header {
        src,
        dst,
        len: payload.len() as u16,
        flags: 0,
    };
    out[..HEADER_LEN].copy_from_slice(&header.encode());
    out[HEADER_LEN..HEADER_LEN + payload.len()].copy_from_slice(payload);
    Ok(HEADER_LEN + payload.len())
}

/// The `struct rpmsg_ns_msg` announcing `name` at `addr` (RPMSG_NS_CREATE).
pub fn ns_announcement(name: &str, addr: u32) -> [u8; NS_MSG_LEN] {
    let mut m = [0u8; NS_MSG_LEN];
    let n = name.len().min(NAME_SIZE - 1);
    m[..n].copy_from_slice(&name.as_bytes()[..n]);
    m[NAME_SIZE..NAME_SIZE + 4].copy_from_slice(&addr.to_le_bytes());
    m[NAME_SIZE + 4..].copy_from_slice(&NS_CREATE.to_le_bytes());
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_round_trips_through_the_16_byte_header() {
        let mut buf = [0u8; BUFFER_SIZE];
        let n = encode(0x400, 1025, b"hello", &mut buf).unwrap();
        assert_eq!(n, 21);
        let (h, p) = decode(&buf[..n]).unwrap();
        assert_eq!((h.src, h.dst, h.len, h.flags), (0x400, 1025, 5, 0));
        assert_eq!(p, b"hello");
    }

    #[test]
    fn payloads_above_496_bytes_are_refused() {
        let mut buf = [0u8; BUFFER_SIZE];
        assert!(encode(1, 2, &[0; MAX_PAYLOAD], &mut buf).is_ok());
        assert_eq!(
            encode(1, 2, &[0; MAX_PAYLOAD + 1], &mut buf),
            Err(RpmsgError::TooBig(497))
        );
    }

    #[test]
    fn a_header_claiming_more_than_the_buffer_is_an_error() {
        let mut buf = [0u8; 20];
        buf[12..14].copy_from_slice(&10u16.to_le_bytes());
        assert_eq!(
            decode(&buf),
            Err(RpmsgError::Length {
                declared: 10,
                available: 4
            })
        );
        assert_eq!(decode(&buf[..3]), Err(RpmsgError::Short(3)));
    }

    #[test]
    fn the_ns_announcement_is_40_bytes_name_then_addr_then_flags() {
        let m = ns_announcement("qfabric", 0x400);
        assert_eq!(&m[..8], b"qfabric\0");
        assert!(m[8..32].iter().all(|&b| b == 0));
        assert_eq!(&m[32..36], &0x400u32.to_le_bytes());
        assert_eq!(&m[36..40], &[0, 0, 0, 0]);
    }
}
