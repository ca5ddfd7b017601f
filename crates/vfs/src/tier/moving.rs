//! The move of cold chunks to the object store, and its confirmation.
//!
//! Each step is one short SQL statement between awaits, and the state it
//! leaves is one the next call resumes from: a chunk is marked *moving*
//! before anything is put (so a collection meanwhile queues its bucket
//! copy), and only a confirmation a grace period later, which finds the
//! verified object and this agent's marker, empties its inline copy.

use stead_sql::{params, Sql};

use super::{chunk_key, ObjectStore, StoreError, Tier, TierState};
use crate::content::inline_bytes;
use crate::error::{Result, VfsError};

/// What one [`Tier::move_some`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Moved {
    /// Chunks put in the bucket and now moving.
    pub started: u64,
    /// Moving chunks confirmed: now tiered, inline copy dropped.
    pub confirmed: u64,
    /// Moving chunks whose object or marker was missing, put again.
    pub redone: u64,
}

/// A chunk row the move works on.
struct Candidate {
    id: i64,
    hash: Vec<u8>,
    moved_ms: i64,
}

impl<S: Sql, O: ObjectStore> Tier<'_, '_, S, O> {
    /// One bounded round of the move: confirms the moving chunks whose
    /// grace period is over, then starts moving cold inline ones. A store
    /// failure ends the round with the error; what was done stays done.
    pub async fn move_some(&self) -> Result<Moved> {
        let mut moved = Moved::default();
        for chunk in self.candidates(TierState::Moving)? {
            if self.confirm(&chunk).await? {
                moved.confirmed += 1;
            } else {
                moved.redone += 1;
            }
        }
        for chunk in self.candidates(TierState::Inline)? {
            if self.start(&chunk).await? {
                moved.started += 1;
            }
        }
        Ok(moved)
    }

    /// Inline chunks cold and large enough to move, or moving chunks whose
    /// grace period is over.
    fn candidates(&self, state: TierState) -> Result<Vec<Candidate>> {
        let (column, wait) = match state {
            TierState::Inline => ("used_ms", self.policy.hot_ms),
            TierState::Moving => ("moved_ms", self.policy.grace_ms),
            TierState::Tiered => return Ok(Vec::new()),
        };
        let rows = self.db().query(
            &format!(
                "SELECT id, hash, moved_ms FROM chunks WHERE tier = ? AND {column} <= ? \
                 AND size >= ? ORDER BY {column}, id LIMIT ?"
            ),
            params![
                state.code(),
                self.now() - wait,
                self.policy.min_bytes as i64,
                self.policy.batch as i64
            ],
        )?;
        rows.into_iter()
            .map(|mut row| {
                Ok(Candidate {
                    id: row.int(0)?,
                    hash: row.take_blob(1)?,
                    moved_ms: row.int(2)?,
                })
            })
            .collect()
    }

    /// Marks an inline chunk moving and puts marker and object. `false`
    /// when the chunk changed (or went) before it could be marked.
    async fn start(&self, chunk: &Candidate) -> Result<bool> {
        let marked = self.db().query_row(
            "UPDATE chunks SET tier = ?, moved_ms = ? WHERE id = ? AND tier = ? RETURNING id",
            params![
                TierState::Moving.code(),
                self.now(),
                chunk.id,
                TierState::Inline.code()
            ],
        )?;
        if marked.is_none() {
            return Ok(false);
        }
        self.put_copy(chunk).await
    }

    /// Puts this agent's marker, then the object, from the inline bytes
    /// (read right before: nothing changes a moving chunk's bytes).
    /// `false` when the chunk is no longer moving (it was collected).
    async fn put_copy(&self, chunk: &Candidate) -> Result<bool> {
        let row = self.db().query_row(
            "SELECT data, size FROM chunks WHERE id = ? AND tier = ?",
            params![chunk.id, TierState::Moving.code()],
        )?;
        let Some(mut row) = row else {
            return Ok(false);
        };
        let data = inline_bytes(&mut row, 0, 1)?
            .ok_or_else(|| VfsError::Corrupt(format!("moving chunk {} is short", chunk.id)))?;
        self.store.put(&self.marker(&chunk.hash), &[]).await?;
        self.store.put(&chunk_key(&chunk.hash), &data).await?;
        Ok(true)
    }

    /// Confirms a moving chunk: `true` when it is now tiered, `false` when
    /// its object or marker had to be put again (it waits another grace
    /// period).
    async fn confirm(&self, chunk: &Candidate) -> Result<bool> {
        let held = match self.fetch_verified(&chunk.hash).await {
            Ok(_) => self.store.head(&self.marker(&chunk.hash)).await?.is_some(),
            Err(VfsError::Store(StoreError::Missing { .. } | StoreError::Mismatch { .. })) => false,
            Err(other) => return Err(other),
        };
        if !held {
            self.put_copy(chunk).await?;
            self.db().execute(
                "UPDATE chunks SET moved_ms = ? WHERE id = ? AND tier = ?",
                params![self.now(), chunk.id, TierState::Moving.code()],
            )?;
            return Ok(false);
        }
        self.db().execute(
            "UPDATE chunks SET tier = ?, data = x'' WHERE id = ? AND tier = ? AND moved_ms = ?",
            params![
                TierState::Tiered.code(),
                chunk.id,
                TierState::Moving.code(),
                chunk.moved_ms
            ],
        )?;
        Ok(true)
    }
}
