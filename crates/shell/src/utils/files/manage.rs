//! Changing the tree: `mkdir`, `rm`, `rmdir`, `mv`, `cp`, `touch`, `ln`,
//! `chmod`. Each operand is one or a few VFS operations (each atomic);
//! messages and exit statuses follow GNU coreutils.

use stead_vfs::{Errno, Kind, Node, VPath, VfsError};

use super::time::{parse_date, parse_stamp};
use super::{base_name, join_operand, options, Opts, Spec};
use crate::limits::Abort;
use crate::utils::{strerror, Ctx};

/// CPU units charged per node changed.
const NODE_COST: u64 = 64;

/// Reports `util: missing operand` with GNU's hint; returns the status.
fn missing_operand(ctx: &mut Ctx<'_>, util: &str, what: &str) -> Result<i32, Abort> {
    ctx.error(util, what)?;
    ctx.stderr
        .write_str(&format!("Try '{util} --help' for more information.\n"))?;
    Ok(1)
}

/// Reports `util: <action> 'operand': <strerror>`.
fn failed(
    ctx: &mut Ctx<'_>,
    util: &str,
    action: &str,
    operand: &str,
    error: &VfsError,
) -> Result<(), Abort> {
    ctx.error(util, &format!("{action} '{operand}': {}", strerror(error)))
}

/// `mkdir`'s options (its parser and `auto`'s check read this one table).
pub(super) const MKDIR_OPTIONS: Spec = Spec {
    short: "pm:v",
    long: &[("parents", 'p'), ("mode", 'm'), ("verbose", 'v')],
};

/// `mkdir [-pv] [-m MODE] DIR...`
pub(super) fn mkdir(ctx: &mut Ctx<'_>, args: &[String]) -> Result<i32, Abort> {
    let opts = match options(ctx, args, &MKDIR_OPTIONS, 1)? {
        Ok(opts) => opts,
        Err(status) => return Ok(status),
    };
    if opts.operands.is_empty() {
        return missing_operand(ctx, "mkdir", "missing operand");
    }
    let mode = match opts.value('m').map(parse_mode) {
        Some(Some(change)) => Some(change.apply(0o777, true)),
        Some(None) => {
            ctx.error(
                "mkdir",
                &format!("invalid mode '{}'", opts.value('m').unwrap_or("")),
            )?;
            return Ok(1);
        }
        None => None,
    };
    let mut status = 0;
    for operand in &opts.operands {
        ctx.budget.charge_cpu(NODE_COST)?;
        let made = if opts.has('p') {
            mkdir_parents(ctx, operand, opts.has('v'))?
        } else {
            mkdir_one(ctx, operand, opts.has('v'))?
        };
        match made {
            Ok(path) => {
                if let (Some(mode), Some(path)) = (mode, path) {
                    if let Err(error) = ctx.fs.chmod(&path, mode) {
                        failed(ctx, "mkdir", "cannot set permissions of", operand, &error)?;
                        status = 1;
                    }
                }
            }
            Err(error) => {
                failed(ctx, "mkdir", "cannot create directory", operand, &error)?;
                status = 1;
            }
        }
    }
    Ok(status)
}

/// Creates one directory; its path when created.
fn mkdir_one(
    ctx: &mut Ctx<'_>,
    operand: &str,
    verbose: bool,
) -> Result<Result<Option<VPath>, VfsError>, Abort> {
    let made = ctx
        .path(operand)
        .and_then(|p| ctx.fs.mkdir(&p, false).map(|()| p));
    if made.is_ok() && verbose {
        ctx.stdout
            .write_str(&format!("mkdir: created directory '{operand}'\n"))?;
    }
    Ok(made.map(Some))
}

/// Creates a directory and its missing parents, naming each with `-v`;
/// the final path when it was created.
fn mkdir_parents(
    ctx: &mut Ctx<'_>,
    operand: &str,
    verbose: bool,
) -> Result<Result<Option<VPath>, VfsError>, Abort> {
    let mut prefix = String::new();
    let mut created = None;
    for (i, part) in operand.split('/').enumerate() {
        if i > 0 {
            prefix.push('/');
        }
        prefix.push_str(part);
        if part.is_empty() || part == "." || part == ".." {
            continue;
        }
        let path = match ctx.path(&prefix) {
            Ok(path) => path,
            Err(error) => return Ok(Err(error)),
        };
        created = None;
        match ctx.fs.stat(&path, true) {
            Ok(node) if node.is_dir() => continue,
            Ok(_) => return Ok(Err(VfsError::NotADirectory { path: prefix })),
            Err(_) => {}
        }
        if let Err(error) = ctx.fs.mkdir(&path, false) {
            return Ok(Err(error));
        }
        if verbose {
            ctx.stdout
                .write_str(&format!("mkdir: created directory '{prefix}'\n"))?;
        }
        created = Some(path);
    }
    Ok(Ok(created))
}

