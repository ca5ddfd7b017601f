//! Workspace paths: validated and normalised once, at the boundary.
//!
//! Every path that reaches the filesystem is a [`VPath`]: absolute within the
//! workspace, with `.` and `..` resolved lexically. A `..` that would climb
//! above the root is an error rather than being clamped, so a caller who
//! meant to leave the workspace learns it instead of silently writing
//! somewhere else. (Symlink targets are the exception: like a chroot, they
//! resolve with `..` clamped at the root, since the link was made earlier and
//! cannot point outside anyway.)

use std::fmt;

use crate::error::{Result, VfsError};

/// Longest path accepted, in bytes (Linux's PATH_MAX).
pub const MAX_PATH_LEN: usize = 4096;
/// Longest single name accepted, in bytes (Linux's NAME_MAX).
pub const MAX_NAME_LEN: usize = 255;

/// A normalised absolute workspace path such as `/src/main.rs`; the root is `/`.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VPath(String);

impl VPath {
    /// The workspace root, `/`.
    pub fn root() -> Self {
        VPath("/".to_string())
    }

    /// Parses `input`, resolving a relative path against the root.
    pub fn parse(input: &str) -> Result<Self> {
        Self::parse_from(input, &VPath::root())
    }

    /// Parses `input`, resolving a relative path against `cwd`.
    pub fn parse_from(input: &str, cwd: &VPath) -> Result<Self> {
        let invalid = |reason| VfsError::InvalidPath {
            path: input.to_string(),
            reason,
        };
        if input.is_empty() {
            return Err(invalid("empty path"));
        }
        if input.contains('\0') {
            return Err(invalid("contains a NUL byte"));
        }
        if input.len() > MAX_PATH_LEN {
            return Err(VfsError::NameTooLong {
                path: truncate(input),
                len: input.len(),
                limit: MAX_PATH_LEN,
            });
        }
        let mut parts: Vec<&str> = if input.starts_with('/') {
            Vec::new()
        } else {
            cwd.components().collect()
        };
        for part in input.split('/') {
            match part {
                "" | "." => {}
                ".." => {
                    if parts.pop().is_none() {
                        return Err(VfsError::EscapesRoot {
                            path: input.to_string(),
                        });
                    }
                }
                name => {
                    if name.len() > MAX_NAME_LEN {
                        return Err(VfsError::NameTooLong {
                            path: truncate(input),
                            len: name.len(),
                            limit: MAX_NAME_LEN,
                        });
                    }
                    parts.push(name);
                }
            }
        }
        let path = VPath::from_components(parts);
        if path.0.len() > MAX_PATH_LEN {
            return Err(VfsError::NameTooLong {
                path: truncate(&path.0),
                len: path.0.len(),
                limit: MAX_PATH_LEN,
            });
        }
        Ok(path)
    }

    /// Resolves a symlink `target` found in directory `dir`, chroot-style:
    /// absolute targets start at the workspace root and `..` stops at it.
    pub fn resolve_link(dir: &VPath, target: &str) -> VPath {
        let mut parts: Vec<&str> = if target.starts_with('/') {
            Vec::new()
        } else {
            dir.components().collect()
        };
        for part in target.split('/') {
            match part {
                "" | "." => {}
                ".." => {
                    parts.pop();
                }
                name => parts.push(name),
            }
        }
        VPath::from_components(parts)
    }

