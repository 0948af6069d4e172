// The properties the `frame_decode` fuzz target checks on every input. Shared with the
// regression test `crates/qf-tasks/tests/fuzz_regressions.rs` through `include!`, so a committed
// crash input is replayed against exactly the same checks. Needs `qf_abi` and `qf_tasks` in scope.

/// Decoding arbitrary bytes never panics; whatever decodes re-encodes to the same bytes; the
/// dispatcher answers every input with a valid response frame whose status matches the
/// decoder's verdict.
pub fn check_frame(data: &[u8]) {
    use qf_abi::{decode_frame, encode_frame, encode_frame_raw, MessageKind, Status};
    use qf_tasks::*;

    let decoded = decode_frame(data);
    if let Ok(frame) = &decoded {
        // Canonical: header + payload encode back to the input, byte for byte.
        let mut out = [0u8; qf_abi::MAX_FRAME_LEN];
        let len = encode_frame_raw(&frame.header, frame.payload, &mut out).expect("a decoded frame re-encodes");
        assert_eq!(&out[..len], data, "decode/encode is not the identity");
        // Any payload that decodes as a declared type re-encodes to the same bytes.
        fn typed<T: serde::Serialize + serde::de::DeserializeOwned>(frame: &qf_abi::Frame<'_>) {
            if let Ok(value) = frame.payload_as::<T>() {
                let mut out = [0u8; qf_abi::MAX_FRAME_LEN];
                let len = encode_frame(&frame.header, &value, &mut out).expect("a decoded value re-encodes");
                assert_eq!(&out[qf_abi::HEADER_LEN..len], frame.payload, "payload is not canonical");
            }
        }
        typed::<AddRequest>(frame);
        typed::<AddResponse>(frame);
        typed::<ProbeRequest>(frame);
        typed::<ProbeResponse>(frame);
        typed::<Crc32Request>(frame);
        typed::<Crc32Response>(frame);
        typed::<FirRequest>(frame);
        typed::<FirResponse>(frame);
        typed::<qf_abi::chain::ChainInstall>(frame);
        typed::<qf_abi::chain::ChainRef>(frame);
        typed::<qf_abi::chain::ChainStatus>(frame);
        typed::<qf_abi::chain::ChainList>(frame);
    }

    // The dispatcher: always a response, never a panic, status consistent with the decoder.
    let mut replay: Replay<8> = Replay::new();
    let mut out = [0u8; qf_abi::MAX_FRAME_LEN];
    let served = serve(data, &mut out, &|| 0u64, &mut replay).expect("a full-size output always holds a response");
    let response = decode_frame(&out[..served.len]).expect("every response is a valid frame");
    assert_eq!(response.header.kind, MessageKind::Response);
    assert_eq!(response.header.status, served.status);
    match decoded {
        Err(error) => assert_eq!(served.status, error.status, "serve must report the decoder's status"),
        Ok(frame) => {
            if served.status == Status::Ok {
                assert_eq!(response.header.invocation_id, frame.header.invocation_id);
                assert_eq!(Task::from_id(frame.header.task_id), served.task);
            } else {
                assert!(response.payload.is_empty(), "rejections carry no payload");
            }
        }
    }
}
