//! Shared fixtures for the VFS integration tests: a migrated in-memory
//! workspace, table counts and dumps, and deterministic test data.

#![allow(dead_code)]

use std::fmt::Debug;

use stead_sql::{migrate, params, Row, Sql, SqliteDb, MIGRATIONS};
use stead_vfs::{
    Before, Checkpoint, CheckpointId, DirEntry, Kind, NewCheckpoint, Operation, Retention, Scope,
    Snapshot, VPath, Vfs, WriteOptions, Written,
};

/// The clock every test view uses.
pub const NOW: i64 = 1_700_000_000_000;

/// A migrated in-memory workspace database.
pub fn db() -> SqliteDb {
    let db = SqliteDb::memory().unwrap();
    migrate(&db, MIGRATIONS).unwrap();
    db
}

/// A view of `db` at [`NOW`].
pub fn vfs(db: &SqliteDb) -> Vfs<'_, SqliteDb> {
    Vfs::new(db, NOW)
}

/// Parses a workspace path, panicking on a bad one.
pub fn p(path: &str) -> VPath {
    VPath::parse(path).unwrap()
}

/// Rows in `table`.
pub fn count(db: &SqliteDb, table: &str) -> i64 {
    db.query_row(&format!("SELECT COUNT(*) FROM {table}"), params![])
        .unwrap()
        .unwrap()
        .int(0)
        .unwrap()
}

/// Rows in `chunks`: distinct stored contents.
pub fn chunks(db: &SqliteDb) -> i64 {
    count(db, "chunks")
}

/// The chunk ids of the file at `path`, in order.
pub fn chunk_ids(db: &SqliteDb, vfs: &Vfs<'_, SqliteDb>, path: &str) -> Vec<i64> {
    let ino = vfs.stat(&p(path), true).unwrap().1.ino;
    db.query(
        "SELECT chunk FROM file_chunks WHERE ino = ? ORDER BY idx",
        params![ino],
    )
    .unwrap()
    .iter()
    .map(|row| row.int(0).unwrap())
    .collect()
}

/// Every row of every workspace table, for before/after comparisons.
pub fn dump(db: &SqliteDb) -> Vec<Vec<Row>> {
    [
        "SELECT key, value FROM meta ORDER BY key",
        "SELECT ino, kind, mode, size, mtime, target, rev FROM nodes ORDER BY ino",
        "SELECT parent, name, ino FROM dirents ORDER BY parent, name",
        "SELECT id, hash, size, data FROM chunks ORDER BY id",
        "SELECT ino, idx, chunk FROM file_chunks ORDER BY ino, idx",
        "SELECT upload, idx, chunk FROM upload_chunks ORDER BY upload, idx",
        "SELECT seq, rev, path, kind FROM changes ORDER BY seq",
        "SELECT * FROM checkpoints ORDER BY id",
        "SELECT * FROM checkpoint_roots ORDER BY checkpoint, path",
        "SELECT * FROM checkpoint_entries ORDER BY checkpoint, parent, name",
        "SELECT * FROM checkpoint_chunks ORDER BY checkpoint, ino, idx",
        "SELECT * FROM import",
        "SELECT * FROM import_entries ORDER BY ino",
        "SELECT * FROM import_file_chunks ORDER BY ino, idx",
        "SELECT * FROM import_chunks ORDER BY chunk",
    ]
    .iter()
    .map(|q| db.query(q, params![]).unwrap())
    .collect()
}

/// The POSIX code of a failed operation; panics when it succeeded.
#[track_caller]
pub fn code<T: Debug>(result: stead_vfs::Result<T>) -> &'static str {
    match result {
        Ok(value) => {
            let text = format!("{value:?}");
            panic!(
                "expected an error, got Ok({})",
                &text[..text.len().min(200)]
            )
        }
        Err(error) => error.code().as_str(),
    }
}

/// Writes `data` at `path`, creating parents.
#[track_caller]
pub fn put(vfs: &Vfs<'_, SqliteDb>, path: &str, data: impl AsRef<[u8]>) -> Written {
    vfs.write(&p(path), data.as_ref(), WriteOptions::default())
        .unwrap()
}

