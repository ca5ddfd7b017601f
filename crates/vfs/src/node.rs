//! Inodes as stored in the `nodes` table.

use serde::{Deserialize, Serialize};
use stead_sql::Row;

use crate::error::VfsError;

type Result<T, E = VfsError> = std::result::Result<T, E>;

/// What a node is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    File,
    Dir,
    Symlink,
}

impl Kind {
    /// The value stored in `nodes.kind`.
    pub(crate) fn to_db(self) -> i64 {
        match self {
            Kind::File => 1,
            Kind::Dir => 2,
            Kind::Symlink => 3,
        }
    }

    pub(crate) fn from_db(value: i64) -> Result<Self> {
        match value {
            1 => Ok(Kind::File),
            2 => Ok(Kind::Dir),
            3 => Ok(Kind::Symlink),
            other => Err(VfsError::Corrupt(format!("unknown node kind {other}"))),
        }
    }
}

/// One inode: a file, directory or symlink.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Node {
    pub ino: i64,
    #[serde(rename = "type")]
    pub kind: Kind,
    /// Permission bits (e.g. 0o644), shown in octal (`"0644"`).
    #[serde(serialize_with = "octal")]
    pub mode: u32,
    /// Bytes of content (files), or of the target (symlinks); 0 for directories.
    pub size: u64,
    /// Last modification, milliseconds since the Unix epoch.
    pub mtime: i64,
    /// Symlink target, as written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Workspace revision of the node's last change.
    pub rev: i64,
}

/// The node columns, in the order [`Node::from_row`] reads them, for a query
/// that aliases `nodes` as `n`.
pub(crate) const NODE_COLUMNS: &str = "n.ino, n.kind, n.mode, n.size, n.mtime, n.target, n.rev";

pub(crate) fn octal<S: serde::Serializer>(mode: &u32, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&format!("{mode:04o}"))
}

impl Node {
    /// Reads a node from `row`, starting at column `at`.
    pub(crate) fn from_row(row: &Row, at: usize) -> Result<Self> {
        Ok(Node {
            ino: row.int(at)?,
            kind: Kind::from_db(row.int(at + 1)?)?,
            mode: row.int(at + 2)? as u32,
            size: row.int(at + 3)? as u64,
            mtime: row.int(at + 4)?,
            target: row.opt_text(at + 5)?.map(str::to_string),
            rev: row.int(at + 6)?,
        })
    }

    pub fn is_dir(&self) -> bool {
        self.kind == Kind::Dir
    }
}

/// A named entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DirEntry {
    pub name: String,
    #[serde(flatten)]
    pub node: Node,
}

impl DirEntry {
    /// Reads an entry from `row`: its name, then the node columns.
    pub(crate) fn from_row(row: &Row) -> Result<Self> {
        Ok(DirEntry {
            name: row.text(0)?.to_string(),
            node: Node::from_row(row, 1)?,
        })
    }
}
