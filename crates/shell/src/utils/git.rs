//! `git` in the light shell: `stead-git` over the workspace, so a commit
//! made here is one the computer's real git reads from the same `.git`,
//! and the reverse.
//!
//! `clone`, `fetch`, `pull` and `push` reach the network through the
//! exec's [`Journal`](crate::net::Journal): a request not answered yet
//! ends the exec with `NetworkWait`, and the host runs it again once it
//! has the answer (see `crate::net`).
//!
//! Command lines `stead-git` does not implement (a subcommand, an option)
//! fail the option check, so `auto` sends the script to the computer; run
//! here anyway they are refused with a message saying so (status 129),
//! never answered wrongly.

use std::cell::Cell;
use std::rc::Rc;

use stead_git::cmd::{self, Invocation};
use stead_git::transport::Http;
use stead_git::{Entry, FileError, Files, Kind, Meta};
use stead_vfs::{DirEntry, Errno, Node, VPath, VfsError};

use super::{strerror, Checks, Ctx, Table};
use crate::fs::Fs;
use crate::limits::{Abort, Budget, Clock, LimitKind};
use crate::net::{self, Journal, Lookup, Request, Response};

pub(crate) const UTILITIES: Table = &[("git", git)];

pub(crate) const OPTION_CHECKS: Checks = &[("git", |argv| {
    cmd::check(&argv[1..]).map_err(|refusal| refusal.message)
})];

/// The workspace as git's files. Every call is charged to the exec's
/// budget (bytes read as CPU, bytes written as writes) and checks its wall
/// clock: the first limit crossed fails the call, and the exec then ends
/// with that limit, as any utility's would.
struct Workspace<'a> {
    fs: &'a dyn Fs,
    budget: &'a Budget,
    clock: &'a dyn Clock,
    abort: Cell<Option<Abort>>,
}

fn error(e: VfsError) -> FileError {
    match e.code() {
        Errno::Enoent => FileError::NotFound,
        _ => FileError::Failed(strerror(&e)),
    }
}

fn path(text: &str) -> Result<VPath, FileError> {
    VPath::parse(text).map_err(error)
}

/// What git sees of a directory's entries (see [`git_meta`]).
pub fn git_entries(entries: Vec<DirEntry>) -> Vec<Entry> {
    entries
        .into_iter()
        .map(|e| Entry {
            meta: git_meta(&e.node),
            name: e.name,
        })
        .collect()
}

/// What git sees of a workspace node: its kind (a file's executable bit),
/// size and modification time. The agent's checkpoint view of `.git`
/// (`stead_agent::checkpoint_git`) reads nodes through it too.
pub fn git_meta(node: &Node) -> Meta {
    let kind = match node.kind {
        stead_vfs::Kind::File => Kind::File {
            executable: node.mode & 0o111 != 0,
        },
        stead_vfs::Kind::Dir => Kind::Dir,
        stead_vfs::Kind::Symlink => Kind::Symlink,
    };
    Meta {
        kind,
        size: node.size,
        mtime_ms: node.mtime,
    }
}

impl Workspace<'_> {
    /// Charges `read` and `written` bytes; the limit's error when one is
    /// crossed (kept for the exec to end with).
    fn charge(&self, read: usize, written: usize) -> Result<(), FileError> {
        let charged = self
            .budget
            .check_time(self.clock)
            .and_then(|()| self.budget.charge_cpu(read as u64 + 1))
            .and_then(|()| self.budget.charge_write(written as u64));
        charged.map_err(|abort| {
            let message = format!("stead: {abort:?}");
            self.abort.set(Some(abort));
            FileError::Failed(message)
        })
    }

    fn parents(&self, p: &VPath) -> Result<(), FileError> {
        match p.parent() {
            Some(parent) if !parent.is_root() => self.fs.mkdir(&parent, true).map_err(error),
            _ => Ok(()),
        }
    }
}

impl Files for Workspace<'_> {
    fn stat(&self, p: &str) -> Result<Meta, FileError> {
        self.charge(0, 0)?;
        self.fs
            .stat(&path(p)?, false)
            .map(|n| git_meta(&n))
            .map_err(error)
    }
    fn read(&self, p: &str) -> Result<Vec<u8>, FileError> {
        let data = self.fs.read(&path(p)?).map_err(error)?;
        self.charge(data.len(), 0)?;
        Ok(data)
    }
    fn list(&self, dir: &str) -> Result<Vec<Entry>, FileError> {
        let entries = self.fs.list(&path(dir)?).map_err(error)?;
        self.charge(entries.len(), 0)?;
        Ok(git_entries(entries))
    }
    fn write(&self, p: &str, data: &[u8]) -> Result<(), FileError> {
        self.charge(0, data.len())?;
        let p = path(p)?;
        self.parents(&p)?;
        self.fs.write(&p, data).map_err(error)
    }
    fn set_executable(&self, p: &str, executable: bool) -> Result<(), FileError> {
        let p = path(p)?;
        let mode = self.fs.stat(&p, false).map_err(error)?.mode;
        let mode = if executable {
            mode | ((mode & 0o444) >> 2)
        } else {
            mode & !0o111
        };
        self.fs.chmod(&p, mode).map_err(error)
    }
    fn readlink(&self, p: &str) -> Result<String, FileError> {
        self.fs.readlink(&path(p)?).map_err(error)
    }
    fn symlink(&self, target: &str, p: &str) -> Result<(), FileError> {
        let p = path(p)?;
        self.parents(&p)?;
        self.fs.symlink(target, &p).map_err(error)
    }
    fn mkdir_all(&self, p: &str) -> Result<(), FileError> {
        let p = path(p)?;
        if p.is_root() {
            return Ok(());
        }
        self.fs.mkdir(&p, true).map_err(error)
    }
    fn remove(&self, p: &str) -> Result<(), FileError> {
        self.fs.remove(&path(p)?, false).map_err(error)
    }
    fn rename(&self, from: &str, to: &str) -> Result<(), FileError> {
        self.fs.rename(&path(from)?, &path(to)?).map_err(error)
    }
}

/// The exec's network, as git's transport asks for it.
struct Network<'a> {
    journal: Option<Rc<Journal>>,
    abort: &'a Cell<Option<Abort>>,
}

impl Http for Network<'_> {
    fn send(&self, request: Request) -> Result<Response, String> {
        let Some(journal) = &self.journal else {
            return Err("the light shell has no network here".into());
        };
        match journal.lookup(&request) {
            Lookup::Ready(answer) => answer,
            Lookup::Wait => {
                self.abort.set(Some(Abort::Limit(LimitKind::NetworkWait)));
                Err("waiting for the network".into())
            }
        }
    }
}

fn git(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let workspace = Workspace {
        fs: ctx.fs,
        budget: ctx.budget,
        clock: ctx.clock,
        abort: Cell::new(None),
    };
    let network = Network {
        journal: net::current(),
        abort: &workspace.abort,
    };
    let outcome = cmd::run(
        &workspace,
        &Invocation {
            args: &argv[1..],
            cwd: ctx.cwd.as_str(),
            env: ctx.env,
            now_ms: ctx.clock.now_ms() as i64,
            net: Some(&network),
        },
    );
    if let Some(abort) = workspace.abort.take() {
        return Err(abort);
    }
    ctx.stdout.write(&outcome.stdout)?;
    ctx.stderr.write(&outcome.stderr)?;
    Ok(outcome.status)
}