/// `rm`'s options (its parser and `auto`'s check read this one table).
pub(super) const RM_OPTIONS: Spec = Spec {
    short: "rRfvdiI",
    long: &[
        ("recursive", 'r'),
        ("force", 'f'),
        ("verbose", 'v'),
        ("dir", 'd'),
        ("interactive", 'i'),
        ("no-preserve-root", 'N'),
        ("preserve-root", 'P'),
    ],
};

/// `rm [-rRfvd] FILE...`
pub(super) fn rm(ctx: &mut Ctx<'_>, args: &[String]) -> Result<i32, Abort> {
    let opts = match options(ctx, args, &RM_OPTIONS, 1)? {
        Ok(opts) => opts,
        Err(status) => return Ok(status),
    };
    let force = opts.has('f');
    if opts.operands.is_empty() && !force {
        return missing_operand(ctx, "rm", "missing operand");
    }
    let recursive = opts.has('r') || opts.has('R');
    let mut status = 0;
    for operand in &opts.operands {
        ctx.budget.charge_cpu(NODE_COST)?;
        if recursive && matches!(base_name(operand), "." | "..") {
            let message = format!("refusing to remove '.' or '..' directory: skipping '{operand}'");
            ctx.error("rm", &message)?;
            status = 1;
            continue;
        }
        let path = match ctx.path(operand) {
            Ok(path) => path,
            Err(error) => {
                failed(ctx, "rm", "cannot remove", operand, &error)?;
                status = 1;
                continue;
            }
        };
        if path.is_root() && recursive {
            ctx.error(
                "rm",
                &format!("it is dangerous to operate recursively on '{operand}'"),
            )?;
            ctx.error("rm", "use --no-preserve-root to override this failsafe")?;
            status = 1;
            continue;
        }
        let node = match ctx.fs.stat(&path, false) {
            Ok(node) => node,
            Err(_) if force => continue,
            Err(error) => {
                failed(ctx, "rm", "cannot remove", operand, &error)?;
                status = 1;
                continue;
            }
        };
        if node.is_dir() && !recursive && !opts.has('d') {
            ctx.error("rm", &format!("cannot remove '{operand}': Is a directory"))?;
            status = 1;
            continue;
        }
        if opts.has('v') && node.is_dir() && recursive {
            report_removals(ctx, &path, operand)?;
        }
        match ctx.fs.remove(&path, recursive) {
            Ok(()) if opts.has('v') => {
                let what = if node.is_dir() {
                    "removed directory"
                } else {
                    "removed"
                };
                ctx.stdout.write_str(&format!("{what} '{operand}'\n"))?;
            }
            Ok(()) => {}
            Err(error) => {
                failed(ctx, "rm", "cannot remove", operand, &error)?;
                status = 1;
            }
        }
    }
    Ok(status)
}

/// `rm -rv`'s lines for everything below `path`, deepest first.
fn report_removals(ctx: &mut Ctx<'_>, path: &VPath, shown: &str) -> Result<(), Abort> {
    for entry in ctx.fs.list(path).unwrap_or_default() {
        ctx.budget.charge_cpu(NODE_COST)?;
        let child = join_operand(shown, &entry.name);
        if entry.node.is_dir() {
            report_removals(ctx, &path.join(&entry.name), &child)?;
            ctx.stdout
                .write_str(&format!("removed directory '{child}'\n"))?;
        } else {
            ctx.stdout.write_str(&format!("removed '{child}'\n"))?;
        }
    }
    Ok(())
}

/// `rmdir`'s options (its parser and `auto`'s check read this one table).
pub(super) const RMDIR_OPTIONS: Spec = Spec {
    short: "pv",
    long: &[
        ("parents", 'p'),
        ("verbose", 'v'),
        ("ignore-fail-on-non-empty", 'I'),
    ],
};

/// `rmdir [-pv] DIR...`
pub(super) fn rmdir(ctx: &mut Ctx<'_>, args: &[String]) -> Result<i32, Abort> {
    let opts = match options(ctx, args, &RMDIR_OPTIONS, 1)? {
        Ok(opts) => opts,
        Err(status) => return Ok(status),
    };
    if opts.operands.is_empty() {
        return missing_operand(ctx, "rmdir", "missing operand");
    }
    let mut status = 0;
    for operand in &opts.operands {
        let mut current = operand.trim_end_matches('/').to_string();
        loop {
            ctx.budget.charge_cpu(NODE_COST)?;
            if let Err(error) = remove_empty_dir(ctx, &current) {
                if !(opts.has('I') && error.code() == Errno::Enotempty) {
                    failed(ctx, "rmdir", "failed to remove", &current, &error)?;
                    status = 1;
                }
                break;
            }
            if opts.has('v') {
                ctx.stdout
                    .write_str(&format!("rmdir: removing directory, '{current}'\n"))?;
            }
            match current.rsplit_once('/') {
                Some((parent, _)) if opts.has('p') && !parent.is_empty() => {
                    current = parent.to_string()
                }
                _ => break,
            }
        }
    }
    Ok(status)
}

