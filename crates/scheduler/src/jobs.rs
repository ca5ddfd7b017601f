//! Durable jobs and their output logs.
//!
//! A job is one exec that outlives the request that started it. Its record
//! holds the command, backend, state, exit code and timings; its output is a
//! log of pieces, each at most [`JobLimits::piece_bytes`] long and keyed by
//! the byte offset where it starts. Offsets never change, so a reader that
//! lost its connection resumes from the last offset it saw and gets every
//! byte after it exactly once (stdout and stderr share one offset space; each
//! piece says which stream it came from).
//!
//! Output is bounded twice: a job keeps at most `max_job_output` bytes (the
//! oldest pieces of a chatty job go first, and `kept_from` says where its
//! log now starts), and the workspace keeps at most `workspace_output` bytes
//! and `max_jobs` finished jobs, pruning whole finished jobs oldest first.
//! Running and queued jobs are never pruned.
//!
//! States: `queued` → `running` → `succeeded` | `failed` | `timed_out`, or
//! `cancelled` from either of the first two. Cancelling a running job only
//! records the request (a synchronous in-isolate exec cannot be stopped
//! halfway); the job then ends `cancelled` whatever its exit code. A job
//! found `running` when the agent starts was cut off by a restart: it is
//! marked `failed` with the reason, never re-run, because it may have
//! half-applied its writes.

use serde::Serialize;
use serde_json::Value;
use stead_sql::{params, Row, Sql};

use crate::{Result, SchedError};

/// A job's lifecycle state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    Queued,
    Running,
    Succeeded,
    Failed,
    Cancelled,
    TimedOut,
}

impl JobState {
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Succeeded => "succeeded",
            JobState::Failed => "failed",
            JobState::Cancelled => "cancelled",
            JobState::TimedOut => "timed_out",
        }
    }

    fn parse(text: &str) -> Result<Self> {
        Ok(match text {
            "queued" => JobState::Queued,
            "running" => JobState::Running,
            "succeeded" => JobState::Succeeded,
            "failed" => JobState::Failed,
            "cancelled" => JobState::Cancelled,
            "timed_out" => JobState::TimedOut,
            other => return Err(SchedError::Corrupt(format!("job state {other:?}"))),
        })
    }

    /// Whether the job has ended.
    pub fn is_final(self) -> bool {
        !matches!(self, JobState::Queued | JobState::Running)
    }
}

impl std::fmt::Display for JobState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which output stream a piece came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    fn code(self) -> i64 {
        match self {
            Stream::Stdout => 1,
            Stream::Stderr => 2,
        }
    }

    fn from_code(code: i64) -> Result<Self> {
        match code {
            1 => Ok(Stream::Stdout),
            2 => Ok(Stream::Stderr),
            other => Err(SchedError::Corrupt(format!("stream {other}"))),
        }
    }
}

/// Bounds on stored output.
#[derive(Debug, Clone, Copy)]
pub struct JobLimits {
    /// Largest stored piece (a row): appends are split to fit.
    pub piece_bytes: usize,
    /// Output one job keeps; older pieces of that job are dropped.
    pub max_job_output: i64,
    /// Output the workspace keeps over all jobs; oldest finished jobs go.
    pub workspace_output: i64,
    /// Finished jobs the workspace keeps.
    pub max_jobs: i64,
}

impl Default for JobLimits {
    fn default() -> Self {
        JobLimits {
            piece_bytes: 16 << 10,
            max_job_output: 16 << 20,
            workspace_output: 64 << 20,
            max_jobs: 1000,
        }
    }
}

/// Where a command runs: the light shell in the isolate, or the computer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    Shell,
    Computer,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Shell => "shell",
            Backend::Computer => "computer",
        }
    }

    fn parse(text: &str) -> Result<Self> {
        match text {
            "shell" => Ok(Backend::Shell),
            "computer" => Ok(Backend::Computer),
            other => Err(SchedError::Corrupt(format!("job backend {other:?}"))),
        }
    }
}

