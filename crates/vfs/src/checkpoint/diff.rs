//! What differs between two points in time: a checkpoint, a kept revision,
//! or now.
//!
//! Cost follows what changed, not the workspace: the change log says which
//! paths each revision touched, so between revisions `a < b` only the paths
//! it lists for `a < rev <= b` can differ (a created or deleted directory
//! stands for its subtree, which is then compared whole). While the log
//! still reaches back to `a` (it keeps [`crate::CHANGE_LOG_REVISIONS`]
//! revisions) that is all a diff reads ([`DiffMethod::ChangeLog`]). When it
//! does not, the two trees are merged in full, directory by directory in
//! name order ([`DiffMethod::FullScan`]); the answer is the same, only
//! slower. [`DiffOptions::full_scan`] asks for that on purpose.
//!
//! *Kept* revisions: a past revision can be read only while some
//! whole-workspace checkpoint (automatic ones included) pins it; the change
//! log says which paths changed but holds no content. [`Point::Revision`]
//! of any other past revision is `RevisionNotKept`.
//!
//! Each differing path is reported once, sorted by path: added, deleted,
//! modified (content, or a symlink's target), mode changed, type changed, or
//! moved (a file or symlink deleted in one place and added, with the same
//! non-empty content, in another; the one with the same name wins, else the
//! first by path). Modification times are not compared: every change of a
//! directory's entries moves its mtime, which would bury the changes that
//! matter. Unified text diffs come on request, capped per file and per
//! page; binary files are said to differ, never dumped.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use stead_sql::{params, Sql};

use super::side::{Found, Side};
use super::CheckpointId;
use crate::error::{Result, VfsError};
use crate::node::{octal, Kind, Node};
use crate::path::VPath;
use crate::read::looks_binary;
use crate::{json_ids, Vfs};

/// Files whose chunk lists one statement fetches (a bounded JSON parameter).
const INOS_PER_STATEMENT: usize = 4096;

/// A point in time to compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Point {
    Checkpoint(CheckpointId),
    /// A past revision some whole-workspace checkpoint pins, or the current
    /// one.
    Revision(i64),
    Now,
}

/// Which point a diff compared, resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PointInfo {
    /// The checkpoint read, when it was not the live workspace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<CheckpointId>,
    pub revision: i64,
}

/// How the differing paths were found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DiffMethod {
    /// From the change log between the two revisions: cost follows the change.
    ChangeLog,
    /// By merging the two trees whole: the log no longer reached back (or a
    /// full scan was asked for).
    FullScan,
}

/// What to compare and how much to answer.
#[derive(Debug, Clone)]
pub struct DiffOptions {
    /// Compare only these real paths and their subtrees (all when empty).
    pub within: Vec<VPath>,
    /// Paging: report only paths after this one.
    pub after: Option<String>,
    /// Most entries per page.
    pub limit: usize,
    /// Unified text diffs, when wanted.
    pub text: Option<TextOptions>,
    /// Merge the two trees whole instead of trusting the change log.
    pub full_scan: bool,
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions {
            within: Vec::new(),
            after: None,
            limit: 1000,
            text: None,
            full_scan: false,
        }
    }
}

/// Limits on the text diffs of one page.
#[derive(Debug, Clone, Copy)]
pub struct TextOptions {
    /// A file larger than this (on either side) gets no text diff.
    pub max_file_bytes: u64,
    /// Text diffs in one page together stay under this; the page ends early
    /// rather than exceed it, and a single diff larger than it is not sent.
    pub max_page_bytes: usize,
}

impl Default for TextOptions {
    fn default() -> Self {
        TextOptions {
            max_file_bytes: 1 << 20,
            max_page_bytes: 256 * 1024,
        }
    }
}

/// One page of a diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diff {
    pub from: PointInfo,
    pub to: PointInfo,
    pub method: DiffMethod,
    /// Differing paths in all pages.
    pub total: usize,
    pub entries: Vec<DiffEntry>,
    /// Pass as [`DiffOptions::after`] for the next page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_after: Option<String>,
}

