//! Model-based property test: any sequence of filesystem operations on the
//! real [`Vfs`] (over rusqlite) behaves like a small in-memory filesystem.
//!
//! Why a model: the unit tests in `vfs.rs` pin the cases someone thought
//! of; the interesting bugs live in the combinations nobody did (a rename
//! through a symlink onto an empty directory, a copy over a dangling link,
//! an append after a failed edit). The model is a flat map from real path
//! to node, written from the documented semantics (README "Semantics chosen
//! where POSIX leaves room", `ops.rs`, `resolve.rs`, `path.rs`): paths are
//! resolved one name at a time, symlinks chroot-style with at most 40
//! follows, every operation is all-or-nothing. It knows nothing of inodes,
//! chunks or SQL, so a disagreement is either a storage bug or a semantic
//! one, and each is decided on its merits.
//!
//! After every step the outcomes (value, or error code) must agree, a failed
//! step must leave every table byte-for-byte unchanged, and periodically
//! (and at the end) the whole tree and the storage invariants are checked.
//! Paths come from a tiny alphabet (three names, depth <= 3) so operations
//! collide often.

mod common;

use std::collections::{BTreeMap, VecDeque};

use common::*;
use proptest::prelude::*;
use proptest::test_runner::Config;
use stead_sql::{params, Sql, SqliteDb};
use stead_vfs::edit::Replacement;
use stead_vfs::{
    Before, CheckpointId, DiffOptions, Kind, NewCheckpoint, Operation, PathChange, Point,
    Retention, Scope, Snapshot, VPath, Vfs, WriteOptions, CHUNK_SIZE,
};

/// Symlinks one resolution may follow (Linux's limit, as documented).
const MAX_FOLLOWS: usize = 40;

// ---------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
enum MNode {
    File { data: Vec<u8>, mode: u32 },
    Dir { mode: u32 },
    Link { target: String },
}

impl MNode {
    fn kind(&self) -> Kind {
        match self {
            MNode::File { .. } => Kind::File,
            MNode::Dir { .. } => Kind::Dir,
            MNode::Link { .. } => Kind::Symlink,
        }
    }

    fn mode(&self) -> u32 {
        match self {
            MNode::File { mode, .. } | MNode::Dir { mode } => *mode,
            MNode::Link { .. } => 0o777,
        }
    }
}

/// Where a resolution ended (the model's twin of the VFS's `Resolved`).
enum MRes {
    Found(String),
    Missing {
        parent: String,
        name: String,
        last: bool,
    },
}

type Code = &'static str;

/// A filesystem as a map from real absolute path to node; `/` always exists.
#[derive(Debug, Clone)]
struct Model {
    nodes: BTreeMap<String, MNode>,
}

fn join(dir: &str, name: &str) -> String {
    if dir == "/" {
        format!("/{name}")
    } else {
        format!("{dir}/{name}")
    }
}

fn parent_of(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(cut) => &path[..cut],
    }
}

fn components(path: &str) -> Vec<String> {
    path.split('/')
        .filter(|c| !c.is_empty())
        .map(str::to_string)
        .collect()
}

/// Whether `path` is `base` or below it.
fn is_under(path: &str, base: &str) -> bool {
    base == "/" || path == base || path.starts_with(&format!("{base}/"))
}

fn bits(mode: u32) -> u32 {
    mode & 0o7777
}

impl Model {
    fn new() -> Self {
        let mut nodes = BTreeMap::new();
        nodes.insert("/".to_string(), MNode::Dir { mode: 0o755 });
        Model { nodes }
    }

    fn get(&self, path: &str) -> &MNode {
        &self.nodes[path]
    }

    /// Walks `path` name by name; a symlink met on the way (or at the end,
    /// when `follow_last`) is replaced by its target, absolute targets from
    /// the root and `..` stopping there.
    fn resolve(&self, path: &VPath, follow_last: bool) -> Result<MRes, Code> {
        let mut todo: VecDeque<String> = components(path.as_str()).into();
        let mut at = "/".to_string();
        let mut follows = 0;
        while let Some(name) = todo.pop_front() {
            if !matches!(self.get(&at), MNode::Dir { .. }) {
                return Err("ENOTDIR");
            }
            let last = todo.is_empty();
            let child = join(&at, &name);
            match self.nodes.get(&child) {
                None => {
                    return Ok(MRes::Missing {
                        parent: at,
                        name,
                        last,
                    })
                }
                Some(MNode::Link { target }) if !last || follow_last => {
                    follows += 1;
                    if follows > MAX_FOLLOWS {
                        return Err("ELOOP");
                    }
                    let mut parts = if target.starts_with('/') {
                        Vec::new()
                    } else {
                        components(&at)
                    };
                    for part in target.split('/') {
                        match part {
                            "" | "." => {}
                            ".." => {
                                parts.pop();
                            }
                            name => parts.push(name.to_string()),
                        }
                    }
                    for part in parts.into_iter().rev() {
                        todo.push_front(part);
                    }
                    at = "/".to_string();
                }
                Some(_) => at = child,
            }
        }
        Ok(MRes::Found(at))
    }

    fn existing(&self, path: &VPath, follow: bool) -> Result<String, Code> {
        match self.resolve(path, follow)? {
            MRes::Found(real) => Ok(real),
            MRes::Missing { .. } => Err("ENOENT"),
        }
    }

    /// `mkdir -p`: the directory at `path`, made with its missing parents.
    fn ensure_dir(&mut self, path: &VPath) -> Result<String, Code> {
        loop {
            match self.resolve(path, true)? {
                MRes::Found(real) => {
                    return match self.get(&real) {
                        MNode::Dir { .. } => Ok(real),
                        _ => Err("ENOTDIR"),
                    }
                }
                MRes::Missing { parent, name, .. } => {
                    self.nodes
                        .insert(join(&parent, &name), MNode::Dir { mode: 0o755 });
                }
            }
        }
    }

    fn subtree(&self, base: &str) -> Vec<String> {
        self.nodes
            .keys()
            .filter(|path| is_under(path, base))
            .cloned()
            .collect()
    }

    fn remove_tree(&mut self, base: &str) {
        for path in self.subtree(base) {
            self.nodes.remove(&path);
        }
    }

    fn has_children(&self, dir: &str) -> bool {
        self.nodes
            .keys()
            .any(|path| path != dir && is_under(path, dir))
    }

    /// Finds or creates the file `path` names, for write and append.
    fn prepare_file(
        &mut self,
        path: &VPath,
        mode: Option<u32>,
        parents: bool,
    ) -> Result<(String, bool), Code> {
        let mut resolved = self.resolve(path, true)?;
        if let MRes::Missing { last: false, .. } = resolved {
            if let (true, Some(parent)) = (parents, path.parent()) {
                self.ensure_dir(&parent)?;
                resolved = self.resolve(path, true)?;
            }
        }
        match resolved {
            MRes::Found(real) => match self.nodes.get_mut(&real).unwrap() {
                MNode::File { mode: old, .. } => {
                    if let Some(mode) = mode {
                        *old = bits(mode);
                    }
                    Ok((real, false))
                }
                _ => Err("EISDIR"),
            },
            MRes::Missing {
                parent,
                name,
                last: true,
            } => {
                let real = join(&parent, &name);
                let mode = mode.map_or(0o644, bits);
                self.nodes.insert(
                    real.clone(),
                    MNode::File {
                        data: Vec::new(),
                        mode,
                    },
                );
                Ok((real, true))
            }
            MRes::Missing { .. } => Err("ENOENT"),
        }
    }

