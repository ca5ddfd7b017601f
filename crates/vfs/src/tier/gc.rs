//! Collection of bucket copies this agent no longer relies on.
//!
//! `tier_garbage` lists them by hash, each since when. After the grace
//! period this agent's marker goes, and the object with it when no other
//! agent's marker is left. Each entry is removed only after its deletes,
//! so a run cut anywhere is redone by the next (deleting twice is no
//! error); the batch bounds the requests one alarm makes.

use stead_sql::{params, Sql};

use super::{chunk_key, marker_key, marker_prefix, ObjectStore, Tier, TierState};
use crate::error::Result;
use crate::Vfs;

/// What one [`Tier::collect_garbage`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Collected {
    /// Markers of this agent deleted.
    pub markers: u64,
    /// Objects deleted (no agent's marker was left).
    pub objects: u64,
    /// Entries dropped because the workspace relies on the copy again.
    pub kept: u64,
}

impl<S: Sql, O: ObjectStore> Tier<'_, '_, S, O> {
    /// One bounded round of collection (see the module docs).
    pub async fn collect_garbage(&self) -> Result<Collected> {
        let mut collected = Collected::default();
        let due = self.db().query(
            "SELECT hash, since_ms FROM tier_garbage WHERE since_ms <= ? \
             ORDER BY since_ms LIMIT ?",
            params![self.now() - self.policy.grace_ms, self.policy.batch as i64],
        )?;
        for mut row in due {
            let (hash, since) = (row.take_blob(0)?, row.int(1)?);
            if self.vfs.relies_on_tier(&hash)? {
                collected.kept += 1;
            } else {
                collected.markers += 1;
                if release_marker(self.store, &hash, self.agent).await? {
                    collected.objects += 1;
                }
            }
            self.db().execute(
                "DELETE FROM tier_garbage WHERE hash = ? AND since_ms = ?",
                params![hash.as_slice(), since],
            )?;
        }
        Ok(collected)
    }
}

impl<S: Sql> Vfs<'_, S> {
    /// Whether a chunk of this workspace with `hash` may be in the object
    /// store (moving or tiered): then this agent's marker on it must stay.
    pub fn relies_on_tier(&self, hash: &[u8]) -> Result<bool> {
        Ok(self
            .db
            .query_row(
                "SELECT 1 FROM chunks WHERE hash = ? AND tier != ?",
                params![hash, TierState::Inline.code()],
            )?
            .is_some())
    }

    /// The hashes of every chunk whose object-store copy this agent's
    /// markers may keep: moving and tiered chunks, and copies awaiting
    /// collection. What a deleted agent must release (32 bytes each).
    pub fn marked_hashes(&self) -> Result<Vec<Vec<u8>>> {
        let rows = self.db.query(
            "SELECT hash FROM chunks WHERE tier != ? UNION SELECT hash FROM tier_garbage",
            params![TierState::Inline.code()],
        )?;
        rows.into_iter()
            .map(|mut row| Ok(row.take_blob(0)?))
            .collect()
    }
}

/// Deletes `agent`'s marker on the chunk with `hash`, then the object too
/// when no agent's marker is left (see the module docs of `super`);
/// whether it deleted the object. Doing it twice is harmless.
pub async fn release_marker(store: &impl ObjectStore, hash: &[u8], agent: &str) -> Result<bool> {
    store.delete(&marker_key(hash, agent)).await?;
    if !store.list(&marker_prefix(hash), 1).await?.is_empty() {
        return Ok(false);
    }
    store.delete(&chunk_key(hash)).await?;
    Ok(true)
}
