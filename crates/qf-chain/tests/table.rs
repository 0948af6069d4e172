//! The chain table driven by control frames, as an MCU executor serves them: every refusal is
//! named by its status and changes nothing; admission runs qf-sched's test over every
//! reservation; a chain's results carry its id; stop keeps the counters, remove frees the slot.

use proptest::prelude::*;
use qf_abi::chain::{
    ChainInstall, ChainList, ChainListRequest, ChainOp, ChainRef, ChainState, ChainStatus,
    CONTROL_EFFECT, TEMPLATE_CAPACITY,
};
use qf_abi::{decode_frame, encode_frame, AbiError, EffectClass, Header, Status, MAX_FRAME_LEN};
use qf_chain::{
    reserve_thread, serve_with_chains, Chain, ChainExecutor, ChainStats, ChainTable, ChainTiming,
    NoTimers, ThreadCounters, MAX_CHAINS, MAX_CHAIN_RESPONSE_LEN,
};
use qf_sched::{Bandwidth, Scheduler, ThreadId};
use qf_tasks::{AddRequest, AddResponse, Replay, Task};

/// An executor with qf-sched's admission (bound: one CPU, µs as time unit) and chain "threads"
/// whose jobs the test runs with [`Executor::job`]. An application CBS thread may hold slot 8.
struct Executor {
    sched: Scheduler<{ MAX_CHAINS + 1 }, 0>,
    threads: [Option<Chain>; MAX_CHAINS],
    now: u64,
}

impl Executor {
    fn new() -> Executor {
        let mut sched = Scheduler::new();
        sched.admission_bound_set(Some(Bandwidth::ONE));
        Executor {
            sched,
            threads: Default::default(),
            now: 0,
        }
    }

    /// One job of the chain running in `slot`: its result frame.
    fn job(&mut self, slot: usize) -> Option<Vec<u8>> {
        let chain = self.threads[slot].as_mut()?;
        self.now += 1000;
        let mut out = [0u8; MAX_CHAIN_RESPONSE_LEN];
        let job = chain.job(self.now, false, &|| 0u64, &mut out).unwrap();
        chain.sent(true);
        Some(out[..job.served.len].to_vec())
    }
}

impl ChainExecutor for Executor {
    fn reserve(&mut self, slot: usize, timing: &ChainTiming) -> Result<Bandwidth, qf_sched::Error> {
        let (period, budget) = (timing.period_us.into(), timing.budget_us.into());
        reserve_thread(&mut self.sched, ThreadId(slot as u16), period, budget)
    }
    fn unreserve(&mut self, slot: usize) {
        self.sched
            .detach(&mut NoTimers, ThreadId(slot as u16))
            .unwrap();
    }
    fn start(&mut self, slot: usize, chain: Chain, _: &ChainTiming) -> Result<(), AbiError> {
        assert!(self.threads[slot].is_none(), "started twice");
        self.threads[slot] = Some(chain);
        Ok(())
    }
    fn stop(&mut self, slot: usize) -> Option<(Chain, ThreadCounters)> {
        let counters = ThreadCounters {
            budget_exhaustions: 2,
            deadline_misses: 1,
        };
        self.threads[slot].take().map(|chain| (chain, counters))
    }
    fn running(&self, slot: usize) -> Option<(ChainStats, ThreadCounters)> {
        let chain = self.threads[slot].as_ref()?;
        Some((chain.stats(), ThreadCounters::default()))
    }
    fn bandwidth(&self) -> (Bandwidth, Option<Bandwidth>) {
        (self.sched.admitted_total(), self.sched.admission_bound())
    }
}

/// The MCU: its table, executor and the dispatcher's replay windows.
struct Mcu {
    table: ChainTable,
    executor: Executor,
    replay: Replay,
    invocation: u64,
}

impl Mcu {
    fn new() -> Mcu {
        Mcu {
            table: ChainTable::new(),
            executor: Executor::new(),
            replay: Replay::new(),
            invocation: 0,
        }
    }

