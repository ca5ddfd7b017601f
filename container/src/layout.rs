//! What `/` holds for a command: the workspace, and the system's names.
//!
//! The file API and the light shell show the workspace as `/`, so a
//! command on the computer sees it at `/` too: `/notes/plan.md`, `cd /`,
//! `pwd`, a symlink to `/src/lib.rs` and a path a program prints mean the
//! same file on every backend, and `auto` picking a backend never changes
//! what a script means. Real Linux needs directories of its own at the
//! root, so a fixed set of top-level names, [`stead_sync::SYSTEM_NAMES`], belongs to the
//! system: `/usr`, `/etc`, `/dev`, `/tmp`, ... are the computer's, never the
//! workspace's. A workspace entry with one of these names (a folder `/tmp`
//! the light shell wrote) stays in the workspace, but the computer neither
//! receives it nor reports anything under that name: the system's
//! directory stands there, and every command's report lists the name as
//! skipped, saying so. Whatever a command writes under a system name (a
//! file in `/tmp`, an install into `/usr` when it could) stays on the
//! computer and is never synced.
//!
//! The list is fixed so that it is the same in every mode and on every
//! machine; the image removes the standard top-level directories it does
//! not need (`/home`, `/opt`, `/srv`, ...) so their names stay free for
//! workspaces. In the image, whatever else the platform placed at the root
//! before the program started (Docker's `/.dockerenv`, a mount) is the
//! system's as well ([`Layout::machine`]).
//!
//! How the workspace becomes `/` is [`crate::confine`]'s business: in the
//! image the container's own root directory is the workspace; as a local
//! process each command gets a mount namespace whose root is its
//! workspace's directory, with the host's system directories mounted on
//! the system names (see [`Provided`]).

use std::collections::{BTreeSet, VecDeque};
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io;
use std::path::Path;

use crate::paths::{on_disk, PathError};

/// What a confined command (the local-process mode) finds at a system name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provided {
    /// The host's directory (what it points to, if a symlink), read-only;
    /// nothing when the host has none.
    Host,
    /// A few devices (`null zero full random urandom tty`), the `fd`,
    /// `stdin`, `stdout` and `stderr` links and a private `shm`.
    Devices,
    /// A fresh `proc` showing only the command's own processes.
    Processes,
    /// The container's scratch directory of that name, read-write.
    Scratch,
    /// An empty read-only directory, with the container's scratch
    /// directories of these names inside (`/var/tmp`, `/run/lock`).
    Empty { scratch: &'static [&'static str] },
}

/// What a confined command finds at each system name
/// ([`stead_sync::SYSTEM_NAMES`], the one list both sides use). In a
/// container the image's own directories stand at these names.
pub fn provided(name: &str) -> Provided {
    match name {
        "dev" => Provided::Devices,
        "proc" => Provided::Processes,
        "root" | "sys" => Provided::Empty { scratch: &[] },
        "run" => Provided::Empty { scratch: &["lock"] },
        "tmp" => Provided::Scratch,
        "var" => Provided::Empty { scratch: &["tmp"] },
        _ => Provided::Host,
    }
}

/// The names at the workspace's root that are the system's.
#[derive(Debug, Clone)]
pub struct Layout {
    system: BTreeSet<OsString>,
}

impl Layout {
    /// The fixed [`stead_sync::SYSTEM_NAMES`] (a directory per workspace).
    pub fn standard() -> Layout {
        Layout {
            system: stead_sync::SYSTEM_NAMES
                .iter()
                .map(OsString::from)
                .collect(),
        }
    }

    /// The machine's own root is the workspace: the fixed names, and
    /// whatever `root` already holds (the program starts before any
    /// workspace content exists, so all of that is the system's).
    pub fn machine(root: &Path) -> io::Result<Layout> {
        let mut layout = Layout::standard();
        for entry in fs::read_dir(root)? {
            layout.system.insert(entry?.file_name());
        }
        Ok(layout)
    }

    /// The system names beyond the fixed ones (for the start-up line).
    pub fn extra(&self) -> Vec<String> {
        let standard = Layout::standard().system;
        self.system
            .difference(&standard)
            .map(|name| name.to_string_lossy().into_owned())
            .collect()
    }

    /// Whether a top-level `name` is the system's.
    pub fn is_system(&self, name: &OsStr) -> bool {
        self.system.contains(name)
    }

