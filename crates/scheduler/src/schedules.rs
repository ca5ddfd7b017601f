//! Schedules, the catch-up policy, and the run ledger.
//!
//! A schedule is one-shot (`at`, `at_ms` or `delay_ms`) or recurring (a
//! [`Cron`] expression in a time zone), and either runs an exec request as
//! a job or calls a webhook with a signed body. The Durable Object has one
//! alarm; [`Schedules::next_wake`] is the earliest time anything is due and
//! the glue sets the alarm to it after every change and every start.
//!
//! **Exactly once per due time, by construction.** The platform delivers an
//! alarm at least once and retries it when the handler throws.
//! [`Schedules::take_due`] therefore does all its bookkeeping in one
//! transaction *before* the run starts: it writes the ledger row
//! `(schedule, due time, attempt)` in state `running` and advances the
//! schedule's `next_due_ms` past that due time. A retried or duplicated
//! alarm finds nothing due for that time, so it cannot start it again; the
//! ledger's primary key refuses a second row even if it tried. A crash
//! between the record and the end of the run leaves the row `running`: at
//! the next start [`Schedules::interrupt_running`] marks it `interrupted`
//! (it may have half-run, so this is recorded, not hidden) and, if the
//! schedule allows more attempts, a retry is queued. A run is never lost and
//! never started twice as the same attempt.
//!
//! **Retries.** A run that fails (the exec exits non-zero, the webhook
//! answers non-2xx or cannot be reached, or a restart cut it off) is retried
//! up to `max_attempts` in all, after `retry_delay_ms`, doubling each time
//! (at most an hour). Each attempt is its own ledger row.
//!
//! **Catch-up.** When the agent wakes after due times passed unserved (the
//! runtime was down, or an alarm came late), the schedule's `catch_up`
//! policy decides:
//! - `latest` (default): run once, for the most recent missed due time; the
//!   older ones are skipped and counted in that run's `skipped`;
//! - `all`: run every missed due time, oldest first (at most the newest
//!   [`MAX_CATCH_UP`]; older ones are counted as skipped);
//! - `skip`: run none that are more than [`LATE_AFTER_MS`] late; they are
//!   recorded as one `skipped` ledger row, and the schedule goes on from
//!   the next future due time.
//!
//! A one-shot schedule that was missed runs late under `latest` and `all`.

use std::collections::VecDeque;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use stead_sql::{params, Row, Sql};

use crate::cron::{time_zone, Cron};
use crate::jobs::opt_text;
use crate::{Result, SchedError};

/// How late a due time may run and still count as on time under `skip`.
pub const LATE_AFTER_MS: i64 = 60_000;
/// Most missed due times `all` replays after one sleep.
pub const MAX_CATCH_UP: usize = 100;
/// Longest wait between attempts.
const MAX_RETRY_DELAY_MS: i64 = 3_600_000;
/// Most occurrences counted when catching up, so a long sleep of a
/// per-second schedule stays cheap; the rest is caught up on the next wake.
const MAX_ENUMERATED: usize = 100_000;

/// What to do with due times missed while asleep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CatchUp {
    #[default]
    Latest,
    All,
    Skip,
}

/// Whether a schedule runs once or recurs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ScheduleKind {
    /// At one time (`at`, `at_ms` or `delay_ms`).
    Once,
    /// At every time a cron expression names.
    Cron,
}

/// Where a schedule stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ScheduleState {
    /// A due time is ahead (every cron schedule; a one-shot one that has
    /// not come due).
    Scheduled,
    /// A one-shot schedule whose run is under way or has a retry pending.
    Running,
    /// A one-shot schedule that has run for the last time. It stays listed
    /// for [`DONE_KEPT_MS`] after its last run ended, then is removed with
    /// its ledger (its jobs stay in the job list); it does not count
    /// against the workspace's `max_schedules`.
    Done,
}

/// How long a finished one-shot schedule stays listed, from the end of its
/// last run.
pub const DONE_KEPT_MS: i64 = 7 * 24 * 3_600_000;

/// What a schedule does when it comes due.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ScheduleAction {
    /// Runs its exec request as a job.
    Exec,
    /// Calls its webhook with a signed body.
    Webhook,
}

/// Where one ledger row's attempt stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    Running,
    Succeeded,
    Failed,
    /// A restart cut it off.
    Interrupted,
    /// Missed while asleep and not run (`catch_up: skip`).
    Skipped,
}

/// An enum stored as its lowercase name.
macro_rules! stored_names {
    ($type:ident, $what:literal, $($variant:ident => $name:literal),+ $(,)?) => {
        impl $type {
            pub fn as_str(self) -> &'static str {
                match self {
                    $($type::$variant => $name,)+
                }
            }

            fn parse(text: &str) -> Result<Self> {
                match text {
                    $($name => Ok($type::$variant),)+
                    other => Err(SchedError::Corrupt(format!(concat!($what, " {:?}"), other))),
                }
            }
        }
    };
}

stored_names!(ScheduleKind, "schedule kind", Once => "once", Cron => "cron");
stored_names!(
    ScheduleState, "schedule state",
    Scheduled => "scheduled",
    Running => "running",
    Done => "done",
);
stored_names!(ScheduleAction, "schedule action", Exec => "exec", Webhook => "webhook");
stored_names!(
    RunState, "run state",
    Running => "running",
    Succeeded => "succeeded",
    Failed => "failed",
    Interrupted => "interrupted",
    Skipped => "skipped",
);
stored_names!(CatchUp, "catch_up", Latest => "latest", All => "all", Skip => "skip");

/// The webhook part of a schedule request.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookRequest {
    /// Where the signed POST goes.
    pub url: String,
    /// The signing secret; one is generated when absent.
    pub secret: Option<String>,
    /// Sent as `body` in the signed JSON payload.
    #[serde(default)]
    pub body: Value,
}

/// A schedule as clients send it.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScheduleRequest {
    /// The schedule's name; generated when absent. Putting an existing id
    /// replaces that schedule.
    pub id: Option<String>,
    /// A cron expression: 5 fields (minute hour day month weekday), or 6
    /// with seconds first; `@daily`-style shorthands too.
    pub cron: Option<String>,
    /// IANA time zone the cron expression is read in (default UTC).
    pub tz: Option<String>,
    /// RFC 3339 time of a one-shot schedule.
    pub at: Option<String>,
    /// Unix time in milliseconds of a one-shot schedule.
    pub at_ms: Option<i64>,
    /// A one-shot schedule this many milliseconds from now.
    pub delay_ms: Option<i64>,
    /// The command to run as a job at each due time (an exec request).
    pub exec: Option<Value>,
    /// A webhook to call at each due time instead of a command.
    pub webhook: Option<WebhookRequest>,
    /// Due times missed while the agent was down: run the newest once
    /// (`latest`), every one (`all`), or none (`skip`).
    #[serde(default)]
    pub catch_up: CatchUp,
    /// Attempts per due time, 1-20 (default 1).
    pub max_attempts: Option<u32>,
    /// Delay before a retry, doubling each time (default 10 s).
    pub retry_delay_ms: Option<i64>,
}

