//! Forks: a whole-workspace checkpoint streamed into another workspace.
//!
//! A fork is a new agent, so a new Durable Object with its own database:
//! unlike a checkpoint, its content must be copied. The source exports the
//! checkpoint as pages of bounded frames ([`Vfs::export_page`]); the target
//! stages them ([`Vfs::import_page`]) and makes them its workspace only when
//! the last frame is in, in one transaction. The checkpoint keeps every
//! chunk it names alive, so the source goes on working while it is copied.
//!
//! The stream: a header (what is coming, so quotas are checked before any
//! byte arrives), the entries in batches (each node by its inode number,
//! parent, name and metadata, a file with its chunk hashes), then every
//! distinct chunk once, then an end frame. Each page but the last ends with
//! a resume frame naming where the next starts. A frame is
//! `[tag: u8][length: u32 LE][payload]`; headers, entries and the rest are
//! JSON, a chunk frame is the 32-byte BLAKE3 hash then the bytes, checked
//! against the hash before it is kept. A chunk kept only in the object
//! store (`crate::tier`) travels as a *shared* frame instead: its hash and
//! size, no bytes. The target's async layer adopts it first
//! ([`crate::tier::Tier::import_page`]: its own marker on the bucket's
//! object, then a tiered row), so a fork of a tiered workspace copies
//! metadata, not content; at most [`SHARED_PER_PAGE`] such frames go in a
//! page, bounding the requests one page costs the target. No frame exceeds [`MAX_FORK_FRAME`], no
//! page much more than the size asked, and a file is never whole in memory.
//!
//! The import is **resumable**: what it staged lives in tables
//! (`import_entries`, `import_file_chunks`, `import_chunks`, which keep the
//! chunks alive and counted against `max_stored_bytes`), each page applies
//! in one transaction together with its resume point, and applying a page
//! twice is harmless. After a break (a restart of either side) the target's
//! [`Vfs::import_status`] says where to resume; [`Vfs::abort_import`]
//! removes everything staged instead, so a fork that breaks off leaves
//! nothing behind. Until the end frame the target's tree stays empty; the
//! caller keeps the new agent closed while [`Vfs::import_status`] is
//! `Some`. Checkpoints, settings, tokens, jobs and schedules are not part of
//! the stream: it is the files of one point in time (the agent pins them as
//! the new workspace's first checkpoint, the one forked from).

use serde::{Deserialize, Serialize};
use stead_sql::{params, Sql};
use stead_sync::{hash_chunk, ChunkHash};

use super::{CheckpointId, Vfs};
use crate::error::{Result, VfsError};
use crate::node::Kind;
use crate::ops::{mode_bits, ChangeKind};
use crate::path::{VPath, MAX_NAME_LEN, MAX_PATH_LEN};
use crate::resolve::ROOT_INO;
use crate::tier::TierState;
use crate::{json_ids, CHUNK_SIZE};

/// Version of the stream; an importer refuses another.
pub const FORK_FORMAT: u32 = 1;
/// Largest frame payload. A chunk frame holds at most a chunk and its hash;
/// an entries frame at most 256 entries and about 4,096 chunk hashes
/// (~270 KiB), or one entry alone: one file's hashes fit up to a 32 GiB file.
pub const MAX_FORK_FRAME: usize = 4 << 20;
/// Most entries per entries frame.
const ENTRIES_PER_FRAME: i64 = 256;
/// Chunk hashes after which an entries frame is closed.
const HASHES_PER_FRAME: u64 = 4096;
/// Chunks looked up per statement while filling a page.
const CHUNKS_PER_QUERY: i64 = 64;
/// Most shared chunk frames in one page (each costs the target two
/// object-store requests).
const SHARED_PER_PAGE: u64 = 64;

/// Frame tags.
const HEADER: u8 = 1;
const ENTRIES: u8 = 2;
const CHUNK: u8 = 3;
const RESUME: u8 = 4;
const END: u8 = 5;
const SHARED: u8 = 6;

