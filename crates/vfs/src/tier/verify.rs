//! The check that every chunk the workspace keeps only in the bucket is
//! there: a walk over the tiered chunks (every one named by a manifest:
//! an unreferenced row does not outlive its last reference), in pages.

use serde::Serialize;
use stead_sql::{params, Sql};

use super::{chunk_key, hex, ObjectStore, Tier, TierState};
use crate::error::Result;

/// One page of [`Tier::verify`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct VerifyPage {
    /// Tiered chunks checked in this page.
    pub checked: u64,
    /// Those whose object is missing or of the wrong size.
    pub missing: Vec<MissingChunk>,
    /// Those whose object is there but this agent's marker is not (another
    /// agent's collection could delete it).
    pub unmarked: Vec<MissingChunk>,
    /// Where the next page starts, or `None` at the end.
    pub next: Option<i64>,
}

/// A chunk [`Tier::verify`] found wanting, and the files naming it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MissingChunk {
    pub id: i64,
    /// The BLAKE3 hash, in hex.
    pub hash: String,
    pub size: u64,
    /// Live files (inode numbers) whose content names it.
    pub inodes: Vec<i64>,
}

impl<S: Sql, O: ObjectStore> Tier<'_, '_, S, O> {
    /// Checks up to `limit` tiered chunks with ids after `after`.
    pub async fn verify(&self, after: i64, limit: usize) -> Result<VerifyPage> {
        let rows = self.db().query(
            "SELECT id, hash, size FROM chunks WHERE tier = ? AND id > ? ORDER BY id LIMIT ?",
            params![TierState::Tiered.code(), after, limit as i64],
        )?;
        let full = rows.len() == limit;
        let mut page = VerifyPage::default();
        for mut row in rows {
            let (id, hash, size) = (row.int(0)?, row.take_blob(1)?, row.int(2)? as u64);
            page.checked += 1;
            page.next = full.then_some(id);
            let stored = self.store.head(&chunk_key(&hash)).await?;
            let marked = self.store.head(&self.marker(&hash)).await?.is_some();
            let wanting = match (stored == Some(size), marked) {
                (true, true) => continue,
                (false, _) => &mut page.missing,
                (true, false) => &mut page.unmarked,
            };
            wanting.push(MissingChunk {
                id,
                hash: hex(&hash),
                size,
                inodes: self.inodes_naming(id)?,
            });
        }
        Ok(page)
    }

    /// Files whose content names chunk `id` (a few, for the report).
    fn inodes_naming(&self, id: i64) -> Result<Vec<i64>> {
        self.db()
            .query(
                "SELECT DISTINCT ino FROM file_chunks WHERE chunk = ? ORDER BY ino LIMIT 16",
                params![id],
            )?
            .iter()
            .map(|row| Ok(row.int(0)?))
            .collect()
    }
}
