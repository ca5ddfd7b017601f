//! The worktree against the index and the index against `HEAD`: what
//! `git status`, `git diff` and `git commit -a` see.
//!
//! A tracked file whose size and modification time (to the millisecond,
//! what the workspace keeps) match its index entry counts as unchanged
//! without being read, unless it changed in the same millisecond the index
//! was written (git's "racy" case): then, as when the stat data differ, its
//! content is hashed. Entries found unchanged that way get fresh stat data,
//! so the next look is cheap (git refreshes its index the same way).

use std::collections::{BTreeMap, HashMap, HashSet};

use gix_hash::ObjectId;
use gix_object::Kind as ObjectKind;

use crate::error::{At, Result};
use crate::files::{FileError, Kind, Meta};
use crate::ignore::{Ignores, Patterns};
use crate::index::{stamp, Index, IndexEntry, MODE_EXEC, MODE_FILE, MODE_GITLINK, MODE_SYMLINK};
use crate::odb::hash;
use crate::repo::{Flat, Repo};

/// How a path differs between two sides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Change {
    Added,
    Deleted,
    Modified,
}

/// Which untracked files to list (`-u`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Untracked {
    /// None (`-uno`).
    No,
    /// A directory holding only untracked files as `dir/` (the default).
    Normal,
    /// Every file (`-uall`).
    All,
}

/// What `git status` reports.
#[derive(Debug, Default)]
pub struct Status {
    /// `HEAD` → index.
    pub staged: Vec<(String, Change)>,
    /// Index → worktree.
    pub unstaged: Vec<(String, Change)>,
    /// Not in the index and not ignored (a directory ends in `/`).
    pub untracked: Vec<String>,
    /// Paths with conflict stages, each with the stages it has as a mask
    /// (1: base, 2: ours, 4: theirs), as git's status reads them.
    pub unmerged: Vec<(String, u8)>,
    /// Staged additions that are exact renames: new path → old path (the
    /// old path's deletion is not in `staged`).
    pub renamed: BTreeMap<String, String>,
}

/// The mode git records for a worktree node.
pub fn mode_of(meta: &Meta) -> u32 {
    match meta.kind {
        Kind::File { executable: true } => MODE_EXEC,
        Kind::File { executable: false } => MODE_FILE,
        Kind::Symlink => MODE_SYMLINK,
        Kind::Dir => MODE_GITLINK,
    }
}

/// The blob a worktree file or symlink would be, and its mode.
pub fn worktree_blob(repo: &Repo<'_>, rel: &str, meta: &Meta) -> Result<(u32, Vec<u8>)> {
    let path = repo.abs(rel);
    let data = match meta.kind {
        Kind::Symlink => repo.files.readlink(&path).at(&path)?.into_bytes(),
        _ => repo.files.read(&path).at(&path)?,
    };
    Ok((mode_of(meta), data))
}

/// The ignore rules at the worktree's root (`info/exclude`, `.gitignore`).
fn root_ignores(repo: &Repo<'_>) -> Result<Ignores> {
    let exclude_path = crate::files::join(&repo.git_dir, "info/exclude");
    let exclude = crate::files::read_optional(repo.files, &exclude_path)
        .at(&exclude_path)?
        .map(|text| Patterns::parse("", &text));
    Ok(Ignores::new(exclude))
}

/// Whether the filesystem's executable bit counts (`core.filemode`).
pub fn filemode(repo: &Repo<'_>) -> Result<bool> {
    Ok(repo
        .config()?
        .get_bool(&crate::config::Key::parse("core.filemode")?)
        .unwrap_or(true))
}

struct Walk<'r, 'a> {
    repo: &'r Repo<'a>,
    tracked: HashMap<String, usize>,
    tracked_dirs: HashSet<String>,
    ignores: Ignores,
    untracked_mode: Untracked,
    untracked: Vec<String>,
    /// Stat data of each tracked file seen, by index position.
    seen: HashMap<usize, Meta>,
}