    fn file_data(&mut self, real: &str) -> &mut Vec<u8> {
        match self.nodes.get_mut(real) {
            Some(MNode::File { data, .. }) => data,
            other => panic!("{real} is not a file: {other:?}"),
        }
    }

    /// Where a move or copy lands: its real path and what is there now.
    fn destination(&self, to: &VPath) -> Result<(String, Option<MNode>), Code> {
        match self.resolve(to, false)? {
            MRes::Found(real) => {
                if real == "/" {
                    return Err("EBUSY");
                }
                let node = self.get(&real).clone();
                Ok((real, Some(node)))
            }
            MRes::Missing {
                parent,
                name,
                last: true,
            } => Ok((join(&parent, &name), None)),
            MRes::Missing { .. } => Err("ENOENT"),
        }
    }

    /// Copies (or moves) the subtree at `from` to `to`.
    fn graft(&mut self, from: &str, to: &str, keep_source: bool) {
        let moved: Vec<(String, MNode)> = self
            .subtree(from)
            .into_iter()
            .map(|path| {
                let node = self.nodes[&path].clone();
                let rest = &path[from.len()..];
                (format!("{to}{rest}"), node)
            })
            .collect();
        if !keep_source {
            self.remove_tree(from);
        }
        self.nodes.extend(moved);
    }

    fn apply(&mut self, op: &Op) -> Result<Out, Code> {
        match op {
            Op::Write {
                path,
                data,
                mode,
                parents,
            } => {
                let data = data.bytes();
                let (real, created) = self.prepare_file(&vp(path), *mode, *parents)?;
                *self.file_data(&real) = data;
                let size = self.file_data(&real).len() as u64;
                Ok(Out::Written {
                    path: real,
                    size,
                    created,
                })
            }
            Op::Append {
                path,
                data,
                parents,
            } => {
                let (real, created) = self.prepare_file(&vp(path), None, *parents)?;
                self.file_data(&real).extend(data.bytes());
                let size = self.file_data(&real).len() as u64;
                Ok(Out::Written {
                    path: real,
                    size,
                    created,
                })
            }
            Op::Mkdir {
                path,
                parents,
                mode,
            } => {
                let path = vp(path);
                if *parents {
                    let real = self.ensure_dir(&path)?;
                    if let Some(mode) = mode {
                        self.nodes.insert(real, MNode::Dir { mode: bits(*mode) });
                    }
                    return Ok(Out::Unit);
                }
                let mode = mode.map_or(0o755, bits);
                self.create_new(&path, MNode::Dir { mode })?;
                Ok(Out::Unit)
            }
            Op::Symlink { target, path } => {
                self.create_new(
                    &vp(path),
                    MNode::Link {
                        target: target.clone(),
                    },
                )?;
                Ok(Out::Unit)
            }
            Op::Remove { path, recursive } => {
                let path = vp(path);
                if path.is_root() {
                    return Err("EBUSY");
                }
                let real = self.existing(&path, false)?;
                if matches!(self.get(&real), MNode::Dir { .. })
                    && !recursive
                    && self.has_children(&real)
                {
                    return Err("ENOTEMPTY");
                }
                self.remove_tree(&real);
                Ok(Out::Unit)
            }
            Op::Rename { from, to } => {
                let (from, to) = (vp(from), vp(to));
                if from.is_root() || to.is_root() {
                    return Err("EBUSY");
                }
                let src = self.existing(&from, false)?;
                let (dst, existing) = self.destination(&to)?;
                if dst == src {
                    return Ok(Out::Unit);
                }
                let src_is_dir = matches!(self.get(&src), MNode::Dir { .. });
                if src_is_dir && is_under(&dst, &src) {
                    return Err("EINVAL");
                }
                if let Some(existing) = existing {
                    match (src_is_dir, matches!(existing, MNode::Dir { .. })) {
                        (true, true) if self.has_children(&dst) => return Err("ENOTEMPTY"),
                        (true, false) => return Err("ENOTDIR"),
                        (false, true) => return Err("EISDIR"),
                        _ => {}
                    }
                    self.remove_tree(&dst);
                }
                self.graft(&src, &dst, false);
                Ok(Out::Unit)
            }
            Op::Copy {
                from,
                to,
                recursive,
            } => {
                let src = self.existing(&vp(from), true)?;
                let src_is_dir = matches!(self.get(&src), MNode::Dir { .. });
                if src_is_dir && !recursive {
                    return Err("EISDIR");
                }
                let (dst, existing) = self.destination(&vp(to))?;
                if src_is_dir && is_under(&dst, &src) {
                    return Err("EINVAL");
                }
                match existing {
                    Some(existing) if matches!(existing, MNode::Dir { .. }) || src_is_dir => {
                        return Err("EEXIST")
                    }
                    Some(_) if dst == src => return Ok(Out::Unit),
                    Some(_) => self.remove_tree(&dst),
                    None => {}
                }
                self.graft(&src, &dst, true);
                Ok(Out::Unit)
            }
            Op::Chmod { path, mode } => {
                let real = self.existing(&vp(path), true)?;
                match self.nodes.get_mut(&real).unwrap() {
                    MNode::File { mode: old, .. } | MNode::Dir { mode: old } => *old = bits(*mode),
                    MNode::Link { .. } => unreachable!("a followed path ends at a link"),
                }
                Ok(Out::Unit)
            }
            Op::Edit {
                path,
                old,
                new,
                replace_all,
            } => {
                let real = self.readable_file(&vp(path))?;
                let data = self.file_data(&real).clone();
                let text = std::str::from_utf8(&data).map_err(|_| "EILSEQ")?;
                if old.is_empty() {
                    return Err("EINVAL");
                }
                let count = text.matches(old.as_str()).count();
                if count == 0 {
                    return Err("EDIT_NO_MATCH");
                }
                if count > 1 && !replace_all {
                    return Err("EDIT_AMBIGUOUS");
                }
                let edited = text.replace(old.as_str(), new);
                if edited == text {
                    return Err("EDIT_NO_CHANGE");
                }
                let size = edited.len() as u64;
                *self.file_data(&real) = edited.into_bytes();
                Ok(Out::Edited {
                    path: real,
                    replacements: count,
                    size,
                })
            }
            Op::Read { path } => {
                let real = self.readable_file(&vp(path))?;
                Ok(Out::Bytes(self.file_data(&real).clone()))
            }
            Op::Stat { path, follow } => {
                let real = self.existing(&vp(path), *follow)?;
                let node = self.get(&real);
                let (size, target) = match node {
                    MNode::File { data, .. } => (data.len() as u64, None),
                    MNode::Dir { .. } => (0, None),
                    MNode::Link { target } => (target.len() as u64, Some(target.clone())),
                };
                Ok(Out::Stat {
                    real,
                    kind: node.kind(),
                    mode: node.mode(),
                    size,
                    target,
                })
            }
            Op::Readlink { path } => {
                let real = self.existing(&vp(path), false)?;
                match self.get(&real) {
                    MNode::Link { target } => Ok(Out::Target(target.clone())),
                    _ => Err("EINVAL"),
                }
            }
            Op::List { path } => {
                let real = self.existing(&vp(path), true)?;
                if !matches!(self.get(&real), MNode::Dir { .. }) {
                    return Err("ENOTDIR");
                }
                let entries = self
                    .nodes
                    .iter()
                    .filter(|(p, _)| *p != &real && parent_of(p) == real)
                    .map(|(p, node)| (p.rsplit('/').next().unwrap().to_string(), node.kind()))
                    .collect();
                Ok(Out::List(entries))
            }
        }
    }