/// A job record.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Job {
    pub id: i64,
    /// Who started it: `api`, `socket`, `schedule:<id>` or `hook:<name>`.
    pub source: String,
    pub command: String,
    pub backend: Backend,
    pub state: JobState,
    pub exit_code: Option<i64>,
    /// Why it failed, when not a plain exit code.
    pub error: Option<String>,
    pub cancel_requested: bool,
    pub created_ms: i64,
    pub started_ms: Option<i64>,
    pub finished_ms: Option<i64>,
    /// Offset one past the last byte of output ever appended.
    pub output_bytes: i64,
    /// First offset still stored.
    pub kept_from: i64,
    /// The exec request the job runs.
    #[serde(skip)]
    pub request: Value,
}

/// What a new job runs.
#[derive(Debug, Clone)]
pub struct NewJob {
    pub source: String,
    pub backend: Backend,
    /// The exec request body; its `command` is copied into the record.
    pub request: Value,
}

/// A stored piece of output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    pub offset: i64,
    pub stream: Stream,
    /// When it was appended.
    pub at_ms: i64,
    pub data: Vec<u8>,
}

impl Piece {
    /// Offset one past the piece.
    pub fn end(&self) -> i64 {
        self.offset + self.data.len() as i64
    }
}

/// A page of a job's output.
#[derive(Debug, Clone)]
pub struct OutputPage {
    pub job: Job,
    pub from: i64,
    /// Where the next page starts.
    pub next: i64,
    pub pieces: Vec<Piece>,
    /// The job has ended and `next` is the end of its output.
    pub done: bool,
}

/// How an exec ended, as the job records it.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub exit_code: Option<i64>,
    /// A wall-time limit ended it.
    pub timed_out: bool,
    /// It could not run or was cut off (the job fails with this reason).
    pub error: Option<String>,
    /// The backend that ran it, when the exec chose one itself.
    pub backend: Option<Backend>,
}

const COLUMNS: &str = "id, source, command, backend, request, state, exit_code, error, \
    cancel_requested, created_ms, started_ms, finished_ms, output_bytes, kept_from";

fn job_from_row(row: &Row) -> Result<Job> {
    let request = serde_json::from_str(row.text(4)?)
        .map_err(|e| SchedError::Corrupt(format!("job request: {e}")))?;
    Ok(Job {
        id: row.int(0)?,
        source: row.text(1)?.to_string(),
        command: row.text(2)?.to_string(),
        backend: Backend::parse(row.text(3)?)?,
        request,
        state: JobState::parse(row.text(5)?)?,
        exit_code: row.opt_int(6)?,
        error: opt_text(row, 7)?,
        cancel_requested: row.int(8)? != 0,
        created_ms: row.int(9)?,
        started_ms: row.opt_int(10)?,
        finished_ms: row.opt_int(11)?,
        output_bytes: row.int(12)?,
        kept_from: row.int(13)?,
    })
}

pub(crate) fn opt_text(row: &Row, column: usize) -> Result<Option<String>> {
    Ok(match row.0.get(column) {
        Some(stead_sql::Value::Null) | None => None,
        Some(_) => Some(row.text(column)?.to_string()),
    })
}

fn blob(row: &Row, column: usize) -> Result<Vec<u8>> {
    match row.0.get(column) {
        Some(stead_sql::Value::Blob(b)) => Ok(b.clone()),
        Some(stead_sql::Value::Text(t)) => Ok(t.as_bytes().to_vec()),
        _ => Err(SchedError::Corrupt(format!("output column {column}"))),
    }
}

/// Where to cut `data` at most `max` bytes in: at a UTF-8 character
/// boundary when there is one nearby, so text pieces stay readable.
fn cut_point(data: &[u8], max: usize) -> usize {
    if data.len() <= max {
        return data.len();
    }
    let mut cut = max;
    // Back off over continuation bytes (at most 3 for UTF-8).
    while cut > max.saturating_sub(3) && cut > 0 && data[cut] & 0xC0 == 0x80 {
        cut -= 1;
    }
    if cut == 0 || data[cut] & 0xC0 == 0x80 {
        max
    } else {
        cut
    }
}

/// The jobs of one workspace.
pub struct Jobs<'a, S: Sql> {
    db: &'a S,
    limits: JobLimits,
}

impl<'a, S: Sql> Jobs<'a, S> {
    pub fn new(db: &'a S) -> Self {
        Jobs {
            db,
            limits: JobLimits::default(),
        }
    }

    pub fn with_limits(db: &'a S, limits: JobLimits) -> Self {
        Jobs { db, limits }
    }

