//! Where a job's output goes: [`JobSink`] appends each piece to the job's
//! log as it arrives and pushes the stored pieces to subscribed WebSockets
//! in the same synchronous step, so a subscriber never misses or doubles a
//! piece (see `crate::subscriptions`). Jobs' commands and processes both
//! write through it.

use stead_scheduler::jobs::Stream;

use crate::agent::Agent;
use crate::computer::detached;
use crate::computer::OutputSink;
use crate::host::Host;
use crate::subscriptions;

/// Appends a job's output to its log and pushes it to subscribers.
pub struct JobSink<'a, H: Host> {
    agent: &'a Agent<H>,
    job: i64,
}

impl<'a, H: Host> JobSink<'a, H> {
    pub fn new(agent: &'a Agent<H>, job: i64) -> Self {
        JobSink { agent, job }
    }

    /// Appends `data` to the log and pushes the stored pieces.
    pub fn push(&self, stream: Stream, data: &[u8]) {
        // An output piece that cannot be stored is lost to the log, but the
        // job goes on; the outcome still carries the output.
        if let Ok(pieces) = self
            .agent
            .jobs()
            .append(self.job, stream, data, self.agent.now_ms())
        {
            subscriptions::broadcast_output(self.agent, self.job, &pieces);
        }
    }
}

impl<H: Host> OutputSink for JobSink<'_, H> {
    fn stdout(&self, data: &[u8]) {
        self.push(Stream::Stdout, data);
    }

    fn stderr(&self, data: &[u8]) {
        self.push(Stream::Stderr, data);
    }

    fn dropped(&self, bytes: u64) {
        // Lost to the log, but the offset to read on from moves past them.
        let _ = detached::add_dropped(self.agent.db(), self.job, bytes);
    }

    fn job(&self) -> Option<i64> {
        Some(self.job)
    }
}
