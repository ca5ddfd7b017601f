//! The utilities (`cat`, `grep`, `sed`, `awk`, `sort`, ...), each a function
//! over a [`Ctx`]: arguments in, bytes out, exit status back.
//!
//! A utility never sees the interpreter. It reads `stdin` (the previous
//! pipeline stage's output, or a redirection), writes `stdout`/`stderr`,
//! uses the filesystem through [`Fs`], and charges the shared [`Budget`].
//! Utilities that run other commands (`xargs`, `find -exec`, `timeout`,
//! `env`) do so through [`Ctx::runner`].
//!
//! Each family lives in its own module and lists its utilities in a
//! `UTILITIES` table; [`lookup`] searches them all.

mod apply_patch;
mod awk;
mod checkpoint;
mod civil;
mod files;
mod getopt;
mod git;
pub use git::{git_entries, git_meta};
mod jq;
mod search;
mod sed;
mod system;
mod text;
pub(crate) mod which;

/// `strftime` in UTC (for the shell's `printf %(fmt)T`).
pub(crate) use text::format_utc as strftime_utc;

use std::collections::BTreeMap;

use stead_vfs::{Errno, VPath, VfsError};

use crate::fs::Fs;
use crate::io::{Output, Stdin};
use crate::limits::{Abort, Budget, Clock};

/// Runs a command by name, for utilities that run other commands.
pub trait Runner {
    /// Runs `argv` (a utility, builtin or function) with `stdin`, writing
    /// into `stdout`/`stderr`; returns its exit status.
    fn run(
        &mut self,
        argv: &[String],
        stdin: Stdin<'_>,
        stdout: &mut Output,
        stderr: &mut Output,
    ) -> Result<i32, Abort>;
}

/// Everything a utility may use.
pub struct Ctx<'a> {
    pub fs: &'a dyn Fs,
    pub clock: &'a dyn Clock,
    pub budget: &'a Budget,
    /// The current directory; relative paths resolve against it.
    pub cwd: &'a VPath,
    /// Exported environment variables.
    pub env: &'a BTreeMap<String, String>,
    /// Read it with [`Stdin::all`] when the whole input is needed, so that
    /// a cut one (a pipe that filled up) ends with a limit rather than a
    /// wrong answer.
    pub stdin: Stdin<'a>,
    pub stdout: &'a mut Output,
    pub stderr: &'a mut Output,
    pub runner: &'a mut dyn Runner,
}

/// A utility: `argv[0]` is its name.
pub type Utility = fn(&mut Ctx<'_>, &[String]) -> Result<i32, Abort>;

/// A family's table of utilities.
type Table = &'static [(&'static str, Utility)];

const TABLES: &[Table] = &[
    text::UTILITIES,
    files::UTILITIES,
    search::UTILITIES,
    sed::UTILITIES,
    awk::UTILITIES,
    jq::UTILITIES,
    apply_patch::UTILITIES,
    checkpoint::UTILITIES,
    which::UTILITIES,
    system::UTILITIES,
    git::UTILITIES,
];

/// The utility called `name`, if the light shell has it.
pub(crate) fn lookup(name: &str) -> Option<Utility> {
    TABLES
        .iter()
        .flat_map(|table| table.iter())
        .find(|(n, _)| *n == name)
        .map(|(_, u)| *u)
}

/// Checks an argv's options against its utility's own option parser,
/// without running it: `Err` is the parser's message. `auto` sends a script
/// to the computer when one of its commands fails this. Utilities with no
/// check listed accept every argv here (they are the rarely used ones).
pub(crate) fn check_options(argv: &[String]) -> Result<(), String> {
    let Some(name) = argv.first() else {
        return Ok(());
    };
    OPTION_CHECKS
        .iter()
        .flat_map(|checks| checks.iter())
        .find(|(n, _)| n == name)
        .map_or(Ok(()), |(_, check)| check(argv))
}

/// Checks one utility's argv (`argv[0]` its name) as its parser would.
type OptionCheck = fn(&[String]) -> Result<(), String>;

/// A family's option checks, by utility name.
type Checks = &'static [(&'static str, OptionCheck)];

const OPTION_CHECKS: &[Checks] = &[
    text::OPTION_CHECKS,
    files::OPTION_CHECKS,
    search::OPTION_CHECKS,
    sed::OPTION_CHECKS,
    git::OPTION_CHECKS,
];

/// Every utility's name, sorted.
pub(crate) fn names() -> Vec<&'static str> {
    let mut names: Vec<_> = TABLES
        .iter()
        .flat_map(|table| table.iter().map(|(n, _)| *n))
        .collect();
    names.sort_unstable();
    names
}

