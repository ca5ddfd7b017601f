//! The workspace's side of computer sync (protocol in `stead_sync`).
//!
//! Two directions, both in the protocol's terms ([`SyncChange`]: a path and
//! what is there now):
//!
//! - *Out*: what the container must change to match the workspace, either
//!   everything ([`Vfs::sync_manifest`]) or only the paths the change log
//!   touched since the container last caught up ([`Vfs::sync_changes_since`]).
//!   Content is named by the chunk hashes the workspace already stores, so a
//!   manifest costs no hashing.
//! - *In*: what a command changed on the container, applied in one
//!   transaction ([`Vfs::apply_sync`]). Chunks the workspace lacked were
//!   staged first under an [`UploadId`]; a change whose content is not all
//!   present fails the whole apply, so a half-pulled result never shows.
//!
//! Quotas: each reported change is admitted on its own, in path order (see
//! [`Vfs::apply_sync`]); one that would break a quota, or a path the
//! workspace cannot hold, is refused and named in [`SyncOutcome::rejected`]
//! with the code the file API would give, and the rest applies.
//!
//! Conflicts: a path the workspace changed after the push the command ran
//! against (`base`) keeps the workspace's version; the container's version
//! goes beside it as `<path>.conflict-<revision>` and both are reported.
//! Nothing is dropped silently.
//!
//! Paths are walked without following symlinks: the change log and the
//! container both speak in real paths, and a symlink standing where a
//! directory was must not redirect a change elsewhere.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use stead_sql::{params, Param, Sql};
use stead_sync::{Change as SyncChange, ChunkHash, Entry, IgnoreRules};

use crate::error::{Errno, Result, VfsError};
use crate::node::{Kind, Node};
use crate::ops::{mode_bits, ChangeKind};
use crate::path::VPath;
use crate::resolve::ROOT_INO;
use crate::tree::Flow;
use crate::upload::UploadId;
use crate::{json_ids, Vfs, SYMLINK_MODE};

/// Chunk hashes bound per statement (DO SQLite allows 100 parameters).
const HASHES_PER_STATEMENT: usize = 90;

/// What [`Vfs::apply_sync`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SyncOutcome {
    /// The revision of the apply (the current one when nothing changed).
    pub revision: i64,
    /// Paths changed as the container reported them.
    pub applied: Vec<String>,
    /// Paths both sides changed.
    pub conflicts: Vec<Conflict>,
    /// Reported changes the workspace refused, and why.
    pub rejected: Vec<Rejected>,
}

/// A path the workspace changed while the container changed it too.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Conflict {
    /// The path; it keeps the workspace's version.
    pub path: String,
    /// Where the container's version was kept, when it had content (a
    /// container-side deletion or directory has none to keep).
    pub container_copy: Option<String>,
}

/// A reported change the workspace did not take: the path keeps the
/// workspace's version, and every other change still applies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rejected {
    pub path: String,
    /// The code the same change made through the file API would fail with
    /// (`ENOSPC`, `EFBIG`, `ENAMETOOLONG`, `EINVAL`).
    #[serde(serialize_with = "errno_text")]
    pub code: Errno,
    /// Why, naming the quota and its value when one is the reason.
    pub reason: String,
    /// The quota the change would exceed, when that is the reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quota: Option<&'static str>,
    /// That quota's value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
}

impl Rejected {
    /// `path`'s change refused for `error`.
    pub fn of(path: &str, error: &VfsError) -> Self {
        let (quota, limit) = match *error {
            VfsError::FileTooLarge { limit, .. } => (Some("max_file_bytes"), Some(limit)),
            VfsError::NoSpace { quota, limit, .. } => (Some(quota), Some(limit)),
            VfsError::TooDeep { limit, .. } => (Some("max_path_depth"), Some(limit as u64)),
            _ => (None, None),
        };
        Rejected {
            path: path.to_string(),
            code: error.code(),
            reason: error.to_string(),
            quota,
            limit,
        }
    }
}

fn errno_text<S: serde::Serializer>(code: &Errno, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(code.as_str())
}