    /// Serves a raw frame; the response frame.
    fn raw(&mut self, request: &[u8]) -> Vec<u8> {
        let mut out = [0u8; MAX_FRAME_LEN];
        let served = serve_with_chains(
            request,
            &mut out,
            &|| 0u64,
            &mut self.replay,
            &mut self.table,
            &mut self.executor,
        )
        .unwrap();
        out[..served.len].to_vec()
    }

    /// Sends a control request; the response's status and payload.
    fn control<T: serde::Serialize>(&mut self, op: ChainOp, payload: &T) -> (Status, Vec<u8>) {
        self.invocation += 1;
        let header = Header::request(op.task_id(), CONTROL_EFFECT, self.invocation, 0);
        let mut frame = [0u8; MAX_FRAME_LEN];
        let len = encode_frame(&header, payload, &mut frame).unwrap();
        let response = self.raw(&frame[..len]);
        let decoded = decode_frame(&response).unwrap();
        assert_eq!(decoded.header.task_id, op.task_id());
        assert_eq!(decoded.header.invocation_id, self.invocation);
        (decoded.header.status, decoded.payload.to_vec())
    }

    fn install(&mut self, install: &ChainInstall) -> Status {
        self.control(ChainOp::Install, install).0
    }

    fn op(&mut self, op: ChainOp, chain_id: u32) -> Status {
        self.control(op, &ChainRef { chain_id }).0
    }

    fn status(&mut self, chain_id: u32) -> Option<ChainStatus> {
        let (status, payload) = self.control(ChainOp::Status, &ChainRef { chain_id });
        (status == Status::Ok).then(|| qf_abi::decode_payload(&payload).unwrap())
    }

    fn list(&mut self) -> ChainList {
        let (status, payload) = self.control(ChainOp::List, &ChainListRequest {});
        assert_eq!(status, Status::Ok);
        qf_abi::decode_payload(&payload).unwrap()
    }

    /// Everything a refusal must leave as it was: the list, every status, the admitted total.
    fn snapshot(&mut self) -> (ChainList, Vec<Option<ChainStatus>>, Bandwidth) {
        let list = self.list();
        let statuses = list.chains[..usize::from(list.count)]
            .iter()
            .map(|entry| self.status(entry.chain_id))
            .collect();
        (list, statuses, self.executor.sched.admitted_total())
    }
}

fn add_template(first_id: u64) -> Vec<u8> {
    let header = Header::request(Task::Add.id(), Task::Add.effect(), first_id, 0);
    let mut frame = [0u8; MAX_FRAME_LEN];
    let len = encode_frame(&header, &AddRequest { a: 40, b: 2 }, &mut frame).unwrap();
    frame[..len].to_vec()
}

fn install(chain_id: u32, period_us: u32, budget_us: u32) -> ChainInstall {
    let template = add_template(u64::from(chain_id) << 32);
    ChainInstall::new(chain_id, &template, period_us, budget_us).unwrap()
}

