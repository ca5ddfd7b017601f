//! References to chunks held by other features.
//!
//! A feature that keeps content of its own in the chunk store (an
//! environment snapshot, a fork's staging) names its object as a holder
//! (`"envsnap:3"`); a chunk lives while any holder, file, checkpoint or
//! upload names it, and moves to the object store like any other (see
//! [`crate::tier`]). Releasing a holder collects what only it held.

use stead_sql::{params, Sql};

use crate::error::Result;
use crate::{json_ids, Vfs};

impl<S: Sql> Vfs<'_, S> {
    /// Stores `data` as a chunk held by `holder`; returns its id.
    pub fn put_held_chunk(&self, holder: &str, data: &[u8]) -> Result<i64> {
        self.db.transaction(|| {
            let id = self.put_chunk(data)?;
            self.hold_chunks(holder, &[id])?;
            Ok(id)
        })
    }

    /// Makes `holder` hold chunks `ids` (held already is no error).
    pub fn hold_chunks(&self, holder: &str, ids: &[i64]) -> Result<()> {
        for batch in ids.chunks(8192) {
            self.db.execute(
                "INSERT OR IGNORE INTO chunk_holds (holder, chunk) \
                 SELECT ?, value FROM json_each(?)",
                params![holder, json_ids(batch).as_str()],
            )?;
        }
        Ok(())
    }

    /// The chunks `holder` holds, by id.
    pub fn held_chunks(&self, holder: &str) -> Result<Vec<i64>> {
        self.db
            .query(
                "SELECT chunk FROM chunk_holds WHERE holder = ? ORDER BY chunk",
                params![holder],
            )?
            .iter()
            .map(|row| Ok(row.int(0)?))
            .collect()
    }

    /// Drops every reference of `holder`, collecting what only it held.
    pub fn release_chunks(&self, holder: &str) -> Result<()> {
        self.db.transaction(|| {
            let ids = self
                .db
                .query(
                    "DELETE FROM chunk_holds WHERE holder = ? RETURNING chunk",
                    params![holder],
                )?
                .iter()
                .map(|row| row.int(0))
                .collect::<Result<Vec<_>, _>>()?;
            self.collect(&ids)
        })
    }
}
