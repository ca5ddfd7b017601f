//! File work below a workspace's root that can never leave it.
//!
//! The program is root (in a container, and on the host in the local
//! mode), and commands run while it works: a process a command started can
//! swap any directory of the workspace for a symlink between the moment the
//! program looks at a path and the moment it uses it. A path handed to the
//! kernel whole would then be followed through that symlink, and a `chmod`,
//! a write or a read meant for the workspace would land on the system's
//! files. So the program never hands the kernel a workspace path:
//!
//! - A path is walked from a descriptor of the workspace's root one name at
//!   a time, each directory opened with `O_NOFOLLOW | O_DIRECTORY` relative
//!   to the one before. A symlink (or anything but a directory) standing
//!   where a directory must be stops the walk with an error instead of
//!   leading elsewhere; a directory moved after it was opened is still the
//!   workspace's.
//! - The last name is only used relative to its parent's descriptor, with
//!   calls that do not follow a symlink there: `fstatat` and `fchownat`
//!   with `AT_SYMLINK_NOFOLLOW`, `openat` with `O_NOFOLLOW`, `mkdirat`,
//!   `symlinkat`, `readlinkat`, `renameat`, `unlinkat`, `utimensat` with
//!   `AT_SYMLINK_NOFOLLOW`. A mode is set on a descriptor of the very
//!   inode (see [`Dir::set_mode`]), never by name.
//!
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` would do the walk in one
//! call, but container runtimes' seccomp filters commonly refuse it; the
//! walk is what it does, with calls every kernel and filter allows.
//!
//! Only the root's own path is taken whole: it lies outside what commands
//! can see or change (in the image, it is `/`).
//!
//! A hard link is the other way to put someone else's file on a workspace
//! path (where the kernel allows linking files one does not own). A
//! regular file with more than one link that the commands' user does not
//! own is not the workspace's: it is neither read nor changed in place
//! (checked on the opened descriptor, so a swap after the check changes
//! nothing); a push replaces the name instead.

use std::ffi::{CString, OsStr, OsString};
use std::fs::{File, Metadata};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// An open directory of a workspace, reached without following a symlink.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    /// The uid commands run as, when it is not the program's own.
    user: Option<u32>,
}

/// What kind of thing a name is (not following a symlink).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Symlink,
    Fifo,
    Socket,
    Device,
    Unknown,
}

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

/// A name's kind and stat data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    pub kind: Kind,
    pub stat: Stat,
    pub uid: u32,
    pub links: u64,
}

impl Meta {
    pub fn is_dir(&self) -> bool {
        self.kind == Kind::Dir
    }

    // The field types of `struct stat` differ between targets: the casts
    // are the same type only on some.
    #[allow(clippy::unnecessary_cast)]
    fn of(raw: &libc::stat) -> Meta {
        let kind = match raw.st_mode & libc::S_IFMT {
            libc::S_IFREG => Kind::File,
            libc::S_IFDIR => Kind::Dir,
            libc::S_IFLNK => Kind::Symlink,
            libc::S_IFIFO => Kind::Fifo,
            libc::S_IFSOCK => Kind::Socket,
            libc::S_IFBLK | libc::S_IFCHR => Kind::Device,
            _ => Kind::Unknown,
        };
        let ns = |s: i64, n: i64| s as i128 * 1_000_000_000 + n as i128;
        Meta {
            kind,
            stat: Stat {
                size: raw.st_size as u64,
                mtime_ns: ns(raw.st_mtime as i64, raw.st_mtime_nsec as i64),
                ctime_ns: ns(raw.st_ctime as i64, raw.st_ctime_nsec as i64),
                ino: raw.st_ino as u64,
                mode: raw.st_mode as u32,
            },
            uid: raw.st_uid as u32,
            links: raw.st_nlink as u64,
        }
    }
}

/// A name as the kernel takes it.
fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a name with a NUL byte"))
}

/// The result of a call answering -1 and `errno` on failure.
fn check(result: libc::c_int) -> io::Result<libc::c_int> {
    if result == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(result)
    }
}

/// The stat data of an open descriptor.
fn fstat(fd: RawFd) -> io::Result<Meta> {
    let mut raw = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: an open descriptor and a buffer the kernel fills.
    check(unsafe { libc::fstat(fd, raw.as_mut_ptr()) })?;
    // SAFETY: fstat succeeded, so it filled the buffer.
    Ok(Meta::of(unsafe { &raw.assume_init() }))
}

/// Whether `error` says a name is not there: gone, or a directory on the
/// way was swapped for something that is not one.
pub fn is_missing(error: &io::Error) -> bool {
    matches!(
        error.raw_os_error(),
        Some(libc::ENOENT | libc::ENOTDIR | libc::ELOOP)
    )
}

/// The error for a file that is someone else's (see the module docs).
fn foreign_file() -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        "a hard link to a file the commands' user does not own",
    )
}

impl Dir {
    /// Opens the workspace's root directory at `root`, whose commands run
    /// as `user` (`None`: as the program's own user).
    pub fn root(root: &Path, user: Option<u32>) -> io::Result<Dir> {
        let path = c_name(root.as_os_str())?;
        // SAFETY: a NUL-terminated path; the descriptor is owned below.
        let fd = check(unsafe {
            libc::open(
                path.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        })?;
        Ok(Dir::owning(fd, user))
    }

    fn owning(fd: RawFd, user: Option<u32>) -> Dir {
        // SAFETY: `fd` was just returned by the kernel and nothing else owns it.
        Dir {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            user,
        }
    }

    /// Whether `meta` is a file that is not the workspace's (see the module
    /// docs).
    pub fn is_foreign(&self, meta: &Meta) -> bool {
        self.user
            .is_some_and(|uid| meta.kind == Kind::File && meta.links > 1 && meta.uid != uid)
    }

    fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// `openat` of `name` in this directory, never following a symlink.
    fn open_at(&self, name: &OsStr, flags: libc::c_int, mode: libc::mode_t) -> io::Result<RawFd> {
        let name = c_name(name)?;
        // SAFETY: a NUL-terminated name relative to our open directory.
        check(unsafe {
            libc::openat(
                self.raw(),
                name.as_ptr(),
                flags | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                mode as libc::c_uint,
            )
        })
    }

    /// The directory `name` in this one (a symlink there is refused).
    pub fn open_dir(&self, name: impl AsRef<OsStr>) -> io::Result<Dir> {
        let fd = self.open_at(name.as_ref(), libc::O_RDONLY | libc::O_DIRECTORY, 0)?;
        Ok(Dir::owning(fd, self.user))
    }

    /// The directory at checked workspace path `path` below this root.
    pub fn walk(&self, path: &str) -> io::Result<Dir> {
        let mut names = path.split('/').filter(|name| !name.is_empty());
        let Some(first) = names.next() else {
            return Ok(Dir {
                fd: self.fd.try_clone()?,
                user: self.user,
            });
        };
        let mut dir = self.open_dir(first)?;
        for name in names {
            dir = dir.open_dir(name)?;
        }
        Ok(dir)
    }

    /// The directory holding checked workspace path `path` (not `/`) and
    /// the path's last name.
    pub fn parent<'p>(&self, path: &'p str) -> io::Result<(Dir, &'p str)> {
        let (dir, name) = path.rsplit_once('/').expect("an absolute path");
        Ok((self.walk(dir)?, name))
    }

    /// What `name` is, not following a symlink; `None` if nothing is there.
    pub fn meta(&self, name: impl AsRef<OsStr>) -> io::Result<Option<Meta>> {
        let name = c_name(name.as_ref())?;
        let mut raw = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: a NUL-terminated name and a buffer the kernel fills.
        let result = unsafe {
            libc::fstatat(
                self.raw(),
                name.as_ptr(),
                raw.as_mut_ptr(),
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        match check(result) {
            // SAFETY: fstatat succeeded, so it filled the buffer.
            Ok(_) => Ok(Some(Meta::of(unsafe { &raw.assume_init() }))),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// This directory's own kind and stat data.
    pub fn own_meta(&self) -> io::Result<Meta> {
        fstat(self.raw())
    }

    /// Opens `name` for reading, refusing a symlink and a file that is
    /// not the workspace's; non-blocking, so a FIFO planted there cannot
    /// hang the program (the caller checks the kind on the opened file).
    pub fn open_read(&self, name: impl AsRef<OsStr>) -> io::Result<File> {
        let fd = self.open_at(name.as_ref(), libc::O_RDONLY | libc::O_NONBLOCK, 0)?;
        // SAFETY: a descriptor just opened and owned by nobody else.
        let file = unsafe { File::from_raw_fd(fd) };
        if self.is_foreign(&fstat(file.as_raw_fd())?) {
            return Err(foreign_file());
        }
        Ok(file)
    }

    /// Creates `name` (which must not exist) for writing.
    pub fn create_new(&self, name: impl AsRef<OsStr>) -> io::Result<File> {
        let fd = self.open_at(
            name.as_ref(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL,
            0o600,
        )?;
        // SAFETY: a descriptor just opened and owned by nobody else.
        Ok(unsafe { File::from_raw_fd(fd) })
    }

    pub fn mkdir(&self, name: impl AsRef<OsStr>, mode: u32) -> io::Result<()> {
        let name = c_name(name.as_ref())?;
        // SAFETY: a NUL-terminated name relative to our open directory.
        check(unsafe { libc::mkdirat(self.raw(), name.as_ptr(), mode as libc::mode_t) })?;
        Ok(())
    }

    /// Creates symlink `name` pointing at `target` (never followed here).
    pub fn symlink(&self, target: &str, name: impl AsRef<OsStr>) -> io::Result<()> {
        let target = c_name(OsStr::new(target))?;
        let name = c_name(name.as_ref())?;
        // SAFETY: two NUL-terminated strings; the name is relative to us.
        check(unsafe { libc::symlinkat(target.as_ptr(), self.raw(), name.as_ptr()) })?;
        Ok(())
    }

    /// Makes `name` here another name of the file `from_name` in `from`
    /// (a symlink there is linked itself, never followed).
    pub fn hard_link(
        &self,
        from: &Dir,
        from_name: impl AsRef<OsStr>,
        name: impl AsRef<OsStr>,
    ) -> io::Result<()> {
        let from_name = c_name(from_name.as_ref())?;
        let name = c_name(name.as_ref())?;
        // SAFETY: two NUL-terminated names relative to open directories.
        check(unsafe {
            libc::linkat(from.raw(), from_name.as_ptr(), self.raw(), name.as_ptr(), 0)
        })?;
        Ok(())
    }

    /// The target of symlink `name`.
    pub fn readlink(&self, name: impl AsRef<OsStr>) -> io::Result<OsString> {
        let name = c_name(name.as_ref())?;
        let mut buf = vec![0u8; libc::PATH_MAX as usize + 1];
        // SAFETY: the kernel writes at most `buf.len()` bytes into `buf`.
        let len = unsafe {
            libc::readlinkat(
                self.raw(),
                name.as_ptr(),
                buf.as_mut_ptr().cast(),
                buf.len(),
            )
        };
        if len < 0 {
            return Err(io::Error::last_os_error());
        }
        buf.truncate(len as usize);
        Ok(OsString::from_vec(buf))
    }

    /// Renames `from` to `to`, both in this directory.
    pub fn rename(&self, from: impl AsRef<OsStr>, to: impl AsRef<OsStr>) -> io::Result<()> {
        let from = c_name(from.as_ref())?;
        let to = c_name(to.as_ref())?;
        // SAFETY: two NUL-terminated names relative to our open directory.
        check(unsafe { libc::renameat(self.raw(), from.as_ptr(), self.raw(), to.as_ptr()) })?;
        Ok(())
    }

    fn unlink_at(&self, name: &OsStr, flags: libc::c_int) -> io::Result<()> {
        let name = c_name(name)?;
        // SAFETY: a NUL-terminated name relative to our open directory.
        check(unsafe { libc::unlinkat(self.raw(), name.as_ptr(), flags) })?;
        Ok(())
    }

    /// Removes `name` and, if it is a directory, all it holds; nothing
    /// there is fine. A symlink is removed itself, never followed.
    pub fn remove_all(&self, name: impl AsRef<OsStr>) -> io::Result<()> {
        let name = name.as_ref();
        let result = match self.unlink_at(name, 0) {
            Err(e) if e.raw_os_error() == Some(libc::EISDIR) => {
                let inner = self.open_dir(name)?;
                for item in inner.names()? {
                    inner.remove_all(&item)?;
                }
                self.unlink_at(name, libc::AT_REMOVEDIR)
            }
            other => other,
        };
        match result {
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(()),
            other => other,
        }
    }

    /// The names in this directory (without `.` and `..`).
    pub fn names(&self) -> io::Result<Vec<OsString>> {
        // fdopendir takes the descriptor over: give it a copy.
        // SAFETY: duplicating our open descriptor.
        let fd = check(unsafe { libc::fcntl(self.raw(), libc::F_DUPFD_CLOEXEC, 0) })?;
        // SAFETY: `fd` is ours; on success the stream owns it.
        let stream = unsafe { libc::fdopendir(fd) };
        if stream.is_null() {
            let error = io::Error::last_os_error();
            // SAFETY: fdopendir failed, so `fd` is still ours to close.
            unsafe { libc::close(fd) };
            return Err(error);
        }
        // The copy shares the offset with the original: start at the
        // beginning.
        // SAFETY: a stream fdopendir just opened.
        unsafe { libc::rewinddir(stream) };
        let mut names = Vec::new();
        let result = loop {
            // SAFETY: errno is thread-local; reset to tell the end from an error.
            unsafe { *libc::__errno_location() = 0 };
            // SAFETY: a stream we own; the entry stays valid until the next call.
            let entry = unsafe { libc::readdir(stream) };
            if entry.is_null() {
                let error = io::Error::last_os_error();
                break match error.raw_os_error() {
                    Some(0) => Ok(()),
                    _ => Err(error),
                };
            }
            // SAFETY: d_name is a NUL-terminated name inside the entry.
            let name = unsafe { std::ffi::CStr::from_ptr((*entry).d_name.as_ptr()) };
            let name = name.to_bytes();
            if name != b"." && name != b".." {
                names.push(OsString::from_vec(name.to_vec()));
            }
        };
        // SAFETY: closing the stream we opened (and its descriptor).
        unsafe { libc::closedir(stream) };
        result.map(|()| names)
    }

    /// Gives `name` itself (a symlink, not its target) to `uid`:`gid`.
    pub fn chown(&self, name: impl AsRef<OsStr>, uid: u32, gid: u32) -> io::Result<()> {
        let name = c_name(name.as_ref())?;
        // SAFETY: a NUL-terminated name relative to our open directory.
        check(unsafe {
            libc::fchownat(
                self.raw(),
                name.as_ptr(),
                uid,
                gid,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        })?;
        Ok(())
    }

    /// `name` itself, opened to change its mode or times in place: a
    /// symlink and a file that is not the workspace's are refused. Opened
    /// `O_PATH | O_NOFOLLOW`, which needs no permission on the file.
    pub fn inode(&self, name: impl AsRef<OsStr>) -> io::Result<Inode> {
        let fd = self.open_at(name.as_ref(), libc::O_PATH, 0)?;
        // SAFETY: a descriptor just opened and owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let meta = fstat(fd.as_raw_fd())?;
        if meta.kind == Kind::Symlink {
            return Err(io::Error::from_raw_os_error(libc::ELOOP));
        }
        if self.is_foreign(&meta) {
            return Err(foreign_file());
        }
        Ok(Inode { fd })
    }

    /// Sets the permission bits of `name` (see [`Dir::inode`]).
    pub fn set_mode(&self, name: impl AsRef<OsStr>, mode: u32) -> io::Result<()> {
        self.inode(name)?.set_mode(mode)
    }

    /// Sets the permission bits of this directory itself.
    pub fn set_own_mode(&self, mode: u32) -> io::Result<()> {
        // SAFETY: our open descriptor.
        check(unsafe { libc::fchmod(self.raw(), mode as libc::mode_t) })?;
        Ok(())
    }
}

/// One inode of the workspace, held open (see [`Dir::inode`]). Changes go
/// through `/proc/self/fd/<n>`, which names this very inode whatever its
/// name points at by then: what `fchmod` and `futimens` do, for a
/// descriptor they do not take.
pub struct Inode {
    fd: OwnedFd,
}

impl Inode {
    fn via(&self) -> io::Result<CString> {
        c_name(OsStr::new(&format!(
            "/proc/self/fd/{}",
            self.fd.as_raw_fd()
        )))
    }

    pub fn set_mode(&self, mode: u32) -> io::Result<()> {
        let via = self.via()?;
        // SAFETY: a NUL-terminated path naming our open descriptor.
        check(unsafe { libc::chmod(via.as_ptr(), mode as libc::mode_t) })?;
        Ok(())
    }

    /// Sets the modification time (the access time stays).
    pub fn set_mtime(&self, time: SystemTime) -> io::Result<()> {
        let via = self.via()?;
        let (secs, nanos) = match time.duration_since(UNIX_EPOCH) {
            Ok(after) => (after.as_secs() as i64, after.subsec_nanos() as i64),
            Err(before) => {
                let before = before.duration();
                let (s, n) = (before.as_secs() as i64, before.subsec_nanos() as i64);
                if n == 0 {
                    (-s, 0)
                } else {
                    (-s - 1, 1_000_000_000 - n)
                }
            }
        };
        let times = [
            libc::timespec {
                tv_sec: 0,
                tv_nsec: libc::UTIME_OMIT,
            },
            libc::timespec {
                tv_sec: secs as libc::time_t,
                tv_nsec: nanos as _,
            },
        ];
        // SAFETY: a NUL-terminated path naming our open descriptor, and
        // two timespecs.
        check(unsafe { libc::utimensat(libc::AT_FDCWD, via.as_ptr(), times.as_ptr(), 0) })?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symlink_on_the_way_stops_the_walk() {
        let outside = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("f"), "outside").unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("d")).unwrap();
        std::fs::create_dir(root.path().join("real")).unwrap();
        let dir = Dir::root(root.path(), None).unwrap();
        let error = dir.walk("/d").unwrap_err();
        assert!(is_missing(&error), "{error}");
        assert!(dir.parent("/d/f").is_err());
        assert!(dir.walk("/real").is_ok());
        // The last name is never followed either.
        assert_eq!(dir.meta("d").unwrap().unwrap().kind, Kind::Symlink);
        assert!(dir.set_mode("d", 0o6755).is_err());
        assert!(dir.open_read("d").is_err());
        assert_eq!(dir.readlink("d").unwrap(), outside.path().as_os_str());
        dir.remove_all("d").unwrap();
        assert_eq!(
            std::fs::read_to_string(outside.path().join("f")).unwrap(),
            "outside"
        );
    }

    #[test]
    fn names_modes_times_and_removal() {
        let root = tempfile::tempdir().unwrap();
        let dir = Dir::root(root.path(), None).unwrap();
        dir.mkdir("a", 0o755).unwrap();
        let a = dir.walk("/a").unwrap();
        a.create_new("f").unwrap();
        a.symlink("f", "l").unwrap();
        a.set_mode("f", 0o640).unwrap();
        let time = UNIX_EPOCH + std::time::Duration::from_millis(1_500_000_000_123);
        a.inode("f").unwrap().set_mtime(time).unwrap();
        let meta = a.meta("f").unwrap().unwrap();
        assert_eq!((meta.kind, meta.stat.mode & 0o7777), (Kind::File, 0o640));
        assert_eq!(meta.stat.mtime_ms(), 1_500_000_000_123);
        let mut names = a.names().unwrap();
        names.sort();
        assert_eq!(names, ["f", "l"]);
        // A second listing starts from the beginning again.
        assert_eq!(a.names().unwrap().len(), 2);
        dir.remove_all("a").unwrap();
        assert!(dir.meta("a").unwrap().is_none());
    }

    #[test]
    fn a_hard_link_to_someone_elses_file_is_not_the_workspaces() {
        use std::os::unix::fs::PermissionsExt;
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("theirs"), "x").unwrap();
        let mode = std::fs::Permissions::from_mode(0o644);
        std::fs::set_permissions(root.path().join("theirs"), mode).unwrap();
        std::fs::hard_link(root.path().join("theirs"), root.path().join("link")).unwrap();
        // SAFETY: getuid(2) cannot fail and touches no memory.
        let me = unsafe { libc::getuid() };
        let mine = Dir::root(root.path(), Some(me)).unwrap();
        assert!(mine.open_read("link").is_ok());
        let other = Dir::root(root.path(), Some(me + 1)).unwrap();
        let meta = other.meta("link").unwrap().unwrap();
        assert!(other.is_foreign(&meta));
        let refused = other.open_read("link").unwrap_err();
        assert_eq!(refused.kind(), io::ErrorKind::PermissionDenied);
        assert!(other.set_mode("link", 0o6755).is_err());
        assert_eq!(
            std::fs::metadata(root.path().join("theirs"))
                .unwrap()
                .permissions()
                .mode()
                & 0o7777,
            0o644
        );
        // One link only: a file the program or the operator put there.
        std::fs::remove_file(root.path().join("link")).unwrap();
        assert!(other.open_read("theirs").is_ok());
    }
}