/// A stored schedule. The webhook secret is never serialized.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Schedule {
    pub id: String,
    pub kind: ScheduleKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cron: Option<String>,
    pub tz: String,
    pub action: ScheduleAction,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exec: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(skip)]
    pub secret: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
    pub catch_up: CatchUp,
    pub max_attempts: i64,
    pub retry_delay_ms: i64,
    /// The next due time; `None` once a one-shot schedule has run.
    pub next_due_ms: Option<i64>,
    pub created_ms: i64,
    pub state: ScheduleState,
    /// When a `done` schedule's last run ended; it is removed
    /// [`DONE_KEPT_MS`] later.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub done_ms: Option<i64>,
}

/// One ledger row: an attempt at one due time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Run {
    pub schedule_id: String,
    pub due_ms: i64,
    pub attempt: i64,
    pub state: RunState,
    /// Missed due times skipped in favour of this one.
    pub skipped: i64,
    pub job_id: Option<i64>,
    /// HTTP status of a webhook call.
    pub status: Option<i64>,
    pub error: Option<String>,
    pub started_ms: i64,
    pub finished_ms: Option<i64>,
    /// When the next attempt is due, while one is pending.
    pub retry_at_ms: Option<i64>,
}

/// A run that [`Schedules::take_due`] recorded and the caller must now
/// carry out, then report with [`Schedules::finish_run`].
#[derive(Debug, Clone, PartialEq)]
pub struct RunTicket {
    pub schedule: Schedule,
    pub due_ms: i64,
    pub attempt: i64,
    pub skipped: i64,
}

impl RunTicket {
    /// The JSON body a webhook schedule sends (and signs).
    pub fn webhook_body(&self) -> String {
        json!({
            "schedule": self.schedule.id,
            "due_ms": self.due_ms,
            "attempt": self.attempt,
            "body": self.schedule.payload.clone().unwrap_or(Value::Null),
        })
        .to_string()
    }
}

/// How a run went.
#[derive(Debug, Clone, Default)]
pub struct RunOutcome {
    pub ok: bool,
    pub job_id: Option<i64>,
    pub status: Option<i64>,
    pub error: Option<String>,
}

impl RunOutcome {
    /// A failed run, for `reason`.
    pub fn failed(reason: String) -> Self {
        RunOutcome {
            ok: false,
            error: Some(reason),
            ..RunOutcome::default()
        }
    }
}

const COLUMNS: &str = "id, kind, cron, tz, action, exec, url, secret, payload, catch_up, \
    max_attempts, retry_delay_ms, next_due_ms, created_ms";

/// Whether a schedule (a row of `schedules`) has a run under way or a
/// retry pending.
const ACTIVE: &str = "EXISTS (SELECT 1 FROM schedule_runs r WHERE r.schedule_id = schedules.id \
    AND (r.state = 'running' OR r.retry_at_ms IS NOT NULL))";

/// Whether a schedule has run for the last time (see [`ScheduleState::Done`]).
fn done() -> String {
    format!("(next_due_ms IS NULL AND NOT {ACTIVE})")
}

/// [`COLUMNS`], then the schedule's state and when its last run ended.
fn select_columns() -> String {
    format!(
        "{COLUMNS}, CASE WHEN next_due_ms IS NOT NULL THEN 'scheduled' WHEN {ACTIVE} \
         THEN 'running' ELSE 'done' END, \
         (SELECT MAX(r.finished_ms) FROM schedule_runs r WHERE r.schedule_id = schedules.id)"
    )
}

const RUN_COLUMNS: &str = "schedule_id, due_ms, attempt, state, skipped, job_id, status, error, \
    started_ms, finished_ms, retry_at_ms";

fn json_column(row: &Row, column: usize) -> Result<Option<Value>> {
    opt_text(row, column)?
        .map(|text| {
            serde_json::from_str(&text).map_err(|e| SchedError::Corrupt(format!("json: {e}")))
        })
        .transpose()
}

fn schedule_from_row(row: &Row) -> Result<Schedule> {
    Ok(Schedule {
        id: row.text(0)?.to_string(),
        kind: ScheduleKind::parse(row.text(1)?)?,
        cron: opt_text(row, 2)?,
        tz: row.text(3)?.to_string(),
        action: ScheduleAction::parse(row.text(4)?)?,
        exec: json_column(row, 5)?,
        url: opt_text(row, 6)?,
        secret: opt_text(row, 7)?,
        payload: json_column(row, 8)?,
        catch_up: CatchUp::parse(row.text(9)?)?,
        max_attempts: row.int(10)?,
        retry_delay_ms: row.int(11)?,
        next_due_ms: row.opt_int(12)?,
        created_ms: row.int(13)?,
        state: ScheduleState::parse(row.text(14)?)?,
        done_ms: row.opt_int(15)?,
    })
    .map(|schedule| Schedule {
        done_ms: schedule
            .done_ms
            .filter(|_| schedule.state == ScheduleState::Done),
        ..schedule
    })
}

fn run_from_row(row: &Row) -> Result<Run> {
    Ok(Run {
        schedule_id: row.text(0)?.to_string(),
        due_ms: row.int(1)?,
        attempt: row.int(2)?,
        state: RunState::parse(row.text(3)?)?,
        skipped: row.int(4)?,
        job_id: row.opt_int(5)?,
        status: row.opt_int(6)?,
        error: opt_text(row, 7)?,
        started_ms: row.int(8)?,
        finished_ms: row.opt_int(9)?,
        retry_at_ms: row.opt_int(10)?,
    })
}

/// Whether `id` is a valid schedule id: 1-64 of `[A-Za-z0-9._-]`.
pub fn valid_id(id: &str) -> bool {
    crate::hooks::valid_name(id)
}

fn invalid(message: impl Into<String>) -> SchedError {
    SchedError::InvalidSchedule(message.into())
}

/// The delay before attempt `attempt + 1`.
fn retry_delay(base_ms: i64, attempt: i64) -> i64 {
    let doublings = (attempt - 1).clamp(0, 20) as u32;
    base_ms
        .saturating_mul(1 << doublings)
        .min(MAX_RETRY_DELAY_MS)
}

