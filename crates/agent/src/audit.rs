//! The audit log: every mutating call and every exec, with who made it and
//! how it ended, readable over the API (`GET /agents/{id}/audit`, newest
//! first, paged with an opaque cursor and bounded in time) and pruned by
//! age.
//!
//! An entry is written after the call, in its own statement: a call that
//! failed (and so changed nothing) is recorded with its error code, and a
//! failure to record never undoes a call that succeeded.

use serde::Serialize;
use serde_json::{json, Value};
use stead_sql::{params, Sql, SqlError};

use crate::decode::{within, Cursor};
use crate::error::ApiError;

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
    /// What more there is to say ([`Note::detail`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<Value>,
}

/// What an entry says about a call besides who, what and how it ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Note {
    /// The path, command or name acted on.
    pub target: Option<String>,
    /// A JSON object: the settings a `settings.put` changed
    /// (`{"changed": {"quotas.max_nodes": {"old": .., "new": ..}}}`),
    /// `{"dry_run": true}` for an edit that wrote nothing.
    pub detail: Option<Value>,
}

/// Appends an entry, pruning entries older than [`KEEP_MS`] now and then.
/// The entry records the workspace's revision as the call left it, read by
/// the same statement; returns it (`None`: the agent has no workspace).
pub fn record(
    db: &impl Sql,
    at: i64,
    actor: &str,
    action: &str,
    note: &Note,
    outcome: &str,
) -> Result<Option<i64>, SqlError> {
    let detail = note.detail.as_ref().map(Value::to_string);
    let row = db.query_row(
        "INSERT INTO audit (at, actor, action, target, outcome, revision, detail) \
         VALUES (?, ?, ?, ?, ?, (SELECT value FROM meta WHERE key = 'revision'), ?) \
         RETURNING id, revision",
        params![
            at,
            actor,
            action,
            note.target.as_deref(),
            outcome,
            detail.as_deref()
        ],
    )?;
    let (id, revision) = match &row {
        Some(row) => (row.int(0).ok(), row.int(1).ok()),
        None => (None, None),
    };
    if id.is_some_and(|id| id % 256 == 0) {
        db.execute("DELETE FROM audit WHERE at < ?", params![at - KEEP_MS])?;
    }
    Ok(revision)
}

/// Entries on one page by default.
pub const DEFAULT_PAGE: i64 = 100;

const CURSOR: &str = "audit1";

/// Which entries a page of `GET /audit` holds: newest first, from where the
/// previous page stopped, within a time window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    /// Entries older than this id (from the previous page's cursor).
    pub below: Option<i64>,
    /// Entries at or after this time, ms since the Unix epoch (`since`).
    pub since: Option<i64>,
    /// Entries before this time (`before`).
    pub before: Option<i64>,
    pub limit: i64,
}

impl Page {
    /// The page a query string asks for: `cursor`, `since`, `before`,
    /// `limit`; anything else, or a bound out of range, is refused.
    pub fn from_query(query: &[(String, String)]) -> Result<Page, ApiError> {
        let mut page = Page {
            below: None,
            since: None,
            before: None,
            limit: DEFAULT_PAGE,
        };
        let number = |key: &str, value: &str| {
            value.parse::<i64>().map_err(|_| {
                ApiError::InvalidRequest(format!(
                    "{key}={value:?} is not a number (times are ms since the Unix epoch)"
                ))
            })
        };
        for (key, value) in query {
            match key.as_str() {
                "cursor" => {
                    let position = Cursor::decode(CURSOR, value)?;
                    page.below = Some(position.parse().map_err(|_| {
                        ApiError::InvalidRequest(format!(
                            "cursor {value:?} is not an audit cursor: pass back the next_cursor of the previous page"
                        ))
                    })?);
                }
                "since" => page.since = Some(within("since", number(key, value)?, 0, i64::MAX)?),
                "before" => {
                    page.before = Some(within("before", number(key, value)?, 0, i64::MAX)?)
                }
                "limit" => page.limit = within("limit", number(key, value)?, 1, PAGE)?,
                other => {
                    return Err(ApiError::InvalidRequest(format!(
                        "unknown query parameter {other:?}: the audit log takes cursor, since, before and limit"
                    )))
                }
            }
        }
        if let (Some(since), Some(before)) = (page.since, page.before) {
            if since >= before {
                return Err(ApiError::InvalidRequest(format!(
                    "since ({since}) must be earlier than before ({before})"
                )));
            }
        }
        Ok(page)
    }
}