    /// Records a queued job.
    pub fn create(&self, new: &NewJob, now_ms: i64) -> Result<Job> {
        let command = new
            .request
            .get("command")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let request = new.request.to_string();
        let row = self.db.query_row(
            &format!(
                "INSERT INTO jobs (source, command, backend, request, state, created_ms) \
                 VALUES (?, ?, ?, ?, 'queued', ?) RETURNING {COLUMNS}"
            ),
            params![
                &new.source,
                &command,
                new.backend.as_str(),
                &request,
                now_ms
            ],
        )?;
        job_from_row(&row.ok_or_else(|| SchedError::Corrupt("insert returned no row".into()))?)
    }

    /// The job `id`.
    pub fn get(&self, id: i64) -> Result<Job> {
        let row = self.db.query_row(
            &format!("SELECT {COLUMNS} FROM jobs WHERE id = ?"),
            params![id],
        )?;
        row.map(|row| job_from_row(&row))
            .unwrap_or(Err(SchedError::JobNotFound { id }))
    }

    /// Up to `limit` jobs, newest first, with ids below `before` when given.
    pub fn list(&self, before: Option<i64>, limit: usize) -> Result<Vec<Job>> {
        let rows = self.db.query(
            &format!("SELECT {COLUMNS} FROM jobs WHERE id < ? ORDER BY id DESC LIMIT ?"),
            params![before.unwrap_or(i64::MAX), limit as i64],
        )?;
        rows.iter().map(job_from_row).collect()
    }

    /// Whether any job waits to run.
    pub fn has_queued(&self) -> Result<bool> {
        Ok(self
            .db
            .query_row(
                "SELECT 1 FROM jobs WHERE state = 'queued' LIMIT 1",
                params![],
            )?
            .is_some())
    }

    /// Takes the oldest queued job and marks it running. The DO runs one
    /// event's synchronous code at a time, so two takers can never get the
    /// same job.
    pub fn claim_next(&self, now_ms: i64) -> Result<Option<Job>> {
        let row = self.db.query_row(
            &format!(
                "UPDATE jobs SET state = 'running', started_ms = ? \
                 WHERE id = (SELECT id FROM jobs WHERE state = 'queued' ORDER BY id LIMIT 1) \
                 RETURNING {COLUMNS}"
            ),
            params![now_ms],
        )?;
        row.map(|row| job_from_row(&row)).transpose()
    }

    /// Marks the queued job `id` running; `None` if it is no longer queued.
    pub fn claim(&self, id: i64, now_ms: i64) -> Result<Option<Job>> {
        let row = self.db.query_row(
            &format!(
                "UPDATE jobs SET state = 'running', started_ms = ? \
                 WHERE id = ? AND state = 'queued' RETURNING {COLUMNS}"
            ),
            params![now_ms, id],
        )?;
        row.map(|row| job_from_row(&row)).transpose()
    }

    /// Appends output to job `id`'s log, split into pieces of at most
    /// `piece_bytes`; returns the stored pieces. Drops the job's oldest
    /// pieces past `max_job_output`.
    pub fn append(&self, id: i64, stream: Stream, data: &[u8], now_ms: i64) -> Result<Vec<Piece>> {
        if data.is_empty() {
            return Ok(Vec::new());
        }
        self.db.transaction(|| {
            let row = self
                .db
                .query_row(
                    "SELECT output_bytes, kept_from FROM jobs WHERE id = ?",
                    params![id],
                )?
                .ok_or(SchedError::JobNotFound { id })?;
            let (mut offset, mut kept_from) = (row.int(0)?, row.int(1)?);
            let mut pieces = Vec::new();
            let mut rest = data;
            while !rest.is_empty() {
                let cut = cut_point(rest, self.limits.piece_bytes.max(4));
                let (head, tail) = rest.split_at(cut);
                self.db.execute(
                    "INSERT INTO job_output (job_id, start, stream, at_ms, data) VALUES (?, ?, ?, ?, ?)",
                    params![id, offset, stream.code(), now_ms, head],
                )?;
                pieces.push(Piece {
                    offset,
                    stream,
                    at_ms: now_ms,
                    data: head.to_vec(),
                });
                offset += head.len() as i64;
                rest = tail;
            }
            // Keep at most max_job_output: drop whole pieces from the front.
            while offset - kept_from > self.limits.max_job_output {
                let Some(first) = self.db.query_row(
                    "SELECT start, length(data) FROM job_output WHERE job_id = ? ORDER BY start LIMIT 1",
                    params![id],
                )?
                else {
                    break;
                };
                self.db.execute(
                    "DELETE FROM job_output WHERE job_id = ? AND start = ?",
                    params![id, first.int(0)?],
                )?;
                kept_from = first.int(0)? + first.int(1)?;
            }
            self.db.execute(
                "UPDATE jobs SET output_bytes = ?, kept_from = ? WHERE id = ?",
                params![offset, kept_from, id],
            )?;
            Ok(pieces)
        })
    }