fn remove_empty_dir(ctx: &Ctx<'_>, operand: &str) -> Result<(), VfsError> {
    let path = ctx.path(operand)?;
    if !ctx.fs.stat(&path, false)?.is_dir() {
        return Err(VfsError::NotADirectory {
            path: operand.to_string(),
        });
    }
    ctx.fs.remove(&path, false)
}

/// Pairs each source with its destination operand, GNU style: into the
/// target directory when there is one, else the single source to the target.
fn plan(
    ctx: &mut Ctx<'_>,
    util: &str,
    opts: &Opts,
    follow_dest: bool,
) -> Result<Result<Vec<(String, String)>, i32>, Abort> {
    let into = |dir: &str, sources: &[String]| {
        sources
            .iter()
            .map(|s| (s.clone(), join_operand(dir, base_name(s))))
            .collect::<Vec<_>>()
    };
    let is_dir = |ctx: &Ctx<'_>, op: &str| {
        ctx.path(op)
            .and_then(|p| ctx.fs.stat(&p, follow_dest))
            .is_ok_and(|n| n.is_dir())
    };
    if let Some(dir) = opts.value('t') {
        if !is_dir(ctx, dir) {
            ctx.error(util, &format!("target directory '{dir}': Not a directory"))?;
            return Ok(Err(1));
        }
        return Ok(Ok(into(dir, &opts.operands)));
    }
    let operands = &opts.operands;
    match operands.len() {
        0 => return missing_operand(ctx, util, "missing file operand").map(Err),
        1 => {
            let message = format!("missing destination file operand after '{}'", operands[0]);
            return missing_operand(ctx, util, &message).map(Err);
        }
        _ => {}
    }
    let (dest, sources) = operands.split_last().unwrap_or((&operands[0], &[]));
    if opts.has('T') {
        if sources.len() > 1 {
            ctx.error(util, &format!("extra operand '{}'", operands[2]))?;
            return Ok(Err(1));
        }
        return Ok(Ok(vec![(sources[0].clone(), dest.clone())]));
    }
    if is_dir(ctx, dest) {
        return Ok(Ok(into(dest, sources)));
    }
    if sources.len() > 1 {
        ctx.error(util, &format!("target '{dest}' is not a directory"))?;
        return Ok(Err(1));
    }
    Ok(Ok(vec![(sources[0].clone(), dest.clone())]))
}

/// Whether `operand` names an existing node (symlinks not followed).
fn exists(ctx: &Ctx<'_>, operand: &str) -> bool {
    ctx.path(operand)
        .and_then(|p| ctx.fs.stat(&p, false))
        .is_ok()
}

/// `mv`'s options (its parser and `auto`'s check read this one table).
pub(super) const MV_OPTIONS: Spec = Spec {
    short: "fnvTt:iu",
    long: &[
        ("force", 'f'),
        ("no-clobber", 'n'),
        ("verbose", 'v'),
        ("no-target-directory", 'T'),
        ("target-directory", 't'),
        ("interactive", 'i'),
    ],
};

/// `mv [-fnvT] [-t DIR] SOURCE... DEST`
pub(super) fn mv(ctx: &mut Ctx<'_>, args: &[String]) -> Result<i32, Abort> {
    let opts = match options(ctx, args, &MV_OPTIONS, 1)? {
        Ok(opts) => opts,
        Err(status) => return Ok(status),
    };
    let pairs = match plan(ctx, "mv", &opts, true)? {
        Ok(pairs) => pairs,
        Err(status) => return Ok(status),
    };
    let no_clobber = opts.last_of("fin") == Some('n');
    let mut status = 0;
    for (source, dest) in pairs {
        ctx.budget.charge_cpu(NODE_COST)?;
        let from = ctx
            .path(&source)
            .and_then(|p| ctx.fs.stat(&p, false).map(|_| p));
        let from = match from {
            Ok(from) => from,
            Err(error) => {
                failed(ctx, "mv", "cannot stat", &source, &error)?;
                status = 1;
                continue;
            }
        };
        if no_clobber && exists(ctx, &dest) {
            continue;
        }
        let moved = ctx.path(&dest).and_then(|to| ctx.fs.rename(&from, &to));
        match moved {
            Ok(()) if opts.has('v') => {
                ctx.stdout
                    .write_str(&format!("renamed '{source}' -> '{dest}'\n"))?;
            }
            Ok(()) => {}
            Err(error) => {
                let message = format!("cannot move '{source}' to '{dest}': {}", strerror(&error));
                ctx.error("mv", &message)?;
                status = 1;
            }
        }
    }
    Ok(status)
}

/// How `cp` copies.
struct CpMode {
    recursive: bool,
    preserve: bool,
    follow: bool,
    verbose: bool,
}

/// `cp`'s options (its parser and `auto`'s check read this one table).
pub(super) const CP_OPTIONS: Spec = Spec {
    short: "rRapfnvdPLTt:iu",
    long: &[
        ("recursive", 'r'),
        ("archive", 'a'),
        ("preserve", 'p'),
        ("force", 'f'),
        ("no-clobber", 'n'),
        ("verbose", 'v'),
        ("no-dereference", 'P'),
        ("dereference", 'L'),
        ("no-target-directory", 'T'),
        ("target-directory", 't'),
        ("interactive", 'i'),
    ],
};

