//! What a command changed: the workspace directory against the baseline.
//!
//! After every command the program walks the workspace (never following a
//! symlink, never descending into ignored directories) and compares each
//! path with what the workspace side knows. The result is kept as the
//! exec's pending [`Report`] until acknowledged, so a Worker that fails
//! before it applied the changes gets them again from the next command.
//!
//! Names at the root that are the system's (see [`crate::layout`]) are not
//! walked: nothing under them is the workspace's. The workspace's own
//! entries with such names, which commands could not see, are listed as
//! skipped, so every report says so. Things the workspace cannot hold are
//! listed as skipped rather than reported: FIFOs, sockets and devices. A
//! symlink is reported as it is, whatever its target: commands see the
//! workspace as `/`, so an absolute target or `..` at the root means the
//! same path in the workspace as on the computer. A path that is on disk
//! but skipped or unreadable is never reported deleted.
//!
//! The walk holds each directory open and looks at its names relative to
//! it (see [`crate::beneath`]): a directory a command swaps for a symlink
//! while the scan runs is read as it was or not at all, never through the
//! link, so nothing outside the workspace is reported as its content.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::io;

use stead_sync::{Change, ChunkHash, Entry, IgnoreRules, Skipped};

use crate::beneath::Dir;
use crate::disk::{observe, perm, Baseline, Known, Observed};
use crate::layout::Layout;
use crate::paths::{child, within};

/// The workspace as the scan sees it.
pub struct Workspace<'a> {
    /// Its root directory, opened.
    pub root: Dir,
    pub layout: &'a Layout,
    /// Top-level names the workspace has entries at that the system's
    /// directories stand in for.
    pub hidden: &'a BTreeSet<String>,
}

/// One exec's changes and what is needed to serve and acknowledge them.
#[derive(Debug, Clone)]
pub struct Report {
    /// Created or modified paths and `entry: None` for deleted ones, by path.
    pub changes: Vec<Change>,
    pub skipped: Vec<Skipped>,
    /// The entry and stat data of each changed path that exists.
    pub snapshot: HashMap<String, Known>,
    /// Where each chunk of a changed file is: path and chunk index.
    pub index: HashMap<ChunkHash, (String, usize)>,
    /// The push count when the scan ran (see `ContainerState::pushed_at`).
    pub epoch: u64,
    /// Orders reports: an acknowledged report supersedes older ones.
    pub seq: u64,
}

/// Compares the workspace at `root` with `baseline`. Files whose content is
/// unchanged but whose stat data moved (a `touch`) get the new stat data in
/// the baseline directly, so they are not hashed again.
pub fn scan(
    workspace: Workspace<'_>,
    baseline: &mut Baseline,
    rules: &IgnoreRules,
    epoch: u64,
    seq: u64,
) -> io::Result<Report> {
    let root = workspace.root;
    let mut walk = Walk {
        baseline,
        rules,
        layout: workspace.layout,
        changes: Vec::new(),
        skipped: workspace
            .hidden
            .iter()
            .map(|name| Skipped {
                path: format!("/{name}"),
                reason: format!(
                    "/{name} is the computer's own directory: commands see the \
                     system's /{name}, not the workspace's"
                ),
            })
            .collect(),
        snapshot: HashMap::new(),
        seen: HashSet::new(),
        opaque: Vec::new(),
    };
    // The root itself is listed only if the workspace side pushed it.
    let root_meta = root.own_meta()?;
    walk.seen.insert("/".to_string());
    if let Some(known) = walk.baseline.get("/") {
        let entry = Entry::Dir {
            mode: perm(root_meta.stat.mode),
        };
        if known.entry != entry {
            walk.change("/", Some((entry, None)));
        }
    }
    walk.dir(&root, "/")?;

    let Walk {
        baseline,
        mut changes,
        skipped,
        snapshot,
        seen,
        opaque,
        ..
    } = walk;
    for (path, known) in baseline.iter() {
        let is_dir = matches!(known.entry, Entry::Dir { .. });
        if seen.contains(path)
            || rules.is_ignored(path, is_dir)
            || opaque.iter().any(|dir| within(path, dir))
        {
            continue;
        }
        changes.push(Change {
            path: path.clone(),
            entry: None,
            mtime_ms: None,
        });
    }
    changes.sort_by(|a, b| a.path.cmp(&b.path));

    let mut index = HashMap::new();
    for change in &changes {
        if let Some(Entry::File { chunks, .. }) = &change.entry {
            for (i, hash) in chunks.iter().enumerate() {
                index
                    .entry(*hash)
                    .or_insert_with(|| (change.path.clone(), i));
            }
        }
    }
    Ok(Report {
        changes,
        skipped,
        snapshot,
        index,
        epoch,
        seq,
    })
}

