//! The setup script: what builds the environment, and what it was built
//! from.
//!
//! A workspace that holds [`SETUP_PATH`] has its environment built by it:
//! the script runs once per environment, on the computer, before the first
//! command that needs one, and what it leaves (the ignored paths and the
//! per-user directory) is saved as the snapshot at once. The script names
//! the lock files its result depends on in comment lines:
//!
//! ```sh
//! # stead-lock: requirements.txt web/package-lock.json
//! ```
//!
//! (paths relative to the workspace's root, or absolute workspace paths;
//! any number of such lines). The [`Fingerprint`] is the content hash of
//! the script and of each lock file (or its absence): when it differs from
//! the one the snapshot was built from, the snapshot is stale, and the
//! script runs again (on a fresh computer from scratch, on a running one
//! over what it holds: a script should be safe to run twice, as
//! `pip install -r` and `npm ci` are).

use serde::{Deserialize, Serialize};
use stead_sql::Sql;
use stead_vfs::{VPath, Vfs, VfsError};

/// Where the setup script is.
pub const SETUP_PATH: &str = "/.stead/setup.sh";

/// What starts a line naming lock files.
pub const LOCK_MARK: &str = "# stead-lock:";

/// One file's content hash (`None`: it is not there).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileHash {
    pub path: String,
    pub hash: Option<String>,
}

/// What an environment was built from: the setup script and the lock
/// files it names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    pub setup: FileHash,
    pub locks: Vec<FileHash>,
}

/// The lock files `script` names, as workspace paths, in order, each once
/// (a name that is not a path is left out).
pub fn lock_paths(script: &str) -> Vec<VPath> {
    let root = VPath::root();
    let mut out: Vec<VPath> = Vec::new();
    for line in script.lines() {
        let Some(names) = line.trim_start().strip_prefix(LOCK_MARK) else {
            continue;
        };
        for name in names.split_whitespace() {
            if let Ok(path) = VPath::parse_from(name, &root) {
                if !out.contains(&path) {
                    out.push(path);
                }
            }
        }
    }
    out
}

/// The workspace's fingerprint now (`None` without a setup script).
pub fn fingerprint<S: Sql>(vfs: &Vfs<'_, S>) -> Result<Option<Fingerprint>, VfsError> {
    let setup = VPath::parse(SETUP_PATH)?;
    let Some(script) = content(vfs, &setup)? else {
        return Ok(None);
    };
    let mut locks = Vec::new();
    for path in lock_paths(&String::from_utf8_lossy(&script)) {
        let hash = content(vfs, &path)?.map(|data| hash_of(&data));
        locks.push(FileHash {
            path: path.to_string(),
            hash,
        });
    }
    Ok(Some(Fingerprint {
        setup: FileHash {
            path: SETUP_PATH.to_string(),
            hash: Some(hash_of(&script)),
        },
        locks,
    }))
}

/// A file's content, `None` when there is no file there.
fn content<S: Sql>(vfs: &Vfs<'_, S>, path: &VPath) -> Result<Option<Vec<u8>>, VfsError> {
    match vfs.read_file(path) {
        Ok(data) => Ok(Some(data)),
        Err(VfsError::NotFound { .. } | VfsError::IsADirectory { .. }) => Ok(None),
        Err(error) => Err(error),
    }
}

/// A content hash: of the chunk hashes, as the workspace names content.
fn hash_of(data: &[u8]) -> String {
    let mut names = Vec::new();
    for hash in stead_sync::hash_content(data) {
        names.extend_from_slice(&hash.0);
    }
    names.extend_from_slice(&(data.len() as u64).to_le_bytes());
    stead_sync::hash_chunk(&names).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_lines_name_workspace_paths_once() {
        let script = "#!/bin/sh\n# stead-lock: requirements.txt web/package-lock.json\n\
                      pip install -r requirements.txt\n  # stead-lock: /requirements.txt ../x\n\
                      echo '# stead-lock: not-at-the-start'\n";
        let paths: Vec<String> = lock_paths(script).iter().map(|p| p.to_string()).collect();
        assert_eq!(
            paths,
            ["/requirements.txt", "/web/package-lock.json"],
            "named once; a path above the root is none"
        );
        assert!(lock_paths("echo hi\n").is_empty());
    }

    #[test]
    fn content_hashes_tell_content_apart() {
        assert_eq!(hash_of(b"a"), hash_of(b"a"));
        assert_ne!(hash_of(b"a"), hash_of(b"b"));
        assert_ne!(hash_of(b""), hash_of(b"\0"));
    }
}
