//! The index (`.git/index`, "DIRC" versions 2 and 3): the staged tree as a
//! sorted list of entries, each with the stat data git compares to see a
//! file unchanged without reading it, closed by a SHA-1 of the whole file.
//!
//! Entries are kept whole, stat fields included, so an index the
//! computer's git wrote comes back with every field it had. Optional
//! extensions (the cached tree, resolve-undo, untracked cache) are dropped
//! on write, as git allows; a required one (split index, sparse index), or
//! version 4's compressed paths, is refused rather than misread.

use gix_hash::ObjectId;

use crate::error::{Error, Result};

/// The mode of a regular file, an executable, a symlink, a submodule.
pub const MODE_FILE: u32 = 0o100644;
pub const MODE_EXEC: u32 = 0o100755;
pub const MODE_SYMLINK: u32 = 0o120000;
pub const MODE_GITLINK: u32 = 0o160000;

/// One staged path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexEntry {
    pub ctime: (u32, u32),
    pub mtime: (u32, u32),
    pub dev: u32,
    pub ino: u32,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub size: u32,
    pub id: ObjectId,
    /// The merge stage (0 unless a merge left a conflict).
    pub stage: u16,
    /// Version 3's extended flags (intent-to-add, skip-worktree).
    pub extended: u16,
    pub assume_valid: bool,
    /// Relative to the worktree's root, `/`-separated.
    pub path: String,
}

impl IndexEntry {
    /// A new stage-0 entry for `path` with the stat data the workspace has.
    pub fn new(path: String, mode: u32, id: ObjectId, size: u64, mtime_ms: i64) -> Self {
        let stamp = stamp(mtime_ms);
        IndexEntry {
            ctime: stamp,
            mtime: stamp,
            dev: 0,
            ino: 0,
            mode,
            uid: 0,
            gid: 0,
            size: size as u32,
            id,
            stage: 0,
            extended: 0,
            assume_valid: false,
            path,
        }
    }
}

/// Milliseconds as the index's (seconds, nanoseconds).
pub fn stamp(mtime_ms: i64) -> (u32, u32) {
    let ms = mtime_ms.max(0);
    ((ms / 1000) as u32, ((ms % 1000) * 1_000_000) as u32)
}

/// The staged entries, sorted by path then stage.
#[derive(Debug, Clone, Default)]
pub struct Index {
    pub entries: Vec<IndexEntry>,
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}
fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn corrupt(what: &str) -> Error {
    Error::Corrupt(format!("index file corrupt: {what}"))
}

/// The SHA-1 of `data`, the way git closes its index and packs.
fn sha1(data: &[u8]) -> ObjectId {
    let mut hasher = gix_hash::hasher(gix_hash::Kind::Sha1);
    hasher.update(data);
    hasher.try_finalize().expect("sha1 of the index")
}