/// `cp [-rRapfnvPLT] [-t DIR] SOURCE... DEST`
pub(super) fn cp(ctx: &mut Ctx<'_>, args: &[String]) -> Result<i32, Abort> {
    let opts = match options(ctx, args, &CP_OPTIONS, 1)? {
        Ok(opts) => opts,
        Err(status) => return Ok(status),
    };
    let recursive = opts.has('r') || opts.has('R') || opts.has('a');
    let mode = CpMode {
        recursive,
        preserve: opts.has('p') || opts.has('a'),
        follow: opts.last_of("PLda") == Some('L') || (!recursive && opts.last_of("PLda").is_none()),
        verbose: opts.has('v'),
    };
    let pairs = match plan(ctx, "cp", &opts, true)? {
        Ok(pairs) => pairs,
        Err(status) => return Ok(status),
    };
    let no_clobber = opts.last_of("fin") == Some('n');
    let mut status = 0;
    for (source, dest) in pairs {
        let found = ctx
            .path(&source)
            .and_then(|p| ctx.fs.stat(&p, mode.follow).map(|n| (p, n)));
        let (from, node) = match found {
            Ok(found) => found,
            Err(error) => {
                failed(ctx, "cp", "cannot stat", &source, &error)?;
                status = 1;
                continue;
            }
        };
        if node.is_dir() && !mode.recursive {
            ctx.error(
                "cp",
                &format!("-r not specified; omitting directory '{source}'"),
            )?;
            status = 1;
            continue;
        }
        if no_clobber && exists(ctx, &dest) {
            continue;
        }
        let to = match ctx.path(&dest) {
            Ok(to) => to,
            Err(error) => {
                failed(ctx, "cp", "cannot create regular file", &dest, &error)?;
                status = 1;
                continue;
            }
        };
        let same = match (ctx.fs.realpath(&to), ctx.fs.realpath(&from)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        };
        if same && node.kind != Kind::Dir {
            ctx.error("cp", &format!("'{source}' and '{dest}' are the same file"))?;
            status = 1;
            continue;
        }
        if node.is_dir() && to.starts_with(&from) {
            let message = format!("cannot copy a directory, '{source}', into itself, '{dest}'");
            ctx.error("cp", &message)?;
            status = 1;
            continue;
        }
        if let Err(error) = copy_node(ctx, &mode, (&from, &node), (&to, &dest), &source)? {
            failed(ctx, "cp", "cannot copy", &source, &error)?;
            status = 1;
        }
    }
    Ok(status)
}

/// Copies one node (a directory with everything below it) to `to`.
fn copy_node(
    ctx: &mut Ctx<'_>,
    mode: &CpMode,
    (from, node): (&VPath, &Node),
    (to, dest): (&VPath, &str),
    source: &str,
) -> Result<Result<(), VfsError>, Abort> {
    ctx.budget.charge_cpu(NODE_COST)?;
    if to.as_str().len() > stead_vfs::MAX_PATH_LEN {
        // Following a symlink loop with -L ends here rather than in the stack.
        return Ok(Err(VfsError::NameTooLong {
            path: dest.to_string(),
            len: to.as_str().len(),
            limit: stead_vfs::MAX_PATH_LEN,
        }));
    }
    let existing = ctx.fs.stat(to, false).ok();
    let copied = match node.kind {
        Kind::Symlink => {
            let target = node.target.clone().unwrap_or_default();
            let cleared = match existing {
                Some(e) if !e.is_dir() => ctx.fs.remove(to, false),
                _ => Ok(()),
            };
            cleared.and_then(|()| ctx.fs.symlink(&target, to))
        }
        Kind::File => ctx.fs.copy(from, to, false),
        Kind::Dir => match existing {
            Some(e) if !e.is_dir() => Err(VfsError::AlreadyExists {
                path: dest.to_string(),
            }),
            Some(_) => Ok(()),
            None => ctx
                .fs
                .mkdir(to, false)
                .and_then(|()| ctx.fs.chmod(to, node.mode)),
        },
    };
    if let Err(error) = copied {
        return Ok(Err(error));
    }
    if mode.verbose {
        ctx.stdout.write_str(&format!("'{source}' -> '{dest}'\n"))?;
    }
    if node.is_dir() {
        for entry in ctx.fs.list(from).unwrap_or_default() {
            let child_from = from.join(&entry.name);
            let child_to = to.join(&entry.name);
            let (child_dest, child_source) = (
                join_operand(dest, &entry.name),
                join_operand(source, &entry.name),
            );
            let child_node = match entry.node.kind {
                Kind::Symlink if mode.follow => {
                    ctx.fs.stat(&child_from, true).unwrap_or(entry.node)
                }
                _ => entry.node,
            };
            let result = copy_node(
                ctx,
                mode,
                (&child_from, &child_node),
                (&child_to, &child_dest),
                &child_source,
            )?;
            if let Err(error) = result {
                failed(ctx, "cp", "cannot copy", &child_source, &error)?;
            }
        }
    }
    if mode.preserve && node.kind != Kind::Symlink {
        if let Err(error) = ctx.fs.touch(to, Some(node.mtime)) {
            return Ok(Err(error));
        }
    }
    Ok(Ok(()))
}