/// How a path differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PathChange {
    Added,
    Deleted,
    /// A file's content or a symlink's target (its mode may differ too).
    Modified,
    /// Only the permission bits.
    ModeChanged,
    /// File, directory and symlink swapped places.
    TypeChanged,
    /// Deleted at `from` and added here with the same content.
    Moved,
}

/// A path's node on one side of a diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EntryInfo {
    #[serde(rename = "type")]
    pub kind: Kind,
    #[serde(serialize_with = "octal")]
    pub mode: u32,
    pub size: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

impl From<&Node> for EntryInfo {
    fn from(node: &Node) -> Self {
        EntryInfo {
            kind: node.kind,
            mode: node.mode,
            size: node.size,
            target: node.target.clone(),
        }
    }
}

/// One differing path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DiffEntry {
    pub path: String,
    pub change: PathChange,
    /// Where a moved path was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// The path at the first point (absent when added).
    pub old: Option<EntryInfo>,
    /// The path at the second point (absent when deleted).
    pub new: Option<EntryInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<TextDiff>,
}

/// The text diff of a modified, added or deleted file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TextDiff {
    /// A unified diff (`/dev/null` on the absent side, as `diff -N` does).
    Unified { patch: String },
    /// One side is not text (a NUL byte in its first 8 KiB, or not UTF-8).
    Binary,
    /// A side, or the diff itself, exceeds `limit` bytes (`exceeds` says
    /// which limit).
    TooLarge { limit: u64, exceeds: Oversize },
}

/// What a text diff too large to send exceeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Oversize {
    /// A side is larger than [`TextOptions::max_file_bytes`].
    File,
    /// The patch is larger than [`TextOptions::max_page_bytes`].
    Patch,
}

/// A point resolved to something readable.
pub(crate) struct Endpoint {
    pub side: Side,
    pub info: PointInfo,
}

/// A differing path, before moves are paired and text is made.
#[derive(Clone)]
pub(crate) struct Raw {
    pub path: VPath,
    pub change: PathChange,
    pub old: Option<Node>,
    pub new: Option<Node>,
}

