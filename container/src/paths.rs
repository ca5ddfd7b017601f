//! Workspace paths and container names from requests, checked before use.
//!
//! Every path in a request names something under the workspace directory.
//! A path is only joined onto that directory after it passed [`check`], so
//! `..`, `.`, empty components or NUL bytes can never make the program touch
//! anything outside the workspace. Container names become directory names
//! and get the same treatment. A checked path can still lead outside
//! through a symlink a command planted, so reading, writing or changing
//! what is there never uses the joined path: see [`crate::beneath`].
//! [`on_disk`] only names a command's starting directory and what
//! resolving a `cwd` looks at.

use std::path::{Path, PathBuf};

use thiserror::Error;

/// The longest workspace path accepted (Linux's `PATH_MAX`).
pub const MAX_PATH: usize = 4096;
/// The longest single name (Linux's `NAME_MAX`).
const MAX_NAME: usize = 255;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum PathError {
    #[error("path {0:?} is not absolute")]
    NotAbsolute(String),
    #[error("path {0:?} is not normalized (empty, `.` or `..` component, or a trailing `/`)")]
    NotNormalized(String),
    #[error("path {0:?} contains a NUL byte")]
    Nul(String),
    #[error("path is longer than {MAX_PATH} bytes or has a name longer than {MAX_NAME}")]
    TooLong,
    #[error("the workspace root cannot be {0}")]
    Root(&'static str),
    #[error("path {0:?} is listed twice")]
    Duplicate(String),
    #[error("path {0:?} is not a directory inside the workspace")]
    NotADirectory(String),
    #[error(
        "path {path:?} is under /{name}, the computer's own directory \
         (the workspace's /{name} is not visible to commands)"
    )]
    System { path: String, name: String },
    #[error("container name {0:?} must be 1-64 of [A-Za-z0-9._-], and not `.` or `..`")]
    BadContainer(String),
}

/// Checks a workspace path: absolute, normalized, no NUL, not too long.
pub fn check(path: &str) -> Result<(), PathError> {
    if path.contains('\0') {
        return Err(PathError::Nul(path.to_string()));
    }
    if path.len() > MAX_PATH {
        return Err(PathError::TooLong);
    }
    if !path.starts_with('/') {
        return Err(PathError::NotAbsolute(path.to_string()));
    }
    if path == "/" {
        return Ok(());
    }
    for name in path[1..].split('/') {
        if name.is_empty() || name == "." || name == ".." {
            return Err(PathError::NotNormalized(path.to_string()));
        }
        if name.len() > MAX_NAME {
            return Err(PathError::TooLong);
        }
    }
    Ok(())
}

/// The disk location of a checked workspace path under `root`.
pub fn on_disk(root: &Path, path: &str) -> PathBuf {
    let rel = path.trim_start_matches('/');
    if rel.is_empty() {
        root.to_path_buf()
    } else {
        root.join(rel)
    }
}

/// The workspace path of `name` inside the directory at workspace path `dir`.
pub fn child(dir: &str, name: &str) -> String {
    if dir == "/" {
        format!("/{name}")
    } else {
        format!("{dir}/{name}")
    }
}

/// The last name of a checked path other than `/`.
pub fn name(path: &str) -> &str {
    path.rsplit_once('/').map_or(path, |(_, name)| name)
}

/// The proper ancestors of a checked path, outermost first, without `/`.
pub fn ancestors(path: &str) -> impl Iterator<Item = &str> {
    path.match_indices('/')
        .map(|(at, _)| &path[..at])
        .filter(|prefix| !prefix.is_empty())
}

/// Whether `path` is `dir` or lies under it.
pub fn within(path: &str, dir: &str) -> bool {
    dir == "/"
        || path == dir
        || (path.starts_with(dir) && path.as_bytes().get(dir.len()) == Some(&b'/'))
}

/// Checks a container name from the `x-stead-container` header.
pub fn check_container(name: &str) -> Result<(), PathError> {
    let ok = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        && name != "."
        && name != "..";
    if ok {
        Ok(())
    } else {
        Err(PathError::BadContainer(name.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_normalized_absolute_paths_pass() {
        for good in ["/", "/a", "/a/b.c", "/.hidden", "/a/...x"] {
            assert_eq!(check(good), Ok(()), "{good}");
        }
        for bad in [
            "", "a", "a/b", "/a/", "//a", "/a//b", "/./a", "/a/..", "/../x", "/a\0b",
        ] {
            assert!(check(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            check(&format!("/{}", "a".repeat(256))),
            Err(PathError::TooLong)
        );
        assert_eq!(check(&"/a".repeat(2049)), Err(PathError::TooLong));
    }

    #[test]
    fn ancestors_and_within() {
        assert_eq!(ancestors("/a/b/c").collect::<Vec<_>>(), ["/a", "/a/b"]);
        assert_eq!(ancestors("/a").count(), 0);
        assert!(within("/a/b", "/a"));
        assert!(within("/a", "/a"));
        assert!(!within("/ab", "/a"));
        assert!(within("/x", "/"));
        assert_eq!(child("/", "a"), "/a");
        assert_eq!(child("/a", "b"), "/a/b");
        assert_eq!(name("/a/b"), "b");
        assert_eq!(name("/a"), "a");
    }

    #[test]
    fn container_names() {
        assert!(check_container("agent-1.x_y").is_ok());
        for bad in ["", ".", "..", "a/b", "a b", &"x".repeat(65)] {
            assert!(check_container(bad).is_err(), "{bad:?}");
        }
    }
}