/// Where an export (re)starts. Opaque to callers but for
/// [`ExportCursor::token`] and [`ExportCursor::from_token`], which carry it
/// between requests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum ExportCursor {
    /// The header comes next.
    Start,
    /// Entries after `(parent, name)` come next.
    Entries { parent: i64, name: String },
    /// Chunks with ids after `after` come next.
    Chunks { after: i64 },
    /// Only the end frame is left.
    End,
}

impl ExportCursor {
    /// The cursor as text, to send or store.
    pub fn token(&self) -> String {
        serde_json::to_string(self).expect("a cursor is plain data")
    }

    /// A cursor from [`ExportCursor::token`].
    pub fn from_token(token: &str) -> Result<Self> {
        serde_json::from_str(token).map_err(|e| VfsError::BadImport {
            reason: format!("bad resume cursor: {e}"),
        })
    }
}

/// One page of an export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportPage {
    /// Whole frames, to hand to [`Vfs::import_page`] as they are.
    pub frames: Vec<u8>,
    /// Where the next page starts; `None` after the last.
    pub next: Option<ExportCursor>,
    /// Chunk bytes in this page.
    pub chunk_bytes: u64,
    /// Chunks in this page shared through the object store (no bytes
    /// sent), and their bytes.
    pub shared_chunks: u64,
    pub shared_bytes: u64,
}

/// Where an import stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImportStatus {
    /// The revision of the checkpoint being imported, in the source.
    pub source_revision: i64,
    /// What the source declared.
    pub entries: u64,
    pub chunks: u64,
    pub bytes: u64,
    /// What has been staged.
    pub received_entries: u64,
    pub received_chunks: u64,
    /// Where the source's export must resume.
    #[serde(serialize_with = "as_token")]
    pub resume: ExportCursor,
}

fn as_token<S: serde::Serializer>(cursor: &ExportCursor, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&cursor.token())
}

/// The outcome of one imported page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ImportProgress {
    /// More pages are needed.
    Staged(ImportStatus),
    /// The end frame arrived: the workspace is the fork, at `revision`.
    Finished { revision: i64, entries: u64 },
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Header {
    format: u32,
    revision: i64,
    root_mode: u32,
    root_mtime: i64,
    entries: u64,
    chunks: u64,
    bytes: u64,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct End {
    entries: u64,
    chunks: u64,
    bytes: u64,
}

/// One node on the wire.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireEntry {
    ino: i64,
    parent: i64,
    name: String,
    #[serde(rename = "type")]
    kind: Kind,
    mode: u32,
    size: u64,
    mtime: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    target: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    chunks: Vec<ChunkHash>,
}

fn put_frame(out: &mut Vec<u8>, tag: u8, payload: &[u8]) {
    out.push(tag);
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(payload);
}

fn put_json(out: &mut Vec<u8>, tag: u8, value: &impl Serialize) {
    let payload = serde_json::to_vec(value).expect("frames are plain data");
    put_frame(out, tag, &payload);
}

fn bad(reason: impl Into<String>) -> VfsError {
    VfsError::BadImport {
        reason: reason.into(),
    }
}

fn json<'a, T: Deserialize<'a>>(what: &str, payload: &'a [u8]) -> Result<T> {
    serde_json::from_slice(payload).map_err(|e| bad(format!("{what} frame: {e}")))
}

