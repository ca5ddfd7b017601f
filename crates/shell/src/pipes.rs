//! Process substitution's `/dev/fd/N` files, held in memory for the exec.
//!
//! bash hands `<(cmd)` and `>(cmd)` to a command as `/dev/fd/63` (then 62,
//! ...), a pipe that is no file of any folder. Here such a name is a file
//! of [`Pipes`], seen through [`WithPipes`], the filesystem the interpreter
//! and every utility use: it reads, writes, appends and stats like a file,
//! and nothing of it reaches the workspace (no revision, change-log entry,
//! notification, or `/dev` folder). Every other path goes to the workspace
//! unchanged.

use std::cell::RefCell;

use stead_vfs::{
    Checkpoint, CheckpointId, Descendant, Diff, DirEntry, Kind, Node, PatchOutcome, Point,
    Restored, Undone, VPath,
};

use crate::fs::{Fs, Result};

/// The open process-substitution files.
#[derive(Default)]
pub(crate) struct Pipes {
    open: RefCell<Vec<Pipe>>,
    /// The last inode number given out (counting down from -1: a
    /// workspace node's is positive).
    last_ino: std::cell::Cell<i64>,
}

struct Pipe {
    path: VPath,
    ino: i64,
    data: Vec<u8>,
}

impl Pipes {
    /// Opens `path` holding `data` (replacing one open there).
    pub(crate) fn open(&self, path: &VPath, data: Vec<u8>) {
        self.close(path);
        let ino = self.last_ino.get() - 1;
        self.last_ino.set(ino);
        self.open.borrow_mut().push(Pipe {
            path: path.clone(),
            ino,
            data,
        });
    }

    /// Closes `path`; its bytes are gone.
    pub(crate) fn close(&self, path: &VPath) {
        self.open.borrow_mut().retain(|p| &p.path != path);
    }

    fn holds(&self, path: &VPath) -> bool {
        self.open.borrow().iter().any(|p| &p.path == path)
    }

    fn node(&self, path: &VPath) -> Option<Node> {
        let open = self.open.borrow();
        let pipe = open.iter().find(|p| &p.path == path)?;
        Some(Node {
            ino: pipe.ino,
            kind: Kind::File,
            mode: 0o600,
            size: pipe.data.len() as u64,
            mtime: 0,
            target: None,
            rev: 0,
        })
    }

    fn with<T>(&self, path: &VPath, f: impl FnOnce(&mut Vec<u8>) -> T) -> Option<T> {
        let mut open = self.open.borrow_mut();
        open.iter_mut()
            .find(|p| &p.path == path)
            .map(|p| f(&mut p.data))
    }
}

/// The workspace's filesystem with [`Pipes`] over it.
pub(crate) struct WithPipes<'a> {
    pub fs: &'a dyn Fs,
    pub pipes: &'a Pipes,
}