impl Report {
    /// Keeps the first `limit` changes (in path order) and what serving
    /// and acknowledging them needs; whether any were dropped. The dropped
    /// ones stay as they differ from the baseline, so a later scan reports
    /// them again.
    pub fn truncate(&mut self, limit: usize) -> bool {
        if self.changes.len() <= limit {
            return false;
        }
        let dropped = self.changes.split_off(limit);
        for change in &dropped {
            self.snapshot.remove(&change.path);
        }
        // Changes are in path order and a hash is indexed at its first
        // file, so an entry pointing at or past the cut is a dropped one's.
        let cut = &dropped[0].path;
        self.index
            .retain(|_, (path, _)| path.as_str() < cut.as_str());
        true
    }
}

struct Walk<'a> {
    baseline: &'a mut Baseline,
    rules: &'a IgnoreRules,
    layout: &'a Layout,
    changes: Vec<Change>,
    skipped: Vec<Skipped>,
    snapshot: HashMap<String, Known>,
    /// Paths present on disk (reported or not).
    seen: HashSet<String>,
    /// Directories that could not be read: nothing under them is deleted.
    opaque: Vec<String>,
}

impl Walk<'_> {
    fn change(&mut self, path: &str, found: Option<(Entry, Option<crate::beneath::Stat>)>) {
        let mtime_ms = match &found {
            Some((Entry::File { .. }, Some(stat))) => Some(stat.mtime_ms()),
            _ => None,
        };
        let entry = found.map(|(entry, stat)| {
            self.snapshot.insert(
                path.to_string(),
                Known {
                    entry: entry.clone(),
                    stat,
                },
            );
            entry
        });
        self.changes.push(Change {
            path: path.to_string(),
            entry,
            mtime_ms,
        });
    }

    fn skip(&mut self, path: &str, reason: impl Into<String>) {
        self.skipped.push(Skipped {
            path: path.to_string(),
            reason: reason.into(),
        });
    }

    fn dir(&mut self, dir: &Dir, path: &str) -> io::Result<()> {
        let mut names = match dir.names() {
            Ok(names) => names,
            Err(e) if path == "/" => return Err(e),
            Err(e) => {
                self.opaque.push(path.to_string());
                self.skip(path, format!("unreadable directory: {e}"));
                return Ok(());
            }
        };
        names.sort();
        if path == "/" {
            names.retain(|name| !self.layout.is_system(name));
        }
        for name in names {
            let Some(name) = name.to_str() else {
                let shown = child(path, &name.to_string_lossy());
                self.skip(&shown, "the name is not UTF-8");
                self.opaque.push(shown);
                continue;
            };
            let path = child(path, name);
            self.entry(dir, name, &path)?;
        }
        Ok(())
    }

    /// Looks at `name` in `dir`, at workspace path `path`.
    fn entry(&mut self, dir: &Dir, name: &str, path: &str) -> io::Result<()> {
        let is_dir = dir.meta(name).is_ok_and(|m| m.is_some_and(|m| m.is_dir()));
        if self.rules.is_ignored(path, is_dir) {
            return Ok(());
        }
        let known = self.baseline.get(path);
        let observed = match observe(dir, name, known) {
            Ok(observed) => observed,
            Err(e) => {
                self.seen.insert(path.to_string());
                self.opaque.push(path.to_string());
                self.skip(path, format!("unreadable: {e}"));
                return Ok(());
            }
        };
        let (entry, stat) = match observed {
            Observed::Missing => return Ok(()),
            Observed::Unsupported(reason) => {
                self.seen.insert(path.to_string());
                self.skip(path, reason);
                return Ok(());
            }
            Observed::Found(entry, stat) => (entry, stat),
        };
        self.seen.insert(path.to_string());
        let known_entry = known.map(|k| &k.entry);
        if known_entry == Some(&entry) {
            if let (Entry::File { .. }, Some(known)) = (&entry, self.baseline.get_mut(path)) {
                known.stat = Some(stat);
            }
        } else {
            let stat = (!matches!(entry, Entry::Dir { .. })).then_some(stat);
            self.change(path, Some((entry.clone(), stat)));
        }
        if matches!(entry, Entry::Dir { .. }) {
            match dir.open_dir(name) {
                Ok(inner) => self.dir(&inner, path)?,
                // Swapped for something else since it was looked at.
                Err(e) => {
                    self.opaque.push(path.to_string());
                    self.skip(path, format!("unreadable directory: {e}"));
                }
            }
        }
        Ok(())
    }
}
