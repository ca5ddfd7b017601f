//! Where a request's time and SQL statements go, stage by stage: the
//! per-request breakdown local development answers with (`Server-Timing`,
//! see the `stead` crate's glue), so a cost added to every request shows
//! where it was added.
//!
//! The stages are those of [`crate::Agent::dispatch`]; the Worker adds its
//! own (the front, and the hop to the Durable Object) around them.

use std::fmt::Write;

use crate::host::Host;

/// A stage of serving a request in the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// The caller and its token checked, the agent opened, a fork's copy
    /// ruled out.
    Admission,
    /// The action itself (its body read, its checkpoint taken and settled).
    Operation,
    /// The audit entry written.
    Audit,
    /// Sockets and MCP streams told of changes.
    Notify,
    /// The live push to a running process brought forward.
    LiveSync,
}

impl Stage {
    /// Its name in `Server-Timing`.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Admission => "admission",
            Stage::Operation => "operation",
            Stage::Audit => "audit",
            Stage::Notify => "notify",
            Stage::LiveSync => "live",
        }
    }
}

/// What one stage cost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StageCost {
    pub stage: Stage,
    /// Wall time, milliseconds (as fine as the host's clock).
    pub ms: f64,
    /// SQL statements run.
    pub statements: u64,
}

/// The stages of one request, in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Breakdown {
    pub stages: Vec<StageCost>,
}

impl Breakdown {
    /// The `Server-Timing` entries (RFC: W3C Server Timing) of the
    /// stages, each with its statements as its description:
    /// `admission;dur=0.041;desc="0 sql", operation;dur=...`.
    pub fn server_timing(&self) -> String {
        let mut out = String::new();
        for (i, cost) in self.stages.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            let _ = write!(
                out,
                "{};dur={:.3};desc=\"{} sql\"",
                cost.stage.name(),
                cost.ms,
                cost.statements
            );
        }
        out
    }
}

/// Measures stages one after another on `host`'s clock and statement
/// count; an idle one (a request nobody asked the breakdown of) measures
/// nothing.
pub(crate) struct Stopwatch<'h, H: Host> {
    host: &'h H,
    /// The clock and count when the last stage ended; `None`: idle.
    since: Option<(f64, u64)>,
    breakdown: Breakdown,
}

impl<'h, H: Host> Stopwatch<'h, H> {
    pub(crate) fn start(host: &'h H) -> Self {
        Stopwatch {
            host,
            since: Some((host.precise_ms(), host.statements_run())),
            breakdown: Breakdown::default(),
        }
    }

    pub(crate) fn idle(host: &'h H) -> Self {
        Stopwatch {
            host,
            since: None,
            breakdown: Breakdown::default(),
        }
    }

    /// Ends `stage`: what was spent since the previous one ended.
    pub(crate) fn lap(&mut self, stage: Stage) {
        let Some(since) = self.since else {
            return;
        };
        let now = (self.host.precise_ms(), self.host.statements_run());
        self.breakdown.stages.push(StageCost {
            stage,
            ms: (now.0 - since.0).max(0.0),
            statements: now.1.saturating_sub(since.1),
        });
        self.since = Some(now);
    }

    pub(crate) fn finish(self) -> Breakdown {
        self.breakdown
    }
}
