//! Streamed uploads: chunks staged as they arrive, made visible at once.
//!
//! A large body arrives over many events (awaits), so it cannot be one SQL
//! transaction. Each arriving chunk is stored and recorded under the upload's
//! id in `upload_chunks`, which keeps it alive; [`Vfs::commit_upload`] then
//! swaps the staged chunks in as the file's content in one transaction. An
//! upload that fails or is abandoned is dropped with [`Vfs::abort_upload`];
//! one cut short by a restart is dropped by [`Vfs::abort_stale_uploads`] when
//! the workspace next starts. Either way the workspace is as it was.

use stead_sql::{params, Sql};

use crate::error::{Result, VfsError};
use crate::ops::{WriteOptions, Written};
use crate::path::VPath;
use crate::resolve::Resolved;
use crate::{Vfs, CHUNK_SIZE};

/// Identifies one in-flight upload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UploadId(i64);

impl UploadId {
    /// The id as a number, to hand to a client that stages chunks over
    /// several requests (a push) and names them again at the apply.
    pub fn number(self) -> i64 {
        self.0
    }

    /// The id a client handed back.
    pub fn from_number(number: i64) -> UploadId {
        UploadId(number)
    }
}

impl<S: Sql> Vfs<'_, S> {
    /// Starts an upload to `path`, checking now that it could be written
    /// (the check is repeated at commit).
    pub fn begin_upload(&self, path: &VPath, options: WriteOptions) -> Result<UploadId> {
        self.check_writable(path, options)?;
        self.next_upload_id()
    }

    /// A fresh id for staged chunks.
    pub(crate) fn next_upload_id(&self) -> Result<UploadId> {
        let row = self
            .db
            .query_row(
                "UPDATE meta SET value = value + 1 WHERE key = 'uploads' RETURNING value",
                params![],
            )?
            .ok_or_else(|| VfsError::Corrupt("meta key uploads missing".into()))?;
        Ok(UploadId(row.int(0)?))
    }

    /// Whether a write to `path` would succeed as things stand, without writing.
    fn check_writable(&self, path: &VPath, options: WriteOptions) -> Result<()> {
        match self.resolve(path, true)? {
            Resolved::Found { node, .. } if node.is_dir() => Err(VfsError::IsADirectory {
                path: path.to_string(),
            }),
            Resolved::Missing { last: false, .. } if !options.create_parents => {
                Err(VfsError::NotFound {
                    path: path.to_string(),
                })
            }
            _ => Ok(()),
        }
    }

    /// Stores chunk number `idx` of `upload` (every chunk but the last must
    /// hold exactly [`CHUNK_SIZE`] bytes).
    pub fn stage_chunk(&self, upload: UploadId, idx: i64, data: &[u8]) -> Result<()> {
        if data.is_empty() || data.len() > CHUNK_SIZE {
            return Err(VfsError::BadUpload {
                reason: format!("chunk {idx} holds {} bytes", data.len()),
            });
        }
        self.db.transaction(|| {
            let id = self.put_chunk(data)?;
            self.db.execute(
                "INSERT INTO upload_chunks (upload, idx, chunk) VALUES (?, ?, ?)",
                params![upload.0, idx, id],
            )?;
            // Staged content counts: an upload cannot fill the database
            // before its commit is refused.
            self.check_quotas()
        })
    }

    /// Makes the staged chunks of `upload` the content of `path`. `size` is
    /// the byte count the caller sent; it must agree with what was staged,
    /// and the chunks must be numbered from 0 without gaps, all full but the
    /// last, or nothing changes.
    pub fn commit_upload(
        &self,
        upload: UploadId,
        path: &VPath,
        size: u64,
        options: WriteOptions,
    ) -> Result<Written> {
        self.check_size(path, size)?;
        self.change(|rev| {
            self.check_staged(upload, size)?;
            let (real, node, created) = self.prepare_file(path, options, rev)?;
            let old = self.drop_content(node.ino)?;
            self.db.execute(
                "INSERT INTO file_chunks (ino, idx, chunk) \
                 SELECT ?, idx, chunk FROM upload_chunks WHERE upload = ?",
                params![node.ino, upload.0],
            )?;
            self.db.execute(
                "DELETE FROM upload_chunks WHERE upload = ?",
                params![upload.0],
            )?;
            self.collect(&old)?;
            self.finish_file(rev, &real, node.ino, size, created)
        })
    }

    /// Checks the staged chunks of `upload` form a file of `size` bytes.
    fn check_staged(&self, upload: UploadId, size: u64) -> Result<()> {
        let rows = self.db.query(
            "SELECT u.idx, c.size FROM upload_chunks u JOIN chunks c ON c.id = u.chunk \
             WHERE u.upload = ? ORDER BY u.idx",
            params![upload.0],
        )?;
        let mut total = 0u64;
        for (i, row) in rows.iter().enumerate() {
            let (idx, chunk_size) = (row.int(0)?, row.int(1)? as u64);
            let last = i + 1 == rows.len();
            if idx != i as i64 || (!last && chunk_size != CHUNK_SIZE as u64) {
                return Err(VfsError::BadUpload {
                    reason: format!("chunk {idx} is out of place or not full"),
                });
            }
            total += chunk_size;
        }
        if total != size {
            return Err(VfsError::BadUpload {
                reason: format!("{total} bytes staged, {size} declared"),
            });
        }
        Ok(())
    }

    /// Drops `upload` and the chunks only it held.
    pub fn abort_upload(&self, upload: UploadId) -> Result<()> {
        self.drop_uploads(
            "DELETE FROM upload_chunks WHERE upload = ? RETURNING chunk",
            upload.0,
        )
    }

    /// Drops every staged upload: at start-up, none can still be in flight.
    pub fn abort_stale_uploads(&self) -> Result<()> {
        self.drop_uploads(
            "DELETE FROM upload_chunks WHERE upload > ? RETURNING chunk",
            0,
        )
    }

    fn drop_uploads(&self, statement: &str, param: i64) -> Result<()> {
        self.db.transaction(|| {
            let chunks = self
                .db
                .query(statement, params![param])?
                .iter()
                .map(|row| row.int(0))
                .collect::<Result<Vec<_>, _>>()?;
            self.collect(&chunks)
        })
    }
}
