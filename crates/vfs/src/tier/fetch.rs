//! Reading chunks back from the object store, always verified.
//!
//! Every object read is checked against the BLAKE3 hash that names it; a
//! failed or mismatched read is tried again a few times and is then an
//! error, never bytes. [`Tier::read_chunk`] serves a streamed download
//! without touching the database; [`Tier::bring_back`] puts chunks inline
//! again for the synchronous tools, which [`Tier::fetched`] retries.

use stead_sql::{params, Sql};

use super::{chunk_key, ObjectStore, StoreError, Tier, TierState};
use crate::content::inline_bytes;
use crate::error::{Result, VfsError};
use crate::Vfs;

/// The holder of chunks a fork's page adopted, until the page is imported.
pub const FORK_HOLDER: &str = "fork:page";

/// Reads of one object before its failure is the answer.
const READ_TRIES: usize = 3;

/// Rounds of fetching a synchronous operation may ask for before its
/// `Tiered` error is the answer (each round brings back every tiered chunk
/// the operation named).
const FETCH_ROUNDS: usize = 8;

/// An error that may be [`VfsError::Tiered`]: what [`Tier::fetched`]
/// retries on.
pub trait NamesTiered {
    /// The chunks to bring back, when the error is that they are tiered.
    fn tiered_chunks(&self) -> Option<&[i64]>;
}

impl NamesTiered for VfsError {
    fn tiered_chunks(&self) -> Option<&[i64]> {
        match self {
            VfsError::Tiered { chunks } => Some(chunks),
            _ => None,
        }
    }
}

/// The bytes of the chunk with `hash` from `store`, verified.
pub async fn fetch_verified(store: &impl ObjectStore, hash: &[u8]) -> Result<Vec<u8>> {
    let key = chunk_key(hash);
    let mut last = StoreError::Missing { key: key.clone() };
    for _ in 0..READ_TRIES {
        match store.get(&key).await {
            Ok(Some(bytes)) if blake3::hash(&bytes).as_bytes().as_slice() == hash => {
                return Ok(bytes)
            }
            Ok(Some(_)) => last = StoreError::Mismatch { key: key.clone() },
            // Missing is an answer, not a glitch: no second try.
            Ok(None) => return Err(StoreError::Missing { key }.into()),
            Err(error) => last = error,
        }
    }
    Err(last.into())
}

/// The bytes of chunk `id` of `vfs`: inline, or from `store`, verified,
/// without bringing them back (a streamed download). `NotFound` (naming
/// `path`) once the chunk is gone from the workspace.
pub async fn read_chunk<S: Sql>(
    vfs: &Vfs<'_, S>,
    store: &impl ObjectStore,
    id: i64,
    path: &str,
) -> Result<Vec<u8>> {
    let (hash, inline) = {
        let mut row = vfs
            .db
            .query_row(
                "SELECT data, size, hash FROM chunks WHERE id = ?",
                params![id],
            )?
            .ok_or_else(|| VfsError::NotFound {
                path: path.to_string(),
            })?;
        (row.take_blob(2)?, inline_bytes(&mut row, 0, 1)?)
    };
    match inline {
        Some(bytes) => Ok(bytes),
        None => fetch_verified(store, &hash).await,
    }
}

/// The bytes of the chunk with `hash`, if `vfs` holds it: inline, or (kept
/// in the object store) read from `store`, verified, without bringing it
/// back: what a sync to the computer sends.
pub async fn chunk_by_hash<S: Sql>(
    vfs: &Vfs<'_, S>,
    store: Option<&impl ObjectStore>,
    hash: &stead_sync::ChunkHash,
) -> Result<Option<Vec<u8>>> {
    match (vfs.chunk_by_hash(hash), store) {
        (Err(VfsError::Tiered { .. }), Some(store)) => {
            fetch_verified(store, &hash.0).await.map(Some)
        }
        (answer, _) => answer,
    }
}

/// The whole content of the file at `path`: [`Vfs::read_file`], with the
/// chunks kept in the object store read from `store` (verified) rather
/// than brought back. For small files the caller reads whole (the
/// computer's ignore rules).
pub async fn read_file<S: Sql>(
    vfs: &Vfs<'_, S>,
    store: Option<&impl ObjectStore>,
    path: &crate::VPath,
) -> Result<Vec<u8>> {
    match (vfs.read_file(path), store) {
        (Err(VfsError::Tiered { .. }), Some(store)) => {
            let (_, chunks) = vfs.file_chunks(path)?;
            let mut bytes = Vec::new();
            for chunk in chunks {
                bytes.extend(read_chunk(vfs, store, chunk.id, path.as_str()).await?);
            }
            Ok(bytes)
        }
        (answer, _) => answer,
    }
}

impl<S: Sql> Vfs<'_, S> {
    /// The bytes of those of chunks `ids` that are kept only in the object
    /// store: what [`Tier::bring_back`] of them would put in the database.
    pub fn tiered_bytes(&self, ids: &[i64]) -> Result<u64> {
        let row = self.db.query_row(
            "SELECT COALESCE(SUM(size), 0) FROM chunks \
             WHERE id IN (SELECT value FROM json_each(?)) AND tier = ?",
            params![crate::json_ids(ids).as_str(), TierState::Tiered.code()],
        )?;
        Ok(row.map_or(Ok(0), |row| row.int(0))? as u64)
    }
}