impl Schedule {
    /// When the schedule recurs, with its cron expression parsed once.
    fn recurrence(&self) -> Result<Recurrence> {
        Ok(Recurrence(match &self.cron {
            Some(expr) => Some((Cron::parse(expr)?, time_zone(&self.tz)?)),
            None => None,
        }))
    }
}

/// A schedule's due times after the first: none for a one-shot schedule.
struct Recurrence(Option<(Cron, chrono_tz::Tz)>);

impl Recurrence {
    /// The due time after `after_ms`.
    fn next_after(&self, after_ms: i64) -> Option<i64> {
        let (cron, tz) = self.0.as_ref()?;
        cron.next_after(after_ms, *tz)
    }
}

/// The schedules of one workspace.
pub struct Schedules<'a, S: Sql> {
    db: &'a S,
    /// How many schedules the workspace may hold.
    max_schedules: i64,
}

/// Default of [`Schedules::with_limit`].
pub const DEFAULT_MAX_SCHEDULES: i64 = 1000;

impl<'a, S: Sql> Schedules<'a, S> {
    pub fn new(db: &'a S) -> Self {
        Schedules::with_limit(db, DEFAULT_MAX_SCHEDULES)
    }

    /// Schedules of a workspace that may hold at most `max_schedules`.
    pub fn with_limit(db: &'a S, max_schedules: i64) -> Self {
        Schedules { db, max_schedules }
    }

    /// Fails when creating schedule `id` would pass the limit (replacing an
    /// existing one never does).
    fn check_room(&self, id: &str) -> Result<()> {
        let row = self.db.query_row(
            &format!(
                "SELECT COALESCE(SUM(NOT {}), 0), COALESCE(SUM(id = ?), 0) FROM schedules",
                done()
            ),
            params![id],
        )?;
        let (count, exists) = match row {
            Some(row) => (row.int(0)?, row.int(1)? > 0),
            None => (0, false),
        };
        if !exists && count >= self.max_schedules {
            return Err(SchedError::TooManySchedules {
                limit: self.max_schedules,
            });
        }
        Ok(())
    }

    /// Creates or replaces schedule `id` from `req`. `generated_secret` signs
    /// webhook calls when the request names no secret. Returns the schedule
    /// and the webhook secret in force (to show the caller once).
    pub fn put(
        &self,
        id: &str,
        req: &ScheduleRequest,
        generated_secret: &str,
        now_ms: i64,
    ) -> Result<(Schedule, Option<String>)> {
        if !valid_id(id) {
            return Err(invalid(format!(
                "id {id:?}: use 1-64 characters of A-Z a-z 0-9 . _ -"
            )));
        }
        self.check_room(id)?;
        let tz = req.tz.clone().unwrap_or_else(|| "UTC".to_string());
        time_zone(&tz)?;
        let one_shot = [
            req.at.is_some(),
            req.at_ms.is_some(),
            req.delay_ms.is_some(),
        ];
        let whens = one_shot.iter().filter(|w| **w).count() + usize::from(req.cron.is_some());
        if whens != 1 {
            return Err(invalid("give exactly one of cron, at, at_ms and delay_ms"));
        }
        let (kind, next_due) = if let Some(expr) = &req.cron {
            let cron = Cron::parse(expr)?;
            let next = cron
                .next_after(now_ms, time_zone(&tz)?)
                .ok_or_else(|| invalid(format!("cron {expr:?} never comes due")))?;
            (ScheduleKind::Cron, next)
        } else if let Some(at) = &req.at {
            let at = chrono::DateTime::parse_from_rfc3339(at)
                .map_err(|e| invalid(format!("at {at:?} is not an RFC 3339 time: {e}")))?;
            (ScheduleKind::Once, at.timestamp_millis())
        } else if let Some(at_ms) = req.at_ms {
            (ScheduleKind::Once, at_ms)
        } else {
            let delay = req.delay_ms.unwrap_or(0);
            if delay < 0 {
                return Err(invalid("delay_ms must not be negative"));
            }
            (ScheduleKind::Once, now_ms.saturating_add(delay))
        };
        if req.cron.is_none() && req.tz.is_some() {
            return Err(invalid("tz applies to cron schedules only"));
        }
        let (action, exec, url, secret, payload) = match (&req.exec, &req.webhook) {
            (Some(exec), None) => {
                if !exec.get("command").is_some_and(Value::is_string) {
                    return Err(invalid("exec must be an exec request with a command"));
                }
                (
                    ScheduleAction::Exec,
                    Some(exec.to_string()),
                    None,
                    None,
                    None,
                )
            }
            (None, Some(hook)) => {
                if !(hook.url.starts_with("https://") || hook.url.starts_with("http://")) {
                    return Err(invalid("webhook url must be http:// or https://"));
                }
                let secret = hook
                    .secret
                    .clone()
                    .unwrap_or_else(|| generated_secret.to_string());
                if secret.len() < crate::hooks::MIN_SECRET_LEN {
                    return Err(invalid(format!(
                        "webhook secret must be at least {} bytes",
                        crate::hooks::MIN_SECRET_LEN
                    )));
                }
                (
                    ScheduleAction::Webhook,
                    None,
                    Some(hook.url.clone()),
                    Some(secret),
                    Some(hook.body.to_string()),
                )
            }
            _ => return Err(invalid("give exactly one of exec and webhook")),
        };
        let max_attempts = i64::from(req.max_attempts.unwrap_or(1));
        if !(1..=20).contains(&max_attempts) {
            return Err(invalid(format!(
                "max_attempts must be between 1 and 20 (got {max_attempts})"
            )));
        }
        let retry_delay_ms = req.retry_delay_ms.unwrap_or(10_000);
        if !(0..=MAX_RETRY_DELAY_MS).contains(&retry_delay_ms) {
            return Err(invalid(format!(
                "retry_delay_ms must be between 0 and {MAX_RETRY_DELAY_MS} (got {retry_delay_ms})"
            )));
        }
        self.db.transaction(|| {
            // A replaced schedule keeps its history but not its pending retries.
            self.db.execute(
                "UPDATE schedule_runs SET retry_at_ms = NULL WHERE schedule_id = ?",
                params![id],
            )?;
            self.db.execute(
                &format!(
                    "INSERT OR REPLACE INTO schedules ({COLUMNS}) VALUES \
                     (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, \
                      COALESCE((SELECT created_ms FROM schedules WHERE id = ?), ?))"
                ),
                params![
                    id,
                    kind.as_str(),
                    req.cron.as_deref(),
                    &tz,
                    action.as_str(),
                    exec.as_deref(),
                    url.as_deref(),
                    secret.as_deref(),
                    payload.as_deref(),
                    req.catch_up.as_str(),
                    max_attempts,
                    retry_delay_ms,
                    next_due,
                    id,
                    now_ms
                ],
            )?;
            Ok::<_, SchedError>(())
        })?;
        Ok((self.get(id)?, secret))
    }

