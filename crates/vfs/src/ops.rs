//! The filesystem operations: each one transaction, one revision.

use serde::Serialize;
use stead_sql::{params, Sql};

use crate::content::ChunkRef;
use crate::error::{Result, VfsError};
use crate::node::{DirEntry, Kind, Node, NODE_COLUMNS};
use crate::path::{VPath, MAX_PATH_LEN};
use crate::resolve::Resolved;
use crate::{json_ids, Growth, Met, Vfs, CHUNK_SIZE, DIR_MODE, FILE_MODE, SYMLINK_MODE};

/// How a write treats the path it writes to.
#[derive(Debug, Clone, Copy)]
pub struct WriteOptions {
    /// Permission bits for a new file, or to set on an existing one.
    pub mode: Option<u32>,
    /// Create missing parent directories.
    pub create_parents: bool,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            mode: None,
            create_parents: true,
        }
    }
}

/// The outcome of a write, append or upload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Written {
    /// The real path written (symlinks resolved).
    pub path: String,
    /// The file's size afterwards.
    pub size: u64,
    /// Whether the file was created.
    pub created: bool,
    /// The workspace revision of the write.
    pub revision: i64,
}

/// What a change did to a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    Created,
    Modified,
    Deleted,
}

impl ChangeKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Created => "created",
            ChangeKind::Modified => "modified",
            ChangeKind::Deleted => "deleted",
        }
    }

    fn parse(value: &str) -> Result<Self> {
        match value {
            "created" => Ok(ChangeKind::Created),
            "modified" => Ok(ChangeKind::Modified),
            "deleted" => Ok(ChangeKind::Deleted),
            other => Err(VfsError::Corrupt(format!("unknown change kind {other}"))),
        }
    }
}

/// One entry of the change log. A `deleted` or `created` directory stands
/// for its whole subtree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    pub revision: i64,
    pub path: String,
    pub kind: ChangeKind,
}

/// Where a page of the change log ended (see [`Vfs::changes_page`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChangeCursor(i64);

impl ChangeCursor {
    /// Reads a cursor as [`ChangeCursor::to_string`] wrote it.
    pub fn parse(text: &str) -> Result<Self> {
        text.parse::<i64>()
            .ok()
            .filter(|seq| *seq >= 0)
            .map(ChangeCursor)
            .ok_or_else(|| VfsError::InvalidCursor {
                cursor: text.to_string(),
            })
    }
}

impl std::fmt::Display for ChangeCursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A page of the change log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangePage {
    pub changes: Vec<Change>,
    /// Where the next page starts, when there is more.
    pub next: Option<ChangeCursor>,
}

pub(crate) fn mode_bits(mode: u32) -> u32 {
    mode & 0o7777
}