impl<S: Sql, O: ObjectStore> Tier<'_, '_, S, O> {
    /// The bytes of the chunk with `hash` from the store, verified.
    pub(crate) async fn fetch_verified(&self, hash: &[u8]) -> Result<Vec<u8>> {
        fetch_verified(self.store, hash).await
    }

    /// [`read_chunk`] of this workspace.
    pub async fn read_chunk(&self, id: i64, path: &str) -> Result<Vec<u8>> {
        read_chunk(self.vfs, self.store, id, path).await
    }

    /// Brings tiered chunks `ids` back inline, each verified; ids no longer
    /// tiered (or gone) are skipped. Their bucket copies are queued for
    /// collection, and they are hot again.
    pub async fn bring_back(&self, ids: &[i64]) -> Result<()> {
        for &id in ids {
            let row = self.db().query_row(
                "SELECT hash FROM chunks WHERE id = ? AND tier = ?",
                params![id, TierState::Tiered.code()],
            )?;
            let Some(mut row) = row else { continue };
            let hash = row.take_blob(0)?;
            let bytes = self.fetch_verified(&hash).await?;
            self.db().transaction(|| {
                let back = self.db().query_row(
                    "UPDATE chunks SET data = ?, tier = ?, used_ms = ? WHERE id = ? AND tier = ? \
                     RETURNING id",
                    params![
                        bytes.as_slice(),
                        TierState::Inline.code(),
                        self.now(),
                        id,
                        TierState::Tiered.code()
                    ],
                )?;
                if back.is_some() {
                    self.vfs.forget_in_tier(&hash)?;
                }
                Ok::<(), VfsError>(())
            })?;
        }
        Ok(())
    }

    /// Adopts every chunk a fork's `page` shares through the object store
    /// (see `crate::checkpoint`'s fork stream), held under [`FORK_HOLDER`]
    /// until the page is imported: then the import's own staging keeps
    /// them, and the caller releases the holder, whatever the import did.
    pub async fn adopt_shared(&self, page: &[u8]) -> Result<u64> {
        let shared = crate::checkpoint::shared_chunks(page)?;
        for (hash, size) in &shared {
            self.adopt(hash, *size, FORK_HOLDER).await?;
        }
        Ok(shared.len() as u64)
    }

    /// Runs the synchronous `op`, bringing back what it finds tiered and
    /// running it again, until it answers something else. `op` must be
    /// one transaction (or several, each undone by its failure), as every
    /// VFS operation is: a run that met a tiered chunk changed nothing.
    pub async fn fetched<T, E>(&self, mut op: impl FnMut() -> Result<T, E>) -> Result<T, E>
    where
        E: NamesTiered + From<VfsError>,
    {
        let mut answer = op();
        for _ in 0..FETCH_ROUNDS {
            let Some(chunks) = answer.as_ref().err().and_then(NamesTiered::tiered_chunks) else {
                break;
            };
            self.bring_back(chunks).await?;
            answer = op();
        }
        answer
    }

    /// Records a chunk another agent's bucket copy holds (a fork's) under
    /// `holder` (see [`Vfs::hold_chunks`]): queues its marker for
    /// collection, puts the marker, checks the object is there, then keeps
    /// a tiered row without bytes, held in the same transaction. Returns
    /// the chunk's id (a row with the same hash is kept as it is, and
    /// held; if the same bytes arrived inline meanwhile, the queued marker
    /// goes).
    pub async fn adopt(&self, hash: &[u8; 32], size: u64, holder: &str) -> Result<i64> {
        let existing = self
            .db()
            .query_row("SELECT id FROM chunks WHERE hash = ?", params![&hash[..]])?;
        if let Some(row) = existing {
            let id = row.int(0)?;
            self.vfs.hold_chunks(holder, &[id])?;
            return Ok(id);
        }
        // Queued for collection before the marker is put: an adoption that
        // fails past the put leaves a marker the collection finds (one that
        // succeeds keeps it, the workspace relying on the object).
        self.vfs.forget_in_tier(&hash[..])?;
        self.store.put(&self.marker(hash), &[]).await?;
        let key = chunk_key(hash);
        match self.store.head(&key).await? {
            Some(stored) if stored == size => {}
            Some(_) => return Err(StoreError::Mismatch { key }.into()),
            None => return Err(StoreError::Missing { key }.into()),
        }
        self.db().transaction(|| {
            let row = self
                .db()
                .query_row(
                    "INSERT INTO chunks (hash, size, data, tier, moved_ms, used_ms) \
                     VALUES (?, ?, x'', ?, ?, ?) \
                     ON CONFLICT (hash) DO UPDATE SET used_ms = used_ms RETURNING id, tier",
                    params![
                        &hash[..],
                        size as i64,
                        TierState::Tiered.code(),
                        self.now(),
                        self.now()
                    ],
                )?
                .ok_or_else(|| VfsError::Corrupt("adopted chunk vanished".into()))?;
            let id = row.int(0)?;
            self.vfs.hold_chunks(holder, &[id])?;
            Ok(id)
        })
    }
}
