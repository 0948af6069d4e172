//! Scheduling policies for callers, executors and load workers: SCHED_OTHER or SCHED_FIFO at a
//! priority, with an error that says what privilege is missing. The only `unsafe` of the crate's
//! library: two libc calls that nix does not wrap.
#![allow(unsafe_code)]

use serde::{Deserialize, Serialize};

/// The paper's caller policies (Section VI-B), and one above its RT load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum CallerPolicy {
    /// SCHED_OTHER, default niceness.
    Ordinary,
    /// Caller and Linux executor at SCHED_FIFO priority 50 (below the `rt` load's worker).
    Fifo,
    /// Caller and Linux executor at SCHED_FIFO priority 90, above the `rt` load's worker (80):
    /// not in the paper; Section VIII-A's question of whether priority alone removes the tail.
    #[serde(rename = "fifo-high")]
    #[value(name = "fifo-high")]
    FifoHigh,
}

impl CallerPolicy {
    pub const FIFO_PRIORITY: i32 = 50;
    pub const FIFO_HIGH_PRIORITY: i32 = 90;
    /// Every policy, in the order tables list them.
    pub const ALL: [CallerPolicy; 3] = [
        CallerPolicy::Ordinary,
        CallerPolicy::Fifo,
        CallerPolicy::FifoHigh,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            CallerPolicy::Ordinary => "ordinary",
            CallerPolicy::Fifo => "fifo",
            CallerPolicy::FifoHigh => "fifo-high",
        }
    }

    /// The policy as a scheduler setting.
    pub fn scheduling(self) -> Scheduling {
        match self {
            CallerPolicy::Ordinary => Scheduling::Other,
            CallerPolicy::Fifo => Scheduling::Fifo(Self::FIFO_PRIORITY),
            CallerPolicy::FifoHigh => Scheduling::Fifo(Self::FIFO_HIGH_PRIORITY),
        }
    }
}

/// Priority of the `rt` load's co-runners ([`crate::load`]), above the tuned caller's 50.
pub const RT_PRIORITY: i32 = 80;

// `fifo-high` must stay above the `rt` load's worker.
const _: () = assert!(CallerPolicy::FIFO_HIGH_PRIORITY > RT_PRIORITY);

/// A Linux scheduling class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheduling {
    Other,
    Fifo(i32),
}

impl std::fmt::Display for Scheduling {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Scheduling::Other => write!(f, "SCHED_OTHER"),
            Scheduling::Fifo(priority) => write!(f, "SCHED_FIFO {priority}"),
        }
    }
}

/// Setting a policy failed.
#[derive(Debug, thiserror::Error)]
pub enum SchedError {
    #[error("SCHED_FIFO priority {priority} for {target} needs CAP_SYS_NICE (run as root or raise RLIMIT_RTPRIO)")]
    Privilege {
        priority: i32,
        target: String,
        source: std::io::Error,
    },
    #[error("setting {policy} for {target}")]
    Other {
        policy: String,
        target: String,
        source: std::io::Error,
    },
}

/// Applies `scheduling` to thread or process `tid` (0 = the calling thread).
pub fn set_scheduling(tid: i32, scheduling: Scheduling) -> Result<(), SchedError> {
    let (policy, priority) = match scheduling {
        Scheduling::Other => (libc::SCHED_OTHER, 0),
        Scheduling::Fifo(priority) => (libc::SCHED_FIFO, priority),
    };
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: `param` is a valid, initialised sched_param that outlives the call; the kernel only
    // reads it. An invalid `tid` is reported through errno, not undefined behaviour.
    let result = unsafe { libc::sched_setscheduler(tid, policy, &param) };
    if result == 0 {
        return Ok(());
    }
    let source = std::io::Error::last_os_error();
    let target = if tid == 0 {
        "the calling thread".to_string()
    } else {
        format!("task {tid}")
    };
    match (scheduling, source.raw_os_error()) {
        (Scheduling::Fifo(priority), Some(libc::EPERM)) => Err(SchedError::Privilege {
            priority,
            target,
            source,
        }),
        _ => Err(SchedError::Other {
            policy: scheduling.to_string(),
            target,
            source,
        }),
    }
}

/// The calling thread's current policy (libc constant) and priority.
pub fn current_scheduling() -> (i32, i32) {
    // SAFETY: both calls only read scheduler state of the calling thread (pid 0) into a local.
    unsafe {
        let policy = libc::sched_getscheduler(0);
        let mut param = libc::sched_param { sched_priority: 0 };
        libc::sched_getparam(0, &mut param);
        (policy, param.sched_priority)
    }
}

#[cfg(test)]
mod tests {
    use clap::ValueEnum;

    #[test]
    fn every_caller_policy_has_one_name_on_the_command_line_in_files_and_in_tables() {
        for policy in CallerPolicy::ALL {
            let name = policy.as_str();
            assert_eq!(CallerPolicy::from_str(name, false), Ok(policy));
            assert_eq!(
                serde_json::to_string(&policy).unwrap(),
                format!("\"{name}\"")
            );
            assert_eq!(
                serde_json::from_str::<CallerPolicy>(&format!("\"{name}\"")).unwrap(),
                policy
            );
        }
        assert_eq!(
            CallerPolicy::FifoHigh.scheduling(),
            Scheduling::Fifo(CallerPolicy::FIFO_HIGH_PRIORITY)
        );
    }

    use super::*;

    /// The policy in a failed call's error was Rust's debug form (`Fifo(50)`).
    #[test]
    fn a_policy_is_named_as_linux_names_it() {
        assert_eq!(Scheduling::Fifo(50).to_string(), "SCHED_FIFO 50");
        assert_eq!(Scheduling::Other.to_string(), "SCHED_OTHER");
        let error = SchedError::Other {
            policy: Scheduling::Fifo(99).to_string(),
            target: "task 1".into(),
            source: std::io::Error::from_raw_os_error(libc::ESRCH),
        };
        assert_eq!(error.to_string(), "setting SCHED_FIFO 99 for task 1");
    }

    #[test]
    fn a_thread_can_become_fifo_50_and_back_when_privileged() {
        let outcome = std::thread::spawn(|| {
            let result = set_scheduling(0, Scheduling::Fifo(50));
            let during = current_scheduling();
            set_scheduling(0, Scheduling::Other).unwrap();
            (
                result.map_err(|e| e.to_string()),
                during,
                current_scheduling(),
            )
        })
        .join()
        .unwrap();
        match outcome.0 {
            Ok(()) => {
                assert_eq!(outcome.1, (libc::SCHED_FIFO, 50));
                assert_eq!(outcome.2, (libc::SCHED_OTHER, 0));
            }
            // Unprivileged runs must get the explanatory error, not a bare errno.
            Err(message) => assert!(message.contains("CAP_SYS_NICE"), "{message}"),
        }
    }
}
