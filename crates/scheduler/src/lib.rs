//! Durable jobs, schedules and webhook hooks of one workspace, in plain Rust.
//!
//! An agent sleeps when idle and wakes for a message, a webhook or a
//! schedule; its long work must outlive any one connection. Everything that
//! makes that durable lives in the agent's SQLite database and is written
//! here against the synchronous [`stead_sql::Sql`] trait, so the same code
//! runs on Durable Object SQLite and, in tests, on real SQLite:
//!
//! - [`jobs`]: job records (command, backend, state, exit code, timings) and
//!   each job's output log in bounded pieces addressed by byte offset, pruned
//!   to a per-workspace cap, oldest jobs first;
//! - [`cron`]: a cron parser (5 fields, or 6 with seconds) and next-due
//!   computation in any IANA time zone;
//! - [`schedules`]: one-shot and recurring schedules, the catch-up policy for
//!   runs missed while asleep, and the run ledger that makes a retried alarm
//!   harmless;
//! - [`hooks`]: named webhook entry points, each with its own secret;
//! - [`signing`]: HMAC-SHA256 signatures of outgoing webhook bodies.
//!
//! The platform glue (the alarm, the HTTP routes, WebSockets) only moves
//! values between these functions and the runtime.

pub mod cron;
pub mod hooks;
pub mod jobs;
pub mod schedules;
pub mod signing;

use stead_sql::SqlError;

pub use cron::{Cron, CronError};
pub use hooks::{Credential, Hook, HookOptions, Hooks};
pub use jobs::{Backend, Job, JobLimits, JobState, Jobs, NewJob, OutputPage, Piece, Stream};
pub use schedules::{
    CatchUp, Run, RunOutcome, RunState, RunTicket, Schedule, ScheduleAction, ScheduleKind,
    ScheduleRequest, Schedules,
};

/// Why a scheduler operation failed.
#[derive(Debug, thiserror::Error)]
pub enum SchedError {
    #[error(transparent)]
    Sql(#[from] SqlError),
    #[error("no job {id}")]
    JobNotFound { id: i64 },
    #[error("job {id} has already finished ({state})")]
    JobFinished { id: i64, state: JobState },
    #[error("output of job {id} before offset {kept_from} was pruned (asked from {from})")]
    OutputPruned { id: i64, from: i64, kept_from: i64 },
    #[error("offset {from} is past the end of job {id}'s output ({end})")]
    OffsetBeyondEnd { id: i64, from: i64, end: i64 },
    #[error("offset {from} is negative")]
    NegativeOffset { from: i64 },
    #[error(transparent)]
    Cron(#[from] CronError),
    #[error("unknown time zone {0:?}")]
    UnknownTimeZone(String),
    #[error("invalid schedule: {0}")]
    InvalidSchedule(String),
    #[error("no schedule {id:?}")]
    ScheduleNotFound { id: String },
    #[error("invalid hook: {0}")]
    InvalidHook(String),
    #[error("no hook {name:?}")]
    HookNotFound { name: String },
    #[error("no such hook, or the call is not authenticated (a wrong secret, or a bad or stale signature)")]
    HookRefused,
    #[error("this signed hook call was already accepted: a replay runs nothing")]
    HookReplayed,
    #[error("no space left: the workspace already holds {limit} schedules, the most max_schedules allows")]
    TooManySchedules { limit: i64 },
    #[error("stored record is corrupt: {0}")]
    Corrupt(String),
}

impl SchedError {
    /// The machine-readable code of the API error.
    pub fn code(&self) -> &'static str {
        match self {
            SchedError::Sql(_) | SchedError::Corrupt(_) => "INTERNAL",
            SchedError::JobNotFound { .. } => "JOB_NOT_FOUND",
            SchedError::JobFinished { .. } => "JOB_FINISHED",
            SchedError::OutputPruned { .. } => "OUTPUT_PRUNED",
            SchedError::OffsetBeyondEnd { .. } => "OFFSET_BEYOND_END",
            SchedError::NegativeOffset { .. } => "INVALID_REQUEST",
            SchedError::Cron(_) => "INVALID_CRON",
            SchedError::UnknownTimeZone(_) => "UNKNOWN_TIME_ZONE",
            SchedError::InvalidSchedule(_) | SchedError::InvalidHook(_) => "INVALID_REQUEST",
            SchedError::ScheduleNotFound { .. } => "SCHEDULE_NOT_FOUND",
            SchedError::HookNotFound { .. } => "HOOK_NOT_FOUND",
            SchedError::HookRefused => "HOOK_REFUSED",
            SchedError::HookReplayed => "HOOK_REPLAYED",
            SchedError::TooManySchedules { .. } => "ENOSPC",
        }
    }

    /// The HTTP status of the API error.
    pub fn status(&self) -> u16 {
        match self {
            SchedError::Sql(_) | SchedError::Corrupt(_) => 500,
            SchedError::JobNotFound { .. }
            | SchedError::ScheduleNotFound { .. }
            | SchedError::HookNotFound { .. } => 404,
            SchedError::JobFinished { .. } | SchedError::HookReplayed => 409,
            SchedError::OutputPruned { .. } => 410,
            SchedError::HookRefused => 401,
            SchedError::TooManySchedules { .. } => 507,
            SchedError::OffsetBeyondEnd { .. }
            | SchedError::NegativeOffset { .. }
            | SchedError::Cron(_)
            | SchedError::UnknownTimeZone(_)
            | SchedError::InvalidSchedule(_)
            | SchedError::InvalidHook(_) => 400,
        }
    }
}

pub type Result<T, E = SchedError> = std::result::Result<T, E>;

#[cfg(test)]
pub(crate) fn test_db() -> stead_sql::SqliteDb {
    let db = stead_sql::SqliteDb::memory().expect("memory db");
    stead_sql::migrate(&db, stead_sql::MIGRATIONS).expect("migrations");
    db
}
