//! Where a command name is found on `$PATH`, and `which`.
//!
//! The light shell's programs (its utilities, and `bash`/`sh`) have no files:
//! they are treated as living in `/usr/bin` and `/bin`, the directories that
//! hold them on a Linux system, so `PATH` decides whether they are found and
//! in which order against the workspace's own executables (a script at
//! `./bin/ls` with `PATH=./bin:$PATH` wins over the `ls` utility, as it
//! would in bash). Looking a program up in those two directories costs no
//! filesystem call; any other `PATH` directory is one `stat` per name (the
//! interpreter remembers what it found, as bash's `hash` table does).

use stead_vfs::{Kind, VPath};

use super::getopt::{flag, getopt};
use super::{lookup, Ctx, Table};
use crate::fs::Fs;
use crate::limits::Abort;

/// The directories the light shell's programs are found in.
pub(crate) const PROGRAM_DIRS: [&str; 2] = ["/usr/bin", "/bin"];

/// Builtins that are also programs on a Linux system (`/usr/bin/echo`):
/// found on `PATH` like the utilities, and run as the builtin.
pub(crate) const PROGRAM_BUILTINS: &[&str] = &[
    "echo", "printf", "true", "false", "test", "[", "pwd", "kill",
];

/// The `PATH` bash searches with `command -p` (`getconf PATH`).
pub(crate) const DEFAULT_PATH: &str = "/bin:/usr/bin";

/// A command found on `$PATH`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Found {
    /// One of the light shell's programs, under a [`PROGRAM_DIRS`] directory.
    Program(String),
    /// An executable file of the workspace.
    File(String),
    /// A file of that name that is not executable: bash runs it (and fails
    /// with `Permission denied`) when nothing executable was found.
    NotExecutable(String),
}

impl Found {
    pub(crate) fn path(&self) -> &str {
        match self {
            Found::Program(p) | Found::File(p) | Found::NotExecutable(p) => p,
        }
    }
}

/// Whether a workspace node is an executable file (for its owner, the agent).
pub(crate) fn executable(fs: &dyn Fs, path: &VPath) -> Option<bool> {
    let node = fs.stat(path, true).ok()?;
    (node.kind == Kind::File).then_some(node.mode & 0o111 != 0)
}

/// Searches `path` (a `$PATH` value; an empty entry is the current
/// directory) for `name`, as bash does: the first executable, or with
/// `all` every one; when there is none, the first non-executable file of
/// that name (`None` if there is no such file either, or `all` is set).
/// `is_program` says whether a name is one of the light shell's programs.
pub(crate) fn search(
    fs: &dyn Fs,
    cwd: &VPath,
    path: &str,
    name: &str,
    all: bool,
    is_program: &dyn Fn(&str) -> bool,
) -> Vec<Found> {
    let mut found = Vec::new();
    let mut not_executable = None;
    for dir in path.split(':') {
        let dir = if dir.is_empty() { "." } else { dir };
        let full = if dir.ends_with('/') {
            format!("{dir}{name}")
        } else {
            format!("{dir}/{name}")
        };
        let hit = if PROGRAM_DIRS.contains(&dir) && is_program(name) {
            Found::Program(full)
        } else {
            let Ok(p) = VPath::parse_from(&full, cwd) else {
                continue;
            };
            match executable(fs, &p) {
                Some(true) => Found::File(full),
                Some(false) => {
                    not_executable.get_or_insert(full);
                    continue;
                }
                None => continue,
            }
        };
        found.push(hit);
        if !all {
            return found;
        }
    }
    if found.is_empty() && !all {
        found.extend(not_executable.map(Found::NotExecutable));
    }
    found
}

pub(crate) const UTILITIES: Table = &[("which", which)];

/// `which [-a] name...`: the path each name runs from (programs and
/// executable files only), status 1 when any is missing.
fn which(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let opts = [flag('a', "all")];
    let parsed = match getopt(&argv[1..], &opts) {
        Ok(p) => p,
        Err(message) => {
            ctx.error("which", &message)?;
            return Ok(2);
        }
    };
    let path = ctx.env.get("PATH").cloned().unwrap_or_default();
    let is_program = |n: &str| {
        lookup(n).is_some() || PROGRAM_BUILTINS.contains(&n) || matches!(n, "bash" | "sh")
    };
    let mut status = 0;
    for name in &parsed.operands {
        let hits: Vec<Found> = if name.contains('/') {
            let p = ctx.path(name);
            let runs = p.is_ok_and(|p| executable(ctx.fs, &p) == Some(true));
            runs.then(|| Found::File(name.clone()))
                .into_iter()
                .collect()
        } else {
            search(ctx.fs, ctx.cwd, &path, name, parsed.has('a'), &is_program)
        };
        let hits: Vec<&Found> = hits
            .iter()
            .filter(|f| !matches!(f, Found::NotExecutable(_)))
            .collect();
        if hits.is_empty() {
            status = 1;
        }
        for hit in hits {
            ctx.stdout.write_str(&format!("{}\n", hit.path()))?;
        }
    }
    Ok(status)
}
