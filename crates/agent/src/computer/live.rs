//! Live sync back from the computer (the protocol: `stead_sync::live`):
//! while processes run, what they write is pulled into the workspace each
//! time the alarm watches them, not only when a command ends.
//!
//! One [`pull`] applies one report of at most [`BATCH`] changes, pulled
//! and applied as a command's are (content staged in SQLite in bounded
//! batches, every change in one transaction, the workspace's version kept
//! on a conflict with the container's beside it), so the Durable Object
//! holds one report's descriptions at a time however many files a process
//! writes. A live pull takes no automatic checkpoint: it runs every few
//! hundred milliseconds; the checkpoint before each command's changes
//! still is taken.
//!
//! What live sync did is kept in SQLite ([`record`], [`status`]): totals,
//! the largest report, the last error, the latest conflicts (so an agent
//! can see that a file it edited was also written on the computer) and the
//! latest changes the workspace refused (over a quota: the rest of the
//! report applied, and the next push puts the workspace's state back on
//! the computer there).

use serde_json::{json, Value};
use stead_sql::{params, Sql};
use stead_sync::live::{LiveAck, LiveReport, LiveScan, ACK_PATH, SCAN_PATH};
use stead_vfs::{Conflict, Rejected, Vfs};

use super::{load, pull_and_apply, ComputerError, Link, Moved, Pull};
use crate::host::{Method, Transport};
use crate::outcome::Transfer;

/// Most changes one live report carries.
pub const BATCH: usize = 1_000;

/// Conflicts (and refusals) kept for [`status`], newest first.
const KEPT_CONFLICTS: i64 = 100;

/// What one live pull did.
#[derive(Debug, Default)]
pub struct Round {
    /// Changes the report carried.
    pub reported: usize,
    /// Paths applied.
    pub applied: usize,
    pub conflicts: Vec<Conflict>,
    /// Paths whose files moved before their content was read: the next
    /// report has them again.
    pub left_out: usize,
    /// Changes the workspace refused (over a quota, or a path it cannot
    /// hold); the rest applied.
    pub rejected: Vec<Rejected>,
    /// More changes wait on the computer.
    pub more: bool,
}

/// Scans the computer's copy now and applies what it reports under `id`
/// (a fresh exec id). `None`: there is no copy to pull from (nothing was
/// pushed to the instance that answers).
pub async fn pull<'db, S: Sql, T: Transport>(
    db: &'db S,
    vfs: impl Fn() -> Vfs<'db, S>,
    transport: &T,
    id: &str,
) -> Result<Option<Round>, ComputerError> {
    let Some(synced) = load(db)? else {
        return Ok(None);
    };
    let link = Link::new(transport);
    let scan = LiveScan {
        id: id.to_string(),
        limit: BATCH,
    };
    let report: LiveReport = link
        .json("live scan", Method::Post, SCAN_PATH, Some(&scan))
        .await?;
    if report.instance != synced.instance {
        return Ok(None);
    }
    if report.changes.is_empty() {
        return Ok(Some(Round::default()));
    }
    let pulled = pull_and_apply(
        db,
        &vfs,
        &link,
        &Pull {
            id,
            base: synced.acked,
            changes: &report.changes,
            moved: Moved::LeaveOut,
        },
        &|| Ok(None),
        &mut Transfer::default(),
    )
    .await?;
    let ack = LiveAck {
        report: id.to_string(),
        left_out: pulled.left_out.clone(),
    };
    // Unacknowledged, the next scan reports the same again, which applies
    // as a no-op.
    let _ = link
        .bytes(
            "live ack",
            Method::Post,
            ACK_PATH,
            Some(super::link::json(&ack)),
        )
        .await;
    let (outcome, _) = pulled.applied;
    Ok(Some(Round {
        reported: report.changes.len(),
        applied: outcome.applied.len(),
        conflicts: outcome.conflicts,
        left_out: pulled.left_out.len(),
        rejected: outcome.rejected,
        more: report.more,
    }))
}

