//! What a deleted agent leaves in the object store, and its release.
//!
//! Deleting an agent wipes its database at once, but its markers
//! (`refs/<hash>/<agent>`, see `stead_vfs::tier`) are objects in the shared
//! bucket: each must be deleted, and the chunk's object with it when no
//! other agent's marker is left, or the bucket's collection never frees
//! what only this agent held. A large workspace holds many (one per chunk
//! in the bucket), more than one request may delete. So the delete lists
//! them (32 bytes each) before the wipe, writes them into the wiped
//! database after it, beside the tombstone and like it outside the
//! migrated schema, and the alarm releases them in bounded batches (the tier policy's `batch`,
//! each marker up to three requests) after
//! the tier's grace period (a download begun before the delete still
//! finds its chunks). A row goes only after its deletes, so a release cut
//! anywhere is redone by the next alarm (deleting twice is harmless).
//!
//! An agent created again under the same name may rely on the same content
//! again before the release reaches it: a marker the live workspace relies
//! on (its chunk moving or tiered) is kept, and its row dropped.

use stead_sql::{params, Sql};
use stead_vfs::tier::release_marker;

use crate::agent::Agent;
use crate::error::ApiError;
use crate::host::Host;

/// Queues `agent`'s markers on `hashes` for release, from `now_ms` on.
fn queue<S: Sql>(db: &S, agent: &str, hashes: &[Vec<u8>], now_ms: i64) -> Result<(), ApiError> {
    if hashes.is_empty() {
        return Ok(());
    }
    db.transaction(|| {
        db.execute(
            "CREATE TABLE IF NOT EXISTS tier_release (hash BLOB NOT NULL, agent TEXT NOT NULL, \
             since_ms INTEGER NOT NULL, PRIMARY KEY (hash, agent))",
            params![],
        )?;
        for hash in hashes {
            db.execute(
                "INSERT INTO tier_release (hash, agent, since_ms) VALUES (?, ?, ?) \
                 ON CONFLICT (hash, agent) DO UPDATE SET since_ms = excluded.since_ms",
                params![hash.as_slice(), agent, now_ms],
            )?;
        }
        Ok(())
    })
}

/// Whether a table named `name` exists.
fn has_table<S: Sql>(db: &S, name: &str) -> Result<bool, ApiError> {
    Ok(db
        .query_row(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
            params![name],
        )?
        .is_some())
}

/// When the next release is due, with `grace_ms`, if one is queued.
pub(crate) fn due<S: Sql>(db: &S, grace_ms: i64) -> Result<Option<i64>, ApiError> {
    if !has_table(db, "tier_release")? {
        return Ok(None);
    }
    let row = db.query_row("SELECT MIN(since_ms) FROM tier_release", params![])?;
    Ok(row
        .map(|row| row.opt_int(0))
        .transpose()?
        .flatten()
        .map(|since| since + grace_ms))
}

impl<H: Host> Agent<H> {
    /// Wipes the agent's storage (a delete, a fork that never began or
    /// stalled), keeping the list of its markers to release; the caller
    /// arms the alarm for them ([`Agent::release_deleted`]).
    pub(crate) async fn wipe_storage(&self) -> Result<(), ApiError> {
        // (An agent whose name was never recorded never put a marker.)
        let marked = match (self.host.chunk_store(), self.name()) {
            (Some(_), Ok(name)) if has_table(self.db(), "chunks")? => {
                Some((name, self.vfs().marked_hashes()?))
            }
            _ => None,
        };
        self.host.wipe().await?;
        if let Some((name, hashes)) = marked {
            queue(self.db(), &name, &hashes, self.now_ms())?;
        }
        Ok(())
    }

    /// One bounded round of releasing a deleted agent's markers (see the
    /// module docs). A store failure ends the round; the next alarm goes on.
    pub(crate) async fn release_markers(&self) -> Result<(), ApiError> {
        let Some(store) = self.host.chunk_store() else {
            return Ok(());
        };
        let db = self.db();
        if !has_table(db, "tier_release")? {
            return Ok(());
        }
        let policy = self.host.tier_policy();
        let live = has_table(db, "chunks")?;
        let rows = db.query(
            "SELECT hash, agent, since_ms FROM tier_release WHERE since_ms <= ? \
             ORDER BY since_ms LIMIT ?",
            params![self.now_ms() - policy.grace_ms, policy.batch as i64],
        )?;
        for mut row in rows {
            let (hash, agent, since) = (row.take_blob(0)?, row.text(1)?.to_string(), row.int(2)?);
            if !(live && self.vfs().relies_on_tier(&hash)?) {
                release_marker(store, &hash, &agent).await?;
            }
            db.execute(
                "DELETE FROM tier_release WHERE hash = ? AND agent = ? AND since_ms = ?",
                params![hash.as_slice(), agent.as_str(), since],
            )?;
        }
        Ok(())
    }

    /// The alarm of a deleted agent: releases a batch of its markers and
    /// arms for the next, or clears the alarm when none is left.
    pub(crate) async fn release_deleted(&self) -> Result<(), ApiError> {
        let released = self.release_markers().await;
        let at = match self.host.chunk_store() {
            Some(_) => due(self.db(), self.host.tier_policy().grace_ms)?,
            None => None,
        };
        self.host.set_alarm(at).await?;
        self.alarm_at.set(at);
        released
    }
}
