//! Filesystem errors, each carrying the POSIX code an agent already knows.
//!
//! The checkpoint errors (unknown checkpoint or revision, a revision no
//! longer kept, a fork stream that does not add up, ...) map onto the
//! existing codes, so every caller's exhaustive match on [`Errno`] (the
//! HTTP status, the shell's messages) covers them unchanged; the variant
//! and its message say which case it is (`CHECKPOINTS.md` has the table).

use std::fmt;

use stead_patch::PatchError;
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
    /// A patch that is malformed or does not apply (see [`crate::patch`]).
    #[error("{0}")]
    Patch(#[from] PatchError),
    #[error("invalid pattern {pattern:?}: {reason}")]
    InvalidPattern { pattern: String, reason: String },
    /// A search the regex engine could only do slowly (see
    /// [`crate::search_cost`]), past what one request may spend.
    #[error(
        "pattern {pattern:?} is too costly to search {path}: on a text of {bytes} bytes it needs \
         the slow engine, up to {states} steps per byte, past the bound of {bound} steps per \
         request; use fewer or smaller counted repetitions (a{{1000}}{{10}} is 10,000 states), \
         or search files with shorter lines"
    )]
    PatternTooCostly {
        pattern: String,
        path: String,
        bytes: u64,
        states: u64,
        bound: u64,
    },
    #[error("invalid cursor {cursor:?}: pass back a cursor a previous page returned")]
    InvalidCursor { cursor: String },
    #[error("inconsistent upload: {reason}")]
    BadUpload { reason: String },
    /// `ENOENT`: no checkpoint has this id or name (or it was deleted or
    /// pruned by the retention policy).
    #[error("no such checkpoint: {checkpoint}")]
    UnknownCheckpoint { checkpoint: String },
    /// `EEXIST`: another checkpoint already has this name.
    #[error("a checkpoint named {name:?} already exists")]
    CheckpointExists { name: String },
    /// `EINVAL`: a checkpoint name or note that cannot be stored.
    #[error("invalid checkpoint {field}: {reason}")]
    InvalidCheckpoint {
        field: &'static str,
        reason: &'static str,
    },
    /// `ENOENT`: a revision the workspace never reached (negative, or past
    /// the current one).
    #[error("no such revision: {revision} (the workspace is at {current})")]
    UnknownRevision { revision: i64, current: i64 },
    /// `ENOENT`: a past revision no whole-workspace checkpoint pins, so its
    /// content is gone.
    #[error("revision {revision} is not kept: no whole-workspace checkpoint pins it")]
    RevisionNotKept { revision: i64 },
    /// `ENOENT`: a path outside what a partial checkpoint pinned.
    #[error("checkpoint {checkpoint} does not cover {path}: it pinned only {roots}")]
    NotInCheckpoint {
        checkpoint: i64,
        path: String,
        roots: String,
    },
    /// `EINVAL`: an operation that needs the whole workspace (a fork) given a
    /// checkpoint that pinned only some paths.
    #[error(
        "checkpoint {checkpoint} pinned only some paths; a fork needs a whole-workspace checkpoint"
    )]
    PartialCheckpoint { checkpoint: i64 },
    /// `ENOENT`: no checkpoint left whose restore would change anything.
    #[error("nothing to undo")]
    NothingToUndo,
    /// `EEXIST`: a fork cannot be imported here: the workspace holds files,
    /// checkpoints or another import.
    #[error("cannot import a fork: {reason}")]
    ImportTargetInUse { reason: &'static str },
    /// `ENOENT`: import frames (or an abort) without an import begun.
    #[error("no import in progress")]
    NoImport,
    /// `EINVAL`: a fork's stream is malformed or does not add up (a frame cut
    /// short, a chunk that does not match its hash, a tree that is not one).
    #[error("bad fork stream: {reason}")]
    BadImport { reason: String },
    /// `EIO` to a caller that cannot fetch: the content asked for is in the
    /// object store, not inline (see [`crate::tier`]). The async layer
    /// brings `chunks` back ([`crate::tier::Tier::bring_back`]) and asks
    /// again; nothing is ever answered from an empty inline copy.
    #[error("content is in the object store ({} chunk(s) to fetch first)", chunks.len())]
    Tiered { chunks: Vec<i64> },
    /// `EIO`: the object store failed or holds something else than the
    /// hash names (see [`crate::tier::StoreError`]).
    #[error("object store: {0}")]
    Store(#[from] crate::tier::StoreError),
    #[error("storage failure: {0}")]
    Storage(#[from] SqlError),
    #[error("corrupt workspace: {0}")]
    Corrupt(String),
}

/// The code of a filesystem error: a POSIX errno where one fits, or the
/// edit rule an edit broke. Callers match on it exhaustively (an HTTP status,
/// a shell message), so a new code cannot be left unhandled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Errno {
    Enoent,
    Eexist,
    Enotdir,
    Eisdir,
    Enotempty,
    Einval,
    Eloop,
    Eacces,
    Enametoolong,
    Enospc,
    Ebusy,
    Efbig,
    Eio,
    /// Not valid UTF-8 where text is required.
    Eilseq,
    /// An edit's `old` text is not in the file.
    EditNoMatch,
    /// An edit's `old` text is in the file more than once.
    EditAmbiguous,
    /// Two edits of one request overlap.
    EditOverlap,
    /// The edits leave the file as it was.
    EditNoChange,
}

impl Errno {
    /// The code as the API and the logs spell it (`ENOENT`, `EDIT_NO_MATCH`).
    pub fn as_str(self) -> &'static str {
        match self {
            Errno::Enoent => "ENOENT",
            Errno::Eexist => "EEXIST",
            Errno::Enotdir => "ENOTDIR",
            Errno::Eisdir => "EISDIR",
            Errno::Enotempty => "ENOTEMPTY",
            Errno::Einval => "EINVAL",
            Errno::Eloop => "ELOOP",
            Errno::Eacces => "EACCES",
            Errno::Enametoolong => "ENAMETOOLONG",
            Errno::Enospc => "ENOSPC",
            Errno::Ebusy => "EBUSY",
            Errno::Efbig => "EFBIG",
            Errno::Eio => "EIO",
            Errno::Eilseq => "EILSEQ",
            Errno::EditNoMatch => "EDIT_NO_MATCH",
            Errno::EditAmbiguous => "EDIT_AMBIGUOUS",
            Errno::EditOverlap => "EDIT_OVERLAP",
            Errno::EditNoChange => "EDIT_NO_CHANGE",
        }
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl VfsError {
    /// The POSIX-style code (`ENOENT`, `EEXIST`, ...) for this error.
    pub fn code(&self) -> Errno {
        match self {
            VfsError::NotFound { .. } => Errno::Enoent,
            VfsError::AlreadyExists { .. } => Errno::Eexist,
            VfsError::NotADirectory { .. } => Errno::Enotdir,
            VfsError::IsADirectory { .. } => Errno::Eisdir,
            VfsError::NotEmpty { .. } => Errno::Enotempty,
            VfsError::NotASymlink { .. } | VfsError::IntoItself { .. } => Errno::Einval,
            VfsError::InvalidPath { .. }
            | VfsError::InvalidPattern { .. }
            | VfsError::PatternTooCostly { .. }
            | VfsError::InvalidCursor { .. }
            | VfsError::BadUpload { .. }
            | VfsError::InvalidCheckpoint { .. }
            | VfsError::PartialCheckpoint { .. }
            | VfsError::BadImport { .. } => Errno::Einval,
            VfsError::UnknownCheckpoint { .. }
            | VfsError::UnknownRevision { .. }
            | VfsError::RevisionNotKept { .. }
            | VfsError::NotInCheckpoint { .. }
            | VfsError::NothingToUndo
            | VfsError::NoImport => Errno::Enoent,
            VfsError::CheckpointExists { .. } | VfsError::ImportTargetInUse { .. } => Errno::Eexist,
            VfsError::SymlinkLoop { .. } => Errno::Eloop,
            VfsError::EscapesRoot { .. } => Errno::Eacces,
            VfsError::NameTooLong { .. } | VfsError::TooDeep { .. } => Errno::Enametoolong,
            VfsError::NoSpace { .. } => Errno::Enospc,
            VfsError::RootBusy { .. } => Errno::Ebusy,
            VfsError::FileTooLarge { .. } => Errno::Efbig,
            VfsError::Edit { source, .. } => source.code(),
            VfsError::Patch(error) => match error {
                PatchError::Malformed { .. } => Errno::Einval,
                PatchError::HunkFailed(_) | PatchError::DeleteMismatch { .. } => Errno::EditNoMatch,
            },
            VfsError::Tiered { .. }
            | VfsError::Store(_)
            | VfsError::Storage(_)
            | VfsError::Corrupt(_) => Errno::Eio,
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
            | VfsError::Edit { path, .. }
            | VfsError::PatternTooCostly { path, .. }
            | VfsError::NotInCheckpoint { path, .. } => Some(path),
            VfsError::IntoItself { from, .. } => Some(from),
            VfsError::Patch(error) => error.path(),
            _ => None,
        }
    }
}

pub type Result<T, E = VfsError> = std::result::Result<T, E>;

impl EditError {
    /// The code for an edit that cannot be applied. Not POSIX but for
    /// `EILSEQ` (the file is not text): the others name the edit rule broken.
    pub fn code(&self) -> Errno {
        match self {
            EditError::EmptyOld { .. } => Errno::Einval,
            EditError::NotFound { .. } => Errno::EditNoMatch,
            EditError::Ambiguous { .. } | EditError::FuzzyAmbiguous { .. } => Errno::EditAmbiguous,
            EditError::Overlap { .. } => Errno::EditOverlap,
            EditError::NoChange => Errno::EditNoChange,
            EditError::NotText => Errno::Eilseq,
        }
    }

    /// The position of the offending edit in the request, when one is to blame.
    pub fn index(&self) -> Option<usize> {
        match self {
            EditError::EmptyOld { index }
            | EditError::NotFound { index }
            | EditError::Ambiguous { index, .. }
            | EditError::FuzzyAmbiguous { index, .. }
            | EditError::Overlap { index, .. } => Some(*index),
            EditError::NoChange | EditError::NotText => None,
        }
    }
}
