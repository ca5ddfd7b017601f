//! File content as content-addressed chunks.
//!
//! A chunk row is shared by every file, staged upload, checkpoint and staged
//! import that holds the same bytes; there is no reference count to keep in
//! step, because references are the `file_chunks`, `upload_chunks`,
//! `checkpoint_chunks`, `import_chunks` and `chunk_holds` rows themselves.
//! Whoever drops references passes the chunk ids to [`Vfs::collect`], which
//! deletes those no longer referenced anywhere (and queues the bucket copy
//! of a moved one for the tier's collection, see [`crate::tier`]).
//!
//! A chunk whose bytes moved to the object store keeps its row with an
//! empty `data`. Every read here checks the bytes it got against the
//! row's size and answers [`VfsError::Tiered`] (naming what to fetch)
//! rather than a short or empty content: nothing synchronous can answer
//! wrong bytes.

use std::collections::HashMap;

use stead_sql::{params, Sql};

use crate::error::{Result, VfsError};
use crate::{json_ids, Kind, Node, Vfs};

/// Bytes per chunk: every chunk of a file is this size but the last.
pub use stead_sync::CHUNK_SIZE;

/// Chunk ids checked per collecting statement (~170 KB of JSON at most).
const COLLECT_BATCH: usize = 8192;

/// Small files fetched per statement, by count and by bytes.
pub(crate) const BATCH_FILES: usize = 256;
pub(crate) const BATCH_BYTES: u64 = 8 << 20;

/// One chunk of a file, in order: its id and how many of the file's bytes
/// it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkRef {
    pub id: i64,
    pub size: u64,
}

