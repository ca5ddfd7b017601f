//! What is on disk at a path, cheaply.
//!
//! Hashing a large tree after every command would dominate its cost, so the
//! program remembers the stat data it saw for each file (size, mtime, ctime,
//! inode, mode) beside the entry the workspace knows. A file whose stat data
//! is unchanged is taken as unchanged; only the others are read, in
//! [`CHUNK_SIZE`] pieces so a huge file never sits in memory whole.
//!
//! Every look is relative to an open directory (see [`crate::beneath`]):
//! a command swapping a directory for a symlink cannot make the program
//! read a file outside the workspace as if it were the workspace's.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};

use stead_sync::{hash_chunk, ChunkHash, Entry, CHUNK_SIZE};

use crate::beneath::{is_missing, Dir, Kind, Stat};

/// A path as the workspace side knows it, with the stat data seen for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Known {
    pub entry: Entry,
    pub stat: Option<Stat>,
}

/// What the workspace side knows the disk holds: workspace path → entry.
pub type Baseline = BTreeMap<String, Known>;

/// What is at a path on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observed {
    Missing,
    Found(Entry, Stat),
    /// Something the workspace cannot hold (FIFO, socket, device).
    Unsupported(&'static str),
}

/// Permission bits of a mode.
pub fn perm(mode: u32) -> u32 {
    mode & 0o7777
}

/// Looks at `name` in `dir` without following a symlink; a file is
/// hashed only when its stat data differs from `known`'s.
pub fn observe(dir: &Dir, name: impl AsRef<OsStr>, known: Option<&Known>) -> io::Result<Observed> {
    let name = name.as_ref();
    let Some(meta) = dir.meta(name)? else {
        return Ok(Observed::Missing);
    };
    let stat = meta.stat;
    match meta.kind {
        Kind::Dir => Ok(Observed::Found(
            Entry::Dir {
                mode: perm(stat.mode),
            },
            stat,
        )),
        Kind::Symlink => {
            let target = dir.readlink(name)?.into_string().map_err(|_| {
                io::Error::new(io::ErrorKind::InvalidData, "symlink target is not UTF-8")
            })?;
            Ok(Observed::Found(Entry::Symlink { target }, stat))
        }
        Kind::File if dir.is_foreign(&meta) => Ok(Observed::Unsupported(
            "a hard link to a file the commands' user does not own cannot be synced",
        )),
        Kind::File => {
            if let Some(Known {
                entry: entry @ Entry::File { .. },
                stat: Some(seen),
            }) = known
            {
                if *seen == stat {
                    return Ok(Observed::Found(entry.clone(), stat));
                }
            }
            let (entry, stat) = hash_file(dir, name)?;
            Ok(Observed::Found(entry, stat))
        }
        Kind::Fifo => Ok(Observed::Unsupported("a FIFO cannot be synced")),
        Kind::Socket => Ok(Observed::Unsupported("a socket cannot be synced")),
        Kind::Device => Ok(Observed::Unsupported("a device file cannot be synced")),
        Kind::Unknown => Ok(Observed::Unsupported(
            "an unknown file type cannot be synced",
        )),
    }
}

/// Opens regular file `name` in `dir` (never a symlink's target).
fn open_file(dir: &Dir, name: &OsStr) -> io::Result<File> {
    let file = dir.open_read(name)?;
    if !file.metadata()?.file_type().is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok(file)
}

/// Reads up to `buf.len()` bytes, stopping early only at the end of the file.
fn fill(file: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// The entry of regular file `name` in `dir` and the stat data taken
/// before reading it (a write during the read then shows as a changed
/// stat later).
pub fn hash_file(dir: &Dir, name: &OsStr) -> io::Result<(Entry, Stat)> {
    let mut file = open_file(dir, name)?;
    let stat = Stat::of(&file.metadata()?);
    let mut buf = vec![0u8; CHUNK_SIZE];
    let mut chunks = Vec::new();
    let mut size = 0u64;
    loop {
        let n = fill(&mut file, &mut buf)?;
        if n == 0 {
            break;
        }
        chunks.push(hash_chunk(&buf[..n]));
        size += n as u64;
        if n < CHUNK_SIZE {
            break;
        }
    }
    let entry = Entry::File {
        mode: perm(stat.mode),
        size,
        chunks,
    };
    Ok((entry, stat))
}

/// Chunk `index` of the file at checked workspace path `path` below `root`
/// if it still hashes to `hash` (`None` if it is gone or no longer a
/// regular file reached through directories).
pub fn read_chunk(
    root: &Dir,
    path: &str,
    index: usize,
    hash: &ChunkHash,
) -> io::Result<Option<Vec<u8>>> {
    let opened = root
        .parent(path)
        .and_then(|(dir, name)| open_file(&dir, OsStr::new(name)));
    let mut file = match opened {
        Ok(file) => file,
        Err(e) if is_missing(&e) => return Ok(None),
        Err(e) if e.kind() == io::ErrorKind::InvalidInput => return Ok(None),
        Err(e) => return Err(e),
    };
    file.seek(SeekFrom::Start((index * CHUNK_SIZE) as u64))?;
    let mut buf = vec![0u8; CHUNK_SIZE];
    let n = fill(&mut file, &mut buf)?;
    buf.truncate(n);
    Ok((n > 0 && hash_chunk(&buf) == *hash).then_some(buf))
}

/// A random hex id of `bytes` bytes from the kernel.
pub fn random_hex(bytes: usize) -> io::Result<String> {
    let mut buf = vec![0u8; bytes];
    File::open("/dev/urandom")?.read_exact(&mut buf)?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}