impl Index {
    pub fn parse(data: &[u8]) -> Result<Index> {
        if data.len() < 12 + 20 || &data[..4] != b"DIRC" {
            return Err(corrupt("bad signature"));
        }
        let version = be32(data, 4);
        if version == 4 {
            return Err(Error::Fatal(
                "index version 4 is not supported here (git update-index --index-version 2)"
                    .to_string(),
            ));
        }
        if version != 2 && version != 3 {
            return Err(corrupt("bad index version"));
        }
        let body = &data[..data.len() - 20];
        if sha1(body).as_slice() != &data[data.len() - 20..] {
            return Err(corrupt("bad index file sha1 signature"));
        }
        let count = be32(data, 8) as usize;
        let mut at = 12;
        let mut entries = Vec::with_capacity(count);
        for _ in 0..count {
            if at + 62 > body.len() {
                return Err(corrupt("truncated entry"));
            }
            let e = &body[at..];
            let flags = be16(e, 60);
            let extended_flag = flags & 0x4000 != 0;
            let mut fixed = 62;
            let extended = if extended_flag {
                if version < 3 {
                    return Err(corrupt("extended flag in version 2"));
                }
                fixed += 2;
                be16(e, 62)
            } else {
                0
            };
            let name_end = e[fixed..]
                .iter()
                .position(|&b| b == 0)
                .ok_or_else(|| corrupt("unterminated path"))?;
            let path = std::str::from_utf8(&e[fixed..fixed + name_end])
                .map_err(|_| corrupt("path is not UTF-8"))?
                .to_string();
            let id = ObjectId::from_bytes_or_panic(&e[40..60]);
            entries.push(IndexEntry {
                ctime: (be32(e, 0), be32(e, 4)),
                mtime: (be32(e, 8), be32(e, 12)),
                dev: be32(e, 16),
                ino: be32(e, 20),
                mode: be32(e, 24),
                uid: be32(e, 28),
                gid: be32(e, 32),
                size: be32(e, 36),
                id,
                stage: (flags >> 12) & 0x3,
                extended,
                assume_valid: flags & 0x8000 != 0,
                path,
            });
            // Padded with 1-8 NULs to a multiple of 8.
            let len = fixed + name_end;
            at += (len + 8) & !7;
        }
        // Extensions: a 4-byte signature, a 4-byte size, the data.
        while at + 8 <= body.len() {
            let signature = &body[at..at + 4];
            let size = be32(body, at + 4) as usize;
            if !signature[0].is_ascii_uppercase() {
                return Err(Error::Fatal(format!(
                    "index uses the {} extension, which is not supported here",
                    String::from_utf8_lossy(signature)
                )));
            }
            at += 8 + size;
        }
        Ok(Index { entries })
    }

    /// The file's bytes, version 2 (3 when an entry has extended flags).
    pub fn to_bytes(&self) -> Vec<u8> {
        let version: u32 = if self.entries.iter().any(|e| e.extended != 0) {
            3
        } else {
            2
        };
        let mut out = Vec::with_capacity(12 + self.entries.len() * 80);
        out.extend_from_slice(b"DIRC");
        out.extend_from_slice(&version.to_be_bytes());
        out.extend_from_slice(&(self.entries.len() as u32).to_be_bytes());
        for e in &self.entries {
            let start = out.len();
            for v in [
                e.ctime.0, e.ctime.1, e.mtime.0, e.mtime.1, e.dev, e.ino, e.mode, e.uid, e.gid,
                e.size,
            ] {
                out.extend_from_slice(&v.to_be_bytes());
            }
            out.extend_from_slice(e.id.as_slice());
            let name_len = e.path.len().min(0xfff) as u16;
            let mut flags = name_len | (e.stage << 12);
            if e.assume_valid {
                flags |= 0x8000;
            }
            if e.extended != 0 {
                flags |= 0x4000;
            }
            out.extend_from_slice(&flags.to_be_bytes());
            if e.extended != 0 {
                out.extend_from_slice(&e.extended.to_be_bytes());
            }
            out.extend_from_slice(e.path.as_bytes());
            let len = out.len() - start;
            let padded = (len + 8) & !7;
            out.resize(start + padded, 0);
        }
        let digest = sha1(&out);
        out.extend_from_slice(digest.as_slice());
        out
    }

    /// Puts the entries in git's order: by path bytes, then stage.
    pub fn sort(&mut self) {
        self.entries.sort_by(|a, b| {
            a.path
                .as_bytes()
                .cmp(b.path.as_bytes())
                .then(a.stage.cmp(&b.stage))
        });
    }

    /// The position of `path`'s stage-0 entry.
    pub fn find(&self, path: &str) -> Option<usize> {
        self.entries
            .binary_search_by(|e| e.path.as_bytes().cmp(path.as_bytes()).then(e.stage.cmp(&0)))
            .ok()
    }

    /// Adds or replaces the entry at its path (any conflict stages go).
    pub fn upsert(&mut self, entry: IndexEntry) {
        self.entries.retain(|e| e.path != entry.path);
        let at = self
            .entries
            .partition_point(|e| e.path.as_bytes() < entry.path.as_bytes());
        self.entries.insert(at, entry);
    }

    /// Removes `path`'s entries; whether there were any.
    pub fn remove(&mut self, path: &str) -> bool {
        let before = self.entries.len();
        self.entries.retain(|e| e.path != path);
        before != self.entries.len()
    }
}
