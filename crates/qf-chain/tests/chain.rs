//! A resident chain as the MCU executor runs it: installed from a request frame, one job per
//! release, each job a fresh invocation whose response is the result Linux receives.

use proptest::prelude::*;
use qf_abi::{decode_frame, encode_frame, EffectClass, Header, MessageKind, Status};
use qf_chain::{Chain, MAX_CHAIN_REQUEST_LEN, MAX_CHAIN_RESPONSE_LEN};
use qf_tasks::{AddRequest, AddResponse, Crc32Request, Crc32Response, Task};

fn request<T: serde::Serialize>(task: Task, invocation_id: u64, payload: &T) -> Vec<u8> {
    let mut header = Header::request(task.id(), task.effect(), invocation_id, 3);
    header.contract_id = 77;
    let mut buf = [0u8; MAX_CHAIN_REQUEST_LEN];
    let len = encode_frame(&header, payload, &mut buf).unwrap();
    buf[..len].to_vec()
}

fn add_chain(period: u64) -> Chain {
    Chain::new(
        &request(Task::Add, 1000, &AddRequest { a: 40, b: 2 }),
        period,
    )
    .unwrap()
}

#[test]
fn each_job_answers_a_new_invocation_with_the_task_result() {
    let mut chain = add_chain(10);
    let mut out = [0u8; MAX_CHAIN_RESPONSE_LEN];
    let clock = std::cell::Cell::new(0u64);
    let tick = || {
        clock.set(clock.get() + 250);
        clock.get()
    };
    for k in 0..3u64 {
        let job = chain.job(100 + 10 * k, false, &tick, &mut out).unwrap();
        assert_eq!(job.served.status, Status::Ok);
        assert_eq!(job.invocation_id, 1000 + k);
        assert_eq!(job.served.compute_ns, 250, "timed on the lent clock");
        let frame = decode_frame(&out[..job.served.len]).unwrap();
        assert_eq!(frame.header.kind, MessageKind::Response);
        assert_eq!(frame.header.invocation_id, 1000 + k);
        assert_eq!(
            frame.header.contract_id, 77,
            "ids of the template are echoed"
        );
        assert_eq!(
            frame.payload_as::<AddResponse>().unwrap(),
            AddResponse { value: 42 }
        );
        chain.sent(true);
    }
    let stats = chain.stats();
    assert_eq!(
        (stats.releases, stats.results, stats.rejected, stats.sent),
        (3, 3, 0, 3)
    );
    assert_eq!(stats.overruns, 0);
    assert_eq!(stats.compute_ns_max, 250);
}

#[test]
fn a_crc_chain_computes_the_same_result_as_the_kernel() {
    let block = [0xA5u8; 64];
    let template = request(Task::Crc32, 1, &Crc32Request { block });
    let mut chain = Chain::new(&template, 5).unwrap();
    assert_eq!(chain.task(), Task::Crc32);
    let mut out = [0u8; MAX_CHAIN_RESPONSE_LEN];
    let job = chain.job(0, false, &|| 0u64, &mut out).unwrap();
    let frame = decode_frame(&out[..job.served.len]).unwrap();
    let expected = qf_tasks::kernels::crc32(&Crc32Request { block });
    assert_eq!(frame.payload_as::<Crc32Response>().unwrap(), expected);
}

#[test]
fn overruns_and_lateness_are_counted() {
    let mut chain = add_chain(10);
    let mut out = [0u8; MAX_CHAIN_RESPONSE_LEN];
    chain.job(0, false, &|| 0u64, &mut out).unwrap();
    chain.job(13, false, &|| 0u64, &mut out).unwrap();
    chain.job(35, true, &|| 0u64, &mut out).unwrap();
    let stats = chain.stats();
    assert_eq!(stats.overruns, 1);
    assert_eq!(stats.lateness_max, 15);
}

#[test]
fn refused_sends_are_counted_apart() {
    let mut chain = add_chain(10);
    chain.sent(false);
    chain.sent(true);
    assert_eq!((chain.stats().sent, chain.stats().send_failures), (1, 1));
}

#[test]
fn a_template_the_dispatcher_would_refuse_is_refused_with_its_status() {
    let mut unknown = request(Task::Add, 1, &AddRequest { a: 1, b: 2 });
    unknown[8..12].copy_from_slice(&999u32.to_be_bytes());
    assert_eq!(
        Chain::new(&unknown, 10).unwrap_err().status,
        Status::UnknownTask
    );

    let mut wrong_effect = request(Task::Add, 1, &AddRequest { a: 1, b: 2 });
    wrong_effect[6] = EffectClass::Actuating.code();
    assert_eq!(
        Chain::new(&wrong_effect, 10).unwrap_err().status,
        Status::Malformed
    );

    let short = request(Task::Add, 1, &AddRequest { a: 1, b: 2 });
    assert_eq!(
        Chain::new(&short[..short.len() - 1], 10)
            .unwrap_err()
            .status,
        Status::Malformed
    );

    let long = vec![0u8; MAX_CHAIN_REQUEST_LEN + 1];
    assert_eq!(Chain::new(&long, 10).unwrap_err().status, Status::Oversized);
}

#[test]
fn a_response_frame_is_not_a_template() {
    let template = request(Task::Add, 1, &AddRequest { a: 1, b: 2 });
    let mut out = [0u8; MAX_CHAIN_RESPONSE_LEN];
    let served = qf_tasks::serve(
        &template,
        &mut out,
        &|| 0u64,
        &mut qf_tasks::Replay::<1>::new(),
    )
    .unwrap();
    assert_eq!(
        Chain::new(&out[..served.len], 10).unwrap_err().status,
        Status::Malformed
    );
}

#[test]
fn the_largest_declared_request_and_response_fit() {
    for task in Task::ALL {
        assert!(
            36 + task.request_size() <= MAX_CHAIN_REQUEST_LEN,
            "{task:?}"
        );
        assert!(
            36 + task.response_size() <= MAX_CHAIN_RESPONSE_LEN,
            "{task:?}"
        );
    }
}

proptest! {
    #[test]
    fn any_template_bytes_give_a_chain_or_a_status(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        if let Ok(mut chain) = Chain::new(&bytes, 10) {
            let mut out = [0u8; MAX_CHAIN_RESPONSE_LEN];
            let job = chain.job(0, false, &|| 0u64, &mut out).unwrap();
            prop_assert_eq!(job.served.status, Status::Ok);
        }
    }
}
