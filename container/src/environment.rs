//! Packing and restoring the durable environment (see
//! `stead_sync::environment`): the workspace's ignored paths and the
//! commands' per-user directory, which the sync leaves on the computer.
//!
//! **Pack** walks both below open directories (see [`crate::beneath`]): a
//! command swapping a directory for a symlink while the walk runs cannot
//! make the program read outside them. Every file is hashed; the pack
//! remembers where each chunk is, and each is hashed again when served, so
//! a file that changed since is refused, never sent as the snapshot's.
//!
//! **Restore** writes nothing until every chunk is staged and intact; then
//! it writes in manifest order (parents first), as the commands' user. A
//! failure midway removes what it wrote, so the computer is left as a
//! fresh one: a restore is whole or not at all. Only paths the workspace's
//! ignore rules still keep on the computer are restored (one that is no
//! longer ignored would be synced into the workspace by the next scan).

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::{self, Write};
use std::time::{Duration, UNIX_EPOCH};

use stead_sync::environment::{
    in_user_dir, EnvChunkRequest, EnvEntry, EnvKind, PackReply, PackRequest, Restore, RestoreReply,
    USER_DIR,
};
use stead_sync::{frame, ChunkHash, Entry, Skipped, CHUNK_SIZE};

use crate::beneath::{is_missing, Dir, Kind};
use crate::disk::{hash_file, perm, random_hex, read_chunk};
use crate::error::ApiError;
use crate::paths::{self, child};
use crate::state::{Container, ContainerState};

/// Where a packed chunk is: which root, the path below it, which chunk.
#[derive(Debug, Clone)]
struct Source {
    user: bool,
    path: String,
    index: usize,
}

/// The last pack, whose chunks the workspace side fetches.
#[derive(Debug, Default)]
pub struct Pack {
    id: String,
    sources: HashMap<ChunkHash, Source>,
}

/// The two roots, opened.
struct Roots {
    workspace: Dir,
    user: Dir,
}

impl Roots {
    fn open(container: &Container) -> Result<Roots, ApiError> {
        let user = container.confinement.owner.map(|owner| owner.uid);
        Ok(Roots {
            workspace: container
                .open_root()
                .map_err(|e| ApiError::io("opening the workspace", e))?,
            user: Dir::root(&container.user_dir(), user)
                .map_err(|e| ApiError::io("opening the user directory", e))?,
        })
    }

    /// The root a manifest path lies in, and the path below it.
    fn of<'p>(&self, path: &'p str) -> (&Dir, bool, &'p str) {
        match path.strip_prefix(USER_DIR).filter(|_| in_user_dir(path)) {
            Some(rest) => (&self.user, true, rest),
            None => (&self.workspace, false, path),
        }
    }
}

/// Packs the environment (the caller holds the state's lock).
pub fn pack(
    container: &Container,
    state: &mut ContainerState,
    request: PackRequest,
) -> Result<PackReply, ApiError> {
    let roots = Roots::open(container)?;
    let mut walk = Walk {
        limit: request.limit_bytes,
        ..Walk::default()
    };
    let fail = |e| ApiError::io("packing the environment", e);
    walk.ignored_in(container, state, &roots.workspace, "/")
        .map_err(fail)?;
    for name in sorted_names(&roots.user).map_err(fail)? {
        walk.tree(&roots.user, true, &name, &child(USER_DIR, &name))
            .map_err(fail)?;
    }
    if walk.bytes > walk.limit {
        state.environment = None;
        return Ok(PackReply::TooLarge {
            bytes: walk.bytes,
            limit: walk.limit,
        });
    }
    let id = random_hex(8).map_err(fail)?;
    state.environment = Some(Pack {
        id: id.clone(),
        sources: walk.sources,
    });
    Ok(PackReply::Packed {
        pack: id,
        entries: walk.entries,
        bytes: walk.bytes,
        skipped: walk.skipped,
    })
}

