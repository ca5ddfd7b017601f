//! The agent's workspace: a POSIX-like filesystem stored in SQLite.
//!
//! One [`Vfs`] is a short-lived view of a workspace database for one request:
//! it borrows the connection and carries the request's clock. Every mutating
//! operation runs in one SQL transaction, bumps the workspace revision once,
//! and records what it touched in the change log, so a failure midway leaves
//! the workspace exactly as it was and every consumer (container sync, change
//! events) can catch up from a revision.
//!
//! Storage model (see `migrations/0001_workspace.sql`):
//! - `nodes` holds inodes (file, directory, symlink) and `dirents` names them,
//!   so a rename of a whole subtree is one row update and a listing is an
//!   index range;
//! - file content is a list of fixed-size chunks ([`CHUNK_SIZE`], well under
//!   the 2 MB row limit) keyed by BLAKE3 hash, stored once however many files
//!   share them and deleted when the last reference goes; because every chunk
//!   but the last is full, a byte offset maps straight to a chunk index and an
//!   append rewrites at most one chunk;
//! - streamed uploads stage their chunks in `upload_chunks` and become visible
//!   in one transaction at the end, so a broken upload changes nothing;
//! - checkpoints pin the tree as it is by copying its metadata, never its
//!   content, and can be compared, restored, undone and streamed into a new
//!   workspace (see [`checkpoint`](crate::Checkpoint) and `CHECKPOINTS.md`);
//! - a chunk's bytes may move to an object store by hash while its row
//!   stays (see [`tier`]): synchronous reads of such a chunk answer
//!   [`VfsError::Tiered`], never bytes, and the async layer fetches it.

mod checkpoint;
mod content;
pub mod edit;
mod error;
pub mod glob;
pub mod grep;
mod holds;
mod node;
mod ops;
pub mod patch;
mod path;
pub mod read;
mod resolve;
pub mod search_cost;
mod sync;
pub mod tier;
mod tree;
mod upload;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use stead_sql::{params, Sql};

pub use checkpoint::{
    AutoCheckpoint, Before, Checkpoint, CheckpointId, CheckpointKind, Diff, DiffEntry, DiffMethod,
    DiffOptions, EntryInfo, ExportCursor, ExportPage, ImportProgress, ImportStatus, NewCheckpoint,
    Operation, Oversize, PathChange, Point, PointInfo, Restored, Retention, Scope, Snapshot,
    TakenCheckpoint, TextDiff, TextOptions, Undone, FORK_FORMAT, MAX_CHECKPOINT_NAME,
    MAX_CHECKPOINT_NOTE, MAX_FORK_FRAME,
};
pub use content::{ChunkRef, CHUNK_SIZE};
pub use error::{Errno, Result, VfsError};
pub use node::{DirEntry, Kind, Node};
pub use ops::{
    Change, ChangeCursor, ChangeKind, ChangePage, EditOutcome, Usage, WriteOptions, Written,
};
pub use patch::{FileAction, PatchOutcome, PatchedFile};
pub use path::{VPath, MAX_NAME_LEN, MAX_PATH_LEN};
pub use sync::{Conflict, Rejected, SyncOutcome};
pub use tree::{Descendant, Flow, Visit};
pub use upload::UploadId;

/// Default permission bits of new files, directories and symlinks.
pub const FILE_MODE: u32 = 0o644;
pub const DIR_MODE: u32 = 0o755;
pub const SYMLINK_MODE: u32 = 0o777;

/// How many revisions of change log a workspace keeps. Older entries are
/// pruned; a consumer further behind than this must resynchronise in full.
pub const CHANGE_LOG_REVISIONS: i64 = 65_536;