    /// Records how job `id` ended and prunes old jobs. A cancel requested
    /// while it ran makes it `cancelled`.
    pub fn finish(&self, id: i64, outcome: &Outcome, now_ms: i64) -> Result<Job> {
        let job = self.get(id)?;
        if job.state.is_final() {
            return Err(SchedError::JobFinished {
                id,
                state: job.state,
            });
        }
        let state = if job.cancel_requested {
            JobState::Cancelled
        } else if outcome.timed_out {
            JobState::TimedOut
        } else if outcome.error.is_some() || outcome.exit_code != Some(0) {
            JobState::Failed
        } else {
            JobState::Succeeded
        };
        self.db.execute(
            "UPDATE jobs SET state = ?, exit_code = ?, error = ?, finished_ms = ?, \
             started_ms = COALESCE(started_ms, ?), backend = COALESCE(?, backend) WHERE id = ?",
            params![
                state.as_str(),
                outcome.exit_code,
                outcome.error.as_deref(),
                now_ms,
                now_ms,
                outcome.backend.map(Backend::as_str),
                id
            ],
        )?;
        self.prune()?;
        self.get(id)
    }

    /// Cancels job `id`: a queued job ends now; a running one is flagged and
    /// ends `cancelled` when its exec returns.
    pub fn cancel(&self, id: i64, now_ms: i64) -> Result<Job> {
        let job = self.get(id)?;
        match job.state {
            JobState::Queued => self.db.execute(
                "UPDATE jobs SET state = 'cancelled', finished_ms = ?, cancel_requested = 1 WHERE id = ?",
                params![now_ms, id],
            )?,
            JobState::Running => self.db.execute(
                "UPDATE jobs SET cancel_requested = 1 WHERE id = ?",
                params![id],
            )?,
            state => return Err(SchedError::JobFinished { id, state }),
        }
        self.get(id)
    }

    /// Marks every `running` job failed but those in `keep` (jobs whose
    /// work goes on outside this instance, such as a command running
    /// detached on the computer): called when the agent starts, when no
    /// job of this instance can be running. Returns their ids.
    pub fn fail_interrupted(&self, now_ms: i64, keep: &[i64]) -> Result<Vec<i64>> {
        let running = self
            .db
            .query("SELECT id FROM jobs WHERE state = 'running'", params![])?;
        let mut failed = Vec::new();
        for row in running {
            let id = row.int(0)?;
            if keep.contains(&id) {
                continue;
            }
            self.db.execute(
                "UPDATE jobs SET state = 'failed', finished_ms = ?, \
                 error = 'interrupted: the agent restarted while the job ran; it was not re-run' \
                 WHERE id = ?",
                params![now_ms, id],
            )?;
            failed.push(id);
        }
        Ok(failed)
    }

    /// Output of job `id` from byte offset `from`, at most about `max_bytes`
    /// (always at least one piece when there is one).
    pub fn output(&self, id: i64, from: i64, max_bytes: usize) -> Result<OutputPage> {
        let job = self.get(id)?;
        if from < 0 {
            return Err(SchedError::NegativeOffset { from });
        }
        if from < job.kept_from {
            return Err(SchedError::OutputPruned {
                id,
                from,
                kept_from: job.kept_from,
            });
        }
        if from > job.output_bytes {
            return Err(SchedError::OffsetBeyondEnd {
                id,
                from,
                end: job.output_bytes,
            });
        }
        let rows = self.db.query(
            "SELECT start, stream, at_ms, data FROM job_output \
             WHERE job_id = ? AND start + length(data) > ? ORDER BY start",
            params![id, from],
        )?;
        let mut pieces = Vec::new();
        let mut next = from;
        let mut taken = 0usize;
        for row in &rows {
            if taken >= max_bytes && !pieces.is_empty() {
                break;
            }
            let start = row.int(0)?;
            let mut data = blob(row, 3)?;
            let mut offset = start;
            if start < from {
                data.drain(..(from - start) as usize);
                offset = from;
            }
            taken += data.len();
            next = offset + data.len() as i64;
            pieces.push(Piece {
                offset,
                stream: Stream::from_code(row.int(1)?)?,
                at_ms: row.int(2)?,
                data,
            });
        }
        let done = job.state.is_final() && next == job.output_bytes;
        Ok(OutputPage {
            job,
            from,
            next,
            pieces,
            done,
        })
    }

