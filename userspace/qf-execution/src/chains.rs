//! Resident-chain control from Linux: the control frames of [`qf_abi::chain`] (install, start,
//! stop, remove, status, list) sent through any MCU endpoint's [`Domain`], each answer checked
//! against its request. A refusal is a [`Refused`] error carrying the MCU's status, so a caller
//! prints it by name and can tell it from a transport failure.

use crate::domain::Domain;
use crate::session::Session;
use anyhow::{bail, Context, Result};
use qf_abi::chain::{
    ChainInstall, ChainList, ChainListRequest, ChainOp, ChainRef, ChainState, ChainStatus,
    CONTROL_EFFECT,
};
use qf_abi::{decode_frame, encode_frame, Header, MessageKind, Status, MAX_FRAME_LEN};
use serde::{Deserialize, Serialize};

/// The MCU refused a control request: its status names the reason, and nothing changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the MCU refused {op} of chain {chain}: {} ({})", status.name(), meaning(*status))]
pub struct Refused {
    /// `chain_install`, `chain_start`, ...
    pub op: &'static str,
    /// The chain the request named (0 for list).
    pub chain: u32,
    pub status: Status,
}

/// What a refusal status means for a control request (`docs/resident-chains.md`).
pub fn meaning(status: Status) -> &'static str {
    match status {
        Status::Malformed => "the control frame is malformed",
        Status::UnknownTask => {
            "the install's task is not declared, or the MCU does not know control frames"
        }
        Status::ExecutionError => "the MCU cannot run chains (no loop releases them)",
        Status::OverBound => {
            "its CBS reservation would take the MCU's reserved bandwidth over the bound"
        }
        Status::BadTemplate => "the template is no request the MCU serves with OK",
        Status::TableFull => "every chain slot of the MCU is taken",
        Status::OutOfRange => {
            "chain id, period, budget, deadline, start delay or template length out of range"
        }
        Status::IdInUse => "a chain with this id is installed",
        Status::NotInstalled => "no chain with this id is installed",
        _ => "not a control refusal",
    }
}

/// Resident-chain control over one MCU endpoint.
pub struct ChainControl {
    mcu: Box<dyn Domain>,
    session: Session,
}

/// One chain as `qf resident status` prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainReport {
    pub chain_id: u32,
    /// `installed`, `running`, `stopped` (or `state N` for a code this side does not know).
    pub state: String,
    /// The task's name when declared here, else its id in hex.
    pub task: String,
    pub status: ChainStatus,
}

impl ChainReport {
    pub fn new(status: ChainStatus) -> ChainReport {
        ChainReport {
            chain_id: status.chain_id,
            state: state_name(status.state),
            task: qf_tasks::Task::from_id(status.task_id)
                .map_or_else(|| format!("{:#x}", status.task_id), |t| t.name().to_owned()),
            status,
        }
    }

    /// The status's fields as JSON, with the state and the task by name (`task_id` kept).
    pub fn json(&self) -> serde_json::Value {
        let mut value = serde_json::to_value(self.status).unwrap_or_default();
        if let Some(fields) = value.as_object_mut() {
            fields.insert("state".into(), self.state.clone().into());
            fields.insert("task".into(), self.task.clone().into());
        }
        value
    }
}

/// A state byte's name.
pub fn state_name(code: u8) -> String {
    ChainState::from_code(code).map_or_else(|| format!("state {code}"), |s| s.name().to_owned())
}

impl ChainControl {
    /// Control through `mcu` (any MCU endpoint).
    pub fn new(mcu: Box<dyn Domain>) -> ChainControl {
        ChainControl {
            mcu,
            session: Session::from_clock(),
        }
    }

