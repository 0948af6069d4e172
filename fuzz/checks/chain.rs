// The properties the `chain_control` fuzz target checks on every input. Shared with the
// regression test `crates/qf-chain/tests/fuzz_regressions.rs` through `include!`, so a committed
// crash input is replayed against exactly the same checks. Needs `qf_abi`, `qf_chain`,
// `qf_sched` and `qf_tasks` in scope.

/// An MCU with one chain installed and one running answers arbitrary bytes — control frames
/// above all — with a valid response frame, never panics, and a refused frame leaves its
/// chains, their counters and the reserved bandwidth exactly as they were.
pub fn check_chain_control(data: &[u8]) {
    use qf_abi::chain::{ChainInstall, ChainOp, TEMPLATE_CAPACITY};
    use qf_abi::{decode_frame, encode_frame, AbiError, Header, MessageKind, Status};
    use qf_chain::{reserve_thread, Chain, ChainExecutor, ChainStats, ChainTable, ChainTiming, NoTimers, ThreadCounters};
    use qf_sched::{Bandwidth, Scheduler, ThreadId};

    /// Threads that only remember their chain; admission by qf-sched (bound: one CPU).
    struct Executor {
        sched: Scheduler<{ qf_chain::MAX_CHAINS }, 0>,
        threads: [Option<Chain>; qf_chain::MAX_CHAINS],
    }
    impl ChainExecutor for Executor {
        fn reserve(&mut self, slot: usize, t: &ChainTiming) -> Result<Bandwidth, qf_sched::Error> {
            let id = ThreadId(slot as u16);
            reserve_thread(&mut self.sched, id, t.period_us.into(), t.budget_us.into())
        }
        fn unreserve(&mut self, slot: usize) {
            assert!(self.threads[slot].is_none(), "a running chain's reservation was freed");
            let _ = self.sched.detach(&mut NoTimers, ThreadId(slot as u16));
        }
        fn start(&mut self, slot: usize, chain: Chain, _: &ChainTiming) -> Result<(), AbiError> {
            assert!(self.threads[slot].is_none(), "a running chain was started again");
            self.threads[slot] = Some(chain);
            Ok(())
        }
        fn stop(&mut self, slot: usize) -> Option<(Chain, ThreadCounters)> {
            self.threads[slot].take().map(|c| (c, ThreadCounters::default()))
        }
        fn running(&self, slot: usize) -> Option<(ChainStats, ThreadCounters)> {
            self.threads[slot].as_ref().map(|c| (c.stats(), ThreadCounters::default()))
        }
        fn bandwidth(&self) -> (Bandwidth, Option<Bandwidth>) {
            (self.sched.admitted_total(), self.sched.admission_bound())
        }
    }

    let mut sched = Scheduler::new();
    sched.admission_bound_set(Some(Bandwidth::ONE));
    let mut executor = Executor { sched, threads: Default::default() };
    let mut table = ChainTable::new();
    for (chain_id, budget_us) in [(1u32, 300u32), (2, 200)] {
        let header = Header::request(qf_tasks::Task::Add.id(), qf_tasks::Task::Add.effect(), 7, 0);
        let mut template = [0u8; TEMPLATE_CAPACITY];
        let len = encode_frame(&header, &qf_tasks::AddRequest { a: 1, b: 2 }, &mut template).expect("fits");
        let install = ChainInstall::new(chain_id, &template[..len], 1000, budget_us).expect("fits");
        table.install(&install, &mut executor).expect("the seed chains fit");
    }
    table.start(2, &mut executor).expect("starts");

    let snapshot = |table: &ChainTable, executor: &Executor| {
        let statuses: Vec<_> = (1..=2).map(|id| table.status(id, executor).ok()).collect();
        (table.list(executor), statuses, executor.sched.admitted_total())
    };
    let before = snapshot(&table, &executor);
    let mut replay: qf_tasks::Replay<8> = qf_tasks::Replay::new();
    let mut out = [0u8; qf_abi::MAX_FRAME_LEN];
    let served = qf_chain::serve_with_chains(data, &mut out, &|| 0u64, &mut replay, &mut table, &mut executor)
        .expect("a full-size output always holds a response");
    let response = decode_frame(&out[..served.len]).expect("every response is a valid frame");
    assert_eq!(response.header.kind, MessageKind::Response);
    assert_eq!(response.header.status, served.status);
    if served.status != Status::Ok {
        assert!(response.payload.is_empty(), "refusals carry no payload");
        assert!(snapshot(&table, &executor) == before, "a refused frame changed the MCU");
    } else if let Ok(request) = decode_frame(data) {
        assert_eq!(response.header.invocation_id, request.header.invocation_id);
        if ChainOp::from_task_id(request.header.task_id).is_none() {
            assert!(snapshot(&table, &executor) == before, "a task request changed the chains");
        }
    }
}