#[test]
fn a_chain_runs_after_start_keeps_its_counters_when_stopped_and_frees_its_slot_when_removed() {
    let mut mcu = Mcu::new();
    assert_eq!(mcu.install(&install(7, 10_000, 2_000)), Status::Ok);
    let status = mcu.status(7).unwrap();
    assert_eq!(
        ChainState::from_code(status.state),
        Some(ChainState::Installed)
    );
    assert_eq!((status.reserved_ppm, status.deadline_us), (200_000, 10_000));
    assert_eq!(mcu.executor.job(0), None, "installed, not started");

    assert_eq!(mcu.op(ChainOp::Start, 7), Status::Ok);
    assert_eq!(
        mcu.op(ChainOp::Start, 7),
        Status::Ok,
        "start is safe to repeat"
    );
    for k in 0..3 {
        let result = mcu.executor.job(0).unwrap();
        let frame = decode_frame(&result).unwrap();
        assert_eq!(frame.header.contract_id, 7, "tagged with the chain id");
        assert_eq!(frame.header.invocation_id, (7 << 32) + k);
        let value: AddResponse = frame.payload_as().unwrap();
        assert_eq!(value.value, 42);
    }
    let running = mcu.status(7).unwrap();
    assert_eq!(
        (running.releases, running.results, running.rejected),
        (3, 3, 0)
    );
    assert_eq!(
        ChainState::from_code(running.state),
        Some(ChainState::Running)
    );

    assert_eq!(mcu.op(ChainOp::Stop, 7), Status::Ok);
    assert_eq!(mcu.executor.job(0), None, "no job after stop");
    let stopped = mcu.status(7).unwrap();
    assert_eq!(
        ChainState::from_code(stopped.state),
        Some(ChainState::Stopped)
    );
    assert_eq!(
        (stopped.releases, stopped.results),
        (3, 3),
        "counters stay readable"
    );
    assert_eq!(
        (stopped.budget_exhaustions, stopped.deadline_misses),
        (2, 1)
    );
    assert_eq!(
        stopped.reserved_ppm, 200_000,
        "a stopped chain keeps its reservation"
    );

    // Started again, it goes on where it stopped.
    assert_eq!(mcu.op(ChainOp::Start, 7), Status::Ok);
    let next = decode_frame(&mcu.executor.job(0).unwrap()).unwrap().header;
    assert_eq!(next.invocation_id, (7 << 32) + 3);

    assert_eq!(mcu.op(ChainOp::Remove, 7), Status::Ok);
    assert_eq!(
        mcu.executor.job(0),
        None,
        "removing a running chain stops it"
    );
    assert_eq!(mcu.status(7), None);
    assert_eq!(mcu.op(ChainOp::Remove, 7), Status::NotInstalled);
    assert_eq!(mcu.list().count, 0);
    assert_eq!(mcu.executor.sched.admitted_total(), Bandwidth::ZERO);
}

#[test]
fn two_chains_run_at_once_and_their_results_name_them() {
    let mut mcu = Mcu::new();
    assert_eq!(mcu.install(&install(3, 1_000, 100)), Status::Ok);
    assert_eq!(mcu.install(&install(9, 2_000, 100)), Status::Ok);
    assert_eq!(mcu.op(ChainOp::Start, 3), Status::Ok);
    assert_eq!(mcu.op(ChainOp::Start, 9), Status::Ok);
    let tag = |result: Vec<u8>| decode_frame(&result).unwrap().header.contract_id;
    assert_eq!(tag(mcu.executor.job(0).unwrap()), 3);
    assert_eq!(tag(mcu.executor.job(1).unwrap()), 9);
    let list = mcu.list();
    assert_eq!(list.count, 2);
    assert_eq!((list.chains[0].chain_id, list.chains[1].chain_id), (3, 9));
    assert_eq!((list.reserved_ppm, list.bound_ppm), (150_000, 1_000_000));
}