impl<S: Sql> Vfs<'_, S> {
    /// The page of checkpoint `id`'s stream that starts at `from`: whole
    /// frames, about `max_bytes` of them (at least one).
    pub fn export_page(
        &self,
        id: CheckpointId,
        from: &ExportCursor,
        max_bytes: usize,
    ) -> Result<ExportPage> {
        let checkpoint = self.checkpoint(id)?;
        if !checkpoint.whole {
            return Err(VfsError::PartialCheckpoint { checkpoint: id.0 });
        }
        let mut page = ExportPage {
            frames: Vec::new(),
            next: None,
            chunk_bytes: 0,
            shared_chunks: 0,
            shared_bytes: 0,
        };
        let mut cursor = from.clone();
        while page.frames.is_empty() || page.frames.len() < max_bytes {
            cursor = match cursor {
                ExportCursor::Start => {
                    self.export_header(id, checkpoint.revision, &mut page.frames)?;
                    ExportCursor::Entries {
                        parent: -1,
                        name: String::new(),
                    }
                }
                ExportCursor::Entries { parent, name } => {
                    self.export_entries(id, parent, &name, &mut page.frames)?
                }
                ExportCursor::Chunks { after } => {
                    match self.export_chunks(id, after, max_bytes, &mut page)? {
                        Some(next) => next,
                        // No room for the next chunk: it starts the next page.
                        None => {
                            cursor = ExportCursor::Chunks { after };
                            break;
                        }
                    }
                }
                ExportCursor::End => {
                    let (chunks, bytes) = self.export_totals(id)?;
                    let entries = self.export_entries_count(id)?;
                    put_json(
                        &mut page.frames,
                        END,
                        &End {
                            entries,
                            chunks,
                            bytes,
                        },
                    );
                    return Ok(page);
                }
            };
        }
        put_frame(&mut page.frames, RESUME, cursor.token().as_bytes());
        page.next = Some(cursor);
        Ok(page)
    }

    fn export_header(&self, id: CheckpointId, revision: i64, out: &mut Vec<u8>) -> Result<()> {
        let root = self
            .db
            .query_row(
                "SELECT mode, mtime FROM checkpoint_roots WHERE checkpoint = ? AND path = '/'",
                params![id.0],
            )?
            .ok_or_else(|| VfsError::Corrupt(format!("checkpoint {id} has no root")))?;
        let (chunks, bytes) = self.export_totals(id)?;
        let header = Header {
            format: FORK_FORMAT,
            revision,
            root_mode: root.int(0)? as u32,
            root_mtime: root.int(1)?,
            entries: self.export_entries_count(id)?,
            chunks,
            bytes,
        };
        put_json(out, HEADER, &header);
        Ok(())
    }

    fn export_entries_count(&self, id: CheckpointId) -> Result<u64> {
        let row = self.db.query_row(
            "SELECT COUNT(*) FROM checkpoint_entries WHERE checkpoint = ?",
            params![id.0],
        )?;
        Ok(row.unwrap_or_default().int(0)? as u64)
    }

    /// The distinct chunks of checkpoint `id`: how many, and their bytes.
    fn export_totals(&self, id: CheckpointId) -> Result<(u64, u64)> {
        let row = self
            .db
            .query_row(
                "SELECT COUNT(*), COALESCE(SUM(size), 0) FROM chunks WHERE id IN \
                 (SELECT chunk FROM checkpoint_chunks WHERE checkpoint = ?)",
                params![id.0],
            )?
            .unwrap_or_default();
        Ok((row.int(0)? as u64, row.int(1)? as u64))
    }

    /// One frame of entries after `(parent, name)`; the cursor after it.
    fn export_entries(
        &self,
        id: CheckpointId,
        parent: i64,
        name: &str,
        out: &mut Vec<u8>,
    ) -> Result<ExportCursor> {
        let mut rows = self.db.query(
            "SELECT parent, name, ino, kind, mode, size, mtime, target FROM checkpoint_entries \
             WHERE checkpoint = ? AND (parent > ? OR (parent = ? AND name > ?)) \
             ORDER BY parent, name LIMIT ?",
            params![id.0, parent, parent, name, ENTRIES_PER_FRAME],
        )?;
        // Close the frame early when large files' hashes would swell it.
        let mut hashes_in_frame = 0u64;
        let keep = rows
            .iter()
            .take_while(|row| {
                let before = hashes_in_frame;
                hashes_in_frame += (row.int(5).unwrap_or(0) as u64).div_ceil(CHUNK_SIZE as u64);
                before == 0 || hashes_in_frame <= HASHES_PER_FRAME
            })
            .count();
        rows.truncate(keep.max(1));
        let Some(last) = rows.last() else {
            return Ok(ExportCursor::Chunks { after: 0 });
        };
        let next = ExportCursor::Entries {
            parent: last.int(0)?,
            name: last.text(1)?.to_string(),
        };
        let files: Vec<i64> = rows
            .iter()
            .filter(|row| row.int(3).ok() == Some(Kind::File.to_db()))
            .map(|row| row.int(2))
            .collect::<Result<_, _>>()?;
        let mut hashes: std::collections::HashMap<i64, Vec<ChunkHash>> = Default::default();
        for mut row in self.db.query(
            "SELECT k.ino, c.hash FROM checkpoint_chunks k JOIN chunks c ON c.id = k.chunk \
             WHERE k.checkpoint = ? AND k.ino IN (SELECT value FROM json_each(?)) \
             ORDER BY k.ino, k.idx",
            params![id.0, json_ids(&files).as_str()],
        )? {
            let ino = row.int(0)?;
            let hash: [u8; 32] = row
                .take_blob(1)?
                .try_into()
                .map_err(|_| VfsError::Corrupt("a chunk hash is not 32 bytes".into()))?;
            hashes.entry(ino).or_default().push(ChunkHash(hash));
        }
        let mut entries = Vec::with_capacity(rows.len());
        for row in &rows {
            let ino = row.int(2)?;
            let kind = Kind::from_db(row.int(3)?)?;
            entries.push(WireEntry {
                ino,
                parent: row.int(0)?,
                name: row.text(1)?.to_string(),
                kind,
                mode: row.int(4)? as u32,
                size: row.int(5)? as u64,
                mtime: row.int(6)?,
                target: row.opt_text(7)?.map(str::to_string),
                chunks: hashes.remove(&ino).unwrap_or_default(),
            });
        }
        put_json(out, ENTRIES, &entries);
        Ok(next)
    }

    /// Chunk frames after chunk id `after` while the page has room; the
    /// cursor after them, or `None` when the page had no room for the next.
    fn export_chunks(
        &self,
        id: CheckpointId,
        after: i64,
        max_bytes: usize,
        page: &mut ExportPage,
    ) -> Result<Option<ExportCursor>> {
        let rows = self.db.query(
            "SELECT DISTINCT k.chunk, c.size FROM checkpoint_chunks k JOIN chunks c ON c.id = k.chunk \
             WHERE k.checkpoint = ? AND k.chunk > ? ORDER BY k.chunk LIMIT ?",
            params![id.0, after, CHUNKS_PER_QUERY],
        )?;
        if rows.is_empty() {
            return Ok(Some(ExportCursor::End));
        }
        let mut cursor = None;
        for row in rows {
            let (chunk, size) = (row.int(0)?, row.int(1)? as usize);
            let mut row = self
                .db
                .query_row(
                    "SELECT hash, data, size, tier FROM chunks WHERE id = ?",
                    params![chunk],
                )?
                .ok_or_else(|| VfsError::Corrupt(format!("pinned chunk {chunk} missing")))?;
            let hash = row.take_blob(0)?;
            if TierState::from_code(row.int(3)?)? == TierState::Tiered {
                if page.shared_chunks >= SHARED_PER_PAGE {
                    break;
                }
                page.frames.push(SHARED);
                page.frames.extend_from_slice(&40u32.to_le_bytes());
                page.frames.extend_from_slice(&hash);
                page.frames.extend_from_slice(&(size as u64).to_le_bytes());
                page.shared_chunks += 1;
                page.shared_bytes += size as u64;
                cursor = Some(chunk);
                continue;
            }
            if !page.frames.is_empty() && page.frames.len() + size + 37 > max_bytes {
                break;
            }
            let data =
                crate::content::inline_bytes(&mut row, 1, 2)?.ok_or_else(|| VfsError::Tiered {
                    chunks: vec![chunk],
                })?;
            page.frames.push(CHUNK);
            page.frames
                .extend_from_slice(&((hash.len() + data.len()) as u32).to_le_bytes());
            page.frames.extend_from_slice(&hash);
            page.frames.extend_from_slice(&data);
            page.chunk_bytes += data.len() as u64;
            cursor = Some(chunk);
        }
        Ok(cursor.map(|after| ExportCursor::Chunks { after }))
    }

    /// Applies one page of a fork's stream, in one transaction (see the
    /// module docs). The workspace must be empty when the header arrives.
    pub fn import_page(&self, page: &[u8]) -> Result<ImportProgress> {
        self.db.transaction(|| {
            let mut rest = page;
            while !rest.is_empty() {
                let (tag, payload, tail) = split_frame(rest)?;
                rest = tail;
                match tag {
                    HEADER => self.import_header(json("header", payload)?)?,
                    ENTRIES => self.import_entries(json("entries", payload)?)?,
                    CHUNK => self.import_chunk(payload)?,
                    SHARED => self.import_shared(payload)?,
                    RESUME => self.import_resume(payload)?,
                    END => {
                        let end: End = json("end", payload)?;
                        if !rest.is_empty() {
                            return Err(bad("frames after the end frame"));
                        }
                        return self.finish_import(&end);
                    }
                    other => return Err(bad(format!("unknown frame tag {other}"))),
                }
            }
            let status = self.import_status()?.ok_or(VfsError::NoImport)?;
            Ok(ImportProgress::Staged(status))
        })
    }

    fn import_header(&self, header: Header) -> Result<()> {
        if header.format != FORK_FORMAT {
            return Err(bad(format!(
                "format {} (this workspace reads {FORK_FORMAT})",
                header.format
            )));
        }
        if let Some(status) = self.import_status()? {
            // A page sent again after a break is harmless.
            if status.source_revision == header.revision && status.entries == header.entries {
                return Ok(());
            }
            return Err(VfsError::ImportTargetInUse {
                reason: "another import is in progress",
            });
        }
        let count = |sql: &str| -> Result<i64> {
            Ok(self
                .db
                .query_row(sql, params![])?
                .unwrap_or_default()
                .int(0)?)
        };
        if count("SELECT COUNT(*) FROM nodes")? > 1 {
            return Err(VfsError::ImportTargetInUse {
                reason: "the workspace holds files",
            });
        }
        if count("SELECT COUNT(*) FROM checkpoints")? > 0 {
            return Err(VfsError::ImportTargetInUse {
                reason: "the workspace has checkpoints",
            });
        }
        let stored = self.meta("stored_bytes")?.max(0) as u64;
        let limits = self.limits;
        if stored + header.bytes > limits.max_stored_bytes {
            return Err(VfsError::NoSpace {
                quota: "max_stored_bytes",
                used: stored + header.bytes,
                limit: limits.max_stored_bytes,
            });
        }
        if header.entries + 1 > limits.max_nodes {
            return Err(VfsError::NoSpace {
                quota: "max_nodes",
                used: header.entries + 1,
                limit: limits.max_nodes,
            });
        }
        let resume = ExportCursor::Entries {
            parent: -1,
            name: String::new(),
        };
        self.db.execute(
            "INSERT INTO import (one, source_revision, root_mode, root_mtime, entries, chunks, \
             bytes, resume, started_ms) VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?)",
            params![
                header.revision,
                mode_bits(header.root_mode),
                header.root_mtime,
                header.entries as i64,
                header.chunks as i64,
                header.bytes as i64,
                resume.token().as_str(),
                self.now_ms
            ],
        )?;
        Ok(())
    }

    fn require_import(&self) -> Result<()> {
        match self.import_status()? {
            Some(_) => Ok(()),
            None => Err(VfsError::NoImport),
        }
    }

    fn import_entries(&self, entries: Vec<WireEntry>) -> Result<()> {
        self.require_import()?;
        for entry in entries {
            self.check_wire_entry(&entry)?;
            self.db.execute(
                "INSERT OR REPLACE INTO import_entries \
                 (ino, parent, name, kind, mode, size, mtime, target) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                params![
                    entry.ino,
                    entry.parent,
                    entry.name.as_str(),
                    entry.kind.to_db(),
                    mode_bits(entry.mode),
                    entry.size as i64,
                    entry.mtime,
                    entry.target.as_deref()
                ],
            )?;
            self.db.execute(
                "DELETE FROM import_file_chunks WHERE ino = ?",
                params![entry.ino],
            )?;
            for (idx, hash) in entry.chunks.iter().enumerate() {
                self.db.execute(
                    "INSERT INTO import_file_chunks (ino, idx, hash) VALUES (?, ?, ?)",
                    params![entry.ino, idx as i64, &hash.0[..]],
                )?;
            }
        }
        Ok(())
    }

    /// Checks one entry on its own; how entries fit together is checked at
    /// the end.
    fn check_wire_entry(&self, entry: &WireEntry) -> Result<()> {
        let what = || format!("entry {} ({:?})", entry.ino, entry.name);
        if entry.ino <= ROOT_INO || entry.parent < ROOT_INO || entry.parent == entry.ino {
            return Err(bad(format!("{}: bad inode numbers", what())));
        }
        let name = entry.name.as_str();
        if name.is_empty()
            || name.len() > MAX_NAME_LEN
            || name.contains(['/', '\0'])
            || name == "."
            || name == ".."
        {
            return Err(bad(format!("{}: not a valid file name", what())));
        }
        match entry.kind {
            Kind::File => {
                self.check_size(&VPath::root().join(name), entry.size)?;
                let chunks = entry.size.div_ceil(CHUNK_SIZE as u64);
                if entry.target.is_some() || entry.chunks.len() as u64 != chunks {
                    return Err(bad(format!(
                        "{}: {} chunks for {} bytes",
                        what(),
                        entry.chunks.len(),
                        entry.size
                    )));
                }
            }
            Kind::Dir => {
                if entry.target.is_some() || !entry.chunks.is_empty() || entry.size != 0 {
                    return Err(bad(format!("{}: a directory with content", what())));
                }
            }
            Kind::Symlink => {
                let target = entry.target.as_deref().unwrap_or("");
                if target.is_empty()
                    || target.len() > MAX_PATH_LEN
                    || target.contains('\0')
                    || entry.size != target.len() as u64
                    || !entry.chunks.is_empty()
                {
                    return Err(bad(format!("{}: not a valid symlink", what())));
                }
            }
        }
        Ok(())
    }

    fn import_chunk(&self, payload: &[u8]) -> Result<()> {
        self.require_import()?;
        if payload.len() <= 32 {
            return Err(bad("an empty chunk frame"));
        }
        let (hash, data) = payload.split_at(32);
        let hash: [u8; 32] = hash.try_into().map_err(|_| bad("a short chunk hash"))?;
        if hash_chunk(data).0 != hash {
            return Err(bad(format!(
                "chunk {} does not match its hash",
                ChunkHash(hash)
            )));
        }
        let id = self.put_hashed_chunk(&hash, data)?;
        self.db.execute(
            "INSERT OR IGNORE INTO import_chunks (chunk) VALUES (?)",
            params![id],
        )?;
        self.check_quotas()
    }

    /// A shared chunk frame: the chunk must have been adopted already (a
    /// tiered row with its hash and size, see the module docs).
    fn import_shared(&self, payload: &[u8]) -> Result<()> {
        self.require_import()?;
        let (hash, size) = shared_frame(payload)?;
        let row = self.db.query_row(
            "SELECT id FROM chunks WHERE hash = ? AND size = ?",
            params![&hash[..], size as i64],
        )?;
        let Some(row) = row else {
            return Err(bad(format!(
                "shared chunk {} was not adopted from the object store before its page",
                ChunkHash(hash)
            )));
        };
        self.db.execute(
            "INSERT OR IGNORE INTO import_chunks (chunk) VALUES (?)",
            params![row.int(0)?],
        )?;
        self.check_quotas()
    }

    fn import_resume(&self, payload: &[u8]) -> Result<()> {
        self.require_import()?;
        let token = std::str::from_utf8(payload).map_err(|_| bad("a resume frame not text"))?;
        ExportCursor::from_token(token)?;
        self.db
            .execute("UPDATE import SET resume = ? WHERE one = 1", params![token])?;
        Ok(())
    }

    /// Where the import into this workspace stands; `None` when none is in
    /// progress (the workspace is usable).
    pub fn import_status(&self) -> Result<Option<ImportStatus>> {
        let Some(row) = self.db.query_row(
            "SELECT source_revision, entries, chunks, bytes, resume, \
             (SELECT COUNT(*) FROM import_entries), (SELECT COUNT(*) FROM import_chunks) \
             FROM import WHERE one = 1",
            params![],
        )?
        else {
            return Ok(None);
        };
        Ok(Some(ImportStatus {
            source_revision: row.int(0)?,
            entries: row.int(1)? as u64,
            chunks: row.int(2)? as u64,
            bytes: row.int(3)? as u64,
            resume: ExportCursor::from_token(row.text(4)?)?,
            received_entries: row.int(5)? as u64,
            received_chunks: row.int(6)? as u64,
        }))
    }

    /// Checks the staged tree adds up and makes it the workspace.
    fn finish_import(&self, end: &End) -> Result<ImportProgress> {
        let status = self.import_status()?.ok_or(VfsError::NoImport)?;
        if status.entries != end.entries || status.received_entries != end.entries {
            return Err(bad(format!(
                "{} entries declared, {} ended, {} staged",
                status.entries, end.entries, status.received_entries
            )));
        }
        let revision = self.change(|rev| {
            self.check_staged_tree(status.received_entries)?;
            self.check_staged_content()?;
            let row = self
                .db
                .query_row("SELECT root_mode, root_mtime FROM import", params![])?
                .unwrap_or_default();
            self.db.execute(
                "INSERT INTO nodes (ino, kind, mode, size, mtime, target, rev) \
                 SELECT ino, kind, mode, size, mtime, target, ? FROM import_entries",
                params![rev],
            )?;
            self.db.execute(
                "INSERT INTO dirents (parent, name, ino) SELECT parent, name, ino FROM import_entries",
                params![],
            )?;
            self.db.execute(
                "INSERT INTO file_chunks (ino, idx, chunk) SELECT f.ino, f.idx, c.id \
                 FROM import_file_chunks f JOIN chunks c ON c.hash = f.hash",
                params![],
            )?;
            self.db.execute(
                "UPDATE nodes SET mode = ?, mtime = ?, rev = ? WHERE ino = ?",
                params![row.int(0)?, row.int(1)?, rev, ROOT_INO],
            )?;
            let top = self.db.query(
                "SELECT name FROM import_entries WHERE parent = ? ORDER BY name",
                params![ROOT_INO],
            )?;
            for row in &top {
                self.log_change(rev, &VPath::root().join(row.text(0)?), ChangeKind::Created)?;
            }
            if top.is_empty() {
                self.log_change(rev, &VPath::root(), ChangeKind::Modified)?;
            }
            self.clear_import()?;
            Ok(rev)
        })?;
        Ok(ImportProgress::Finished {
            revision,
            entries: status.received_entries,
        })
    }

    /// Every staged entry hangs from the root through directories, within
    /// the depth and length limits.
    fn check_staged_tree(&self, entries: u64) -> Result<()> {
        let orphan = self.db.query_row(
            "SELECT e.ino FROM import_entries e WHERE e.parent != ? AND NOT EXISTS \
             (SELECT 1 FROM import_entries p WHERE p.ino = e.parent AND p.kind = 2) LIMIT 1",
            params![ROOT_INO],
        )?;
        if let Some(row) = orphan {
            return Err(bad(format!(
                "entry {} has no parent directory",
                row.int(0)?
            )));
        }
        // Each entry has one parent, so what the root reaches is a tree;
        // entries it does not reach form cycles.
        let row = self
            .db
            .query_row(
                "WITH RECURSIVE reach(ino, depth, len) AS (SELECT ?, 0, 0 UNION ALL \
                 SELECT e.ino, r.depth + 1, r.len + 1 + length(CAST(e.name AS BLOB)) \
                 FROM import_entries e JOIN reach r ON e.parent = r.ino) \
                 SELECT COUNT(*) - 1, MAX(depth), MAX(len) FROM reach",
                params![ROOT_INO],
            )?
            .unwrap_or_default();
        let (reached, depth, len) = (row.int(0)? as u64, row.int(1)? as usize, row.int(2)?);
        if reached != entries {
            return Err(bad(format!(
                "{} of {entries} entries hang from the root",
                reached
            )));
        }
        if depth > self.limits.max_path_depth {
            return Err(VfsError::TooDeep {
                path: "(a path of the fork)".into(),
                depth,
                limit: self.limits.max_path_depth,
            });
        }
        if len as usize > MAX_PATH_LEN {
            return Err(VfsError::NameTooLong {
                path: "(a path of the fork)".into(),
                len: len as usize,
                limit: MAX_PATH_LEN,
            });
        }
        Ok(())
    }

    /// Every staged file's chunks arrived and add up to its size, all full
    /// but the last.
    fn check_staged_content(&self) -> Result<()> {
        let missing = self.db.query_row(
            "SELECT f.ino, f.hash FROM import_file_chunks f \
             WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.hash = f.hash) LIMIT 1",
            params![],
        )?;
        if let Some(row) = missing {
            let hash: [u8; 32] = row.blob(1)?.try_into().unwrap_or([0; 32]);
            return Err(bad(format!(
                "chunk {} of entry {} never arrived",
                ChunkHash(hash),
                row.int(0)?
            )));
        }
        let wrong = self.db.query_row(
            "SELECT e.ino FROM import_entries e WHERE e.kind = 1 AND e.size != \
             (SELECT COALESCE(SUM(c.size), 0) FROM import_file_chunks f \
              JOIN chunks c ON c.hash = f.hash WHERE f.ino = e.ino) LIMIT 1",
            params![],
        )?;
        if let Some(row) = wrong {
            return Err(bad(format!(
                "entry {}: its chunks do not add up to its size",
                row.int(0)?
            )));
        }
        let short = self.db.query_row(
            "SELECT f.ino FROM import_file_chunks f JOIN chunks c ON c.hash = f.hash \
             WHERE c.size != ? AND f.idx < (SELECT MAX(idx) FROM import_file_chunks g \
             WHERE g.ino = f.ino) LIMIT 1",
            params![CHUNK_SIZE as i64],
        )?;
        if let Some(row) = short {
            return Err(bad(format!(
                "entry {}: a chunk before its last is not full",
                row.int(0)?
            )));
        }
        Ok(())
    }

    /// Drops everything an import staged (and the content only it held);
    /// returns whether there was anything.
    pub fn abort_import(&self) -> Result<bool> {
        self.db.transaction(|| {
            let any = self.import_status()?.is_some();
            self.clear_import()?;
            Ok(any)
        })
    }

    fn clear_import(&self) -> Result<()> {
        for table in ["import", "import_entries", "import_file_chunks"] {
            self.db
                .execute(&format!("DELETE FROM {table}"), params![])?;
        }
        let chunks = self
            .db
            .query("DELETE FROM import_chunks RETURNING chunk", params![])?
            .iter()
            .map(|row| row.int(0))
            .collect::<Result<Vec<_>, _>>()?;
        self.collect(&chunks)
    }
}