/// The `strerror` text for a filesystem error, as GNU tools print it; for
/// a workspace quota, followed by which quota it is and how to raise it, as
/// the API names it (the limit is the workspace's, not a disk's, so the
/// bare text would leave an agent looking for a disk to free). Every
/// utility's and redirection's message goes through here.
pub(crate) fn strerror(error: &VfsError) -> String {
    let text = errno_text(error.code());
    match quota_note(error) {
        Some(note) => format!("{text} ({note})"),
        None => text.to_string(),
    }
}

/// Which workspace quota `error` reached, and what to do about it.
fn quota_note(error: &VfsError) -> Option<String> {
    const RAISE: &str = "raise it with PUT /agents/{id}/settings";
    match error {
        VfsError::NoSpace { quota, limit, .. } => Some(format!(
            "quota {quota} = {limit} reached; {RAISE} or delete files"
        )),
        VfsError::FileTooLarge { limit, .. } => {
            Some(format!("quota max_file_bytes = {limit} reached; {RAISE}"))
        }
        VfsError::TooDeep { limit, .. } => {
            Some(format!("quota max_path_depth = {limit} reached; {RAISE}"))
        }
        _ => None,
    }
}

/// The C library's text for an error code.
fn errno_text(code: Errno) -> &'static str {
    match code {
        Errno::Enoent => "No such file or directory",
        Errno::Eexist => "File exists",
        Errno::Enotdir => "Not a directory",
        Errno::Eisdir => "Is a directory",
        Errno::Enotempty => "Directory not empty",
        Errno::Eloop => "Too many levels of symbolic links",
        Errno::Eacces => "Permission denied",
        Errno::Enametoolong => "File name too long",
        Errno::Ebusy => "Device or resource busy",
        Errno::Efbig => "File too large",
        Errno::Enospc => "No space left on device",
        Errno::Eilseq => "Invalid or incomplete multibyte or wide character",
        Errno::Einval
        | Errno::EditNoMatch
        | Errno::EditAmbiguous
        | Errno::EditOverlap
        | Errno::EditNoChange => "Invalid argument",
        Errno::Eio => "Input/output error",
    }
}

/// An input operand's content: all of it, or (`complete` false) the start
/// of one that goes on: a pipe that filled up, `/dev/zero`.
pub struct Content {
    pub data: Vec<u8>,
    pub complete: bool,
}

impl Content {
    /// All of the content, for a reader that needs it whole.
    pub fn whole(self) -> Result<Vec<u8>, Abort> {
        if self.complete {
            Ok(self.data)
        } else {
            Err(Abort::Limit(crate::limits::LimitKind::PipeBytes))
        }
    }
}

impl Ctx<'_> {
    /// Reads an input operand for a reader that may stop early (`head`,
    /// `cat`): `-` and `/dev/stdin` are stdin, the devices read as on Linux
    /// (see `crate::devices`), anything else is a workspace file (as
    /// `/dev/fd/63` of a process substitution is). Charges the CPU budget.
    pub fn open_operand(&mut self, operand: &str) -> Result<Result<Content, VfsError>, Abort> {
        use crate::devices::{Device, Endless};
        let stdin = || Content {
            data: self.stdin.available().to_vec(),
            complete: self.stdin.is_complete(),
        };
        let content = match Device::named(operand) {
            _ if operand == "-" => stdin(),
            Some(Device::Descriptor(0)) => stdin(),
            Some(Device::Null) => Content {
                data: Vec::new(),
                complete: true,
            },
            Some(device @ (Device::Zero | Device::Random)) => {
                match Endless::read(device, self.budget, self.clock)? {
                    Some(endless) => Content {
                        data: endless.data,
                        complete: false,
                    },
                    None => unreachable!("zero and random are endless"),
                }
            }
            Some(Device::Descriptor(_)) | None => {
                match self.path(operand).and_then(|path| self.fs.read(&path)) {
                    Ok(data) => Content {
                        data,
                        complete: true,
                    },
                    Err(error) => return Ok(Err(error)),
                }
            }
        };
        self.budget.charge_cpu(content.data.len() as u64)?;
        Ok(Ok(content))
    }

    /// Resolves an operand against the current directory.
    pub fn path(&self, operand: &str) -> Result<VPath, VfsError> {
        VPath::parse_from(operand, self.cwd)
    }

    /// Writes `util: message\n` to stderr.
    pub fn error(&mut self, util: &str, message: &str) -> Result<(), Abort> {
        self.stderr.write_str(&format!("{util}: {message}\n"))
    }

    /// Writes `util: operand: <strerror>\n` to stderr.
    pub fn fs_error(&mut self, util: &str, operand: &str, error: &VfsError) -> Result<(), Abort> {
        self.error(util, &format!("{operand}: {}", strerror(error)))
    }

    /// Reads an input operand: `-` is stdin, anything else a file. On error
    /// the message is printed and `None` returned (the utility goes on and
    /// exits 1, as GNU tools do).
    pub fn read_input(&mut self, util: &str, operand: &str) -> Result<Option<Vec<u8>>, Abort> {
        match self.open_operand(operand)? {
            Ok(content) => content.whole().map(Some),
            Err(error) => {
                self.fs_error(util, operand, &error)?;
                Ok(None)
            }
        }
    }

    /// Writes a file, charging the write budget.
    pub fn write_file(&mut self, path: &VPath, data: &[u8]) -> Result<Result<(), VfsError>, Abort> {
        self.budget.charge_write(data.len() as u64)?;
        Ok(self.fs.write(path, data))
    }
}

