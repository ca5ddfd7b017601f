//! A directory on disk as a [`Files`], so the tests and the machine's real
//! `git` work on one repository; and running that `git`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use stead_git::{Entry, FileError, Files, Kind, Meta};

/// `root` on disk seen as the workspace's `/`.
pub struct Disk {
    pub root: PathBuf,
}

fn error(e: std::io::Error) -> FileError {
    match e.kind() {
        std::io::ErrorKind::NotFound => FileError::NotFound,
        _ => FileError::Failed(e.to_string()),
    }
}

fn meta(m: &std::fs::Metadata) -> Meta {
    use std::os::unix::fs::PermissionsExt;
    let kind = if m.file_type().is_symlink() {
        Kind::Symlink
    } else if m.is_dir() {
        Kind::Dir
    } else {
        Kind::File {
            executable: m.permissions().mode() & 0o111 != 0,
        }
    };
    let mtime_ms = m
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as i64);
    Meta {
        kind,
        size: m.len(),
        mtime_ms,
    }
}

impl Disk {
    pub fn path(&self, path: &str) -> PathBuf {
        self.root.join(path.trim_start_matches('/'))
    }
}

impl Files for Disk {
    fn stat(&self, path: &str) -> Result<Meta, FileError> {
        std::fs::symlink_metadata(self.path(path))
            .map(|m| meta(&m))
            .map_err(error)
    }
    fn read(&self, path: &str) -> Result<Vec<u8>, FileError> {
        std::fs::read(self.path(path)).map_err(error)
    }
    fn list(&self, dir: &str) -> Result<Vec<Entry>, FileError> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(self.path(dir)).map_err(error)? {
            let entry = entry.map_err(error)?;
            out.push(Entry {
                name: entry.file_name().to_string_lossy().into_owned(),
                meta: meta(&entry.metadata().map_err(error)?),
            });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }
    fn write(&self, path: &str, data: &[u8]) -> Result<(), FileError> {
        let path = self.path(path);
        std::fs::create_dir_all(path.parent().unwrap()).map_err(error)?;
        std::fs::write(path, data).map_err(error)
    }
    fn set_executable(&self, path: &str, executable: bool) -> Result<(), FileError> {
        use std::os::unix::fs::PermissionsExt;
        let mode = if executable { 0o755 } else { 0o644 };
        std::fs::set_permissions(self.path(path), std::fs::Permissions::from_mode(mode))
            .map_err(error)
    }
    fn readlink(&self, path: &str) -> Result<String, FileError> {
        std::fs::read_link(self.path(path))
            .map(|t| t.to_string_lossy().into_owned())
            .map_err(error)
    }
    fn symlink(&self, target: &str, path: &str) -> Result<(), FileError> {
        let path = self.path(path);
        std::fs::create_dir_all(path.parent().unwrap()).map_err(error)?;
        std::os::unix::fs::symlink(target, path).map_err(error)
    }
    fn mkdir_all(&self, path: &str) -> Result<(), FileError> {
        std::fs::create_dir_all(self.path(path)).map_err(error)
    }
    fn remove(&self, path: &str) -> Result<(), FileError> {
        let path = self.path(path);
        match std::fs::symlink_metadata(&path).map_err(error)?.is_dir() {
            true => std::fs::remove_dir(path).map_err(error),
            false => std::fs::remove_file(path).map_err(error),
        }
    }
    fn rename(&self, from: &str, to: &str) -> Result<(), FileError> {
        std::fs::rename(self.path(from), self.path(to)).map_err(error)
    }
}

/// Runs the machine's `git` in `dir` with a fixed identity and no user or
/// system configuration; its stdout (panics when it fails).
pub fn git(dir: &Path, args: &[&str]) -> Vec<u8> {
    let out = git_command(dir, args).output().expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// A `git` command in `dir`, isolated from the machine's configuration.
pub fn git_command(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new("git");
    command
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "A U Thor")
        .env("GIT_AUTHOR_EMAIL", "author@example.com")
        .env("GIT_COMMITTER_NAME", "C O Mitter")
        .env("GIT_COMMITTER_EMAIL", "committer@example.com")
        .env("GIT_AUTHOR_DATE", "1700000000 +0100")
        .env("GIT_COMMITTER_DATE", "1700000000 +0100")
        .env("LANG", "C");
    command
}
