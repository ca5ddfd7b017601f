//! The durable environment: what a computer installed outside the synced
//! tree, packed when it is released and put back on the next one.
//!
//! The sync keeps dependency trees (the ignored paths: `node_modules/`,
//! `.venv/`, ...) and the commands' per-user directory ([`USER_DIR`]) on the
//! computer only, so a released computer loses them. The workspace side
//! keeps them as a content-addressed snapshot instead, outside the
//! workspace's tree: a manifest of [`EnvEntry`]s and the chunks they name
//! (cut and hashed as file content is, see [`crate::hash_content`]).
//!
//! Saving (the workspace side asks, at release or on request):
//!
//! 1. `POST` [`PACK_PATH`] with a [`PackRequest`] → [`PackReply`]: the
//!    container walks the ignored paths of its workspace copy and the user
//!    directory, hashes every file and answers the manifest (or that it is
//!    over the limit given). It remembers where each chunk is on disk under
//!    the pack's id.
//! 2. `POST` [`CHUNKS_PATH`] with an [`EnvChunkRequest`] → framed chunks
//!    (only those the workspace lacks). A chunk whose file changed since the
//!    pack is refused (`CHUNK_GONE`): the save fails, the snapshot kept
//!    before stays.
//!
//! Restoring (on a fresh computer, before its first command):
//!
//! 1. `POST /v1/sync/chunks` with the snapshot's chunks (the same staging
//!    as a push's content; every chunk is checked against its hash).
//! 2. `POST` [`RESTORE_PATH`] with a [`Restore`] → [`RestoreReply`]: the
//!    chunks still lacking, or restored. Nothing is written until every
//!    chunk is there and intact, so a restore is whole or not at all.

use serde::{Deserialize, Serialize};

use crate::{ChunkHash, Skipped};

/// Packs the environment: [`PackRequest`] → [`PackReply`].
pub const PACK_PATH: &str = "/v1/environment/pack";

/// A pack's chunks: [`EnvChunkRequest`] → framed chunks.
pub const CHUNKS_PATH: &str = "/v1/environment/chunks";

/// Restores a snapshot: [`Restore`] → [`RestoreReply`].
pub const RESTORE_PATH: &str = "/v1/environment/restore";

/// The commands' per-user directory on the computer (`pip install --user`,
/// `npm install -g`, the caches): packed whole, under this path.
pub const USER_DIR: &str = "/var/tmp/home";

/// Whether `path` (a manifest's) lies in [`USER_DIR`] rather than in the
/// workspace's ignored paths.
pub fn in_user_dir(path: &str) -> bool {
    path == USER_DIR
        || path
            .strip_prefix(USER_DIR)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// What is at one path of an environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum EnvKind {
    /// A regular file, its content as chunk hashes.
    File {
        mode: u32,
        size: u64,
        chunks: Vec<ChunkHash>,
        mtime_ms: i64,
    },
    Dir {
        mode: u32,
    },
    Symlink {
        target: String,
    },
    /// Another name of the file at `to` (an earlier entry of the same
    /// manifest): restored as a hard link to it, not as a copy.
    Hardlink {
        to: String,
    },
}

/// One path of an environment: a workspace path under an ignored one
/// (`/.venv/bin/python`), or one in [`USER_DIR`]. Parents come before their
/// children.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvEntry {
    pub path: String,
    #[serde(flatten)]
    pub kind: EnvKind,
}

impl EnvEntry {
    /// The entry's content bytes (a hard link's are its target's).
    pub fn size(&self) -> u64 {
        match &self.kind {
            EnvKind::File { size, .. } => *size,
            _ => 0,
        }
    }

    /// The entry's chunks, in order.
    pub fn chunks(&self) -> &[ChunkHash] {
        match &self.kind {
            EnvKind::File { chunks, .. } => chunks,
            _ => &[],
        }
    }
}

/// `POST` [`PACK_PATH`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PackRequest {
    /// Content bytes the snapshot may hold at most.
    pub limit_bytes: u64,
}

/// The answer to a [`PackRequest`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum PackReply {
    /// The manifest; its chunks are served under `pack`.
    Packed {
        pack: String,
        entries: Vec<EnvEntry>,
        /// Content bytes (each file's size, hard links once).
        bytes: u64,
        /// What was left out and why (sockets, FIFOs, devices).
        skipped: Vec<Skipped>,
    },
    /// The environment holds more than the limit: nothing was packed.
    TooLarge { bytes: u64, limit: u64 },
}

/// `POST` [`CHUNKS_PATH`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvChunkRequest {
    pub pack: String,
    pub chunks: Vec<ChunkHash>,
}

/// `POST` [`RESTORE_PATH`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Restore {
    /// The instance the restore is meant for (a fresh one): another refuses
    /// it, as a push is refused.
    pub instance: String,
    pub entries: Vec<EnvEntry>,
}

/// The answer to a [`Restore`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum RestoreReply {
    /// Every entry is in place.
    Restored { files: u64, bytes: u64 },
    /// Send these chunks (`POST /v1/sync/chunks`), then restore again;
    /// nothing was written.
    Need { chunks: Vec<ChunkHash> },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_travel_flat() {
        let entry = EnvEntry {
            path: "/.venv/bin/python".into(),
            kind: EnvKind::Symlink {
                target: "python3".into(),
            },
        };
        let text = serde_json::to_string(&entry).unwrap();
        assert_eq!(
            text,
            r#"{"path":"/.venv/bin/python","type":"symlink","target":"python3"}"#
        );
        assert_eq!(serde_json::from_str::<EnvEntry>(&text).unwrap(), entry);
        let reply = PackReply::TooLarge { bytes: 9, limit: 4 };
        let text = serde_json::to_string(&reply).unwrap();
        assert_eq!(text, r#"{"status":"too_large","bytes":9,"limit":4}"#);
    }

    #[test]
    fn the_user_dir_is_told_apart() {
        assert!(in_user_dir("/var/tmp/home"));
        assert!(in_user_dir("/var/tmp/home/.local/bin/x"));
        assert!(!in_user_dir("/var/tmp/homework"));
        assert!(!in_user_dir("/.venv"));
    }
}
