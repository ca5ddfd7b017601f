//! Chunks received ahead of the push that uses them.
//!
//! The Worker sends content (`POST /v1/sync/chunks`) before the push that
//! needs it; the chunks wait here, one file per hash, in the state
//! directory — never inside the workspace, where a command or a scan would
//! see them. Every chunk is checked against its hash on the way in and on
//! the way out, so a damaged file can never become workspace content.

use std::fs;
use std::io::{self, Write};
use std::path::PathBuf;

use stead_sync::{hash_chunk, ChunkHash};

use crate::disk::random_hex;

#[derive(Debug, Clone)]
pub struct Staged {
    dir: PathBuf,
}

impl Staged {
    pub fn new(dir: PathBuf) -> io::Result<Staged> {
        fs::create_dir_all(&dir)?;
        Ok(Staged { dir })
    }

    fn path(&self, hash: &ChunkHash) -> PathBuf {
        self.dir.join(hash.to_string())
    }

    pub fn has(&self, hash: &ChunkHash) -> bool {
        self.path(hash).is_file()
    }

    /// Stores a chunk whose hash the caller verified; atomic (temp + rename).
    pub fn put(&self, hash: &ChunkHash, data: &[u8]) -> io::Result<()> {
        let tmp = self.dir.join(format!(".{hash}.{}", random_hex(8)?));
        let mut file = fs::File::create(&tmp)?;
        file.write_all(data)?;
        drop(file);
        fs::rename(&tmp, self.path(hash))
    }

    /// The chunk, if stored and intact (a damaged copy is dropped).
    pub fn get(&self, hash: &ChunkHash) -> io::Result<Option<Vec<u8>>> {
        match fs::read(self.path(hash)) {
            Ok(data) if hash_chunk(&data) == *hash => Ok(Some(data)),
            Ok(_) => {
                self.remove(hash);
                Ok(None)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    pub fn remove(&self, hash: &ChunkHash) {
        let _ = fs::remove_file(self.path(hash));
    }
}
