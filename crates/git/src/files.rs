//! The filesystem a repository lives on, as the git code needs it.
//!
//! The light shell hands in the agent's workspace (SQLite), tests a
//! directory on disk: both hold the same bytes git's own programs write, so
//! the computer's `git` and this crate work on one repository. Paths are
//! absolute, `/`-separated, as the workspace names them.

/// What a path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File { executable: bool },
    Dir,
    Symlink,
}

/// A path's metadata: what it is, its size and last change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    pub kind: Kind,
    pub size: u64,
    /// Milliseconds since the Unix epoch.
    pub mtime_ms: i64,
}

/// One directory entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub meta: Meta,
}

/// Why a filesystem call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileError {
    #[error("No such file or directory")]
    NotFound,
    /// Anything else, in the filesystem's words (a quota, a permission).
    #[error("{0}")]
    Failed(String),
}

/// The calls git makes on its files and worktree.
pub trait Files {
    /// The node at `path` (a final symlink not followed).
    fn stat(&self, path: &str) -> Result<Meta, FileError>;
    /// A regular file's content.
    fn read(&self, path: &str) -> Result<Vec<u8>, FileError>;
    /// A directory's entries, in name order.
    fn list(&self, dir: &str) -> Result<Vec<Entry>, FileError>;
    /// Replaces or creates a regular file, creating missing parents.
    fn write(&self, path: &str, data: &[u8]) -> Result<(), FileError>;
    /// Sets or clears a file's executable bits.
    fn set_executable(&self, path: &str, executable: bool) -> Result<(), FileError>;
    /// A symlink's target.
    fn readlink(&self, path: &str) -> Result<String, FileError>;
    /// Makes a symlink, creating missing parents.
    fn symlink(&self, target: &str, path: &str) -> Result<(), FileError>;
    /// Creates a directory and its missing parents.
    fn mkdir_all(&self, path: &str) -> Result<(), FileError>;
    /// Removes a file or symlink, or an empty directory.
    fn remove(&self, path: &str) -> Result<(), FileError>;
    /// Moves a file or directory.
    fn rename(&self, from: &str, to: &str) -> Result<(), FileError>;
}

/// `dir/name` for absolute paths (`/` joins without doubling).
pub fn join(dir: &str, name: &str) -> String {
    if dir.ends_with('/') {
        format!("{dir}{name}")
    } else {
        format!("{dir}/{name}")
    }
}

/// The reading of a file that may be missing: `Ok(None)` when it is.
pub(crate) fn read_optional(files: &dyn Files, path: &str) -> Result<Option<Vec<u8>>, FileError> {
    match files.read(path) {
        Ok(data) => Ok(Some(data)),
        Err(FileError::NotFound) => Ok(None),
        Err(e) => Err(e),
    }
}
