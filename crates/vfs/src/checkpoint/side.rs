//! Reading the workspace at a point in time: now, or as a checkpoint pinned it.
//!
//! Diff and restore compare two trees path by path, and neither should care
//! which of them is live: [`Side`] answers the same three questions of
//! either (what is at this path, what is in this directory, which chunks
//! hold this file). Paths are real paths walked without following symlinks,
//! as the change log records them. A partial checkpoint answers only below
//! its roots ([`Found::Uncovered`] elsewhere).
//!
//! [`Snapshot`] is the public face of the same thing for one checkpoint.

use stead_sql::{params, Sql};

use super::{Checkpoint, CheckpointId};
use crate::error::{Result, VfsError};
use crate::node::{DirEntry, Kind, Node};
use crate::path::VPath;
use crate::Vfs;

/// Columns of `checkpoint_entries` read as a [`Node`] by [`Node::from_row`].
const ENTRY_COLUMNS: &str = "ino, kind, mode, size, mtime, target, rev";

/// Where a tree is read from.
pub(crate) enum Side {
    Live,
    Pinned(Pinned),
}

/// A checkpoint's roots, each with the node it named (`None`: absent).
pub(crate) struct Pinned {
    pub id: i64,
    pub roots: Vec<(VPath, Option<Node>)>,
}

/// What a side holds at a path.
#[derive(Debug)]
pub(crate) enum Found {
    Node(Node),
    Absent,
    /// Outside what a partial checkpoint pinned.
    Uncovered,
}

impl Pinned {
    /// Whether `path` lies at or below one of the roots.
    pub fn covers(&self, path: &VPath) -> bool {
        self.roots.iter().any(|(root, _)| path.starts_with(root))
    }

    /// The roots as text, for errors.
    pub fn describe_roots(&self) -> String {
        let roots: Vec<&str> = self.roots.iter().map(|(root, _)| root.as_str()).collect();
        roots.join(", ")
    }
}

impl Side {
    /// The roots this side answers for (`/` when it answers everywhere).
    pub fn roots(&self) -> Vec<VPath> {
        match self {
            Side::Live => vec![VPath::root()],
            Side::Pinned(pinned) => pinned.roots.iter().map(|(root, _)| root.clone()).collect(),
        }
    }
}

impl<S: Sql> Vfs<'_, S> {
    /// The roots of checkpoint `id`, to read it.
    pub(crate) fn pinned(&self, id: CheckpointId) -> Result<Pinned> {
        let rows = self.db.query(
            "SELECT path, ino, kind, mode, size, mtime, target, rev FROM checkpoint_roots \
             WHERE checkpoint = ? ORDER BY path",
            params![id.0],
        )?;
        let mut roots = Vec::with_capacity(rows.len());
        for row in &rows {
            let path = VPath::parse(row.text(0)?)?;
            let node = match row.opt_int(1)? {
                Some(_) => Some(Node::from_row(row, 1)?),
                None => None,
            };
            roots.push((path, node));
        }
        Ok(Pinned { id: id.0, roots })
    }

    /// What `side` holds at real path `path`.
    pub(crate) fn side_lookup(&self, side: &Side, path: &VPath) -> Result<Found> {
        let pinned = match side {
            Side::Live => {
                return Ok(self.lookup_real(path)?.map_or(Found::Absent, Found::Node));
            }
            Side::Pinned(pinned) => pinned,
        };
        let Some((root, node)) = pinned.roots.iter().find(|(root, _)| path.starts_with(root))
        else {
            return Ok(Found::Uncovered);
        };
        let Some(mut node) = node.clone() else {
            return Ok(Found::Absent);
        };
        let rest = path.strip_prefix(root).unwrap_or_default();
        for name in rest.split('/').filter(|name| !name.is_empty()) {
            if node.kind != Kind::Dir {
                return Ok(Found::Absent);
            }
            let row = self.db.query_row(
                &format!(
                    "SELECT {ENTRY_COLUMNS} FROM checkpoint_entries \
                     WHERE checkpoint = ? AND parent = ? AND name = ?"
                ),
                params![pinned.id, node.ino, name],
            )?;
            match row {
                Some(row) => node = Node::from_row(&row, 0)?,
                None => return Ok(Found::Absent),
            }
        }
        Ok(Found::Node(node))
    }

    /// The entries of directory `dir` (a node `side` returned) in name
    /// order, after `after`, at most `limit`.
    pub(crate) fn side_entries(
        &self,
        side: &Side,
        dir: &Node,
        after: Option<&str>,
        limit: Option<usize>,
    ) -> Result<Vec<DirEntry>> {
        let pinned = match side {
            Side::Live => return self.entries(dir.ino, after, limit),
            Side::Pinned(pinned) => pinned,
        };
        self.db
            .query(
                &format!(
                    "SELECT name, {ENTRY_COLUMNS} FROM checkpoint_entries \
                     WHERE checkpoint = ? AND parent = ? AND name > ? ORDER BY name LIMIT ?"
                ),
                params![
                    pinned.id,
                    dir.ino,
                    after.unwrap_or(""),
                    limit.map_or(-1, |l| l as i64)
                ],
            )?
            .iter()
            .map(DirEntry::from_row)
            .collect()
    }

    /// The chunk ids of file `file` (a node `side` returned), in order.
    pub(crate) fn side_chunks(&self, side: &Side, file: &Node) -> Result<Vec<i64>> {
        let rows = match side {
            Side::Live => self.db.query(
                "SELECT chunk FROM file_chunks WHERE ino = ? ORDER BY idx",
                params![file.ino],
            )?,
            Side::Pinned(pinned) => self.db.query(
                "SELECT chunk FROM checkpoint_chunks WHERE checkpoint = ? AND ino = ? ORDER BY idx",
                params![pinned.id, file.ino],
            )?,
        };
        Ok(rows
            .iter()
            .map(|row| row.int(0))
            .collect::<Result<_, _>>()?)
    }

    /// The bytes of the chunks `ids`, joined.
    pub(crate) fn chunks_content(&self, ids: &[i64]) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        for &id in ids {
            let data = self.chunk_data(id)?;
            if out.is_empty() {
                out = data;
            } else {
                out.extend_from_slice(&data);
            }
        }
        Ok(out)
    }
}