    fn readable_file(&self, path: &VPath) -> Result<String, Code> {
        let real = self.existing(path, true)?;
        match self.get(&real) {
            MNode::File { .. } => Ok(real),
            _ => Err("EISDIR"),
        }
    }

    /// Creates a directory or symlink where nothing is (a final symlink is
    /// not followed) and whose parent exists.
    fn create_new(&mut self, path: &VPath, node: MNode) -> Result<(), Code> {
        match self.resolve(path, false)? {
            MRes::Found(_) => Err("EEXIST"),
            MRes::Missing {
                parent,
                name,
                last: true,
            } => {
                self.nodes.insert(join(&parent, &name), node);
                Ok(())
            }
            MRes::Missing { .. } => Err("ENOENT"),
        }
    }
}

// ---------------------------------------------------------------------------
// Operations and their observable outcomes
// ---------------------------------------------------------------------------

/// File contents to write: small texts that edits can find, invalid UTF-8,
/// and one just under a chunk so appends cross a chunk boundary.
#[derive(Debug, Clone, Copy)]
enum Content {
    Text(&'static str),
    Binary,
    NearChunk,
}

impl Content {
    fn bytes(self) -> Vec<u8> {
        match self {
            Content::Text(text) => text.as_bytes().to_vec(),
            Content::Binary => vec![0xff, 0x00, b'a', 0xfe],
            Content::NearChunk => {
                let mut data = b"big\n".repeat(CHUNK_SIZE / 4);
                data.truncate(CHUNK_SIZE - 3);
                data
            }
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    Write {
        path: String,
        data: Content,
        mode: Option<u32>,
        parents: bool,
    },
    Append {
        path: String,
        data: Content,
        parents: bool,
    },
    Mkdir {
        path: String,
        parents: bool,
        mode: Option<u32>,
    },
    Remove {
        path: String,
        recursive: bool,
    },
    Rename {
        from: String,
        to: String,
    },
    Copy {
        from: String,
        to: String,
        recursive: bool,
    },
    Symlink {
        target: String,
        path: String,
    },
    Chmod {
        path: String,
        mode: u32,
    },
    Edit {
        path: String,
        old: String,
        new: String,
        replace_all: bool,
    },
    Read {
        path: String,
    },
    Stat {
        path: String,
        follow: bool,
    },
    Readlink {
        path: String,
    },
    List {
        path: String,
    },
}

/// What an operation returned, in terms both sides can produce.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Out {
    Unit,
    Written {
        path: String,
        size: u64,
        created: bool,
    },
    Edited {
        path: String,
        replacements: usize,
        size: u64,
    },
    Bytes(Vec<u8>),
    Stat {
        real: String,
        kind: Kind,
        mode: u32,
        size: u64,
        target: Option<String>,
    },
    Target(String),
    List(Vec<(String, Kind)>),
}

fn vp(path: &str) -> VPath {
    VPath::parse(path).expect("generated paths are valid")
}

fn run(vfs: &Vfs<'_, SqliteDb>, op: &Op) -> stead_vfs::Result<Out> {
    let opts = |mode: Option<u32>, parents: bool| WriteOptions {
        mode,
        create_parents: parents,
    };
    Ok(match op {
        Op::Write {
            path,
            data,
            mode,
            parents,
        } => {
            let w = vfs.write(&vp(path), &data.bytes(), opts(*mode, *parents))?;
            Out::Written {
                path: w.path,
                size: w.size,
                created: w.created,
            }
        }
        Op::Append {
            path,
            data,
            parents,
        } => {
            let w = vfs.append(&vp(path), &data.bytes(), opts(None, *parents))?;
            Out::Written {
                path: w.path,
                size: w.size,
                created: w.created,
            }
        }
        Op::Mkdir {
            path,
            parents,
            mode,
        } => {
            vfs.mkdir(&vp(path), *parents, *mode)?;
            Out::Unit
        }
        Op::Remove { path, recursive } => {
            vfs.remove(&vp(path), *recursive)?;
            Out::Unit
        }
        Op::Rename { from, to } => {
            vfs.rename(&vp(from), &vp(to))?;
            Out::Unit
        }
        Op::Copy {
            from,
            to,
            recursive,
        } => {
            vfs.copy(&vp(from), &vp(to), *recursive)?;
            Out::Unit
        }
        Op::Symlink { target, path } => {
            vfs.symlink(target, &vp(path))?;
            Out::Unit
        }
        Op::Chmod { path, mode } => {
            vfs.chmod(&vp(path), *mode)?;
            Out::Unit
        }
        Op::Edit {
            path,
            old,
            new,
            replace_all,
        } => {
            let edits = [Replacement {
                old: old.clone(),
                new: new.clone(),
                replace_all: *replace_all,
            }];
            let outcome = vfs.edit(&vp(path), &edits, false)?;
            Out::Edited {
                path: outcome.path,
                replacements: outcome.replacements,
                size: outcome.size,
            }
        }
        Op::Read { path } => Out::Bytes(vfs.read_file(&vp(path))?),
        Op::Stat { path, follow } => {
            let (real, node) = vfs.stat(&vp(path), *follow)?;
            Out::Stat {
                real: real.to_string(),
                kind: node.kind,
                mode: node.mode,
                size: node.size,
                target: node.target,
            }
        }
        Op::Readlink { path } => Out::Target(vfs.readlink(&vp(path))?),
        Op::List { path } => Out::List(
            vfs.list(&vp(path), None, 10_000)?
                .into_iter()
                .map(|e| (e.name, e.node.kind))
                .collect(),
        ),
    })
}

fn mutates(op: &Op) -> bool {
    !matches!(
        op,
        Op::Read { .. } | Op::Stat { .. } | Op::Readlink { .. } | Op::List { .. }
    )
}

// ---------------------------------------------------------------------------
// Whole-state comparison and storage invariants
// ---------------------------------------------------------------------------

/// Every node of the real tree by path, read through the public API.
fn snapshot(vfs: &Vfs<'_, SqliteDb>) -> BTreeMap<String, MNode> {
    let mut out = BTreeMap::new();
    let root = vfs.stat(&VPath::root(), false).unwrap().1;
    out.insert("/".to_string(), MNode::Dir { mode: root.mode });
    for entry in tree(vfs, "/") {
        let path = format!("/{}", entry.path);
        let node = match entry.kind {
            Kind::File => {
                let mode = vfs.stat(&vp(&path), false).unwrap().1.mode;
                MNode::File {
                    data: entry.data,
                    mode,
                }
            }
            Kind::Dir => MNode::Dir {
                mode: vfs.stat(&vp(&path), false).unwrap().1.mode,
            },
            Kind::Symlink => {
                let node = vfs.stat(&vp(&path), false).unwrap().1;
                assert_eq!(node.mode, 0o777, "symlink mode at {path}");
                MNode::Link {
                    target: String::from_utf8(entry.data).unwrap(),
                }
            }
        };
        out.insert(path, node);
    }
    out
}

fn ints(db: &SqliteDb, sql: &str) -> Vec<i64> {
    db.query(sql, params![])
        .unwrap()
        .iter()
        .map(|row| row.int(0).unwrap())
        .collect()
}

fn one(db: &SqliteDb, sql: &str) -> i64 {
    ints(db, sql)[0]
}

/// Storage invariants that hold between any two operations.
fn check_storage(db: &SqliteDb) -> Result<(), String> {
    let empty = |what: &str, sql: &str| -> Result<(), String> {
        let rows = ints(db, sql);
        if rows.is_empty() {
            Ok(())
        } else {
            Err(format!("{what}: {rows:?}"))
        }
    };
    empty(
        "orphan chunks",
        "SELECT id FROM chunks WHERE id NOT IN (SELECT chunk FROM file_chunks) \
         AND id NOT IN (SELECT chunk FROM upload_chunks) \
         AND id NOT IN (SELECT chunk FROM checkpoint_chunks) \
         AND id NOT IN (SELECT chunk FROM import_chunks)",
    )?;
    empty(
        "checkpoint_chunks naming a missing chunk",
        "SELECT chunk FROM checkpoint_chunks WHERE chunk NOT IN (SELECT id FROM chunks)",
    )?;
    empty(
        "checkpoint rows of a missing checkpoint",
        "SELECT checkpoint FROM checkpoint_entries WHERE checkpoint NOT IN (SELECT id FROM checkpoints) \
         UNION SELECT checkpoint FROM checkpoint_chunks WHERE checkpoint NOT IN (SELECT id FROM checkpoints) \
         UNION SELECT checkpoint FROM checkpoint_roots WHERE checkpoint NOT IN (SELECT id FROM checkpoints)",
    )?;
    empty(
        "pinned files whose size is not the sum of their chunks",
        "SELECT e.ino FROM checkpoint_entries e WHERE e.kind = 1 AND e.size != \
         (SELECT COALESCE(SUM(c.size), 0) FROM checkpoint_chunks k JOIN chunks c ON c.id = k.chunk \
          WHERE k.checkpoint = e.checkpoint AND k.ino = e.ino)",
    )?;
    empty(
        "file_chunks naming a missing chunk",
        "SELECT chunk FROM file_chunks WHERE chunk NOT IN (SELECT id FROM chunks)",
    )?;
    empty(
        "file_chunks of a missing or non-file node",
        "SELECT ino FROM file_chunks WHERE ino NOT IN (SELECT ino FROM nodes WHERE kind = 1)",
    )?;
    empty(
        "dirents naming a missing node",
        "SELECT ino FROM dirents WHERE ino NOT IN (SELECT ino FROM nodes)",
    )?;
    empty(
        "dirents in a missing or non-directory parent",
        "SELECT parent FROM dirents WHERE parent NOT IN (SELECT ino FROM nodes WHERE kind = 2)",
    )?;
    empty(
        "nodes not named exactly once (or a named root)",
        "SELECT n.ino FROM nodes n WHERE (SELECT COUNT(*) FROM dirents d WHERE d.ino = n.ino) \
         != (CASE WHEN n.ino = 1 THEN 0 ELSE 1 END)",
    )?;
    empty(
        "nodes unreachable from the root",
        "WITH RECURSIVE reach(ino) AS (SELECT 1 UNION SELECT d.ino FROM dirents d \
         JOIN reach r ON d.parent = r.ino) SELECT ino FROM nodes WHERE ino NOT IN reach",
    )?;
    empty(
        "chunks whose size is not their length",
        "SELECT id FROM chunks WHERE size != length(data)",
    )?;
    empty(
        "files whose size is not the sum of their chunks",
        "SELECT n.ino FROM nodes n WHERE n.kind = 1 AND n.size != \
         (SELECT COALESCE(SUM(c.size), 0) FROM file_chunks f JOIN chunks c ON c.id = f.chunk \
          WHERE f.ino = n.ino)",
    )?;
    empty(
        "file chunk indexes not 0..n",
        "SELECT ino FROM file_chunks GROUP BY ino HAVING MAX(idx) != COUNT(*) - 1 OR MIN(idx) != 0",
    )?;
    empty(
        "a chunk that is not full but not a file's last",
        &format!(
            "SELECT f.ino FROM file_chunks f JOIN chunks c ON c.id = f.chunk WHERE c.size != {CHUNK_SIZE} \
             AND f.idx < (SELECT MAX(idx) FROM file_chunks g WHERE g.ino = f.ino)"
        ),
    )?;
    empty(
        "an empty chunk held by a file",
        "SELECT f.ino FROM file_chunks f JOIN chunks c ON c.id = f.chunk WHERE c.size = 0",
    )?;
    empty(
        "symlinks without a target, or others with one",
        "SELECT ino FROM nodes WHERE (kind = 3) != (target IS NOT NULL)",
    )?;
    let revision = one(db, "SELECT value FROM meta WHERE key = 'revision'");
    let newest = one(db, "SELECT COALESCE(MAX(rev), 0) FROM changes");
    let node_rev = one(db, "SELECT MAX(rev) FROM nodes");
    if newest > revision || node_rev > revision {
        return Err(format!(
            "revision {revision} behind the change log ({newest}) or a node ({node_rev})"
        ));
    }
    let counted = ints(
        db,
        "SELECT value FROM meta WHERE key IN ('stored_bytes', 'node_count') ORDER BY key",
    );
    if !counted.is_empty() {
        let actual = vec![
            one(db, "SELECT COUNT(*) FROM nodes"),
            one(db, "SELECT COALESCE(SUM(size), 0) FROM chunks"),
        ];
        if counted != actual {
            return Err(format!(
                "usage counters [node_count, stored_bytes] {counted:?}, actual {actual:?}"
            ));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------

const NAMES: [&str; 3] = ["a", "b", "c"];

fn path() -> impl Strategy<Value = String> {
    prop_oneof![
        1 => Just("/".to_string()),
        12 => prop::sample::select(&NAMES[..]).prop_map(|n| format!("/{n}")),
        10 => (prop::sample::select(&NAMES[..]), prop::sample::select(&NAMES[..2]))
            .prop_map(|(a, b)| format!("/{a}/{b}")),
        3 => (
            prop::sample::select(&NAMES[..]),
            prop::sample::select(&NAMES[..2]),
            prop::sample::select(&NAMES[..2])
        )
            .prop_map(|(a, b, c)| format!("/{a}/{b}/{c}")),
    ]
}

fn target() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => path(),
        2 => prop::sample::select(&NAMES[..]).prop_map(str::to_string),
        1 => prop::sample::select(&NAMES[..]).prop_map(|n| format!("../{n}")),
        1 => (prop::sample::select(&NAMES[..]), prop::sample::select(&NAMES[..]))
            .prop_map(|(a, b)| format!("{a}/{b}")),
        1 => prop::sample::select(&[".", "..", "../../..", "/a/../b", "a/"][..])
            .prop_map(str::to_string),
    ]
}

fn content() -> impl Strategy<Value = Content> {
    prop_oneof![
        20 => prop::sample::select(&["", "x", "hello\n", "a a\n", "lo\nhello\n", "b"][..])
            .prop_map(Content::Text),
        2 => Just(Content::Binary),
        1 => Just(Content::NearChunk),
    ]
}

fn mode() -> impl Strategy<Value = u32> {
    prop::sample::select(&[0o600, 0o644, 0o755, 0o700, 0o4755, 0o100644][..])
}

fn op() -> impl Strategy<Value = Op> {
    let text = || prop::sample::select(&["a", "x", "hello", "lo\nh", "", "a a", "\n"][..]);
    prop_oneof![
        6 => (path(), content(), prop::option::weighted(0.2, mode()), prop::bool::weighted(0.8))
            .prop_map(|(path, data, mode, parents)| Op::Write { path, data, mode, parents }),
        3 => (path(), content(), any::<bool>())
            .prop_map(|(path, data, parents)| Op::Append { path, data, parents }),
        4 => (path(), any::<bool>(), prop::option::weighted(0.2, mode()))
            .prop_map(|(path, parents, mode)| Op::Mkdir { path, parents, mode }),
        3 => (path(), any::<bool>()).prop_map(|(path, recursive)| Op::Remove { path, recursive }),
        3 => (path(), path()).prop_map(|(from, to)| Op::Rename { from, to }),
        3 => (path(), path(), prop::bool::weighted(0.7))
            .prop_map(|(from, to, recursive)| Op::Copy { from, to, recursive }),
        3 => (target(), path()).prop_map(|(target, path)| Op::Symlink { target, path }),
        1 => (path(), mode()).prop_map(|(path, mode)| Op::Chmod { path, mode }),
        4 => (path(), text(), text(), any::<bool>()).prop_map(|(path, old, new, replace_all)| {
            Op::Edit { path, old: old.to_string(), new: new.to_string(), replace_all }
        }),
        1 => path().prop_map(|path| Op::Read { path }),
        2 => (path(), any::<bool>()).prop_map(|(path, follow)| Op::Stat { path, follow }),
        1 => path().prop_map(|path| Op::Readlink { path }),
        1 => path().prop_map(|path| Op::List { path }),
    ]
}

// ---------------------------------------------------------------------------
// Checkpoints
// ---------------------------------------------------------------------------

/// One step of a sequence: a filesystem operation or a checkpoint one.
#[derive(Debug, Clone)]
enum Step {
    Fs(Op),
    Checkpoint(CkOp),
}

#[derive(Debug, Clone)]
enum CkOp {
    /// A manual whole-workspace checkpoint.
    Take,
    /// An automatic whole-workspace one (reused while nothing changed).
    TakeBefore,
    /// An automatic one of these paths.
    TakeOf(Vec<String>),
    /// Restores the `which`-th kept checkpoint (modulo), wholly or at paths.
    Restore {
        which: usize,
        paths: Option<Vec<String>>,
    },
    Delete {
        which: usize,
    },
    /// Undo: restore the newest checkpoint not undone whose restore changes
    /// something; mark it and every newer one undone.
    Undo,
    /// Diff between two kept checkpoints (`None`: now).
    Diff {
        from: Option<usize>,
        to: Option<usize>,
    },
}

/// What a checkpoint must hold: its roots and every node below them.
#[derive(Debug, Clone)]
struct MPinned {
    id: CheckpointId,
    roots: Vec<String>,
    nodes: BTreeMap<String, MNode>,
    undone: bool,
}

/// A policy that never prunes, so the model need not.
const KEEP_ALL: Retention = Retention {
    keep_last: u32::MAX,
    keep_within_ms: i64::MAX,
    max_automatic: u32::MAX,
};

fn outermost(mut paths: Vec<String>) -> Vec<String> {
    paths.sort();
    paths.dedup();
    let mut out: Vec<String> = Vec::new();
    for path in paths {
        if !out.iter().any(|outer| is_under(&path, outer)) {
            out.push(path);
        }
    }
    out
}

fn covers(roots: &[String], path: &str) -> bool {
    roots.iter().any(|root| is_under(path, root))
}

impl Model {
    /// The roots a checkpoint of `paths` pins, as `Scope::Paths` documents:
    /// each one's real path (a symlink and what it points to), or where its
    /// first missing name would be; unwalkable paths skipped.
    fn scope_roots(&self, paths: &[String]) -> Vec<String> {
        let at = |res: MRes| match res {
            MRes::Found(real) => real,
            MRes::Missing { parent, name, .. } => join(&parent, &name),
        };
        let mut roots = Vec::new();
        for path in paths {
            let path = vp(path);
            let Ok(found) = self.resolve(&path, false) else {
                continue;
            };
            let is_link =
                matches!(&found, MRes::Found(real) if matches!(self.get(real), MNode::Link { .. }));
            roots.push(at(found));
            if is_link {
                if let Ok(target) = self.resolve(&path, true) {
                    roots.push(at(target));
                }
            }
        }
        if roots.iter().any(|root| root == "/") {
            return vec!["/".into()];
        }
        outermost(roots)
    }

    fn pinned(&self, id: CheckpointId, roots: Vec<String>) -> MPinned {
        let nodes = self
            .nodes
            .iter()
            .filter(|(path, _)| covers(&roots, path))
            .map(|(path, node)| (path.clone(), node.clone()))
            .collect();
        MPinned {
            id,
            roots,
            nodes,
            undone: false,
        }
    }

    /// Restore as documented: each root becomes what the checkpoint holds
    /// there (missing parents made with the checkpoint's modes, else 0755;
    /// a parent that is not a directory refuses), all or nothing.
    fn restore(&mut self, target: &MPinned, paths: Option<&[String]>) -> Result<(), Code> {
        let roots = match paths {
            None => target.roots.clone(),
            Some(paths) => {
                for path in paths {
                    if !covers(&target.roots, path) {
                        return Err("ENOENT");
                    }
                    if !target.nodes.contains_key(path) && !self.nodes.contains_key(path) {
                        return Err("ENOENT");
                    }
                }
                outermost(paths.to_vec())
            }
        };
        for root in &roots {
            if !target.nodes.contains_key(root) {
                self.remove_tree(root);
                continue;
            }
            let parts = components(root);
            let mut at = "/".to_string();
            for part in parts.iter().take(parts.len().saturating_sub(1)) {
                at = join(&at, part);
                match self.nodes.get(&at) {
                    Some(MNode::Dir { .. }) => {}
                    Some(_) => return Err("ENOTDIR"),
                    None => {
                        let mode = match target.nodes.get(&at) {
                            Some(MNode::Dir { mode }) => *mode,
                            _ => 0o755,
                        };
                        self.nodes.insert(at.clone(), MNode::Dir { mode });
                    }
                }
            }
            self.remove_tree(root);
            for (path, node) in &target.nodes {
                if is_under(path, root) {
                    self.nodes.insert(path.clone(), node.clone());
                }
            }
        }
        Ok(())
    }
}

/// The documented diff of two trees, each seen through its roots: per path
/// added, deleted, modified, mode or type changed; a deleted file (non-empty)
/// or symlink paired with an added one of the same content as moved, the
/// same name first, else the first by path.
fn model_diff(
    (old, old_roots): (&BTreeMap<String, MNode>, &[String]),
    (new, new_roots): (&BTreeMap<String, MNode>, &[String]),
) -> Vec<(String, PathChange, Option<String>)> {
    let mut paths: Vec<&String> = old.keys().chain(new.keys()).collect();
    paths.sort();
    paths.dedup();
    let mut raws: Vec<(String, PathChange, Option<&MNode>, Option<&MNode>)> = Vec::new();
    for path in paths {
        if !covers(old_roots, path) || !covers(new_roots, path) {
            continue;
        }
        let (a, b) = (old.get(path), new.get(path));
        let change = match (a, b) {
            (None, None) => continue,
            (None, Some(_)) => PathChange::Added,
            (Some(_), None) => PathChange::Deleted,
            (Some(a), Some(b)) if a.kind() != b.kind() => PathChange::TypeChanged,
            (Some(MNode::File { data: x, mode: m }), Some(MNode::File { data: y, mode: n })) => {
                if x != y {
                    PathChange::Modified
                } else if m != n {
                    PathChange::ModeChanged
                } else {
                    continue;
                }
            }
            (Some(MNode::Link { target: x }), Some(MNode::Link { target: y })) => {
                if x == y {
                    continue;
                }
                PathChange::Modified
            }
            (Some(a), Some(b)) => {
                if a.mode() == b.mode() {
                    continue;
                }
                PathChange::ModeChanged
            }
        };
        raws.push((path.clone(), change, a, b));
    }
    let movable = |node: Option<&MNode>| match node {
        Some(MNode::File { data, .. }) if !data.is_empty() => Some((Kind::File, data.clone())),
        Some(MNode::Link { target }) => Some((Kind::Symlink, target.clone().into_bytes())),
        _ => None,
    };
    let mut deleted: Vec<usize> = raws
        .iter()
        .enumerate()
        .filter(|(_, raw)| raw.1 == PathChange::Deleted && movable(raw.2).is_some())
        .map(|(index, _)| index)
        .collect();
    let mut moved_from: BTreeMap<usize, usize> = BTreeMap::new();
    for (index, raw) in raws.iter().enumerate() {
        if raw.1 != PathChange::Added {
            continue;
        }
        let Some(key) = movable(raw.3) else {
            continue;
        };
        let same: Vec<usize> = deleted
            .iter()
            .copied()
            .filter(|&d| movable(raws[d].2).as_ref() == Some(&key))
            .collect();
        let name = |path: &str| path.rsplit('/').next().unwrap_or("").to_string();
        let pick = same
            .iter()
            .copied()
            .find(|&d| name(&raws[d].0) == name(&raw.0))
            .or_else(|| same.first().copied());
        if let Some(source) = pick {
            deleted.retain(|&d| d != source);
            moved_from.insert(index, source);
        }
    }
    let consumed: Vec<usize> = moved_from.values().copied().collect();
    raws.iter()
        .enumerate()
        .filter(|(index, _)| !consumed.contains(index))
        .map(|(index, raw)| match moved_from.get(&index) {
            Some(&source) => (
                raw.0.clone(),
                PathChange::Moved,
                Some(raws[source].0.clone()),
            ),
            None => (raw.0.clone(), raw.1, None),
        })
        .collect()
}

/// Everything a snapshot holds below `roots`, read through its public API.
fn read_pinned(snapshot: &Snapshot<'_, '_, SqliteDb>, roots: &[String]) -> BTreeMap<String, MNode> {
    fn visit(
        snapshot: &Snapshot<'_, '_, SqliteDb>,
        path: &str,
        node: &stead_vfs::Node,
        out: &mut BTreeMap<String, MNode>,
    ) {
        let vpath = vp(path);
        let mnode = match node.kind {
            Kind::File => MNode::File {
                data: snapshot.read_file(&vpath).unwrap(),
                mode: node.mode,
            },
            Kind::Dir => MNode::Dir { mode: node.mode },
            Kind::Symlink => MNode::Link {
                target: node.target.clone().unwrap(),
            },
        };
        out.insert(path.to_string(), mnode);
        if node.kind == Kind::Dir {
            for entry in snapshot.list(&vpath, None, 100_000).unwrap() {
                visit(snapshot, &join(path, &entry.name), &entry.node, out);
            }
        }
    }
    let mut out = BTreeMap::new();
    for root in roots {
        match snapshot.stat(&vp(root)) {
            Ok(node) => visit(snapshot, root, &node, &mut out),
            Err(error) => assert_eq!(error.code().as_str(), "ENOENT", "{root}: {error}"),
        }
    }
    out
}

/// The checkpoints the model expects to exist, oldest first.
#[derive(Default)]
struct Checkpoints {
    kept: Vec<MPinned>,
}

impl Checkpoints {
    fn pick(&self, which: usize) -> Option<&MPinned> {
        (!self.kept.is_empty()).then(|| &self.kept[which % self.kept.len()])
    }

    /// Runs one checkpoint step on the real workspace and the model.
    fn step(
        &mut self,
        db: &SqliteDb,
        vfs: &Vfs<'_, SqliteDb>,
        model: &mut Model,
        op: &CkOp,
    ) -> Result<(), String> {
        let before = state(db);
        let revision = vfs.revision().unwrap();
        let fail = |e: stead_vfs::VfsError| format!("{e}");
        let parse = |paths: &[String]| paths.iter().map(|path| vp(path)).collect::<Vec<_>>();
        let operation = Operation::Tool("model".into());
        let before_op = |scope| Before {
            actor: "model",
            operation: &operation,
            note: None,
            scope,
        };
        match op {
            CkOp::Take => {
                let made = vfs
                    .create_checkpoint(NewCheckpoint {
                        actor: "model",
                        name: None,
                        note: None,
                    })
                    .map_err(fail)?;
                self.kept.push(model.pinned(made.id, vec!["/".into()]));
            }
            CkOp::TakeBefore | CkOp::TakeOf(_) => {
                let (scope_paths, roots) = match op {
                    CkOp::TakeOf(paths) => (Some(parse(paths)), model.scope_roots(paths)),
                    _ => (None, vec!["/".to_string()]),
                };
                let scope = match &scope_paths {
                    Some(paths) => Scope::Paths(paths),
                    None => Scope::Whole,
                };
                let auto = vfs
                    .auto_checkpoint(before_op(scope), &KEEP_ALL)
                    .map_err(fail)?;
                if auto.checkpoint.roots != roots {
                    return Err(format!(
                        "roots {:?}, model {roots:?}",
                        auto.checkpoint.roots
                    ));
                }
                let expected = model.pinned(auto.checkpoint.id, roots);
                if auto.reused {
                    let reused = self
                        .kept
                        .iter()
                        .find(|kept| kept.id == auto.checkpoint.id)
                        .ok_or("reused a checkpoint the model does not keep")?;
                    if reused.nodes != expected.nodes {
                        return Err("reused a checkpoint of another state".into());
                    }
                } else {
                    self.kept.push(expected);
                }
            }
            CkOp::Restore { which, paths } => {
                let Some(target) = self.pick(*which).cloned() else {
                    return Ok(());
                };
                let vpaths = paths.as_deref().map(parse);
                let real = vfs
                    .restore(target.id, vpaths.as_deref())
                    .map_err(|e| e.code().as_str());
                let mut next = model.clone();
                let expected = next.restore(&target, paths.as_deref());
                match (&real, &expected) {
                    (Ok(restored), Ok(())) => {
                        let changed = next.nodes != model.nodes;
                        if restored.changes.is_empty() == changed {
                            return Err(format!(
                                "restore reported {:?} but the model changed: {changed}",
                                restored.changes
                            ));
                        }
                        let after = vfs.revision().unwrap();
                        if after != revision + i64::from(changed) {
                            return Err(format!("revision {revision} -> {after}"));
                        }
                        *model = next;
                    }
                    (Err(code), Err(expected_code)) if code == expected_code => {
                        if state(db) != before {
                            return Err(format!("a failed restore ({code}) changed the database"));
                        }
                    }
                    _ => {
                        return Err(format!(
                            "restore of {:?} at {paths:?}: real {:?}, model {expected:?}",
                            target.roots,
                            real.map(|r| r.changes)
                        ))
                    }
                }
                if snapshot(vfs) != model.nodes {
                    return Err(format!(
                        "tree after restore: {:?}, model {:?}",
                        snapshot(vfs),
                        model.nodes
                    ));
                }
                return Ok(());
            }
            CkOp::Undo => {
                let real = vfs.undo().map_err(|e| e.code().as_str());
                let expected = self.undo(model);
                match (&real, &expected) {
                    (Ok(undone), Ok(id)) if undone.checkpoint.id == *id => {}
                    (Err(code), Err(expected_code)) if code == expected_code => {
                        if state(db) != before {
                            return Err(format!("a failed undo ({code}) changed the database"));
                        }
                    }
                    _ => {
                        return Err(format!(
                            "undo: real {:?}, model {expected:?}",
                            real.map(|u| (u.checkpoint.id, u.restored.changes))
                        ))
                    }
                }
                if snapshot(vfs) != model.nodes {
                    return Err("tree after undo differs from the model".into());
                }
                return Ok(());
            }
            CkOp::Delete { which } => {
                let Some(target) = self.pick(*which).cloned() else {
                    return Ok(());
                };
                vfs.delete_checkpoint(target.id).map_err(fail)?;
                self.kept.retain(|kept| kept.id != target.id);
            }
            CkOp::Diff { from, to } => {
                let side = |which: &Option<usize>| match which.and_then(|w| self.pick(w)) {
                    Some(kept) => (
                        Point::Checkpoint(kept.id),
                        kept.nodes.clone(),
                        kept.roots.clone(),
                    ),
                    None => (Point::Now, model.nodes.clone(), vec!["/".to_string()]),
                };
                let (a, a_nodes, a_roots) = side(from);
                let (b, b_nodes, b_roots) = side(to);
                let expected = model_diff((&a_nodes, &a_roots), (&b_nodes, &b_roots));
                for full_scan in [false, true] {
                    let options = DiffOptions {
                        limit: 100_000,
                        full_scan,
                        ..DiffOptions::default()
                    };
                    let got: Vec<(String, PathChange, Option<String>)> = vfs
                        .diff(a, b, &options)
                        .map_err(fail)?
                        .entries
                        .into_iter()
                        .map(|e| (e.path, e.change, e.from))
                        .collect();
                    if got != expected {
                        return Err(format!(
                            "diff (full scan: {full_scan}): {got:?}, model {expected:?}"
                        ));
                    }
                }
                if state(db) != before {
                    return Err("a diff changed the database".into());
                }
            }
        }
        if vfs.revision().unwrap() != revision {
            return Err("a checkpoint step moved the revision".into());
        }
        Ok(())
    }

    /// The model's undo: the checkpoint it restores, or its error code.
    fn undo(&mut self, model: &mut Model) -> Result<CheckpointId, Code> {
        for index in (0..self.kept.len()).rev() {
            if self.kept[index].undone {
                continue;
            }
            let mut next = model.clone();
            next.restore(&self.kept[index], None)?;
            if next.nodes == model.nodes {
                continue;
            }
            let id = self.kept[index].id;
            for kept in &mut self.kept {
                kept.undone |= kept.id >= id;
            }
            *model = next;
            return Ok(id);
        }
        Err("ENOENT")
    }

    /// Every kept checkpoint reads back exactly as it was taken.
    fn read_back(&self, vfs: &Vfs<'_, SqliteDb>) -> Result<(), String> {
        for kept in &self.kept {
            let snapshot = vfs.snapshot(kept.id).map_err(|e| e.to_string())?;
            let got = read_pinned(&snapshot, &kept.roots);
            if got != kept.nodes {
                return Err(format!(
                    "checkpoint {} reads back {got:?}, was {:?}",
                    kept.id, kept.nodes
                ));
            }
        }
        Ok(())
    }
}

fn checkpoint_step() -> impl Strategy<Value = Step> {
    let paths = || prop::collection::vec(path(), 1..3);
    prop_oneof![
        2 => Just(CkOp::Take),
        2 => Just(CkOp::TakeBefore),
        3 => paths().prop_map(CkOp::TakeOf),
        4 => (any::<usize>(), prop::option::weighted(0.5, paths()))
            .prop_map(|(which, paths)| CkOp::Restore { which, paths }),
        1 => any::<usize>().prop_map(|which| CkOp::Delete { which }),
        2 => Just(CkOp::Undo),
        // Mostly a checkpoint against now, where the differences are.
        3 => (prop::option::weighted(0.9, any::<usize>()), prop::option::weighted(0.3, any::<usize>()))
            .prop_map(|(from, to)| CkOp::Diff { from, to }),
    ]
    .prop_map(Step::Checkpoint)
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        5 => op().prop_map(Step::Fs),
        2 => checkpoint_step(),
    ]
}

// ---------------------------------------------------------------------------
// The property
// ---------------------------------------------------------------------------

/// Every row of every workspace table, chunks by hash rather than bytes (the
/// hash is their content address), for before/after comparisons.
fn state(db: &SqliteDb) -> Vec<Vec<stead_sql::Row>> {
    [
        "SELECT key, value FROM meta ORDER BY key",
        "SELECT ino, kind, mode, size, mtime, target, rev FROM nodes ORDER BY ino",
        "SELECT parent, name, ino FROM dirents ORDER BY parent, name",
        "SELECT id, hash, size FROM chunks ORDER BY id",
        "SELECT ino, idx, chunk FROM file_chunks ORDER BY ino, idx",
        "SELECT upload, idx, chunk FROM upload_chunks ORDER BY upload, idx",
        "SELECT seq, rev, path, kind FROM changes ORDER BY seq",
        "SELECT * FROM checkpoints ORDER BY id",
        "SELECT * FROM checkpoint_roots ORDER BY checkpoint, path",
        "SELECT * FROM checkpoint_entries ORDER BY checkpoint, parent, name",
        "SELECT * FROM checkpoint_chunks ORDER BY checkpoint, ino, idx",
    ]
    .iter()
    .map(|q| db.query(q, params![]).unwrap())
    .collect()
}

/// Runs `ops` against both sides, failing at the first disagreement.
fn check(ops: &[Op]) -> Result<(), TestCaseError> {
    let steps: Vec<Step> = ops.iter().cloned().map(Step::Fs).collect();
    check_steps(&steps)
}

/// Runs `steps` against both sides, failing at the first disagreement.
/// Checkpoint steps are checked by [`Checkpoints::step`]; after each of
/// them, and periodically, every checkpoint must read back as it was taken.
fn check_steps(steps: &[Step]) -> Result<(), TestCaseError> {
    let db = db();
    check_steps_over(&db, &vfs(&db), steps)
}

/// [`check_steps`], every step inside one batch ([`Vfs::atomically`], as
/// an exec runs its commands), where resolution keeps the directories and
/// absent names it met: whatever moved, removed or failed since, each step
/// must still see the tree as it is.
fn check_steps_batched(steps: &[Step]) -> Result<(), TestCaseError> {
    let db = db();
    let vfs = vfs(&db);
    let mut outcome = Ok(());
    vfs.atomically(|| {
        outcome = check_steps_over(&db, &vfs, steps);
        Ok(())
    })
    .unwrap();
    outcome
}

fn check_steps_over(
    db: &SqliteDb,
    vfs: &Vfs<'_, SqliteDb>,
    steps: &[Step],
) -> Result<(), TestCaseError> {
    let mut model = Model::new();
    let mut pinned = Checkpoints::default();
    for (step, item) in steps.iter().enumerate() {
        let op = match item {
            Step::Fs(op) => op,
            Step::Checkpoint(ck) => {
                pinned
                    .step(db, vfs, &mut model, ck)
                    .map_err(|e| TestCaseError::fail(format!("step {step}: {ck:?}: {e}")))?;
                pinned
                    .read_back(vfs)
                    .map_err(|e| TestCaseError::fail(format!("step {step}: {ck:?}: {e}")))?;
                check_storage(db)
                    .map_err(|e| TestCaseError::fail(format!("step {step}: {ck:?}: {e}")))?;
                continue;
            }
        };
        let before = state(db);
        let revision = vfs.revision().unwrap();
        let real = run(vfs, op).map_err(|e| e.code().as_str());
        let mut next = model.clone();
        let expected = next.apply(op);
        prop_assert_eq!(&real, &expected, "step {}: {:?}", step, op);
        match real {
            Ok(_) => model = next,
            Err(code) => {
                prop_assert!(
                    state(db) == before,
                    "step {}: failed {:?} ({}) changed the database",
                    step,
                    op,
                    code
                );
            }
        }
        let after = vfs.revision().unwrap();
        let bump = if mutates(op) { 1 } else { 0 };
        prop_assert!(
            after == revision || after == revision + bump,
            "step {}: {:?} moved the revision from {} to {}",
            step,
            op,
            revision,
            after
        );
        if step % 8 == 7 || step + 1 == steps.len() {
            prop_assert_eq!(
                snapshot(vfs),
                model.nodes.clone(),
                "tree after step {}",
                step
            );
            check_storage(db).map_err(|e| TestCaseError::fail(format!("step {step}: {e}")))?;
            pinned
                .read_back(vfs)
                .map_err(|e| TestCaseError::fail(format!("step {step}: {e}")))?;
        }
    }
    prop_assert_eq!(snapshot(vfs), model.nodes, "final tree");
    check_storage(db).map_err(TestCaseError::fail)?;
    Ok(())
}

proptest! {
    // 512 sequences take about five seconds in debug; PROPTEST_CASES=N runs more.
    #![proptest_config(Config {
        cases: std::env::var("PROPTEST_CASES").map_or(512, |_| Config::default().cases),
        failure_persistence: None,
        ..Config::default()
    })]

    #[test]
    fn any_sequence_of_operations_matches_the_model(ops in prop::collection::vec(op(), 1..48)) {
        check(&ops)?;
    }

    #[test]
    fn any_sequence_in_one_batch_matches_the_model(ops in prop::collection::vec(op(), 1..48)) {
        let steps: Vec<Step> = ops.into_iter().map(Step::Fs).collect();
        check_steps_batched(&steps)?;
    }
}

