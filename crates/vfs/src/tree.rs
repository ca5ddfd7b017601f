//! Depth-first traversal of a subtree, in name order, resumable after any path.
//!
//! Glob and grep page through large trees: a page ends at some path, and the
//! next request resumes strictly after it. Depth-first name order is a total
//! order on paths (compare component lists, a prefix first), so "after this
//! path" is well defined and needs no server-side cursor state: directories
//! on the way to the resume point are entered without being visited again,
//! and siblings before it are skipped by the index range itself. Symlinks are
//! visited but never followed, so a traversal cannot loop.

use stead_sql::Sql;

use crate::error::Result;
use crate::node::{Kind, Node};
use crate::path::VPath;
use crate::Vfs;

/// A node met by a traversal, with its path.
#[derive(Debug, Clone)]
pub struct Visit {
    pub path: VPath,
    pub node: Node,
}

/// What a traversal does after a visit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Go on, into the node's children if it is a directory.
    Continue,
    /// Go on, but not into this directory.
    SkipChildren,
    /// End the traversal.
    Stop,
}

impl<S: Sql> Vfs<'_, S> {
    /// Visits every node below directory `root` (not `root` itself) in
    /// depth-first name order, starting strictly after `after` when given.
    pub fn walk(
        &self,
        root: &VPath,
        after: Option<&VPath>,
        mut visit: impl FnMut(&Visit) -> Result<Flow>,
    ) -> Result<()> {
        let (real, dir) = self.existing_dir(root)?;
        let resume: Vec<String> = after
            .and_then(|after| after.strip_prefix(root))
            .map(|rest| {
                rest.split('/')
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        self.walk_dir(&real, dir.ino, &resume, &mut visit).map(drop)
    }

    /// Walks one directory; `resume` is the rest of the resume path below it
    /// (empty when the whole directory comes after the resume point).
    /// Returns false when the traversal was stopped.
    fn walk_dir(
        &self,
        path: &VPath,
        ino: i64,
        resume: &[String],
        visit: &mut impl FnMut(&Visit) -> Result<Flow>,
    ) -> Result<bool> {
        let (first, rest) = match resume.split_first() {
            Some((first, rest)) => (Some(first.as_str()), rest),
            None => (None, resume),
        };
        // Entries from the resume name on, inclusive: the one equal to it is
        // on the path to the resume point.
        for entry in self.entries_from(ino, first.unwrap_or(""))? {
            let child = Visit {
                path: path.join(&entry.name),
                node: entry.node,
            };
            let on_path = first == Some(entry.name.as_str());
            let flow = if on_path {
                Flow::Continue
            } else {
                visit(&child)?
            };
            match flow {
                Flow::Stop => return Ok(false),
                Flow::SkipChildren => continue,
                Flow::Continue => {}
            }
            if child.node.kind == Kind::Dir {
                let below: &[String] = if on_path { rest } else { &[] };
                if !self.walk_dir(&child.path, child.node.ino, below, visit)? {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }
}