/// One page of entries, newest first, with the cursor of the next page
/// (`null` on the last).
pub fn list(db: &impl Sql, page: Page) -> Result<Value, ApiError> {
    let rows = db.query(
        "SELECT id, at, actor, action, target, outcome, revision, detail FROM audit \
         WHERE id < ? AND at >= ? AND at < ? ORDER BY id DESC LIMIT ?",
        params![
            page.below.unwrap_or(i64::MAX),
            page.since.unwrap_or(i64::MIN),
            page.before.unwrap_or(i64::MAX),
            page.limit.clamp(1, PAGE) + 1
        ],
    )?;
    let mut entries = rows
        .iter()
        .map(|row| {
            let detail = row
                .opt_text(7)?
                .map(|text| {
                    serde_json::from_str(text)
                        .map_err(|e| ApiError::Internal(format!("audit detail: {e}")))
                })
                .transpose()?;
            Ok(Entry {
                id: row.int(0)?,
                at: row.int(1)?,
                actor: row.text(2)?.to_string(),
                action: row.text(3)?.to_string(),
                target: row.opt_text(4)?.map(str::to_string),
                outcome: row.text(5)?.to_string(),
                revision: row.opt_int(6)?,
                detail,
            })
        })
        .collect::<Result<Vec<_>, ApiError>>()?;
    let more = entries.len() as i64 > page.limit;
    entries.truncate(page.limit as usize);
    let next = more
        .then(|| {
            entries
                .last()
                .map(|e| Cursor::encode(CURSOR, &e.id.to_string()))
        })
        .flatten();
    Ok(json!({ "entries": entries, "next_cursor": next }))
}

#[cfg(test)]
mod tests {
    use stead_sql::{migrate, SqliteDb, MIGRATIONS};

    use super::*;

    fn note(target: &str) -> Note {
        Note {
            target: Some(target.into()),
            detail: None,
        }
    }

    fn page(db: &SqliteDb, query: &[(&str, &str)]) -> Value {
        let query: Vec<(String, String)> = query
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        list(db, Page::from_query(&query).unwrap()).unwrap()
    }

    fn ats(answer: &Value) -> Vec<i64> {
        answer["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["at"].as_i64().unwrap())
            .collect()
    }

    #[test]
    fn entries_are_listed_newest_first_and_pruned_by_age() {
        let db = SqliteDb::memory().unwrap();
        migrate(&db, MIGRATIONS).unwrap();
        let revision = record(&db, 1, "admin", "write", &note("/a"), "ok").unwrap();
        assert_eq!(
            revision,
            Some(0),
            "the workspace's revision, as the call left it"
        );
        record(&db, 2, "token:t", "rm", &note("/b"), "ENOENT").unwrap();
        let answer = page(&db, &[]);
        assert_eq!(ats(&answer), [2, 1]);
        assert_eq!(answer["entries"][0]["actor"], "token:t");
        assert_eq!(answer["entries"][0]["outcome"], "ENOENT");
        assert_eq!(answer["next_cursor"], Value::Null);
        // The 256th entry prunes everything older than the retention.
        for i in 3..=256 {
            record(
                &db,
                KEEP_MS + 10 + i,
                "admin",
                "write",
                &Note::default(),
                "ok",
            )
            .unwrap();
        }
        let entries = ats(&page(&db, &[("limit", "1000")]));
        assert_eq!(entries.len(), 254);
        assert!(entries.iter().all(|at| *at > 2));
    }

    #[test]
    fn pages_follow_the_cursor_within_the_time_bounds() {
        let db = SqliteDb::memory().unwrap();
        migrate(&db, MIGRATIONS).unwrap();
        for at in 1..=7 {
            record(&db, at * 10, "admin", "write", &Note::default(), "ok").unwrap();
        }
        let first = page(&db, &[("limit", "3")]);
        assert_eq!(ats(&first), [70, 60, 50]);
        let cursor = first["next_cursor"].as_str().unwrap().to_string();
        assert!(cursor.starts_with("audit1."), "opaque: {cursor}");
        let second = page(&db, &[("limit", "3"), ("cursor", &cursor)]);
        assert_eq!(ats(&second), [40, 30, 20]);
        let cursor = second["next_cursor"].as_str().unwrap().to_string();
        let last = page(&db, &[("limit", "3"), ("cursor", &cursor)]);
        assert_eq!(ats(&last), [10]);
        assert_eq!(last["next_cursor"], Value::Null);
        // since is inclusive, before exclusive.
        let window = page(&db, &[("since", "20"), ("before", "50")]);
        assert_eq!(ats(&window), [40, 30, 20]);
        let window = page(&db, &[("since", "20"), ("before", "60"), ("limit", "2")]);
        assert_eq!(ats(&window), [50, 40]);
        let cursor = window["next_cursor"].as_str().unwrap().to_string();
        let rest = page(
            &db,
            &[
                ("since", "20"),
                ("before", "60"),
                ("limit", "2"),
                ("cursor", &cursor),
            ],
        );
        assert_eq!(ats(&rest), [30, 20]);
        assert_eq!(rest["next_cursor"], Value::Null);
    }

    #[test]
    fn bad_bounds_are_refused() {
        for query in [
            vec![("since", "50"), ("before", "50")],
            vec![("since", "-1")],
            vec![("before", "soon")],
            vec![("limit", "0")],
            vec![("limit", "1001")],
            vec![("cursor", "5")],
            vec![("cursor", "diff1.NQ")],
            vec![("after", "3")],
        ] {
            let query: Vec<(String, String)> = query
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let error = Page::from_query(&query).unwrap_err();
            assert_eq!(
                (error.status(), error.code()),
                (400, "INVALID_REQUEST"),
                "{query:?}"
            );
        }
    }
}