    fn from_components<'a>(parts: impl IntoIterator<Item = &'a str>) -> Self {
        let mut out = String::new();
        for part in parts {
            out.push('/');
            out.push_str(part);
        }
        if out.is_empty() {
            out.push('/');
        }
        VPath(out)
    }

    /// The path as text, always starting with `/`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn is_root(&self) -> bool {
        self.0 == "/"
    }

    /// The names from the root down; empty for the root.
    pub fn components(&self) -> impl DoubleEndedIterator<Item = &str> + Clone {
        self.0.split('/').filter(|part| !part.is_empty())
    }

    /// The last name, or `None` for the root.
    pub fn name(&self) -> Option<&str> {
        self.components().next_back()
    }

    /// The parent directory, or `None` for the root.
    pub fn parent(&self) -> Option<VPath> {
        if self.is_root() {
            return None;
        }
        let cut = self.0.rfind('/').unwrap_or(0);
        Some(if cut == 0 {
            VPath::root()
        } else {
            VPath(self.0[..cut].to_string())
        })
    }

    /// This path with `name` appended. `name` must be a single valid name
    /// (as read from a directory entry).
    pub fn join(&self, name: &str) -> VPath {
        if self.is_root() {
            VPath(format!("/{name}"))
        } else {
            VPath(format!("{}/{name}", self.0))
        }
    }

    /// This path with a relative path of valid names (as produced by
    /// [`VPath::strip_prefix`]) appended; empty `relative` gives `self`.
    pub fn join_relative(&self, relative: &str) -> VPath {
        match (relative.is_empty(), self.is_root()) {
            (true, _) => self.clone(),
            (false, true) => VPath(format!("/{relative}")),
            (false, false) => VPath(format!("{}/{relative}", self.0)),
        }
    }

    /// Whether `self` is `ancestor` or lies below it.
    pub fn starts_with(&self, ancestor: &VPath) -> bool {
        ancestor.is_root()
            || self.0 == ancestor.0
            || (self.0.starts_with(&ancestor.0) && self.0.as_bytes()[ancestor.0.len()] == b'/')
    }

    /// `self` relative to `base` (no leading `/`; empty when equal), if below it.
    pub fn strip_prefix(&self, base: &VPath) -> Option<&str> {
        if !self.starts_with(base) {
            return None;
        }
        Some(if base.is_root() {
            &self.0[1..]
        } else {
            self.0[base.0.len()..].trim_start_matches('/')
        })
    }
}

/// Keeps error messages short when a caller sends a megabyte of path.
fn truncate(path: &str) -> String {
    const KEEP: usize = 128;
    if path.len() <= KEEP {
        return path.to_string();
    }
    let mut end = KEEP;
    while !path.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &path[..end])
}

impl fmt::Display for VPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for VPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> String {
        VPath::parse(s)
            .map(|p| p.0)
            .unwrap_or_else(|e| e.code().as_str().to_string())
    }

    #[test]
    fn normalises() {
        assert_eq!(p("/"), "/");
        assert_eq!(p("a/b"), "/a/b");
        assert_eq!(p("//a/./b/"), "/a/b");
        assert_eq!(p("/a/b/../c"), "/a/c");
        assert_eq!(p("/a/.."), "/");
    }

    #[test]
    fn rejects_bad_paths() {
        assert_eq!(p(""), "EINVAL");
        assert_eq!(p("/a\0b"), "EINVAL");
        assert_eq!(p("/.."), "EACCES");
        assert_eq!(p("a/../../etc/passwd"), "EACCES");
        assert_eq!(p(&format!("/{}", "x".repeat(256))), "ENAMETOOLONG");
        assert_eq!(p(&"/abcdefgh".repeat(600)), "ENAMETOOLONG");
        assert_eq!(p(&format!("/{}", "x".repeat(255))).len(), 256);
    }

    #[test]
    fn relative_to_cwd() {
        let cwd = VPath::parse("/home/agent").unwrap();
        assert_eq!(
            VPath::parse_from("x", &cwd).unwrap().as_str(),
            "/home/agent/x"
        );
        assert_eq!(VPath::parse_from("../..", &cwd).unwrap().as_str(), "/");
        assert!(VPath::parse_from("../../..", &cwd).is_err());
    }

    #[test]
    fn links_resolve_chroot_style() {
        let dir = VPath::parse("/a/b").unwrap();
        assert_eq!(
            VPath::resolve_link(&dir, "../../../../etc").as_str(),
            "/etc"
        );
        assert_eq!(VPath::resolve_link(&dir, "/x/y").as_str(), "/x/y");
        assert_eq!(VPath::resolve_link(&dir, "c").as_str(), "/a/b/c");
    }

    #[test]
    fn family() {
        let a = VPath::parse("/a/b").unwrap();
        assert_eq!(a.parent().unwrap().as_str(), "/a");
        assert_eq!(a.name(), Some("b"));
        assert!(a.starts_with(&VPath::parse("/a").unwrap()));
        assert!(!VPath::parse("/ab")
            .unwrap()
            .starts_with(&VPath::parse("/a").unwrap()));
        assert_eq!(a.strip_prefix(&VPath::root()), Some("a/b"));
        assert_eq!(a.strip_prefix(&VPath::parse("/a").unwrap()), Some("b"));
        assert_eq!(VPath::root().join("x").as_str(), "/x");
    }
}
