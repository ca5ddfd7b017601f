//! Which commit each git repository was at, for a checkpoint or now: what
//! checkpoint listings and `diff` name beside the files.
//!
//! A checkpoint pins `.git` with the tree (it is files like any other),
//! so nothing is recorded when a checkpoint is taken: the commit is read
//! from the pinned `HEAD` and refs when a checkpoint is shown, through
//! stead_git's own ref reading over a read-only view of the checkpoint
//! (or of the live workspace). Taking a checkpoint, which happens before
//! every operation that changes files, costs nothing more.
//!
//! Repositories are looked for where agents keep them: the workspace's
//! root and the directories directly under it (`/.git`, `/project/.git`,
//! at most [`MAX_DIRS`] directories looked at). A checkpoint that pinned
//! only some paths names the repositories whose `HEAD` it pinned.

use serde::Serialize;
use serde_json::Value;
use stead_git::refs::{Head, Refs};
use stead_git::{Entry, FileError, Files, Kind, Meta};
use stead_shell::{git_entries, git_meta};
use stead_sql::Sql;
use stead_vfs::{CheckpointId, Snapshot, VPath, Vfs, VfsError};

/// Most top-level directories looked into for a repository.
pub const MAX_DIRS: usize = 64;

/// One repository's position.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RepoHead {
    /// The worktree (`/`, `/project`).
    pub repo: String,
    /// The branch `HEAD` is on (`main`); `None` when detached.
    pub branch: Option<String>,
    /// The commit `HEAD` resolves to; `None` on a branch with no commits.
    pub commit: Option<String>,
}

/// A read-only view of the workspace, live or as a checkpoint pinned it.
enum View<'v, 's, 'db, S: Sql> {
    Live(&'v Vfs<'db, S>),
    Pinned(&'v Snapshot<'s, 'db, S>),
}

fn refused(error: VfsError) -> FileError {
    match error {
        VfsError::NotFound { .. } | VfsError::NotInCheckpoint { .. } => FileError::NotFound,
        other => FileError::Failed(other.to_string()),
    }
}

fn vpath(path: &str) -> Result<VPath, FileError> {
    VPath::parse(path).map_err(refused)
}

const READ_ONLY: &str = "a checkpoint's view is read-only";

impl<S: Sql> Files for View<'_, '_, '_, S> {
    fn stat(&self, path: &str) -> Result<Meta, FileError> {
        let path = vpath(path)?;
        let node = match self {
            View::Live(vfs) => vfs.stat(&path, false).map(|(_, n)| n),
            View::Pinned(snapshot) => snapshot.stat(&path),
        };
        node.map(|n| git_meta(&n)).map_err(refused)
    }
    fn read(&self, path: &str) -> Result<Vec<u8>, FileError> {
        let path = vpath(path)?;
        match self {
            View::Live(vfs) => vfs.read_file(&path),
            View::Pinned(snapshot) => snapshot.read_file(&path),
        }
        .map_err(refused)
    }
    fn list(&self, dir: &str) -> Result<Vec<Entry>, FileError> {
        let dir = vpath(dir)?;
        let entries = match self {
            View::Live(vfs) => vfs.list(&dir, None, MAX_DIRS),
            View::Pinned(snapshot) => snapshot.list(&dir, None, MAX_DIRS),
        }
        .map_err(refused)?;
        Ok(git_entries(entries))
    }
    fn write(&self, _: &str, _: &[u8]) -> Result<(), FileError> {
        Err(FileError::Failed(READ_ONLY.into()))
    }
    fn set_executable(&self, _: &str, _: bool) -> Result<(), FileError> {
        Err(FileError::Failed(READ_ONLY.into()))
    }
    fn readlink(&self, _: &str) -> Result<String, FileError> {
        Err(FileError::Failed(READ_ONLY.into()))
    }
    fn symlink(&self, _: &str, _: &str) -> Result<(), FileError> {
        Err(FileError::Failed(READ_ONLY.into()))
    }
    fn mkdir_all(&self, _: &str) -> Result<(), FileError> {
        Err(FileError::Failed(READ_ONLY.into()))
    }
    fn remove(&self, _: &str) -> Result<(), FileError> {
        Err(FileError::Failed(READ_ONLY.into()))
    }
    fn rename(&self, _: &str, _: &str) -> Result<(), FileError> {
        Err(FileError::Failed(READ_ONLY.into()))
    }
}

/// The repository at `worktree`, if its `HEAD` is there to read (a
/// corrupt one is left out: this only describes).
fn head_of(files: &dyn Files, worktree: &str) -> Option<RepoHead> {
    let git_dir = stead_git::files::join(worktree, ".git");
    let refs = Refs::new(files, &git_dir);
    let head = refs.head().ok()?;
    let commit = refs.head_id().ok()?.map(|id| id.to_string());
    Some(RepoHead {
        repo: worktree.to_string(),
        branch: match &head {
            Head::Branch(_) => head.branch().map(str::to_string),
            Head::Detached(_) => None,
        },
        commit,
    })
}

fn heads_in(files: &dyn Files) -> Vec<RepoHead> {
    let mut out: Vec<RepoHead> = head_of(files, "/").into_iter().collect();
    let dirs = files.list("/").unwrap_or_default();
    for entry in dirs
        .iter()
        .filter(|e| e.meta.kind == Kind::Dir && e.name != ".git")
    {
        out.extend(head_of(files, &format!("/{}", entry.name)));
    }
    out
}

/// The repositories of the live workspace.
pub fn now<S: Sql>(vfs: &Vfs<'_, S>) -> Vec<RepoHead> {
    heads_in(&View::Live(vfs))
}

/// The repositories as checkpoint `snapshot` pinned them.
pub fn pinned<S: Sql>(snapshot: &Snapshot<'_, '_, S>) -> Vec<RepoHead> {
    heads_in(&View::Pinned(snapshot))
}

/// The repositories at a diff's point: the checkpoint it read, else the
/// live workspace.
pub fn at_point<S: Sql>(vfs: &Vfs<'_, S>, checkpoint: Option<CheckpointId>) -> Value {
    let heads = match checkpoint {
        Some(id) => match vfs.snapshot(id) {
            Ok(snapshot) => pinned(&snapshot),
            Err(_) => Vec::new(),
        },
        None => now(vfs),
    };
    json(&heads)
}

/// Adds `"git"` (the repositories it pinned) to a checkpoint's JSON.
pub fn annotate<S: Sql>(vfs: &Vfs<'_, S>, checkpoint: &mut Value) {
    let Some(id) = checkpoint.get("id").and_then(Value::as_i64) else {
        return;
    };
    let heads = at_point(vfs, Some(CheckpointId(id)));
    if let Some(object) = checkpoint.as_object_mut() {
        object.insert("git".into(), heads);
    }
}

fn json(heads: &[RepoHead]) -> Value {
    serde_json::to_value(heads).unwrap_or(Value::Null)
}