/// Workspace-wide quotas enforced by the filesystem itself. Each is checked
/// inside the operation's transaction, so one that would be exceeded fails
/// the operation (`EFBIG`, `ENOSPC`, `ENAMETOOLONG`, naming the quota) and
/// leaves the workspace as it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest file, in bytes.
    pub max_file_bytes: u64,
    /// Content stored, in bytes (each distinct chunk once, staged uploads
    /// included): what the workspace costs.
    pub max_stored_bytes: u64,
    /// Files, directories and symlinks together.
    pub max_nodes: u64,
    /// Components in a created path (`/a/b/c` has 3).
    pub max_path_depth: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_file_bytes: 1 << 30,
            // Durable Object SQLite holds up to 10 GB; leave room for
            // indexes, the change log and jobs.
            max_stored_bytes: 8 << 30,
            max_nodes: 1_000_000,
            max_path_depth: 128,
        }
    }
}

/// A view of one workspace database, for one request.
pub struct Vfs<'db, S: Sql> {
    db: &'db S,
    now_ms: i64,
    limits: Limits,
    /// Whether the running change has logged anything.
    logged: Cell<bool>,
    /// What resolution has met while a batch runs ([`Vfs::atomically`]):
    /// for (parent inode, name), the inode of the directory of that name,
    /// or `None` for no entry of that name. A directory stands for the
    /// components before a path's last (a last is always read, for its
    /// node as it is now); an absent name for any. So a batch of writes in
    /// one folder looks up about one name each, not the whole path twice.
    /// Only changes that add (see [`Vfs::change_adding`]) run with it, and
    /// every node they create is noted as it is inserted: any other
    /// change may remove or move an entry, so it runs without and forgets
    /// it, as does any change that fails (its rollback may take away a
    /// directory it made).
    known: RefCell<HashMap<(i64, String), Option<i64>>>,
    /// Batches open (nested [`Vfs::atomically`] calls).
    batches: Cell<u32>,
    /// Changes running that may remove or move entries.
    moving: Cell<u32>,
}

impl<'db, S: Sql> Vfs<'db, S> {
    /// A view of the workspace in `db` (already migrated), stamping changes
    /// with `now_ms` (milliseconds since the Unix epoch).
    pub fn new(db: &'db S, now_ms: i64) -> Self {
        Vfs {
            db,
            now_ms,
            limits: Limits::default(),
            logged: Cell::new(false),
            known: RefCell::default(),
            batches: Cell::new(0),
            moving: Cell::new(0),
        }
    }

    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Runs `body` as one transaction: the changes it makes commit together
    /// when it returns `Ok` (each still its own revision), none when `Err`.
    /// Inside it, the directories a path goes through are looked up once
    /// (see `known`).
    pub fn atomically<T>(&self, body: impl FnOnce() -> Result<T>) -> Result<T> {
        self.batches.set(self.batches.get() + 1);
        let result = self.db.transaction(body);
        self.batches.set(self.batches.get() - 1);
        if result.is_err() || self.batches.get() == 0 {
            self.known.borrow_mut().clear();
        }
        result
    }

    /// What a batch knows of entry `name` in directory `parent`:
    /// `Some(Some(ino))`, a directory; `Some(None)`, no such entry; `None`,
    /// not known (look it up).
    pub(crate) fn known_entry(&self, parent: i64, name: &str) -> Option<Option<i64>> {
        if !self.keeps_entries() {
            return None;
        }
        self.known
            .borrow()
            .get(&(parent, name.to_string()))
            .copied()
    }

    /// Notes what entry `name` of directory `parent` is now, as a lookup
    /// found it or a creation made it. Files and symlinks are not kept
    /// (a last component is read for its node as it is now).
    pub(crate) fn met_entry(&self, parent: i64, name: &str, found: Met) {
        if !self.keeps_entries() {
            return;
        }
        let key = (parent, name.to_string());
        let mut known = self.known.borrow_mut();
        match found {
            Met::Dir(ino) => known.insert(key, Some(ino)),
            Met::Missing => known.insert(key, None),
            Met::Other => known.remove(&key),
        };
    }

    fn keeps_entries(&self) -> bool {
        self.batches.get() > 0 && self.moving.get() == 0
    }

    /// The current workspace revision: how many changes it has seen.
    pub fn revision(&self) -> Result<i64> {
        self.meta("revision")
    }

