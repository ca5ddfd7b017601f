//! Bringing the disk in step with a [`Push`].
//!
//! The order of work is what makes a push safe to repeat and safe to lose:
//!
//! 1. Check every path first; a bad one refuses the whole push.
//! 2. Find every chunk that written files need. Chunks come from the staged
//!    store or from files the baseline says hold them (read and verified,
//!    then copied to the store). If any is missing, answer `Need` having
//!    changed nothing in the workspace.
//! 3. Only then write, in path order, each file through a temporary file in
//!    the same directory and a rename. Parents must be real directories: a
//!    symlink or file standing where one must be is replaced, so a write
//!    never follows a symlink out of the workspace.
//!
//! All of it is done below an open descriptor of the workspace's root (see
//! [`crate::beneath`]): a command that swaps a directory for a symlink
//! while the push runs makes the push fail, never lands a write, a mode or
//! an owner outside the workspace.
//!
//! Everything written belongs to the user commands run as (see
//! [`crate::confine`]), so they can change it.
//!
//! Paths under the system's names (see [`crate::layout`]) are not the
//! computer's to hold: they are left out, and remembered so that reports
//! can say the workspace has entries commands cannot see. When the
//! workspace is the machine's own root, so is the root's mode.
//!
//! Work a command did that the workspace side has not acknowledged is never
//! destroyed: a path whose disk state differs from the baseline and that the
//! push would overwrite or remove is first renamed to
//! `<path>.conflict-local-<n>`, which the next scan reports as a new file.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::OsString;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use stead_sync::{ApplyReply, ChunkHash, Entry, IgnoreRules, Push};

use crate::beneath::{is_missing, Dir, Stat};
use crate::confine::Isolation;
use crate::disk::{observe, perm, random_hex, Known, Observed};
use crate::error::ApiError;
use crate::paths::{self, ancestors, child, within, PathError};
use crate::state::{Container, ContainerState};

/// Applies `push` to `container` (its state is locked by the caller).
pub fn apply(
    container: &Container,
    state: &mut ContainerState,
    push: Push,
) -> Result<ApplyReply, ApiError> {
    state.check_instance(&push.instance)?;
    // A file's time is set where the file is written (not part of
    // whether it differs).
    let mtimes: HashMap<String, i64> = push
        .changes
        .iter()
        .filter_map(|change| Some((change.path.clone(), change.mtime_ms?)))
        .collect();
    let mut changes = check_changes(push.changes)?;
    leave_out_system_paths(container, state, push.full, &mut changes);
    let root = container
        .open_root()
        .map_err(|e| ApiError::io("opening the workspace", e))?;

    let missing = gather_chunks(container, &root, state, &changes)?;
    if !missing.is_empty() {
        return Ok(ApplyReply::Need { chunks: missing });
    }

    state.epoch += 1;
    let mut run = Apply {
        root,
        container,
        state,
        written: 0,
        used: HashSet::new(),
        rules: IgnoreRules::parse(&push.ignore),
        mtimes,
    };
    if push.full {
        run.remove_unlisted(&changes)?;
    }
    for (path, entry) in &changes {
        run.one(path, entry.as_ref())
            .map_err(|e| ApiError::io(format!("applying {path}"), e))?;
    }
    if push.full {
        run.state
            .baseline
            .retain(|path, _| changes.contains_key(path));
    }
    let Apply {
        written,
        used,
        rules,
        ..
    } = run;
    for hash in &used {
        container.staged.remove(hash);
    }
    state.ignore = rules;
    Ok(ApplyReply::Applied { written })
}

/// Checks every path and orders the changes by path (parents first).
fn check_changes(
    changes: Vec<stead_sync::Change>,
) -> Result<BTreeMap<String, Option<Entry>>, ApiError> {
    let mut out = BTreeMap::new();
    for change in changes {
        paths::check(&change.path)?;
        match &change.entry {
            Some(Entry::Dir { .. }) => {}
            _ if change.path == "/" => {
                return Err(PathError::Root("a file, symlink or removed").into())
            }
            Some(Entry::Symlink { target }) if target.is_empty() || target.contains('\0') => {
                return Err(ApiError::InvalidRequest(format!(
                    "symlink {} has an empty target or one with NUL",
                    change.path
                )))
            }
            _ => {}
        }
        if out.insert(change.path.clone(), change.entry).is_some() {
            return Err(PathError::Duplicate(change.path).into());
        }
    }
    Ok(out)
}

