//! A kernel for tests: the clock is set by hand and every request is recorded, so a test can
//! state exactly what the scheduler asked the kernel to do.
#![allow(dead_code)]

use qf_sched::{Kernel, ThreadId};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    TimerArm(ThreadId, u64),
    TimerCancel(ThreadId),
    Deadline(ThreadId, u64),
    Suspend(ThreadId, u64),
}

#[derive(Default)]
pub struct RecordingKernel {
    pub now: u64,
    pub requests: Vec<Request>,
}

impl RecordingKernel {
    pub fn take(&mut self) -> Vec<Request> {
        std::mem::take(&mut self.requests)
    }
    /// The timer target currently armed for `thread`, replaying the recorded requests.
    pub fn armed(&self, thread: ThreadId) -> Option<u64> {
        let mut armed = None;
        for request in &self.requests {
            match *request {
                Request::TimerArm(t, at) if t == thread => armed = Some(at),
                Request::TimerCancel(t) if t == thread => armed = None,
                _ => {}
            }
        }
        armed
    }
}

impl Kernel for RecordingKernel {
    fn now(&self) -> u64 {
        self.now
    }
    fn timer_arm(&mut self, thread: ThreadId, at: u64) {
        self.requests.push(Request::TimerArm(thread, at));
    }
    fn timer_cancel(&mut self, thread: ThreadId) {
        self.requests.push(Request::TimerCancel(thread));
    }
    fn deadline_set(&mut self, thread: ThreadId, deadline: u64) {
        self.requests.push(Request::Deadline(thread, deadline));
    }
    fn suspend_until(&mut self, thread: ThreadId, at: u64) {
        self.requests.push(Request::Suspend(thread, at));
    }
}