#[test]
fn every_refusal_names_its_reason_and_changes_nothing() {
    let mut mcu = Mcu::new();
    assert_eq!(mcu.install(&install(1, 10_000, 6_000)), Status::Ok);
    assert_eq!(mcu.op(ChainOp::Start, 1), Status::Ok);
    mcu.executor.job(0);

    let mut wrong_task = install(2, 10_000, 0);
    wrong_task.task_id = Task::Crc32.id();
    let mut undeclared = install(2, 10_000, 0);
    undeclared.task_id = 99;
    let mut garbage_after = install(2, 10_000, 0);
    garbage_after.template[TEMPLATE_CAPACITY - 1] = 1;
    let mut broken = install(2, 10_000, 0);
    broken.template[0] = b'X';
    let mut too_long = install(2, 10_000, 0);
    too_long.template_len = TEMPLATE_CAPACITY as u16 + 1;
    let mut short = install(2, 10_000, 0);
    short.template_len = 35;
    let mut late_deadline = install(2, 10_000, 0);
    late_deadline.deadline_us = 10_001;
    let mut tight_deadline = install(2, 10_000, 500);
    tight_deadline.deadline_us = 400;
    let mut late_start = install(2, 10_000, 0);
    late_start.start_delay_us = 10_001;
    let cases: Vec<(&str, ChainInstall, Status)> = vec![
        ("chain id 0", install(0, 10_000, 0), Status::OutOfRange),
        ("id in use", install(1, 10_000, 0), Status::IdInUse),
        ("period too short", install(2, 99, 0), Status::OutOfRange),
        (
            "period too long",
            install(2, 3_600_000_001, 0),
            Status::OutOfRange,
        ),
        (
            "budget above period",
            install(2, 10_000, 10_001),
            Status::OutOfRange,
        ),
        ("deadline above period", late_deadline, Status::OutOfRange),
        ("deadline below budget", tight_deadline, Status::OutOfRange),
        ("start delay above period", late_start, Status::OutOfRange),
        ("template too long", too_long, Status::OutOfRange),
        ("template shorter than a header", short, Status::OutOfRange),
        ("undeclared task", undeclared, Status::UnknownTask),
        (
            "template names another task",
            wrong_task,
            Status::BadTemplate,
        ),
        (
            "bytes past the template",
            garbage_after,
            Status::BadTemplate,
        ),
        ("template no frame", broken, Status::BadTemplate),
        (
            "over the bound",
            install(2, 10_000, 5_000),
            Status::OverBound,
        ),
    ];
    for (what, request, expected) in cases {
        let before = mcu.snapshot();
        assert_eq!(mcu.install(&request), expected, "{what}");
        assert_eq!(mcu.snapshot(), before, "{what} changed the MCU");
    }
    for op in [
        ChainOp::Start,
        ChainOp::Stop,
        ChainOp::Remove,
        ChainOp::Status,
    ] {
        let before = mcu.snapshot();
        assert_eq!(mcu.op(op, 5), Status::NotInstalled, "{op:?}");
        assert_eq!(mcu.snapshot(), before, "{op:?} changed the MCU");
    }
    // Header-level refusals: wrong effect class, a response, an unnamed control id, a payload
    // of the wrong length.
    let before = mcu.snapshot();
    let mut frame = [0u8; MAX_FRAME_LEN];
    let statuses: Vec<Status> = [
        (
            Header::request(ChainOp::Stop.task_id(), EffectClass::Pure, 1, 0),
            4,
        ),
        (
            Header::request(ChainOp::Stop.task_id(), CONTROL_EFFECT, 1, 0).response_to(Status::Ok),
            4,
        ),
        (Header::request(0xFFFF_FF07, CONTROL_EFFECT, 1, 0), 4),
        (
            Header::request(ChainOp::Stop.task_id(), CONTROL_EFFECT, 1, 0),
            5,
        ),
    ]
    .into_iter()
    .map(|(header, len)| {
        let payload = [0u8, 0, 0, 1, 0];
        let n = qf_abi::encode_frame_raw(&header, &payload[..len], &mut frame).unwrap();
        decode_frame(&mcu.raw(&frame[..n])).unwrap().header.status
    })
    .collect();
    assert_eq!(
        statuses,
        [
            Status::Malformed,
            Status::Malformed,
            Status::UnknownTask,
            Status::Malformed
        ]
    );
    assert_eq!(mcu.snapshot(), before);
}

#[test]
fn a_full_table_refuses_and_an_install_over_the_bound_fits_once_another_is_removed() {
    let mut mcu = Mcu::new();
    for id in 1..=MAX_CHAINS as u32 {
        assert_eq!(mcu.install(&install(id, 10_000, 1_000)), Status::Ok);
    }
    let before = mcu.snapshot();
    assert_eq!(mcu.install(&install(99, 10_000, 0)), Status::TableFull);
    assert_eq!(mcu.snapshot(), before);
    assert_eq!(mcu.op(ChainOp::Remove, 8), Status::Ok);
    // 7 × 10 % reserved: 40 % is over the bound, until another 10 % goes.
    assert_eq!(mcu.install(&install(99, 10_000, 4_000)), Status::OverBound);
    assert_eq!(mcu.op(ChainOp::Remove, 3), Status::Ok);
    assert_eq!(mcu.install(&install(99, 10_000, 4_000)), Status::Ok);
    assert_eq!(mcu.list().reserved_ppm, 1_000_000);
}

