// SPDX-License-Identifier: GPL-2.0
//! What `qfabric_rpmsg` knows of the bytes it carries: the QFabric ABI v1 header fields it reads
//! and the image of its ioctl arguments (`docs/qfabric-dev.md`).

/// The QFabric ABI v1 header fields the driver reads (`crates/qf-abi/src/header.rs`).
pub(crate) mod frame {
    pub(crate) const HEADER_LEN: usize = 36;
    const MAGIC: &[u8; 4] = b"QFAB";
    const VERSION: u8 = 1;
    pub(crate) const REQUEST: u8 = 1;
    pub(crate) const RESPONSE: u8 = 2;

    /// Who a reply is for: the task and the invocation it answers.
    #[derive(Clone, Copy, PartialEq, Eq)]
    pub(crate) struct Key {
        pub(crate) task: u32,
        pub(crate) invocation: u64,
    }

    /// The message type and key of a v1 frame, `None` if `frame` is not one.
    pub(crate) fn parse(frame: &[u8]) -> Option<(u8, Key)> {
        if frame.len() < HEADER_LEN || &frame[0..4] != MAGIC || frame[4] != VERSION {
            return None;
        }
        let task = u32::from_be_bytes([frame[8], frame[9], frame[10], frame[11]]);
        let mut invocation = [0u8; 8];
        invocation.copy_from_slice(&frame[12..20]);
        Some((
            frame[5],
            Key {
                task,
                invocation: u64::from_be_bytes(invocation),
            },
        ))
    }
}

/// The ioctl ABI (`docs/qfabric-dev.md`), read and written as native-endian byte images.
pub(crate) mod uapi {
    pub(crate) const INVOKE_LEN: usize = 72;
    pub(crate) const STATS_LEN: usize = 80;
    pub(crate) const RECV_LEN: usize = 32;
    pub(crate) const QF_IOC_INVOKE: u32 =
        kernel::ioctl::_IOWR::<[u8; INVOKE_LEN]>(b'q' as u32, 0x40);
    pub(crate) const QF_IOC_STATS: u32 = kernel::ioctl::_IOR::<[u8; STATS_LEN]>(b'q' as u32, 0x41);
    kernel::static_assert!(QF_IOC_INVOKE == 0xc048_7140);
    kernel::static_assert!(QF_IOC_STATS == 0x8050_7141);
    pub(crate) const QF_IOC_RECV: u32 = kernel::ioctl::_IOWR::<[u8; RECV_LEN]>(b'q' as u32, 0x42);
    kernel::static_assert!(QF_IOC_RECV == 0xc020_7142);

    fn u32_at(raw: &[u8], at: usize) -> u32 {
        u32::from_ne_bytes([raw[at], raw[at + 1], raw[at + 2], raw[at + 3]])
    }

    fn u64_at(raw: &[u8], at: usize) -> u64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&raw[at..at + 8]);
        u64::from_ne_bytes(b)
    }

    /// `struct qf_invoke`'s inputs.
    pub(crate) struct Invoke {
        pub(crate) request: u64,
        pub(crate) response: u64,
        pub(crate) request_len: u32,
        pub(crate) response_cap: u32,
        pub(crate) timeout_ms: u32,
        pub(crate) flags: u64,
    }

    impl Invoke {
        pub(crate) fn parse(raw: &[u8; INVOKE_LEN]) -> Self {
            Self {
                request: u64_at(raw, 0),
                response: u64_at(raw, 8),
                request_len: u32_at(raw, 16),
                response_cap: u32_at(raw, 20),
                timeout_ms: u32_at(raw, 24),
                flags: u64_at(raw, 64),
            }
        }
    }

    /// Fills `struct qf_invoke`'s outputs into the caller's image (inputs left as they were).
    pub(crate) fn set_outputs(raw: &mut [u8; INVOKE_LEN], response_len: u32, times_ns: [i64; 4]) {
        raw[28..32].copy_from_slice(&response_len.to_ne_bytes());
        for (i, t) in times_ns.iter().enumerate() {
            raw[32 + 8 * i..40 + 8 * i].copy_from_slice(&(*t as u64).to_ne_bytes());
        }
    }

    /// `struct qf_recv`'s inputs.
    pub(crate) struct Recv {
        pub(crate) buffer: u64,
        pub(crate) capacity: u32,
        pub(crate) timeout_ms: u32,
        pub(crate) flags: u32,
    }

    impl Recv {
        pub(crate) fn parse(raw: &[u8; RECV_LEN]) -> Self {
            Self {
                buffer: u64_at(raw, 0),
                capacity: u32_at(raw, 8),
                timeout_ms: u32_at(raw, 24),
                flags: u32_at(raw, 28),
            }
        }
    }

    /// Fills `struct qf_recv`'s outputs into the caller's image.
    pub(crate) fn set_recv_outputs(raw: &mut [u8; RECV_LEN], len: u32, received_ns: i64) {
        raw[12..16].copy_from_slice(&len.to_ne_bytes());
        raw[16..24].copy_from_slice(&(received_ns as u64).to_ne_bytes());
    }
}