    fn meta(&self, key: &str) -> Result<i64> {
        let row = self
            .db
            .query_row("SELECT value FROM meta WHERE key = ?", params![key])?
            .ok_or_else(|| VfsError::Corrupt(format!("meta key {key} missing")))?;
        Ok(row.int(0)?)
    }

    /// Starts a change: bumps the revision and returns it, with the usage
    /// the quotas count as the change finds it (read by the same
    /// statement). Call inside the operation's transaction.
    fn next_revision(&self) -> Result<(i64, Used)> {
        let row = self
            .db
            .query_row(
                "UPDATE meta SET value = value + 1 WHERE key = 'revision' RETURNING value, \
                 (SELECT value FROM meta WHERE key = 'stored_bytes'), \
                 (SELECT value FROM meta WHERE key = 'node_count')",
                params![],
            )?
            .ok_or_else(|| VfsError::Corrupt("meta key revision missing".into()))?;
        let counter = |at: usize| -> Result<u64> { Ok(row.int(at)?.max(0) as u64) };
        Ok((
            row.int(0)?,
            Used {
                stored_bytes: counter(1)?,
                nodes: counter(2)?,
            },
        ))
    }

    /// Records that `rev` touched `path`, pruning the log now and then.
    /// Every creation passes here, so this is where path depth is checked.
    pub(crate) fn log_change(&self, rev: i64, path: &VPath, kind: ChangeKind) -> Result<()> {
        self.logged.set(true);
        let depth = path.components().count();
        if kind == ChangeKind::Created && depth > self.limits.max_path_depth {
            return Err(VfsError::TooDeep {
                path: path.to_string(),
                depth,
                limit: self.limits.max_path_depth,
            });
        }
        self.db.execute(
            "INSERT INTO changes (rev, path, kind) VALUES (?, ?, ?)",
            params![rev, path.as_str(), kind.as_str()],
        )?;
        if rev % 1024 == 0 && rev > CHANGE_LOG_REVISIONS {
            let floor = rev - CHANGE_LOG_REVISIONS;
            self.db
                .execute("DELETE FROM changes WHERE rev <= ?", params![floor])?;
            self.db.execute(
                "UPDATE meta SET value = ? WHERE key = 'changes_pruned'",
                params![floor],
            )?;
        }
        Ok(())
    }

    /// Runs `body` as one transaction with a fresh revision. A body that
    /// turned out to change nothing (`mkdir -p` of an existing directory, a
    /// rename onto itself) logs nothing, and gives its revision back.
    pub(crate) fn change<T>(&self, body: impl FnOnce(i64) -> Result<T>) -> Result<T> {
        self.moving(|| self.transact(QuotaCheck::AtEnd, body))
    }

    /// Runs `body` as [`Vfs::change`] does, for a change that only adds
    /// and rewrites (creates files, directories and symlinks, writes
    /// content, stamps): it removes and moves no entry, so the directories
    /// a batch met stay as they were, and it adds at most `growth` to what
    /// the quotas count (known from its input), so the quotas are read
    /// again at its end only when the usage it started from plus `growth`
    /// could pass one. Far from every quota, a write then costs no
    /// statement for them.
    pub(crate) fn change_adding<T>(
        &self,
        growth: Growth,
        body: impl FnOnce(i64) -> Result<T>,
    ) -> Result<T> {
        let result = self.transact(QuotaCheck::Bounded(growth), body);
        if result.is_err() {
            self.known.borrow_mut().clear();
        }
        result
    }

    /// Runs `body`, a change that may remove or move entries, without the
    /// directories a batch met, and forgets them after.
    fn moving<T>(&self, body: impl FnOnce() -> Result<T>) -> Result<T> {
        self.moving.set(self.moving.get() + 1);
        let result = body();
        self.moving.set(self.moving.get() - 1);
        self.known.borrow_mut().clear();
        result
    }