fn sorted_names(dir: &Dir) -> io::Result<Vec<String>> {
    let mut names: Vec<String> = dir
        .names()?
        .into_iter()
        .filter_map(|name| name.into_string().ok())
        .collect();
    names.sort();
    Ok(names)
}

/// A pack in progress.
#[derive(Default)]
struct Walk {
    entries: Vec<EnvEntry>,
    skipped: Vec<Skipped>,
    sources: HashMap<ChunkHash, Source>,
    /// The first path seen of each file with several names.
    links: HashMap<u64, String>,
    bytes: u64,
    limit: u64,
}

impl Walk {
    /// Finds the ignored paths in workspace directory `dir` (at `path`)
    /// and below, and packs each whole.
    fn ignored_in(
        &mut self,
        container: &Container,
        state: &ContainerState,
        dir: &Dir,
        path: &str,
    ) -> io::Result<()> {
        for name in sorted_names(dir)? {
            if path == "/" && container.layout.is_system(OsStr::new(&name)) {
                continue;
            }
            let Some(meta) = dir.meta(&name)? else {
                continue;
            };
            let at = child(path, &name);
            if state.ignore.is_ignored(&at, meta.is_dir()) {
                self.tree(dir, false, &name, &at)?;
            } else if meta.is_dir() {
                self.ignored_in(container, state, &dir.open_dir(&name)?, &at)?;
            }
        }
        Ok(())
    }

    /// Packs `name` in `dir` (manifest path `path`) and all below it.
    fn tree(&mut self, dir: &Dir, user: bool, name: &str, path: &str) -> io::Result<()> {
        let Some(meta) = dir.meta(name)? else {
            return Ok(());
        };
        let skip = |reason: &str| Skipped {
            path: path.to_string(),
            reason: reason.to_string(),
        };
        let kind = match meta.kind {
            Kind::Dir => EnvKind::Dir {
                mode: perm(meta.stat.mode),
            },
            Kind::Symlink => EnvKind::Symlink {
                target: dir.readlink(name)?.into_string().map_err(|_| {
                    io::Error::new(io::ErrorKind::InvalidData, "symlink target is not UTF-8")
                })?,
            },
            Kind::File => match self.links.get(&meta.stat.ino) {
                Some(to) if meta.links > 1 => EnvKind::Hardlink { to: to.clone() },
                _ => match self.file(dir, user, name, path, meta.stat.size) {
                    Ok(Some(kind)) => {
                        if meta.links > 1 {
                            self.links.insert(meta.stat.ino, path.to_string());
                        }
                        kind
                    }
                    Ok(None) => return Ok(()),
                    Err(error) if error.kind() == io::ErrorKind::PermissionDenied => {
                        self.skipped.push(skip(&error.to_string()));
                        return Ok(());
                    }
                    Err(error) => return Err(error),
                },
            },
            Kind::Fifo | Kind::Socket | Kind::Device | Kind::Unknown => {
                let what = match meta.kind {
                    Kind::Fifo => "a FIFO",
                    Kind::Socket => "a socket",
                    Kind::Device => "a device file",
                    _ => "an unknown file type",
                };
                self.skipped.push(skip(&format!("{what} is not kept")));
                return Ok(());
            }
        };
        self.entries.push(EnvEntry {
            path: path.to_string(),
            kind,
        });
        if meta.is_dir() {
            let inner = dir.open_dir(name)?;
            for name in sorted_names(&inner)? {
                self.tree(&inner, user, &name, &child(path, &name))?;
            }
        }
        Ok(())
    }

