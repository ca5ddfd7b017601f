//! Filesystem errors, each carrying the POSIX code an agent already knows.

use stead_sql::SqlError;

use crate::edit::EditError;

/// Why a filesystem operation failed. Every variant names the path (or the
/// limit) involved; [`VfsError::code`] gives its POSIX-style code.
#[derive(Debug, thiserror::Error)]
pub enum VfsError {
    #[error("no such file or directory: {path}")]
    NotFound { path: String },
    #[error("file exists: {path}")]
    AlreadyExists { path: String },
    #[error("not a directory: {path}")]
    NotADirectory { path: String },
    #[error("is a directory: {path}")]
    IsADirectory { path: String },
    #[error("directory not empty: {path}")]
    NotEmpty { path: String },
    #[error("not a symbolic link: {path}")]
    NotASymlink { path: String },
    #[error("too many levels of symbolic links: {path}")]
    SymlinkLoop { path: String },
    #[error("path escapes the workspace root: {path}")]
    EscapesRoot { path: String },
    #[error("file name too long ({len} bytes, limit {limit}): {path}")]
    NameTooLong {
        path: String,
        len: usize,
        limit: usize,
    },
    #[error("invalid path {path:?}: {reason}")]
    InvalidPath { path: String, reason: &'static str },
    #[error("cannot {operation} the workspace root")]
    RootBusy { operation: &'static str },
    #[error("invalid argument: cannot move or copy {from} into itself ({to})")]
    IntoItself { from: String, to: String },
    #[error("file too large: {path} would be {size} bytes, limit {limit} (max_file_bytes)")]
    FileTooLarge { path: String, size: u64, limit: u64 },
    #[error("no space left in the workspace: {quota} would be {used}, limit {limit}")]
    NoSpace {
        quota: &'static str,
        used: u64,
        limit: u64,
    },
    #[error("path too deep ({depth} components, limit {limit}, max_path_depth): {path}")]
    TooDeep {
        path: String,
        depth: usize,
        limit: usize,
    },
    #[error("{path}: {source}")]
    Edit {
        path: String,
        #[source]
        source: EditError,
    },
    #[error("invalid pattern {pattern:?}: {reason}")]
    InvalidPattern { pattern: String, reason: String },
    #[error("inconsistent upload: {reason}")]
    BadUpload { reason: String },
    #[error("storage failure: {0}")]
    Storage(#[from] SqlError),
    #[error("corrupt workspace: {0}")]
    Corrupt(String),
}

impl VfsError {
    /// The POSIX-style code (`ENOENT`, `EEXIST`, ...) for this error.
    pub fn code(&self) -> &'static str {
        match self {
            VfsError::NotFound { .. } => "ENOENT",
            VfsError::AlreadyExists { .. } => "EEXIST",
            VfsError::NotADirectory { .. } => "ENOTDIR",
            VfsError::IsADirectory { .. } => "EISDIR",
            VfsError::NotEmpty { .. } => "ENOTEMPTY",
            VfsError::NotASymlink { .. } | VfsError::IntoItself { .. } => "EINVAL",
            VfsError::InvalidPath { .. }
            | VfsError::InvalidPattern { .. }
            | VfsError::BadUpload { .. } => "EINVAL",
            VfsError::SymlinkLoop { .. } => "ELOOP",
            VfsError::EscapesRoot { .. } => "EACCES",
            VfsError::NameTooLong { .. } | VfsError::TooDeep { .. } => "ENAMETOOLONG",
            VfsError::NoSpace { .. } => "ENOSPC",
            VfsError::RootBusy { .. } => "EBUSY",
            VfsError::FileTooLarge { .. } => "EFBIG",
            VfsError::Edit { source, .. } => source.code(),
            VfsError::Storage(_) | VfsError::Corrupt(_) => "EIO",
        }
    }

    /// The path the error is about, when it is about one.
    pub fn path(&self) -> Option<&str> {
        match self {
            VfsError::NotFound { path }
            | VfsError::AlreadyExists { path }
            | VfsError::NotADirectory { path }
            | VfsError::IsADirectory { path }
            | VfsError::NotEmpty { path }
            | VfsError::NotASymlink { path }
            | VfsError::SymlinkLoop { path }
            | VfsError::EscapesRoot { path }
            | VfsError::NameTooLong { path, .. }
            | VfsError::TooDeep { path, .. }
            | VfsError::InvalidPath { path, .. }
            | VfsError::FileTooLarge { path, .. }
            | VfsError::Edit { path, .. } => Some(path),
            VfsError::IntoItself { from, .. } => Some(from),
            _ => None,
        }
    }
}

pub type Result<T, E = VfsError> = std::result::Result<T, E>;

impl EditError {
    /// The code for an edit that cannot be applied. Not POSIX but for
    /// `EILSEQ` (the file is not text): the others name the edit rule broken.
    pub fn code(&self) -> &'static str {
        match self {
            EditError::EmptyOld { .. } => "EINVAL",
            EditError::NotFound { .. } => "EDIT_NO_MATCH",
            EditError::Ambiguous { .. } => "EDIT_AMBIGUOUS",
            EditError::Overlap { .. } => "EDIT_OVERLAP",
            EditError::NoChange => "EDIT_NO_CHANGE",
            EditError::NotText => "EILSEQ",
        }
    }

    /// The position of the offending edit in the request, when one is to blame.
    pub fn index(&self) -> Option<usize> {
        match self {
            EditError::EmptyOld { index }
            | EditError::NotFound { index }
            | EditError::Ambiguous { index, .. }
            | EditError::Overlap { index, .. } => Some(*index),
            EditError::NoChange | EditError::NotText => None,
        }
    }
}