impl<S: Sql> Vfs<'_, S> {
    /// What differs from `from` to `to` (see the module docs), one page.
    pub fn diff(&self, from: Point, to: Point, options: &DiffOptions) -> Result<Diff> {
        let from = self.endpoint(from)?;
        let to = self.endpoint(to)?;
        let (raws, method) = self.compare(&from, &to, &options.within, options.full_scan)?;
        let entries = self.pair_moves(&from.side, &to.side, raws)?;
        let total = entries.len();
        // Entries are sorted by path, so those up to the cursor are a prefix.
        let skip = entries
            .iter()
            .take_while(|(raw, _)| options.after.as_deref() >= Some(raw.path.as_str()))
            .count();
        let mut rest = entries.into_iter().skip(skip);
        let mut page: Vec<DiffEntry> = Vec::new();
        let mut text_bytes = 0usize;
        let mut pending = rest.next();
        while let Some((raw, moved_from)) = pending.take() {
            if page.len() >= options.limit.max(1) {
                pending = Some((raw, moved_from));
                break;
            }
            let text = match &options.text {
                Some(limits) => self.text_diff(&from.side, &to.side, &raw, limits)?,
                None => None,
            };
            if let (Some(TextDiff::Unified { patch }), Some(limits)) = (&text, &options.text) {
                if !page.is_empty() && text_bytes + patch.len() > limits.max_page_bytes {
                    // The page is full of text: this entry starts the next.
                    pending = Some((raw, moved_from));
                    break;
                }
                text_bytes += patch.len();
            }
            page.push(entry(raw, moved_from, text));
            pending = rest.next();
        }
        let next_after = pending.and(page.last().map(|entry| entry.path.clone()));
        Ok(Diff {
            from: from.info,
            to: to.info,
            method,
            total,
            entries: page,
            next_after,
        })
    }

    /// Resolves a point to a side to read.
    pub(crate) fn endpoint(&self, point: Point) -> Result<Endpoint> {
        let current = self.revision()?;
        let live = Endpoint {
            side: Side::Live,
            info: PointInfo {
                checkpoint: None,
                revision: current,
            },
        };
        let id = match point {
            Point::Now => return Ok(live),
            Point::Revision(revision) if revision == current => return Ok(live),
            Point::Revision(revision) if revision < 0 || revision > current => {
                return Err(VfsError::UnknownRevision { revision, current })
            }
            Point::Revision(revision) => self.kept(revision)?,
            Point::Checkpoint(id) => id,
        };
        let checkpoint = self.checkpoint(id)?;
        Ok(Endpoint {
            side: Side::Pinned(self.pinned(id)?),
            info: PointInfo {
                checkpoint: Some(id),
                revision: checkpoint.revision,
            },
        })
    }

    /// The newest whole-workspace checkpoint of past revision `revision`.
    fn kept(&self, revision: i64) -> Result<CheckpointId> {
        let row = self.db.query_row(
            "SELECT id FROM checkpoints WHERE whole = 1 AND revision = ? ORDER BY id DESC LIMIT 1",
            params![revision],
        )?;
        match row {
            Some(row) => Ok(CheckpointId(row.int(0)?)),
            None => Err(VfsError::RevisionNotKept { revision }),
        }
    }

    /// Every path that differs from `from` to `to` at or below `within`
    /// (everywhere when empty) and what both sides cover, sorted by path.
    pub(crate) fn compare(
        &self,
        from: &Endpoint,
        to: &Endpoint,
        within: &[VPath],
        full_scan: bool,
    ) -> Result<(Vec<Raw>, DiffMethod)> {
        let mut roots = if within.is_empty() {
            vec![VPath::root()]
        } else {
            outermost(within.to_vec())
        };
        roots = intersect(&roots, &from.side.roots());
        roots = intersect(&roots, &to.side.roots());
        let (low, high) = ordered(from.info.revision, to.info.revision);
        let from_log = !full_scan && low >= self.meta("changes_pruned")?;
        let targets = if from_log {
            self.logged_targets(low, high, &roots)?
        } else {
            roots.into_iter().map(|root| (root, true)).collect()
        };
        let mut out = Vec::new();
        for (path, deep) in targets {
            let old = self.found_node(&from.side, &path)?;
            let new = self.found_node(&to.side, &path)?;
            self.compare_nodes(&from.side, &to.side, path, old, new, deep, &mut out)?;
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        let method = if from_log {
            DiffMethod::ChangeLog
        } else {
            DiffMethod::FullScan
        };
        Ok((out, method))
    }

    /// The node `side` holds at `path`, which lies in what it covers.
    fn found_node(&self, side: &Side, path: &VPath) -> Result<Option<Node>> {
        match self.side_lookup(side, path)? {
            Found::Node(node) => Ok(Some(node)),
            Found::Absent => Ok(None),
            Found::Uncovered => Err(VfsError::Corrupt(format!(
                "compared {path} outside a checkpoint's roots"
            ))),
        }
    }

    /// The paths the change log touched in `(low, high]` that lie in
    /// `roots`, each with whether its whole subtree may differ; none below
    /// another that is compared whole.
    fn logged_targets(&self, low: i64, high: i64, roots: &[VPath]) -> Result<Vec<(VPath, bool)>> {
        let mut targets: BTreeMap<VPath, bool> = BTreeMap::new();
        if low == high {
            return Ok(Vec::new());
        }
        let rows = self.db.query(
            "SELECT path, kind FROM changes WHERE rev > ? AND rev <= ? ORDER BY seq",
            params![low, high],
        )?;
        for row in rows {
            let path = VPath::parse(row.text(0)?)?;
            // A created or deleted directory stands for its subtree.
            let deep = row.text(1)? != "modified";
            for root in roots {
                if path.starts_with(root) {
                    *targets.entry(path.clone()).or_default() |= deep;
                } else if deep && root.starts_with(&path) {
                    targets.insert(root.clone(), true);
                }
            }
        }
        let mut out: Vec<(VPath, bool)> = Vec::with_capacity(targets.len());
        for (path, deep) in targets {
            let covered = out
                .iter()
                .any(|(outer, outer_deep)| *outer_deep && path.starts_with(outer));
            if !covered {
                out.push((path, deep));
            }
        }
        Ok(out)
    }

    /// Compares the nodes the two sides hold at `path`, and below it when
    /// `deep` (or when one side is a directory the other is not).
    #[allow(clippy::too_many_arguments)]
    fn compare_nodes(
        &self,
        from: &Side,
        to: &Side,
        path: VPath,
        old: Option<Node>,
        new: Option<Node>,
        deep: bool,
        out: &mut Vec<Raw>,
    ) -> Result<()> {
        let old_dir = old.as_ref().filter(|n| n.is_dir()).cloned();
        let new_dir = new.as_ref().filter(|n| n.is_dir()).cloned();
        let descend = (deep || old_dir.is_some() != new_dir.is_some())
            && (old_dir.is_some() || new_dir.is_some());
        if let Some(change) = self.change_of(from, to, old.as_ref(), new.as_ref())? {
            out.push(Raw {
                path: path.clone(),
                change,
                old,
                new,
            });
        }
        if descend {
            self.compare_children(from, to, &path, old_dir.as_ref(), new_dir.as_ref(), out)?;
        }
        Ok(())
    }

    /// Merges the entries of two directories (either may be absent) by name
    /// and compares each pair whole.
    fn compare_children(
        &self,
        from: &Side,
        to: &Side,
        path: &VPath,
        old_dir: Option<&Node>,
        new_dir: Option<&Node>,
        out: &mut Vec<Raw>,
    ) -> Result<()> {
        let list = |side: &Side, dir: Option<&Node>| -> Result<BTreeMap<String, Node>> {
            Ok(match dir {
                Some(dir) => self
                    .side_entries(side, dir, None, None)?
                    .into_iter()
                    .map(|entry| (entry.name, entry.node))
                    .collect(),
                None => BTreeMap::new(),
            })
        };
        let mut old = list(from, old_dir)?;
        let mut new = list(to, new_dir)?;
        // Same-size files on both sides differ only if their chunks do:
        // fetch those lists a directory at a time.
        let same_size: Vec<(&Node, &Node)> = old
            .iter()
            .filter_map(|(name, a)| new.get(name).map(|b| (a, b)))
            .filter(|(a, b)| same_size_files(a, b))
            .collect();
        let old_chunks = self.chunk_lists(from, same_size.iter().map(|(a, _)| a.ino))?;
        let new_chunks = self.chunk_lists(to, same_size.iter().map(|(_, b)| b.ino))?;
        let mut names: Vec<String> = old.keys().chain(new.keys()).cloned().collect();
        names.sort();
        names.dedup();
        for name in names {
            let a = old.remove(&name);
            let b = new.remove(&name);
            let child = path.join(&name);
            if let (Some(a), Some(b)) = (&a, &b) {
                if same_size_files(a, b) {
                    let differs = old_chunks.get(&a.ino) != new_chunks.get(&b.ino);
                    if let Some(change) = classify(a, b, differs) {
                        out.push(Raw {
                            path: child,
                            change,
                            old: Some(a.clone()),
                            new: Some(b.clone()),
                        });
                    }
                    continue;
                }
            }
            self.compare_nodes(from, to, child, a, b, true, out)?;
        }
        Ok(())
    }

    /// The chunk lists of files `inos` on `side`, a statement per
    /// [`INOS_PER_STATEMENT`] files.
    fn chunk_lists(
        &self,
        side: &Side,
        inos: impl Iterator<Item = i64>,
    ) -> Result<HashMap<i64, Vec<i64>>> {
        let inos: Vec<i64> = inos.collect();
        let mut out: HashMap<i64, Vec<i64>> = HashMap::with_capacity(inos.len());
        for batch in inos.chunks(INOS_PER_STATEMENT) {
            let set = json_ids(batch);
            let rows = match side {
                Side::Live => self.db.query(
                    "SELECT ino, chunk FROM file_chunks \
                     WHERE ino IN (SELECT value FROM json_each(?)) ORDER BY ino, idx",
                    params![set.as_str()],
                )?,
                Side::Pinned(pinned) => self.db.query(
                    "SELECT ino, chunk FROM checkpoint_chunks WHERE checkpoint = ? \
                     AND ino IN (SELECT value FROM json_each(?)) ORDER BY ino, idx",
                    params![pinned.id, set.as_str()],
                )?,
            };
            for row in rows {
                out.entry(row.int(0)?).or_default().push(row.int(1)?);
            }
        }
        Ok(out)
    }

    /// How `old` (on `from`) and `new` (on `to`) differ, if they do.
    fn change_of(
        &self,
        from: &Side,
        to: &Side,
        old: Option<&Node>,
        new: Option<&Node>,
    ) -> Result<Option<PathChange>> {
        let (old, new) = match (old, new) {
            (None, None) => return Ok(None),
            (None, Some(_)) => return Ok(Some(PathChange::Added)),
            (Some(_), None) => return Ok(Some(PathChange::Deleted)),
            (Some(old), Some(new)) => (old, new),
        };
        let content_differs = old.kind == new.kind
            && match old.kind {
                Kind::File => {
                    old.size != new.size
                        || self.side_chunks(from, old)? != self.side_chunks(to, new)?
                }
                Kind::Symlink => old.target != new.target,
                Kind::Dir => false,
            };
        Ok(classify(old, new, content_differs))
    }

    /// Pairs deletions with additions of the same content as moves (see the
    /// module docs). Returns the entries in path order, each with where it
    /// moved from.
    pub(crate) fn pair_moves(
        &self,
        from: &Side,
        to: &Side,
        raws: Vec<Raw>,
    ) -> Result<Vec<(Raw, Option<VPath>)>> {
        // Content keys of deleted files and symlinks, by their index.
        let movable = |node: &Option<Node>| {
            node.as_ref()
                .filter(|n| n.kind == Kind::Symlink || (n.kind == Kind::File && n.size > 0))
                .cloned()
        };
        let added_sizes: std::collections::HashSet<(Kind, u64)> = raws
            .iter()
            .filter(|raw| raw.change == PathChange::Added)
            .filter_map(|raw| movable(&raw.new).map(|n| (n.kind, n.size)))
            .collect();
        let mut deleted: HashMap<MoveKey, Vec<usize>> = HashMap::new();
        for (index, raw) in raws.iter().enumerate() {
            if raw.change != PathChange::Deleted {
                continue;
            }
            if let Some(node) = movable(&raw.old) {
                if added_sizes.contains(&(node.kind, node.size)) {
                    let key = self.move_key(from, &node)?;
                    deleted.entry(key).or_default().push(index);
                }
            }
        }
        let mut moved_from: Vec<Option<usize>> = vec![None; raws.len()];
        let mut consumed = vec![false; raws.len()];
        if !deleted.is_empty() {
            for (index, raw) in raws.iter().enumerate() {
                if raw.change != PathChange::Added {
                    continue;
                }
                let Some(node) = movable(&raw.new) else {
                    continue;
                };
                let key = self.move_key(to, &node)?;
                let Some(candidates) = deleted.get_mut(&key) else {
                    continue;
                };
                if candidates.is_empty() {
                    continue;
                }
                let pick = candidates
                    .iter()
                    .position(|&c| raws[c].path.name() == raw.path.name())
                    .unwrap_or(0);
                let source = candidates.remove(pick);
                consumed[source] = true;
                moved_from[index] = Some(source);
            }
        }
        let mut raws: Vec<Option<Raw>> = raws.into_iter().map(Some).collect();
        let mut out = Vec::with_capacity(raws.len());
        for index in 0..raws.len() {
            if consumed[index] {
                continue;
            }
            let Some(mut raw) = raws[index].take() else {
                continue;
            };
            let source = match moved_from[index] {
                Some(source) => {
                    // A consumed deletion is never taken, so it is still here.
                    let deleted = raws[source].as_ref();
                    raw.change = PathChange::Moved;
                    raw.old = deleted.and_then(|d| d.old.clone());
                    deleted.map(|d| d.path.clone())
                }
                None => None,
            };
            out.push((raw, source));
        }
        Ok(out)
    }

    fn move_key(&self, side: &Side, node: &Node) -> Result<MoveKey> {
        Ok(match node.kind {
            Kind::File => MoveKey::File(self.side_chunks(side, node)?),
            _ => MoveKey::Link(node.target.clone().unwrap_or_default()),
        })
    }

    /// The text diff of `raw`, when it is a file whose content differs.
    fn text_diff(
        &self,
        from: &Side,
        to: &Side,
        raw: &Raw,
        limits: &TextOptions,
    ) -> Result<Option<TextDiff>> {
        let file = |node: &Option<Node>| node.as_ref().filter(|n| n.kind == Kind::File).cloned();
        let (old, new) = match raw.change {
            PathChange::Modified | PathChange::Added | PathChange::Deleted => {
                (file(&raw.old), file(&raw.new))
            }
            _ => return Ok(None),
        };
        if old.is_none() && new.is_none() {
            return Ok(None);
        }
        let too_large = [&old, &new]
            .iter()
            .any(|n| n.as_ref().is_some_and(|n| n.size > limits.max_file_bytes));
        if too_large {
            return Ok(Some(TextDiff::TooLarge {
                limit: limits.max_file_bytes,
                exceeds: Oversize::File,
            }));
        }
        let read = |side: &Side, node: &Option<Node>| -> Result<Vec<u8>> {
            match node {
                Some(node) => self.chunks_content(&self.side_chunks(side, node)?),
                None => Ok(Vec::new()),
            }
        };
        let (old_bytes, new_bytes) = (read(from, &old)?, read(to, &new)?);
        let texts = (
            std::str::from_utf8(&old_bytes),
            std::str::from_utf8(&new_bytes),
        );
        let (Ok(old_text), Ok(new_text)) = texts else {
            return Ok(Some(TextDiff::Binary));
        };
        if looks_binary(&old_bytes) || looks_binary(&new_bytes) {
            return Ok(Some(TextDiff::Binary));
        }
        let name = |present: bool, prefix: &str| {
            if present {
                format!("{prefix}{}", raw.path)
            } else {
                "/dev/null".to_string()
            }
        };
        let patch = crate::edit::unified_diff(
            old_text,
            new_text,
            &name(old.is_some(), "a"),
            &name(new.is_some(), "b"),
        );
        if patch.len() > limits.max_page_bytes {
            return Ok(Some(TextDiff::TooLarge {
                limit: limits.max_page_bytes as u64,
                exceeds: Oversize::Patch,
            }));
        }
        Ok(Some(TextDiff::Unified { patch }))
    }
}