    /// A regular file's entry, or `None` past the limit, where only its
    /// size is counted (the answer is then "too large": no content is
    /// needed).
    fn file(
        &mut self,
        dir: &Dir,
        user: bool,
        name: &str,
        path: &str,
        size: u64,
    ) -> io::Result<Option<EnvKind>> {
        if self.bytes + size > self.limit {
            self.bytes += size;
            return Ok(None);
        }
        let (entry, stat) = hash_file(dir, OsStr::new(name))?;
        let Entry::File { mode, size, chunks } = entry else {
            unreachable!("hash_file answers a file");
        };
        self.bytes += size;
        let below = match user {
            true => &path[USER_DIR.len()..],
            false => path,
        };
        for (index, hash) in chunks.iter().enumerate() {
            self.sources.entry(*hash).or_insert_with(|| Source {
                user,
                path: below.to_string(),
                index,
            });
        }
        Ok(Some(EnvKind::File {
            mode,
            size,
            chunks,
            mtime_ms: stat.mtime_ms(),
        }))
    }
}

/// The asked chunks of the last pack, framed (at most `limit` bytes of
/// them: the caller asks again for the rest).
pub fn chunks(
    container: &Container,
    state: &ContainerState,
    request: EnvChunkRequest,
    limit: usize,
) -> Result<Vec<u8>, ApiError> {
    let pack = state
        .environment
        .as_ref()
        .filter(|pack| pack.id == request.pack)
        .ok_or_else(|| ApiError::InvalidRequest(format!("no pack {}", request.pack)))?;
    let roots = Roots::open(container)?;
    let mut out = Vec::new();
    for hash in request.chunks {
        let source = pack.sources.get(&hash).ok_or_else(|| {
            ApiError::InvalidRequest(format!("chunk {hash} is not part of pack {}", pack.id))
        })?;
        let root = match source.user {
            true => &roots.user,
            false => &roots.workspace,
        };
        let data = read_chunk(root, &source.path, source.index, &hash)
            .map_err(|e| ApiError::io("reading a packed chunk", e))?
            .ok_or(ApiError::ChunkGone(hash))?;
        frame::encode(&mut out, &data);
        if out.len() + CHUNK_SIZE > limit {
            break;
        }
    }
    Ok(out)
}

/// Restores a snapshot (the caller holds the state's lock).
pub fn restore(
    container: &Container,
    state: &mut ContainerState,
    restore: Restore,
) -> Result<RestoreReply, ApiError> {
    state.check_instance(&restore.instance)?;
    let entries = kept_entries(container, state, restore.entries)?;
    let mut missing: Vec<ChunkHash> = entries
        .iter()
        .flat_map(|entry| entry.chunks().iter().copied())
        .filter(|hash| !container.staged.has(hash))
        .collect();
    missing.sort();
    missing.dedup();
    if !missing.is_empty() {
        return Ok(RestoreReply::Need { chunks: missing });
    }
    let roots = Roots::open(container)?;
    let mut writer = Writer {
        container,
        roots: &roots,
        made: Vec::new(),
        dirs: Vec::new(),
    };
    if let Err(error) = writer.all(&entries) {
        writer.undo();
        return Err(error);
    }
    for hash in entries.iter().flat_map(|entry| entry.chunks()) {
        container.staged.remove(hash);
    }
    Ok(RestoreReply::Restored {
        files: entries.len() as u64,
        bytes: entries.iter().map(EnvEntry::size).sum(),
    })
}

/// The entries to restore: paths checked (a bad one refuses the whole
/// restore), and workspace paths no longer ignored, or under a system
/// name, left out with everything below them.
fn kept_entries(
    container: &Container,
    state: &ContainerState,
    entries: Vec<EnvEntry>,
) -> Result<Vec<EnvEntry>, ApiError> {
    let mut kept = Vec::with_capacity(entries.len());
    let mut dropped: Vec<String> = Vec::new();
    for entry in entries {
        paths::check(&entry.path)?;
        if entry.path == "/" || entry.path == USER_DIR {
            return Err(ApiError::InvalidRequest(format!(
                "{} cannot be restored as an entry",
                entry.path
            )));
        }
        if dropped.iter().any(|d| paths::within(&entry.path, d)) {
            continue;
        }
        let system = container.layout.system_name(&entry.path).is_some();
        let user = in_user_dir(&entry.path);
        let ignored = state
            .ignore
            .is_ignored(&entry.path, matches!(entry.kind, EnvKind::Dir { .. }));
        if !user && (system || !ignored) {
            dropped.push(entry.path);
            continue;
        }
        kept.push(entry);
    }
    Ok(kept)
}