impl Walk<'_, '_> {
    /// Walks `dir` (worktree-relative); returns whether it holds anything
    /// untracked and not ignored (for collapsing to `dir/`).
    fn dir(&mut self, dir: &str, report: bool) -> Result<bool> {
        let abs = self.repo.abs(dir);
        let entries = match self.repo.files.list(&abs) {
            Ok(entries) => entries,
            Err(FileError::NotFound) => return Ok(false),
            Err(e) => return Err(e).at(&abs),
        };
        let pushed = if entries.iter().any(|e| e.name == ".gitignore") {
            let path = crate::files::join(&abs, ".gitignore");
            let text = self.repo.files.read(&path).at(&path)?;
            self.ignores.push(Patterns::parse(dir, &text));
            true
        } else {
            false
        };
        let mut any = false;
        for entry in entries {
            if entry.name == ".git" {
                continue;
            }
            let rel = if dir.is_empty() {
                entry.name.clone()
            } else {
                format!("{dir}/{}", entry.name)
            };
            if let Some(&i) = self.tracked.get(&rel) {
                self.seen.insert(i, entry.meta);
                continue;
            }
            let is_dir = entry.meta.kind == Kind::Dir;
            if is_dir && self.tracked_dirs.contains(&rel) {
                self.dir(&rel, report)?;
                continue;
            }
            if self.ignores.is_ignored(&rel, is_dir) {
                continue;
            }
            if is_dir {
                // A nested repository shows as itself, never descended.
                let nested = self
                    .repo
                    .files
                    .stat(&crate::files::join(&self.repo.abs(&rel), ".git/HEAD"))
                    .is_ok();
                if nested {
                    any = true;
                    if report && self.untracked_mode != Untracked::No {
                        self.untracked.push(format!("{rel}/"));
                    }
                    continue;
                }
                let collapse = self.untracked_mode == Untracked::Normal;
                let inner = self.dir(&rel, report && !collapse)?;
                if inner {
                    any = true;
                    if collapse && report {
                        self.untracked.push(format!("{rel}/"));
                    }
                }
            } else {
                any = true;
                if report && self.untracked_mode != Untracked::No {
                    self.untracked.push(rel);
                }
            }
        }
        if pushed {
            self.ignores.pop();
        }
        Ok(any)
    }
}

/// Compares the worktree with `index` (refreshing the stat data of
/// entries found unchanged) and `index` with `head`.
pub fn status(
    repo: &Repo<'_>,
    index: &mut Index,
    written_ms: Option<i64>,
    head: &Flat,
    untracked: Untracked,
) -> Result<(Status, bool)> {
    let mut out = Status::default();
    let filemode = filemode(repo)?;
    // HEAD → index.
    let staged = Repo::index_files(index);
    for (path, (mode, id)) in &staged {
        match head.get(path) {
            None => out.staged.push((path.clone(), Change::Added)),
            Some((m, i)) if m != mode || i != id => {
                out.staged.push((path.clone(), Change::Modified))
            }
            Some(_) => {}
        }
    }
    let mut unmerged: BTreeMap<String, u8> = BTreeMap::new();
    for e in index.entries.iter().filter(|e| e.stage != 0) {
        *unmerged.entry(e.path.clone()).or_default() |= 1 << (e.stage - 1);
    }
    for path in head.keys() {
        if !staged.contains_key(path) && !unmerged.contains_key(path) {
            out.staged.push((path.clone(), Change::Deleted));
        }
    }
    out.staged.sort();
    // Exact renames: a deleted path whose blob and mode an added one has.
    let mut added: HashMap<(u32, ObjectId), Vec<String>> = HashMap::new();
    for (p, c) in &out.staged {
        if *c == Change::Added {
            added.entry(staged[p]).or_default().push(p.clone());
        }
    }
    let mut gone = HashSet::new();
    for (p, c) in &out.staged {
        if *c == Change::Deleted {
            if let Some(to) = added
                .get_mut(&head[p])
                .and_then(|c| (!c.is_empty()).then(|| c.remove(0)))
            {
                gone.insert(p.clone());
                out.renamed.insert(to, p.clone());
            }
        }
    }
    out.staged
        .retain(|(p, c)| !(gone.contains(p) && *c == Change::Deleted));
    out.unmerged = unmerged.into_iter().collect();
    // Index → worktree, and what is untracked.
    let mut tracked = HashMap::new();
    let mut tracked_dirs = HashSet::new();
    for (i, e) in index.entries.iter().enumerate() {
        tracked.insert(e.path.clone(), i);
        let mut d = e.path.as_str();
        while let Some(at) = d.rfind('/') {
            d = &d[..at];
            if !tracked_dirs.insert(d.to_string()) {
                break;
            }
        }
    }
    let mut walk = Walk {
        repo,
        tracked,
        tracked_dirs,
        ignores: root_ignores(repo)?,
        untracked_mode: untracked,
        untracked: Vec::new(),
        seen: HashMap::new(),
    };
    walk.dir("", true)?;
    let mut refreshed = false;
    let seen = std::mem::take(&mut walk.seen);
    out.untracked = std::mem::take(&mut walk.untracked);
    out.untracked.sort();
    for (i, entry) in index.entries.iter_mut().enumerate() {
        if entry.stage != 0 {
            continue;
        }
        let Some(meta) = seen.get(&i) else {
            out.unstaged.push((entry.path.clone(), Change::Deleted));
            continue;
        };
        match compare(repo, entry, meta, written_ms, filemode)? {
            Compared::Same => {}
            Compared::SameContent => {
                entry.mtime = stamp(meta.mtime_ms);
                entry.size = meta.size as u32;
                refreshed = true;
            }
            Compared::Modified => out.unstaged.push((entry.path.clone(), Change::Modified)),
            Compared::Gone => out.unstaged.push((entry.path.clone(), Change::Deleted)),
        }
    }
    out.unstaged.sort();
    Ok((out, refreshed))
}