/// How two nodes at one path differ, given whether their content (a file's
/// bytes, a symlink's target) does.
fn classify(old: &Node, new: &Node, content_differs: bool) -> Option<PathChange> {
    if old.kind != new.kind {
        Some(PathChange::TypeChanged)
    } else if content_differs {
        Some(PathChange::Modified)
    } else if old.mode != new.mode {
        Some(PathChange::ModeChanged)
    } else {
        None
    }
}

/// Two files of one size: they differ in content only if their chunks do.
fn same_size_files(a: &Node, b: &Node) -> bool {
    a.kind == Kind::File && b.kind == Kind::File && a.size == b.size
}

/// What makes a deleted and an added path the same thing moved.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum MoveKey {
    File(Vec<i64>),
    Link(String),
}

pub(crate) fn entry(raw: Raw, moved_from: Option<VPath>, text: Option<TextDiff>) -> DiffEntry {
    DiffEntry {
        path: raw.path.to_string(),
        change: raw.change,
        from: moved_from.map(|p| p.to_string()),
        old: raw.old.as_ref().map(EntryInfo::from),
        new: raw.new.as_ref().map(EntryInfo::from),
        text,
    }
}

fn ordered(a: i64, b: i64) -> (i64, i64) {
    if a <= b {
        (a, b)
    } else {
        (b, a)
    }
}

/// `paths` without those below another of them, sorted.
pub(crate) fn outermost(mut paths: Vec<VPath>) -> Vec<VPath> {
    paths.sort();
    paths.dedup();
    let mut out: Vec<VPath> = Vec::with_capacity(paths.len());
    for path in paths {
        if !out.iter().any(|outer| path.starts_with(outer)) {
            out.push(path);
        }
    }
    out
}

/// The paths covered by both `a` and `b` (each a set of subtrees), as the
/// outermost roots of their intersection.
fn intersect(a: &[VPath], b: &[VPath]) -> Vec<VPath> {
    let mut out = Vec::new();
    for x in a {
        for y in b {
            if x.starts_with(y) {
                out.push(x.clone());
            } else if y.starts_with(x) {
                out.push(y.clone());
            }
        }
    }
    outermost(out)
}
