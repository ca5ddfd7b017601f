//! The filesystem as the shell sees it.
//!
//! An object-safe view of [`stead_vfs::Vfs`], so the interpreter and the
//! utilities are not generic over the SQL engine. Each call is one VFS
//! operation, hence one SQL transaction, nested in the exec's one
//! ([`Fs::atomically`]). Every error passes through
//! `crate::content::note`, so an exec that met a chunk kept in the object
//! store is run again once it is fetched, never kept.

use stead_sql::Sql;
use stead_vfs::{
    Checkpoint, CheckpointId, Descendant, Diff, DiffOptions, DirEntry, NewCheckpoint, Node,
    PatchOutcome, Point, Restored, Undone, VPath, Vfs, VfsError, WriteOptions,
};

use crate::content::note;

pub(crate) type Result<T> = std::result::Result<T, VfsError>;

/// What the shell needs from a filesystem.
pub trait Fs {
    /// The node at `path`; `follow` follows a final symlink.
    fn stat(&self, path: &VPath, follow: bool) -> Result<Node>;
    /// The node at `path` (a final symlink followed), or `None` when it is
    /// missing and its directory exists, so it can be created: one
    /// resolution for what opening a file for output asks.
    fn stat_or_creatable(&self, path: &VPath) -> Result<Option<Node>>;
    /// The whole content of a regular file.
    fn read(&self, path: &VPath) -> Result<Vec<u8>>;
    /// The whole contents of the regular files `nodes` (as [`Fs::list`] or
    /// [`Fs::stat`] returned them), in order: many small files cost a few
    /// SQL statements rather than one or more each.
    fn read_many(&self, nodes: &[Node]) -> Result<Vec<Vec<u8>>>;
    /// Replaces (or creates, without creating parents) a regular file.
    fn write(&self, path: &VPath, data: &[u8]) -> Result<()>;
    /// [`Fs::write`] with permission bits `mode` and modification time
    /// `mtime_ms`, as one change (how an archive member is extracted).
    fn write_stamped(&self, path: &VPath, data: &[u8], mode: u32, mtime_ms: i64) -> Result<()>;
    /// Appends to (or creates) a regular file.
    fn append(&self, path: &VPath, data: &[u8]) -> Result<()>;
    /// The entries of a directory, in name order.
    fn list(&self, path: &VPath) -> Result<Vec<DirEntry>>;
    /// Everything below directory `path` at most `max_depth` deep, in
    /// depth-first name order, in a few statements rather than one listing
    /// per directory; `None` when it holds more than `limit` entries.
    fn subtree(
        &self,
        path: &VPath,
        max_depth: usize,
        limit: usize,
    ) -> Result<Option<Vec<Descendant>>>;
    fn mkdir(&self, path: &VPath, parents: bool) -> Result<()>;
    /// Removes a file, symlink or (empty unless `recursive`) directory.
    fn remove(&self, path: &VPath, recursive: bool) -> Result<()>;
    fn rename(&self, from: &VPath, to: &VPath) -> Result<()>;
    fn copy(&self, from: &VPath, to: &VPath, recursive: bool) -> Result<()>;
    fn symlink(&self, target: &str, path: &VPath) -> Result<()>;
    fn readlink(&self, path: &VPath) -> Result<String>;
    fn chmod(&self, path: &VPath, mode: u32) -> Result<()>;
    /// Sets the mtime (milliseconds; now when `None`), creating an empty file if missing.
    fn touch(&self, path: &VPath, mtime_ms: Option<i64>) -> Result<()>;
    /// The real path of `path`, every symlink resolved.
    fn realpath(&self, path: &VPath) -> Result<VPath>;
    /// Applies a patch (V4A or unified diff) in one transaction, relative
    /// paths taken from `base` (see `stead_vfs::patch`).
    fn apply_patch(&self, patch: &str, base: &VPath) -> Result<PatchOutcome>;
    /// Pins the workspace as it is (see `stead_vfs::checkpoint`).
    fn checkpoint(&self, name: Option<&str>, note: Option<&str>) -> Result<Checkpoint>;
    /// A checkpoint by id (digits) or name.
    fn find_checkpoint(&self, key: &str) -> Result<Checkpoint>;
    /// The newest checkpoints, at most `limit`.
    fn checkpoints(&self, limit: usize) -> Result<Vec<Checkpoint>>;
    /// What differs from `from` to `to` (the first page of `limit` paths).
    fn diff(&self, from: Point, to: Point, limit: usize) -> Result<Diff>;
    /// Puts checkpoint `id` back, wholly or at `paths`.
    fn restore(&self, id: CheckpointId, paths: Option<&[VPath]>) -> Result<Restored>;
    /// Takes back the newest operation an automatic checkpoint precedes.
    fn undo(&self) -> Result<Undone>;
    /// Runs `body` in one transaction, so the operations it makes commit
    /// together (an exec's many small writes cost one commit, not one
    /// each) and later reads inside it see them; `Err` when the commit
    /// failed, and none of them was kept.
    fn atomically(&self, body: &mut dyn FnMut()) -> Result<()>;
}