/// `touch`'s options (its parser and `auto`'s check read this one table).
pub(super) const TOUCH_OPTIONS: Spec = Spec {
    short: "acmd:t:r:hf",
    long: &[
        ("no-create", 'c'),
        ("date", 'd'),
        ("reference", 'r'),
        ("no-dereference", 'h'),
    ],
};

/// `touch [-c] [-d DATE | -t STAMP | -r FILE] FILE...`
pub(super) fn touch(ctx: &mut Ctx<'_>, args: &[String]) -> Result<i32, Abort> {
    let opts = match options(ctx, args, &TOUCH_OPTIONS, 1)? {
        Ok(opts) => opts,
        Err(status) => return Ok(status),
    };
    if opts.operands.is_empty() {
        return missing_operand(ctx, "touch", "missing file operand");
    }
    let now = ctx.clock.now_ms() as i64;
    let mtime = if let Some(date) = opts.value('d') {
        match parse_date(date) {
            Some(ms) => Some(ms),
            None => {
                ctx.error("touch", &format!("invalid date format '{date}'"))?;
                return Ok(1);
            }
        }
    } else if let Some(stamp) = opts.value('t') {
        match parse_stamp(stamp, now) {
            Some(ms) => Some(ms),
            None => {
                ctx.error("touch", &format!("invalid date format '{stamp}'"))?;
                return Ok(1);
            }
        }
    } else if let Some(reference) = opts.value('r') {
        match ctx.path(reference).and_then(|p| ctx.fs.stat(&p, true)) {
            Ok(node) => Some(node.mtime),
            Err(error) => {
                failed(
                    ctx,
                    "touch",
                    "failed to get attributes of",
                    reference,
                    &error,
                )?;
                return Ok(1);
            }
        }
    } else {
        Some(now)
    };
    let mut status = 0;
    for operand in &opts.operands {
        ctx.budget.charge_cpu(NODE_COST)?;
        if opts.has('c') && !exists(ctx, operand) {
            continue;
        }
        let touched = ctx.path(operand).and_then(|p| ctx.fs.touch(&p, mtime));
        if let Err(error) = touched {
            failed(ctx, "touch", "cannot touch", operand, &error)?;
            status = 1;
        }
    }
    Ok(status)
}

/// `ln`'s options (its parser and `auto`'s check read this one table).
pub(super) const LN_OPTIONS: Spec = Spec {
    short: "sfnvTt:r",
    long: &[
        ("symbolic", 's'),
        ("force", 'f'),
        ("no-dereference", 'n'),
        ("verbose", 'v'),
        ("no-target-directory", 'T'),
        ("target-directory", 't'),
    ],
};

/// `ln -s [-fnvT] [-t DIR] TARGET... [LINK]`. Hard links do not exist in
/// the workspace, so `ln` without `-s` fails rather than copying silently.
pub(super) fn ln(ctx: &mut Ctx<'_>, args: &[String]) -> Result<i32, Abort> {
    let mut opts = match options(ctx, args, &LN_OPTIONS, 1)? {
        Ok(opts) => opts,
        Err(status) => return Ok(status),
    };
    if !opts.has('s') {
        ctx.error("ln", "hard links are not supported in the light shell")?;
        return Ok(1);
    }
    if opts.operands.len() == 1 && opts.value('t').is_none() {
        opts.operands.push(".".to_string());
    }
    let pairs = match plan(ctx, "ln", &opts, !opts.has('n'))? {
        Ok(pairs) => pairs,
        Err(status) => return Ok(status),
    };
    let mut status = 0;
    for (target, link) in pairs {
        ctx.budget.charge_cpu(NODE_COST)?;
        if let Err(error) = make_link(ctx, &target, &link, opts.has('f')) {
            failed(ctx, "ln", "failed to create symbolic link", &link, &error)?;
            status = 1;
        } else if opts.has('v') {
            ctx.stdout.write_str(&format!("'{link}' -> '{target}'\n"))?;
        }
    }
    Ok(status)
}

fn make_link(ctx: &Ctx<'_>, target: &str, link: &str, force: bool) -> Result<(), VfsError> {
    let path = ctx.path(link)?;
    if force {
        match ctx.fs.stat(&path, false) {
            Ok(node) if node.is_dir() => {
                return Err(VfsError::IsADirectory {
                    path: link.to_string(),
                })
            }
            Ok(_) => ctx.fs.remove(&path, false)?,
            Err(_) => {}
        }
    }
    ctx.fs.symlink(target, &path)
}

/// A parsed `chmod` mode: octal, or symbolic clauses.
#[derive(Debug, Clone)]
pub(super) enum ModeChange {
    Octal(u32),
    Symbolic(Vec<Clause>),
}

