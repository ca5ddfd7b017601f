//! Putting a checkpoint back: all of it, or chosen paths; and undo.
//!
//! A restore is a diff applied backwards. The paths that differ between the
//! workspace and the checkpoint are found the way [`Vfs::diff`] finds them
//! (from the change log since the checkpoint when it reaches back, so the
//! cost follows what changed since), and each is made to match the
//! checkpoint in one transaction: all or nothing, quotas checked at the end,
//! the change log told of every path it touched. Content comes back by chunk
//! reference, so no bytes are copied. Restored files and directories get
//! the checkpoint's mode and content but a fresh mtime, as `git checkout`
//! does: an older mtime would hide the change from build tools that compare
//! times.
//!
//! Restore paths are real paths (symlinks are not followed), as the
//! checkpoint and the diff name them. A path the checkpoint did not cover
//! is `NotInCheckpoint`; one that neither the checkpoint nor the workspace
//! holds is `NotFound`. A restore root whose parent directories are gone
//! gets them back (with the checkpoint's modes where it has them); one whose
//! parent is now a file or symlink is `NotADirectory`: restore that first.
//!
//! The caller takes an automatic checkpoint ([`super::Operation::Restore`])
//! first, so a restore can itself be undone.
//!
//! Undo walks back through checkpoints, newest first: it restores the
//! newest one not yet undone whose restore changes something, and marks it
//! and every newer checkpoint undone, so the next undo goes further back
//! (linear undo: undone steps are not redone by a second undo; restoring
//! the checkpoint taken before the undo does that). Changes made with no
//! checkpoint before them are undone together with the operation before.

use std::collections::{HashMap, HashSet};

use serde::Serialize;
use stead_sql::{params, Sql};

use super::diff::{outermost, DiffEntry, Endpoint, PathChange, Point, PointInfo, Raw};
use super::side::{Found, Side};
use super::{Checkpoint, CheckpointId};
use crate::error::{Result, VfsError};
use crate::node::{Kind, Node};
use crate::ops::ChangeKind;
use crate::path::VPath;
use crate::resolve::ROOT_INO;
use crate::{Vfs, DIR_MODE};

/// What a restore put back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Restored {
    pub checkpoint: CheckpointId,
    /// The revision of the restore (the current one when nothing differed).
    pub revision: i64,
    /// Each path it changed, as a diff from the workspace before the restore
    /// to the checkpoint: `added` was put back, `deleted` was removed.
    pub changes: Vec<DiffEntry>,
}

/// What an undo took back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Undone {
    /// The checkpoint restored (its `operation` is what was undone).
    pub checkpoint: Checkpoint,
    pub restored: Restored,
}

/// Undo candidates read per statement.
const UNDO_BATCH: i64 = 16;