/// Writes a restore's entries, remembering what it made so that a failure
/// can take it all back.
struct Writer<'a> {
    container: &'a Container,
    roots: &'a Roots,
    /// Manifest paths made whose parents were there before, outermost.
    made: Vec<String>,
    /// Directories and their modes, set once everything below is written
    /// (a read-only directory would refuse its own children).
    dirs: Vec<(String, u32)>,
}

impl Writer<'_> {
    fn all(&mut self, entries: &[EnvEntry]) -> Result<(), ApiError> {
        // A tree whose directory is no longer in the workspace (the
        // project moved) is left out, rather than making the directory.
        let mut gone: Vec<&str> = Vec::new();
        for entry in entries {
            if gone.iter().any(|g| paths::within(&entry.path, g)) {
                continue;
            }
            let within_made = self.made.iter().any(|m| paths::within(&entry.path, m));
            let (root, _, below) = self.roots.of(&entry.path);
            match root.parent(below) {
                Err(error) if !within_made && is_missing(&error) => {
                    gone.push(&entry.path);
                    continue;
                }
                _ => {}
            }
            self.one(entry)
                .map_err(|e| ApiError::io(format!("restoring {}", entry.path), e))?;
        }
        for (path, mode) in self.dirs.iter().rev() {
            let (root, _, below) = self.roots.of(path);
            let (dir, name) = root
                .parent(below)
                .map_err(|e| ApiError::io(format!("restoring {path}"), e))?;
            dir.set_mode(name, *mode)
                .map_err(|e| ApiError::io(format!("restoring {path}"), e))?;
        }
        Ok(())
    }

    fn one(&mut self, entry: &EnvEntry) -> io::Result<()> {
        let (root, _, below) = self.roots.of(&entry.path);
        let (dir, name) = root.parent(below)?;
        let within_made = self.made.iter().any(|m| paths::within(&entry.path, m));
        if dir.meta(name)?.is_some() {
            // Only what a fresh computer seeds (its git configuration) can
            // stand there: the snapshot's version replaces it.
            dir.remove_all(name)?;
        }
        if !within_made {
            self.made.push(entry.path.clone());
        }
        let confinement = &self.container.confinement;
        match &entry.kind {
            EnvKind::Dir { mode } => {
                dir.mkdir(name, 0o700)?;
                confinement.own_at(&dir, name)?;
                self.dirs.push((entry.path.clone(), *mode));
            }
            EnvKind::Symlink { target } => {
                dir.symlink(target, name)?;
                confinement.own_at(&dir, name)?;
            }
            EnvKind::Hardlink { to } => {
                let (from_root, _, from_below) = self.roots.of(to);
                let (from, from_name) = from_root.parent(from_below)?;
                dir.hard_link(&from, from_name, name)?;
            }
            EnvKind::File {
                mode,
                chunks,
                mtime_ms,
                ..
            } => {
                let mut file = dir.create_new(name)?;
                for hash in chunks {
                    let data = self.container.staged.get(hash)?.ok_or_else(|| {
                        io::Error::new(io::ErrorKind::InvalidData, format!("chunk {hash} damaged"))
                    })?;
                    file.write_all(&data)?;
                }
                confinement.own_file(&file)?;
                drop(file);
                let inode = dir.inode(name)?;
                inode.set_mode(*mode)?;
                let time = UNIX_EPOCH + Duration::from_millis((*mtime_ms).max(0) as u64);
                inode.set_mtime(time)?;
            }
        }
        Ok(())
    }

    /// Removes everything this restore made.
    fn undo(&self) {
        for path in self.made.iter().rev() {
            let (root, _, below) = self.roots.of(path);
            if let Ok((dir, name)) = root.parent(below) {
                let _ = dir.remove_all(name);
            }
        }
    }
}