/// One `[ugoa]*[+-=][rwxXst]*` step of a symbolic mode.
#[derive(Debug, Clone)]
pub(super) struct Clause {
    /// Which permission bits the clause may touch (0 means "all, minus umask").
    who: u32,
    op: char,
    perms: String,
}

/// The umask applied to symbolic modes without a `who` (GNU uses the process umask).
const UMASK: u32 = 0o022;

/// Parses `755`, `u+x`, `go-w,a=r`, `+x`.
pub(super) fn parse_mode(text: &str) -> Option<ModeChange> {
    if !text.is_empty() && text.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
        return u32::from_str_radix(text, 8)
            .ok()
            .filter(|m| *m <= 0o7777)
            .map(ModeChange::Octal);
    }
    let mut clauses = Vec::new();
    for part in text.split(',') {
        let mut chars = part.chars().peekable();
        let mut who = 0;
        while let Some(&c) = chars.peek() {
            who |= match c {
                'u' => 0o4700,
                'g' => 0o2070,
                'o' => 0o1007,
                'a' => 0o7777,
                _ => break,
            };
            chars.next();
        }
        let rest: String = chars.collect();
        if rest.is_empty() {
            return None;
        }
        let mut ops = rest.as_str();
        while !ops.is_empty() {
            let op = ops.chars().next()?;
            if !matches!(op, '+' | '-' | '=') {
                return None;
            }
            let end = ops[1..].find(['+', '-', '=']).map_or(ops.len(), |i| i + 1);
            let perms = &ops[1..end];
            if !perms.chars().all(|c| "rwxXstugo".contains(c)) {
                return None;
            }
            clauses.push(Clause {
                who,
                op,
                perms: perms.to_string(),
            });
            ops = &ops[end..];
        }
    }
    Some(ModeChange::Symbolic(clauses))
}

impl ModeChange {
    /// The new mode of a node whose mode is `mode`.
    pub(super) fn apply(&self, mode: u32, is_dir: bool) -> u32 {
        match self {
            ModeChange::Octal(bits) => *bits,
            ModeChange::Symbolic(clauses) => clauses.iter().fold(mode, |m, c| c.apply(m, is_dir)),
        }
    }
}

impl Clause {
    fn apply(&self, mode: u32, is_dir: bool) -> u32 {
        let (who, mask) = if self.who == 0 {
            (0o7777, !UMASK)
        } else {
            (self.who, 0o7777)
        };
        let mut bits = 0;
        for c in self.perms.chars() {
            bits |= match c {
                'r' => 0o444,
                'w' => 0o222,
                'x' => 0o111,
                'X' if is_dir || mode & 0o111 != 0 => 0o111,
                's' => 0o6000,
                't' => 0o1000,
                'u' => spread((mode >> 6) & 7),
                'g' => spread((mode >> 3) & 7),
                'o' => spread(mode & 7),
                _ => 0,
            };
        }
        let bits = bits & who & mask;
        match self.op {
            '+' => mode | bits,
            '-' => mode & !bits,
            _ => (mode & !(who & 0o7777 & if self.who == 0 { 0o777 } else { 0o7777 })) | bits,
        }
    }
}

/// Copies three permission bits to user, group and other positions.
fn spread(bits: u32) -> u32 {
    bits << 6 | bits << 3 | bits
}

/// Whether `arg` is a flag cluster chmod knows (so `-w` is a mode, not a flag).
fn chmod_flag(arg: &str) -> bool {
    matches!(
        arg,
        "--recursive" | "--verbose" | "--changes" | "--silent" | "--quiet"
    ) || (arg.len() > 1 && arg.starts_with('-') && arg[1..].chars().all(|c| "Rvcf".contains(c)))
}

/// `chmod [-Rvcf] MODE FILE...`
pub(super) fn chmod(ctx: &mut Ctx<'_>, args: &[String]) -> Result<i32, Abort> {
    let (flags, rest): (Vec<&String>, Vec<&String>) = args[1..].iter().partition(|a| chmod_flag(a));
    let recursive = flags
        .iter()
        .any(|f| f.contains('R') || f.as_str() == "--recursive");
    let verbose = flags
        .iter()
        .any(|f| f.contains('v') || f.as_str() == "--verbose");
    let rest: Vec<&String> = rest.into_iter().filter(|a| a.as_str() != "--").collect();
    let Some((mode_text, operands)) = rest.split_first() else {
        return missing_operand(ctx, "chmod", "missing operand");
    };
    if operands.is_empty() {
        return missing_operand(
            ctx,
            "chmod",
            &format!("missing operand after '{mode_text}'"),
        );
    }
    let Some(change) = parse_mode(mode_text) else {
        return missing_operand(ctx, "chmod", &format!("invalid mode: '{mode_text}'"));
    };
    let mut status = 0;
    for operand in operands {
        let found = ctx
            .path(operand)
            .and_then(|p| ctx.fs.stat(&p, true).map(|n| (p, n)));
        match found {
            Ok((path, node)) => {
                status = status.max(chmod_tree(
                    ctx, &change, &path, &node, operand, recursive, verbose,
                )?)
            }
            Err(error) => {
                failed(ctx, "chmod", "cannot access", operand, &error)?;
                status = 1;
            }
        }
    }
    Ok(status)
}