    /// Runs `body` as [`Vfs::change`] does, except that the quotas are not
    /// checked at the end: `body` checked each of its parts itself and
    /// left out those that would exceed one (see `Vfs::apply_sync`), so
    /// the rest applies even when the workspace is over a quota already
    /// (a removal is then still taken).
    pub(crate) fn change_admitted<T>(&self, body: impl FnOnce(i64) -> Result<T>) -> Result<T> {
        self.moving(|| self.transact(QuotaCheck::PerPart, body))
    }

    /// Runs `body` as [`Vfs::change`] does, for a change that only takes
    /// away (a removal): it cannot add usage, so the quotas are not read,
    /// and a workspace over a quota can always be brought back under it.
    pub(crate) fn change_freeing<T>(&self, body: impl FnOnce(i64) -> Result<T>) -> Result<T> {
        self.moving(|| self.transact(QuotaCheck::Frees, body))
    }

    fn transact<T>(&self, quotas: QuotaCheck, body: impl FnOnce(i64) -> Result<T>) -> Result<T> {
        self.db.transaction(|| {
            self.logged.set(false);
            let (rev, used) = self.next_revision()?;
            let value = body(rev)?;
            if !self.logged.get() {
                self.db.execute(
                    "UPDATE meta SET value = value - 1 WHERE key = 'revision'",
                    params![],
                )?;
            }
            match quotas {
                QuotaCheck::Bounded(growth) if self.stays_within(used, growth) => {}
                QuotaCheck::AtEnd | QuotaCheck::Bounded(_) => self.check_quotas()?,
                QuotaCheck::PerPart | QuotaCheck::Frees => {}
            }
            Ok(value)
        })
    }
}

/// What a lookup found, as a batch keeps it (see `Vfs::known`).
#[derive(Clone, Copy)]
pub(crate) enum Met {
    /// The directory with this inode.
    Dir(i64),
    /// No entry.
    Missing,
    /// A file or symlink.
    Other,
}

/// What the quotas count, as a change found it.
#[derive(Clone, Copy)]
struct Used {
    stored_bytes: u64,
    nodes: u64,
}

/// The most a change can add to what the quotas count.
#[derive(Clone, Copy)]
pub(crate) struct Growth {
    /// Content stored: new chunks hold at most the bytes written (and, for
    /// an append, the partial last chunk it rewrites).
    pub bytes: u64,
    /// Nodes created.
    pub nodes: u64,
}

/// Where a change meets the quotas.
#[derive(Clone, Copy)]
enum QuotaCheck {
    /// Once, at its end: over a quota, the whole change fails.
    AtEnd,
    /// As `AtEnd`, but only when the usage the change started from plus
    /// what it can add could pass a quota: otherwise it cannot have.
    Bounded(Growth),
    /// Its body admitted each part itself.
    PerPart,
    /// Not at all: it only takes away.
    Frees,
}

impl<S: Sql> Vfs<'_, S> {
    /// Files, directories and symlinks the workspace holds now (the root
    /// included), as `max_nodes` counts them.
    pub(crate) fn node_count(&self) -> Result<u64> {
        Ok(self.meta("node_count")?.max(0) as u64)
    }

    /// Whether `used` plus `growth` is within every quota.
    fn stays_within(&self, used: Used, growth: Growth) -> bool {
        used.stored_bytes.saturating_add(growth.bytes) <= self.limits.max_stored_bytes
            && used.nodes.saturating_add(growth.nodes) <= self.limits.max_nodes
    }

    /// Fails when the workspace holds more than its quotas allow. The
    /// counters are kept by triggers (`migrations/0004_usage.sql`), so this
    /// costs one statement however large the workspace.
    pub(crate) fn check_quotas(&self) -> Result<()> {
        let rows = self.db.query(
            "SELECT key, value FROM meta WHERE key IN ('stored_bytes', 'node_count')",
            params![],
        )?;
        for row in rows {
            let used = row.int(1)?.max(0) as u64;
            let (quota, limit) = match row.text(0)? {
                "stored_bytes" => ("max_stored_bytes", self.limits.max_stored_bytes),
                _ => ("max_nodes", self.limits.max_nodes),
            };
            if used > limit {
                return Err(VfsError::NoSpace { quota, used, limit });
            }
        }
        Ok(())
    }
}