    pub fn get(&self, id: &str) -> Result<Schedule> {
        let row = self.db.query_row(
            &format!("SELECT {} FROM schedules WHERE id = ?", select_columns()),
            params![id],
        )?;
        row.map(|r| schedule_from_row(&r))
            .unwrap_or_else(|| Err(SchedError::ScheduleNotFound { id: id.into() }))
    }

    pub fn list(&self) -> Result<Vec<Schedule>> {
        let rows = self.db.query(
            &format!("SELECT {} FROM schedules ORDER BY id", select_columns()),
            params![],
        )?;
        rows.iter().map(schedule_from_row).collect()
    }

    /// Removes the one-shot schedules that have been `done` for
    /// [`DONE_KEPT_MS`] (counted from their last run's end, or their
    /// creation if none ran), with their ledgers. Returns how many.
    pub fn prune_done(&self, now_ms: i64) -> Result<usize> {
        let expired = format!(
            "kind = 'once' AND {} AND COALESCE((SELECT MAX(r.finished_ms) FROM schedule_runs r \
             WHERE r.schedule_id = schedules.id), created_ms) <= ?",
            done()
        );
        let cutoff = now_ms.saturating_sub(DONE_KEPT_MS);
        self.db.transaction(|| {
            self.db.execute(
                &format!(
                    "DELETE FROM schedule_runs WHERE schedule_id IN \
                     (SELECT id FROM schedules WHERE {expired})"
                ),
                params![cutoff],
            )?;
            let gone = self.db.query(
                &format!("DELETE FROM schedules WHERE {expired} RETURNING id"),
                params![cutoff],
            )?;
            Ok(gone.len())
        })
    }

    /// Deletes schedule `id` and its ledger.
    pub fn delete(&self, id: &str) -> Result<()> {
        self.db.transaction(|| {
            let gone = self.db.query_row(
                "DELETE FROM schedules WHERE id = ? RETURNING id",
                params![id],
            )?;
            if gone.is_none() {
                return Err(SchedError::ScheduleNotFound { id: id.into() });
            }
            self.db.execute(
                "DELETE FROM schedule_runs WHERE schedule_id = ?",
                params![id],
            )?;
            Ok(())
        })
    }

    /// Up to `limit` ledger rows of schedule `id`, newest first.
    pub fn runs(&self, id: &str, limit: usize) -> Result<Vec<Run>> {
        let rows = self.db.query(
            &format!(
                "SELECT {RUN_COLUMNS} FROM schedule_runs WHERE schedule_id = ? \
                 ORDER BY due_ms DESC, attempt DESC LIMIT ?"
            ),
            params![id, limit as i64],
        )?;
        rows.iter().map(run_from_row).collect()
    }

    /// The earliest time a run or a retry is due.
    pub fn next_wake(&self) -> Result<Option<i64>> {
        let row = self.db.query_row(
            "SELECT MIN(t) FROM (SELECT MIN(next_due_ms) AS t FROM schedules \
             UNION ALL SELECT MIN(retry_at_ms) FROM schedule_runs)",
            params![],
        )?;
        Ok(row.unwrap_or_default().opt_int(0)?)
    }

    /// Records and returns the next run due at `now_ms`, if any: the ledger
    /// row is written and the schedule advanced, in one transaction, before
    /// the caller starts the run.
    pub fn take_due(&self, now_ms: i64) -> Result<Option<RunTicket>> {
        self.db.transaction(|| loop {
            let retry = self.db.query_row(
                "SELECT schedule_id, due_ms, attempt, skipped, retry_at_ms FROM schedule_runs \
                 WHERE retry_at_ms <= ? ORDER BY retry_at_ms LIMIT 1",
                params![now_ms],
            )?;
            let due = self.db.query_row(
                &format!(
                    "SELECT {} FROM schedules WHERE next_due_ms <= ? \
                     ORDER BY next_due_ms LIMIT 1",
                    select_columns()
                ),
                params![now_ms],
            )?;
            let retry_first = match (&retry, &due) {
                (Some(r), Some(d)) => r.int(4)? <= d.int(12)?,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => return Ok(None),
            };
            if retry_first {
                let row = retry.expect("retry_first implies a retry");
                let (id, due_ms, attempt, skipped) = (
                    row.text(0)?.to_string(),
                    row.int(1)?,
                    row.int(2)?,
                    row.int(3)?,
                );
                self.db.execute(
                    "UPDATE schedule_runs SET retry_at_ms = NULL \
                     WHERE schedule_id = ? AND due_ms = ? AND attempt = ?",
                    params![&id, due_ms, attempt],
                )?;
                let schedule = match self.get(&id) {
                    Ok(schedule) => schedule,
                    // Deleted since: its retries went with it.
                    Err(SchedError::ScheduleNotFound { .. }) => continue,
                    // Unreadable: the retry fails, on the record.
                    Err(SchedError::Corrupt(reason)) => {
                        self.record_corrupt(&id, due_ms, attempt + 1, skipped, &reason, now_ms)?;
                        continue;
                    }
                    Err(error) => return Err(error),
                };
                if self.record(&id, due_ms, attempt + 1, skipped, now_ms)? {
                    return Ok(Some(RunTicket {
                        schedule,
                        due_ms,
                        attempt: attempt + 1,
                        skipped,
                    }));
                }
                continue;
            }
            let due = due.expect("due exists");
            let schedule = match schedule_from_row(&due).and_then(|s| Ok((s.recurrence()?, s))) {
                Ok(schedule) => schedule,
                // Unreadable: it stops, and its due time fails on the
                // record, rather than blocking every other schedule.
                Err(SchedError::Corrupt(reason)) => {
                    let id = due.text(0)?.to_string();
                    let due_ms = due.int(12)?;
                    self.db.execute(
                        "UPDATE schedules SET next_due_ms = NULL WHERE id = ?",
                        params![&id],
                    )?;
                    self.record_corrupt(&id, due_ms, 1, 0, &reason, now_ms)?;
                    continue;
                }
                Err(error) => return Err(error),
            };
            if let Some(ticket) = self.advance(schedule, now_ms)? {
                return Ok(Some(ticket));
            }
        })
    }