impl<S: Sql> Vfs<'_, S> {
    /// The node at `path`, following a final symlink when `follow`; with its
    /// real path.
    pub fn stat(&self, path: &VPath, follow: bool) -> Result<(VPath, Node)> {
        self.existing(path, follow)
    }

    /// The most a write of `bytes` new bytes can add to the usage: the file
    /// and, with `create_parents`, the directories on its way, which are
    /// at most `max_path_depth` (each is logged as created, where depth is
    /// checked) however many symlinks the way follows.
    fn creating(&self, options: WriteOptions, bytes: u64) -> Growth {
        let nodes = match options.create_parents {
            true => self.limits.max_path_depth as u64 + 1,
            false => 1,
        };
        Growth { bytes, nodes }
    }

    /// The node at `path` (following a final symlink), or `None` when it
    /// is missing but can be created: the directory it would go in exists.
    /// One resolution, where a `stat` of the path and then of its parent
    /// would take two (what opening a file for output asks). A missing
    /// parent is `ENOENT`, a parent that is not a directory `ENOTDIR`.
    pub fn stat_or_creatable(&self, path: &VPath) -> Result<Option<Node>> {
        match self.resolve(path, true)? {
            Resolved::Found { node, .. } => Ok(Some(node)),
            Resolved::Missing { last: true, .. } => Ok(None),
            Resolved::Missing { .. } => Err(VfsError::NotFound {
                path: path.to_string(),
            }),
        }
    }

    /// The node at `path` as a regular file.
    pub(crate) fn file(&self, path: &VPath) -> Result<(VPath, Node)> {
        let (real, node) = self.existing(path, true)?;
        match node.kind {
            Kind::File => Ok((real, node)),
            _ => Err(VfsError::IsADirectory {
                path: path.to_string(),
            }),
        }
    }

    /// The whole content of the file at `path`.
    pub fn read_file(&self, path: &VPath) -> Result<Vec<u8>> {
        let (_, node) = self.file(path)?;
        self.content(node.ino)
    }

    /// Up to `len` bytes of the file at `path` from byte `offset`, with the
    /// file's node.
    pub fn read_range(&self, path: &VPath, offset: u64, len: u64) -> Result<(Node, Vec<u8>)> {
        let (_, node) = self.file(path)?;
        let bytes = self.content_range(node.ino, node.size, offset, len)?;
        Ok((node, bytes))
    }

    pub(crate) fn check_size(&self, path: &VPath, size: u64) -> Result<()> {
        let limit = self.limits.max_file_bytes;
        if size > limit {
            return Err(VfsError::FileTooLarge {
                path: path.to_string(),
                size,
                limit,
            });
        }
        Ok(())
    }

    /// Replaces (or creates) the file at `path` with `data`.
    pub fn write(&self, path: &VPath, data: &[u8], options: WriteOptions) -> Result<Written> {
        self.write_stamped(path, data, options, self.now_ms)
    }

    /// [`Vfs::write`], the file then modified at `mtime_ms` rather than
    /// now: what extracting an archive member needs, as one change (one
    /// revision) instead of a write, a chmod and a touch.
    pub fn write_stamped(
        &self,
        path: &VPath,
        data: &[u8],
        options: WriteOptions,
        mtime_ms: i64,
    ) -> Result<Written> {
        self.check_size(path, data.len() as u64)?;
        let size = data.len() as u64;
        self.change_adding(self.creating(options, size), |rev| {
            let (real, node, created) = self.prepare_sized_file(path, options, rev, size)?;
            if !created {
                self.set_content(node.ino, data)?;
                return self.finish_file_at(rev, &real, node.ino, size, created, mtime_ms);
            }
            self.push_chunks(node.ino, 0, data)?;
            if mtime_ms != self.now_ms {
                return self.finish_file_at(rev, &real, node.ino, size, created, mtime_ms);
            }
            // Made with its size, time and revision: nothing to stamp.
            self.log_written(rev, &real, size, created)
        })
    }

    /// Appends `data` to the file at `path`, creating it if missing. Only the
    /// last partial chunk is rewritten, never the whole file.
    pub fn append(&self, path: &VPath, data: &[u8], options: WriteOptions) -> Result<Written> {
        // The partial last chunk is stored again with the new bytes.
        let growth = self.creating(options, data.len() as u64 + CHUNK_SIZE as u64);
        self.change_adding(growth, |rev| {
            let (real, node, created) = self.prepare_file(path, options, rev)?;
            let size = node.size + data.len() as u64;
            self.check_size(path, size)?;
            self.append_content(node.ino, node.size, data)?;
            self.finish_file(rev, &real, node.ino, size, created)
        })
    }

    /// Finds or creates the regular file at `path` for writing. Follows a
    /// final symlink, so writing through a link writes its target.
    pub(crate) fn prepare_file(
        &self,
        path: &VPath,
        options: WriteOptions,
        rev: i64,
    ) -> Result<(VPath, Node, bool)> {
        self.prepare_sized_file(path, options, rev, 0)
    }

    /// [`Vfs::prepare_file`], a new file made with size `size` (what its
    /// content will be), so a whole write need not stamp it again.
    fn prepare_sized_file(
        &self,
        path: &VPath,
        options: WriteOptions,
        rev: i64,
        size: u64,
    ) -> Result<(VPath, Node, bool)> {
        let mut resolved = self.resolve(path, true)?;
        if let Resolved::Missing { last: false, .. } = resolved {
            // Parents are missing: create them only now, so the common case
            // (parent exists) walks the path once.
            if let (true, Some(parent)) = (options.create_parents, path.parent()) {
                self.ensure_dir(&parent, rev)?;
                resolved = self.resolve(path, true)?;
            }
        }
        match resolved {
            Resolved::Found {
                path: real, node, ..
            } => {
                if node.kind == Kind::Dir {
                    return Err(VfsError::IsADirectory {
                        path: path.to_string(),
                    });
                }
                if let Some(mode) = options.mode {
                    self.db.execute(
                        "UPDATE nodes SET mode = ? WHERE ino = ?",
                        params![mode_bits(mode), node.ino],
                    )?;
                }
                Ok((real, node, false))
            }
            Resolved::Missing {
                parent_path,
                parent,
                name,
                last: true,
            } => {
                let node = self.insert_node(
                    parent,
                    &name,
                    (Kind::File, options.mode.map_or(FILE_MODE, mode_bits)),
                    None,
                    size,
                    rev,
                )?;
                Ok((parent_path.join(&name), node, true))
            }
            Resolved::Missing { .. } => Err(VfsError::NotFound {
                path: path.to_string(),
            }),
        }
    }

    /// Stamps a written file and logs the write.
    pub(crate) fn finish_file(
        &self,
        rev: i64,
        real: &VPath,
        ino: i64,
        size: u64,
        created: bool,
    ) -> Result<Written> {
        self.finish_file_at(rev, real, ino, size, created, self.now_ms)
    }

    /// [`Vfs::finish_file`] with the modification time `mtime_ms`.
    fn finish_file_at(
        &self,
        rev: i64,
        real: &VPath,
        ino: i64,
        size: u64,
        created: bool,
        mtime_ms: i64,
    ) -> Result<Written> {
        self.db.execute(
            "UPDATE nodes SET size = ?, mtime = ?, rev = ? WHERE ino = ?",
            params![size as i64, mtime_ms, rev, ino],
        )?;
        self.log_written(rev, real, size, created)
    }

    /// Logs a write of `size` bytes to `real`.
    fn log_written(&self, rev: i64, real: &VPath, size: u64, created: bool) -> Result<Written> {
        let kind = if created {
            ChangeKind::Created
        } else {
            ChangeKind::Modified
        };
        self.log_change(rev, real, kind)?;
        Ok(Written {
            path: real.to_string(),
            size,
            created,
            revision: rev,
        })
    }

    /// Inserts a node named `name` in directory `parent`.
    pub(crate) fn create_node(
        &self,
        parent: i64,
        name: &str,
        kind: Kind,
        mode: u32,
        target: Option<&str>,
        rev: i64,
    ) -> Result<Node> {
        let size = target.map_or(0, str::len) as u64;
        self.insert_node(parent, name, (kind, mode), target, size, rev)
    }

    /// [`Vfs::create_node`] with size `size`.
    ///
    /// The parent directory is stamped (its mtime and revision, as
    /// [`Vfs::touch_dir`] does) by the same statement that inserts the
    /// node: its row goes in again after the new one and, its inode being
    /// taken, becomes an update of those two columns. One statement fewer
    /// per creation, and a parent that is not there inserts nothing (its
    /// row is read from `nodes` itself).
    fn insert_node(
        &self,
        parent: i64,
        name: &str,
        (kind, mode): (Kind, u32),
        target: Option<&str>,
        size: u64,
        rev: i64,
    ) -> Result<Node> {
        let rows = self.db.query(
            "INSERT INTO nodes (ino, kind, mode, size, mtime, target, rev) \
             SELECT NULL, ?1, ?2, ?3, ?4, ?5, ?6 \
             UNION ALL SELECT ino, kind, mode, size, ?4, target, ?6 FROM nodes WHERE ino = ?7 \
             ON CONFLICT (ino) DO UPDATE SET mtime = excluded.mtime, rev = excluded.rev \
             RETURNING ino",
            params![
                kind.to_db(),
                mode,
                size as i64,
                self.now_ms,
                target,
                rev,
                parent
            ],
        )?;
        let inos = rows
            .iter()
            .map(|row| row.int(0))
            .collect::<Result<Vec<i64>, _>>()?;
        let ino = match inos.as_slice() {
            [a, b] if *b == parent => *a,
            [a, b] if *a == parent => *b,
            _ => {
                return Err(VfsError::Corrupt(format!(
                    "creating {name} in directory inode {parent}: the insert returned {inos:?}"
                )))
            }
        };
        self.db.execute(
            "INSERT INTO dirents (parent, name, ino) VALUES (?, ?, ?)",
            params![parent, name, ino],
        )?;
        let met = match kind {
            Kind::Dir => Met::Dir(ino),
            Kind::File | Kind::Symlink => Met::Other,
        };
        self.met_entry(parent, name, met);
        Ok(Node {
            ino,
            kind,
            mode,
            size,
            mtime: self.now_ms,
            target: target.map(str::to_string),
            rev,
        })
    }

    /// A directory's entries changed: stamp it.
    fn touch_dir(&self, ino: i64, rev: i64) -> Result<()> {
        self.db.execute(
            "UPDATE nodes SET mtime = ?, rev = ? WHERE ino = ?",
            params![self.now_ms, rev, ino],
        )?;
        Ok(())
    }

    /// Makes sure `path` is a directory, creating it and its parents.
    pub(crate) fn ensure_dir(&self, path: &VPath, rev: i64) -> Result<(VPath, Node)> {
        loop {
            match self.resolve(path, true)? {
                Resolved::Found {
                    path: real, node, ..
                } if node.kind == Kind::Dir => return Ok((real, node)),
                Resolved::Found { path: real, .. } => {
                    return Err(VfsError::NotADirectory {
                        path: real.to_string(),
                    })
                }
                Resolved::Missing {
                    parent_path,
                    parent,
                    name,
                    ..
                } => {
                    self.create_node(parent, &name, Kind::Dir, DIR_MODE, None, rev)?;
                    self.log_change(rev, &parent_path.join(&name), ChangeKind::Created)?;
                }
            }
        }
    }

    /// Creates the directory `path`; with `parents`, also its missing parents,
    /// and an existing directory is not an error.
    pub fn mkdir(&self, path: &VPath, parents: bool, mode: Option<u32>) -> Result<i64> {
        let growth = self.creating(
            WriteOptions {
                mode,
                create_parents: parents,
            },
            0,
        );
        self.change_adding(growth, |rev| {
            if parents {
                let (real, node) = self.ensure_dir(path, rev)?;
                if let Some(mode) = mode {
                    self.set_mode(&real, &node, mode_bits(mode), rev)?;
                }
                return Ok(rev);
            }
            let mode = mode.map_or(DIR_MODE, mode_bits);
            self.create_new(path, Kind::Dir, mode, None, rev)?;
            Ok(rev)
        })
    }

    /// Creates a directory or symlink at `path`, which must not exist (a
    /// final symlink is not followed) and whose parent must.
    fn create_new(
        &self,
        path: &VPath,
        kind: Kind,
        mode: u32,
        target: Option<&str>,
        rev: i64,
    ) -> Result<()> {
        match self.resolve(path, false)? {
            Resolved::Found { .. } => Err(VfsError::AlreadyExists {
                path: path.to_string(),
            }),
            Resolved::Missing {
                parent_path,
                parent,
                name,
                last: true,
            } => {
                self.create_node(parent, &name, kind, mode, target, rev)?;
                self.log_change(rev, &parent_path.join(&name), ChangeKind::Created)
            }
            Resolved::Missing { .. } => Err(VfsError::NotFound {
                path: path.to_string(),
            }),
        }
    }

    /// Creates a symlink at `path` pointing to `target` (stored as written).
    pub fn symlink(&self, target: &str, path: &VPath) -> Result<i64> {
        if target.is_empty() || target.contains('\0') || target.len() > MAX_PATH_LEN {
            return Err(VfsError::InvalidPath {
                path: target.to_string(),
                reason: "symlink target must be 1-4096 bytes without NUL",
            });
        }
        let growth = Growth { bytes: 0, nodes: 1 };
        self.change_adding(growth, |rev| {
            self.create_new(path, Kind::Symlink, SYMLINK_MODE, Some(target), rev)?;
            Ok(rev)
        })
    }

    /// The target of the symlink at `path`.
    pub fn readlink(&self, path: &VPath) -> Result<String> {
        let (_, node) = self.existing(path, false)?;
        match node.target {
            Some(target) if node.kind == Kind::Symlink => Ok(target),
            _ => Err(VfsError::NotASymlink {
                path: path.to_string(),
            }),
        }
    }

    /// Sets the permission bits of `path` (following symlinks).
    pub fn chmod(&self, path: &VPath, mode: u32) -> Result<i64> {
        self.change(|rev| {
            let (real, node) = self.existing(path, true)?;
            self.set_mode(&real, &node, mode_bits(mode), rev)?;
            Ok(rev)
        })
    }

    pub(crate) fn set_mode(&self, real: &VPath, node: &Node, mode: u32, rev: i64) -> Result<()> {
        self.db.execute(
            "UPDATE nodes SET mode = ?, rev = ? WHERE ino = ?",
            params![mode, rev, node.ino],
        )?;
        self.log_change(rev, real, ChangeKind::Modified)
    }

    /// Removes `path`. A directory must be empty unless `recursive`. A final
    /// symlink is removed itself, never its target.
    pub fn remove(&self, path: &VPath, recursive: bool) -> Result<i64> {
        if path.is_root() {
            return Err(VfsError::RootBusy {
                operation: "remove",
            });
        }
        self.change_freeing(|rev| {
            let (real, node, parent) = self.existing_in(path, false)?;
            if node.kind == Kind::Dir && !recursive && self.has_children(node.ino)? {
                return Err(VfsError::NotEmpty {
                    path: path.to_string(),
                });
            }
            self.unlink(&real, &node, parent, rev)?;
            self.log_change(rev, &real, ChangeKind::Deleted)?;
            Ok(rev)
        })
    }

    fn has_children(&self, ino: i64) -> Result<bool> {
        Ok(self
            .db
            .query_row(
                "SELECT 1 FROM dirents WHERE parent = ? LIMIT 1",
                params![ino],
            )?
            .is_some())
    }

    /// Deletes the entry at real path `real` (node `node`, in directory
    /// `parent`) and everything below it, then collects the chunks nothing
    /// references any more.
    pub(crate) fn unlink(&self, real: &VPath, node: &Node, parent: i64, rev: i64) -> Result<()> {
        let chunks = if node.kind == Kind::Dir {
            let inos = self.subtree(node.ino)?;
            let set = json_ids(&inos);
            let chunks = self.drop_content_of(&inos)?;
            self.db.execute(
                "DELETE FROM dirents WHERE parent IN (SELECT value FROM json_each(?))",
                params![set.as_str()],
            )?;
            self.db.execute(
                "DELETE FROM nodes WHERE ino IN (SELECT value FROM json_each(?))",
                params![set.as_str()],
            )?;
            chunks
        } else {
            let chunks = self.drop_content(node.ino)?;
            self.db
                .execute("DELETE FROM nodes WHERE ino = ?", params![node.ino])?;
            chunks
        };
        self.db.execute(
            "DELETE FROM dirents WHERE parent = ? AND name = ?",
            params![parent, real.name().unwrap_or_default()],
        )?;
        self.touch_dir(parent, rev)?;
        self.collect(&chunks)
    }

    /// Every inode in the subtree rooted at directory `ino`, itself included.
    fn subtree(&self, ino: i64) -> Result<Vec<i64>> {
        self.db
            .query(
                "WITH RECURSIVE sub(ino) AS (SELECT ? UNION ALL \
                 SELECT d.ino FROM dirents d JOIN sub ON d.parent = sub.ino) SELECT ino FROM sub",
                params![ino],
            )?
            .iter()
            .map(|row| Ok(row.int(0)?))
            .collect()
    }

    /// Where a move or copy lands: the existing node to replace, if any, and
    /// the destination's parent directory and name.
    fn destination(&self, to: &VPath) -> Result<(VPath, i64, String, Option<Node>)> {
        match self.resolve(to, false)? {
            Resolved::Found {
                path: real,
                node,
                parent,
            } => {
                let parent_path = real.parent().ok_or(VfsError::RootBusy {
                    operation: "replace",
                })?;
                let name = real.name().unwrap_or_default().to_string();
                Ok((parent_path, parent, name, Some(node)))
            }
            Resolved::Missing {
                parent_path,
                parent,
                name,
                last: true,
            } => Ok((parent_path, parent, name, None)),
            Resolved::Missing { .. } => Err(VfsError::NotFound {
                path: to.to_string(),
            }),
        }
    }

    /// Checks that `source` may replace the existing `target` (POSIX rename rules).
    fn check_replace(&self, source: &Node, target: &Node, to: &VPath) -> Result<()> {
        match (source.kind == Kind::Dir, target.kind == Kind::Dir) {
            (true, true) if self.has_children(target.ino)? => Err(VfsError::NotEmpty {
                path: to.to_string(),
            }),
            (true, false) => Err(VfsError::NotADirectory {
                path: to.to_string(),
            }),
            (false, true) => Err(VfsError::IsADirectory {
                path: to.to_string(),
            }),
            _ => Ok(()),
        }
    }

    /// Moves `from` to `to` atomically, whole subtrees included, replacing a
    /// file (or an empty directory) at `to` as POSIX `rename` does.
    pub fn rename(&self, from: &VPath, to: &VPath) -> Result<i64> {
        if from.is_root() || to.is_root() {
            return Err(VfsError::RootBusy { operation: "move" });
        }
        self.change(|rev| {
            let (src_path, src, src_parent) = self.existing_in(from, false)?;
            let (dst_parent_path, dst_parent, dst_name, existing) = self.destination(to)?;
            let dst_path = dst_parent_path.join(&dst_name);
            if dst_path == src_path {
                return Ok(rev);
            }
            if src.kind == Kind::Dir && dst_path.starts_with(&src_path) {
                return Err(VfsError::IntoItself {
                    from: from.to_string(),
                    to: to.to_string(),
                });
            }
            if let Some(existing) = existing {
                self.check_replace(&src, &existing, to)?;
                self.unlink(&dst_path, &existing, dst_parent, rev)?;
            }
            self.db.execute(
                "UPDATE dirents SET parent = ?, name = ? WHERE parent = ? AND name = ?",
                params![
                    dst_parent,
                    dst_name.as_str(),
                    src_parent,
                    src_path.name().unwrap_or_default()
                ],
            )?;
            self.touch_dir(src_parent, rev)?;
            self.touch_dir(dst_parent, rev)?;
            self.log_change(rev, &src_path, ChangeKind::Deleted)?;
            self.log_change(rev, &dst_path, ChangeKind::Created)?;
            Ok(rev)
        })
    }

    /// Copies `from` to `to`. Content is shared by chunk, so no bytes are
    /// copied. A directory needs `recursive`; symlinks inside it are copied as
    /// links, while a symlink named by `from` itself is followed. An existing
    /// file at `to` is replaced; an existing directory is an error.
    pub fn copy(&self, from: &VPath, to: &VPath, recursive: bool) -> Result<i64> {
        self.change(|rev| {
            let (src_path, src) = self.existing(from, true)?;
            if src.kind == Kind::Dir && !recursive {
                return Err(VfsError::IsADirectory {
                    path: from.to_string(),
                });
            }
            let (dst_parent_path, dst_parent, dst_name, existing) = self.destination(to)?;
            let dst_path = dst_parent_path.join(&dst_name);
            if src.kind == Kind::Dir && dst_path.starts_with(&src_path) {
                return Err(VfsError::IntoItself {
                    from: from.to_string(),
                    to: to.to_string(),
                });
            }
            match existing {
                Some(existing) if existing.kind == Kind::Dir || src.kind == Kind::Dir => {
                    return Err(VfsError::AlreadyExists {
                        path: to.to_string(),
                    })
                }
                Some(existing) if existing.ino == src.ino => return Ok(rev),
                Some(existing) => self.unlink(&dst_path, &existing, dst_parent, rev)?,
                None => {}
            }
            self.copy_node(&src, dst_parent, &dst_name, rev)?;
            self.log_change(rev, &dst_path, ChangeKind::Created)?;
            Ok(rev)
        })
    }

    fn copy_node(&self, src: &Node, parent: i64, name: &str, rev: i64) -> Result<()> {
        let copy =
            self.create_node(parent, name, src.kind, src.mode, src.target.as_deref(), rev)?;
        match src.kind {
            Kind::File => {
                self.share_content(src.ino, copy.ino)?;
                self.db.execute(
                    "UPDATE nodes SET size = ? WHERE ino = ?",
                    params![src.size as i64, copy.ino],
                )?;
            }
            Kind::Dir => {
                for entry in self.entries(src.ino, None, None)? {
                    self.copy_node(&entry.node, copy.ino, &entry.name, rev)?;
                }
            }
            Kind::Symlink => {}
        }
        Ok(())
    }

    /// The entries of directory `ino` in name order, after `after`, at most `limit`.
    pub(crate) fn entries(
        &self,
        ino: i64,
        after: Option<&str>,
        limit: Option<usize>,
    ) -> Result<Vec<DirEntry>> {
        let limit = limit.map_or(-1, |l| l as i64);
        self.db
            .query(
                &format!(
                    "SELECT d.name, {NODE_COLUMNS} FROM dirents d JOIN nodes n ON n.ino = d.ino \
                     WHERE d.parent = ? AND d.name > ? ORDER BY d.name LIMIT ?"
                ),
                params![ino, after.unwrap_or(""), limit],
            )?
            .iter()
            .map(DirEntry::from_row)
            .collect()
    }

    /// Lists directory `path` in name order: entries after `after`, at most `limit`.
    pub fn list(&self, path: &VPath, after: Option<&str>, limit: usize) -> Result<Vec<DirEntry>> {
        let (_, dir) = self.existing_dir(path)?;
        self.entries(dir.ino, after, Some(limit))
    }

    /// A page of change log entries after revision `since`, oldest first:
    /// at most `limit`, starting after `after` (a cursor from the previous
    /// page). One revision may log many paths (a sync applies a whole
    /// command's changes at one revision), so a page can end inside a
    /// revision; the cursor resumes exactly there. `None` when entries
    /// after `since` have been pruned.
    pub fn changes_page(
        &self,
        since: i64,
        after: Option<ChangeCursor>,
        limit: usize,
    ) -> Result<Option<ChangePage>> {
        if since < self.meta("changes_pruned")? {
            return Ok(None);
        }
        let after = after.map_or(0, |cursor| cursor.0);
        let mut rows = self.db.query(
            "SELECT seq, rev, path, kind FROM changes WHERE rev > ? AND seq > ? \
             ORDER BY seq LIMIT ?",
            params![
                since,
                after,
                limit.saturating_add(1).min(i64::MAX as usize) as i64
            ],
        )?;
        let more = rows.len() > limit;
        rows.truncate(limit);
        let next = match rows.last() {
            Some(row) if more => Some(ChangeCursor(row.int(0)?)),
            _ => None,
        };
        let changes = rows
            .iter()
            .map(|row| {
                Ok(Change {
                    revision: row.int(1)?,
                    path: row.text(2)?.to_string(),
                    kind: ChangeKind::parse(row.text(3)?)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Some(ChangePage { changes, next }))
    }

    /// Change log entries after revision `since`, oldest first, at most `limit`.
    /// Returns `None` when entries after `since` have been pruned.
    pub fn changes_since(&self, since: i64, limit: usize) -> Result<Option<Vec<Change>>> {
        if since < self.meta("changes_pruned")? {
            return Ok(None);
        }
        let rows = self.db.query(
            "SELECT rev, path, kind FROM changes WHERE rev > ? ORDER BY seq LIMIT ?",
            params![since, limit as i64],
        )?;
        rows.iter()
            .map(|row| {
                Ok(Change {
                    revision: row.int(0)?,
                    path: row.text(1)?.to_string(),
                    kind: ChangeKind::parse(row.text(2)?)?,
                })
            })
            .collect::<Result<Vec<_>>>()
            .map(Some)
    }
}

/// The outcome of an edit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EditOutcome {
    pub path: String,
    /// Ranges replaced.
    pub replacements: usize,
    /// Unified diff of the change.
    pub diff: String,
    /// Size afterwards.
    pub size: u64,
    /// Edits applied by a fuzzy match (see [`crate::edit`]): which rule
    /// found each and the exact text it replaced. Absent when all matched
    /// exactly.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fuzzy: Vec<crate::edit::FuzzyMatch>,
    /// Revision of the change; absent for a dry run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<i64>,
}

/// What a workspace holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Usage {
    pub revision: i64,
    pub files: u64,
    pub directories: u64,
    pub symlinks: u64,
    /// Sum of file sizes.
    pub bytes: u64,
    /// Bytes of distinct chunk content actually stored (after sharing),
    /// what checkpoints and staged uploads hold included: what counts
    /// against `max_stored_bytes`.
    pub stored_bytes: u64,
    /// The part of `stored_bytes` that only checkpoints still reference:
    /// what deleting checkpoints could free.
    pub checkpoint_only_bytes: u64,
    /// Checkpoints kept, manual and automatic.
    pub checkpoints: u64,
}