/// Takes the changes under system names out of `changes`, keeping in
/// `state.hidden` which top-level names the workspace has there; and the
/// root's own entry when the root is the machine's.
fn leave_out_system_paths(
    container: &Container,
    state: &mut ContainerState,
    full: bool,
    changes: &mut BTreeMap<String, Option<Entry>>,
) {
    if full {
        state.hidden.clear();
    }
    if container.confinement.isolation == Isolation::Container {
        changes.remove("/");
    }
    changes.retain(|path, entry| {
        let Some(name) = container.layout.system_name(path) else {
            return true;
        };
        if entry.is_some() {
            state.hidden.insert(name.to_string());
        } else if path.len() == name.len() + 1 {
            state.hidden.remove(name);
        }
        false
    });
}

/// Makes sure every chunk the push will write is in the staged store;
/// returns the hashes that are not available anywhere (first-seen order).
fn gather_chunks(
    container: &Container,
    root: &Dir,
    state: &ContainerState,
    changes: &BTreeMap<String, Option<Entry>>,
) -> Result<Vec<ChunkHash>, ApiError> {
    let mut index: HashMap<ChunkHash, Vec<(&str, usize)>> = HashMap::new();
    for (path, known) in &state.baseline {
        if let Entry::File { chunks, .. } = &known.entry {
            for (i, hash) in chunks.iter().enumerate() {
                index.entry(*hash).or_default().push((path, i));
            }
        }
    }
    let mut missing = Vec::new();
    let mut looked = HashSet::new();
    for (path, entry) in changes {
        let Some(Entry::File { chunks, .. }) = entry else {
            continue;
        };
        if content_in_place(root, state, path, chunks) {
            continue;
        }
        for hash in chunks {
            if !looked.insert(*hash) || container.staged.has(hash) {
                continue;
            }
            let mut found = false;
            for (source, i) in index.get(hash).into_iter().flatten() {
                if let Ok(Some(data)) = crate::disk::read_chunk(root, source, *i, hash) {
                    container
                        .staged
                        .put(hash, &data)
                        .map_err(|e| ApiError::io("staging a local chunk", e))?;
                    found = true;
                    break;
                }
            }
            if !found {
                missing.push(*hash);
            }
        }
    }
    Ok(missing)
}

/// Whether the baseline says `path` holds `chunks` and its stat data is
/// unchanged since (so nothing needs writing).
fn content_in_place(root: &Dir, state: &ContainerState, path: &str, chunks: &[ChunkHash]) -> bool {
    let Some(Known {
        entry: Entry::File { chunks: have, .. },
        stat: Some(seen),
    }) = state.baseline.get(path)
    else {
        return false;
    };
    have == chunks
        && root
            .parent(path)
            .and_then(|(dir, name)| dir.meta(name))
            .is_ok_and(|meta| meta.is_some_and(|meta| meta.stat == *seen))
}

/// The stat data of `name` in `dir`, which must be there.
fn stat_of(dir: &Dir, name: &str) -> io::Result<Stat> {
    dir.meta(name)?
        .map(|meta| meta.stat)
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("{name} vanished")))
}

struct Apply<'a> {
    root: Dir,
    container: &'a Container,
    state: &'a mut ContainerState,
    written: u64,
    used: HashSet<ChunkHash>,
    rules: IgnoreRules,
    /// The workspace's modification time of each pushed file (ms).
    mtimes: HashMap<String, i64>,
}

