//! Checkpoints: the workspace pinned at a revision, by its metadata alone.
//!
//! Content is already stored as shared, content-addressed chunks, so a
//! checkpoint needs no bytes of its own: it is a copy of the directory
//! entries and nodes as they are (`checkpoint_entries`, keyed like
//! `dirents`) plus each file's chunk list (`checkpoint_chunks`, like
//! `file_chunks`). Taking one is three `INSERT ... SELECT` statements that
//! read the live tables in key order and write the copies in key order: its
//! cost grows with the number of paths, never with their bytes. The
//! `checkpoint_chunks` rows are references like any other: a chunk is
//! collected when the last file, staged upload, checkpoint or staged import
//! naming it goes, so content only checkpoints hold still counts against
//! `max_stored_bytes` (and is reported apart, [`crate::Usage`]).
//!
//! A *partial* checkpoint pins only some roots (the before-image of the
//! paths one file-tool call will touch, "did not exist" included), at a
//! cost that grows with those subtrees. A whole-workspace one has the single
//! root `/`.
//!
//! *Manual* checkpoints are asked for and kept until deleted; *automatic*
//! ones are taken before an [`Operation`] and pruned by the [`Retention`]
//! policy each time one is added. An automatic whole-workspace checkpoint is
//! not taken again when one already pins the current revision: the newest
//! such checkpoint is reused, so read-only commands cost nothing. (A partial
//! one is always taken: it is cheap, and it names its operation for undo.)
//!
//! The rest of the feature lives in the submodules: reading a point in time
//! (`side`), [`diff`](Vfs::diff), [`restore`](Vfs::restore) and
//! [`undo`](Vfs::undo), and the fork stream ([`Vfs::export_page`],
//! [`Vfs::import_page`]). `CHECKPOINTS.md` in this crate gives the design
//! as a whole.

mod diff;
mod fork;
mod restore;
mod retention;
mod side;

use std::fmt;

use serde::{Serialize, Serializer};
use stead_sql::{params, Row, Sql};

use crate::error::{Result, VfsError};
use crate::node::{Kind, Node};
use crate::path::VPath;
use crate::resolve::Resolved;
use crate::{json_ids, Vfs};

pub use diff::{
    Diff, DiffEntry, DiffMethod, DiffOptions, EntryInfo, Oversize, PathChange, Point, PointInfo,
    TextDiff, TextOptions,
};
pub(crate) use fork::shared_chunks;
pub use fork::{
    ExportCursor, ExportPage, ImportProgress, ImportStatus, FORK_FORMAT, MAX_FORK_FRAME,
};
pub use restore::{Restored, Undone};
pub use retention::Retention;
pub use side::Snapshot;

/// Longest checkpoint name, in bytes.
pub const MAX_CHECKPOINT_NAME: usize = 128;
/// Longest checkpoint note, in bytes.
pub const MAX_CHECKPOINT_NOTE: usize = 4096;

/// Identifies a checkpoint. Ids are never reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct CheckpointId(pub i64);

impl fmt::Display for CheckpointId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Why a checkpoint exists, which decides how long it is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckpointKind {
    /// Asked for (`POST /checkpoints`, a script): kept until deleted.
    Manual,
    /// Taken before an operation: kept by the [`Retention`] policy.
    Automatic,
}

impl CheckpointKind {
    fn to_db(self) -> &'static str {
        match self {
            CheckpointKind::Manual => "manual",
            CheckpointKind::Automatic => "automatic",
        }
    }

    fn from_db(value: &str) -> Result<Self> {
        match value {
            "manual" => Ok(CheckpointKind::Manual),
            "automatic" => Ok(CheckpointKind::Automatic),
            other => Err(VfsError::Corrupt(format!(
                "unknown checkpoint kind {other}"
            ))),
        }
    }
}

/// The operation an automatic checkpoint was taken before, so an undo can
/// say what it took back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operation {
    /// A light-shell command.
    Exec,
    /// A command on the computer (the container).
    Computer,
    /// A file tool call, by tool name (`write`, `edit`, `rm`, ...).
    Tool(String),
    /// A restore of a checkpoint.
    Restore,
    /// An undo.
    Undo,
    /// A fork into a new agent (the checkpoint the fork copies).
    Fork,
}