enum Compared {
    /// The stat data say unchanged.
    Same,
    /// The stat data differ but the content is the same.
    SameContent,
    Modified,
    /// What is there is no longer a file (a directory).
    Gone,
}

fn stat_matches(entry: &IndexEntry, meta: &Meta, written_ms: Option<i64>) -> bool {
    let (secs, nanos) = stamp(meta.mtime_ms);
    let racy = written_ms.is_none_or(|w| w <= meta.mtime_ms);
    !racy
        && entry.size as u64 == meta.size
        && entry.mtime.0 == secs
        && entry.mtime.1 / 1_000_000 == nanos / 1_000_000
}

fn compare(
    repo: &Repo<'_>,
    entry: &IndexEntry,
    meta: &Meta,
    written_ms: Option<i64>,
    filemode: bool,
) -> Result<Compared> {
    if entry.mode == MODE_GITLINK {
        return Ok(Compared::Same);
    }
    if meta.kind == Kind::Dir {
        return Ok(Compared::Gone);
    }
    let mode = mode_of(meta);
    let mode_differs = if filemode {
        mode != entry.mode
    } else {
        (mode == MODE_SYMLINK) != (entry.mode == MODE_SYMLINK)
    };
    if mode_differs {
        return Ok(Compared::Modified);
    }
    if stat_matches(entry, meta, written_ms) {
        return Ok(Compared::Same);
    }
    // A size that differs settles it, unless the entry's stat data were
    // never filled in (size 0: a reset or a checkout left it so), as git
    // reads a "smudged" entry.
    if meta.kind != Kind::Symlink && entry.size != 0 && meta.size != entry.size as u64 {
        return Ok(Compared::Modified);
    }
    let (_, data) = worktree_blob(repo, &entry.path, meta)?;
    if hash(ObjectKind::Blob, &data) == entry.id {
        Ok(Compared::SameContent)
    } else {
        Ok(Compared::Modified)
    }
}

/// Stages the worktree's `rel` (a file or symlink): writes its blob and
/// puts a fresh entry in `index`. `filemode`: [`filemode`]'s answer.
pub fn stage(
    repo: &Repo<'_>,
    index: &mut Index,
    rel: &str,
    meta: &Meta,
    filemode: bool,
) -> Result<ObjectId> {
    let (mode, data) = worktree_blob(repo, rel, meta)?;
    let id = repo.odb.write(ObjectKind::Blob, &data)?;
    let mode = match index.find(rel) {
        // Without core.filemode the recorded bit stays as it was.
        Some(i) if !filemode && mode != MODE_SYMLINK => index.entries[i].mode,
        _ => mode,
    };
    index.upsert(IndexEntry::new(
        rel.to_string(),
        mode,
        id,
        meta.size,
        meta.mtime_ms,
    ));
    Ok(id)
}