impl Apply<'_> {
    /// Records that the push decided `path` (for late acks).
    fn touched(&mut self, path: &str) {
        self.state
            .pushed_at
            .insert(path.to_string(), self.state.epoch);
    }

    /// Forgets `path` and everything under it in the baseline.
    fn forget(&mut self, path: &str) {
        let under: Vec<String> = self
            .state
            .baseline
            .range(path.to_string()..)
            .map(|(p, _)| p)
            .take_while(|p| p.starts_with(path))
            .filter(|p| within(p, path))
            .cloned()
            .collect();
        for p in under {
            self.state.baseline.remove(&p);
        }
    }

    fn one(&mut self, path: &str, entry: Option<&Entry>) -> io::Result<()> {
        self.touched(path);
        if path == "/" {
            // Only a directory is accepted at the root (see check_changes).
            if let Some(Entry::Dir { mode }) = entry {
                self.root.set_own_mode(perm(*mode))?;
                self.set_known(path, Entry::Dir { mode: perm(*mode) }, None);
            }
            return Ok(());
        }
        let name = paths::name(path);
        let dir = match entry {
            Some(_) => self.parents(path)?,
            None => match self.root.parent(path) {
                Ok((dir, _)) => dir,
                // Nothing is there to remove: its directory is gone
                // (removed by an earlier change of this push) or is not
                // one. A removal neither makes directories nor follows a
                // symlink.
                Err(e) if is_missing(&e) => {
                    self.forget(path);
                    return Ok(());
                }
                Err(e) => return Err(e),
            },
        };
        let known = self.state.baseline.get(path).cloned();
        let observed = observe(&dir, name, known.as_ref())?;
        match entry {
            None => {
                if observed != Observed::Missing {
                    self.clear(&dir, name, path, &observed, None)?;
                }
                self.forget(path);
            }
            Some(Entry::Dir { mode }) => {
                match &observed {
                    Observed::Found(Entry::Dir { .. }, _) => {}
                    Observed::Missing => self.create_dir(&dir, name)?,
                    other => {
                        self.clear(&dir, name, path, other, None)?;
                        self.forget(path);
                        self.create_dir(&dir, name)?;
                    }
                }
                dir.set_mode(name, perm(*mode))?;
                self.set_known(path, Entry::Dir { mode: perm(*mode) }, None);
            }
            Some(Entry::Symlink { target }) => {
                let wanted = Entry::Symlink {
                    target: target.clone(),
                };
                if !matches!(&observed, Observed::Found(e, _) if *e == wanted) {
                    if observed != Observed::Missing {
                        self.clear(&dir, name, path, &observed, Some(&wanted))?;
                        self.forget(path);
                    }
                    dir.symlink(target, name)?;
                    self.container.confinement.own_at(&dir, name)?;
                }
                let stat = stat_of(&dir, name)?;
                self.set_known(path, wanted, Some(stat));
            }
            Some(Entry::File { mode, size, chunks }) => {
                let mode = perm(*mode);
                if let Observed::Found(Entry::File { chunks: have, .. }, _) = &observed {
                    if have == chunks {
                        let inode = dir.inode(name)?;
                        inode.set_mode(mode)?;
                        if let Some(time) = self.mtime(path) {
                            inode.set_mtime(time)?;
                        }
                        let stat = stat_of(&dir, name)?;
                        let entry = Entry::File {
                            mode,
                            size: *size,
                            chunks: chunks.clone(),
                        };
                        self.set_known(path, entry, Some(stat));
                        return Ok(());
                    }
                }
                let wanted = Entry::File {
                    mode,
                    size: *size,
                    chunks: chunks.clone(),
                };
                match &observed {
                    Observed::Missing => {}
                    Observed::Found(Entry::Dir { .. }, _) | Observed::Unsupported(_) => {
                        self.clear(&dir, name, path, &observed, Some(&wanted))?;
                        self.forget(path);
                    }
                    // A file or symlink is replaced by the rename below,
                    // unless it holds local work.
                    Observed::Found(entry, _) => {
                        if self.local_work(path, entry) {
                            self.set_aside(&dir, name)?;
                        }
                    }
                }
                self.write_file(&dir, name, path, mode, *size, chunks)?;
                let stat = stat_of(&dir, name)?;
                self.set_known(path, wanted, Some(stat));
                self.written += 1;
            }
        }
        Ok(())
    }

    /// The workspace's modification time of pushed file `path`.
    fn mtime(&self, path: &str) -> Option<SystemTime> {
        let ms = *self.mtimes.get(path)?;
        let since = Duration::from_millis(ms.unsigned_abs());
        match ms >= 0 {
            true => UNIX_EPOCH.checked_add(since),
            false => UNIX_EPOCH.checked_sub(since),
        }
    }

    /// Creates directory `name` in `dir`, owned by the commands' user.
    fn create_dir(&self, dir: &Dir, name: &str) -> io::Result<()> {
        dir.mkdir(name, 0o777)?;
        self.container.confinement.own_at(dir, name)
    }

    fn set_known(&mut self, path: &str, entry: Entry, stat: Option<Stat>) {
        self.state
            .baseline
            .insert(path.to_string(), Known { entry, stat });
    }

    /// Whether `entry` (on disk at `path`) is work the workspace side does
    /// not know about yet.
    fn local_work(&self, path: &str, entry: &Entry) -> bool {
        self.state.baseline.get(path).map(|k| &k.entry) != Some(entry)
    }

    /// Whether anything at or under `path` (`name` in `dir`) differs from
    /// the baseline (ignored paths aside; a directory's mode alone is not
    /// work).
    fn local_work_under(&self, dir: &Dir, name: &str, path: &str) -> io::Result<bool> {
        let known = self.state.baseline.get(path);
        match observe(dir, name, known)? {
            Observed::Missing | Observed::Unsupported(_) => Ok(false),
            Observed::Found(Entry::Dir { .. }, _) => {
                if !matches!(
                    known,
                    Some(Known {
                        entry: Entry::Dir { .. },
                        ..
                    })
                ) {
                    return Ok(true);
                }
                let inner = dir.open_dir(name)?;
                for item in inner.names()? {
                    let Some(item) = item.to_str() else {
                        return Ok(true);
                    };
                    let sub = child(path, item);
                    let is_dir = inner.meta(item)?.is_some_and(|meta| meta.is_dir());
                    if self.state.ignore.is_ignored(&sub, is_dir) {
                        continue;
                    }
                    if self.local_work_under(&inner, item, &sub)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
            Observed::Found(entry, _) => Ok(self.local_work(path, &entry)),
        }
    }

    /// Removes what is at `path` (`name` in `dir`), first setting it aside
    /// if it holds local work that differs from `wanted`.
    fn clear(
        &mut self,
        dir: &Dir,
        name: &str,
        path: &str,
        observed: &Observed,
        wanted: Option<&Entry>,
    ) -> io::Result<()> {
        if let Observed::Found(entry, _) = observed {
            let same_as_wanted = wanted.is_some_and(|w| same_content(w, entry));
            if !same_as_wanted && self.local_work_under(dir, name, path)? {
                return self.set_aside(dir, name);
            }
        }
        dir.remove_all(name)
    }

    /// Renames `name` in `dir` to the first free `<name>.conflict-local-<n>`.
    fn set_aside(&self, dir: &Dir, name: &str) -> io::Result<()> {
        for n in 1.. {
            let aside = format!("{name}.conflict-local-{n}");
            if dir.meta(&aside)?.is_none() {
                return dir.rename(name, &aside);
            }
        }
        unreachable!("some conflict name is free")
    }

    /// Makes every ancestor of `path` a real directory; the innermost one,
    /// opened (each reached from the one before, never through a symlink).
    fn parents(&mut self, path: &str) -> io::Result<Dir> {
        let mut dir = self.root.walk("/")?;
        for ancestor in ancestors(path).map(str::to_string).collect::<Vec<_>>() {
            let name = paths::name(&ancestor);
            let known = self.state.baseline.get(&ancestor).cloned();
            let create = match observe(&dir, name, known.as_ref())? {
                Observed::Found(Entry::Dir { .. }, _) => false,
                Observed::Missing => true,
                other => {
                    self.clear(&dir, name, &ancestor, &other, Some(&Entry::Dir { mode: 0 }))?;
                    self.forget(&ancestor);
                    true
                }
            };
            if create {
                self.create_dir(&dir, name)?;
            }
            let inner = dir.open_dir(name)?;
            if create {
                // The workspace has a directory here (it holds what is
                // pushed under it), so the baseline has one too.
                let mode = perm(inner.own_meta()?.stat.mode);
                self.set_known(&ancestor, Entry::Dir { mode }, None);
            }
            dir = inner;
        }
        Ok(dir)
    }

    /// Writes file `name` in `dir` from staged chunks through a temporary
    /// file and a rename.
    fn write_file(
        &mut self,
        dir: &Dir,
        name: &str,
        path: &str,
        mode: u32,
        size: u64,
        chunks: &[ChunkHash],
    ) -> io::Result<()> {
        let tmp = format!(".{name}.stead-{}", random_hex(6)?);
        let result = (|| {
            let mut file = dir.create_new(&tmp)?;
            let mut total = 0u64;
            for hash in chunks {
                let data = self.container.staged.get(hash)?.ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::NotFound,
                        format!("chunk {hash} vanished from the store"),
                    )
                })?;
                total += data.len() as u64;
                file.write_all(&data)?;
                self.used.insert(*hash);
            }
            if total != size {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{path}: chunks hold {total} bytes, the entry says {size}"),
                ));
            }
            if let Some(time) = self.mtime(path) {
                file.set_modified(time)?;
            }
            // Owner first: a change of owner clears set-id bits. Both on
            // the descriptor: the new file, wherever its name is now.
            self.container.confinement.own_file(&file)?;
            file.set_permissions(fs::Permissions::from_mode(mode))?;
            drop(file);
            dir.rename(&tmp, name)
        })();
        if result.is_err() {
            let _ = dir.remove_all(&tmp);
        }
        result
    }

    /// With a full push: removes every non-ignored path on disk that is not
    /// listed (nor an ancestor of a listed path).
    fn remove_unlisted(
        &mut self,
        changes: &BTreeMap<String, Option<Entry>>,
    ) -> Result<(), ApiError> {
        let mut keep: HashSet<&str> = HashSet::new();
        for (path, entry) in changes {
            if entry.is_some() {
                keep.insert(path);
                keep.extend(ancestors(path));
            }
        }
        // Directories are named by path and walked again from the root
        // when used, so no descriptor is held for each one waiting.
        let mut doomed: Vec<(String, OsString, Option<String>)> = Vec::new();
        let mut stack = vec!["/".to_string()];
        while let Some(path) = stack.pop() {
            let reading = |e| ApiError::io(format!("reading {path}"), e);
            let dir = self.root.walk(&path).map_err(reading)?;
            for item in dir.names().map_err(reading)? {
                if path == "/" && self.container.layout.is_system(&item) {
                    continue;
                }
                let is_dir = dir.meta(&item).is_ok_and(|m| m.is_some_and(|m| m.is_dir()));
                let Some(name) = item.to_str().map(str::to_string) else {
                    doomed.push((path.clone(), item, None));
                    continue;
                };
                let sub = child(&path, &name);
                if self.rules.is_ignored(&sub, is_dir) {
                    continue;
                }
                if keep.contains(sub.as_str()) {
                    if is_dir {
                        stack.push(sub);
                    }
                } else {
                    doomed.push((path.clone(), item, Some(sub)));
                }
            }
        }
        for (parent, item, path) in doomed {
            let shown = child(&parent, &item.to_string_lossy());
            let result = self.root.walk(&parent).and_then(|dir| match &path {
                Some(path) => {
                    self.touched(path);
                    let known = self.state.baseline.get(path).cloned();
                    let name = paths::name(path);
                    observe(&dir, name, known.as_ref())
                        .and_then(|observed| self.clear(&dir, name, path, &observed, None))
                }
                // A name the workspace cannot hold was never work it knew.
                None => dir.remove_all(&item),
            });
            result.map_err(|e| ApiError::io(format!("removing {shown}"), e))?;
            if let Some(path) = path {
                self.forget(&path);
            }
        }
        Ok(())
    }
}

/// Whether two entries hold the same content (modes aside).
fn same_content(a: &Entry, b: &Entry) -> bool {
    match (a, b) {
        (Entry::File { chunks: x, .. }, Entry::File { chunks: y, .. }) => x == y,
        (Entry::Dir { .. }, Entry::Dir { .. }) => true,
        (Entry::Symlink { target: x }, Entry::Symlink { target: y }) => x == y,
        _ => false,
    }
}