    /// Sends one control request and returns the OK answer's payload bytes, or the refusal.
    fn call<T: Serialize>(&mut self, op: ChainOp, chain: u32, payload: &T) -> Result<Vec<u8>> {
        let id = self.session.next_id();
        // Control requests take no part in replay protection: the epoch is the session's.
        let header = Header::request(op.task_id(), CONTROL_EFFECT, id, self.session.epoch(0));
        let mut frame = [0u8; MAX_FRAME_LEN];
        let len = encode_frame(&header, payload, &mut frame)
            .map_err(|e| anyhow::anyhow!("encoding {}: {e}", op.name()))?;
        let invocation = self
            .mcu
            .invoke(&frame[..len])
            .with_context(|| format!("{} of chain {chain}", op.name()))?;
        let reply = decode_frame(invocation.frame())
            .map_err(|e| anyhow::anyhow!("the answer to {}: {e}", op.name()))?;
        let h = reply.header;
        if h.kind != MessageKind::Response || h.task_id != op.task_id() || h.invocation_id != id {
            bail!(
                "the answer to {} (invocation {id:#x}) is a {} of task {:#x}, invocation {:#x}",
                op.name(),
                h.kind.name(),
                h.task_id,
                h.invocation_id
            );
        }
        if h.status != Status::Ok {
            return Err(Refused {
                op: op.name(),
                chain,
                status: h.status,
            }
            .into());
        }
        Ok(reply.payload.to_vec())
    }

    fn decode<'a, T: Deserialize<'a>>(op: ChainOp, payload: &'a [u8]) -> Result<T> {
        qf_abi::decode_payload(payload)
            .map_err(|e| anyhow::anyhow!("the OK answer to {}: {e}", op.name()))
    }

    /// Installs `install` (stopped); returns its chain id.
    pub fn install(&mut self, install: &ChainInstall) -> Result<u32> {
        let payload = self.call(ChainOp::Install, install.chain_id, install)?;
        let chain: ChainRef = Self::decode(ChainOp::Install, &payload)?;
        Ok(chain.chain_id)
    }

    fn by_id(&mut self, op: ChainOp, chain_id: u32) -> Result<()> {
        let payload = self.call(op, chain_id, &ChainRef { chain_id })?;
        let chain: ChainRef = Self::decode(op, &payload)?;
        if chain.chain_id != chain_id {
            bail!(
                "{} of chain {chain_id} answered for chain {}",
                op.name(),
                chain.chain_id
            );
        }
        Ok(())
    }

    pub fn start(&mut self, chain_id: u32) -> Result<()> {
        self.by_id(ChainOp::Start, chain_id)
    }

    pub fn stop(&mut self, chain_id: u32) -> Result<()> {
        self.by_id(ChainOp::Stop, chain_id)
    }

    pub fn remove(&mut self, chain_id: u32) -> Result<()> {
        self.by_id(ChainOp::Remove, chain_id)
    }

    pub fn status(&mut self, chain_id: u32) -> Result<ChainStatus> {
        let payload = self.call(ChainOp::Status, chain_id, &ChainRef { chain_id })?;
        Self::decode(ChainOp::Status, &payload)
    }

    pub fn list(&mut self) -> Result<ChainList> {
        let payload = self.call(ChainOp::List, 0, &ChainListRequest {})?;
        Self::decode(ChainOp::List, &payload)
    }

