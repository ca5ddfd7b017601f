//! What is on disk at a path, cheaply.
//!
//! Hashing a large tree after every command would dominate its cost, so the
//! program remembers the stat data it saw for each file (size, mtime, ctime,
//! inode, mode) beside the entry the workspace knows. A file whose stat data
//! is unchanged is taken as unchanged; only the others are read, in
//! [`CHUNK_SIZE`] pieces so a huge file never sits in memory whole.

use std::collections::BTreeMap;
use std::fs::{self, File, Metadata, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

use stead_sync::{hash_chunk, ChunkHash, Entry, CHUNK_SIZE};

/// The stat data that tells whether a file may have changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    pub size: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
    pub ino: u64,
    pub mode: u32,
}

impl Stat {
    /// The modification time in whole milliseconds (as the workspace keeps
    /// times).
    pub fn mtime_ms(&self) -> i64 {
        self.mtime_ns.div_euclid(1_000_000) as i64
    }

    pub fn of(meta: &Metadata) -> Stat {
        let ns = |s: i64, n: i64| s as i128 * 1_000_000_000 + n as i128;
        Stat {
            size: meta.size(),
            mtime_ns: ns(meta.mtime(), meta.mtime_nsec()),
            ctime_ns: ns(meta.ctime(), meta.ctime_nsec()),
            ino: meta.ino(),
            mode: meta.mode(),
        }
    }
}

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

/// Looks at `abs` without following a final symlink; a file is hashed only
/// when its stat data differs from `known`'s.
pub fn observe(abs: &Path, known: Option<&Known>) -> io::Result<Observed> {
    let meta = match fs::symlink_metadata(abs) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Observed::Missing),
        Err(e) => return Err(e),
    };
    let kind = meta.file_type();
    let stat = Stat::of(&meta);
    if kind.is_dir() {
        return Ok(Observed::Found(
            Entry::Dir {
                mode: perm(stat.mode),
            },
            stat,
        ));
    }
    if kind.is_symlink() {
        let target = fs::read_link(abs)?;
        let target = target.into_os_string().into_string().map_err(|_| {
            io::Error::new(io::ErrorKind::InvalidData, "symlink target is not UTF-8")
        })?;
        return Ok(Observed::Found(Entry::Symlink { target }, stat));
    }
    if kind.is_file() {
        if let Some(Known {
            entry: entry @ Entry::File { .. },
            stat: Some(seen),
        }) = known
        {
            if *seen == stat {
                return Ok(Observed::Found(entry.clone(), stat));
            }
        }
        let (entry, stat) = hash_file(abs)?;
        return Ok(Observed::Found(entry, stat));
    }
    Ok(Observed::Unsupported(if kind.is_fifo() {
        "a FIFO cannot be synced"
    } else if kind.is_socket() {
        "a socket cannot be synced"
    } else if kind.is_block_device() || kind.is_char_device() {
        "a device file cannot be synced"
    } else {
        "an unknown file type cannot be synced"
    }))
}

/// Opens a regular file without following a final symlink.
fn open_file(abs: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(abs)?;
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

/// The entry of the regular file at `abs` and the stat data taken before
/// reading it (a write during the read then shows as a changed stat later).
pub fn hash_file(abs: &Path) -> io::Result<(Entry, Stat)> {
    let mut file = open_file(abs)?;
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

/// Chunk `index` of the file at `abs` if it still hashes to `hash`.
pub fn read_chunk(abs: &Path, index: usize, hash: &ChunkHash) -> io::Result<Option<Vec<u8>>> {
    let mut file = match open_file(abs) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Ok(None),
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