/// The chunks a page shares through the object store (its shared frames):
/// hash and size each, for the target to adopt before the page is
/// imported.
pub(crate) fn shared_chunks(page: &[u8]) -> Result<Vec<([u8; 32], u64)>> {
    let mut shared = Vec::new();
    let mut rest = page;
    while !rest.is_empty() {
        let (tag, payload, tail) = split_frame(rest)?;
        rest = tail;
        if tag == SHARED {
            shared.push(shared_frame(payload)?);
        }
    }
    Ok(shared)
}

/// A shared frame's hash and size.
fn shared_frame(payload: &[u8]) -> Result<([u8; 32], u64)> {
    if payload.len() != 40 {
        return Err(bad("a shared chunk frame that is not 40 bytes"));
    }
    let (hash, size) = payload.split_at(32);
    let hash: [u8; 32] = hash.try_into().map_err(|_| bad("a short chunk hash"))?;
    let size = u64::from_le_bytes(size.try_into().map_err(|_| bad("a short chunk size"))?);
    if size == 0 || size > CHUNK_SIZE as u64 {
        return Err(bad(format!("a shared chunk of {size} bytes")));
    }
    Ok((hash, size))
}

/// Splits the first frame off `bytes`: its tag, payload and what follows.
fn split_frame(bytes: &[u8]) -> Result<(u8, &[u8], &[u8])> {
    if bytes.len() < 5 {
        return Err(bad("a frame cut short"));
    }
    let tag = bytes[0];
    let len = u32::from_le_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]) as usize;
    if len > MAX_FORK_FRAME {
        return Err(bad(format!(
            "a frame of {len} bytes (limit {MAX_FORK_FRAME})"
        )));
    }
    let rest = &bytes[5..];
    if rest.len() < len {
        return Err(bad("a frame cut short"));
    }
    Ok((tag, &rest[..len], &rest[len..]))
}