    /// The status of every installed chain, in list order.
    pub fn statuses(&mut self) -> Result<Vec<ChainStatus>> {
        let list = self.list()?;
        let count = usize::from(list.count).min(list.chains.len());
        let mut all = Vec::with_capacity(count);
        for entry in &list.chains[..count] {
            match self.status(entry.chain_id) {
                Ok(status) => all.push(status),
                // Removed between the list and its status: not installed any more.
                Err(e) if refusal(&e) == Some(Status::NotInstalled) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(all)
    }

    /// The smallest chain id not installed (ids count from 1).
    pub fn free_id(&mut self) -> Result<u32> {
        let list = self.list()?;
        let count = usize::from(list.count).min(list.chains.len());
        let taken: Vec<u32> = list.chains[..count].iter().map(|e| e.chain_id).collect();
        (1..=u32::MAX)
            .find(|id| !taken.contains(id))
            .context("every chain id is taken")
    }
}

/// A chain's timing as a user gives it (µs; `None`: the default), checked against the ranges
/// every MCU has (`docs/resident-chains.md`) so a mistake is named by the user's own word for
/// the field before anything is sent; the MCU checks it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Timing {
    pub period_us: u64,
    /// Relative deadline, budget ..= period (default: the period).
    pub deadline_us: Option<u64>,
    /// CBS budget per period, at most the period (default: no server).
    pub budget_us: Option<u64>,
    /// First release after `start`, at most the period.
    pub start_delay_us: Option<u64>,
}

impl Timing {
    /// The install of `template` as chain `chain_id` with this timing. `names` are how the
    /// user spells period, deadline, budget and start delay (`--period-us` or `period_us`).
    pub fn install(
        &self,
        chain_id: u32,
        template: &[u8],
        names: [&str; 4],
    ) -> Result<ChainInstall> {
        use qf_abi::chain::{PERIOD_US_MAX, PERIOD_US_MIN, TEMPLATE_CAPACITY};
        let [period_name, deadline_name, budget_name, delay_name] = names;
        let field = |name: &str, value: u64| {
            u32::try_from(value).map_err(|_| {
                anyhow::anyhow!(
                    "{name} {value}: beyond any MCU's range (at most {PERIOD_US_MAX} µs)"
                )
            })
        };
        let period = field(period_name, self.period_us)?;
        if !(PERIOD_US_MIN..=PERIOD_US_MAX).contains(&period) {
            bail!(
                "{period_name} {period}: the period must be {PERIOD_US_MIN} ..= {PERIOD_US_MAX} µs"
            );
        }
        let budget = field(budget_name, self.budget_us.unwrap_or(0))?;
        if budget > period {
            bail!("{budget_name} {budget}: more than the period ({period} µs)");
        }
        let deadline = field(deadline_name, self.deadline_us.unwrap_or(0))?;
        if self.deadline_us.is_some() && !(budget.max(1)..=period).contains(&deadline) {
            bail!(
                "{deadline_name} {deadline}: the relative deadline must be {} ..= {period} µs (budget ..= period)",
                budget.max(1)
            );
        }
        let delay = field(delay_name, self.start_delay_us.unwrap_or(0))?;
        if delay > period {
            bail!("{delay_name} {delay}: more than the period ({period} µs)");
        }
        let mut install =
            ChainInstall::new(chain_id, template, period, budget).with_context(|| {
                format!(
                "the template of {} bytes does not fit an install ({TEMPLATE_CAPACITY} at most)",
                template.len()
            )
            })?;
        install.deadline_us = deadline;
        install.start_delay_us = delay;
        Ok(install)
    }
}

/// The MCU's refusal status, if `error` is one.
pub fn refusal(error: &anyhow::Error) -> Option<Status> {
    error.downcast_ref::<Refused>().map(|r| r.status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Invocation, McuChannel, McuTransport};
    use crate::qfabric_dev::Split;
    use std::time::Duration;

    /// An MCU in this process: `qf-chain`'s table behind the control entry, no threads.
    struct TableMcu {
        table: qf_chain::ChainTable,
        executor: Installed,
        /// Answer with another invocation id than asked.
        mismatch: bool,
    }

    /// An executor that admits by the whole CPU and "runs" nothing.
    struct Installed {
        sched: qf_sched::Scheduler<{ qf_chain::MAX_CHAINS }, 0>,
    }

    impl qf_chain::ChainExecutor for Installed {
        fn reserve(
            &mut self,
            slot: usize,
            timing: &qf_chain::ChainTiming,
        ) -> Result<qf_sched::Bandwidth, qf_sched::Error> {
            qf_chain::reserve_thread(
                &mut self.sched,
                qf_sched::ThreadId(slot as u16),
                timing.period_us.into(),
                timing.budget_us.into(),
            )
        }
        fn unreserve(&mut self, slot: usize) {
            let _ = self
                .sched
                .detach(&mut qf_chain::NoTimers, qf_sched::ThreadId(slot as u16));
        }
        fn start(
            &mut self,
            _: usize,
            _: qf_chain::Chain,
            _: &qf_chain::ChainTiming,
        ) -> Result<(), qf_abi::AbiError> {
            Ok(())
        }
        fn stop(&mut self, _: usize) -> Option<(qf_chain::Chain, qf_chain::ThreadCounters)> {
            None
        }
        fn running(&self, _: usize) -> Option<(qf_chain::ChainStats, qf_chain::ThreadCounters)> {
            None
        }
        fn bandwidth(&self) -> (qf_sched::Bandwidth, Option<qf_sched::Bandwidth>) {
            (self.sched.admitted_total(), self.sched.admission_bound())
        }
    }

    impl McuTransport for TableMcu {
        fn round_trip(
            &mut self,
            request: &[u8],
            response: &mut [u8; MAX_FRAME_LEN],
            _: Duration,
        ) -> Result<(usize, Option<Split>)> {
            let served = qf_chain::control(request, response, &mut self.table, &mut self.executor)
                .map_err(|e| anyhow::anyhow!("{e:?}"))?;
            if self.mismatch {
                response[19] ^= 1;
            }
            Ok((served.len, None))
        }
        fn receive(
            &mut self,
            _: &mut [u8; MAX_FRAME_LEN],
            _: Duration,
        ) -> Result<Option<(usize, Option<u64>)>> {
            Ok(None)
        }
    }

    fn control(mismatch: bool) -> ChainControl {
        let mut sched = qf_sched::Scheduler::new();
        sched.admission_bound_set(Some(qf_sched::Bandwidth::ONE));
        let mcu = TableMcu {
            table: qf_chain::ChainTable::new(),
            executor: Installed { sched },
            mismatch,
        };
        ChainControl::new(Box::new(McuChannel::new(mcu, Duration::from_secs(1))))
    }

    fn add_install(chain_id: u32, budget_us: u32) -> ChainInstall {
        let mut frame = [0u8; MAX_FRAME_LEN];
        let request = crate::workload::random_request(qf_tasks::Task::Add, 1);
        let len = crate::workload::encode_request(
            qf_tasks::Task::Add,
            &request,
            u64::from(chain_id) << 32,
            0,
            &mut frame,
        )
        .unwrap();
        ChainInstall::new(chain_id, &frame[..len], 1_000, budget_us).unwrap()
    }

    #[test]
    fn every_operation_round_trips_and_refusals_carry_their_status() {
        let mut control = control(false);
        assert_eq!(control.free_id().unwrap(), 1);
        assert_eq!(control.install(&add_install(1, 600)).unwrap(), 1);
        assert_eq!(control.free_id().unwrap(), 2);
        let error = control.install(&add_install(2, 600)).unwrap_err();
        assert_eq!(refusal(&error), Some(Status::OverBound));
        let text = error.to_string();
        assert!(
            text.contains("over_bound") && text.contains("chain 2"),
            "{text}"
        );
        control.start(1).unwrap();
        let status = control.status(1).unwrap();
        assert_eq!(ChainReport::new(status).state, "running");
        assert_eq!(ChainReport::new(status).task, "add");
        control.stop(1).unwrap();
        assert_eq!(control.statuses().unwrap().len(), 1);
        control.remove(1).unwrap();
        let error = control.stop(1).unwrap_err();
        assert_eq!(refusal(&error), Some(Status::NotInstalled));
        assert!(control.statuses().unwrap().is_empty());
        assert_eq!(control.list().unwrap().count, 0);
        let _ = Invocation::frame;
    }

    #[test]
    fn an_answer_to_another_invocation_is_an_error_not_a_refusal() {
        let mut control = control(true);
        let error = control.list().unwrap_err();
        assert_eq!(refusal(&error), None);
        assert!(error.to_string().contains("invocation"), "{error}");
    }
}