impl Operation {
    /// The operation as stored and shown: `exec`, `computer`, `tool:<name>`,
    /// `restore`, `undo`, `fork`.
    pub fn to_text(&self) -> String {
        match self {
            Operation::Exec => "exec".into(),
            Operation::Computer => "computer".into(),
            Operation::Tool(name) => format!("tool:{name}"),
            Operation::Restore => "restore".into(),
            Operation::Undo => "undo".into(),
            Operation::Fork => "fork".into(),
        }
    }

    fn from_text(value: &str) -> Result<Self> {
        Ok(match value {
            "exec" => Operation::Exec,
            "computer" => Operation::Computer,
            "restore" => Operation::Restore,
            "undo" => Operation::Undo,
            "fork" => Operation::Fork,
            other => match other.strip_prefix("tool:") {
                Some(name) => Operation::Tool(name.to_string()),
                None => return Err(VfsError::Corrupt(format!("unknown operation {other}"))),
            },
        })
    }
}

impl Serialize for Operation {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_text())
    }
}

/// One checkpoint, as listed and shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Checkpoint {
    pub id: CheckpointId,
    pub kind: CheckpointKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Who made it (`admin`, `token:<id>`, as the audit log names callers).
    pub actor: String,
    /// For an automatic checkpoint, the operation it was taken before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation: Option<Operation>,
    /// Whether it pins the whole workspace; otherwise only `roots`.
    pub whole: bool,
    /// The real paths it pins (`["/"]` for the whole workspace).
    pub roots: Vec<String>,
    /// The workspace revision it pins.
    pub revision: i64,
    /// When it was taken, milliseconds since the Unix epoch.
    pub created_ms: i64,
    /// What it pins (below its roots, the roots included; the workspace
    /// root is not counted as a directory).
    pub files: u64,
    pub directories: u64,
    pub symlinks: u64,
    /// Sum of the sizes of the files it pins.
    pub bytes: u64,
    /// Whether an undo has restored it (the next undo goes further back).
    pub undone: bool,
}

/// What a checkpoint pins.
#[derive(Debug, Clone, Copy)]
pub enum Scope<'a> {
    /// The whole workspace.
    Whole,
    /// The before-image of these paths, as an operation on them would see
    /// them: each one's real path (the symlink itself and, if it is one,
    /// what it points to) and its whole subtree, or the fact that it does
    /// not exist. A path that cannot be walked (a file in the middle, a
    /// symlink loop) is skipped: an operation through it fails too.
    Paths(&'a [VPath]),
}

/// A manual checkpoint to take.
#[derive(Debug, Clone, Copy)]
pub struct NewCheckpoint<'a> {
    pub actor: &'a str,
    /// Unique among checkpoints; 1-128 bytes, no control characters, and not
    /// all digits (so an id and a name can never be mistaken for each other).
    pub name: Option<&'a str>,
    /// Free text, up to 4 KiB.
    pub note: Option<&'a str>,
}

/// An automatic checkpoint to take before an operation.
#[derive(Debug, Clone, Copy)]
pub struct Before<'a> {
    pub actor: &'a str,
    pub operation: &'a Operation,
    /// Free text, such as the command about to run (up to 4 KiB).
    pub note: Option<&'a str>,
    pub scope: Scope<'a>,
}

/// The outcome of [`Vfs::auto_checkpoint`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AutoCheckpoint {
    pub checkpoint: Checkpoint,
    /// Whether an existing checkpoint of the current revision was reused
    /// instead of taking a new one.
    pub reused: bool,
    /// Automatic checkpoints the retention policy deleted.
    pub pruned: Vec<CheckpointId>,
}

/// The outcome of [`Vfs::take_auto_checkpoint`]: [`AutoCheckpoint`] with
/// the checkpoint's id only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TakenCheckpoint {
    pub id: CheckpointId,
    pub reused: bool,
    pub pruned: Vec<CheckpointId>,
}

/// A root of a partial checkpoint: its real path and the node there
/// (`None`: missing).
type Root = (VPath, Option<Node>);

const CHECKPOINT_COLUMNS: &str = "id, kind, name, note, actor, operation, whole, revision, \
     created_ms, files, directories, symlinks, bytes, undone";