impl<S: Sql> Vfs<'_, S> {
    /// Stores `data` as a chunk (or finds the identical one) and returns its id.
    pub(crate) fn put_chunk(&self, data: &[u8]) -> Result<i64> {
        self.put_hashed_chunk(blake3::hash(data).as_bytes(), data)
    }

    /// As [`Vfs::put_chunk`], for `data` whose BLAKE3 `hash` the caller has
    /// just checked.
    pub(crate) fn put_hashed_chunk(&self, hash: &[u8; 32], data: &[u8]) -> Result<i64> {
        let hash = hash.as_slice();
        // New content is the common case: one statement; a duplicate then
        // costs a second to find the existing row.
        // A duplicate counts as a use: it stays (or becomes) hot.
        let row = self
            .db
            .query_row(
                "INSERT INTO chunks (hash, size, data, used_ms) VALUES (?, ?, ?, ?) \
                 ON CONFLICT (hash) DO UPDATE SET used_ms = excluded.used_ms RETURNING id",
                params![hash, data.len() as i64, data, self.now_ms],
            )?
            .ok_or_else(|| VfsError::Corrupt("chunk vanished during insert".into()))?;
        Ok(row.int(0)?)
    }

    /// The chunks of file `ino`, in order.
    pub(crate) fn chunks_of(&self, ino: i64) -> Result<Vec<ChunkRef>> {
        self.db
            .query(
                "SELECT f.chunk, c.size FROM file_chunks f JOIN chunks c ON c.id = f.chunk \
                 WHERE f.ino = ? ORDER BY f.idx",
                params![ino],
            )?
            .iter()
            .map(|row| {
                Ok(ChunkRef {
                    id: row.int(0)?,
                    size: row.int(1)? as u64,
                })
            })
            .collect()
    }

    /// The bytes of chunk `id`.
    pub(crate) fn chunk_data(&self, id: i64) -> Result<Vec<u8>> {
        let mut row = self
            .db
            .query_row("SELECT data, size FROM chunks WHERE id = ?", params![id])?
            .ok_or_else(|| VfsError::Corrupt(format!("chunk {id} missing")))?;
        inline_bytes(&mut row, 0, 1)?.ok_or_else(|| VfsError::Tiered { chunks: vec![id] })
    }

    /// The error for a read of files `inos` that met a chunk in the tier:
    /// it names every tiered chunk of those files, so one fetch serves
    /// the retry.
    pub(crate) fn tiered(&self, inos: &[i64]) -> VfsError {
        let rows = self.db.query(
            "SELECT DISTINCT f.chunk FROM file_chunks f JOIN chunks c ON c.id = f.chunk \
             WHERE f.ino IN (SELECT value FROM json_each(?)) AND c.tier = 2",
            params![json_ids(inos).as_str()],
        );
        let chunks = rows.map_err(VfsError::from).and_then(|rows| {
            rows.iter()
                .map(|row| Ok(row.int(0)?))
                .collect::<Result<Vec<i64>>>()
        });
        match chunks {
            Ok(chunks) if !chunks.is_empty() => VfsError::Tiered { chunks },
            Ok(_) => VfsError::Corrupt(format!("a chunk of inode(s) {inos:?} is short")),
            Err(error) => error,
        }
    }

    /// The whole content of file `ino`.
    pub(crate) fn content(&self, ino: i64) -> Result<Vec<u8>> {
        let rows = self.db.query(
            "SELECT c.data, c.size FROM file_chunks f JOIN chunks c ON c.id = f.chunk \
             WHERE f.ino = ? ORDER BY f.idx",
            params![ino],
        )?;
        let mut out = Vec::new();
        for mut row in rows {
            let data = inline_bytes(&mut row, 0, 1)?.ok_or_else(|| self.tiered(&[ino]))?;
            if out.is_empty() {
                out = data;
            } else {
                out.extend_from_slice(&data);
            }
        }
        Ok(out)
    }

    /// The contents of small (at most one chunk) files `inos`, in one query.
    /// Empty files are absent from the map.
    pub(crate) fn small_contents(&self, inos: &[i64]) -> Result<HashMap<i64, Vec<u8>>> {
        let set = json_ids(inos);
        let rows = self.db.query(
            "SELECT f.ino, c.data, c.size FROM file_chunks f JOIN chunks c ON c.id = f.chunk \
             WHERE f.ino IN (SELECT value FROM json_each(?)) AND f.idx = 0",
            params![set.as_str()],
        )?;
        let mut out = HashMap::with_capacity(rows.len());
        for mut row in rows {
            let data = inline_bytes(&mut row, 1, 2)?.ok_or_else(|| self.tiered(inos))?;
            out.insert(row.int(0)?, data);
        }
        Ok(out)
    }

    /// The whole contents of the regular files `nodes` (as a listing or
    /// `stat` returned them), in order. Small files (at most one chunk) are
    /// fetched in batches of up to [`BATCH_FILES`] files or [`BATCH_BYTES`]
    /// bytes, one statement per batch: per-statement cost, not bytes,
    /// dominates reading many small files. A larger file costs one statement
    /// of its own. A directory or symlink node is an error: pass the node a
    /// symlink resolves to.
    pub fn read_files(&self, nodes: &[Node]) -> Result<Vec<Vec<u8>>> {
        let mut out: Vec<Vec<u8>> = Vec::with_capacity(nodes.len());
        // Indices (into `nodes`) of the small files not fetched yet.
        let mut batch: Vec<usize> = Vec::new();
        let mut batch_bytes = 0u64;
        for (i, node) in nodes.iter().enumerate() {
            match node.kind {
                Kind::File => {}
                Kind::Dir => {
                    return Err(VfsError::IsADirectory {
                        path: format!("inode {}", node.ino),
                    })
                }
                Kind::Symlink => {
                    return Err(VfsError::InvalidPath {
                        path: format!("inode {}", node.ino),
                        reason: "a symbolic link has no content of its own",
                    })
                }
            }
            out.push(Vec::new());
            if node.size == 0 {
                continue;
            }
            if node.size > CHUNK_SIZE as u64 {
                out[i] = self.content(node.ino)?;
                continue;
            }
            batch.push(i);
            batch_bytes += node.size;
            if batch.len() >= BATCH_FILES || batch_bytes >= BATCH_BYTES {
                self.fill_small(nodes, &batch, &mut out)?;
                batch.clear();
                batch_bytes = 0;
            }
        }
        self.fill_small(nodes, &batch, &mut out)?;
        Ok(out)
    }

    /// Fetches the small files `nodes[i]` for each `i` of `batch` into `out[i]`.
    fn fill_small(&self, nodes: &[Node], batch: &[usize], out: &mut [Vec<u8>]) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let inos: Vec<i64> = batch.iter().map(|&i| nodes[i].ino).collect();
        let mut contents = self.small_contents(&inos)?;
        // A node repeated in `nodes` gets a copy but at its last place.
        let last: HashMap<i64, usize> = batch.iter().map(|&i| (nodes[i].ino, i)).collect();
        for &i in batch {
            let ino = nodes[i].ino;
            out[i] = if last[&ino] == i {
                contents.remove(&ino).unwrap_or_default()
            } else {
                contents.get(&ino).cloned().unwrap_or_default()
            };
        }
        Ok(())
    }

    /// Up to `len` bytes of file `ino` (of `size` bytes) from byte `offset`.
    pub(crate) fn content_range(
        &self,
        ino: i64,
        size: u64,
        offset: u64,
        len: u64,
    ) -> Result<Vec<u8>> {
        let end = size.min(offset.saturating_add(len));
        if offset >= end {
            return Ok(Vec::new());
        }
        let chunk = CHUNK_SIZE as u64;
        let rows = self.db.query(
            "SELECT f.idx, c.data, c.size FROM file_chunks f JOIN chunks c ON c.id = f.chunk \
             WHERE f.ino = ? AND f.idx BETWEEN ? AND ? ORDER BY f.idx",
            params![ino, (offset / chunk) as i64, ((end - 1) / chunk) as i64],
        )?;
        let mut out = Vec::with_capacity((end - offset) as usize);
        for mut row in rows {
            let start = row.int(0)? as u64 * chunk;
            let data = inline_bytes(&mut row, 1, 2)?.ok_or_else(|| self.tiered(&[ino]))?;
            let from = offset.saturating_sub(start) as usize;
            let to = ((end - start) as usize).min(data.len());
            out.extend_from_slice(&data[from.min(to)..to]);
        }
        Ok(out)
    }

    /// Appends `data` as chunks of file `ino`, starting at chunk index `idx`.
    pub(crate) fn push_chunks(&self, ino: i64, mut idx: i64, data: &[u8]) -> Result<()> {
        for piece in data.chunks(CHUNK_SIZE) {
            let id = self.put_chunk(piece)?;
            self.db.execute(
                "INSERT INTO file_chunks (ino, idx, chunk) VALUES (?, ?, ?)",
                params![ino, idx, id],
            )?;
            idx += 1;
        }
        Ok(())
    }

    /// Replaces the content of file `ino` with `data`.
    pub(crate) fn set_content(&self, ino: i64, data: &[u8]) -> Result<()> {
        let old = self.drop_content(ino)?;
        self.push_chunks(ino, 0, data)?;
        self.collect(&old)
    }

    /// Appends `data` to file `ino` of `size` bytes: only a partial last chunk
    /// is rewritten.
    pub(crate) fn append_content(&self, ino: i64, size: u64, data: &[u8]) -> Result<()> {
        let full = (size / CHUNK_SIZE as u64) as i64;
        let tail = size % CHUNK_SIZE as u64;
        if tail == 0 {
            return self.push_chunks(ino, full, data);
        }
        let row = self
            .db
            .query_row(
                "DELETE FROM file_chunks WHERE ino = ? AND idx = ? RETURNING chunk",
                params![ino, full],
            )?
            .ok_or_else(|| VfsError::Corrupt(format!("inode {ino} lacks chunk {full}")))?;
        let old = row.int(0)?;
        let mut joined = self.chunk_data(old)?;
        joined.extend_from_slice(data);
        self.push_chunks(ino, full, &joined)?;
        self.collect(&[old])
    }

    /// Removes every chunk reference of the files in `inos`; returns the chunk
    /// ids they referenced, for [`Vfs::collect`].
    pub(crate) fn drop_content_of(&self, inos: &[i64]) -> Result<Vec<i64>> {
        let set = json_ids(inos);
        let ids = self
            .db
            .query(
                "DELETE FROM file_chunks WHERE ino IN (SELECT value FROM json_each(?)) RETURNING chunk",
                params![set.as_str()],
            )?
            .iter()
            .map(|row| row.int(0))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ids)
    }

    pub(crate) fn drop_content(&self, ino: i64) -> Result<Vec<i64>> {
        self.drop_content_of(&[ino])
    }

    /// Shares the chunks of file `from` with file `to` (which has none): a
    /// copy that copies no bytes.
    pub(crate) fn share_content(&self, from: i64, to: i64) -> Result<()> {
        self.db.execute(
            "INSERT INTO file_chunks (ino, idx, chunk) SELECT ?, idx, chunk FROM file_chunks WHERE ino = ?",
            params![to, from],
        )?;
        Ok(())
    }

    /// Deletes those of `chunk_ids` that nothing references any more. The
    /// ids go to SQL in batches, each bound as one JSON text well under the
    /// 2 MB a Durable Object accepts (dropping a large checkpoint releases
    /// one id per pinned chunk).
    pub(crate) fn collect(&self, chunk_ids: &[i64]) -> Result<()> {
        let mut ids = chunk_ids.to_vec();
        ids.sort_unstable();
        ids.dedup();
        for batch in ids.chunks(COLLECT_BATCH) {
            let moved = self.db.query(
                "DELETE FROM chunks WHERE id IN (SELECT value FROM json_each(?)) \
                 AND NOT EXISTS (SELECT 1 FROM file_chunks f WHERE f.chunk = chunks.id) \
                 AND NOT EXISTS (SELECT 1 FROM upload_chunks u WHERE u.chunk = chunks.id) \
                 AND NOT EXISTS (SELECT 1 FROM checkpoint_chunks k WHERE k.chunk = chunks.id) \
                 AND NOT EXISTS (SELECT 1 FROM import_chunks i WHERE i.chunk = chunks.id) \
                 AND NOT EXISTS (SELECT 1 FROM chunk_holds h WHERE h.chunk = chunks.id) \
                 RETURNING hash, tier",
                params![json_ids(batch).as_str()],
            )?;
            // A chunk the bucket may hold: its copy there is garbage now.
            for row in &moved {
                if row.int(1)? != 0 {
                    self.forget_in_tier(row.blob(0)?)?;
                }
            }
        }
        Ok(())
    }
}

/// The bytes in column `data` of a chunk row whose size is in column
/// `size`, or `None` when the row's inline copy is not them (the chunk is
/// in the tier).
pub(crate) fn inline_bytes(
    row: &mut stead_sql::Row,
    data: usize,
    size: usize,
) -> Result<Option<Vec<u8>>> {
    let size = row.int(size)? as usize;
    let bytes = row.take_blob(data)?;
    Ok((bytes.len() == size).then_some(bytes))
}