    /// Total output bytes kept over all jobs.
    pub fn kept_bytes(&self) -> Result<i64> {
        let row = self.db.query_row(
            "SELECT COALESCE(SUM(output_bytes - kept_from), 0) FROM jobs",
            params![],
        )?;
        Ok(row.unwrap_or_default().int(0)?)
    }

    /// Deletes whole finished jobs, oldest first, until the workspace keeps
    /// at most `workspace_output` bytes and `max_jobs` finished jobs.
    /// Returns the ids deleted.
    pub fn prune(&self) -> Result<Vec<i64>> {
        let mut deleted = Vec::new();
        loop {
            let kept = self.kept_bytes()?;
            let finished = self
                .db
                .query_row(
                    "SELECT COUNT(*) FROM jobs WHERE state NOT IN ('queued', 'running')",
                    params![],
                )?
                .unwrap_or_default()
                .int(0)?;
            if kept <= self.limits.workspace_output && finished <= self.limits.max_jobs {
                return Ok(deleted);
            }
            let Some(oldest) = self.db.query_row(
                "SELECT id FROM jobs WHERE state NOT IN ('queued', 'running') ORDER BY id LIMIT 1",
                params![],
            )?
            else {
                return Ok(deleted);
            };
            let id = oldest.int(0)?;
            self.db.transaction(|| {
                self.db
                    .execute("DELETE FROM job_output WHERE job_id = ?", params![id])?;
                self.db
                    .execute("DELETE FROM jobs WHERE id = ?", params![id])?;
                Ok::<_, SchedError>(())
            })?;
            deleted.push(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_db;
    use serde_json::json;

    fn new_job(command: &str) -> NewJob {
        NewJob {
            source: "api".into(),
            backend: Backend::Shell,
            request: json!({ "command": command }),
        }
    }

    fn concat(pieces: &[Piece]) -> Vec<u8> {
        pieces.iter().flat_map(|p| p.data.clone()).collect()
    }

    #[test]
    fn lifecycle_queued_running_succeeded() {
        let db = test_db();
        let jobs = Jobs::new(&db);
        let job = jobs.create(&new_job("echo hi"), 100).unwrap();
        assert_eq!(job.state, JobState::Queued);
        assert_eq!(job.command, "echo hi");
        assert!(jobs.has_queued().unwrap());
        let running = jobs.claim_next(110).unwrap().unwrap();
        assert_eq!((running.id, running.state), (job.id, JobState::Running));
        assert_eq!(running.started_ms, Some(110));
        assert!(jobs.claim_next(111).unwrap().is_none(), "claimed twice");
        assert!(jobs.claim(job.id, 111).unwrap().is_none());
        jobs.append(job.id, Stream::Stdout, b"hi\n", 115).unwrap();
        let done = jobs
            .finish(
                job.id,
                &Outcome {
                    exit_code: Some(0),
                    ..Outcome::default()
                },
                120,
            )
            .unwrap();
        assert_eq!(done.state, JobState::Succeeded);
        assert_eq!((done.finished_ms, done.output_bytes), (Some(120), 3));
        assert!(matches!(
            jobs.finish(job.id, &Outcome::default(), 130),
            Err(SchedError::JobFinished { .. })
        ));
    }

    #[test]
    fn exit_codes_timeouts_and_errors_map_to_states() {
        let db = test_db();
        let jobs = Jobs::new(&db);
        let cases = [
            (Some(3), false, None, JobState::Failed),
            (Some(124), true, None, JobState::TimedOut),
            (
                None,
                false,
                Some("no backend".to_string()),
                JobState::Failed,
            ),
        ];
        for (exit_code, timed_out, error, want) in cases {
            let id = jobs.create(&new_job("x"), 1).unwrap().id;
            jobs.claim(id, 2).unwrap().unwrap();
            let outcome = Outcome {
                exit_code,
                timed_out,
                error: error.clone(),
                backend: Some(Backend::Computer),
            };
            let job = jobs.finish(id, &outcome, 3).unwrap();
            assert_eq!(job.state, want);
            assert_eq!(job.error, error);
            assert_eq!(job.backend, Backend::Computer);
        }
    }

    #[test]
    fn output_is_split_into_bounded_pieces_and_read_from_any_offset() {
        let db = test_db();
        let limits = JobLimits {
            piece_bytes: 10,
            ..JobLimits::default()
        };
        let jobs = Jobs::with_limits(&db, limits);
        let id = jobs.create(&new_job("x"), 1).unwrap().id;
        let text: Vec<u8> = (0..95u8).map(|i| b'a' + i % 26).collect();
        let pieces = jobs.append(id, Stream::Stdout, &text[..45], 2).unwrap();
        assert_eq!(pieces.len(), 5);
        assert!(pieces.iter().all(|p| p.data.len() <= 10));
        let more = jobs.append(id, Stream::Stderr, &text[45..], 3).unwrap();
        assert_eq!(more[0].offset, 45);
        assert_eq!(more[0].stream, Stream::Stderr);
        // Every offset, read to the end in small pages, gives exactly the rest.
        for from in 0..=95 {
            let mut got = Vec::new();
            let mut at = from;
            loop {
                let page = jobs.output(id, at, 7).unwrap();
                got.extend(concat(&page.pieces));
                if page.next == at {
                    break;
                }
                at = page.next;
            }
            assert_eq!(got, text[from as usize..], "from {from}");
        }
        assert!(matches!(
            jobs.output(id, 96, 10),
            Err(SchedError::OffsetBeyondEnd { end: 95, .. })
        ));
        assert!(matches!(
            jobs.output(id, -1, 10),
            Err(SchedError::NegativeOffset { from: -1 })
        ));
        let page = jobs.output(id, 0, 1000).unwrap();
        assert!(!page.done, "a queued job is not done");
    }

    #[test]
    fn pieces_are_cut_at_character_boundaries() {
        let db = test_db();
        let limits = JobLimits {
            piece_bytes: 5,
            ..JobLimits::default()
        };
        let jobs = Jobs::with_limits(&db, limits);
        let id = jobs.create(&new_job("x"), 1).unwrap().id;
        let text = "ééééé€€€";
        let pieces = jobs.append(id, Stream::Stdout, text.as_bytes(), 2).unwrap();
        for piece in &pieces {
            assert!(std::str::from_utf8(&piece.data).is_ok(), "{piece:?}");
        }
        assert_eq!(concat(&pieces), text.as_bytes());
    }

    #[test]
    fn a_job_keeps_its_newest_output_up_to_its_cap() {
        let db = test_db();
        let limits = JobLimits {
            piece_bytes: 10,
            max_job_output: 25,
            ..JobLimits::default()
        };
        let jobs = Jobs::with_limits(&db, limits);
        let id = jobs.create(&new_job("x"), 1).unwrap().id;
        jobs.append(id, Stream::Stdout, &[b'x'; 50], 2).unwrap();
        let job = jobs.get(id).unwrap();
        assert_eq!((job.output_bytes, job.kept_from), (50, 30));
        assert!(matches!(
            jobs.output(id, 0, 100),
            Err(SchedError::OutputPruned { kept_from: 30, .. })
        ));
        assert_eq!(concat(&jobs.output(id, 30, 100).unwrap().pieces).len(), 20);
    }

    #[test]
    fn workspace_cap_prunes_oldest_finished_jobs_first() {
        let db = test_db();
        let limits = JobLimits {
            piece_bytes: 100,
            workspace_output: 250,
            max_jobs: 10,
            ..JobLimits::default()
        };
        let jobs = Jobs::with_limits(&db, limits);
        let running = jobs.create(&new_job("long"), 0).unwrap().id;
        jobs.claim(running, 0).unwrap();
        jobs.append(running, Stream::Stdout, &[b'r'; 100], 0)
            .unwrap();
        let mut ids = Vec::new();
        for i in 0..3 {
            let id = jobs.create(&new_job("x"), i).unwrap().id;
            jobs.claim(id, i).unwrap();
            jobs.append(id, Stream::Stdout, &[b'x'; 60], i).unwrap();
            let outcome = Outcome {
                exit_code: Some(0),
                ..Outcome::default()
            };
            jobs.finish(id, &outcome, i).unwrap();
            ids.push(id);
        }
        // 100 + 3 * 60 = 280 > 250: the oldest finished job goes, the
        // running one (older still) stays.
        assert!(matches!(
            jobs.get(ids[0]),
            Err(SchedError::JobNotFound { .. })
        ));
        assert!(jobs.get(ids[1]).is_ok() && jobs.get(running).is_ok());
        assert_eq!(jobs.kept_bytes().unwrap(), 220);
        let stored = db
            .query_row(
                "SELECT COUNT(*) FROM job_output WHERE job_id = ?",
                params![ids[0]],
            )
            .unwrap()
            .unwrap()
            .int(0)
            .unwrap();
        assert_eq!(stored, 0, "pruned job left output behind");
    }

    #[test]
    fn max_jobs_bounds_finished_jobs() {
        let db = test_db();
        let limits = JobLimits {
            max_jobs: 2,
            ..JobLimits::default()
        };
        let jobs = Jobs::with_limits(&db, limits);
        for i in 0..5 {
            let id = jobs.create(&new_job("x"), i).unwrap().id;
            jobs.cancel(id, i).unwrap();
            jobs.prune().unwrap();
        }
        let left: Vec<i64> = jobs.list(None, 10).unwrap().iter().map(|j| j.id).collect();
        assert_eq!(left, vec![5, 4]);
    }

    #[test]
    fn cancel_queued_ends_it_and_cancel_running_flags_it() {
        let db = test_db();
        let jobs = Jobs::new(&db);
        let queued = jobs.create(&new_job("a"), 1).unwrap().id;
        let job = jobs.cancel(queued, 2).unwrap();
        assert_eq!((job.state, job.finished_ms), (JobState::Cancelled, Some(2)));
        assert!(jobs.claim_next(3).unwrap().is_none(), "cancelled job ran");
        assert!(matches!(
            jobs.cancel(queued, 3),
            Err(SchedError::JobFinished { .. })
        ));

        let running = jobs.create(&new_job("b"), 4).unwrap().id;
        jobs.claim(running, 5).unwrap();
        assert!(jobs.cancel(running, 6).unwrap().cancel_requested);
        let outcome = Outcome {
            exit_code: Some(0),
            ..Outcome::default()
        };
        assert_eq!(
            jobs.finish(running, &outcome, 7).unwrap().state,
            JobState::Cancelled
        );
    }

    #[test]
    fn running_jobs_are_failed_with_a_reason_after_a_restart() {
        let db = test_db();
        let jobs = Jobs::new(&db);
        let a = jobs.create(&new_job("a"), 1).unwrap().id;
        let b = jobs.create(&new_job("b"), 1).unwrap().id;
        jobs.claim(a, 2).unwrap();
        assert_eq!(jobs.fail_interrupted(9, &[]).unwrap(), vec![a]);
        let job = jobs.get(a).unwrap();
        assert_eq!(job.state, JobState::Failed);
        assert!(job.error.unwrap().contains("interrupted"));
        assert_eq!(jobs.get(b).unwrap().state, JobState::Queued);
    }

    #[test]
    fn list_pages_newest_first() {
        let db = test_db();
        let jobs = Jobs::new(&db);
        for i in 0..5 {
            jobs.create(&new_job("x"), i).unwrap();
        }
        let first: Vec<i64> = jobs.list(None, 2).unwrap().iter().map(|j| j.id).collect();
        assert_eq!(first, vec![5, 4]);
        let next: Vec<i64> = jobs
            .list(Some(4), 2)
            .unwrap()
            .iter()
            .map(|j| j.id)
            .collect();
        assert_eq!(next, vec![3, 2]);
        assert!(matches!(
            jobs.get(99),
            Err(SchedError::JobNotFound { id: 99 })
        ));
    }
}