/// Every file under worktree-relative `dir` that is not ignored (tracked
/// ones always), for `git add DIR`.
pub fn files_under(repo: &Repo<'_>, index: &Index, dir: &str) -> Result<Vec<(String, Meta)>> {
    let mut out = Vec::new();
    let tracked: HashSet<&str> = index.entries.iter().map(|e| e.path.as_str()).collect();
    let mut ignores = root_ignores(repo)?;
    // The .gitignore files from the root down to `dir` apply.
    let mut prefix = String::new();
    let parts: Vec<&str> = if dir.is_empty() {
        Vec::new()
    } else {
        dir.split('/').collect()
    };
    for (n, part) in std::iter::once("").chain(parts.iter().copied()).enumerate() {
        if n > 0 {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(part);
        }
        if n == parts.len() {
            break;
        }
        let path = crate::files::join(&repo.abs(&prefix), ".gitignore");
        if let Some(text) = crate::files::read_optional(repo.files, &path).at(&path)? {
            ignores.push(Patterns::parse(&prefix, &text));
        }
    }
    collect(repo, &tracked, &mut ignores, dir, &mut out)?;
    Ok(out)
}

fn collect(
    repo: &Repo<'_>,
    tracked: &HashSet<&str>,
    ignores: &mut Ignores,
    dir: &str,
    out: &mut Vec<(String, Meta)>,
) -> Result<()> {
    let abs = repo.abs(dir);
    let entries = repo.files.list(&abs).at(&abs)?;
    let pushed = if entries.iter().any(|e| e.name == ".gitignore") {
        let path = crate::files::join(&abs, ".gitignore");
        ignores.push(Patterns::parse(dir, &repo.files.read(&path).at(&path)?));
        true
    } else {
        false
    };
    for entry in entries {
        if entry.name == ".git" {
            continue;
        }
        let rel = if dir.is_empty() {
            entry.name.clone()
        } else {
            format!("{dir}/{}", entry.name)
        };
        let is_dir = entry.meta.kind == Kind::Dir;
        if !tracked.contains(rel.as_str()) && ignores.is_ignored(&rel, is_dir) {
            // Tracked files below an ignored directory still count.
            if is_dir {
                let inside = format!("{rel}/");
                if tracked.iter().any(|t| t.starts_with(&inside)) {
                    collect(repo, tracked, ignores, &rel, out)?;
                }
            }
            continue;
        }
        if is_dir {
            let nested = repo
                .files
                .stat(&crate::files::join(&repo.abs(&rel), ".git/HEAD"))
                .is_ok();
            if !nested {
                collect(repo, tracked, ignores, &rel, out)?;
            }
        } else {
            out.push((rel, entry.meta));
        }
    }
    if pushed {
        ignores.pop();
    }
    Ok(())
}

/// Whether worktree-relative `rel` is ignored (for `git add` of a named file).
pub fn is_ignored(repo: &Repo<'_>, rel: &str, is_dir: bool) -> Result<bool> {
    let mut ignores = root_ignores(repo)?;
    let mut prefix = String::new();
    let parts: Vec<&str> = rel.split('/').collect();
    for (n, part) in parts.iter().enumerate() {
        let path = crate::files::join(&repo.abs(&prefix), ".gitignore");
        if let Some(text) = crate::files::read_optional(repo.files, &path).at(&path)? {
            ignores.push(Patterns::parse(&prefix, &text));
        }
        if !prefix.is_empty() {
            prefix.push('/');
        }
        prefix.push_str(part);
        let last = n + 1 == parts.len();
        if ignores.is_ignored(&prefix, !last || is_dir) {
            return Ok(true);
        }
    }
    Ok(false)
}
