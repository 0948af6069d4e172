//! Decoders of bytes that come from the other side of the board never panic: any rpmsg buffer,
//! any resource table, any control-socket line gets a value or an error.

use proptest::prelude::*;
use qf_mcu_emu::control::parse;
use qf_mcu_emu::rpmsg;
use qf_mcu_emu::rsc_table::{decode_vdev, TABLE_LEN};

proptest! {
    #[test]
    fn any_rpmsg_buffer_decodes_or_is_refused(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        if let Ok((header, payload)) = rpmsg::decode(&bytes) {
            prop_assert_eq!(payload.len(), usize::from(header.len));
            prop_assert!(rpmsg::HEADER_LEN + payload.len() <= bytes.len());
        }
    }

    #[test]
    fn any_payload_up_to_496_bytes_round_trips(payload in proptest::collection::vec(any::<u8>(), 0..=496), src: u32, dst: u32) {
        let mut buf = [0u8; rpmsg::BUFFER_SIZE];
        let n = rpmsg::encode(src, dst, &payload, &mut buf).unwrap();
        let (h, p) = rpmsg::decode(&buf[..n]).unwrap();
        prop_assert_eq!((h.src, h.dst), (src, dst));
        prop_assert_eq!(p, &payload[..]);
    }

    #[test]
    fn any_resource_table_decodes_or_names_its_bad_field(bytes in proptest::array::uniform32(any::<u8>()), tail in proptest::collection::vec(any::<u8>(), TABLE_LEN - 32)) {
        let mut table = [0u8; TABLE_LEN];
        table[..32].copy_from_slice(&bytes);
        table[32..].copy_from_slice(&tail);
        if let Err(e) = decode_vdev(&table) {
            prop_assert!(!e.to_string().is_empty());
        }
    }

    #[test]
    fn any_control_line_parses_or_is_refused_with_a_message(line in "\\PC{0,40}") {
        if let Err(message) = parse(&line) {
            prop_assert!(!message.is_empty());
        }
    }
}