#[test]
fn an_application_cbs_thread_counts_against_the_bound() {
    let mut mcu = Mcu::new();
    let app = ThreadId(MAX_CHAINS as u16);
    mcu.executor.sched.attach(app).unwrap();
    mcu.executor.sched.period_set(app, 1_000).unwrap();
    mcu.executor.sched.cbs_budget_set(app, 900).unwrap();
    assert_eq!(mcu.install(&install(1, 10_000, 2_000)), Status::OverBound);
    assert_eq!(mcu.install(&install(1, 10_000, 1_000)), Status::Ok);
}

#[test]
fn ordinary_requests_still_reach_the_dispatcher() {
    let mut mcu = Mcu::new();
    let response = mcu.raw(&add_template(5));
    let frame = decode_frame(&response).unwrap();
    assert_eq!(frame.header.status, Status::Ok);
    assert_eq!(frame.payload_as::<AddResponse>().unwrap().value, 42);
}

proptest! {
    /// Arbitrary bytes after a control header never panic, are always answered, and a refusal
    /// leaves the MCU exactly as it was.
    #[test]
    fn arbitrary_control_frames_are_answered_and_refusals_change_nothing(
        op in 0u32..8,
        effect in 1u8..=4,
        payload in proptest::collection::vec(any::<u8>(), 0..200),
        seed_install in any::<bool>(),
    ) {
        let mut mcu = Mcu::new();
        if seed_install {
            prop_assert_eq!(mcu.install(&install(0x0102_0304, 10_000, 1_000)), Status::Ok);
        }
        let before = mcu.snapshot();
        let effect = EffectClass::from_code(effect).unwrap();
        let header = Header::request(0xFFFF_FF00 + op, effect, 99, 0);
        let mut frame = [0u8; MAX_FRAME_LEN];
        let len = qf_abi::encode_frame_raw(&header, &payload, &mut frame).unwrap();
        let response = mcu.raw(&frame[..len]);
        let answer = decode_frame(&response).unwrap().header;
        prop_assert_eq!(answer.invocation_id, 99);
        if answer.status != Status::Ok {
            prop_assert_eq!(mcu.snapshot(), before);
        }
    }

    /// Whole random frames (any header) are answered without panicking.
    #[test]
    fn arbitrary_bytes_are_answered(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let mut mcu = Mcu::new();
        let response = mcu.raw(&bytes);
        prop_assert!(decode_frame(&response).is_ok());
    }
}

#[test]
fn a_table_with_fewer_slots_is_full_at_its_capacity_and_reuses_a_freed_slot() {
    let mut mcu = Mcu::new();
    mcu.table = ChainTable::with_capacity(2);
    assert_eq!(mcu.install(&install(5, 10_000, 1_000)), Status::Ok);
    assert_eq!(mcu.install(&install(6, 10_000, 1_000)), Status::Ok);
    assert_eq!(mcu.table.chain_id_at(1), Some(6));
    assert_eq!(mcu.table.free_id(), 1);
    let before = mcu.snapshot();
    assert_eq!(mcu.install(&install(7, 10_000, 0)), Status::TableFull);
    assert_eq!(mcu.snapshot(), before);
    assert_eq!(mcu.op(ChainOp::Remove, 5), Status::Ok);
    assert_eq!(mcu.table.chain_id_at(0), None);
    assert_eq!(mcu.install(&install(7, 10_000, 0)), Status::Ok);
    assert_eq!(mcu.table.slot_of(7), Some(0));
    // A capacity above MAX_CHAINS is MAX_CHAINS.
    let table = ChainTable::with_capacity(MAX_CHAINS + 5);
    assert_eq!(table.chain_id_at(MAX_CHAINS), None);
}
