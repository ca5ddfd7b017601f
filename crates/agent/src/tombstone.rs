//! The record a deleted agent leaves behind: its Durable Object's storage
//! is wiped, then this one row is written into the empty database, so the
//! object remembers that an agent lived there.
//!
//! A fork (or a direct import) makes a *new* agent, and refuses an id that
//! is taken or ever was (`409 AGENT_EXISTED`): whatever was handed out for
//! the old agent (its tokens, share links, hook URLs, webhooks pointing at
//! it) must never come to open another agent's files. Re-creating a deleted
//! agent empty with `PUT /agents/{id}` is still the admin's to do, and
//! keeps the record (so deleting it again, then forking onto it, is refused
//! as well). The record lives outside the migrated schema (which the wipe
//! removes and a creation builds again), in a table of its own.

use stead_sql::{params, Sql};

use crate::error::ApiError;

/// Notes, in an agent's freshly wiped storage, that it was deleted at
/// `now_ms`.
pub(crate) fn lay<S: Sql>(db: &S, now_ms: i64) -> Result<(), ApiError> {
    db.execute(
        "CREATE TABLE IF NOT EXISTS agent_tombstone (\
         one INTEGER PRIMARY KEY CHECK (one = 1), deleted_at INTEGER NOT NULL)",
        params![],
    )?;
    db.execute(
        "INSERT INTO agent_tombstone (one, deleted_at) VALUES (1, ?) \
         ON CONFLICT (one) DO UPDATE SET deleted_at = excluded.deleted_at",
        params![now_ms],
    )?;
    Ok(())
}

/// When the agent that lived here was last deleted, if one ever was.
pub(crate) fn deleted_at<S: Sql>(db: &S) -> Result<Option<i64>, ApiError> {
    let laid = db
        .query_row(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'agent_tombstone'",
            params![],
        )?
        .is_some();
    if !laid {
        return Ok(None);
    }
    let row = db.query_row(
        "SELECT deleted_at FROM agent_tombstone WHERE one = 1",
        params![],
    )?;
    Ok(match row {
        Some(row) => Some(row.int(0)?),
        None => None,
    })
}