/// Running utilities in unit tests, over a real SQLite workspace.
#[cfg(test)]
pub(crate) mod testing {
    use std::collections::BTreeMap;

    use stead_sql::{migrate, SqliteDb, MIGRATIONS};
    use stead_vfs::{VPath, Vfs};

    use super::{lookup, Ctx, Runner};
    use crate::io::Output;
    use crate::limits::{Abort, Budget, Clock, Limits};

    /// Counts the SQL statements run through it.
    pub(crate) struct Counting<'a> {
        pub db: &'a stead_sql::SqliteDb,
        pub statements: std::cell::Cell<usize>,
    }

    impl stead_sql::Sql for Counting<'_> {
        fn query(
            &self,
            statement: &str,
            params: &[stead_sql::Param<'_>],
        ) -> Result<Vec<stead_sql::Row>, stead_sql::SqlError> {
            self.statements.set(self.statements.get() + 1);
            self.db.query(statement, params)
        }

        fn transaction<T, E>(&self, body: impl FnOnce() -> Result<T, E>) -> Result<T, E>
        where
            E: From<stead_sql::SqlError>,
        {
            self.db.transaction(body)
        }
    }

    pub(crate) struct FixedClock;
    impl Clock for FixedClock {
        fn now_ms(&self) -> u64 {
            1_700_000_000_000
        }
    }

    /// Runs utilities only (no shell): enough for `xargs` and friends in tests.
    pub(crate) struct UtilRunner<'a> {
        pub fs: &'a dyn crate::fs::Fs,
        pub budget: &'a Budget,
        pub cwd: &'a VPath,
        pub env: &'a BTreeMap<String, String>,
    }

    impl Runner for UtilRunner<'_> {
        fn run(
            &mut self,
            argv: &[String],
            stdin: crate::io::Stdin<'_>,
            stdout: &mut Output,
            stderr: &mut Output,
        ) -> Result<i32, Abort> {
            let Some(util) = lookup(&argv[0]) else {
                stderr.write_str(&format!("{}: command not found\n", argv[0]))?;
                return Ok(127);
            };
            let (fs, budget, cwd, env) = (self.fs, self.budget, self.cwd, self.env);
            let mut inner = UtilRunner {
                fs,
                budget,
                cwd,
                env,
            };
            let mut ctx = Ctx {
                fs,
                clock: &FixedClock,
                budget,
                cwd,
                env,
                stdin,
                stdout,
                stderr,
                runner: &mut inner,
            };
            util(&mut ctx, argv)
        }
    }

    /// A fresh in-memory workspace.
    pub(crate) fn db() -> SqliteDb {
        let db = SqliteDb::memory().unwrap();
        migrate(&db, MIGRATIONS).unwrap();
        db
    }

    /// What a utility run produced.
    #[derive(Debug)]
    pub(crate) struct Ran {
        pub stdout: String,
        pub stderr: String,
        pub status: i32,
    }

    /// Runs `argv` (split on spaces when given as one string is NOT done:
    /// pass each argument) with `stdin`, in `cwd` `/`, over `db`.
    pub(crate) fn run(db: &SqliteDb, argv: &[&str], stdin: &str) -> Ran {
        let vfs = Vfs::new(db, 1_700_000_000_000);
        let budget = Budget::new(Limits::default(), FixedClock.now_ms());
        let cwd = VPath::root();
        let env = BTreeMap::new();
        let mut stdout = Output::with_cap(1 << 24);
        let mut stderr = Output::with_cap(1 << 24);
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        let mut runner = UtilRunner {
            fs: &vfs,
            budget: &budget,
            cwd: &cwd,
            env: &env,
        };
        let status = runner
            .run(
                &argv,
                crate::io::Stdin::complete(stdin.as_bytes()),
                &mut stdout,
                &mut stderr,
            )
            .unwrap_or_else(|abort| panic!("aborted: {abort:?}"));
        Ran {
            stdout: String::from_utf8_lossy(stdout.as_bytes()).into_owned(),
            stderr: String::from_utf8_lossy(stderr.as_bytes()).into_owned(),
            status,
        }
    }

    /// Writes `files` (path, content) into the workspace, creating parents.
    pub(crate) fn files(db: &SqliteDb, files: &[(&str, &str)]) {
        let vfs = Vfs::new(db, 1_700_000_000_000);
        for (path, content) in files {
            vfs.write(
                &VPath::parse(path).unwrap(),
                content.as_bytes(),
                Default::default(),
            )
            .unwrap();
        }
    }
}