impl<S: Sql> Vfs<'_, S> {
    /// Makes the workspace match checkpoint `id`, wholly (`None`) or at
    /// `paths` (real paths, each with its subtree; an empty list restores
    /// nothing), in one transaction.
    pub fn restore(&self, id: CheckpointId, paths: Option<&[VPath]>) -> Result<Restored> {
        let changes = self.change(|rev| self.restore_at(id, paths, rev))?;
        Ok(Restored {
            checkpoint: id,
            revision: self.revision()?,
            changes,
        })
    }

    fn restore_at(
        &self,
        id: CheckpointId,
        paths: Option<&[VPath]>,
        rev: i64,
    ) -> Result<Vec<DiffEntry>> {
        let target = self.endpoint(Point::Checkpoint(id))?;
        let Side::Pinned(pinned) = &target.side else {
            return Err(VfsError::Corrupt("a checkpoint read as live".into()));
        };
        // The workspace as it is before this restore's revision.
        let live = Endpoint {
            side: Side::Live,
            info: PointInfo {
                checkpoint: None,
                revision: rev - 1,
            },
        };
        let roots = match paths {
            None => target.side.roots(),
            Some(paths) => {
                for path in paths {
                    if !pinned.covers(path) {
                        return Err(VfsError::NotInCheckpoint {
                            checkpoint: id.0,
                            path: path.to_string(),
                            roots: pinned.describe_roots(),
                        });
                    }
                    let in_checkpoint =
                        matches!(self.side_lookup(&target.side, path)?, Found::Node(_));
                    if !in_checkpoint && self.lookup_real(path)?.is_none() {
                        return Err(VfsError::NotFound {
                            path: path.to_string(),
                        });
                    }
                }
                outermost(paths.to_vec())
            }
        };
        let (raws, _) = self.compare(&live, &target, &roots, false)?;
        let report = self.pair_moves(&live.side, &target.side, raws.clone())?;
        let mut apply = Apply {
            checkpoint: id,
            target: &target.side,
            rev,
            removed: HashSet::new(),
            created: HashSet::new(),
            dirs: HashMap::new(),
        };
        for raw in &raws {
            self.put_back(&mut apply, raw)?;
        }
        Ok(report
            .into_iter()
            .map(|(raw, from)| super::diff::entry(raw, from, None))
            .collect())
    }

    /// Makes one differing path match the checkpoint. Paths come parents
    /// first (sorted), so a directory is there before its entries.
    fn put_back(&self, apply: &mut Apply<'_>, raw: &Raw) -> Result<()> {
        let path = &raw.path;
        match (&raw.old, &raw.new) {
            (None, None) => Ok(()),
            (Some(old), None) => {
                if !apply.below_removed(path) {
                    self.remove_real(path, old, apply.rev)?;
                    apply.removed.insert(path.clone());
                }
                Ok(())
            }
            (None, Some(new)) => self.recreate(apply, path, new),
            (Some(old), Some(new)) if old.kind != new.kind => {
                if !apply.below_removed(path) {
                    self.remove_real(path, old, apply.rev)?;
                }
                apply.removed.insert(path.clone());
                self.recreate(apply, path, new)
            }
            (Some(old), Some(new)) => self.revert(apply, path, old, new, raw.change),
        }
    }

    /// Changes node `old` in place to match `new`, of the same kind.
    fn revert(
        &self,
        apply: &Apply<'_>,
        path: &VPath,
        old: &Node,
        new: &Node,
        change: PathChange,
    ) -> Result<()> {
        let rev = apply.rev;
        match (new.kind, change) {
            (Kind::File, PathChange::Modified) => {
                self.check_size(path, new.size)?;
                let dropped = self.drop_content(old.ino)?;
                self.copy_pinned_chunks(apply.checkpoint, new.ino, old.ino)?;
                self.collect(&dropped)?;
                self.db.execute(
                    "UPDATE nodes SET mode = ?, size = ?, mtime = ?, rev = ? WHERE ino = ?",
                    params![new.mode, new.size as i64, self.now_ms, rev, old.ino],
                )?;
            }
            (Kind::Symlink, _) => {
                self.db.execute(
                    "UPDATE nodes SET target = ?, size = ?, mtime = ?, rev = ? WHERE ino = ?",
                    params![
                        new.target.as_deref(),
                        new.size as i64,
                        self.now_ms,
                        rev,
                        old.ino
                    ],
                )?;
            }
            (Kind::File | Kind::Dir, _) => {
                self.db.execute(
                    "UPDATE nodes SET mode = ?, rev = ? WHERE ino = ?",
                    params![new.mode, rev, old.ino],
                )?;
            }
        }
        self.log_change(rev, path, ChangeKind::Modified)
    }

    /// Creates `path` (absent now) as the checkpoint's node `new`.
    fn recreate(&self, apply: &mut Apply<'_>, path: &VPath, new: &Node) -> Result<()> {
        let depth = path.components().count();
        if depth > self.limits.max_path_depth {
            return Err(VfsError::TooDeep {
                path: path.to_string(),
                depth,
                limit: self.limits.max_path_depth,
            });
        }
        if new.kind == Kind::File {
            self.check_size(path, new.size)?;
        }
        let parent_path = path.parent().unwrap_or_else(VPath::root);
        let parent = self.restore_parent(apply, &parent_path)?;
        let name = path.name().unwrap_or_default();
        let node = self.create_node(
            parent,
            name,
            new.kind,
            new.mode,
            new.target.as_deref(),
            apply.rev,
        )?;
        match new.kind {
            Kind::File => {
                self.copy_pinned_chunks(apply.checkpoint, new.ino, node.ino)?;
                self.db.execute(
                    "UPDATE nodes SET size = ? WHERE ino = ?",
                    params![new.size as i64, node.ino],
                )?;
            }
            Kind::Dir => {
                apply.dirs.insert(path.clone(), node.ino);
            }
            Kind::Symlink => {}
        }
        // A created directory stands for its subtree in the change log.
        if !apply.created.contains(&parent_path) {
            self.log_change(apply.rev, path, ChangeKind::Created)?;
        }
        if new.kind == Kind::Dir {
            apply.created.insert(path.clone());
        }
        Ok(())
    }

    /// The inode of live directory `path`, creating it and its missing
    /// parents (with the checkpoint's modes where it has them).
    fn restore_parent(&self, apply: &mut Apply<'_>, path: &VPath) -> Result<i64> {
        if path.is_root() {
            return Ok(ROOT_INO);
        }
        if let Some(&ino) = apply.dirs.get(path) {
            return Ok(ino);
        }
        let ino = match self.lookup_real(path)? {
            Some(node) if node.is_dir() => node.ino,
            Some(_) => {
                return Err(VfsError::NotADirectory {
                    path: path.to_string(),
                })
            }
            None => {
                let parent_path = path.parent().unwrap_or_else(VPath::root);
                let parent = self.restore_parent(apply, &parent_path)?;
                let mode = match self.side_lookup(apply.target, path)? {
                    Found::Node(node) if node.is_dir() => node.mode,
                    _ => DIR_MODE,
                };
                let name = path.name().unwrap_or_default();
                let node = self.create_node(parent, name, Kind::Dir, mode, None, apply.rev)?;
                if !apply.created.contains(&parent_path) {
                    self.log_change(apply.rev, path, ChangeKind::Created)?;
                }
                apply.created.insert(path.clone());
                node.ino
            }
        };
        apply.dirs.insert(path.clone(), ino);
        Ok(ino)
    }

    /// Gives live file `to` (holding no chunks) the chunks checkpoint
    /// `checkpoint` pinned for its file `from`.
    fn copy_pinned_chunks(&self, checkpoint: CheckpointId, from: i64, to: i64) -> Result<()> {
        self.db.execute(
            "INSERT INTO file_chunks (ino, idx, chunk) \
             SELECT ?, idx, chunk FROM checkpoint_chunks WHERE checkpoint = ? AND ino = ?",
            params![to, checkpoint.0, from],
        )?;
        Ok(())
    }

    /// Undoes the last operation that changed files (see the module docs):
    /// restores the newest checkpoint not yet undone whose restore changes
    /// something, in one transaction. The caller takes an automatic
    /// checkpoint ([`super::Operation::Undo`]) first, so the undo can be
    /// taken back by restoring that.
    pub fn undo(&self) -> Result<Undone> {
        self.db.transaction(|| {
            let current = self.revision()?;
            let mut before = i64::MAX;
            loop {
                let ids = self.db.query(
                    "SELECT id FROM checkpoints WHERE undone = 0 AND id < ? AND revision < ? \
                     ORDER BY id DESC LIMIT ?",
                    params![before, current, UNDO_BATCH],
                )?;
                if ids.is_empty() {
                    return Err(VfsError::NothingToUndo);
                }
                for row in ids {
                    let id = CheckpointId(row.int(0)?);
                    before = id.0;
                    let restored = self.restore(id, None)?;
                    if restored.changes.is_empty() {
                        continue;
                    }
                    self.db.execute(
                        "UPDATE checkpoints SET undone = 1 WHERE id >= ?",
                        params![id.0],
                    )?;
                    return Ok(Undone {
                        checkpoint: self.checkpoint(id)?,
                        restored,
                    });
                }
            }
        })
    }
}

/// The state of one restore as it goes.
struct Apply<'a> {
    checkpoint: CheckpointId,
    target: &'a Side,
    rev: i64,
    /// Paths removed with their subtrees: deletions below them are done.
    removed: HashSet<VPath>,
    /// Directories created: what is created below them needs no log entry.
    created: HashSet<VPath>,
    /// Live directory inodes known by path.
    dirs: HashMap<VPath, i64>,
}

impl Apply<'_> {
    fn below_removed(&self, path: &VPath) -> bool {
        let mut at = path.parent();
        while let Some(ancestor) = at {
            if self.removed.contains(&ancestor) {
                return true;
            }
            at = ancestor.parent();
        }
        false
    }
}