/// Reads the file at `path`.
#[track_caller]
pub fn get(vfs: &Vfs<'_, SqliteDb>, path: &str) -> Vec<u8> {
    vfs.read_file(&p(path)).unwrap()
}

/// Write options without parent creation.
pub fn no_parents() -> WriteOptions {
    WriteOptions {
        mode: None,
        create_parents: false,
    }
}

/// `len` deterministic pseudo-random bytes; different seeds give different
/// bytes, and no two chunk-sized pieces of one stream are equal.
pub fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        out.extend_from_slice(&state.to_le_bytes());
    }
    out.truncate(len);
    out
}

/// One entry of a recursive listing: path, kind, and content (files) or
/// target (symlinks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub path: String,
    pub kind: Kind,
    pub data: Vec<u8>,
}

/// A tree that can be listed and read: the live workspace or a checkpoint.
pub trait Readable {
    fn list_dir(&self, dir: &VPath) -> Vec<DirEntry>;
    fn read(&self, path: &VPath) -> Vec<u8>;
}

impl<S: Sql> Readable for Vfs<'_, S> {
    fn list_dir(&self, dir: &VPath) -> Vec<DirEntry> {
        self.list(dir, None, 100_000).unwrap()
    }

    fn read(&self, path: &VPath) -> Vec<u8> {
        self.read_file(path).unwrap()
    }
}

impl<S: Sql> Readable for Snapshot<'_, '_, S> {
    fn list_dir(&self, dir: &VPath) -> Vec<DirEntry> {
        self.list(dir, None, 100_000).unwrap()
    }

    fn read(&self, path: &VPath) -> Vec<u8> {
        self.read_file(path).unwrap()
    }
}

/// Everything below `dir`, depth-first in name order, paths relative to `dir`.
pub fn tree(source: &impl Readable, dir: &str) -> Vec<Entry> {
    let base = p(dir);
    let mut out = Vec::new();
    walk(source, &base, &base, &mut out);
    out
}

fn walk(source: &impl Readable, base: &VPath, dir: &VPath, out: &mut Vec<Entry>) {
    for entry in source.list_dir(dir) {
        let path = dir.join(&entry.name);
        let relative = path.strip_prefix(base).unwrap().to_string();
        let data = match entry.node.kind {
            Kind::File => source.read(&path),
            Kind::Symlink => entry.node.target.clone().unwrap().into_bytes(),
            Kind::Dir => Vec::new(),
        };
        out.push(Entry {
            path: relative,
            kind: entry.node.kind,
            data,
        });
        if entry.node.kind == Kind::Dir {
            walk(source, base, &path, out);
        }
    }
}

/// Takes a manual checkpoint as `test`.
#[track_caller]
pub fn checkpoint<S: Sql>(vfs: &Vfs<'_, S>) -> CheckpointId {
    vfs.create_checkpoint(NewCheckpoint {
        actor: "test",
        name: None,
        note: None,
    })
    .unwrap()
    .id
}

/// An automatic checkpoint before `operation`, under the default retention.
#[track_caller]
pub fn auto(vfs: &Vfs<'_, SqliteDb>, operation: Operation, scope: Scope<'_>) -> Checkpoint {
    vfs.auto_checkpoint(
        Before {
            actor: "test",
            operation: &operation,
            note: None,
            scope,
        },
        &Retention::default(),
    )
    .unwrap()
    .checkpoint
}

/// Everything below `dir` in a checkpoint, as [`tree`] lists the live one.
pub fn snapshot_tree(snapshot: &Snapshot<'_, '_, SqliteDb>, dir: &str) -> Vec<Entry> {
    tree(snapshot, dir)
}

/// Forgets the change log, as pruning does once it is old enough.
pub fn prune_log(db: &SqliteDb) {
    db.execute("DELETE FROM changes", params![]).unwrap();
    db.execute(
        "UPDATE meta SET value = (SELECT value FROM meta WHERE key = 'revision') \
         WHERE key = 'changes_pruned'",
        params![],
    )
    .unwrap();
}

/// The permission bits of each of `paths` (not following symlinks).
pub fn modes(vfs: &Vfs<'_, SqliteDb>, paths: &[&str]) -> Vec<u32> {
    paths
        .iter()
        .map(|path| vfs.stat(&p(path), false).unwrap().1.mode)
        .collect()
}