impl<S: Sql> Vfs<'_, S> {
    /// Takes a manual checkpoint of the whole workspace.
    pub fn create_checkpoint(&self, new: NewCheckpoint<'_>) -> Result<Checkpoint> {
        if let Some(name) = new.name {
            check_name(name)?;
        }
        check_note(new.note)?;
        let id = self.db.transaction(|| {
            if let Some(name) = new.name {
                if self.find_named(name)?.is_some() {
                    return Err(VfsError::CheckpointExists {
                        name: name.to_string(),
                    });
                }
            }
            self.pin(CheckpointKind::Manual, new, None, None)
        })?;
        self.checkpoint(id)
    }

    /// Takes an automatic checkpoint before `before.operation`, then applies
    /// `retention`. A whole-workspace one reuses the newest whole-workspace
    /// checkpoint of the current revision when there is one (not undone). A
    /// partial one is always taken: it costs what its paths hold, and it
    /// names the operation an undo would take back.
    pub fn auto_checkpoint(
        &self,
        before: Before<'_>,
        retention: &Retention,
    ) -> Result<AutoCheckpoint> {
        let taken = self.take_auto_checkpoint(before, retention)?;
        Ok(AutoCheckpoint {
            checkpoint: self.checkpoint(taken.id)?,
            reused: taken.reused,
            pruned: taken.pruned,
        })
    }

    /// [`Vfs::auto_checkpoint`] without reading the checkpoint back: what
    /// a request that needs only its id calls (two statements fewer).
    pub fn take_auto_checkpoint(
        &self,
        before: Before<'_>,
        retention: &Retention,
    ) -> Result<TakenCheckpoint> {
        check_note(before.note)?;
        self.db.transaction(|| -> Result<_> {
            let roots = match before.scope {
                Scope::Whole => None,
                Scope::Paths(paths) => self.scope_roots(paths)?,
            };
            if roots.is_none() {
                if let Some(id) = self.current_whole()? {
                    return Ok(TakenCheckpoint {
                        id,
                        reused: true,
                        pruned: Vec::new(),
                    });
                }
            }
            let new = NewCheckpoint {
                actor: before.actor,
                name: None,
                note: before.note,
            };
            let id = self.pin(
                CheckpointKind::Automatic,
                new,
                Some(before.operation),
                roots.as_deref(),
            )?;
            let pruned = self.prune_checkpoints(retention)?;
            Ok(TakenCheckpoint {
                id,
                reused: false,
                pruned,
            })
        })
    }

    /// The newest whole-workspace checkpoint of the current revision that no
    /// undo has restored.
    fn current_whole(&self) -> Result<Option<CheckpointId>> {
        let row = self.db.query_row(
            "SELECT id FROM checkpoints WHERE whole = 1 AND undone = 0 \
             AND revision = (SELECT value FROM meta WHERE key = 'revision') \
             ORDER BY id DESC LIMIT 1",
            params![],
        )?;
        Ok(row.map(|row| row.int(0)).transpose()?.map(CheckpointId))
    }

    /// The real paths `paths` stand for (see [`Scope::Paths`]), outermost
    /// only, each with the node there (so pinning them need not look them
    /// up again); `None` when one of them is the root (the whole
    /// workspace).
    fn scope_roots(&self, paths: &[VPath]) -> Result<Option<Vec<Root>>> {
        let mut found_roots: Vec<Root> = Vec::new();
        for path in paths {
            let Some(found) = self.walkable(path, false)? else {
                continue;
            };
            let is_link =
                matches!(&found, Resolved::Found { node, .. } if node.kind == Kind::Symlink);
            found_roots.push(resolved(found));
            if is_link {
                if let Some(target) = self.walkable(path, true)? {
                    found_roots.push(resolved(target));
                }
            }
        }
        if found_roots.iter().any(|(path, _)| path.is_root()) {
            return Ok(None);
        }
        let outer = diff::outermost(found_roots.iter().map(|(path, _)| path.clone()).collect());
        let mut roots = Vec::with_capacity(outer.len());
        for path in outer {
            if let Some(at) = found_roots.iter().position(|(found, _)| *found == path) {
                roots.push(found_roots.swap_remove(at));
            }
        }
        Ok(Some(roots))
    }

    /// Resolves `path`, or `None` when no operation could pass through it.
    fn walkable(&self, path: &VPath, follow_last: bool) -> Result<Option<Resolved>> {
        match self.resolve(path, follow_last) {
            Ok(resolved) => Ok(Some(resolved)),
            Err(VfsError::NotADirectory { .. } | VfsError::SymlinkLoop { .. }) => Ok(None),
            Err(other) => Err(other),
        }
    }

    /// Records a checkpoint of `roots` (the whole workspace when `None`) as
    /// the tables hold it now. Call inside a transaction.
    fn pin(
        &self,
        kind: CheckpointKind,
        new: NewCheckpoint<'_>,
        operation: Option<&Operation>,
        roots: Option<&[Root]>,
    ) -> Result<CheckpointId> {
        let operation = operation.map(Operation::to_text);
        // Roots that are files, symlinks or missing are counted here, as
        // the checkpoint is inserted; a directory's or the whole
        // workspace's contents are counted from what was copied.
        let counted = roots.and_then(counts_of_leaves);
        let (files, directories, symlinks, bytes) = counted.unwrap_or_default();
        let row = self
            .db
            .query_row(
                "INSERT INTO checkpoints (kind, name, note, actor, operation, whole, revision, \
                 created_ms, files, directories, symlinks, bytes) \
                 VALUES (?, ?, ?, ?, ?, ?, (SELECT value FROM meta WHERE key = 'revision'), \
                 ?, ?, ?, ?, ?) RETURNING id",
                params![
                    kind.to_db(),
                    new.name,
                    new.note,
                    new.actor,
                    operation.as_deref(),
                    roots.is_none(),
                    self.now_ms,
                    files,
                    directories,
                    symlinks,
                    bytes
                ],
            )?
            .ok_or_else(|| VfsError::Corrupt("checkpoint insert returned no id".into()))?;
        let id = row.int(0)?;
        match roots {
            None => self.pin_whole(id)?,
            Some(roots) => self.pin_roots(id, roots, counted.is_some())?,
        }
        Ok(CheckpointId(id))
    }

    fn pin_whole(&self, id: i64) -> Result<()> {
        self.db.execute(
            "INSERT INTO checkpoint_roots (checkpoint, path, ino, kind, mode, size, mtime, target, rev) \
             SELECT ?, '/', ino, kind, mode, size, mtime, target, rev FROM nodes WHERE ino = 1",
            params![id],
        )?;
        self.db.execute(
            "INSERT INTO checkpoint_entries \
             (checkpoint, parent, name, ino, kind, mode, size, mtime, target, rev) \
             SELECT ?, d.parent, d.name, d.ino, n.kind, n.mode, n.size, n.mtime, n.target, n.rev \
             FROM dirents d JOIN nodes n ON n.ino = d.ino",
            params![id],
        )?;
        self.db.execute(
            "INSERT INTO checkpoint_chunks (checkpoint, ino, idx, chunk) \
             SELECT ?, ino, idx, chunk FROM file_chunks",
            params![id],
        )?;
        // The counters the usage report keeps, without a second scan of
        // what was just copied.
        self.db.execute(
            "UPDATE checkpoints SET (files, directories, symlinks, bytes) = \
             (SELECT COALESCE(SUM(kind = 1), 0), COALESCE(SUM(kind = 2), 0) - 1, \
              COALESCE(SUM(kind = 3), 0), COALESCE(SUM(CASE WHEN kind = 1 THEN size END), 0) \
              FROM nodes) WHERE id = ?",
            params![id],
        )?;
        Ok(())
    }

    /// Copies `roots` (and what their directories hold) into checkpoint
    /// `id`; `counted`: its counters were set as it was inserted.
    fn pin_roots(&self, id: i64, roots: &[Root], counted: bool) -> Result<()> {
        for (root, node) in roots {
            self.db.execute(
                "INSERT INTO checkpoint_roots (checkpoint, path, ino, kind, mode, size, mtime, target, rev) \
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                params![
                    id,
                    root.as_str(),
                    node.as_ref().map(|n| n.ino),
                    node.as_ref().map(|n| n.kind.to_db()),
                    node.as_ref().map(|n| n.mode),
                    node.as_ref().map(|n| n.size as i64),
                    node.as_ref().map(|n| n.mtime),
                    node.as_ref().and_then(|n| n.target.as_deref()),
                    node.as_ref().map(|n| n.rev)
                ],
            )?;
            if let Some(node) = node.as_ref().filter(|n| n.kind == Kind::Dir) {
                self.db.execute(
                    "WITH RECURSIVE sub(ino) AS (SELECT ? UNION ALL \
                     SELECT d.ino FROM dirents d JOIN sub ON d.parent = sub.ino) \
                     INSERT INTO checkpoint_entries \
                     (checkpoint, parent, name, ino, kind, mode, size, mtime, target, rev) \
                     SELECT ?, d.parent, d.name, d.ino, n.kind, n.mode, n.size, n.mtime, n.target, n.rev \
                     FROM sub JOIN dirents d ON d.parent = sub.ino JOIN nodes n ON n.ino = d.ino",
                    params![node.ino, id],
                )?;
            }
        }
        let holds = |kind: Kind| {
            roots
                .iter()
                .any(|(_, n)| n.as_ref().is_some_and(|n| n.kind == kind))
        };
        if holds(Kind::Dir) {
            self.db.execute(
                "INSERT INTO checkpoint_chunks (checkpoint, ino, idx, chunk) \
                 SELECT ?, f.ino, f.idx, f.chunk FROM checkpoint_entries e \
                 JOIN file_chunks f ON f.ino = e.ino WHERE e.checkpoint = ? AND e.kind = 1 \
                 UNION ALL SELECT ?, f.ino, f.idx, f.chunk FROM checkpoint_roots r \
                 JOIN file_chunks f ON f.ino = r.ino WHERE r.checkpoint = ? AND r.kind = 1",
                params![id, id, id, id],
            )?;
        } else if holds(Kind::File) {
            // No directory: the root files' chunks are all there is.
            self.db.execute(
                "INSERT INTO checkpoint_chunks (checkpoint, ino, idx, chunk) \
                 SELECT ?, f.ino, f.idx, f.chunk FROM checkpoint_roots r \
                 JOIN file_chunks f ON f.ino = r.ino WHERE r.checkpoint = ? AND r.kind = 1",
                params![id, id],
            )?;
        }
        if !counted {
            self.db.execute(
                "UPDATE checkpoints SET (files, directories, symlinks, bytes) = \
                 (SELECT COALESCE(SUM(kind = 1), 0), COALESCE(SUM(kind = 2), 0), \
                  COALESCE(SUM(kind = 3), 0), COALESCE(SUM(CASE WHEN kind = 1 THEN size END), 0) \
                  FROM (SELECT kind, size FROM checkpoint_entries WHERE checkpoint = ? \
                        UNION ALL SELECT kind, size FROM checkpoint_roots \
                        WHERE checkpoint = ? AND kind IS NOT NULL)) WHERE id = ?",
                params![id, id, id],
            )?;
        }
        Ok(())
    }

    /// The checkpoint `id`.
    pub fn checkpoint(&self, id: CheckpointId) -> Result<Checkpoint> {
        let row = self
            .db
            .query_row(
                &format!("SELECT {CHECKPOINT_COLUMNS} FROM checkpoints WHERE id = ?"),
                params![id.0],
            )?
            .ok_or_else(|| VfsError::UnknownCheckpoint {
                checkpoint: id.to_string(),
            })?;
        let mut found = self.with_roots(vec![row])?;
        Ok(found.remove(0))
    }

    /// The checkpoint named `name`.
    pub fn checkpoint_named(&self, name: &str) -> Result<Checkpoint> {
        let id = self
            .find_named(name)?
            .ok_or_else(|| VfsError::UnknownCheckpoint {
                checkpoint: name.to_string(),
            })?;
        self.checkpoint(id)
    }

    fn find_named(&self, name: &str) -> Result<Option<CheckpointId>> {
        let row = self
            .db
            .query_row("SELECT id FROM checkpoints WHERE name = ?", params![name])?;
        Ok(row.map(|row| row.int(0)).transpose()?.map(CheckpointId))
    }

    /// Checkpoints newest first: those older than `before` (all when `None`),
    /// at most `limit`.
    pub fn checkpoints(
        &self,
        before: Option<CheckpointId>,
        limit: usize,
    ) -> Result<Vec<Checkpoint>> {
        let rows = self.db.query(
            &format!(
                "SELECT {CHECKPOINT_COLUMNS} FROM checkpoints WHERE id < ? ORDER BY id DESC LIMIT ?"
            ),
            params![before.map_or(i64::MAX, |id| id.0), limit as i64],
        )?;
        self.with_roots(rows)
    }

    /// Reads checkpoint rows, with their roots fetched in one statement.
    fn with_roots(&self, rows: Vec<Row>) -> Result<Vec<Checkpoint>> {
        let ids: Vec<i64> = rows
            .iter()
            .map(|row| row.int(0))
            .collect::<Result<_, _>>()?;
        let mut roots: std::collections::HashMap<i64, Vec<String>> = Default::default();
        for row in self.db.query(
            "SELECT checkpoint, path FROM checkpoint_roots \
             WHERE checkpoint IN (SELECT value FROM json_each(?)) ORDER BY checkpoint, path",
            params![json_ids(&ids).as_str()],
        )? {
            roots
                .entry(row.int(0)?)
                .or_default()
                .push(row.text(1)?.to_string());
        }
        rows.iter()
            .map(|row| {
                let id = row.int(0)?;
                Ok(Checkpoint {
                    id: CheckpointId(id),
                    kind: CheckpointKind::from_db(row.text(1)?)?,
                    name: row.opt_text(2)?.map(str::to_string),
                    note: row.opt_text(3)?.map(str::to_string),
                    actor: row.text(4)?.to_string(),
                    operation: row.opt_text(5)?.map(Operation::from_text).transpose()?,
                    whole: row.int(6)? != 0,
                    roots: roots.remove(&id).unwrap_or_default(),
                    revision: row.int(7)?,
                    created_ms: row.int(8)?,
                    files: row.int(9)? as u64,
                    directories: row.int(10)? as u64,
                    symlinks: row.int(11)? as u64,
                    bytes: row.int(12)? as u64,
                    undone: row.int(13)? != 0,
                })
            })
            .collect()
    }

    /// Deletes checkpoint `id`, and the content only it held.
    pub fn delete_checkpoint(&self, id: CheckpointId) -> Result<()> {
        self.db.transaction(|| {
            if !self.drop_checkpoint(id)? {
                return Err(VfsError::UnknownCheckpoint {
                    checkpoint: id.to_string(),
                });
            }
            Ok(())
        })
    }

    /// Deletes checkpoint `id` if it exists; returns whether it did. Call
    /// inside a transaction.
    fn drop_checkpoint(&self, id: CheckpointId) -> Result<bool> {
        let gone = self
            .db
            .query_row(
                "DELETE FROM checkpoints WHERE id = ? RETURNING id",
                params![id.0],
            )?
            .is_some();
        if !gone {
            return Ok(false);
        }
        for table in ["checkpoint_roots", "checkpoint_entries"] {
            self.db.execute(
                &format!("DELETE FROM {table} WHERE checkpoint = ?"),
                params![id.0],
            )?;
        }
        let chunks = self
            .db
            .query(
                "DELETE FROM checkpoint_chunks WHERE checkpoint = ? RETURNING chunk",
                params![id.0],
            )?
            .iter()
            .map(|row| row.int(0))
            .collect::<Result<Vec<_>, _>>()?;
        self.collect(&chunks)?;
        Ok(true)
    }
}