fn chmod_tree(
    ctx: &mut Ctx<'_>,
    change: &ModeChange,
    path: &VPath,
    node: &Node,
    shown: &str,
    recursive: bool,
    verbose: bool,
) -> Result<i32, Abort> {
    ctx.budget.charge_cpu(NODE_COST)?;
    let mode = change.apply(node.mode & 0o7777, node.is_dir());
    if let Err(error) = ctx.fs.chmod(path, mode) {
        failed(ctx, "chmod", "changing permissions of", shown, &error)?;
        return Ok(1);
    }
    if verbose {
        let old = super::mode_string(node.kind, node.mode & 0o7777);
        let new = super::mode_string(node.kind, mode);
        let line = format!(
            "mode of '{shown}' changed from {:04o} ({}) to {mode:04o} ({})\n",
            node.mode & 0o7777,
            &old[1..],
            &new[1..]
        );
        ctx.stdout.write_str(&line)?;
    }
    let mut status = 0;
    if recursive && node.is_dir() {
        for entry in ctx.fs.list(path).unwrap_or_default() {
            if entry.node.kind == Kind::Symlink {
                continue;
            }
            let child = join_operand(shown, &entry.name);
            status = status.max(chmod_tree(
                ctx,
                change,
                &path.join(&entry.name),
                &entry.node,
                &child,
                true,
                verbose,
            )?);
        }
    }
    Ok(status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::utils::testing::{db, files, run};

    #[test]
    fn mkdir_parents_verbose_mode_and_errors() {
        let db = db();
        let r = run(&db, &["mkdir", "-pv", "/a/b"], "");
        assert_eq!(
            r.stdout,
            "mkdir: created directory '/a'\nmkdir: created directory '/a/b'\n"
        );
        let r = run(&db, &["mkdir", "/a"], "");
        assert_eq!(
            (r.status, r.stderr.as_str()),
            (1, "mkdir: cannot create directory '/a': File exists\n")
        );
        assert_eq!(run(&db, &["mkdir", "-p", "/a/b"], "").status, 0);
        run(&db, &["mkdir", "-m", "700", "/m"], "");
        assert!(run(&db, &["ls", "-ld", "/m"], "")
            .stdout
            .starts_with("drwx------ "));
        let r = run(&db, &["mkdir", "/x/y"], "");
        assert_eq!(
            r.stderr,
            "mkdir: cannot create directory '/x/y': No such file or directory\n"
        );
    }

    #[test]
    fn rm_refuses_root_and_reports() {
        let db = db();
        files(&db, &[("/d/a", "1"), ("/d/e/b", "2"), ("/f", "3")]);
        let r = run(&db, &["rm", "-rf", "/"], "");
        assert_eq!(r.status, 1);
        assert!(r.stderr.contains("dangerous to operate recursively on '/'"));
        assert_eq!(run(&db, &["ls", "/f"], "").status, 0);
        let r = run(&db, &["rm", "/d"], "");
        assert_eq!(r.stderr, "rm: cannot remove '/d': Is a directory\n");
        let r = run(&db, &["rm", "-rv", "/d"], "");
        assert_eq!(
            r.stdout,
            "removed '/d/a'\nremoved '/d/e/b'\nremoved directory '/d/e'\nremoved directory '/d'\n"
        );
        assert_eq!(run(&db, &["rm", "-f", "/nope"], "").status, 0);
        let r = run(&db, &["rm", "/nope"], "");
        assert_eq!(
            r.stderr,
            "rm: cannot remove '/nope': No such file or directory\n"
        );
    }

    #[test]
    fn rmdir_with_parents() {
        let db = db();
        run(&db, &["mkdir", "-p", "/a/b/c"], "");
        files(&db, &[("/x/f", "")]);
        let r = run(&db, &["rmdir", "/x"], "");
        assert_eq!(
            r.stderr,
            "rmdir: failed to remove '/x': Directory not empty\n"
        );
        assert_eq!(run(&db, &["rmdir", "-p", "/a/b/c"], "").status, 0);
        assert_eq!(run(&db, &["ls", "/"], "").stdout, "x\n");
    }

    #[test]
    fn mv_into_dir_rename_and_errors() {
        let db = db();
        files(&db, &[("/a", "A"), ("/b", "B"), ("/d/keep", "")]);
        let r = run(&db, &["mv", "-v", "/a", "/b", "/d"], "");
        assert_eq!(r.stdout, "renamed '/a' -> '/d/a'\nrenamed '/b' -> '/d/b'\n");
        assert_eq!(run(&db, &["mv", "/d/a", "/c"], "").status, 0);
        assert_eq!(run(&db, &["cat", "/c"], "").stdout, "A");
        let r = run(&db, &["mv", "/c", "/d/b", "/c"], "");
        assert_eq!(r.stderr, "mv: target '/c' is not a directory\n");
        run(&db, &["mv", "-n", "/d/b", "/c"], "");
        assert_eq!(run(&db, &["cat", "/c"], "").stdout, "A");
        let r = run(&db, &["mv", "/zz", "/y"], "");
        assert_eq!(
            r.stderr,
            "mv: cannot stat '/zz': No such file or directory\n"
        );
    }

    #[test]
    fn cp_files_trees_and_merge() {
        let db = db();
        files(&db, &[("/s/a", "A"), ("/s/sub/b", "B"), ("/t/s/old", "O")]);
        let r = run(&db, &["cp", "/s", "/x"], "");
        assert_eq!(r.stderr, "cp: -r not specified; omitting directory '/s'\n");
        assert_eq!(run(&db, &["cp", "-r", "/s", "/t"], "").status, 0);
        assert_eq!(run(&db, &["ls", "/t/s"], "").stdout, "a\nold\nsub\n");
        assert_eq!(run(&db, &["cat", "/t/s/sub/b"], "").stdout, "B");
        let r = run(&db, &["cp", "-v", "/s/a", "/n"], "");
        assert_eq!(r.stdout, "'/s/a' -> '/n'\n");
        let r = run(&db, &["cp", "-r", "/s", "/s/sub"], "");
        assert_eq!(r.status, 1);
        let r = run(&db, &["cp", "/s/a", "/s/a"], "");
        assert_eq!(r.stderr, "cp: '/s/a' and '/s/a' are the same file\n");
        run(&db, &["touch", "-d", "@1000", "/s/a"], "");
        run(&db, &["cp", "-p", "/s/a", "/p"], "");
        assert_eq!(run(&db, &["stat", "-c", "%Y", "/p"], "").stdout, "1000\n");
    }

    #[test]
    fn touch_creates_and_sets_dates() {
        let db = db();
        assert_eq!(run(&db, &["touch", "/new"], "").status, 0);
        run(&db, &["touch", "-c", "/absent"], "");
        assert_eq!(run(&db, &["ls", "/"], "").stdout, "new\n");
        run(&db, &["touch", "-t", "202001021530", "/new"], "");
        assert_eq!(
            run(&db, &["stat", "-c", "%y", "/new"], "").stdout,
            "2020-01-02 15:30:00.000000000 +0000\n"
        );
        let r = run(&db, &["touch", "-d", "soon", "/new"], "");
        assert_eq!(r.stderr, "touch: invalid date format 'soon'\n");
    }

    #[test]
    fn ln_symbolic_only() {
        let db = db();
        files(&db, &[("/a", "A"), ("/d/x", "")]);
        let r = run(&db, &["ln", "/a", "/b"], "");
        assert_eq!(r.status, 1);
        assert_eq!(
            r.stderr,
            "ln: hard links are not supported in the light shell\n"
        );
        assert_eq!(
            run(&db, &["ln", "-sv", "/a", "/b"], "").stdout,
            "'/b' -> '/a'\n"
        );
        assert_eq!(run(&db, &["cat", "/b"], "").stdout, "A");
        let r = run(&db, &["ln", "-s", "/a", "/b"], "");
        assert_eq!(
            r.stderr,
            "ln: failed to create symbolic link '/b': File exists\n"
        );
        assert_eq!(run(&db, &["ln", "-sf", "x", "/b"], "").status, 0);
        assert_eq!(run(&db, &["readlink", "/b"], "").stdout, "x\n");
        run(&db, &["ln", "-s", "/a", "/d"], "");
        assert_eq!(run(&db, &["readlink", "/d/a"], "").stdout, "/a\n");
    }

    #[test]
    fn chmod_modes() {
        let change = |m: &str, from: u32| parse_mode(m).unwrap().apply(from, false);
        assert_eq!(change("755", 0), 0o755);
        assert_eq!(change("u+x", 0o644), 0o744);
        assert_eq!(change("go-w", 0o666), 0o644);
        assert_eq!(change("a=r", 0o777), 0o444);
        assert_eq!(change("+x", 0o644), 0o755);
        assert_eq!(change("+w", 0o444), 0o644);
        assert_eq!(change("u=rwx,g=rx,o=", 0o000), 0o750);
        assert_eq!(change("g=u", 0o700), 0o770);
        assert!(parse_mode("z+q").is_none());
        let db = db();
        files(&db, &[("/d/f", ""), ("/g", "")]);
        run(&db, &["chmod", "-R", "go-rx", "/d"], "");
        assert!(run(&db, &["ls", "-l", "/d"], "")
            .stdout
            .contains("-rw------- "));
        run(&db, &["chmod", "-w", "/g"], "");
        assert!(run(&db, &["ls", "-l", "/g"], "")
            .stdout
            .starts_with("-r--r--r-- "));
        let r = run(&db, &["chmod", "abc", "/g"], "");
        assert_eq!(r.status, 1);
        assert!(r.stderr.starts_with("chmod: invalid mode: 'abc'\n"));
    }
}
