//! What can go wrong reading or changing a repository.

use crate::files::FileError;

/// A failure, in the words git would use after `fatal: `.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file of the repository or worktree could not be read or written.
    #[error("{path}: {source}")]
    File { path: String, source: FileError },
    /// Something in `.git` is not in git's format (a corrupt object, index
    /// or pack): nothing is changed on top of it.
    #[error("{0}")]
    Corrupt(String),
    /// An object the repository should hold is not there.
    #[error("unable to read {0}")]
    Missing(String),
    /// Anything git reports as `fatal:` (a bad revision, a bad argument).
    #[error("{0}")]
    Fatal(String),
    /// A remote's failure, after what its server said (`remote: ...`
    /// lines, printed before the `fatal:` line).
    #[error("{message}")]
    Remote { said: String, message: String },
}

pub type Result<T> = std::result::Result<T, Error>;

/// Attaches the path to a filesystem call's error.
pub(crate) trait At<T> {
    fn at(self, path: &str) -> Result<T>;
}

impl<T> At<T> for std::result::Result<T, FileError> {
    fn at(self, path: &str) -> Result<T> {
        self.map_err(|source| Error::File {
            path: path.to_string(),
            source,
        })
    }
}