/// Adds `round` to what live sync did.
pub fn record(db: &impl Sql, round: &Round, now_ms: i64) -> Result<(), stead_sql::SqlError> {
    db.transaction(|| {
        db.execute(
            "INSERT INTO live_sync (id, pulls, files, largest, left_out, last_ms) \
             VALUES (1, 1, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET \
             pulls = pulls + 1, files = files + excluded.files, \
             largest = max(largest, excluded.largest), \
             left_out = left_out + excluded.left_out, last_ms = excluded.last_ms, \
             last_error = NULL",
            params![
                round.applied as i64,
                round.reported as i64,
                round.left_out as i64,
                now_ms
            ],
        )?;
        for conflict in &round.conflicts {
            db.execute(
                "INSERT INTO live_conflicts (path, container_copy, at_ms) VALUES (?, ?, ?)",
                params![
                    conflict.path.as_str(),
                    conflict.container_copy.as_deref(),
                    now_ms
                ],
            )?;
        }
        db.execute(
            "DELETE FROM live_conflicts WHERE id <= (SELECT max(id) FROM live_conflicts) - ?",
            params![KEPT_CONFLICTS],
        )?;
        for rejected in &round.rejected {
            // A process that keeps writing the same file is refused each
            // time: the path is listed once, at its latest refusal.
            db.execute(
                "DELETE FROM live_rejected WHERE path = ?",
                params![rejected.path.as_str()],
            )?;
            db.execute(
                "INSERT INTO live_rejected (path, code, reason, at_ms) VALUES (?, ?, ?, ?)",
                params![
                    rejected.path.as_str(),
                    rejected.code.as_str(),
                    rejected.reason.as_str(),
                    now_ms
                ],
            )?;
        }
        db.execute(
            "DELETE FROM live_rejected WHERE id <= (SELECT max(id) FROM live_rejected) - ?",
            params![KEPT_CONFLICTS],
        )?;
        Ok(())
    })
}

/// Notes that a live pull failed with `error` (it is tried again at the
/// next tick).
pub fn record_error(db: &impl Sql, error: &str, now_ms: i64) -> Result<(), stead_sql::SqlError> {
    db.execute(
        "INSERT INTO live_sync (id, pulls, files, largest, left_out, last_ms, last_error) \
         VALUES (1, 0, 0, 0, 0, ?, ?) ON CONFLICT (id) DO UPDATE SET \
         last_ms = excluded.last_ms, last_error = excluded.last_error",
        params![now_ms, error],
    )?;
    Ok(())
}

/// What live sync did, as `GET /agents/{id}/computer` shows it.
pub fn status(db: &impl Sql) -> Result<Value, stead_sql::SqlError> {
    let totals = db.query_row(
        "SELECT pulls, files, largest, left_out, last_ms, last_error FROM live_sync WHERE id = 1",
        params![],
    )?;
    let mut status = match totals {
        Some(row) => json!({
            "pulls": row.int(0)?,
            "files": row.int(1)?,
            "largest_report": row.int(2)?,
            "left_out": row.int(3)?,
            "last_ms": row.opt_int(4)?,
            "last_error": row.opt_text(5)?,
        }),
        None => json!({
            "pulls": 0, "files": 0, "largest_report": 0, "left_out": 0,
            "last_ms": null, "last_error": null,
        }),
    };
    let conflicts = db
        .query(
            "SELECT path, container_copy, at_ms FROM live_conflicts ORDER BY id DESC",
            params![],
        )?
        .iter()
        .map(|row| {
            Ok(json!({
                "path": row.text(0)?,
                "container_copy": row.opt_text(1)?,
                "at_ms": row.int(2)?,
            }))
        })
        .collect::<Result<Vec<_>, stead_sql::SqlError>>()?;
    let rejected = db
        .query(
            "SELECT path, code, reason, at_ms FROM live_rejected ORDER BY id DESC",
            params![],
        )?
        .iter()
        .map(|row| {
            Ok(json!({
                "path": row.text(0)?,
                "code": row.text(1)?,
                "reason": row.text(2)?,
                "at_ms": row.int(3)?,
            }))
        })
        .collect::<Result<Vec<_>, stead_sql::SqlError>>()?;
    status["report_limit"] = json!(BATCH);
    status["conflicts"] = Value::Array(conflicts);
    status["rejected"] = Value::Array(rejected);
    Ok(status)
}