proptest! {
    // 128 sequences take about ten seconds in debug; PROPTEST_CASES=N runs more.
    #![proptest_config(Config {
        cases: std::env::var("PROPTEST_CASES").map_or(128, |_| Config::default().cases),
        failure_persistence: None,
        ..Config::default()
    })]

    /// Random file operations interleaved with checkpoints (whole and
    /// partial), restores (whole and by path), deletes and diffs: every
    /// checkpoint reads back as it was taken, restores and diffs agree with
    /// the model, and chunk collection keeps exactly what is referenced.
    #[test]
    fn checkpoints_read_back_and_restore_like_the_model(steps in prop::collection::vec(step(), 1..64)) {
        check_steps(&steps)?;
    }
}

/// A hand-checked case for the model's symlink resolution (chroot-style
/// `..`, a link to its own directory), which the VFS must agree with.
#[test]
fn the_model_resolves_links_chroot_style() {
    let mut model = Model::new();
    let ops = [
        Op::Mkdir {
            path: "/a".into(),
            parents: false,
            mode: None,
        },
        Op::Symlink {
            target: "../../../a".into(),
            path: "/a/b".into(),
        },
        Op::Write {
            path: "/a/b/b/c".into(),
            data: Content::Text("x"),
            mode: None,
            parents: false,
        },
    ];
    for op in &ops[..2] {
        model.apply(op).unwrap();
    }
    // /a/b -> /a, so /a/b/b -> /a/b -> /a again, and c lands in /a.
    assert_eq!(
        model.apply(&ops[2]),
        Ok(Out::Written {
            path: "/a/c".into(),
            size: 1,
            created: true
        })
    );
    assert!(check(&ops).is_ok());
}

/// The storage checks see what they claim to: each corruption below, made
/// directly in SQL, is reported.
#[test]
fn storage_checks_catch_corruption() {
    let corruptions = [
        "INSERT INTO chunks (hash, size, data) VALUES (x'00', 1, x'00')",
        "INSERT INTO dirents (parent, name, ino) VALUES (1, 'ghost', 999)",
        "DELETE FROM dirents WHERE name = 'f'",
        "UPDATE nodes SET size = size + 1 WHERE kind = 1",
        "UPDATE meta SET value = value + 1 WHERE key = 'node_count'",
    ];
    for corruption in corruptions {
        let db = db();
        put(&vfs(&db), "/d/f", "content");
        check_storage(&db).unwrap();
        db.execute(corruption, params![]).unwrap();
        assert!(check_storage(&db).is_err(), "{corruption}");
    }
}