/// One checkpoint, read like a filesystem. Paths are real paths, walked
/// without following symlinks (a symlink is reported, never entered), as
/// the checkpoint recorded them.
pub struct Snapshot<'v, 'db, S: Sql> {
    vfs: &'v Vfs<'db, S>,
    checkpoint: Checkpoint,
    side: Side,
}

impl<S: Sql> std::fmt::Debug for Snapshot<'_, '_, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("checkpoint", &self.checkpoint)
            .finish_non_exhaustive()
    }
}

impl<'db, S: Sql> Vfs<'db, S> {
    /// Opens checkpoint `id` for reading.
    pub fn snapshot(&self, id: CheckpointId) -> Result<Snapshot<'_, 'db, S>> {
        let checkpoint = self.checkpoint(id)?;
        let side = Side::Pinned(self.pinned(id)?);
        Ok(Snapshot {
            vfs: self,
            checkpoint,
            side,
        })
    }
}

impl<S: Sql> Snapshot<'_, '_, S> {
    pub fn checkpoint(&self) -> &Checkpoint {
        &self.checkpoint
    }

    /// The node at `path` as the checkpoint pinned it.
    pub fn stat(&self, path: &VPath) -> Result<Node> {
        match self.vfs.side_lookup(&self.side, path)? {
            Found::Node(node) => Ok(node),
            Found::Absent => Err(VfsError::NotFound {
                path: path.to_string(),
            }),
            Found::Uncovered => Err(self.uncovered(path)),
        }
    }

    fn uncovered(&self, path: &VPath) -> VfsError {
        let Side::Pinned(pinned) = &self.side else {
            unreachable!("a snapshot reads a checkpoint");
        };
        VfsError::NotInCheckpoint {
            checkpoint: pinned.id,
            path: path.to_string(),
            roots: pinned.describe_roots(),
        }
    }

    /// Directory `path` in name order: entries after `after`, at most `limit`.
    pub fn list(&self, path: &VPath, after: Option<&str>, limit: usize) -> Result<Vec<DirEntry>> {
        let dir = self.stat(path)?;
        if dir.kind != Kind::Dir {
            return Err(VfsError::NotADirectory {
                path: path.to_string(),
            });
        }
        self.vfs.side_entries(&self.side, &dir, after, Some(limit))
    }

    /// The file at `path` and its chunk ids in order, to stream it with
    /// [`Vfs::chunk`] (the checkpoint keeps them alive while it exists).
    pub fn file_chunks(&self, path: &VPath) -> Result<(Node, Vec<i64>)> {
        let node = self.stat(path)?;
        match node.kind {
            Kind::File => {
                let chunks = self.vfs.side_chunks(&self.side, &node)?;
                Ok((node, chunks))
            }
            Kind::Dir => Err(VfsError::IsADirectory {
                path: path.to_string(),
            }),
            Kind::Symlink => Err(VfsError::InvalidPath {
                path: path.to_string(),
                reason: "a symbolic link has no content of its own",
            }),
        }
    }

    /// The whole content of the file at `path`.
    pub fn read_file(&self, path: &VPath) -> Result<Vec<u8>> {
        let (_, chunks) = self.file_chunks(path)?;
        self.vfs.chunks_content(&chunks)
    }
}