    /// Applies the catch-up policy to a due schedule, advances it, and
    /// records the run to start (if any).
    fn advance(
        &self,
        (recurrence, schedule): (Recurrence, Schedule),
        now_ms: i64,
    ) -> Result<Option<RunTicket>> {
        let first = schedule.next_due_ms.expect("due schedules have a due time");
        let keep = match schedule.catch_up {
            CatchUp::All => MAX_CATCH_UP,
            CatchUp::Latest | CatchUp::Skip => 1,
        };
        // The due times at or before now: how many, and the newest `keep`.
        let mut recent = VecDeque::from([first]);
        let mut count = 1usize;
        let mut last = first;
        let mut next = recurrence.next_after(first);
        while let Some(due) = next.filter(|due| *due <= now_ms) {
            if count >= MAX_ENUMERATED {
                break;
            }
            count += 1;
            last = due;
            recent.push_back(due);
            if recent.len() > keep {
                recent.pop_front();
            }
            next = recurrence.next_after(due);
        }
        let (run, skipped) = match schedule.catch_up {
            CatchUp::All if count <= MAX_CATCH_UP => (Some(first), 0),
            CatchUp::All => (recent.front().copied(), count - recent.len()),
            CatchUp::Latest => (Some(last), count - 1),
            CatchUp::Skip if now_ms - last <= LATE_AFTER_MS => (Some(last), count - 1),
            CatchUp::Skip => (None, count),
        };
        let skipped = skipped as i64;
        let resume_after = run.unwrap_or(last);
        let next_due = if run == Some(first) && schedule.catch_up == CatchUp::All {
            recurrence.next_after(first)
        } else if resume_after == last {
            next
        } else {
            recurrence.next_after(resume_after)
        };
        self.db.execute(
            "UPDATE schedules SET next_due_ms = ? WHERE id = ?",
            params![next_due, &schedule.id],
        )?;
        let Some(due_ms) = run else {
            self.db.execute(
                "INSERT OR IGNORE INTO schedule_runs \
                 (schedule_id, due_ms, attempt, state, skipped, started_ms, finished_ms, error) \
                 VALUES (?, ?, 1, 'skipped', ?, ?, ?, 'missed while asleep; catch_up is skip')",
                params![&schedule.id, last, skipped, now_ms, now_ms],
            )?;
            return Ok(None);
        };
        if !self.record(&schedule.id, due_ms, 1, skipped, now_ms)? {
            // Already recorded (cannot happen while next_due only moves
            // forward, but the ledger is the last word): never run twice.
            return Ok(None);
        }
        let schedule = Schedule {
            next_due_ms: next_due,
            ..schedule
        };
        Ok(Some(RunTicket {
            schedule,
            due_ms,
            attempt: 1,
            skipped,
        }))
    }

    /// Records an attempt that could not start because its schedule's row
    /// is unreadable.
    fn record_corrupt(
        &self,
        id: &str,
        due_ms: i64,
        attempt: i64,
        skipped: i64,
        reason: &str,
        now_ms: i64,
    ) -> Result<()> {
        let error = format!("the schedule is unreadable: {reason}");
        self.db.execute(
            "INSERT OR IGNORE INTO schedule_runs \
             (schedule_id, due_ms, attempt, state, skipped, started_ms, finished_ms, error) \
             VALUES (?, ?, ?, 'failed', ?, ?, ?, ?)",
            params![id, due_ms, attempt, skipped, now_ms, now_ms, error.as_str()],
        )?;
        Ok(())
    }

    /// Writes a `running` ledger row; false if that attempt exists already.
    fn record(
        &self,
        id: &str,
        due_ms: i64,
        attempt: i64,
        skipped: i64,
        now_ms: i64,
    ) -> Result<bool> {
        let inserted = self.db.query_row(
            "INSERT INTO schedule_runs (schedule_id, due_ms, attempt, state, skipped, started_ms) \
             VALUES (?, ?, ?, 'running', ?, ?) ON CONFLICT DO NOTHING RETURNING attempt",
            params![id, due_ms, attempt, skipped, now_ms],
        )?;
        Ok(inserted.is_some())
    }

    /// Notes the job a run started, before it runs.
    pub fn set_job(&self, ticket: &RunTicket, job_id: i64) -> Result<()> {
        self.db.execute(
            "UPDATE schedule_runs SET job_id = ? WHERE schedule_id = ? AND due_ms = ? AND attempt = ?",
            params![job_id, &ticket.schedule.id, ticket.due_ms, ticket.attempt],
        )?;
        Ok(())
    }

    /// Records how a run ended; a failure with attempts left queues a retry.
    pub fn finish_run(&self, ticket: &RunTicket, outcome: &RunOutcome, now_ms: i64) -> Result<Run> {
        let retry_at = (!outcome.ok && ticket.attempt < ticket.schedule.max_attempts)
            .then(|| now_ms + retry_delay(ticket.schedule.retry_delay_ms, ticket.attempt));
        let row = self.db.query_row(
            &format!(
                "UPDATE schedule_runs SET state = ?, job_id = COALESCE(?, job_id), status = ?, \
                 error = ?, finished_ms = ?, retry_at_ms = ? \
                 WHERE schedule_id = ? AND due_ms = ? AND attempt = ? RETURNING {RUN_COLUMNS}"
            ),
            params![
                if outcome.ok {
                    RunState::Succeeded.as_str()
                } else {
                    RunState::Failed.as_str()
                },
                outcome.job_id,
                outcome.status,
                outcome.error.as_deref(),
                now_ms,
                retry_at,
                &ticket.schedule.id,
                ticket.due_ms,
                ticket.attempt
            ],
        )?;
        // The schedule may have been deleted while it ran: nothing to record.
        match row {
            Some(row) => run_from_row(&row),
            None => Err(SchedError::ScheduleNotFound {
                id: ticket.schedule.id.clone(),
            }),
        }
    }