impl<S: Sql> Vfs<'_, S> {
    /// Applies `edits` to the text file at `path` atomically against its
    /// original text (see [`crate::edit`]). Mode and inode are kept. With
    /// `dry_run`, only reports what would change.
    pub fn edit(
        &self,
        path: &VPath,
        edits: &[crate::edit::Replacement],
        dry_run: bool,
    ) -> Result<EditOutcome> {
        let plan = || -> Result<(VPath, Node, crate::edit::Edited)> {
            let (real, node) = self.file(path)?;
            let bytes = self.content(node.ino)?;
            let edit_error = |source| VfsError::Edit {
                path: path.to_string(),
                source,
            };
            let text = crate::edit::as_text(&bytes).map_err(edit_error)?;
            let edited = crate::edit::apply(text, edits, real.as_str()).map_err(edit_error)?;
            self.check_size(path, edited.text.len() as u64)?;
            Ok((real, node, edited))
        };
        let outcome = |real: VPath, edited: crate::edit::Edited, revision| EditOutcome {
            path: real.to_string(),
            replacements: edited.replacements,
            size: edited.text.len() as u64,
            diff: edited.diff,
            fuzzy: edited.fuzzy,
            revision,
        };
        if dry_run {
            let (real, _, edited) = plan()?;
            return Ok(outcome(real, edited, None));
        }
        self.change(|rev| {
            let (real, node, edited) = plan()?;
            self.set_content(node.ino, edited.text.as_bytes())?;
            self.finish_file(rev, &real, node.ino, edited.text.len() as u64, false)?;
            Ok(outcome(real, edited, Some(rev)))
        })
    }

    /// Counts what the workspace holds.
    pub fn usage(&self) -> Result<Usage> {
        let row = self
            .db
            .query_row(
                "SELECT COALESCE(SUM(kind = 1), 0), COALESCE(SUM(kind = 2), 0), COALESCE(SUM(kind = 3), 0), \
                 COALESCE(SUM(CASE WHEN kind = 1 THEN size ELSE 0 END), 0) FROM nodes",
                params![],
            )?
            .unwrap_or_default();
        let stored = self
            .db
            .query_row(
                "SELECT COALESCE(SUM(size), 0), COALESCE(SUM(CASE WHEN \
                 EXISTS (SELECT 1 FROM checkpoint_chunks k WHERE k.chunk = c.id) \
                 AND NOT EXISTS (SELECT 1 FROM file_chunks f WHERE f.chunk = c.id) \
                 AND NOT EXISTS (SELECT 1 FROM upload_chunks u WHERE u.chunk = c.id) \
                 THEN size END), 0), (SELECT COUNT(*) FROM checkpoints) FROM chunks c",
                params![],
            )?
            .unwrap_or_default();
        Ok(Usage {
            revision: self.revision()?,
            files: row.int(0)? as u64,
            // The root is not counted.
            directories: (row.int(1)? as u64).saturating_sub(1),
            symlinks: row.int(2)? as u64,
            bytes: row.int(3)? as u64,
            stored_bytes: stored.int(0)? as u64,
            checkpoint_only_bytes: stored.int(1)? as u64,
            checkpoints: stored.int(2)? as u64,
        })
    }

    /// The node of the file at `path` and its chunk ids in order, to stream
    /// it out with [`Vfs::chunk`].
    pub fn file_chunks(&self, path: &VPath) -> Result<(Node, Vec<ChunkRef>)> {
        let (_, node) = self.file(path)?;
        let chunks = self.chunks_of(node.ino)?;
        Ok((node, chunks))
    }

    /// The bytes of chunk `id`, or `NotFound` once it has been collected
    /// (its file was rewritten since the ids were read).
    pub fn chunk(&self, id: i64, path: &VPath) -> Result<Vec<u8>> {
        let mut row = self
            .db
            .query_row("SELECT data, size FROM chunks WHERE id = ?", params![id])?
            .ok_or_else(|| VfsError::NotFound {
                path: path.to_string(),
            })?;
        crate::content::inline_bytes(&mut row, 0, 1)?
            .ok_or_else(|| VfsError::Tiered { chunks: vec![id] })
    }
}

impl<S: Sql> Vfs<'_, S> {
    /// Sets the modification time of `path` (following symlinks), creating
    /// an empty file when it is missing, as `touch` does. `mtime_ms` defaults
    /// to now.
    pub fn touch(&self, path: &VPath, mtime_ms: Option<i64>) -> Result<i64> {
        let growth = Growth { bytes: 0, nodes: 1 };
        self.change_adding(growth, |rev| {
            let mtime = mtime_ms.unwrap_or(self.now_ms);
            let (real, node, created) = match self.resolve(path, true)? {
                Resolved::Found {
                    path: real, node, ..
                } => (real, node, false),
                Resolved::Missing { .. } => {
                    let options = WriteOptions {
                        mode: None,
                        create_parents: false,
                    };
                    let (real, node, _) = self.prepare_file(path, options, rev)?;
                    (real, node, true)
                }
            };
            self.db.execute(
                "UPDATE nodes SET mtime = ?, rev = ? WHERE ino = ?",
                params![mtime, rev, node.ino],
            )?;
            let kind = if created {
                ChangeKind::Created
            } else {
                ChangeKind::Modified
            };
            self.log_change(rev, &real, kind)?;
            Ok(rev)
        })
    }
}