impl<S: Sql> Vfs<'_, S> {
    /// Every path of the workspace but ignored ones, parents first.
    pub fn sync_manifest(&self, ignore: &IgnoreRules) -> Result<Vec<SyncChange>> {
        self.sync_manifest_under(&VPath::root(), ignore)
    }

    /// Every path below directory `root` (not `root` itself) but ignored
    /// ones, parents first: what a push or pull compares against.
    pub fn sync_manifest_under(
        &self,
        root: &VPath,
        ignore: &IgnoreRules,
    ) -> Result<Vec<SyncChange>> {
        let mut nodes = Vec::new();
        self.walk(root, None, |visit| {
            if ignore.is_ignored(visit.path.as_str(), visit.node.is_dir()) {
                return Ok(Flow::SkipChildren);
            }
            nodes.push((visit.path.clone(), visit.node.clone()));
            Ok(Flow::Continue)
        })?;
        self.describe(nodes.into_iter().map(|(path, node)| (path, Some(node))))
    }

    /// The current state of every path the change log touched after
    /// revision `since`, parents first (a directory created since then comes
    /// with its whole subtree). `None` when the log no longer reaches back
    /// that far: the caller must send the full manifest.
    pub fn sync_changes_since(
        &self,
        since: i64,
        ignore: &IgnoreRules,
    ) -> Result<Option<Vec<SyncChange>>> {
        let Some(log) = self.changes_since(since, usize::MAX >> 1)? else {
            return Ok(None);
        };
        // Each path once, noting whether it was (re)created: then its whole
        // subtree is new to the container.
        let mut touched: BTreeMap<String, bool> = BTreeMap::new();
        for change in log {
            *touched.entry(change.path).or_default() |= change.kind == ChangeKind::Created;
        }
        let mut states: BTreeMap<VPath, Option<Node>> = BTreeMap::new();
        for (path, created) in touched {
            let path = VPath::parse(&path)?;
            let node = self.lookup_real(&path)?;
            let is_dir = node.as_ref().is_some_and(Node::is_dir);
            if ignore.is_ignored(path.as_str(), is_dir) {
                continue;
            }
            if created && is_dir {
                self.walk_subtree(&path, ignore, &mut states)?;
            }
            states.insert(path, node);
        }
        self.describe(states.into_iter()).map(Some)
    }

    /// The current state of each of `paths` (real paths; ignored ones
    /// left out), in path order: what the container's copy must hold
    /// where the workspace refused a change it reported.
    pub fn sync_states(&self, paths: &[VPath], ignore: &IgnoreRules) -> Result<Vec<SyncChange>> {
        let mut states: BTreeMap<VPath, Option<Node>> = BTreeMap::new();
        for path in paths {
            let node = self.lookup_real(path)?;
            if !ignore.is_ignored(path.as_str(), node.as_ref().is_some_and(Node::is_dir)) {
                states.insert(path.clone(), node);
            }
        }
        self.describe(states.into_iter())
    }

    fn walk_subtree(
        &self,
        path: &VPath,
        ignore: &IgnoreRules,
        states: &mut BTreeMap<VPath, Option<Node>>,
    ) -> Result<()> {
        self.walk(path, None, |visit| {
            if ignore.is_ignored(visit.path.as_str(), visit.node.is_dir()) {
                return Ok(Flow::SkipChildren);
            }
            states.insert(visit.path.clone(), Some(visit.node.clone()));
            Ok(Flow::Continue)
        })
    }

    /// The node at real path `path`, walking without following any symlink;
    /// `None` when a component is missing or not a directory.
    pub(crate) fn lookup_real(&self, path: &VPath) -> Result<Option<Node>> {
        // The root is always a directory: it is read only when it is the
        // node asked for, not to walk through.
        let mut parent = ROOT_INO;
        let mut found = None;
        for name in path.components() {
            if found.as_ref().is_some_and(|node: &Node| !node.is_dir()) {
                return Ok(None);
            }
            match self.lookup(parent, name)? {
                Some(child) => {
                    parent = child.ino;
                    found = Some(child);
                }
                None => return Ok(None),
            }
        }
        match found {
            Some(node) => Ok(Some(node)),
            None => Ok(Some(self.node(ROOT_INO)?)),
        }
    }

    /// Protocol entries for `(path, node)` pairs, file chunk lists fetched in
    /// one statement.
    fn describe(
        &self,
        nodes: impl Iterator<Item = (VPath, Option<Node>)>,
    ) -> Result<Vec<SyncChange>> {
        let nodes: Vec<(VPath, Option<Node>)> = nodes.collect();
        let files: Vec<i64> = nodes
            .iter()
            .filter_map(|(_, node)| node.as_ref())
            .filter(|node| node.kind == Kind::File)
            .map(|node| node.ino)
            .collect();
        let mut chunks = self.chunk_hashes(&files)?;
        let mut out = Vec::with_capacity(nodes.len());
        for (path, node) in nodes {
            if path.is_root() {
                continue;
            }
            let mtime_ms = node
                .as_ref()
                .filter(|node| node.kind == Kind::File)
                .map(|node| node.mtime);
            let entry = node.map(|node| match node.kind {
                Kind::File => Entry::File {
                    mode: node.mode,
                    size: node.size,
                    chunks: chunks.remove(&node.ino).unwrap_or_default(),
                },
                Kind::Dir => Entry::Dir { mode: node.mode },
                Kind::Symlink => Entry::Symlink {
                    target: node.target.unwrap_or_default(),
                },
            });
            out.push(SyncChange {
                path: path.to_string(),
                entry,
                mtime_ms,
            });
        }
        Ok(out)
    }

    /// The chunk hashes of files `inos`, in order, by inode.
    fn chunk_hashes(&self, inos: &[i64]) -> Result<HashMap<i64, Vec<ChunkHash>>> {
        let mut out: HashMap<i64, Vec<ChunkHash>> = HashMap::new();
        for batch in inos.chunks(1024) {
            let rows = self.db.query(
                "SELECT f.ino, c.hash FROM file_chunks f JOIN chunks c ON c.id = f.chunk \
                 WHERE f.ino IN (SELECT value FROM json_each(?)) ORDER BY f.ino, f.idx",
                params![json_ids(batch).as_str()],
            )?;
            for mut row in rows {
                let ino = row.int(0)?;
                out.entry(ino)
                    .or_default()
                    .push(to_hash(row.take_blob(1)?)?);
            }
        }
        Ok(out)
    }

    /// Those of `hashes` the workspace does not hold, sorted.
    pub fn missing_chunks(&self, hashes: &[ChunkHash]) -> Result<Vec<ChunkHash>> {
        let mut wanted: Vec<ChunkHash> = hashes.to_vec();
        wanted.sort_unstable();
        wanted.dedup();
        let held = self.chunk_ids(&wanted)?;
        Ok(wanted
            .into_iter()
            .filter(|hash| !held.contains_key(hash))
            .collect())
    }

    /// Ids (and sizes) of the chunks with these hashes that the workspace holds.
    fn chunk_ids(&self, hashes: &[ChunkHash]) -> Result<HashMap<ChunkHash, (i64, u64)>> {
        let mut out = HashMap::with_capacity(hashes.len());
        for batch in hashes.chunks(HASHES_PER_STATEMENT) {
            let marks = vec!["?"; batch.len()].join(",");
            let params: Vec<Param<'_>> = batch.iter().map(|h| Param::from(&h.0[..])).collect();
            let rows = self.db.query(
                &format!("SELECT hash, id, size FROM chunks WHERE hash IN ({marks})"),
                &params,
            )?;
            for mut row in rows {
                let hash = to_hash(row.take_blob(0)?)?;
                out.insert(hash, (row.int(1)?, row.int(2)? as u64));
            }
        }
        Ok(out)
    }

    /// The bytes of the chunk with `hash`, if the workspace holds it.
    pub fn chunk_by_hash(&self, hash: &ChunkHash) -> Result<Option<Vec<u8>>> {
        self.db
            .query_row(
                "SELECT data, size, id FROM chunks WHERE hash = ?",
                params![&hash.0[..]],
            )?
            .map(|mut row| {
                let id = row.int(2)?;
                crate::content::inline_bytes(&mut row, 0, 1)?
                    .ok_or(VfsError::Tiered { chunks: vec![id] })
            })
            .transpose()
    }

    /// Starts staging pulled chunks: each [`Vfs::stage_chunk`] under this id
    /// keeps its chunk alive until [`Vfs::abort_upload`] releases them, after
    /// the apply has referenced what it used.
    pub fn begin_staging(&self) -> Result<UploadId> {
        self.next_upload_id()
    }

    /// Applies a container's reported changes in one transaction (see the
    /// module docs for conflicts). `base` is the workspace revision the
    /// container's copy was pushed at. Every chunk of every reported file
    /// must be held already (staged or not), or nothing changes.
    ///
    /// Each change is admitted on its own, in path order: one the
    /// workspace cannot hold (a file over `max_file_bytes`, a path past
    /// `max_path_depth`, a node past `max_nodes`, a path that is not one)
    /// is left out and named in [`SyncOutcome::rejected`] with its code,
    /// and the others apply. A command's result is not all or nothing
    /// over one file it should not have written.
    pub fn apply_sync(&self, base: i64, changes: &[SyncChange]) -> Result<SyncOutcome> {
        let mut outcome = self.change_admitted(|rev| {
            let mut outcome = SyncOutcome::default();
            let touched = self.touched_since(base)?;
            let hashes: Vec<ChunkHash> = stead_sync::chunk_hashes(changes).collect();
            let chunks = self.chunk_ids(&hashes)?;
            let mut ordered: Vec<&SyncChange> = changes.iter().collect();
            ordered.sort_by(|a, b| a.path.cmp(&b.path));
            for change in ordered {
                let path = match VPath::parse(&change.path) {
                    Ok(path) if path.as_str() == change.path && !path.is_root() => path,
                    Ok(_) => {
                        let error = VfsError::InvalidPath {
                            path: change.path.clone(),
                            reason: "not a normalized workspace path",
                        };
                        outcome.rejected.push(Rejected::of(&change.path, &error));
                        continue;
                    }
                    Err(error) => {
                        outcome.rejected.push(Rejected::of(&change.path, &error));
                        continue;
                    }
                };
                if let Some(error) = self.refusal(&path, change.entry.as_ref())? {
                    outcome.rejected.push(Rejected::of(&change.path, &error));
                    continue;
                }
                if conflicts(&touched, &path)
                    && !self.already_holds(&path, change.entry.as_ref())?
                {
                    let copy = match &change.entry {
                        Some(entry @ (Entry::File { .. } | Entry::Symlink { .. })) => {
                            let name = format!("{}.conflict-{rev}", path.name().unwrap_or(""));
                            let copy = path.parent().unwrap_or_else(VPath::root).join(&name);
                            if let Some(error) = self.refusal(&copy, Some(entry))? {
                                // The workspace's version stays; the
                                // container's has nowhere to go.
                                outcome.rejected.push(Rejected::of(&change.path, &error));
                                continue;
                            }
                            self.put_entry(&copy, Some(entry), change.mtime_ms, &chunks, rev)?;
                            Some(copy.to_string())
                        }
                        _ => None,
                    };
                    outcome.conflicts.push(Conflict {
                        path: path.to_string(),
                        container_copy: copy,
                    });
                    continue;
                }
                if self.put_entry(&path, change.entry.as_ref(), change.mtime_ms, &chunks, rev)? {
                    outcome.applied.push(path.to_string());
                }
            }
            Ok(outcome)
        })?;
        outcome.revision = self.revision()?;
        Ok(outcome)
    }

    /// Why the workspace cannot make real path `path` hold `entry`, if it
    /// cannot: the quota (or rule) [`Vfs::put_entry`] would break, checked
    /// before anything is written. A removal is always taken.
    fn refusal(&self, path: &VPath, entry: Option<&Entry>) -> Result<Option<VfsError>> {
        let Some(entry) = entry else {
            return Ok(None);
        };
        let wanted = match entry {
            Entry::File { size, .. } => {
                if let Err(error) = self.check_size(path, *size) {
                    return Ok(Some(error));
                }
                Kind::File
            }
            Entry::Dir { .. } => Kind::Dir,
            Entry::Symlink { target } => {
                if target.is_empty() || target.contains('\0') {
                    return Ok(Some(VfsError::InvalidPath {
                        path: path.to_string(),
                        reason: "symlink target must be non-empty without NUL",
                    }));
                }
                Kind::Symlink
            }
        };
        // Nodes the change creates: the path's components from the first
        // one missing (a non-directory standing where a directory must be
        // is replaced, one node for one).
        let names: Vec<&str> = path.components().collect();
        let mut node = self.node(ROOT_INO)?;
        let mut created = 0;
        for (depth, name) in names.iter().enumerate() {
            let child = match node.is_dir() {
                true => self.lookup(node.ino, name)?,
                false => None,
            };
            match child {
                Some(child) => node = child,
                None => {
                    created = names.len() - depth;
                    break;
                }
            }
        }
        let replaced = created == 0 && node.kind != wanted;
        let limits = self.limits;
        if (created > 0 || replaced) && names.len() > limits.max_path_depth {
            return Ok(Some(VfsError::TooDeep {
                path: path.to_string(),
                depth: names.len(),
                limit: limits.max_path_depth,
            }));
        }
        let used = self.node_count()? + created as u64;
        if created > 0 && used > limits.max_nodes {
            return Ok(Some(VfsError::NoSpace {
                quota: "max_nodes",
                used,
                limit: limits.max_nodes,
            }));
        }
        Ok(None)
    }

    /// Whether the workspace already holds what the container reports at
    /// `path` (a directory counts whatever its mode): both sides made the
    /// same change, which is no conflict.
    fn already_holds(&self, path: &VPath, entry: Option<&Entry>) -> Result<bool> {
        let node = self.lookup_real(path)?;
        let current = self.describe(std::iter::once((path.clone(), node)))?;
        let current = current.first().and_then(|c| c.entry.as_ref());
        Ok(match (current, entry) {
            (Some(Entry::Dir { .. }), Some(Entry::Dir { .. })) => true,
            (current, entry) => current == entry,
        })
    }

    /// Paths the change log touched after `base`, each with whether it was
    /// deleted at some point; `None` when the log does not reach back that
    /// far (then every path counts as touched).
    fn touched_since(&self, base: i64) -> Result<Option<HashMap<String, bool>>> {
        Ok(self.changes_since(base, usize::MAX >> 1)?.map(|log| {
            let mut touched: HashMap<String, bool> = HashMap::new();
            for change in log {
                *touched.entry(change.path).or_default() |= change.kind == ChangeKind::Deleted;
            }
            touched
        }))
    }

    /// Makes real path `path` hold `entry` (or nothing); a file it writes
    /// takes modification time `mtime` (ms), the container's, when given.
    /// Returns whether anything changed.
    fn put_entry(
        &self,
        path: &VPath,
        entry: Option<&Entry>,
        mtime: Option<i64>,
        chunks: &HashMap<ChunkHash, (i64, u64)>,
        rev: i64,
    ) -> Result<bool> {
        let existing = self.lookup_real(path)?;
        let Some(entry) = entry else {
            return match existing {
                Some(node) => {
                    self.remove_real(path, &node, rev)?;
                    Ok(true)
                }
                None => Ok(false),
            };
        };
        let wanted = match entry {
            Entry::File { .. } => Kind::File,
            Entry::Dir { .. } => Kind::Dir,
            Entry::Symlink { .. } => Kind::Symlink,
        };
        let existing = match existing {
            Some(node) if node.kind != wanted => {
                self.remove_real(path, &node, rev)?;
                None
            }
            other => other,
        };
        match (entry, existing) {
            (Entry::Dir { mode }, Some(node)) => {
                if node.mode == mode_bits(*mode) {
                    return Ok(false);
                }
                self.set_mode(path, &node, mode_bits(*mode), rev)?;
            }
            (Entry::Symlink { target }, Some(node)) => {
                if node.target.as_deref() == Some(target.as_str()) {
                    return Ok(false);
                }
                self.db.execute(
                    "UPDATE nodes SET target = ?, size = ?, mtime = ?, rev = ? WHERE ino = ?",
                    params![
                        target.as_str(),
                        target.len() as i64,
                        self.now_ms,
                        rev,
                        node.ino
                    ],
                )?;
                self.log_change(rev, path, ChangeKind::Modified)?;
            }
            (
                Entry::File {
                    mode,
                    size,
                    chunks: hashes,
                },
                existing,
            ) => {
                let ids = self.resolve_chunks(path, *size, hashes, chunks)?;
                let (node, created) = match existing {
                    Some(node) => {
                        if node.mode == mode_bits(*mode) && self.chunk_list(node.ino)? == ids {
                            return Ok(false);
                        }
                        self.db.execute(
                            "UPDATE nodes SET mode = ? WHERE ino = ?",
                            params![mode_bits(*mode), node.ino],
                        )?;
                        (node, false)
                    }
                    None => (
                        self.create_at(path, Kind::File, mode_bits(*mode), None, rev)?,
                        true,
                    ),
                };
                let old = self.drop_content(node.ino)?;
                for (idx, id) in ids.iter().enumerate() {
                    self.db.execute(
                        "INSERT INTO file_chunks (ino, idx, chunk) VALUES (?, ?, ?)",
                        params![node.ino, idx as i64, *id],
                    )?;
                }
                self.collect(&old)?;
                self.db.execute(
                    "UPDATE nodes SET size = ?, mtime = ?, rev = ? WHERE ino = ?",
                    params![*size as i64, mtime.unwrap_or(self.now_ms), rev, node.ino],
                )?;
                if !created {
                    self.log_change(rev, path, ChangeKind::Modified)?;
                }
            }
            (Entry::Dir { mode }, None) => {
                self.create_at(path, Kind::Dir, mode_bits(*mode), None, rev)?;
            }
            (Entry::Symlink { target }, None) => {
                if target.is_empty() || target.contains('\0') {
                    return Err(VfsError::InvalidPath {
                        path: path.to_string(),
                        reason: "symlink target must be non-empty without NUL",
                    });
                }
                self.create_at(path, Kind::Symlink, SYMLINK_MODE, Some(target), rev)?;
            }
        }
        Ok(true)
    }

    /// The chunk ids of a reported file, checked to add up to its size.
    fn resolve_chunks(
        &self,
        path: &VPath,
        size: u64,
        hashes: &[ChunkHash],
        held: &HashMap<ChunkHash, (i64, u64)>,
    ) -> Result<Vec<i64>> {
        self.check_size(path, size)?;
        let mut total = 0;
        let mut ids = Vec::with_capacity(hashes.len());
        for hash in hashes {
            let (id, chunk_size) = held.get(hash).ok_or_else(|| VfsError::BadUpload {
                reason: format!("{path}: chunk {hash} was not pulled"),
            })?;
            total += chunk_size;
            ids.push(*id);
        }
        if total != size {
            return Err(VfsError::BadUpload {
                reason: format!("{path}: chunks hold {total} bytes, {size} reported"),
            });
        }
        Ok(ids)
    }

    fn chunk_list(&self, ino: i64) -> Result<Vec<i64>> {
        Ok(self.chunks_of(ino)?.into_iter().map(|c| c.id).collect())
    }

    /// Creates a node at real path `path` (absent), making parent
    /// directories as needed, and logs it.
    fn create_at(
        &self,
        path: &VPath,
        kind: Kind,
        mode: u32,
        target: Option<&str>,
        rev: i64,
    ) -> Result<Node> {
        let parent_path = path.parent().unwrap_or_else(VPath::root);
        let parent = match self.lookup_real(&parent_path)? {
            Some(node) if node.is_dir() => node,
            other => {
                if let Some(node) = other {
                    self.remove_real(&parent_path, &node, rev)?;
                }
                self.ensure_dir(&parent_path, rev)?.1
            }
        };
        let name = path.name().unwrap_or_default();
        let node = self.create_node(parent.ino, name, kind, mode, target, rev)?;
        self.log_change(rev, path, ChangeKind::Created)?;
        Ok(node)
    }

    /// Removes the node at real path `path` (and its subtree) and logs it.
    pub(crate) fn remove_real(&self, path: &VPath, node: &Node, rev: i64) -> Result<()> {
        let parent_path = path.parent().unwrap_or_else(VPath::root);
        let parent = self
            .lookup_real(&parent_path)?
            .ok_or_else(|| VfsError::Corrupt(format!("{path} has no parent")))?;
        self.unlink(path, node, parent.ino, rev)?;
        self.log_change(rev, path, ChangeKind::Deleted)
    }
}

/// Whether a change to `path` meets a workspace change: to the same path,
/// to something below it, or the deletion of an ancestor.
fn conflicts(touched: &Option<HashMap<String, bool>>, path: &VPath) -> bool {
    let Some(touched) = touched else {
        return true;
    };
    let text = path.as_str();
    let below = |outer: &str, inner: &str| {
        inner
            .strip_prefix(outer)
            .is_some_and(|rest| rest.starts_with('/'))
    };
    touched.iter().any(|(other, deleted)| {
        other == text || below(text, other) || (*deleted && below(other, text))
    })
}

fn to_hash(blob: Vec<u8>) -> Result<ChunkHash> {
    let bytes: [u8; 32] = blob
        .try_into()
        .map_err(|_| VfsError::Corrupt("a chunk hash is not 32 bytes".into()))?;
    Ok(ChunkHash(bytes))
}