    /// Marks runs left `running` by a restart `interrupted`, queueing a
    /// retry where attempts remain. Returns how many there were.
    pub fn interrupt_running(&self, now_ms: i64) -> Result<usize> {
        let rows = self.db.query(
            "SELECT r.schedule_id, r.due_ms, r.attempt, s.max_attempts, s.retry_delay_ms \
             FROM schedule_runs r JOIN schedules s ON s.id = r.schedule_id \
             WHERE r.state = 'running'",
            params![],
        )?;
        for row in &rows {
            let attempt = row.int(2)?;
            let delay = retry_delay(row.int(4)?, attempt);
            let retry_at = (attempt < row.int(3)?).then_some(now_ms + delay);
            self.db.execute(
                "UPDATE schedule_runs SET state = 'interrupted', finished_ms = ?, retry_at_ms = ?, \
                 error = 'interrupted: the agent restarted during the run' \
                 WHERE schedule_id = ? AND due_ms = ? AND attempt = ?",
                params![now_ms, retry_at, row.text(0)?, row.int(1)?, attempt],
            )?;
        }
        Ok(rows.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_db;

    const SECRET: &str = "generated-secret-0123456789";

    fn request(body: Value) -> ScheduleRequest {
        serde_json::from_value(body).unwrap()
    }

    fn exec_every_2s(catch_up: &str) -> ScheduleRequest {
        request(json!({
            "cron": "*/2 * * * * *",
            "exec": { "command": "echo tick" },
            "catch_up": catch_up,
        }))
    }

    #[test]
    fn the_schedule_count_is_bounded_but_replacing_is_not_creating() {
        let db = test_db();
        let schedules = Schedules::with_limit(&db, 2);
        schedules
            .put("a", &exec_every_2s("latest"), SECRET, 0)
            .unwrap();
        schedules
            .put("b", &exec_every_2s("latest"), SECRET, 0)
            .unwrap();
        let error = schedules
            .put("c", &exec_every_2s("latest"), SECRET, 0)
            .unwrap_err();
        assert_eq!(error.code(), "ENOSPC");
        assert!(error.to_string().contains("max_schedules"), "{error}");
        schedules
            .put("b", &exec_every_2s("skip"), SECRET, 0)
            .unwrap();
        assert!(schedules.get("c").is_err(), "nothing was created");
    }

    fn ok() -> RunOutcome {
        RunOutcome {
            ok: true,
            ..RunOutcome::default()
        }
    }

    fn failed(error: &str) -> RunOutcome {
        RunOutcome {
            ok: false,
            error: Some(error.into()),
            ..RunOutcome::default()
        }
    }

    #[test]
    fn one_shot_runs_once_and_a_repeated_alarm_finds_nothing() {
        let db = test_db();
        let s = Schedules::new(&db);
        let req = request(json!({ "delay_ms": 500, "exec": { "command": "echo hi" } }));
        let (schedule, secret) = s.put("once", &req, SECRET, 1_000).unwrap();
        assert_eq!(
            (schedule.kind.as_str(), schedule.next_due_ms),
            ("once", Some(1_500))
        );
        assert_eq!(secret, None);
        assert_eq!(s.next_wake().unwrap(), Some(1_500));
        assert!(s.take_due(1_499).unwrap().is_none(), "ran early");
        let ticket = s.take_due(1_500).unwrap().unwrap();
        assert_eq!(
            (ticket.due_ms, ticket.attempt, ticket.skipped),
            (1_500, 1, 0)
        );
        // The alarm is delivered again (retry, duplicate): nothing is due.
        assert!(s.take_due(1_501).unwrap().is_none());
        assert_eq!(s.next_wake().unwrap(), None);
        s.finish_run(&ticket, &ok(), 1_600).unwrap();
        let runs = s.runs("once", 10).unwrap();
        assert_eq!(runs.len(), 1);
        assert_eq!(
            (runs[0].state.as_str(), runs[0].finished_ms),
            ("succeeded", Some(1_600))
        );
    }

    /// A one-shot schedule that ran for the last time is listed as `done`
    /// (not counted against the limit) until its retention ends, then
    /// removed with its ledger; one with a retry pending is not done.
    #[test]
    fn a_finished_one_shot_is_listed_done_then_removed() {
        let db = test_db();
        let s = Schedules::with_limit(&db, 1);
        let req = request(json!({
            "delay_ms": 500, "exec": { "command": "false" }, "max_attempts": 2, "retry_delay_ms": 100,
        }));
        s.put("once", &req, SECRET, 1_000).unwrap();
        assert_eq!(s.get("once").unwrap().state, ScheduleState::Scheduled);
        let ticket = s.take_due(1_500).unwrap().unwrap();
        assert_eq!(s.get("once").unwrap().state, ScheduleState::Running);
        s.finish_run(&ticket, &failed("exit 1"), 1_600).unwrap();
        // A retry is pending: still running, and it counts.
        assert_eq!(s.get("once").unwrap().state, ScheduleState::Running);
        assert!(s.put("other", &req, SECRET, 1_600).is_err(), "the limit");
        let retry = s.take_due(1_700).unwrap().unwrap();
        s.finish_run(&retry, &ok(), 1_800).unwrap();
        let done = s.get("once").unwrap();
        assert_eq!(
            (done.state, done.done_ms),
            (ScheduleState::Done, Some(1_800))
        );
        let shown = serde_json::to_value(&done).unwrap();
        assert_eq!(
            (shown["state"].as_str(), shown["done_ms"].as_i64()),
            (Some("done"), Some(1_800))
        );
        // Done, it no longer counts against the limit.
        s.put("other", &req, SECRET, 1_900).unwrap();
        assert_eq!(
            s.prune_done(1_800 + DONE_KEPT_MS - 1).unwrap(),
            0,
            "kept a while"
        );
        assert_eq!(s.list().unwrap().len(), 2);
        assert_eq!(s.prune_done(1_800 + DONE_KEPT_MS).unwrap(), 1);
        assert!(matches!(
            s.get("once"),
            Err(SchedError::ScheduleNotFound { .. })
        ));
        assert!(
            s.runs("once", 10).unwrap().is_empty(),
            "its ledger went with it"
        );
        assert_eq!(
            s.get("other").unwrap().state,
            ScheduleState::Scheduled,
            "pending stays"
        );
    }

    #[test]
    fn recurring_runs_each_due_time_exactly_once() {
        let db = test_db();
        let s = Schedules::new(&db);
        s.put("tick", &exec_every_2s("latest"), SECRET, 1_000)
            .unwrap();
        let mut dues = Vec::new();
        // Alarms arrive late, early, and twice; every due time runs once.
        for now in [
            2_000, 2_000, 2_100, 3_999, 4_050, 4_050, 6_000, 7_000, 8_001,
        ] {
            while let Some(ticket) = s.take_due(now).unwrap() {
                dues.push(ticket.due_ms);
                s.finish_run(&ticket, &ok(), now).unwrap();
            }
        }
        assert_eq!(dues, vec![2_000, 4_000, 6_000, 8_000]);
        assert_eq!(s.get("tick").unwrap().next_due_ms, Some(10_000));
    }

    #[test]
    fn a_primary_key_refuses_a_second_start_of_the_same_attempt() {
        let db = test_db();
        let s = Schedules::new(&db);
        s.put("tick", &exec_every_2s("latest"), SECRET, 1_000)
            .unwrap();
        let ticket = s.take_due(2_000).unwrap().unwrap();
        // Even if next_due were rewound by hand, the ledger refuses a rerun.
        db.execute("UPDATE schedules SET next_due_ms = 2000", params![])
            .unwrap();
        assert!(s.take_due(2_000).unwrap().is_none());
        assert_eq!(s.runs("tick", 10).unwrap().len(), 1);
        assert_eq!(ticket.due_ms, 2_000);
    }

    #[test]
    fn catch_up_latest_runs_the_newest_missed_due_time_once() {
        let db = test_db();
        let s = Schedules::new(&db);
        s.put("tick", &exec_every_2s("latest"), SECRET, 1_000)
            .unwrap();
        // Asleep from 1s to 11.5s: 2, 4, 6, 8 and 10 s were missed.
        let ticket = s.take_due(11_500).unwrap().unwrap();
        assert_eq!((ticket.due_ms, ticket.skipped), (10_000, 4));
        assert!(s.take_due(11_500).unwrap().is_none());
        assert_eq!(s.get("tick").unwrap().next_due_ms, Some(12_000));
    }

    #[test]
    fn catch_up_all_replays_missed_due_times_in_order() {
        let db = test_db();
        let s = Schedules::new(&db);
        s.put("tick", &exec_every_2s("all"), SECRET, 1_000).unwrap();
        let mut dues = Vec::new();
        while let Some(ticket) = s.take_due(9_000).unwrap() {
            assert_eq!(ticket.skipped, 0);
            dues.push(ticket.due_ms);
        }
        assert_eq!(dues, vec![2_000, 4_000, 6_000, 8_000]);
    }

    #[test]
    fn catch_up_all_is_bounded() {
        let db = test_db();
        let s = Schedules::new(&db);
        s.put("tick", &exec_every_2s("all"), SECRET, 0).unwrap();
        // 300 due times missed; only the newest 100 run.
        let first = s.take_due(600_000).unwrap().unwrap();
        assert_eq!((first.due_ms, first.skipped), (402_000, 200));
        let mut count = 1;
        while s.take_due(600_000).unwrap().is_some() {
            count += 1;
        }
        assert_eq!(count, MAX_CATCH_UP);
    }

    #[test]
    fn catch_up_skip_drops_late_runs_and_records_them() {
        let db = test_db();
        let s = Schedules::new(&db);
        const HOUR: i64 = 3_600_000;
        let hourly = request(json!({
            "cron": "0 0 * * * *", "exec": { "command": "x" }, "catch_up": "skip",
        }));
        s.put("hourly", &hourly, SECRET, 0).unwrap();
        // Asleep over three due times; the newest is two minutes late.
        assert!(
            s.take_due(3 * HOUR + 120_000).unwrap().is_none(),
            "a late run ran"
        );
        let runs = s.runs("hourly", 10).unwrap();
        assert_eq!(runs.len(), 1);
        assert_eq!((runs[0].state.as_str(), runs[0].skipped), ("skipped", 3));
        assert_eq!(s.get("hourly").unwrap().next_due_ms, Some(4 * HOUR));
        // An on-time due time runs, and so does a slightly late newest one,
        // skipping the older ones.
        assert_eq!(s.take_due(4 * HOUR + 10).unwrap().unwrap().due_ms, 4 * HOUR);
        let t = s.take_due(6 * HOUR + 30_000).unwrap().unwrap();
        assert_eq!((t.due_ms, t.skipped), (6 * HOUR, 1));
    }

    #[test]
    fn failed_runs_are_retried_with_backoff_up_to_max_attempts() {
        let db = test_db();
        let s = Schedules::new(&db);
        let req = request(json!({
            "at_ms": 1_000, "exec": { "command": "exit 3" },
            "max_attempts": 3, "retry_delay_ms": 100,
        }));
        s.put("flaky", &req, SECRET, 0).unwrap();
        let t1 = s.take_due(1_000).unwrap().unwrap();
        let r1 = s.finish_run(&t1, &failed("exit 3"), 1_010).unwrap();
        assert_eq!(r1.retry_at_ms, Some(1_110));
        assert_eq!(s.next_wake().unwrap(), Some(1_110));
        assert!(s.take_due(1_109).unwrap().is_none());
        let t2 = s.take_due(1_110).unwrap().unwrap();
        assert_eq!((t2.due_ms, t2.attempt), (1_000, 2));
        let r2 = s.finish_run(&t2, &failed("exit 3"), 1_120).unwrap();
        assert_eq!(r2.retry_at_ms, Some(1_320), "backoff doubles");
        let t3 = s.take_due(2_000).unwrap().unwrap();
        let r3 = s.finish_run(&t3, &failed("exit 3"), 2_001).unwrap();
        assert_eq!(r3.retry_at_ms, None, "retried past max_attempts");
        assert_eq!(s.next_wake().unwrap(), None);
        let states: Vec<(i64, RunState)> = s
            .runs("flaky", 10)
            .unwrap()
            .into_iter()
            .map(|r| (r.attempt, r.state))
            .collect();
        assert_eq!(
            states,
            vec![
                (3, RunState::Failed),
                (2, RunState::Failed),
                (1, RunState::Failed)
            ]
        );
    }

    #[test]
    fn a_run_cut_off_by_a_restart_is_recorded_and_retried() {
        let db = test_db();
        let s = Schedules::new(&db);
        let req = request(json!({
            "at_ms": 1_000, "exec": { "command": "echo" }, "max_attempts": 2, "retry_delay_ms": 50,
        }));
        s.put("job", &req, SECRET, 0).unwrap();
        s.take_due(1_000).unwrap().unwrap();
        // The agent dies mid-run; at the next start:
        assert_eq!(s.interrupt_running(5_000).unwrap(), 1);
        let run = &s.runs("job", 10).unwrap()[0];
        assert_eq!(
            (run.state.as_str(), run.retry_at_ms),
            ("interrupted", Some(5_050))
        );
        let retry = s.take_due(5_050).unwrap().unwrap();
        assert_eq!((retry.due_ms, retry.attempt), (1_000, 2));
        s.finish_run(&retry, &ok(), 5_060).unwrap();
        assert_eq!(s.interrupt_running(6_000).unwrap(), 0);
    }

    #[test]
    fn webhook_schedules_keep_their_secret_private() {
        let db = test_db();
        let s = Schedules::new(&db);
        let req = request(json!({
            "cron": "0 9 * * MON-FRI", "tz": "Europe/Paris",
            "webhook": { "url": "https://example.com/hook", "body": { "k": 1 } },
        }));
        let (schedule, secret) = s.put("daily", &req, SECRET, 0).unwrap();
        assert_eq!(secret.as_deref(), Some(SECRET));
        let shown = serde_json::to_value(&schedule).unwrap();
        assert!(!shown.to_string().contains(SECRET), "{shown}");
        assert_eq!(shown["url"], "https://example.com/hook");
        // 1970-01-01 was a Thursday: 09:00 Paris (CET, +1) is 08:00 UTC.
        assert_eq!(schedule.next_due_ms, Some(8 * 3_600_000));
        let ticket = s.take_due(8 * 3_600_000).unwrap().unwrap();
        let body: Value = serde_json::from_str(&ticket.webhook_body()).unwrap();
        assert_eq!(body["body"], json!({ "k": 1 }));
        assert_eq!(body["schedule"], "daily");
    }

    #[test]
    fn bad_requests_are_refused() {
        let db = test_db();
        let s = Schedules::new(&db);
        for body in [
            json!({ "exec": { "command": "x" } }),
            json!({ "cron": "* * * * *", "delay_ms": 1, "exec": { "command": "x" } }),
            json!({ "cron": "* * * *", "exec": { "command": "x" } }),
            json!({ "cron": "* * * * *", "tz": "Nowhere/Land", "exec": { "command": "x" } }),
            json!({ "delay_ms": 1 }),
            json!({ "delay_ms": 1, "exec": { "cmd": "x" } }),
            json!({ "delay_ms": -1, "exec": { "command": "x" } }),
            json!({ "at": "tomorrow", "exec": { "command": "x" } }),
            json!({ "delay_ms": 1, "webhook": { "url": "ftp://x" } }),
            json!({ "delay_ms": 1, "webhook": { "url": "https://x", "secret": "short" } }),
            json!({ "delay_ms": 1, "exec": { "command": "x" }, "max_attempts": 0 }),
        ] {
            assert!(
                s.put("x", &request(body.clone()), SECRET, 0).is_err(),
                "{body}"
            );
        }
        let ok = request(json!({ "delay_ms": 1, "exec": { "command": "x" } }));
        assert!(s.put("bad id", &ok, SECRET, 0).is_err());
        assert!(s.list().unwrap().is_empty());
    }

    #[test]
    fn replace_and_delete() {
        let db = test_db();
        let s = Schedules::new(&db);
        s.put("a", &exec_every_2s("latest"), SECRET, 1_000).unwrap();
        let t = s.take_due(2_000).unwrap().unwrap();
        s.finish_run(&t, &ok(), 2_000).unwrap();
        let req = request(json!({ "delay_ms": 10_000, "exec": { "command": "x" } }));
        let (replaced, _) = s.put("a", &req, SECRET, 3_000).unwrap();
        assert_eq!(
            (replaced.kind.as_str(), replaced.created_ms),
            ("once", 1_000)
        );
        assert_eq!(s.runs("a", 10).unwrap().len(), 1, "history kept");
        s.delete("a").unwrap();
        assert!(s.runs("a", 10).unwrap().is_empty());
        assert!(matches!(
            s.delete("a"),
            Err(SchedError::ScheduleNotFound { .. })
        ));
        assert_eq!(s.next_wake().unwrap(), None);
    }

    #[test]
    fn catching_up_parses_the_cron_expression_once() {
        let db = test_db();
        let s = Schedules::new(&db);
        let req = request(json!({
            "cron": "* * * * * *", "exec": { "command": "echo" }, "catch_up": "latest",
        }));
        s.put("often", &req, "secret-secret-secret", 0).unwrap();
        let before = crate::cron::PARSES.with(|p| p.get());
        // Asleep for 10,000 due times, caught up in one take.
        let ticket = s.take_due(10_000_000).unwrap().unwrap();
        assert_eq!(ticket.skipped, 9_999);
        let parses = crate::cron::PARSES.with(|p| p.get()) - before;
        assert!(parses <= 2, "parsed {parses} times while catching up");
    }

    #[test]
    fn an_unreadable_schedule_fails_on_the_record_instead_of_running() {
        let db = test_db();
        let s = Schedules::new(&db);
        let req = request(json!({ "at_ms": 1_000, "exec": { "command": "echo" } }));
        s.put("broken", &req, "secret-secret-secret", 0).unwrap();
        s.put("fine", &req, "secret-secret-secret", 0).unwrap();
        db.execute(
            "UPDATE schedules SET action = 'bogus' WHERE id = 'broken'",
            params![],
        )
        .unwrap();
        // The broken one is not run (as an exec or anything), and does not
        // block the other.
        let ticket = s.take_due(2_000).unwrap().unwrap();
        assert_eq!(ticket.schedule.id, "fine");
        assert!(s.take_due(2_000).unwrap().is_none());
        let row = db
            .query_row(
                "SELECT state, error, (SELECT next_due_ms FROM schedules WHERE id = 'broken') \
                 FROM schedule_runs WHERE schedule_id = 'broken'",
                params![],
            )
            .unwrap()
            .unwrap();
        assert_eq!(row.text(0).unwrap(), "failed");
        assert!(row.text(1).unwrap().contains("bogus"), "{:?}", row.text(1));
        assert_eq!(row.opt_int(2).unwrap(), None, "a broken schedule stops");
    }

    #[test]
    fn a_retry_of_an_unreadable_schedule_is_recorded_not_dropped() {
        let db = test_db();
        let s = Schedules::new(&db);
        let req = request(json!({
            "at_ms": 1_000, "exec": { "command": "echo" }, "max_attempts": 3, "retry_delay_ms": 10,
        }));
        s.put("flaky", &req, "secret-secret-secret", 0).unwrap();
        let ticket = s.take_due(1_000).unwrap().unwrap();
        s.finish_run(&ticket, &failed("exit 1"), 1_001).unwrap();
        db.execute("UPDATE schedules SET catch_up = 'sometimes'", params![])
            .unwrap();
        assert!(s.take_due(5_000).unwrap().is_none());
        let attempts: Vec<(i64, String)> = db
            .query(
                "SELECT attempt, state FROM schedule_runs ORDER BY attempt",
                params![],
            )
            .unwrap()
            .iter()
            .map(|r| (r.int(0).unwrap(), r.text(1).unwrap().to_string()))
            .collect();
        assert_eq!(
            attempts,
            vec![(1, "failed".to_string()), (2, "failed".to_string())],
            "the second attempt is on the record"
        );
    }
}
