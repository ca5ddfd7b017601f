//! Computer jobs that outlive an alarm: what is kept to pick one back up.
//!
//! A job's command runs detached on the computer, so it goes on when the
//! alarm that follows it must end (its wall time is limited). The row is
//! written as soon as the command starts, so even an agent restarted in
//! the middle of a slice picks the command up again instead of counting it
//! lost; the offset to read on from is where the job's own output log ends
//! plus what the computer dropped unread, so each byte lands in the log
//! once.

use stead_sql::{params, Row, Sql, SqlError};

use super::Detached;

/// A detached command and the job it belongs to.
#[derive(Debug, Clone)]
pub struct DetachedJob {
    pub job: i64,
    /// `offset` is 0 here: it is the job log's end plus `dropped`.
    pub detached: Detached,
    /// Output bytes the computer no longer held when asked.
    pub dropped: u64,
    /// How many alarms have followed it (the first included).
    pub slices: i64,
}

const COLUMNS: &str = "job_id, exec, instance, base, sent, dropped, slices";

fn from_row(row: &Row) -> Result<DetachedJob, SqlError> {
    let sent = serde_json::from_str(row.text(4)?).unwrap_or_default();
    Ok(DetachedJob {
        job: row.int(0)?,
        detached: Detached {
            exec: row.text(1)?.to_string(),
            instance: row.text(2)?.to_string(),
            base: row.int(3)?,
            offset: 0,
            sent,
        },
        dropped: u64::try_from(row.int(5)?).unwrap_or(0),
        slices: row.int(6)?,
    })
}

/// Records that job `job`'s command started detached.
pub fn started(db: &impl Sql, job: i64, detached: &Detached) -> Result<(), SqlError> {
    let sent = serde_json::to_string(&detached.sent).expect("transfers serialize");
    db.execute(
        "INSERT INTO computer_jobs (job_id, exec, instance, base, sent) VALUES (?, ?, ?, ?, ?) \
         ON CONFLICT (job_id) DO UPDATE SET exec = excluded.exec, instance = excluded.instance, \
         base = excluded.base, sent = excluded.sent, dropped = 0, slices = 1",
        params![
            job,
            detached.exec.as_str(),
            detached.instance.as_str(),
            detached.base,
            sent.as_str()
        ],
    )?;
    Ok(())
}

/// The oldest detached job still running, if any.
pub fn first(db: &impl Sql) -> Result<Option<DetachedJob>, SqlError> {
    db.query_row(
        &format!("SELECT {COLUMNS} FROM computer_jobs ORDER BY job_id LIMIT 1"),
        params![],
    )?
    .map(|row| from_row(&row))
    .transpose()
}

/// Job `job`'s detached command, if it has one running.
pub fn of_job(db: &impl Sql, job: i64) -> Result<Option<DetachedJob>, SqlError> {
    db.query_row(
        &format!("SELECT {COLUMNS} FROM computer_jobs WHERE job_id = ?"),
        params![job],
    )?
    .map(|row| from_row(&row))
    .transpose()
}

/// Every job with a detached command running.
pub fn jobs(db: &impl Sql) -> Result<Vec<i64>, SqlError> {
    db.query("SELECT job_id FROM computer_jobs", params![])?
        .iter()
        .map(|row| row.int(0))
        .collect()
}

/// Counts one more alarm following job `job`.
pub fn next_slice(db: &impl Sql, job: i64) -> Result<(), SqlError> {
    db.execute(
        "UPDATE computer_jobs SET slices = slices + 1 WHERE job_id = ?",
        params![job],
    )?;
    Ok(())
}

/// Adds `bytes` the computer dropped unread to job `job`'s offset.
pub fn add_dropped(db: &impl Sql, job: i64, bytes: u64) -> Result<(), SqlError> {
    db.execute(
        "UPDATE computer_jobs SET dropped = dropped + ? WHERE job_id = ?",
        params![i64::try_from(bytes).unwrap_or(i64::MAX), job],
    )?;
    Ok(())
}

/// Forgets job `job`'s detached command (it ended).
pub fn finished(db: &impl Sql, job: i64) -> Result<(), SqlError> {
    db.execute("DELETE FROM computer_jobs WHERE job_id = ?", params![job])?;
    Ok(())
}
