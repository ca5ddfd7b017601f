//! The audit log: every mutating call and every exec, with who made it and
//! how it ended, readable over the API (`GET /agents/{id}/audit`) and pruned
//! by age.
//!
//! An entry is written after the call, in its own statement: a call that
//! failed (and so changed nothing) is recorded with its error code, and a
//! failure to record never undoes a call that succeeded.

use serde::Serialize;
use serde_json::Value;
use stead_sql::{params, Sql, SqlError};

use crate::route::Action;

/// How long entries are kept.
pub const KEEP_MS: i64 = 30 * 24 * 3600 * 1000;

/// Entries returned per page at most.
pub const PAGE: i64 = 1000;

/// One audit entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Entry {
    pub id: i64,
    /// Milliseconds since the Unix epoch.
    pub at: i64,
    /// `admin` or `token:<id>`.
    pub actor: String,
    /// The route or tool: `write`, `exec`, `upload`, `schedule.create`, ...
    pub action: String,
    /// The path, command or name acted on.
    pub target: Option<String>,
    /// `ok`, or the error code.
    pub outcome: String,
    /// The workspace revision afterwards.
    pub revision: Option<i64>,
}

/// Appends an entry, pruning entries older than [`KEEP_MS`] now and then.
pub fn record(
    db: &impl Sql,
    at: i64,
    actor: &str,
    action: &str,
    target: Option<&str>,
    outcome: &str,
    revision: Option<i64>,
) -> Result<(), SqlError> {
    let row = db.query_row(
        "INSERT INTO audit (at, actor, action, target, outcome, revision) \
         VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
        params![at, actor, action, target, outcome, revision],
    )?;
    if row
        .and_then(|r| r.int(0).ok())
        .is_some_and(|id| id % 256 == 0)
    {
        db.execute("DELETE FROM audit WHERE at < ?", params![at - KEEP_MS])?;
    }
    Ok(())
}

/// Entries after id `after`, oldest first, at most `limit` (capped at [`PAGE`]).
pub fn list(db: &impl Sql, after: i64, limit: i64) -> Result<Vec<Entry>, SqlError> {
    db.query(
        "SELECT id, at, actor, action, target, outcome, revision FROM audit \
         WHERE id > ? ORDER BY id LIMIT ?",
        params![after, limit.clamp(1, PAGE)],
    )?
    .iter()
    .map(|row| {
        Ok(Entry {
            id: row.int(0)?,
            at: row.int(1)?,
            actor: row.text(2)?.to_string(),
            action: row.text(3)?.to_string(),
            target: row.opt_text(4)?.map(str::to_string),
            outcome: row.text(5)?.to_string(),
            revision: row.opt_int(6)?,
        })
    })
    .collect()
}

/// The target named by the route itself (a path or a name), if any.
pub fn route_target(action: &Action) -> Option<String> {
    match action {
        Action::Upload(path) => Some(path.clone()),
        Action::JobCancel(job) => Some(job.to_string()),
        Action::Checkpoint(name) | Action::CheckpointDelete(name) => Some(name.clone()),
        Action::SchedulePut(name)
        | Action::ScheduleDelete(name)
        | Action::HookPut(name)
        | Action::HookDelete(name)
        | Action::HookCall(name)
        | Action::ProcessSignal(name)
        | Action::ProcessStop(name) => Some(name.clone()),
        _ => None,
    }
}

/// The target worth recording from a tool's JSON body: its path (or `from`
/// for moves and copies), or a command's first 200 characters.
pub fn target_of(body: &[u8]) -> Option<String> {
    let value: Value = serde_json::from_slice(body).ok()?;
    let text = ["path", "from", "command", "name", "pattern"]
        .iter()
        .find_map(|key| value.get(*key).and_then(Value::as_str))?;
    Some(text.chars().take(200).collect())
}

#[cfg(test)]
mod tests {
    use stead_sql::{migrate, SqliteDb, MIGRATIONS};

    use super::*;

    #[test]
    fn entries_are_listed_in_order_and_pruned_by_age() {
        let db = SqliteDb::memory().unwrap();
        migrate(&db, MIGRATIONS).unwrap();
        record(&db, 1, "admin", "write", Some("/a"), "ok", Some(1)).unwrap();
        record(&db, 2, "token:t", "rm", Some("/b"), "ENOENT", None).unwrap();
        let entries = list(&db, 0, 10).unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[1].actor, "token:t");
        assert_eq!(entries[1].outcome, "ENOENT");
        assert_eq!(list(&db, entries[0].id, 10).unwrap(), entries[1..]);
        // The 256th entry prunes everything older than the retention.
        for i in 3..=256 {
            record(&db, KEEP_MS + 10 + i, "admin", "write", None, "ok", None).unwrap();
        }
        let entries = list(&db, 0, PAGE).unwrap();
        assert_eq!(entries.len(), 254);
        assert!(entries.iter().all(|e| e.at > 2));
    }

    #[test]
    fn targets_come_from_the_route() {
        assert_eq!(
            route_target(&Action::Upload("/a".into())).as_deref(),
            Some("/a")
        );
    }

    #[test]
    fn targets_come_from_the_body() {
        assert_eq!(
            target_of(br#"{"path":"/x","content":"y"}"#).as_deref(),
            Some("/x")
        );
        assert_eq!(
            target_of(br#"{"from":"/a","to":"/b"}"#).as_deref(),
            Some("/a")
        );
        assert_eq!(target_of(b"not json"), None);
    }
}