/// Encodes ids as a JSON array, for `json_each(?)`: one bound parameter for a
/// set of any size, within DO SQLite's 100-parameter limit.
fn json_ids(ids: &[i64]) -> String {
    let mut out = String::with_capacity(ids.len() * 8 + 2);
    out.push('[');
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&id.to_string());
    }
    out.push(']');
    out
}

#[cfg(test)]
mod tests {
    use stead_sql::{migrate, SqliteDb, MIGRATIONS};

    use super::*;

    #[test]
    fn names_with_special_characters_resolve() {
        let db = SqliteDb::memory().unwrap();
        migrate(&db, MIGRATIONS).unwrap();
        let vfs = Vfs::new(&db, 0);
        for name in ["a\"b", "back\\slash", "tab\there", "[1]", "é ü"] {
            let path = VPath::parse(&format!("/dir {name}/{name}")).unwrap();
            vfs.write(&path, name.as_bytes(), WriteOptions::default())
                .unwrap();
            assert_eq!(vfs.read_file(&path).unwrap(), name.as_bytes());
        }
    }

    /// Counts the statements run through it.
    struct Counting<'a> {
        db: &'a SqliteDb,
        statements: Cell<usize>,
    }

    impl Sql for Counting<'_> {
        fn query(
            &self,
            statement: &str,
            params: &[stead_sql::Param<'_>],
        ) -> std::result::Result<Vec<stead_sql::Row>, stead_sql::SqlError> {
            self.statements.set(self.statements.get() + 1);
            self.db.query(statement, params)
        }

        fn transaction<T, E>(
            &self,
            body: impl FnOnce() -> std::result::Result<T, E>,
        ) -> std::result::Result<T, E>
        where
            E: From<stead_sql::SqlError>,
        {
            self.db.transaction(body)
        }
    }

    #[test]
    fn read_files_batches_small_files() {
        let db = SqliteDb::memory().unwrap();
        migrate(&db, MIGRATIONS).unwrap();
        let counting = Counting {
            db: &db,
            statements: Cell::new(0),
        };
        let vfs = Vfs::new(&counting, 0);
        let big: Vec<u8> = (0..2 * CHUNK_SIZE + 7).map(|i| (i % 251) as u8).collect();
        let mut expected: Vec<Vec<u8>> = Vec::new();
        for i in 0..300 {
            let data = match i {
                7 | 150 => Vec::new(),
                42 => big.clone(),
                _ => format!("file {i}\n").into_bytes(),
            };
            let path = VPath::parse(&format!("/d/f{i:03}")).unwrap();
            vfs.write(&path, &data, WriteOptions::default()).unwrap();
            expected.push(data);
        }
        let one_chunk = vec![b'x'; CHUNK_SIZE];
        vfs.write(
            &VPath::parse("/d/g").unwrap(),
            &one_chunk,
            WriteOptions::default(),
        )
        .unwrap();
        expected.push(one_chunk);
        let mut nodes: Vec<Node> = vfs
            .list(&VPath::parse("/d").unwrap(), None, usize::MAX >> 1)
            .unwrap()
            .into_iter()
            .map(|entry| entry.node)
            .collect();
        // A repeated node reads the same in both places.
        nodes.push(nodes[3].clone());
        expected.push(expected[3].clone());

        counting.statements.set(0);
        let got = vfs.read_files(&nodes).unwrap();
        assert_eq!(got.len(), expected.len());
        for (i, (got, want)) in got.iter().zip(&expected).enumerate() {
            assert!(got == want, "content of node {i}");
        }
        // 298 one-chunk files (the largest a whole chunk) in two batches of
        // at most 256, and one statement for the multi-chunk file.
        assert_eq!(counting.statements.get(), 3);
        assert!(vfs.read_files(&[]).unwrap().is_empty());

        let root = vfs.stat(&VPath::parse("/d").unwrap(), true).unwrap().1;
        assert!(matches!(
            vfs.read_files(&[root]),
            Err(VfsError::IsADirectory { .. })
        ));
    }
}