/// The real path a resolution ended at: the node's, or where the first
/// missing name would be created.
/// The real path a resolution reached, and the node there (`None`:
/// missing).
fn resolved(resolved: Resolved) -> Root {
    match resolved {
        Resolved::Found { path, node, .. } => (path, Some(node)),
        Resolved::Missing {
            parent_path, name, ..
        } => (parent_path.join(&name), None),
    }
}

fn check_name(name: &str) -> Result<()> {
    let invalid = |reason| {
        Err(VfsError::InvalidCheckpoint {
            field: "name",
            reason,
        })
    };
    if name.is_empty() || name.len() > MAX_CHECKPOINT_NAME {
        return invalid("must be between 1 and 128 bytes long");
    }
    if name.chars().any(char::is_control) {
        return invalid("must not contain control characters");
    }
    if name.bytes().all(|b| b.is_ascii_digit()) {
        return invalid("must not be all digits (ids are)");
    }
    Ok(())
}

fn check_note(note: Option<&str>) -> Result<()> {
    match note {
        Some(note) if note.len() > MAX_CHECKPOINT_NOTE => Err(VfsError::InvalidCheckpoint {
            field: "note",
            reason: "must be at most 4096 bytes",
        }),
        Some(note) if note.contains('\0') => Err(VfsError::InvalidCheckpoint {
            field: "note",
            reason: "must not contain NUL",
        }),
        _ => Ok(()),
    }
}

/// The counters (files, directories, symlinks, bytes) of a checkpoint of
/// `roots`, when none of them is a directory (whose contents only the copy
/// counts).
fn counts_of_leaves(roots: &[Root]) -> Option<(i64, i64, i64, i64)> {
    let mut counts = (0, 0, 0, 0);
    for node in roots.iter().filter_map(|(_, node)| node.as_ref()) {
        match node.kind {
            Kind::Dir => return None,
            Kind::File => {
                counts.0 += 1;
                counts.3 += node.size as i64;
            }
            Kind::Symlink => counts.2 += 1,
        }
    }
    Some(counts)
}
