//! Path resolution: from a [`VPath`] to a node, following symlinks.
//!
//! Resolution walks the directory entries one name at a time, substituting
//! symlink targets as it meets them (chroot-style, see [`VPath::resolve_link`])
//! and giving up after [`MAX_SYMLINK_FOLLOWS`]. It reports the *real* path of
//! what it found, with every symlink replaced, because the change log and
//! container sync speak in real paths.

use stead_sql::{params, Sql};

use crate::error::{Result, VfsError};
use crate::node::{Kind, Node};
use crate::path::VPath;
use crate::{json_strings, Vfs};

/// Symlinks followed in one resolution before it fails with `ELOOP` (Linux's limit).
pub const MAX_SYMLINK_FOLLOWS: usize = 40;

/// The inode of the workspace root.
pub(crate) const ROOT_INO: i64 = 1;

/// Where a resolution ended.
pub(crate) enum Resolved {
    /// The path names an existing node, at `path` (its real path), in the
    /// directory with inode `parent` (the root is its own parent).
    Found {
        path: VPath,
        node: Node,
        parent: i64,
    },
    /// The path does not exist. `parent` is the last directory reached (at
    /// real path `parent_path`); `name` is the first missing name, and `last`
    /// says whether it was the final component.
    Missing {
        parent_path: VPath,
        parent: Node,
        name: String,
        last: bool,
    },
}

impl<S: Sql> Vfs<'_, S> {
    /// The chain of nodes from directory `from` down through `names`: the
    /// first entry is `from` itself, then one per name found, stopping at the
    /// first missing name or at a node that is not a directory. One
    /// statement for the whole path: on DO SQLite each statement costs far
    /// more than the rows it reads, so a walk of one query per name is what
    /// made deep paths slow.
    fn chain(&self, from: i64, names: &[String]) -> Result<Vec<Node>> {
        let rows = self.db.query(
            "WITH RECURSIVE walk(depth, ino, kind, mode, size, mtime, target, rev) AS ( \
                 SELECT 0, ino, kind, mode, size, mtime, target, rev FROM nodes WHERE ino = ? \
                 UNION ALL \
                 SELECT walk.depth + 1, n.ino, n.kind, n.mode, n.size, n.mtime, n.target, n.rev \
                 FROM walk \
                 JOIN json_each(?) AS part ON part.key = walk.depth \
                 JOIN dirents d ON d.parent = walk.ino AND d.name = part.value \
                 JOIN nodes n ON n.ino = d.ino \
                 WHERE walk.kind = 2) \
             SELECT ino, kind, mode, size, mtime, target, rev FROM walk ORDER BY depth",
            params![from, json_strings(names).as_str()],
        )?;
        rows.iter().map(|row| Node::from_row(row, 0)).collect()
    }

    /// Resolves `path`, following symlinks in every component and, when
    /// `follow_last`, in the final one too.
    pub(crate) fn resolve(&self, path: &VPath, follow_last: bool) -> Result<Resolved> {
        let mut todo: Vec<String> = path.components().map(str::to_string).collect();
        let mut at = VPath::root();
        let mut from = ROOT_INO;
        let mut parent = ROOT_INO;
        let mut follows = 0;
        'walk: loop {
            let mut chain = self.chain(from, &todo)?.into_iter();
            let mut dir = chain
                .next()
                .ok_or_else(|| VfsError::Corrupt(format!("inode {from} missing")))?;
            let mut walked = 0;
            for (i, node) in chain.enumerate() {
                let last = i + 1 == todo.len();
                if node.kind == Kind::Symlink && (!last || follow_last) {
                    follows += 1;
                    if follows > MAX_SYMLINK_FOLLOWS {
                        return Err(VfsError::SymlinkLoop {
                            path: path.to_string(),
                        });
                    }
                    // Start again from the root with the target in place of
                    // the names walked so far.
                    let target = VPath::resolve_link(&at, node.target.as_deref().unwrap_or(""));
                    todo = target
                        .components()
                        .map(str::to_string)
                        .chain(todo.drain(i + 1..))
                        .collect();
                    at = VPath::root();
                    from = ROOT_INO;
                    parent = ROOT_INO;
                    continue 'walk;
                }
                at = at.join(&todo[i]);
                parent = dir.ino;
                dir = node;
                walked += 1;
            }
            return Ok(if walked == todo.len() {
                Resolved::Found {
                    path: at,
                    node: dir,
                    parent,
                }
            } else if dir.kind != Kind::Dir {
                return Err(VfsError::NotADirectory {
                    path: at.to_string(),
                });
            } else {
                Resolved::Missing {
                    parent_path: at,
                    parent: dir,
                    name: todo[walked].clone(),
                    last: walked + 1 == todo.len(),
                }
            });
        }
    }

    /// Resolves `path` to an existing node, or fails with `ENOENT`.
    pub(crate) fn existing(&self, path: &VPath, follow_last: bool) -> Result<(VPath, Node)> {
        self.existing_in(path, follow_last)
            .map(|(real, node, _)| (real, node))
    }

    /// As [`Vfs::existing`], with the inode of the directory holding it.
    pub(crate) fn existing_in(
        &self,
        path: &VPath,
        follow_last: bool,
    ) -> Result<(VPath, Node, i64)> {
        match self.resolve(path, follow_last)? {
            Resolved::Found { path, node, parent } => Ok((path, node, parent)),
            Resolved::Missing { .. } => Err(VfsError::NotFound {
                path: path.to_string(),
            }),
        }
    }

    /// Resolves `path` to an existing directory.
    pub(crate) fn existing_dir(&self, path: &VPath) -> Result<(VPath, Node)> {
        let (real, node) = self.existing(path, true)?;
        if node.kind != Kind::Dir {
            return Err(VfsError::NotADirectory {
                path: path.to_string(),
            });
        }
        Ok((real, node))
    }
}