const NO_PARENTS: WriteOptions = WriteOptions {
    mode: None,
    create_parents: false,
};

impl<S: Sql> Fs for Vfs<'_, S> {
    fn stat(&self, path: &VPath, follow: bool) -> Result<Node> {
        Vfs::stat(self, path, follow)
            .map(|(_, node)| node)
            .inspect_err(note)
    }
    fn stat_or_creatable(&self, path: &VPath) -> Result<Option<Node>> {
        Vfs::stat_or_creatable(self, path).inspect_err(note)
    }
    fn read(&self, path: &VPath) -> Result<Vec<u8>> {
        self.read_file(path).inspect_err(note)
    }
    fn read_many(&self, nodes: &[Node]) -> Result<Vec<Vec<u8>>> {
        self.read_files(nodes).inspect_err(note)
    }
    fn write(&self, path: &VPath, data: &[u8]) -> Result<()> {
        Vfs::write(self, path, data, NO_PARENTS)
            .map(drop)
            .inspect_err(note)
    }
    fn write_stamped(&self, path: &VPath, data: &[u8], mode: u32, mtime_ms: i64) -> Result<()> {
        let options = WriteOptions {
            mode: Some(mode),
            ..NO_PARENTS
        };
        Vfs::write_stamped(self, path, data, options, mtime_ms)
            .map(drop)
            .inspect_err(note)
    }
    fn append(&self, path: &VPath, data: &[u8]) -> Result<()> {
        Vfs::append(self, path, data, NO_PARENTS)
            .map(drop)
            .inspect_err(note)
    }
    fn list(&self, path: &VPath) -> Result<Vec<DirEntry>> {
        Vfs::list(self, path, None, usize::MAX >> 1).inspect_err(note)
    }
    fn subtree(
        &self,
        path: &VPath,
        max_depth: usize,
        limit: usize,
    ) -> Result<Option<Vec<Descendant>>> {
        self.subtree_entries(path, max_depth, limit)
            .inspect_err(note)
    }
    fn mkdir(&self, path: &VPath, parents: bool) -> Result<()> {
        Vfs::mkdir(self, path, parents, None)
            .map(drop)
            .inspect_err(note)
    }
    fn remove(&self, path: &VPath, recursive: bool) -> Result<()> {
        Vfs::remove(self, path, recursive)
            .map(drop)
            .inspect_err(note)
    }
    fn rename(&self, from: &VPath, to: &VPath) -> Result<()> {
        Vfs::rename(self, from, to).map(drop).inspect_err(note)
    }
    fn copy(&self, from: &VPath, to: &VPath, recursive: bool) -> Result<()> {
        Vfs::copy(self, from, to, recursive)
            .map(drop)
            .inspect_err(note)
    }
    fn symlink(&self, target: &str, path: &VPath) -> Result<()> {
        Vfs::symlink(self, target, path).map(drop).inspect_err(note)
    }
    fn readlink(&self, path: &VPath) -> Result<String> {
        Vfs::readlink(self, path).inspect_err(note)
    }
    fn chmod(&self, path: &VPath, mode: u32) -> Result<()> {
        Vfs::chmod(self, path, mode).map(drop).inspect_err(note)
    }
    fn touch(&self, path: &VPath, mtime_ms: Option<i64>) -> Result<()> {
        Vfs::touch(self, path, mtime_ms).map(drop).inspect_err(note)
    }
    fn realpath(&self, path: &VPath) -> Result<VPath> {
        Vfs::stat(self, path, true)
            .map(|(real, _)| real)
            .inspect_err(note)
    }
    fn apply_patch(&self, patch: &str, base: &VPath) -> Result<PatchOutcome> {
        Vfs::apply_patch(self, patch, base, false).inspect_err(note)
    }
    fn checkpoint(&self, name: Option<&str>, note: Option<&str>) -> Result<Checkpoint> {
        self.create_checkpoint(NewCheckpoint {
            actor: "shell",
            name,
            note,
        })
        .inspect_err(crate::content::note)
    }
    fn find_checkpoint(&self, key: &str) -> Result<Checkpoint> {
        match key.parse::<i64>() {
            Ok(id) => Vfs::checkpoint(self, CheckpointId(id)),
            Err(_) => self.checkpoint_named(key),
        }
        .inspect_err(note)
    }
    fn checkpoints(&self, limit: usize) -> Result<Vec<Checkpoint>> {
        Vfs::checkpoints(self, None, limit).inspect_err(note)
    }
    fn diff(&self, from: Point, to: Point, limit: usize) -> Result<Diff> {
        let options = DiffOptions {
            limit,
            ..DiffOptions::default()
        };
        Vfs::diff(self, from, to, &options).inspect_err(note)
    }
    fn restore(&self, id: CheckpointId, paths: Option<&[VPath]>) -> Result<Restored> {
        Vfs::restore(self, id, paths).inspect_err(note)
    }
    fn undo(&self) -> Result<Undone> {
        Vfs::undo(self).inspect_err(note)
    }
    fn atomically(&self, body: &mut dyn FnMut()) -> Result<()> {
        Vfs::atomically(self, || {
            body();
            Ok(())
        })
    }
}