impl Fs for WithPipes<'_> {
    fn stat(&self, path: &VPath, follow: bool) -> Result<Node> {
        match self.pipes.node(path) {
            Some(node) => Ok(node),
            None => self.fs.stat(path, follow),
        }
    }
    fn stat_or_creatable(&self, path: &VPath) -> Result<Option<Node>> {
        match self.pipes.node(path) {
            Some(node) => Ok(Some(node)),
            None => self.fs.stat_or_creatable(path),
        }
    }
    fn read(&self, path: &VPath) -> Result<Vec<u8>> {
        match self.pipes.with(path, |data| data.clone()) {
            Some(data) => Ok(data),
            None => self.fs.read(path),
        }
    }
    fn read_many(&self, nodes: &[Node]) -> Result<Vec<Vec<u8>>> {
        if nodes.iter().all(|n| n.ino > 0) {
            return self.fs.read_many(nodes);
        }
        let open = self.pipes.open.borrow();
        let piped = |n: &Node| open.iter().find(|p| p.ino == n.ino).map(|p| p.data.clone());
        let workspace: Vec<Node> = nodes.iter().filter(|n| n.ino > 0).cloned().collect();
        let mut read = self.fs.read_many(&workspace)?.into_iter();
        Ok(nodes
            .iter()
            .map(|n| match piped(n) {
                Some(data) => data,
                None => read.next().unwrap_or_default(),
            })
            .collect())
    }
    fn write(&self, path: &VPath, data: &[u8]) -> Result<()> {
        match self.pipes.with(path, |d| *d = data.to_vec()) {
            Some(()) => Ok(()),
            None => self.fs.write(path, data),
        }
    }
    fn write_stamped(&self, path: &VPath, data: &[u8], mode: u32, mtime_ms: i64) -> Result<()> {
        match self.pipes.with(path, |d| *d = data.to_vec()) {
            Some(()) => Ok(()),
            None => self.fs.write_stamped(path, data, mode, mtime_ms),
        }
    }
    fn append(&self, path: &VPath, data: &[u8]) -> Result<()> {
        match self.pipes.with(path, |d| d.extend_from_slice(data)) {
            Some(()) => Ok(()),
            None => self.fs.append(path, data),
        }
    }
    fn list(&self, path: &VPath) -> Result<Vec<DirEntry>> {
        self.fs.list(path)
    }
    fn subtree(
        &self,
        path: &VPath,
        max_depth: usize,
        limit: usize,
    ) -> Result<Option<Vec<Descendant>>> {
        self.fs.subtree(path, max_depth, limit)
    }
    fn mkdir(&self, path: &VPath, parents: bool) -> Result<()> {
        self.fs.mkdir(path, parents)
    }
    fn remove(&self, path: &VPath, recursive: bool) -> Result<()> {
        if self.pipes.holds(path) {
            self.pipes.close(path);
            return Ok(());
        }
        self.fs.remove(path, recursive)
    }
    fn rename(&self, from: &VPath, to: &VPath) -> Result<()> {
        if self.pipes.holds(from) {
            self.fs.write(to, &self.read(from)?)?;
            self.pipes.close(from);
            return Ok(());
        }
        self.fs.rename(from, to)
    }
    fn copy(&self, from: &VPath, to: &VPath, recursive: bool) -> Result<()> {
        if self.pipes.holds(from) {
            return self.write(to, &self.read(from)?);
        }
        self.fs.copy(from, to, recursive)
    }
    fn symlink(&self, target: &str, path: &VPath) -> Result<()> {
        self.fs.symlink(target, path)
    }
    fn readlink(&self, path: &VPath) -> Result<String> {
        self.fs.readlink(path)
    }
    fn chmod(&self, path: &VPath, mode: u32) -> Result<()> {
        match self.pipes.holds(path) {
            true => Ok(()),
            false => self.fs.chmod(path, mode),
        }
    }
    fn touch(&self, path: &VPath, mtime_ms: Option<i64>) -> Result<()> {
        match self.pipes.holds(path) {
            true => Ok(()),
            false => self.fs.touch(path, mtime_ms),
        }
    }
    fn realpath(&self, path: &VPath) -> Result<VPath> {
        match self.pipes.holds(path) {
            true => Ok(path.clone()),
            false => self.fs.realpath(path),
        }
    }
    fn apply_patch(&self, patch: &str, base: &VPath) -> Result<PatchOutcome> {
        self.fs.apply_patch(patch, base)
    }
    fn checkpoint(&self, name: Option<&str>, note: Option<&str>) -> Result<Checkpoint> {
        self.fs.checkpoint(name, note)
    }
    fn find_checkpoint(&self, key: &str) -> Result<Checkpoint> {
        self.fs.find_checkpoint(key)
    }
    fn checkpoints(&self, limit: usize) -> Result<Vec<Checkpoint>> {
        self.fs.checkpoints(limit)
    }
    fn diff(&self, from: Point, to: Point, limit: usize) -> Result<Diff> {
        self.fs.diff(from, to, limit)
    }
    fn restore(&self, id: CheckpointId, paths: Option<&[VPath]>) -> Result<Restored> {
        self.fs.restore(id, paths)
    }
    fn undo(&self) -> Result<Undone> {
        self.fs.undo()
    }
    fn atomically(&self, body: &mut dyn FnMut()) -> Result<()> {
        self.fs.atomically(body)
    }
}