    /// The system name a checked workspace path lies at or under, if any.
    pub fn system_name<'p>(&self, path: &'p str) -> Option<&'p str> {
        let first = path.trim_start_matches('/').split('/').next()?;
        (!first.is_empty() && self.is_system(OsStr::new(first))).then_some(first)
    }

    /// Resolves a checked workspace path the way a command at the
    /// workspace's root would (symlinks followed, absolute targets and
    /// `..` taken from the workspace's root, `..` at the root staying
    /// there) to the real workspace path of a directory that is not under
    /// a system name.
    pub fn resolve_dir(&self, root: &Path, path: &str) -> Result<String, PathError> {
        let not_a_dir = || PathError::NotADirectory(path.to_string());
        let mut real: Vec<String> = Vec::new();
        let mut todo: VecDeque<String> = components(path).collect();
        let mut links = 0;
        while let Some(name) = todo.pop_front() {
            match name.as_str() {
                "." => continue,
                ".." => {
                    real.pop();
                    continue;
                }
                _ => {}
            }
            if real.is_empty() && self.is_system(OsStr::new(&name)) {
                return Err(PathError::System {
                    path: path.to_string(),
                    name,
                });
            }
            real.push(name);
            let abs = on_disk(root, &format!("/{}", real.join("/")));
            let meta = fs::symlink_metadata(&abs).map_err(|_| not_a_dir())?;
            if meta.file_type().is_symlink() {
                links += 1;
                // Linux's limit on symlinks followed in one lookup.
                if links > 40 {
                    return Err(not_a_dir());
                }
                let target = fs::read_link(&abs).map_err(|_| not_a_dir())?;
                let target = target.to_str().ok_or_else(not_a_dir)?.to_string();
                real.pop();
                if target.starts_with('/') {
                    real.clear();
                }
                for part in components(&target).rev() {
                    todo.push_front(part);
                }
            } else if !meta.is_dir() {
                return Err(not_a_dir());
            }
        }
        Ok(format!("/{}", real.join("/")))
    }
}

/// The non-empty names of a path, in order.
fn components(path: &str) -> impl DoubleEndedIterator<Item = String> + '_ {
    path.split('/')
        .filter(|part| !part.is_empty())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn system_names_are_top_level_only() {
        let layout = Layout::standard();
        assert_eq!(layout.system_name("/tmp"), Some("tmp"));
        assert_eq!(layout.system_name("/usr/bin/python3"), Some("usr"));
        assert_eq!(layout.system_name("/notes/tmp"), None);
        assert_eq!(layout.system_name("/tmpfile"), None);
        assert_eq!(layout.system_name("/"), None);
        assert!(layout.extra().is_empty());
    }

    #[test]
    fn the_machine_layout_keeps_what_was_there() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(".dockerenv"), "").unwrap();
        fs::create_dir(dir.path().join("usr")).unwrap();
        let layout = Layout::machine(dir.path()).unwrap();
        assert_eq!(layout.extra(), [".dockerenv"]);
        assert_eq!(layout.system_name("/.dockerenv"), Some(".dockerenv"));
        assert_eq!(layout.system_name("/etc/x"), Some("etc"));
    }

    #[test]
    fn directories_resolve_as_from_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir_all(root.join("notes/deep")).unwrap();
        fs::write(root.join("notes/plan.md"), "").unwrap();
        // Absolute targets and `..` above the root mean the workspace's.
        symlink("/notes", root.join("abs")).unwrap();
        symlink("../../notes/deep", root.join("notes/up")).unwrap();
        symlink("/usr", root.join("sys-link")).unwrap();
        symlink("loop", root.join("loop")).unwrap();
        let layout = Layout::standard();
        let resolve = |path: &str| layout.resolve_dir(root, path);
        assert_eq!(resolve("/"), Ok("/".to_string()));
        assert_eq!(resolve("/abs/deep"), Ok("/notes/deep".to_string()));
        assert_eq!(resolve("/notes/up"), Ok("/notes/deep".to_string()));
        assert!(matches!(
            resolve("/notes/plan.md"),
            Err(PathError::NotADirectory(_))
        ));
        assert!(matches!(
            resolve("/missing"),
            Err(PathError::NotADirectory(_))
        ));
        assert!(matches!(resolve("/loop"), Err(PathError::NotADirectory(_))));
        assert!(matches!(resolve("/tmp"), Err(PathError::System { .. })));
        assert!(matches!(
            resolve("/sys-link"),
            Err(PathError::System { .. })
        ));
    }
}
