//! The subcommands' work, each as git does it.

mod merge;
mod network;
mod push;
mod rebase;

pub(crate) use network::{is_remote_name, is_url};

use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashSet};

use gix_hash::ObjectId;
use gix_object::Kind as ObjectKind;

use super::{Command, Invocation, DEFAULT_EMAIL, DEFAULT_NAME};
use crate::config::Key;
use crate::diff::{self, Side};
use crate::error::{At, Error, Result};
use crate::files::{self, FileError, Files, Kind};
use crate::index::{Index, IndexEntry};
use crate::objects::{parse_zone, Commit, Signature, Tag};
use crate::refs::{valid_name, Head};
use crate::repo::{parent, Flat, Repo};
use crate::worktree::{self, Change, Status, Untracked};

/// One run's state: where it is and what it printed.
pub(crate) struct Run<'a> {
    files: &'a dyn Files,
    cwd: String,
    env: &'a BTreeMap<String, String>,
    now_ms: i64,
    /// The network, for the subcommands that talk to a remote.
    net: Option<&'a dyn crate::transport::Http>,
    pub(crate) out: Vec<u8>,
    pub(crate) errout: Vec<u8>,
    /// `-q` of `switch`/`checkout`: their feedback ([`Run::note`]) is
    /// not printed, errors still are.
    quiet: bool,
    /// The command line as `fetch` and `pull` name themselves in
    /// reflogs (git's `GIT_REFLOG_ACTION`): `pull -q origin main`.
    action: String,
}

fn fatal(message: impl Into<String>) -> Error {
    Error::Fatal(message.into())
}

/// `.` and `..` resolved in an absolute path.
fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    format!("/{}", parts.join("/"))
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `Wed Dec 2 14:12:33 2026 +0000`, git's default date format, in the
/// signature's own zone (a time no calendar holds keeps git's raw form).
fn git_date(sig: &Signature) -> String {
    let local = sig.seconds + i64::from(sig.offset_minutes) * 60;
    match chrono::DateTime::from_timestamp(local, 0) {
        Some(time) => format!("{} {}", time.format("%a %b %-d %H:%M:%S %Y"), sig.zone()),
        None => format!("{} {}", sig.seconds, sig.zone()),
    }
}

/// A `GIT_*_DATE` value: git's raw `SECONDS ZONE` (or `@SECONDS`) or
/// ISO 8601 `YYYY-MM-DD[T ]HH:MM:SS [ZONE]`.
fn parse_date(text: &str) -> Option<(i64, i32)> {
    let text = text.trim();
    let mut words = text.split_whitespace();
    let first = words.next()?;
    let zone = words.next().map_or(Some(0), parse_zone)?;
    if let Ok(secs) = first.trim_start_matches('@').parse::<i64>() {
        return Some((secs, zone));
    }
    let (date, time) = first.split_once(['T', ' '])?;
    let mut d = date.split('-').map(|p| p.parse::<i64>().ok());
    let (y, mo, da) = (d.next()??, d.next()??, d.next()??);
    let mut t = time.split(':').map(|p| p.parse::<i64>().ok());
    let (h, mi, s) = (t.next()??, t.next()??, t.next().flatten().unwrap_or(0));
    let day = chrono::NaiveDate::from_ymd_opt(
        i32::try_from(y).ok()?,
        u32::try_from(mo).ok()?,
        u32::try_from(da).ok()?,
    )?;
    let at = day
        .and_hms_opt(
            u32::try_from(h).ok()?,
            u32::try_from(mi).ok()?,
            u32::try_from(s).ok()?,
        )?
        .and_utc()
        .timestamp();
    Some((at - i64::from(zone) * 60, zone))
}

/// The message as `git commit -m` keeps it (cleanup "whitespace"):
/// trailing blanks cut, runs of blank lines squeezed, none at either end.
fn clean_message(text: &str) -> String {
    let mut out = String::new();
    let mut blank = false;
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank = !out.is_empty();
            continue;
        }
        if blank {
            out.push('\n');
            blank = false;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// `{a => b}/c` as git prints a rename.
fn rename_text(from: &str, to: &str) -> String {
    let prefix = from
        .char_indices()
        .zip(to.chars())
        .take_while(|((_, a), b)| a == b)
        .filter(|((_, a), _)| *a == '/')
        .map(|((i, _), _)| i + 1)
        .last()
        .unwrap_or(0);
    let (fa, ta) = (&from[prefix..], &to[prefix..]);
    let suffix = fa
        .char_indices()
        .rev()
        .zip(ta.chars().rev())
        .take_while(|((_, a), b)| a == b)
        .filter(|((_, a), _)| *a == '/')
        .map(|((i, _), _)| fa.len() - i)
        .last()
        .unwrap_or(0);
    let (mid_from, mid_to) = (&fa[..fa.len() - suffix], &ta[..ta.len() - suffix]);
    if prefix == 0 && suffix == 0 {
        format!("{from} => {to}")
    } else {
        format!(
            "{}{{{mid_from} => {mid_to}}}{}",
            &from[..prefix],
            &fa[fa.len() - suffix..]
        )
    }
}

impl<'a> Run<'a> {
    pub(crate) fn new(
        files: &'a dyn Files,
        invocation: &Invocation<'a>,
        command: &Command,
    ) -> Self {
        let mut cwd = invocation.cwd.to_string();
        for dir in &command.dirs {
            cwd = if dir.starts_with('/') {
                normalize(dir)
            } else {
                normalize(&format!("{cwd}/{dir}"))
            };
        }
        Run {
            files,
            cwd,
            env: invocation.env,
            now_ms: invocation.now_ms,
            net: invocation.net,
            out: Vec::new(),
            errout: Vec::new(),
            quiet: false,
            action: std::iter::once(command.name)
                .chain(command.given.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
        }
    }

    fn say(&mut self, text: &str) {
        self.out.extend_from_slice(text.as_bytes());
    }

    pub(crate) fn err(&mut self, text: &str) {
        self.errout.extend_from_slice(text.as_bytes());
    }

    /// Feedback on stderr, left out under `-q`.
    fn note(&mut self, text: &str) {
        if !self.quiet {
            self.err(text);
        }
    }

    /// Feedback on stdout, left out under `-q`.
    fn note_out(&mut self, text: &str) {
        if !self.quiet {
            self.say(text);
        }
    }

    pub(crate) fn dispatch(&mut self, command: &Command) -> Result<i32> {
        if command.name == "init" {
            return self.init(command);
        }
        if command.name == "clone" {
            return self.clone(command);
        }
        if self.files.stat(&self.cwd).is_err() {
            return Err(fatal(format!(
                "cannot change to '{}': No such file or directory",
                self.cwd
            )));
        }
        let files = self.files;
        let Some(repo) = Repo::discover(files, &self.cwd) else {
            return Err(fatal(
                "not a git repository (or any of the parent directories): .git",
            ));
        };
        let a = &command.args;
        match command.name {
            "status" => self.status(&repo, a),
            "add" => self.add(&repo, a),
            "rm" => self.rm(&repo, a),
            "mv" => self.mv(&repo, a),
            "commit" => self.commit(&repo, a),
            "log" => self.log(&repo, a),
            "show" => self.show(&repo, a),
            "diff" => self.diff(&repo, a),
            "branch" => self.branch(&repo, a),
            "switch" => {
                self.quiet = a.has("quiet");
                self.switch(&repo, a)
            }
            "checkout" => {
                self.quiet = a.has("quiet");
                self.checkout(&repo, a)
            }
            "reset" => self.reset(&repo, a),
            "tag" => self.tag(&repo, a),
            "remote" => self.remote(&repo, a),
            "stash" => self.stash(&repo, a),
            "rev-parse" => self.rev_parse(&repo, a),
            "ls-files" => self.ls_files(&repo, a),
            "config" => self.config(&repo, a),
            "fetch" => self.fetch(&repo, a),
            "pull" => self.pull(&repo, a),
            "push" => self.push(&repo, a),
            "merge" => self.merge_command(&repo, a),
            other => unreachable!("{other} is parsed but not dispatched"),
        }
    }

    // ---- paths -------------------------------------------------------

    /// An operand as a worktree-relative path (`""` for the root).
    fn rel(&self, repo: &Repo<'_>, operand: &str) -> Result<String> {
        let abs = if operand.starts_with('/') {
            normalize(operand)
        } else {
            normalize(&format!("{}/{operand}", self.cwd))
        };
        if abs == repo.worktree {
            return Ok(String::new());
        }
        let root = if repo.worktree == "/" {
            "/".to_string()
        } else {
            format!("{}/", repo.worktree)
        };
        abs.strip_prefix(&root).map(str::to_string).ok_or_else(|| {
            fatal(format!(
                "{operand}: '{operand}' is outside repository at '{}'",
                repo.worktree
            ))
        })
    }

    /// The cwd relative to the worktree, with a trailing `/` (or empty).
    fn prefix(&self, repo: &Repo<'_>) -> String {
        match self.rel(repo, ".") {
            Ok(rel) if !rel.is_empty() => format!("{rel}/"),
            _ => String::new(),
        }
    }

    /// A worktree-relative path as seen from the cwd (`../a`).
    fn shown(&self, repo: &Repo<'_>, rel: &str) -> String {
        let prefix = self.prefix(repo);
        if prefix.is_empty() {
            return rel.to_string();
        }
        let mut up = 0;
        let mut base = prefix.trim_end_matches('/').to_string();
        loop {
            let with = format!("{base}/");
            if let Some(rest) = rel.strip_prefix(&with) {
                return format!("{}{rest}", "../".repeat(up));
            }
            if rel == base {
                return format!(
                    "{}{}",
                    "../".repeat(up + 1),
                    rel.rsplit('/').next().unwrap_or(rel)
                );
            }
            up += 1;
            match base.rfind('/') {
                Some(i) => base.truncate(i),
                None => return format!("{}{rel}", "../".repeat(up)),
            }
        }
    }

    // ---- shared pieces ---------------------------------------------------

    fn abbrev(&self, repo: &Repo<'_>, id: &ObjectId) -> String {
        repo.odb
            .abbreviate(id, 7)
            .unwrap_or_else(|_| id.to_hex_with_len(7).to_string())
    }

    fn global(&self, key: &str) -> Option<String> {
        match key {
            "user.name" => Some(DEFAULT_NAME.to_string()),
            "user.email" => Some(DEFAULT_EMAIL.to_string()),
            _ => None,
        }
    }

    fn signature(&self, repo: &Repo<'_>, who: &str) -> Result<Signature> {
        let env = |k: &str| self.env.get(k).filter(|v| !v.is_empty()).cloned();
        let config = repo.config()?;
        let name = env(&format!("GIT_{who}_NAME"))
            .or_else(|| config.get(&Key::parse("user.name").ok()?))
            .or_else(|| self.global("user.name"))
            .unwrap_or_default();
        let email = env(&format!("GIT_{who}_EMAIL"))
            .or_else(|| config.get(&Key::parse("user.email").ok()?))
            .or_else(|| env("EMAIL"))
            .or_else(|| self.global("user.email"))
            .unwrap_or_default();
        let (seconds, offset_minutes) = match env(&format!("GIT_{who}_DATE")) {
            Some(text) => {
                parse_date(&text).ok_or_else(|| fatal(format!("invalid date format: {text}")))?
            }
            None => (self.now_ms.div_euclid(1000), 0),
        };
        Ok(Signature {
            name,
            email,
            seconds,
            offset_minutes,
        })
    }

    fn write_reflog(
        &self,
        repo: &Repo<'_>,
        name: &str,
        old: Option<ObjectId>,
        new: &ObjectId,
        message: &str,
    ) -> Result<()> {
        let zero = ObjectId::null(gix_hash::Kind::Sha1);
        let who = self.signature(repo, "COMMITTER")?;
        let line = format!(
            "{} {new} {}\t{message}\n",
            old.unwrap_or(zero),
            who.to_raw()
        );
        let path = files::join(&files::join(&repo.git_dir, "logs"), name);
        self.files_append(&path, &line)
    }

    /// Deletes ref `name` and its reflog, as git deletes both.
    fn delete_ref(&self, repo: &Repo<'_>, name: &str) -> Result<()> {
        repo.refs.delete(name)?;
        let log = files::join(&files::join(&repo.git_dir, "logs"), name);
        match self.files.remove(&log) {
            Ok(()) | Err(FileError::NotFound) => Ok(()),
            Err(e) => Err(e).at(&log),
        }
    }

    fn files_append(&self, path: &str, line: &str) -> Result<()> {
        let mut data = files::read_optional(self.files, path)
            .at(path)?
            .unwrap_or_default();
        data.extend_from_slice(line.as_bytes());
        self.files.write(path, &data).at(path)
    }

    /// Moves what `HEAD` points at (its branch, or `HEAD` itself when
    /// detached) to `new`, with reflog entries.
    fn update_head(&self, repo: &Repo<'_>, new: &ObjectId, message: &str) -> Result<()> {
        let old = repo.refs.head_id()?;
        match repo.refs.head()? {
            // A branch left where it was gets no entry (git writes an
            // unchanged ref's log only through HEAD).
            Head::Branch(_) if old.as_ref() == Some(new) => {}
            Head::Branch(name) => {
                repo.refs.write(&name, new)?;
                self.write_reflog(repo, &name, old, new, message)?;
            }
            Head::Detached(_) => repo.refs.set_head_detached(new)?,
        }
        self.write_reflog(repo, "HEAD", old, new, message)
    }

    fn head_files(&self, repo: &Repo<'_>) -> Result<Flat> {
        repo.commit_files(repo.refs.head_id()?.as_ref())
    }

    /// Status with the index refreshed (and saved when stat data moved).
    fn compute_status(&self, repo: &Repo<'_>, untracked: Untracked) -> Result<(Status, Index)> {
        let (mut index, written) = repo.index()?;
        let head = self.head_files(repo)?;
        let (status, refreshed) = worktree::status(repo, &mut index, written, &head, untracked)?;
        if refreshed {
            repo.save_index(&index)?;
        }
        Ok((status, index))
    }

    /// The upstream of branch `name`: (shown name, its ref).
    fn upstream(&self, repo: &Repo<'_>, branch: &str) -> Result<Option<(String, String)>> {
        let config = repo.config()?;
        let get = |k: &str| {
            Key::parse(&format!("branch.{branch}.{k}"))
                .ok()
                .and_then(|k| config.get(&k))
        };
        let (Some(remote), Some(merge)) = (get("remote"), get("merge")) else {
            return Ok(None);
        };
        let short = merge
            .strip_prefix("refs/heads/")
            .unwrap_or(&merge)
            .to_string();
        if remote == "." {
            return Ok(Some((short, merge)));
        }
        Ok(Some((
            format!("{remote}/{short}"),
            format!("refs/remotes/{remote}/{short}"),
        )))
    }

    /// Commits reachable from `a` but not `b`, and from `b` but not `a`.
    fn ahead_behind(&self, repo: &Repo<'_>, a: ObjectId, b: ObjectId) -> Result<(usize, usize)> {
        let reach = |start: ObjectId| -> Result<HashSet<ObjectId>> {
            let mut seen = HashSet::new();
            let mut todo = vec![start];
            while let Some(id) = todo.pop() {
                if seen.insert(id) {
                    todo.extend(repo.commit(&id)?.parents);
                }
            }
            Ok(seen)
        };
        let (ra, rb) = (reach(a)?, reach(b)?);
        Ok((ra.difference(&rb).count(), rb.difference(&ra).count()))
    }

    fn tracking_text(&self, repo: &Repo<'_>, branch: &str) -> Result<Option<String>> {
        let Some((shown, reference)) = self.upstream(repo, branch)? else {
            return Ok(None);
        };
        let Some(theirs) = repo.refs.resolve(&reference)? else {
            return Ok(Some(format!(
                "Your branch is based on '{shown}', but the upstream is gone.\n  (use \"git branch --unset-upstream\" to fixup)\n"
            )));
        };
        let Some(ours) = repo.refs.resolve(&format!("refs/heads/{branch}"))? else {
            return Ok(None);
        };
        let (ahead, behind) = self.ahead_behind(repo, ours, theirs)?;
        Ok(Some(match (ahead, behind) {
            (0, 0) => format!("Your branch is up to date with '{shown}'.\n"),
            (n, 0) => format!(
                "Your branch is ahead of '{shown}' by {}.\n  (use \"git push\" to publish your local commits)\n",
                plural(n, "commit", "commits")
            ),
            (0, n) => format!(
                "Your branch is behind '{shown}' by {}, and can be fast-forwarded.\n  (use \"git pull\" to update your local branch)\n",
                plural(n, "commit", "commits")
            ),
            (a, b) => format!(
                "Your branch and '{shown}' have diverged,\nand have {a} and {b} different commits each, respectively.\n  (use \"git pull\" if you want to integrate the remote branch with yours)\n"
            ),
        }))
    }

    // ---- init --------------------------------------------------------------

    fn init(&mut self, command: &Command) -> Result<i32> {
        let a = &command.args;
        let dir = match a.operands.as_slice() {
            [] => self.cwd.clone(),
            [d] if d.starts_with('/') => normalize(d),
            [d] => normalize(&format!("{}/{d}", self.cwd)),
            _ => return Err(fatal("too many arguments")),
        };
        let branch = a.value("initial-branch").map(str::to_string);
        if let Some(b) = &branch {
            if !valid_name(b) {
                return Err(fatal(format!("invalid initial branch name: '{b}'")));
            }
        }
        self.files.mkdir_all(&dir).at(&dir)?;
        let name = branch.clone().unwrap_or_else(|| "master".to_string());
        let existed = Repo::init(self.files, &dir, &name)?;
        if existed && branch.is_some() {
            self.err(&format!(
                "warning: re-init: ignored --initial-branch={name}\n"
            ));
        }
        if branch.is_none() && !existed && !a.has("quiet") {
            self.err(concat!(
                "hint: Using 'master' as the name for the initial branch. This default branch name\n",
                "hint: is subject to change. To configure the initial branch name to use in all\n",
                "hint: of your new repositories, which will suppress this warning, call:\n",
                "hint:\n",
                "hint: \tgit config --global init.defaultBranch <name>\n",
                "hint:\n",
                "hint: Names commonly chosen instead of 'master' are 'main', 'trunk' and\n",
                "hint: 'development'. The just-created branch can be renamed via this command:\n",
                "hint:\n",
                "hint: \tgit branch -m <name>\n",
            ));
        }
        if !a.has("quiet") {
            let git_dir = files::join(&dir, ".git");
            let word = if existed {
                "Reinitialized existing"
            } else {
                "Initialized empty"
            };
            self.say(&format!("{word} Git repository in {git_dir}/\n"));
        }
        Ok(0)
    }

    // ---- status ----------------------------------------------------------

    fn status(&mut self, repo: &Repo<'_>, a: &crate::cmd::args::Parsed) -> Result<i32> {
        if !a.operands.is_empty() {
            return Err(fatal(
                "stead: git status with paths is not in the light shell's git",
            ));
        }
        let untracked = match a.value("untracked-files") {
            None if a.has("untracked-files") => Untracked::All,
            None => Untracked::Normal,
            Some("no") => Untracked::No,
            Some("normal") => Untracked::Normal,
            Some("all") => Untracked::All,
            Some(other) => return Err(fatal(format!("Invalid untracked files mode '{other}'"))),
        };
        let (status, _) = self.compute_status(repo, untracked)?;
        let porcelain = a.has("porcelain");
        if let Some(v) = a.value("porcelain") {
            if v != "v1" && v != "1" {
                return Err(fatal(format!("unsupported porcelain version '{v}'")));
            }
        }
        if porcelain || a.has("short") {
            if a.has("branch") {
                let line = self.short_branch(repo)?;
                self.say(&line);
            }
            let mut lines: BTreeMap<String, (char, char)> = BTreeMap::new();
            let letter = |c: Change| match c {
                Change::Added => 'A',
                Change::Deleted => 'D',
                Change::Modified => 'M',
            };
            for (p, c) in &status.staged {
                lines.entry(p.clone()).or_insert((' ', ' ')).0 = letter(*c);
            }
            for (p, c) in &status.unstaged {
                lines.entry(p.clone()).or_insert((' ', ' ')).1 = letter(*c);
            }
            for (p, stages) in &status.unmerged {
                lines.insert(p.clone(), unmerged_label(*stages).0);
            }
            for (p, (x, y)) in &lines {
                let show = |p: &str| {
                    if porcelain {
                        p.to_string()
                    } else {
                        self.shown(repo, p)
                    }
                };
                let (x, shown) = match status.renamed.get(p) {
                    Some(from) => ('R', format!("{} -> {}", show(from), show(p))),
                    None => (*x, show(p)),
                };
                self.say(&format!("{x}{y} {shown}\n"));
            }
            for p in &status.untracked {
                let shown = if porcelain {
                    p.clone()
                } else {
                    self.shown(repo, p)
                };
                self.say(&format!("?? {shown}\n"));
            }
            return Ok(0);
        }
        let text = self.long_status(repo, &status)?;
        self.say(&text);
        Ok(0)
    }

    fn short_branch(&self, repo: &Repo<'_>) -> Result<String> {
        let head = repo.refs.head()?;
        let Some(branch) = head.branch().map(str::to_string) else {
            return Ok("## HEAD (no branch)\n".to_string());
        };
        if repo.refs.head_id()?.is_none() {
            return Ok(format!("## No commits yet on {branch}\n"));
        }
        let Some((shown, reference)) = self.upstream(repo, &branch)? else {
            return Ok(format!("## {branch}\n"));
        };
        let Some(theirs) = repo.refs.resolve(&reference)? else {
            return Ok(format!("## {branch}...{shown} [gone]\n"));
        };
        let ours = repo.refs.head_id()?.expect("checked above");
        let (ahead, behind) = self.ahead_behind(repo, ours, theirs)?;
        let extra = match (ahead, behind) {
            (0, 0) => String::new(),
            (a, 0) => format!(" [ahead {a}]"),
            (0, b) => format!(" [behind {b}]"),
            (a, b) => format!(" [ahead {a}, behind {b}]"),
        };
        Ok(format!("## {branch}...{shown}{extra}\n"))
    }

    fn long_status(&self, repo: &Repo<'_>, status: &Status) -> Result<String> {
        let mut out = String::new();
        let head = repo.refs.head()?;
        let head_id = repo.refs.head_id()?;
        match &head {
            Head::Branch(_) => {
                let branch = head.branch().unwrap_or_default().to_string();
                out.push_str(&format!("On branch {branch}\n"));
                if let Some(text) = self.tracking_text(repo, &branch)? {
                    out.push_str(&text);
                    out.push('\n');
                }
            }
            Head::Detached(id) => {
                out.push_str(&format!("HEAD detached at {}\n", self.abbrev(repo, id)))
            }
        }
        if head_id.is_none() {
            out.push_str("\nNo commits yet\n\n");
        }
        let label = |c: Change| match c {
            Change::Added => "new file:   ",
            Change::Deleted => "deleted:    ",
            Change::Modified => "modified:   ",
        };
        let merging = self.merging(repo)?;
        if !status.unmerged.is_empty() {
            out.push_str("You have unmerged paths.\n  (fix conflicts and run \"git commit\")\n  (use \"git merge --abort\" to abort the merge)\n\n");
        } else if merging {
            out.push_str("All conflicts fixed but you are still merging.\n  (use \"git commit\" to conclude merge)\n\n");
        }
        if !status.staged.is_empty() {
            out.push_str("Changes to be committed:\n");
            if merging {
                // git gives no hint while a merge is in progress.
            } else if head_id.is_none() {
                out.push_str("  (use \"git rm --cached <file>...\" to unstage)\n");
            } else {
                out.push_str("  (use \"git restore --staged <file>...\" to unstage)\n");
            }
            for (p, c) in &status.staged {
                match status.renamed.get(p) {
                    Some(from) => out.push_str(&format!(
                        "\trenamed:    {} -> {}\n",
                        self.shown(repo, from),
                        self.shown(repo, p)
                    )),
                    None => out.push_str(&format!("\t{}{}\n", label(*c), self.shown(repo, p))),
                }
            }
            out.push('\n');
        }
        if !status.unmerged.is_empty() {
            out.push_str(&self.unmerged_section(repo, &status.unmerged));
        }
        if !status.unstaged.is_empty() {
            out.push_str("Changes not staged for commit:\n");
            if status.unstaged.iter().any(|(_, c)| *c == Change::Deleted) {
                out.push_str("  (use \"git add/rm <file>...\" to update what will be committed)\n");
            } else {
                out.push_str("  (use \"git add <file>...\" to update what will be committed)\n");
            }
            out.push_str(
                "  (use \"git restore <file>...\" to discard changes in working directory)\n",
            );
            for (p, c) in &status.unstaged {
                out.push_str(&format!("\t{}{}\n", label(*c), self.shown(repo, p)));
            }
            out.push('\n');
        }
        if !status.untracked.is_empty() {
            out.push_str("Untracked files:\n  (use \"git add <file>...\" to include in what will be committed)\n");
            for p in &status.untracked {
                out.push_str(&format!("\t{}\n", self.shown(repo, p)));
            }
            out.push('\n');
        }
        if status.staged.is_empty() {
            if !status.unstaged.is_empty() || !status.unmerged.is_empty() {
                out.push_str(
                    "no changes added to commit (use \"git add\" and/or \"git commit -a\")\n",
                );
            } else if !status.untracked.is_empty() {
                out.push_str("nothing added to commit but untracked files present (use \"git add\" to track)\n");
            } else if head_id.is_none() {
                out.push_str(
                    "nothing to commit (create/copy files and use \"git add\" to track)\n",
                );
            } else {
                out.push_str("nothing to commit, working tree clean\n");
            }
        }
        Ok(out)
    }

    /// The `Unmerged paths:` section of a long status, with the hint git
    /// picks for the kinds of conflict there are.
    fn unmerged_section(&self, repo: &Repo<'_>, unmerged: &[(String, u8)]) -> String {
        let (mut both_deleted, mut del_mod, mut not_deleted) = (false, false, false);
        for (_, stages) in unmerged {
            match stages {
                1 => both_deleted = true,
                3 | 5 => del_mod = true,
                _ => not_deleted = true,
            }
        }
        let hint = match (both_deleted, del_mod) {
            (false, false) => "(use \"git add <file>...\" to mark resolution)",
            (true, false) if !not_deleted => "(use \"git rm <file>...\" to mark resolution)",
            _ => "(use \"git add/rm <file>...\" as appropriate to mark resolution)",
        };
        let mut out = format!("Unmerged paths:\n  {hint}\n");
        for (path, stages) in unmerged {
            let label = format!("{}:", unmerged_label(*stages).1);
            out.push_str(&format!("\t{label:<17}{}\n", self.shown(repo, path)));
        }
        out.push('\n');
        out
    }

    // ---- add / rm / mv -----------------------------------------------------

    fn add(&mut self, repo: &Repo<'_>, a: &crate::cmd::args::Parsed) -> Result<i32> {
        let (mut index, _) = repo.index()?;
        let mut operands: Vec<String> = a.operands.clone();
        if operands.is_empty() {
            if a.has("all") || a.has("update") {
                operands.push(repo.worktree.clone());
            } else {
                self.err("Nothing specified, nothing added.\nhint: Maybe you wanted to say 'git add .'?\nhint: Disable this message with \"git config advice.addEmptyPathspec false\"\n");
                return Ok(0);
            }
        }
        let update_only = a.has("update");
        let mut ignored = Vec::new();
        let mut adding = Adding {
            dry: a.has("dry-run"),
            filemode: worktree::filemode(repo)?,
            changes: Vec::new(),
        };
        for operand in &operands {
            let rel = self.rel(repo, operand)?;
            let tracked_under: Vec<String> = index
                .entries
                .iter()
                .filter(|e| at_or_under(&e.path, &rel))
                .map(|e| e.path.clone())
                .collect();
            let abs = repo.abs(&rel);
            match self.files.stat(&abs) {
                Ok(meta) if meta.kind == Kind::Dir => {
                    let found = worktree::files_under(repo, &index, &rel)?;
                    let present: HashSet<&str> = found.iter().map(|(p, _)| p.as_str()).collect();
                    for path in &tracked_under {
                        if !present.contains(path.as_str()) && !a.has("dry-run") {
                            index.remove(path);
                            adding.changes.push(format!("remove '{path}'"));
                        }
                    }
                    for (path, meta) in &found {
                        if update_only && index.find(path).is_none() {
                            continue;
                        }
                        self.stage_one(repo, &mut index, path, meta, &mut adding)?;
                    }
                }
                Ok(meta) => {
                    if update_only && index.find(&rel).is_none() {
                        continue;
                    }
                    if index.find(&rel).is_none()
                        && !a.has("force")
                        && worktree::is_ignored(repo, &rel, false)?
                    {
                        ignored.push(self.shown(repo, &rel));
                        continue;
                    }
                    self.stage_one(repo, &mut index, &rel, &meta, &mut adding)?;
                }
                Err(FileError::NotFound) if !tracked_under.is_empty() => {
                    for path in tracked_under {
                        if !a.has("dry-run") {
                            index.remove(&path);
                        }
                        adding.changes.push(format!("remove '{path}'"));
                    }
                }
                Err(FileError::NotFound) => {
                    return Err(fatal(format!(
                        "pathspec '{operand}' did not match any files"
                    )));
                }
                Err(e) => return Err(e).at(&abs),
            }
        }
        if a.has("verbose") || a.has("dry-run") {
            for change in &adding.changes {
                self.say(&format!("{change}\n"));
            }
        }
        if !a.has("dry-run") {
            repo.save_index(&index)?;
        }
        if !ignored.is_empty() {
            self.err("The following paths are ignored by one of your .gitignore files:\n");
            for p in &ignored {
                self.err(&format!("{p}\n"));
            }
            self.err("hint: Use -f if you really want to add them.\nhint: Disable this message with \"git config advice.addIgnoredFile false\"\n");
            return Ok(1);
        }
        Ok(0)
    }

    fn stage_one(
        &self,
        repo: &Repo<'_>,
        index: &mut Index,
        path: &str,
        meta: &crate::files::Meta,
        adding: &mut Adding,
    ) -> Result<()> {
        let before = index
            .find(path)
            .map(|i| (index.entries[i].id, index.entries[i].mode));
        if adding.dry {
            adding.changes.push(format!("add '{path}'"));
            return Ok(());
        }
        worktree::stage(repo, index, path, meta, adding.filemode)?;
        let after = index
            .find(path)
            .map(|i| (index.entries[i].id, index.entries[i].mode));
        if before != after {
            adding.changes.push(format!("add '{path}'"));
        }
        Ok(())
    }

    fn rm(&mut self, repo: &Repo<'_>, a: &crate::cmd::args::Parsed) -> Result<i32> {
        if a.operands.is_empty() {
            return Err(fatal("No pathspec was given. Which files should I remove?"));
        }
        let (mut index, written) = repo.index()?;
        let head = self.head_files(repo)?;
        let mut targets = Vec::new();
        for operand in &a.operands {
            let rel = self.rel(repo, operand)?;
            let inside = if rel.is_empty() {
                String::new()
            } else {
                format!("{rel}/")
            };
            // Any stage: removing a conflicted path resolves it.
            let exact = index.entries.iter().any(|e| e.path == rel);
            let under: Vec<String> = index
                .entries
                .iter()
                .filter(|e| e.path.starts_with(&inside))
                .map(|e| e.path.clone())
                .collect();
            if exact {
                targets.push(rel);
            } else if !under.is_empty() {
                if !a.has("") {
                    return Err(fatal(format!(
                        "not removing '{operand}' recursively without -r"
                    )));
                }
                targets.extend(under);
            } else {
                return Err(fatal(format!(
                    "pathspec '{operand}' did not match any files"
                )));
            }
        }
        targets.sort();
        targets.dedup();
        if !a.has("force") {
            let (status, _) =
                worktree::status(repo, &mut index.clone(), written, &head, Untracked::No)?;
            let staged: HashSet<&str> = status.staged.iter().map(|(p, _)| p.as_str()).collect();
            let unstaged: HashSet<&str> = status
                .unstaged
                .iter()
                .filter(|(_, c)| *c == Change::Modified)
                .map(|(p, _)| p.as_str())
                .collect();
            let both: Vec<&String> = targets
                .iter()
                .filter(|t| staged.contains(t.as_str()) && unstaged.contains(t.as_str()))
                .collect();
            let (only_staged, only_local): (Vec<&String>, Vec<&String>) = (
                targets
                    .iter()
                    .filter(|t| {
                        staged.contains(t.as_str())
                            && !unstaged.contains(t.as_str())
                            && head.contains_key(t.as_str())
                    })
                    .collect(),
                targets
                    .iter()
                    .filter(|t| unstaged.contains(t.as_str()) && !staged.contains(t.as_str()))
                    .collect(),
            );
            let mut refused = false;
            let mut report = |this: &mut Self, list: &[&String], what: &str, hint: &str| {
                if list.is_empty() {
                    return;
                }
                refused = true;
                let noun = if list.len() == 1 {
                    "file has"
                } else {
                    "files have"
                };
                this.err(&format!("error: the following {noun} {what}:\n"));
                for p in list {
                    this.err(&format!("    {p}\n"));
                }
                this.err(&format!("{hint}\n"));
            };
            if a.has("cached") {
                report(
                    self,
                    &both,
                    "staged content different from both the\nfile and the HEAD",
                    "(use -f to force removal)",
                );
            } else {
                report(
                    self,
                    &both,
                    "staged content different from both the\nfile and the HEAD",
                    "(use -f to force removal)",
                );
                report(
                    self,
                    &only_staged,
                    "changes staged in the index",
                    "(use --cached to keep the file, or -f to force removal)",
                );
                report(
                    self,
                    &only_local,
                    "local modifications",
                    "(use --cached to keep the file, or -f to force removal)",
                );
            }
            if refused {
                return Ok(1);
            }
        }
        for t in &targets {
            index.remove(t);
            if !a.has("quiet") {
                self.say(&format!("rm '{t}'\n"));
            }
        }
        repo.save_index(&index)?;
        if !a.has("cached") {
            for t in &targets {
                let abs = repo.abs(t);
                match self.files.remove(&abs) {
                    Ok(()) | Err(FileError::NotFound) => {}
                    Err(e) => return Err(e).at(&abs),
                }
                self.prune_dirs(repo, t);
            }
        }
        Ok(0)
    }

    /// Removes the empty directories left above a removed path.
    fn prune_dirs(&self, repo: &Repo<'_>, rel: &str) {
        let mut dir = rel;
        while let Some(i) = dir.rfind('/') {
            dir = &dir[..i];
            let abs = repo.abs(dir);
            match self.files.list(&abs) {
                Ok(entries) if entries.is_empty() => {
                    if self.files.remove(&abs).is_err() {
                        return;
                    }
                }
                _ => return,
            }
        }
    }

    fn mv(&mut self, repo: &Repo<'_>, a: &crate::cmd::args::Parsed) -> Result<i32> {
        let ops = &a.operands;
        if ops.len() < 2 {
            return Err(fatal("usage: git mv [<options>] <source>... <destination>"));
        }
        let (mut index, _) = repo.index()?;
        let dest_operand = &ops[ops.len() - 1];
        let dest = self.rel(repo, dest_operand)?;
        let dest_is_dir = matches!(self.files.stat(&repo.abs(&dest)), Ok(m) if m.kind == Kind::Dir);
        if ops.len() > 2 && !dest_is_dir {
            return Err(fatal(format!(
                "destination '{dest_operand}' is not a directory"
            )));
        }
        let mut moves = Vec::new();
        for operand in &ops[..ops.len() - 1] {
            let src = self.rel(repo, operand)?;
            let name = src.rsplit('/').next().unwrap_or(&src);
            let to = if dest_is_dir {
                if dest.is_empty() {
                    name.to_string()
                } else {
                    format!("{dest}/{name}")
                }
            } else {
                dest.clone()
            };
            let bad = |what: &str| fatal(format!("{what}, source={src}, destination={to}"));
            let src_meta = self
                .files
                .stat(&repo.abs(&src))
                .map_err(|_| bad("bad source"))?;
            let inside = format!("{src}/");
            let tracked = index.find(&src).is_some()
                || (src_meta.kind == Kind::Dir
                    && index.entries.iter().any(|e| e.path.starts_with(&inside)));
            if !tracked {
                return Err(bad("not under version control"));
            }
            if self.files.stat(&repo.abs(&to)).is_ok() && !a.has("force") {
                return Err(bad("destination exists"));
            }
            moves.push((src, to, src_meta.kind == Kind::Dir));
        }
        for (src, to, is_dir) in moves {
            if let Some(p) = parent(&repo.abs(&to)) {
                self.files.mkdir_all(p).at(p)?;
            }
            self.files
                .rename(&repo.abs(&src), &repo.abs(&to))
                .at(&repo.abs(&src))?;
            let inside = format!("{src}/");
            let moved: Vec<IndexEntry> = index
                .entries
                .iter()
                .filter(|e| e.path == src || (is_dir && e.path.starts_with(&inside)))
                .cloned()
                .collect();
            for mut e in moved {
                index.remove(&e.path);
                e.path = format!("{to}{}", &e.path[src.len()..]);
                index.upsert(e);
            }
        }
        repo.save_index(&index)?;
        Ok(0)
    }

    // ---- commit ------------------------------------------------------------

    fn commit(&mut self, repo: &Repo<'_>, a: &crate::cmd::args::Parsed) -> Result<i32> {
        if !a.operands.is_empty() {
            return Err(fatal(
                "stead: git commit with paths is not in the light shell's git",
            ));
        }
        let amend = a.has("amend");
        let head_id = repo.refs.head_id()?;
        let merging = self.merging(repo)?;
        if amend && merging {
            return Err(fatal("You are in the middle of a merge -- cannot amend."));
        }
        let old = match (amend, head_id) {
            (true, None) => return Err(fatal("You have nothing to amend.")),
            (true, Some(id)) => Some(repo.commit(&id)?),
            _ => None,
        };
        let message = self.commit_message(repo, a, old.as_ref(), merging)?;
        if message.trim().is_empty() {
            self.err("Aborting commit due to empty commit message.\n");
            return Ok(1);
        }
        let (mut index, written) = repo.index()?;
        if a.has("all") {
            self.stage_tracked(repo, &mut index, written)?;
        }
        if index.entries.iter().any(|e| e.stage != 0) {
            let mut unmerged: Vec<&str> = index
                .entries
                .iter()
                .filter(|e| e.stage != 0)
                .map(|e| e.path.as_str())
                .collect();
            unmerged.dedup();
            for path in unmerged {
                self.say(&format!("U\t{}\n", self.shown(repo, path)));
            }
            return Err(self.unmerged_refusal("Committing"));
        }
        let tree = repo.write_tree(&Repo::index_files(&index))?;
        let parents: Vec<ObjectId> = match &old {
            Some(old) => old.parents.clone(),
            None => head_id.into_iter().chain(self.merge_heads(repo)?).collect(),
        };
        let parent_tree = match parents.first() {
            Some(p) => Some(repo.commit(p)?.tree),
            None => None,
        };
        let unchanged = match (&old, parent_tree) {
            (None, Some(t)) => t == tree,
            (None, None) => index.entries.is_empty(),
            (Some(_), _) => false,
        };
        if unchanged && !a.has("allow-empty") && !merging {
            repo.save_index(&index)?;
            let (status, _) = worktree::status(
                repo,
                &mut index,
                written,
                &self.head_files(repo)?,
                Untracked::Normal,
            )?;
            let text = self.long_status(repo, &status)?;
            self.say(&text);
            return Ok(1);
        }
        let committer = self.signature(repo, "COMMITTER")?;
        let author = match &old {
            Some(old) if !self.env.contains_key("GIT_AUTHOR_DATE") => Signature {
                seconds: old.author.seconds,
                offset_minutes: old.author.offset_minutes,
                ..self.identity_for_amend(repo, old)?
            },
            _ => self.signature(repo, "AUTHOR")?,
        };
        let commit = Commit {
            tree,
            parents: parents.clone(),
            author,
            committer,
            extra: Vec::new(),
            message,
        };
        let id = repo.odb.write(ObjectKind::Commit, &commit.to_bytes())?;
        repo.save_index(&index)?;
        let kind = if amend {
            "commit (amend)"
        } else if merging {
            "commit (merge)"
        } else if parents.is_empty() {
            "commit (initial)"
        } else {
            "commit"
        };
        self.update_head(repo, &id, &format!("{kind}: {}", commit.subject()))?;
        let msg_path = files::join(&repo.git_dir, "COMMIT_EDITMSG");
        self.files
            .write(&msg_path, commit.message.as_bytes())
            .at(&msg_path)?;
        if merging {
            self.clear_merge_state(repo)?;
        }
        if a.has("quiet") {
            return Ok(0);
        }
        let where_ = match repo.refs.head()? {
            Head::Branch(_) => repo.refs.head()?.branch().unwrap_or_default().to_string(),
            Head::Detached(_) => "detached HEAD".to_string(),
        };
        let root = if parents.is_empty() {
            " (root-commit)"
        } else {
            ""
        };
        self.say(&format!(
            "[{where_}{root} {}] {}\n",
            self.abbrev(repo, &id),
            commit.subject()
        ));
        if amend {
            self.say(&format!(" Date: {}\n", git_date(&commit.author)));
        }
        if merging {
            return Ok(0);
        }
        let before = repo.commit_files(parents.first())?;
        let after = Repo::index_files(&index);
        let summary = self.summary(repo, &before, &after)?;
        self.say(&summary);
        Ok(0)
    }

    /// `commit -a`: every tracked file's change staged, deletions too.
    fn stage_tracked(
        &self,
        repo: &Repo<'_>,
        index: &mut Index,
        written: Option<i64>,
    ) -> Result<()> {
        let filemode = worktree::filemode(repo)?;
        let head = self.head_files(repo)?;
        let (status, _) = worktree::status(repo, index, written, &head, Untracked::No)?;
        for (path, change) in status.unstaged {
            match change {
                Change::Deleted => {
                    index.remove(&path);
                }
                _ => {
                    let abs = repo.abs(&path);
                    let meta = self.files.stat(&abs).at(&abs)?;
                    worktree::stage(repo, index, &path, &meta, filemode)?;
                }
            }
        }
        Ok(())
    }

    /// The message a commit gets: `-F`, `-m`, the amended commit's, a
    /// merge's prepared one under `--no-edit`, or none.
    fn commit_message(
        &self,
        repo: &Repo<'_>,
        a: &crate::cmd::args::Parsed,
        old: Option<&Commit>,
        merging: bool,
    ) -> Result<String> {
        let messages = a.values("message");
        Ok(if let Some(file) = a.value("file") {
            let path = if file.starts_with('/') {
                file.to_string()
            } else {
                format!("{}/{file}", self.cwd)
            };
            let data = self
                .files
                .read(&path)
                .map_err(|e| fatal(format!("could not read log file '{file}': {e}")))?;
            clean_message(&String::from_utf8_lossy(&data))
        } else if !messages.is_empty() {
            clean_message(&messages.join("\n\n"))
        } else if let Some(old) = old {
            old.message.clone()
        } else if merging && a.has("no-edit") {
            // The prepared message as it is, its `# Conflicts:` too (git
            // cleans only whitespace when no editor ran).
            let path = files::join(&repo.git_dir, "MERGE_MSG");
            let text = files::read_optional(self.files, &path)
                .at(&path)?
                .unwrap_or_default();
            clean_message(&String::from_utf8_lossy(&text))
        } else if a.has("no-edit") {
            String::new()
        } else {
            return Err(fatal(
                "stead: git commit without -m or -F (an editor) is not in the light shell's git",
            ));
        })
    }

    /// The author of an amended commit: the old one, unless the
    /// environment names another.
    fn identity_for_amend(&self, repo: &Repo<'_>, old: &Commit) -> Result<Signature> {
        if self.env.contains_key("GIT_AUTHOR_NAME") || self.env.contains_key("GIT_AUTHOR_EMAIL") {
            return self.signature(repo, "AUTHOR");
        }
        Ok(old.author.clone())
    }

    /// `N files changed, X insertions(+), Y deletions(-)` and the
    /// create/delete/mode/rename lines, as after a commit.
    fn summary(&self, repo: &Repo<'_>, before: &Flat, after: &Flat) -> Result<String> {
        let changes = changed_paths(before, after);
        let (renames, changes) = exact_renames(before, after, changes);
        let (mut added, mut removed) = (0, 0);
        for (path, _) in &changes {
            let old = before
                .get(path)
                .map(|(_, id)| repo.odb.read(id))
                .transpose()?
                .map(|(_, d)| d)
                .unwrap_or_default();
            let new = after
                .get(path)
                .map(|(_, id)| repo.odb.read(id))
                .transpose()?
                .map(|(_, d)| d)
                .unwrap_or_default();
            let counts = diff::counts(&old, &new);
            added += counts.added;
            removed += counts.removed;
        }
        let files = changes.len() + renames.len();
        let mut out = format!(" {}", plural(files, "file changed", "files changed"));
        if added > 0 || removed == 0 {
            out.push_str(&format!(
                ", {}",
                plural(added, "insertion(+)", "insertions(+)")
            ));
        }
        if removed > 0 || added == 0 {
            out.push_str(&format!(
                ", {}",
                plural(removed, "deletion(-)", "deletions(-)")
            ));
        }
        out.push('\n');
        let mut lines: Vec<(String, String)> = Vec::new();
        for (path, change) in &changes {
            match change {
                Change::Added => lines.push((
                    path.clone(),
                    format!(" create mode {:o} {path}\n", after[path].0),
                )),
                Change::Deleted => lines.push((
                    path.clone(),
                    format!(" delete mode {:o} {path}\n", before[path].0),
                )),
                Change::Modified => {
                    let (om, nm) = (before[path].0, after[path].0);
                    if om != nm {
                        lines.push((
                            path.clone(),
                            format!(" mode change {om:o} => {nm:o} {path}\n"),
                        ));
                    }
                }
            }
        }
        for (from, to) in &renames {
            lines.push((
                to.clone(),
                format!(" rename {} (100%)\n", rename_text(from, to)),
            ));
        }
        lines.sort();
        for (_, line) in lines {
            out.push_str(&line);
        }
        Ok(out)
    }

    // ---- log / show ----------------------------------------------------------

    fn log(&mut self, repo: &Repo<'_>, a: &crate::cmd::args::Parsed) -> Result<i32> {
        let (revs, paths) = a.split();
        let mut paths: Vec<String> = paths
            .iter()
            .map(|p| self.rel(repo, p))
            .collect::<Result<_>>()?;
        let mut starts = Vec::new();
        for rev in revs {
            match repo.rev_parse(rev)? {
                Some(id) => starts.push(repo.peel(id)?.1),
                None if a.dashdash.is_none()
                    && self.files.stat(&repo.abs(&self.rel(repo, rev)?)).is_ok() =>
                {
                    paths.push(self.rel(repo, rev)?)
                }
                None => {
                    return Err(repo
                        .commit_of(rev)
                        .err()
                        .unwrap_or_else(|| fatal(format!("bad revision '{rev}'"))))
                }
            }
        }
        if starts.is_empty() {
            match repo.refs.head_id()? {
                Some(id) => starts.push(id),
                None => {
                    let branch = repo.refs.head()?.branch().unwrap_or("HEAD").to_string();
                    return Err(fatal(format!(
                        "your current branch '{branch}' does not have any commits yet"
                    )));
                }
            }
        }
        let limit = match a.value("max-count") {
            Some(n) => n
                .parse::<i64>()
                .map_err(|_| fatal(format!("'{n}': not an integer")))?,
            None => -1,
        };
        let limit = if limit < 0 {
            usize::MAX
        } else {
            limit as usize
        };
        let oneline = a.has("oneline");
        let format = a
            .value("format")
            .map(|f| format!("tformat:{f}"))
            .or(a.value("pretty").map(str::to_string))
            .map(|f| {
                super::format::Format::parse(&f)
                    .ok_or_else(|| fatal(format!("invalid --pretty format: {f}")))
            })
            .transpose()?;
        let mut shown = 0;
        // By committer date, newest first (git's default order).
        let mut heap = BinaryHeap::new();
        let mut seen = HashSet::new();
        let mut order = 0u64;
        for id in starts {
            if seen.insert(id) {
                let c = repo.commit(&id)?;
                heap.push((c.committer.seconds, u64::MAX - order, id));
                order += 1;
            }
        }
        let mut first = true;
        while let Some((_, _, id)) = heap.pop() {
            if shown >= limit {
                break;
            }
            let commit = repo.commit(&id)?;
            let mut follow = commit.parents.clone();
            let mut include = true;
            if !paths.is_empty() {
                let mine = self.filtered(repo, Some(&commit.tree), &paths)?;
                let mut same_parent = None;
                for p in &commit.parents {
                    let theirs = self.filtered(repo, Some(&repo.commit(p)?.tree), &paths)?;
                    if theirs == mine {
                        same_parent = Some(*p);
                        break;
                    }
                }
                match same_parent {
                    Some(p) => {
                        include = false;
                        follow = vec![p];
                    }
                    None => include = !(commit.parents.is_empty() && mine.is_empty()),
                }
            }
            for p in follow {
                if seen.insert(p) {
                    let c = repo.commit(&p)?;
                    heap.push((c.committer.seconds, u64::MAX - order, p));
                    order += 1;
                }
            }
            if !include {
                continue;
            }
            shown += 1;
            if let Some(format) = &format {
                let text = format.render(&id, &commit, &|id| self.abbrev(repo, id), &git_date);
                if !first && format.separates() {
                    self.say("\n");
                }
                self.say(&text);
                if !format.separates() {
                    self.say("\n");
                }
            } else if oneline {
                let line = format!("{} {}\n", self.abbrev(repo, &id), commit.subject());
                self.say(&line);
            } else {
                if !first {
                    self.say("\n");
                }
                let header = self.commit_header(repo, &id, &commit);
                self.say(&header);
            }
            first = false;
        }
        Ok(0)
    }

    fn filtered(&self, repo: &Repo<'_>, tree: Option<&ObjectId>, paths: &[String]) -> Result<Flat> {
        let all = match tree {
            Some(t) => repo.flatten(t)?,
            None => Flat::new(),
        };
        Ok(all
            .into_iter()
            .filter(|(p, _)| {
                paths
                    .iter()
                    .any(|q| q.is_empty() || p == q || p.starts_with(&format!("{q}/")))
            })
            .collect())
    }

    fn commit_header(&self, repo: &Repo<'_>, id: &ObjectId, commit: &Commit) -> String {
        let mut out = format!("commit {id}\n");
        if commit.parents.len() > 1 {
            let parents: Vec<String> = commit
                .parents
                .iter()
                .map(|p| self.abbrev(repo, p))
                .collect();
            out.push_str(&format!("Merge: {}\n", parents.join(" ")));
        }
        out.push_str(&format!(
            "Author: {} <{}>\n",
            commit.author.name, commit.author.email
        ));
        out.push_str(&format!("Date:   {}\n\n", git_date(&commit.author)));
        for line in commit.message.trim_end_matches('\n').split('\n') {
            out.push_str(&format!("    {line}\n"));
        }
        out
    }

    fn show(&mut self, repo: &Repo<'_>, a: &crate::cmd::args::Parsed) -> Result<i32> {
        let revs: Vec<String> = if a.operands.is_empty() {
            vec!["HEAD".to_string()]
        } else {
            a.operands.clone()
        };
        for (n, rev) in revs.iter().enumerate() {
            let id = match rev.split_once(':') {
                Some((r, path)) => {
                    let commit = repo.commit_of(if r.is_empty() { "HEAD" } else { r })?;
                    let files = repo.flatten(&repo.commit(&commit)?.tree)?;
                    let path = path.trim_start_matches("./");
                    files
                        .get(path)
                        .map(|(_, id)| *id)
                        .ok_or_else(|| fatal(format!("path '{path}' does not exist in '{r}'")))?
                }
                None => repo.rev_parse(rev)?.ok_or_else(|| {
                    repo.commit_of(rev)
                        .err()
                        .unwrap_or_else(|| fatal(rev.clone()))
                })?,
            };
            let (kind, data) = repo.odb.read(&id)?;
            match kind {
                ObjectKind::Blob => self.out.extend_from_slice(&data),
                ObjectKind::Tree => {
                    self.say(&format!("tree {rev}\n\n"));
                    for e in crate::objects::parse_tree(&data)? {
                        let slash = if e.is_tree() { "/" } else { "" };
                        self.say(&format!("{}{slash}\n", e.name));
                    }
                }
                ObjectKind::Tag => {
                    let tag = Tag::parse(&data)?;
                    self.say(&format!("tag {}\n", tag.name));
                    if let Some(t) = tag.tagger.as_ref().filter(|_| !a.has("oneline")) {
                        self.say(&format!(
                            "Tagger: {} <{}>\nDate:   {}\n",
                            t.name,
                            t.email,
                            git_date(t)
                        ));
                    }
                    self.say(&format!("\n{}\n", tag.message.trim_end_matches('\n')));
                    let (_, target) = repo.peel(id)?;
                    self.show_commit(repo, &target, a.has("oneline"))?;
                }
                ObjectKind::Commit => {
                    if n > 0 && !a.has("oneline") {
                        self.say("\n");
                    }
                    self.show_commit(repo, &id, a.has("oneline"))?;
                }
            }
        }
        Ok(0)
    }

    fn show_commit(&mut self, repo: &Repo<'_>, id: &ObjectId, oneline: bool) -> Result<()> {
        let commit = repo.commit(id)?;
        if commit.parents.len() > 1 {
            return Err(fatal(
                "stead: git show of a merge (a combined diff) is not in the light shell's git",
            ));
        }
        if oneline {
            self.say(&format!("{} {}\n", self.abbrev(repo, id), commit.subject()));
        } else {
            let header = self.commit_header(repo, id, &commit);
            self.say(&header);
        }
        let before = repo.commit_files(commit.parents.first())?;
        let after = repo.flatten(&commit.tree)?;
        let patch = self.patches(repo, &before, &after, None, &[])?;
        if !patch.is_empty() && !oneline {
            self.say("\n");
        }
        self.out.extend_from_slice(&patch);
        Ok(())
    }

    // ---- diff ---------------------------------------------------------------

    /// Patches between two flat trees; `worktree` reads the new side's
    /// content from the worktree for paths it lists (their stat data).
    fn patches(
        &self,
        repo: &Repo<'_>,
        before: &Flat,
        after: &Flat,
        worktree: Option<&BTreeMap<String, Vec<u8>>>,
        paths: &[String],
    ) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        let abbrev = |id: &ObjectId| self.abbrev(repo, id);
        for (path, _) in changed_paths(before, after) {
            if !paths.is_empty()
                && !paths
                    .iter()
                    .any(|q| q.is_empty() || path == *q || path.starts_with(&format!("{q}/")))
            {
                continue;
            }
            let side = |flat: &Flat, from_worktree: bool| -> Result<Option<Side>> {
                let Some((mode, id)) = flat.get(&path) else {
                    return Ok(None);
                };
                let data = match worktree
                    .and_then(|w| w.get(&path))
                    .filter(|_| from_worktree)
                {
                    Some(data) => data.clone(),
                    None => repo.odb.read(id)?.1,
                };
                Ok(Some(Side {
                    mode: *mode,
                    id: *id,
                    data,
                }))
            };
            let old = side(before, false)?;
            let new = side(after, true)?;
            out.extend(diff::patch(&path, old.as_ref(), new.as_ref(), &abbrev));
        }
        Ok(out)
    }

    fn diff(&mut self, repo: &Repo<'_>, a: &crate::cmd::args::Parsed) -> Result<i32> {
        let (revs, paths) = a.split();
        let mut revs: Vec<String> = revs.to_vec();
        let mut paths: Vec<String> = paths
            .iter()
            .map(|p| self.rel(repo, p))
            .collect::<Result<_>>()?;
        if a.dashdash.is_none() {
            // Operands that name no revision are paths.
            let mut kept = Vec::new();
            for r in revs.drain(..) {
                if r.contains("..") || repo.rev_parse(&r)?.is_some() {
                    kept.push(r);
                } else if self.files.stat(&repo.abs(&self.rel(repo, &r)?)).is_ok() {
                    paths.push(self.rel(repo, &r)?);
                } else {
                    return Err(fatal(format!("ambiguous argument '{r}': unknown revision or path not in the working tree.\nUse '--' to separate paths from revisions, like this:\n'git <command> [<revision>...] -- [<file>...]'")));
                }
            }
            revs = kept;
        }
        if let [range] = revs.as_slice() {
            if let Some((x, y)) = range.split_once("..") {
                revs = vec![
                    if x.is_empty() {
                        "HEAD".to_string()
                    } else {
                        x.to_string()
                    },
                    if y.is_empty() {
                        "HEAD".to_string()
                    } else {
                        y.trim_start_matches('.').to_string()
                    },
                ];
            }
        }
        let cached = a.has("cached") || a.has("staged");
        let tree_of = |rev: &str| -> Result<Flat> {
            let id = repo.commit_of(rev)?;
            repo.flatten(&repo.commit(&id)?.tree)
        };
        let (mut index, written) = repo.index()?;
        let (before, after, contents) = match (revs.as_slice(), cached) {
            ([], false) => {
                let head = self.head_files(repo)?;
                let (status, refreshed) =
                    worktree::status(repo, &mut index, written, &head, Untracked::No)?;
                if refreshed {
                    repo.save_index(&index)?;
                }
                let before = Repo::index_files(&index);
                let (after, contents) = self.worktree_side(repo, &before, &status)?;
                (before, after, Some(contents))
            }
            ([], true) => (self.head_files(repo)?, Repo::index_files(&index), None),
            ([r], true) => (tree_of(r)?, Repo::index_files(&index), None),
            ([r], false) => {
                let head = self.head_files(repo)?;
                let (status, _) =
                    worktree::status(repo, &mut index, written, &head, Untracked::No)?;
                let staged = Repo::index_files(&index);
                let (after, contents) = self.worktree_side(repo, &staged, &status)?;
                (tree_of(r)?, after, Some(contents))
            }
            ([x, y], false) => (tree_of(x)?, tree_of(y)?, None),
            _ => {
                return Err(fatal(
                    "stead: this form of git diff is not in the light shell's git",
                ))
            }
        };
        let changed: Vec<(String, Change)> = changed_paths(&before, &after)
            .into_iter()
            .filter(|(p, _)| {
                paths.is_empty()
                    || paths
                        .iter()
                        .any(|q| q.is_empty() || p == q || p.starts_with(&format!("{q}/")))
            })
            .collect();
        let exit = if (a.has("exit-code") || a.has("quiet")) && !changed.is_empty() {
            1
        } else {
            0
        };
        if a.has("quiet") {
            return Ok(exit);
        }
        if a.has("name-only") || a.has("name-status") {
            for (p, c) in &changed {
                let shown = self.shown(repo, p);
                if a.has("name-status") {
                    let letter = match c {
                        Change::Added => 'A',
                        Change::Deleted => 'D',
                        Change::Modified => 'M',
                    };
                    self.say(&format!("{letter}\t{shown}\n"));
                } else {
                    self.say(&format!("{shown}\n"));
                }
            }
            return Ok(exit);
        }
        let patch = self.patches(repo, &before, &after, contents.as_ref(), &paths)?;
        self.out.extend_from_slice(&patch);
        Ok(exit)
    }

    /// The worktree as a flat tree over the index's paths (untracked files
    /// left out, as `git diff` leaves them), with modified files' content.
    fn worktree_side(
        &self,
        repo: &Repo<'_>,
        staged: &Flat,
        status: &Status,
    ) -> Result<(Flat, BTreeMap<String, Vec<u8>>)> {
        let mut after = staged.clone();
        let mut contents = BTreeMap::new();
        for (path, change) in &status.unstaged {
            match change {
                Change::Deleted => {
                    after.remove(path);
                }
                _ => {
                    let abs = repo.abs(path);
                    let meta = self.files.stat(&abs).at(&abs)?;
                    let (mode, data) = worktree::worktree_blob(repo, path, &meta)?;
                    let id = crate::odb::hash(ObjectKind::Blob, &data);
                    after.insert(path.clone(), (mode, id));
                    contents.insert(path.clone(), data);
                }
            }
        }
        Ok((after, contents))
    }

    // ---- branch / switch / checkout -------------------------------------------

    fn branch(&mut self, repo: &Repo<'_>, a: &crate::cmd::args::Parsed) -> Result<i32> {
        let head = repo.refs.head()?;
        if a.has("show-current") {
            if let Some(b) = head.branch() {
                self.say(&format!("{b}\n"));
            }
            return Ok(0);
        }
        let force = a.has("") || a.has("force");
        if a.has("delete") || a.has("") {
            if a.operands.is_empty() {
                return Err(fatal("branch name required"));
            }
            let mut status = 0;
            for name in &a.operands {
                let full = format!("refs/heads/{name}");
                let Some(id) = repo.refs.resolve(&full)? else {
                    self.err(&format!("error: branch '{name}' not found\n"));
                    status = 1;
                    continue;
                };
                if head.branch() == Some(name.as_str()) {
                    self.err(&format!(
                        "error: cannot delete branch '{name}' used by worktree at '{}'\n",
                        repo.worktree
                    ));
                    status = 1;
                    continue;
                }
                if !force {
                    let base = match self.upstream(repo, name)? {
                        Some((_, r)) => repo.refs.resolve(&r)?,
                        None => repo.refs.head_id()?,
                    };
                    let merged = match base {
                        Some(b) => self.ahead_behind(repo, id, b)?.0 == 0,
                        None => false,
                    };
                    if !merged {
                        self.err(&format!("error: the branch '{name}' is not fully merged\nhint: If you are sure you want to delete it, run 'git branch -D {name}'\nhint: Disable this message with \"git config advice.forceDeleteBranch false\"\n"));
                        status = 1;
                        continue;
                    }
                }
                self.delete_ref(repo, &full)?;
                self.say(&format!(
                    "Deleted branch {name} (was {}).\n",
                    self.abbrev(repo, &id)
                ));
            }
            return Ok(status);
        }
        if a.has("move") {
            let (old, new) = match a.operands.as_slice() {
                [new] => (
                    head.branch().map(str::to_string).ok_or_else(|| {
                        fatal("cannot rename the current branch while not on any")
                    })?,
                    new.clone(),
                ),
                [old, new] => (old.clone(), new.clone()),
                _ => return Err(fatal("too many arguments for a rename operation")),
            };
            if !valid_name(&new) {
                return Err(fatal(format!("'{new}' is not a valid branch name")));
            }
            let new_full = format!("refs/heads/{new}");
            if repo.refs.resolve(&new_full)?.is_some() && !a.has("force") && old != new {
                return Err(fatal(format!("a branch named '{new}' already exists")));
            }
            let old_full = format!("refs/heads/{old}");
            match repo.refs.resolve(&old_full)? {
                Some(id) => {
                    repo.refs.delete(&old_full)?;
                    repo.refs.write(&new_full, &id)?;
                }
                None if head.branch() == Some(old.as_str()) => {}
                None => return Err(fatal(format!("no branch named '{old}'"))),
            }
            if head.branch() == Some(old.as_str()) {
                repo.refs.set_head_branch(&new_full)?;
            }
            return Ok(0);
        }
        if a.operands.is_empty() || a.has("list") {
            let branches = repo.refs.list("refs/heads/")?;
            if let Head::Detached(id) = &head {
                self.say(&format!("* (HEAD detached at {})\n", self.abbrev(repo, id)));
            }
            for name in branches.keys() {
                let short = &name["refs/heads/".len()..];
                let mark = if head.branch() == Some(short) {
                    '*'
                } else {
                    ' '
                };
                self.say(&format!("{mark} {short}\n"));
            }
            return Ok(0);
        }
        let (name, start) = match a.operands.as_slice() {
            // git names the current branch as the start (its reflog's
            // `branch: Created from main`).
            [name] => (name.clone(), head.branch().unwrap_or("HEAD").to_string()),
            [name, start] => (name.clone(), start.clone()),
            _ => {
                return Err(fatal(
                    "stead: this form of git branch is not in the light shell's git",
                ))
            }
        };
        self.create_branch(repo, &name, &start, force)?;
        Ok(0)
    }

    fn create_branch(
        &self,
        repo: &Repo<'_>,
        name: &str,
        start: &str,
        force: bool,
    ) -> Result<ObjectId> {
        if !valid_name(name) {
            return Err(fatal(format!("'{name}' is not a valid branch name")));
        }
        let full = format!("refs/heads/{name}");
        if repo.refs.resolve(&full)?.is_some() && !force {
            return Err(fatal(format!("a branch named '{name}' already exists")));
        }
        let id = match repo.rev_parse(start)? {
            Some(id) => repo.peel(id)?.1,
            None => {
                return Err(fatal(format!(
                    "not a valid object name: '{}'",
                    if start == "HEAD" {
                        repo.refs.head()?.branch().unwrap_or("HEAD").to_string()
                    } else {
                        start.to_string()
                    }
                )))
            }
        };
        repo.refs.write(&full, &id)?;
        self.write_reflog(
            repo,
            &full,
            None,
            &id,
            &format!("branch: Created from {start}"),
        )?;
        Ok(id)
    }

    fn switch(&mut self, repo: &Repo<'_>, a: &crate::cmd::args::Parsed) -> Result<i32> {
        if let Some(new) = a.value("create") {
            let start = a
                .operands
                .first()
                .cloned()
                .unwrap_or_else(|| "HEAD".to_string());
            return self.switch_new(repo, new, &start);
        }
        match a.operands.as_slice() {
            [target] if a.has("detach") => self.detach(repo, target),
            [target] => {
                if repo
                    .refs
                    .resolve(&format!("refs/heads/{target}"))?
                    .is_none()
                {
                    if target == "-" {
                        return Err(fatal("stead: git switch - is not in the light shell's git"));
                    }
                    if repo.rev_parse(target)?.is_some() {
                        return Err(fatal(format!("a branch is expected, got '{target}'")));
                    }
                    return Err(fatal(format!("invalid reference: {target}")));
                }
                self.switch_branch(repo, target)
            }
            [] => Err(fatal("missing branch or commit argument")),
            _ => Err(fatal("only one reference expected")),
        }
    }

    fn checkout(&mut self, repo: &Repo<'_>, a: &crate::cmd::args::Parsed) -> Result<i32> {
        if let Some(new) = a.value("") {
            let start = a
                .operands
                .first()
                .cloned()
                .unwrap_or_else(|| "HEAD".to_string());
            return self.switch_new(repo, new, &start);
        }
        let (revs, paths) = a.split();
        if a.dashdash.is_some() || revs.len() > 1 {
            // checkout [REV] -- PATHS: restore paths.
            let (source, paths) = match (a.dashdash, revs) {
                (Some(_), [rev]) => (Some(rev.clone()), paths.to_vec()),
                (Some(_), []) => (None, paths.to_vec()),
                (None, [first, rest @ ..]) if repo.rev_parse(first)?.is_some() => {
                    (Some(first.clone()), rest.to_vec())
                }
                (None, all) => (None, all.to_vec()),
                _ => {
                    return Err(fatal(
                        "stead: this form of git checkout is not in the light shell's git",
                    ))
                }
            };
            return self.restore_paths(repo, source.as_deref(), &paths, a.dashdash.is_none());
        }
        match revs {
            [target] => {
                if repo
                    .refs
                    .resolve(&format!("refs/heads/{target}"))?
                    .is_some()
                {
                    return self.switch_branch(repo, target);
                }
                if target == "-" {
                    return Err(fatal(
                        "stead: git checkout - is not in the light shell's git",
                    ));
                }
                if repo.rev_parse(target)?.is_some() {
                    return self.detach(repo, target);
                }
                // A path: restored from the index, or the paths' error.
                self.restore_paths(repo, None, std::slice::from_ref(target), true)
            }
            _ => Err(fatal(
                "stead: git checkout without a target is not in the light shell's git",
            )),
        }
    }

    fn restore_paths(
        &mut self,
        repo: &Repo<'_>,
        source: Option<&str>,
        paths: &[String],
        report: bool,
    ) -> Result<i32> {
        let (mut index, _) = repo.index()?;
        let from: Flat = match source {
            Some(rev) => {
                let id = repo.commit_of(rev)?;
                repo.flatten(&repo.commit(&id)?.tree)?
            }
            None => Repo::index_files(&index),
        };
        let mut picked = Vec::new();
        for p in paths {
            let rel = self.rel(repo, p)?;
            let matched: Vec<(String, (u32, ObjectId))> = from
                .iter()
                .filter(|(k, _)| at_or_under(k, &rel))
                .map(|(k, v)| (k.clone(), *v))
                .collect();
            if matched.is_empty() {
                self.err(&format!(
                    "error: pathspec '{p}' did not match any file(s) known to git\n"
                ));
                return Ok(1);
            }
            picked.extend(matched);
        }
        let mut updated = 0;
        for (path, (mode, id)) in &picked {
            let abs = repo.abs(path);
            let current = match self.files.stat(&abs) {
                Ok(meta) => Some(worktree::worktree_blob(repo, path, &meta)?),
                Err(_) => None,
            };
            let same = current.is_some_and(|(m, data)| {
                m == *mode && crate::odb::hash(ObjectKind::Blob, &data) == *id
            });
            if !same {
                self.write_worktree_file(repo, path, *mode, id)?;
                updated += 1;
            }
            if source.is_some() {
                let abs = repo.abs(path);
                let meta = self.files.stat(&abs).at(&abs)?;
                index.upsert(IndexEntry::new(
                    path.clone(),
                    *mode,
                    *id,
                    meta.size,
                    meta.mtime_ms,
                ));
            }
        }
        repo.save_index(&index)?;
        if !report {
            return Ok(0);
        }
        let n = updated;
        let from_text = match source {
            Some(rev) => self.abbrev(repo, &repo.commit_of(rev)?),
            None => "the index".to_string(),
        };
        self.err(&format!(
            "Updated {} from {from_text}\n",
            plural(n, "path", "paths")
        ));
        Ok(0)
    }

    fn write_worktree_file(
        &self,
        repo: &Repo<'_>,
        path: &str,
        mode: u32,
        id: &ObjectId,
    ) -> Result<()> {
        let data = repo.odb.read_kind(id, ObjectKind::Blob)?;
        let abs = repo.abs(path);
        if let Ok(meta) = self.files.stat(&abs) {
            if meta.kind == Kind::Symlink
                || mode == crate::index::MODE_SYMLINK
                || meta.kind == Kind::Dir
            {
                self.files.remove(&abs).at(&abs)?;
            }
        }
        if mode == crate::index::MODE_SYMLINK {
            return self
                .files
                .symlink(&String::from_utf8_lossy(&data), &abs)
                .at(&abs);
        }
        self.files.write(&abs, &data).at(&abs)?;
        self.files
            .set_executable(&abs, mode == crate::index::MODE_EXEC)
            .at(&abs)
    }

    /// Moves the worktree and index from HEAD's tree to `target`'s,
    /// carrying local changes to paths the two trees agree on; refuses
    /// (changing nothing) when a local change or untracked file would be
    /// overwritten.
    fn move_tree(&mut self, repo: &Repo<'_>, target: &ObjectId, verb: &str) -> Result<bool> {
        let new = repo.flatten(&repo.commit(target)?.tree)?;
        self.move_worktree(repo, &new, verb)
    }

    /// [`Self::move_tree`] to a flat tree `new`.
    fn move_worktree(&mut self, repo: &Repo<'_>, new: &Flat, verb: &str) -> Result<bool> {
        let (mut index, written) = repo.index()?;
        let head = self.head_files(repo)?;
        let (status, _) =
            worktree::status(repo, &mut index.clone(), written, &head, Untracked::All)?;
        let dirty: HashSet<&str> = status
            .staged
            .iter()
            .chain(status.unstaged.iter())
            .map(|(p, _)| p.as_str())
            .collect();
        let untracked: HashSet<&str> = status.untracked.iter().map(String::as_str).collect();
        let changes = changed_paths(&head, new);
        let local: Vec<&String> = changes
            .iter()
            .map(|(p, _)| p)
            .filter(|p| dirty.contains(p.as_str()))
            .collect();
        let clobbered: Vec<&String> = changes
            .iter()
            .map(|(p, _)| p)
            .filter(|p| untracked.contains(p.as_str()) && new.contains_key(p.as_str()))
            .collect();
        if !local.is_empty() {
            self.err(&format!("error: Your local changes to the following files would be overwritten by {verb}:\n"));
            for p in &local {
                self.err(&format!("\t{p}\n"));
            }
            self.err(&format!(
                "Please commit your changes or stash them before you {}.\nAborting\n",
                if verb == "checkout" {
                    "switch branches"
                } else {
                    verb
                }
            ));
            return Ok(false);
        }
        if !clobbered.is_empty() {
            self.err(&format!("error: The following untracked working tree files would be overwritten by {verb}:\n"));
            for p in &clobbered {
                self.err(&format!("\t{p}\n"));
            }
            self.err(&format!(
                "Please move or remove them before you {}.\nAborting\n",
                if verb == "checkout" {
                    "switch branches"
                } else {
                    verb
                }
            ));
            return Ok(false);
        }
        for (path, change) in &changes {
            match change {
                Change::Deleted => {
                    let abs = repo.abs(path);
                    match self.files.remove(&abs) {
                        Ok(()) | Err(FileError::NotFound) => {}
                        Err(e) => return Err(e).at(&abs),
                    }
                    index.remove(path);
                    self.prune_dirs(repo, path);
                }
                _ => {
                    let (mode, id) = new[path];
                    self.write_worktree_file(repo, path, mode, &id)?;
                    let abs = repo.abs(path);
                    let meta = self.files.stat(&abs).at(&abs)?;
                    index.upsert(IndexEntry::new(
                        path.clone(),
                        mode,
                        id,
                        meta.size,
                        meta.mtime_ms,
                    ));
                }
            }
        }
        repo.save_index(&index)?;
        Ok(true)
    }

    /// What is still changed after a switch, as `M\tpath` lines.
    fn carried(&mut self, repo: &Repo<'_>) -> Result<()> {
        let (status, _) = self.compute_status(repo, Untracked::No)?;
        let mut lines: BTreeMap<String, char> = BTreeMap::new();
        for (p, c) in status.staged.iter().chain(status.unstaged.iter()) {
            let letter = match c {
                Change::Added => 'A',
                Change::Deleted => 'D',
                Change::Modified => 'M',
            };
            lines.entry(p.clone()).or_insert(letter);
        }
        for (p, c) in lines {
            let shown = self.shown(repo, &p);
            self.note_out(&format!("{c}\t{shown}\n"));
        }
        Ok(())
    }

    fn switch_branch(&mut self, repo: &Repo<'_>, name: &str) -> Result<i32> {
        let full = format!("refs/heads/{name}");
        if repo.refs.head()? == Head::Branch(full.clone()) {
            self.note(&format!("Already on '{name}'\n"));
            if let Some(text) = self.tracking_text(repo, name)? {
                self.note_out(&text);
            }
            return Ok(0);
        }
        let target = repo
            .refs
            .resolve(&full)?
            .ok_or_else(|| fatal(format!("invalid reference: {name}")))?;
        if !self.move_tree(repo, &target, "checkout")? {
            return Ok(1);
        }
        let old = repo.refs.head_id()?;
        let from = repo
            .refs
            .head()?
            .branch()
            .map(str::to_string)
            .unwrap_or_else(|| old.map(|o| o.to_string()).unwrap_or_default());
        let previous = match repo.refs.head()? {
            Head::Detached(id) => Some(id),
            Head::Branch(_) => None,
        };
        repo.refs.set_head_branch(&full)?;
        self.write_reflog(
            repo,
            "HEAD",
            old,
            &target,
            &format!("checkout: moving from {from} to {name}"),
        )?;
        self.carried(repo)?;
        if let Some(id) = previous {
            let commit = repo.commit(&id)?;
            self.note(&format!(
                "Previous HEAD position was {} {}\n",
                self.abbrev(repo, &id),
                commit.subject()
            ));
        }
        self.note(&format!("Switched to branch '{name}'\n"));
        if let Some(text) = self.tracking_text(repo, name)? {
            self.note_out(&text);
        }
        Ok(0)
    }

    fn switch_new(&mut self, repo: &Repo<'_>, name: &str, start: &str) -> Result<i32> {
        if !valid_name(name) {
            return Err(fatal(format!("'{name}' is not a valid branch name")));
        }
        let full = format!("refs/heads/{name}");
        if repo.refs.resolve(&full)?.is_some() {
            return Err(fatal(format!("a branch named '{name}' already exists")));
        }
        let head_id = repo.refs.head_id()?;
        let old = head_id;
        if start == "HEAD" && head_id.is_none() {
            // On an unborn branch: only HEAD moves.
            repo.refs.set_head_branch(&full)?;
            self.note(&format!("Switched to a new branch '{name}'\n"));
            return Ok(0);
        }
        let target = repo.commit_of(start)?;
        if Some(target) != head_id && !self.move_tree(repo, &target, "checkout")? {
            return Ok(1);
        }
        let from = repo
            .refs
            .head()?
            .branch()
            .map(str::to_string)
            .unwrap_or_else(|| old.map(|o| o.to_string()).unwrap_or_default());
        repo.refs.write(&full, &target)?;
        self.write_reflog(
            repo,
            &full,
            None,
            &target,
            &format!("branch: Created from {start}"),
        )?;
        repo.refs.set_head_branch(&full)?;
        self.write_reflog(
            repo,
            "HEAD",
            old,
            &target,
            &format!("checkout: moving from {from} to {name}"),
        )?;
        self.carried(repo)?;
        self.note(&format!("Switched to a new branch '{name}'\n"));
        Ok(0)
    }

    fn detach(&mut self, repo: &Repo<'_>, target: &str) -> Result<i32> {
        let id = repo.commit_of(target)?;
        if !self.move_tree(repo, &id, "checkout")? {
            return Ok(1);
        }
        let old = repo.refs.head_id()?;
        let head = repo.refs.head()?;
        let from = head
            .branch()
            .map(str::to_string)
            .unwrap_or_else(|| old.map(|o| o.to_string()).unwrap_or_default());
        repo.refs.set_head_detached(&id)?;
        self.write_reflog(
            repo,
            "HEAD",
            old,
            &id,
            &format!("checkout: moving from {from} to {target}"),
        )?;
        self.carried(repo)?;
        let commit = repo.commit(&id)?;
        if let Head::Detached(prev) = head {
            if prev != id {
                let pc = repo.commit(&prev)?;
                self.note(&format!(
                    "Previous HEAD position was {} {}\n",
                    self.abbrev(repo, &prev),
                    pc.subject()
                ));
            }
            self.note(&format!(
                "HEAD is now at {} {}\n",
                self.abbrev(repo, &id),
                commit.subject()
            ));
            return Ok(0);
        }
        self.note(&format!(
            "Note: switching to '{target}'.\n\nYou are in 'detached HEAD' state. You can look around, make experimental\nchanges and commit them, and you can discard any commits you make in this\nstate without impacting any branches by switching back to a branch.\n\nIf you want to create a new branch to retain commits you create, you may\ndo so (now or later) by using -c with the switch command. Example:\n\n  git switch -c <new-branch-name>\n\nOr undo this operation with:\n\n  git switch -\n\nTurn off this advice by setting config variable advice.detachedHead to false\n\nHEAD is now at {} {}\n",
            self.abbrev(repo, &id),
            commit.subject()
        ));
        Ok(0)
    }

    // ---- reset ----------------------------------------------------------------

    fn reset(&mut self, repo: &Repo<'_>, a: &crate::cmd::args::Parsed) -> Result<i32> {
        let (revs, paths) = a.split();
        let mode = if a.has("hard") {
            "hard"
        } else if a.has("soft") {
            "soft"
        } else {
            "mixed"
        };
        let (rev, paths): (String, Vec<String>) = match (revs, a.dashdash) {
            ([], _) => ("HEAD".to_string(), paths.to_vec()),
            ([r], Some(_)) => (r.clone(), paths.to_vec()),
            ([first, rest @ ..], None) if repo.rev_parse(first)?.is_some() => {
                (first.clone(), rest.to_vec())
            }
            (all, None) => ("HEAD".to_string(), all.to_vec()),
            _ => {
                return Err(fatal(
                    "stead: this form of git reset is not in the light shell's git",
                ))
            }
        };
        if !paths.is_empty() {
            if mode != "mixed" {
                return Err(fatal(format!("Cannot do {mode} reset with paths.")));
            }
            let source = match repo.rev_parse(&rev)? {
                Some(_) => repo.flatten(&repo.commit(&repo.commit_of(&rev)?)?.tree)?,
                None if rev == "HEAD" => Flat::new(),
                None => return Err(repo.commit_of(&rev).expect_err("unresolved")),
            };
            let (mut index, _) = repo.index()?;
            for p in &paths {
                let rel = self.rel(repo, p)?;
                let in_index: Vec<String> = index
                    .entries
                    .iter()
                    .filter(|e| at_or_under(&e.path, &rel))
                    .map(|e| e.path.clone())
                    .collect();
                for path in in_index {
                    index.remove(&path);
                }
                for (path, (mode, id)) in source.iter().filter(|(k, _)| at_or_under(k, &rel)) {
                    index.upsert(IndexEntry::new(path.clone(), *mode, *id, 0, 0));
                }
            }
            repo.save_index(&index)?;
            self.unstaged_after_reset(repo, a.has("quiet"))?;
            return Ok(0);
        }
        let target = repo.commit_of(&rev)?;
        let tree = repo.flatten(&repo.commit(&target)?.tree)?;
        match mode {
            "soft" => {}
            "mixed" => {
                let (old, _) = repo.index()?;
                let mut index = Index::default();
                for (path, (mode, id)) in &tree {
                    // Entries that stay the same keep their stat data.
                    let kept = old
                        .find(path)
                        .map(|i| &old.entries[i])
                        .filter(|e| e.id == *id && e.mode == *mode);
                    index.entries.push(
                        kept.cloned()
                            .unwrap_or_else(|| IndexEntry::new(path.clone(), *mode, *id, 0, 0)),
                    );
                }
                index.sort();
                repo.save_index(&index)?;
            }
            _ => self.hard_reset(repo, &tree)?,
        }
        let reason = format!("reset: moving to {rev}");
        self.update_head(repo, &target, &reason)?;
        if mode == "hard" {
            if !a.has("quiet") {
                let commit = repo.commit(&target)?;
                self.say(&format!(
                    "HEAD is now at {} {}\n",
                    self.abbrev(repo, &target),
                    commit.subject()
                ));
            }
        } else if mode == "mixed" {
            self.unstaged_after_reset(repo, a.has("quiet"))?;
        }
        Ok(0)
    }

    /// Makes the index and the worktree `tree` (what `reset --hard`
    /// does): tracked files not in it go, the others get its content;
    /// untracked files stay.
    fn hard_reset(&self, repo: &Repo<'_>, tree: &Flat) -> Result<()> {
        let (old_index, _) = repo.index()?;
        let head = self.head_files(repo)?;
        let mut index = Index::default();
        // Tracked paths (in HEAD or the index) not in the target go.
        let tracked: BTreeSet<String> = head
            .keys()
            .cloned()
            .chain(old_index.entries.iter().map(|e| e.path.clone()))
            .collect();
        for path in tracked {
            if !tree.contains_key(&path) {
                let abs = repo.abs(&path);
                match self.files.remove(&abs) {
                    Ok(()) | Err(FileError::NotFound) => {}
                    Err(e) => return Err(e).at(&abs),
                }
                self.prune_dirs(repo, &path);
            }
        }
        for (path, (mode, id)) in tree {
            let abs = repo.abs(path);
            let same = old_index
                .find(path)
                .map(|i| &old_index.entries[i])
                .filter(|e| e.id == *id && e.mode == *mode);
            let current = self
                .files
                .stat(&abs)
                .ok()
                .map(|m| worktree::worktree_blob(repo, path, &m))
                .transpose()?;
            let matches = current.as_ref().is_some_and(|(m, data)| {
                *m == *mode && crate::odb::hash(ObjectKind::Blob, data) == *id
            });
            if !matches {
                self.write_worktree_file(repo, path, *mode, id)?;
            }
            let meta = self.files.stat(&abs).at(&abs)?;
            let mut entry = same.cloned().unwrap_or_else(|| {
                IndexEntry::new(path.clone(), *mode, *id, meta.size, meta.mtime_ms)
            });
            entry.mtime = crate::index::stamp(meta.mtime_ms);
            entry.size = meta.size as u32;
            index.entries.push(entry);
        }
        index.sort();
        repo.save_index(&index)?;
        Ok(())
    }

    fn unstaged_after_reset(&mut self, repo: &Repo<'_>, quiet: bool) -> Result<()> {
        let (status, _) = self.compute_status(repo, Untracked::No)?;
        if quiet || status.unstaged.is_empty() {
            return Ok(());
        }
        self.say("Unstaged changes after reset:\n");
        for (p, c) in &status.unstaged {
            let letter = if *c == Change::Deleted { 'D' } else { 'M' };
            let shown = self.shown(repo, p);
            self.say(&format!("{letter}\t{shown}\n"));
        }
        Ok(())
    }

    // ---- tag ------------------------------------------------------------------

    fn tag(&mut self, repo: &Repo<'_>, a: &crate::cmd::args::Parsed) -> Result<i32> {
        if a.has("delete") {
            let mut status = 0;
            for name in &a.operands {
                let full = format!("refs/tags/{name}");
                match repo.refs.resolve(&full)? {
                    Some(id) => {
                        repo.refs.delete(&full)?;
                        self.say(&format!(
                            "Deleted tag '{name}' (was {})\n",
                            self.abbrev(repo, &id)
                        ));
                    }
                    None => {
                        self.err(&format!("error: tag '{name}' not found.\n"));
                        status = 1;
                    }
                }
            }
            return Ok(status);
        }
        if a.operands.is_empty() || a.has("list") {
            for name in repo.refs.list("refs/tags/")?.keys() {
                let short = &name["refs/tags/".len()..];
                if a.operands.is_empty()
                    || a.operands
                        .iter()
                        .any(|p| crate::ignore::wildmatch(p.as_bytes(), short.as_bytes()))
                {
                    self.say(&format!("{short}\n"));
                }
            }
            return Ok(0);
        }
        let (name, rev) = match a.operands.as_slice() {
            [name] => (name.clone(), "HEAD".to_string()),
            [name, rev] => (name.clone(), rev.clone()),
            _ => return Err(fatal("too many arguments")),
        };
        if !valid_name(&name) {
            return Err(fatal(format!("'{name}' is not a valid tag name.")));
        }
        let full = format!("refs/tags/{name}");
        if repo.refs.resolve(&full)?.is_some() {
            return Err(fatal(format!("tag '{name}' already exists")));
        }
        let target = repo
            .rev_parse(&rev)?
            .ok_or_else(|| fatal(format!("Failed to resolve '{rev}' as a valid ref.")))?;
        let annotated = a.has("annotate") || a.has("message");
        let id = if annotated {
            let Some(message) = a.value("message") else {
                return Err(fatal(
                    "stead: git tag -a without -m (an editor) is not in the light shell's git",
                ));
            };
            let (kind, _) = repo.odb.read(&target)?;
            let tag = Tag {
                target,
                target_kind: kind,
                name: name.clone(),
                tagger: Some(self.signature(repo, "COMMITTER")?),
                message: clean_message(message),
            };
            repo.odb.write(ObjectKind::Tag, &tag.to_bytes())?
        } else {
            target
        };
        repo.refs.write(&full, &id)?;
        Ok(0)
    }

    // ---- remote -----------------------------------------------------------------

    fn remote(&mut self, repo: &Repo<'_>, a: &crate::cmd::args::Parsed) -> Result<i32> {
        let mut config = repo.config()?;
        let remotes = || -> Vec<String> {
            let mut names: Vec<String> = config
                .entries()
                .into_iter()
                .filter_map(|(k, _)| {
                    k.strip_prefix("remote.")
                        .and_then(|r| r.rsplit_once('.'))
                        .map(|(n, _)| n.to_string())
                })
                .collect();
            names.dedup();
            let mut seen = HashSet::new();
            names.retain(|n| seen.insert(n.clone()));
            names.sort();
            names
        };
        let url_key = |name: &str| Key::parse(&format!("remote.{name}.url"));
        let ops: Vec<&str> = a.operands.iter().map(String::as_str).collect();
        match ops.as_slice() {
            [] => {
                for name in remotes() {
                    if a.has("verbose") {
                        let url = config.get(&url_key(&name)?).unwrap_or_default();
                        self.say(&format!("{name}\t{url} (fetch)\n{name}\t{url} (push)\n"));
                    } else {
                        self.say(&format!("{name}\n"));
                    }
                }
                Ok(0)
            }
            ["add", name, url] => {
                if remotes().iter().any(|r| r == name) {
                    self.err(&format!("error: remote {name} already exists.\n"));
                    return Ok(3);
                }
                if !valid_name(name) {
                    self.err(&format!("error: '{name}' is not a valid remote name\n"));
                    return Ok(128);
                }
                config.set(&url_key(name)?, url);
                config.set(
                    &Key::parse(&format!("remote.{name}.fetch"))?,
                    &format!("+refs/heads/*:refs/remotes/{name}/*"),
                );
                repo.save_config(&config)?;
                Ok(0)
            }
            ["remove" | "rm", name] => {
                if !config.remove_section("remote", Some(name)) {
                    self.err(&format!("error: No such remote: '{name}'\n"));
                    return Ok(2);
                }
                repo.save_config(&config)?;
                for reference in repo.refs.list(&format!("refs/remotes/{name}/"))?.keys() {
                    repo.refs.delete(reference)?;
                }
                Ok(0)
            }
            ["get-url", name] => match config.get(&url_key(name)?) {
                Some(url) => {
                    self.say(&format!("{url}\n"));
                    Ok(0)
                }
                None => {
                    self.err(&format!("error: No such remote '{name}'\n"));
                    Ok(2)
                }
            },
            ["set-url", name, url] => {
                if config.get(&url_key(name)?).is_none() {
                    self.err(&format!("error: No such remote '{name}'\n"));
                    return Ok(2);
                }
                config.set(&url_key(name)?, url);
                repo.save_config(&config)?;
                Ok(0)
            }
            _ => Err(fatal(
                "stead: this form of git remote is not in the light shell's git",
            )),
        }
    }

    // ---- stash ------------------------------------------------------------------

    /// `WIP on main: abc1234 subject`'s `main: abc1234 subject` part.
    fn stash_base(&self, repo: &Repo<'_>, head: &ObjectId) -> Result<String> {
        let branch = match repo.refs.head()? {
            Head::Branch(_) => repo.refs.head()?.branch().unwrap_or_default().to_string(),
            Head::Detached(_) => "(no branch)".to_string(),
        };
        let subject = repo.commit(head)?.subject();
        Ok(format!("{branch}: {} {subject}", self.abbrev(repo, head)))
    }

    /// The stash's reflog lines, oldest first: (old, new, message).
    fn stash_log(&self, repo: &Repo<'_>) -> Result<Vec<(String, ObjectId, String)>> {
        let path = files::join(&repo.git_dir, "logs/refs/stash");
        let text = files::read_optional(self.files, &path)
            .at(&path)?
            .unwrap_or_default();
        let mut out = Vec::new();
        for line in String::from_utf8_lossy(&text).lines() {
            let (head, message) = line.split_once('\t').unwrap_or((line, ""));
            let mut words = head.split(' ');
            let old = words.next().unwrap_or_default().to_string();
            let new = words
                .next()
                .and_then(|w| ObjectId::from_hex(w.as_bytes()).ok());
            let Some(new) = new else {
                return Err(Error::Corrupt(format!("{path}: bad line: {line}")));
            };
            out.push((
                format!("{old} {new} {}", &head[old.len() + 1 + 40 + 1..]),
                new,
                message.to_string(),
            ));
        }
        Ok(out)
    }

    fn stash(&mut self, repo: &Repo<'_>, a: &crate::cmd::args::Parsed) -> Result<i32> {
        let ops: Vec<&str> = a.operands.iter().map(String::as_str).collect();
        match ops.as_slice() {
            [] | ["push"] => self.stash_push(repo, a),
            ["list"] => {
                for (i, (_, _, message)) in self.stash_log(repo)?.iter().rev().enumerate() {
                    self.say(&format!("stash@{{{i}}}: {message}\n"));
                }
                Ok(0)
            }
            [sub, rest @ ..] => {
                let given = rest.first().copied();
                let n = given
                    .map_or(Some(0), stash_index)
                    .ok_or_else(|| fatal("bad stash reference"))?;
                let log = self.stash_log(repo)?;
                if log.is_empty() {
                    self.err("No stash entries found.\n");
                    return Ok(1);
                }
                let Some(at) = log.len().checked_sub(n + 1) else {
                    self.err(&format!("error: stash@{{{n}}} is not a valid reference\n"));
                    return Ok(1);
                };
                let id = log[at].1;
                if *sub != "drop" {
                    let status = self.stash_apply(repo, &id, a.has("quiet"))?;
                    if status != 0 || *sub == "apply" {
                        if status != 0 && *sub == "pop" {
                            self.err("The stash entry is kept in case you need it again.\n");
                        }
                        return Ok(status);
                    }
                }
                self.stash_drop(repo, log, at)?;
                let name = given.map_or("refs/stash@{0}".to_string(), str::to_string);
                self.say(&format!("Dropped {name} ({id})\n"));
                Ok(0)
            }
        }
    }

    fn stash_push(&mut self, repo: &Repo<'_>, a: &crate::cmd::args::Parsed) -> Result<i32> {
        let Some(head) = repo.refs.head_id()? else {
            return Err(fatal(
                "stead: git stash before the first commit is not in the light shell's git",
            ));
        };
        let (status, index) = self.compute_status(repo, Untracked::No)?;
        if status.staged.is_empty() && status.unstaged.is_empty() && status.renamed.is_empty() {
            self.say("No local changes to save\n");
            return Ok(0);
        }
        if !status.unmerged.is_empty() {
            return Err(fatal(
                "stead: git stash during a merge is not in the light shell's git",
            ));
        }
        let base = self.stash_base(repo, &head)?;
        let who = self.signature(repo, "COMMITTER")?;
        let author = self.signature(repo, "AUTHOR")?;
        let staged = Repo::index_files(&index);
        let index_commit = Commit {
            tree: repo.write_tree(&staged)?,
            parents: vec![head],
            author: author.clone(),
            committer: who.clone(),
            extra: Vec::new(),
            message: format!("index on {base}\n"),
        };
        let index_id = repo
            .odb
            .write(ObjectKind::Commit, &index_commit.to_bytes())?;
        // The worktree: the index with the tracked files' current content.
        let mut work = staged.clone();
        for (path, change) in &status.unstaged {
            match change {
                Change::Deleted => {
                    work.remove(path);
                }
                _ => {
                    let abs = repo.abs(path);
                    let meta = self.files.stat(&abs).at(&abs)?;
                    let (mode, data) = worktree::worktree_blob(repo, path, &meta)?;
                    work.insert(
                        path.clone(),
                        (mode, repo.odb.write(ObjectKind::Blob, &data)?),
                    );
                }
            }
        }
        let message = match a.value("message") {
            Some(m) => format!("On {}: {m}", base.split(':').next().unwrap_or_default()),
            None => format!("WIP on {base}"),
        };
        let work_commit = Commit {
            tree: repo.write_tree(&work)?,
            parents: vec![head, index_id],
            author,
            committer: who,
            extra: Vec::new(),
            // git writes the stash's own message without a final newline.
            message: message.clone(),
        };
        let work_id = repo
            .odb
            .write(ObjectKind::Commit, &work_commit.to_bytes())?;
        let old = repo.refs.resolve("refs/stash")?;
        repo.refs.write("refs/stash", &work_id)?;
        self.write_reflog(repo, "refs/stash", old, &work_id, &message)?;
        let head_tree = self.head_files(repo)?;
        self.hard_reset(repo, &head_tree)?;
        if !a.has("quiet") {
            self.say(&format!(
                "Saved working directory and index state {message}\n"
            ));
        }
        Ok(0)
    }

    /// Puts stash `id`'s changes back: the worktree's as unstaged
    /// changes, files it had added to the index as added. Refuses (nothing
    /// changed) when a local change would be overwritten; leaves a stash
    /// whose base differs from `HEAD` at its paths to the computer's git.
    fn stash_apply(&mut self, repo: &Repo<'_>, id: &ObjectId, quiet: bool) -> Result<i32> {
        let work = repo.commit(id)?;
        let [base_id, index_id] = work.parents[..] else {
            return Err(fatal(format!("'{id}' is not a stash-like commit")));
        };
        let base = repo.commit_files(Some(&base_id))?;
        let staged_then = repo.commit_files(Some(&index_id))?;
        let worked = repo.flatten(&work.tree)?;
        let head = self.head_files(repo)?;
        let changes = changed_paths(&base, &worked);
        if changes.iter().any(|(p, _)| head.get(p) != base.get(p)) {
            return Err(fatal("stead: applying a stash onto a different commit (a merge) is not in the light shell's git"));
        }
        let (status, mut index) = self.compute_status(repo, Untracked::All)?;
        let dirty: HashSet<&str> = status
            .staged
            .iter()
            .chain(status.unstaged.iter())
            .map(|(p, _)| p.as_str())
            .collect();
        let untracked: HashSet<&str> = status.untracked.iter().map(String::as_str).collect();
        let local: Vec<&String> = changes
            .iter()
            .map(|(p, _)| p)
            .filter(|p| dirty.contains(p.as_str()))
            .collect();
        if !local.is_empty() {
            self.err(
                "error: Your local changes to the following files would be overwritten by merge:\n",
            );
            for p in &local {
                self.err(&format!("\t{p}\n"));
            }
            self.err("Please commit your changes or stash them before you merge.\nAborting\n");
            // git shows where things stand after the refused merge.
            if !quiet {
                let (status, _) = self.compute_status(repo, Untracked::Normal)?;
                let text = self.long_status(repo, &status)?;
                self.say(&text);
            }
            return Ok(1);
        }
        let clobbered: Vec<&String> = changes
            .iter()
            .map(|(p, _)| p)
            .filter(|p| untracked.contains(p.as_str()))
            .collect();
        if !clobbered.is_empty() {
            for p in &clobbered {
                self.err(&format!("{p} already exists, no checkout\n"));
            }
            self.err("error: could not restore untracked files from stash\n");
            return Ok(1);
        }
        for (path, change) in &changes {
            match change {
                Change::Deleted => {
                    let abs = repo.abs(path);
                    match self.files.remove(&abs) {
                        Ok(()) | Err(FileError::NotFound) => {}
                        Err(e) => return Err(e).at(&abs),
                    }
                    // The deletion stays unstaged, as git leaves it.

                    self.prune_dirs(repo, path);
                }
                _ => {
                    let (mode, blob) = worked[path];
                    self.write_worktree_file(repo, path, mode, &blob)?;
                    // A file the stash had added stays added.
                    if !base.contains_key(path) {
                        if let Some((m, i)) = staged_then.get(path) {
                            let abs = repo.abs(path);
                            let meta = self.files.stat(&abs).at(&abs)?;
                            index.upsert(IndexEntry::new(
                                path.clone(),
                                *m,
                                *i,
                                meta.size,
                                meta.mtime_ms,
                            ));
                        }
                    }
                }
            }
        }
        repo.save_index(&index)?;
        if !quiet {
            let (status, _) = self.compute_status(repo, Untracked::Normal)?;
            let text = self.long_status(repo, &status)?;
            self.say(&text);
        }
        Ok(0)
    }

    /// Removes entry `at` (oldest first) of the stash's reflog.
    fn stash_drop(
        &self,
        repo: &Repo<'_>,
        mut log: Vec<(String, ObjectId, String)>,
        at: usize,
    ) -> Result<()> {
        log.remove(at);
        let path = files::join(&repo.git_dir, "logs/refs/stash");
        match log.last() {
            None => {
                repo.refs.delete("refs/stash")?;
                match self.files.remove(&path) {
                    Ok(()) | Err(FileError::NotFound) => Ok(()),
                    Err(e) => Err(e).at(&path),
                }
            }
            Some((_, newest, _)) => {
                repo.refs.write("refs/stash", newest)?;
                let text: String = log
                    .iter()
                    .map(|(head, _, message)| format!("{head}\t{message}\n"))
                    .collect();
                self.files.write(&path, text.as_bytes()).at(&path)
            }
        }
    }

    // ---- rev-parse / ls-files / config --------------------------------------------

    fn rev_parse(&mut self, repo: &Repo<'_>, a: &crate::cmd::args::Parsed) -> Result<i32> {
        for (opt, _) in &a.opts {
            match *opt {
                "show-toplevel" => {
                    let line = format!("{}\n", repo.worktree);
                    self.say(&line);
                }
                "git-dir" => {
                    let text = if self.cwd == repo.worktree {
                        ".git".to_string()
                    } else {
                        repo.git_dir.clone()
                    };
                    self.say(&format!("{text}\n"));
                }
                "is-inside-work-tree" => self.say("true\n"),
                "show-prefix" => {
                    let prefix = self.prefix(repo);
                    self.say(&format!("{prefix}\n"));
                }
                _ => {}
            }
        }
        if a.has("verify") && a.operands.len() != 1 {
            return Err(fatal("Needed a single revision"));
        }
        for spec in &a.operands {
            if a.has("abbrev-ref") {
                let text = match spec.as_str() {
                    "HEAD" | "@" => match repo.refs.head()? {
                        Head::Branch(b) if repo.refs.resolve(&b)?.is_some() => {
                            b.trim_start_matches("refs/heads/").to_string()
                        }
                        Head::Branch(_) => {
                            self.say("HEAD\n");
                            return Err(fatal("ambiguous argument 'HEAD': unknown revision or path not in the working tree.\nUse '--' to separate paths from revisions, like this:\n'git <command> [<revision>...] -- [<file>...]'"));
                        }
                        Head::Detached(_) => "HEAD".to_string(),
                    },
                    other => other.to_string(),
                };
                self.say(&format!("{text}\n"));
                continue;
            }
            let id = match spec.split_once(':') {
                Some((r, path)) => {
                    let commit = repo.commit_of(if r.is_empty() { "HEAD" } else { r })?;
                    repo.flatten(&repo.commit(&commit)?.tree)?
                        .get(path)
                        .map(|(_, id)| *id)
                }
                None => repo.rev_parse(spec)?,
            };
            match id {
                Some(id) => {
                    let text = match a.value("short") {
                        Some(n) => repo.odb.abbreviate(&id, n.parse().unwrap_or(7))?,
                        None if a.has("short") => self.abbrev(repo, &id),
                        None => id.to_string(),
                    };
                    self.say(&format!("{text}\n"));
                }
                None if a.has("verify") => {
                    if a.has("quiet") {
                        return Ok(1);
                    }
                    return Err(fatal("Needed a single revision"));
                }
                None => {
                    self.say(&format!("{spec}\n"));
                    return Err(fatal(format!("ambiguous argument '{spec}': unknown revision or path not in the working tree.\nUse '--' to separate paths from revisions, like this:\n'git <command> [<revision>...] -- [<file>...]'")));
                }
            }
        }
        Ok(0)
    }

    fn ls_files(&mut self, repo: &Repo<'_>, a: &crate::cmd::args::Parsed) -> Result<i32> {
        let (index, _) = repo.index()?;
        let prefix = self.prefix(repo);
        let filters: Vec<String> = a
            .operands
            .iter()
            .map(|p| self.rel(repo, p))
            .collect::<Result<_>>()?;
        for e in &index.entries {
            if !e.path.starts_with(&prefix) {
                continue;
            }
            if !filters.is_empty()
                && !filters
                    .iter()
                    .any(|q| q.is_empty() || e.path == *q || e.path.starts_with(&format!("{q}/")))
            {
                continue;
            }
            let shown = &e.path[prefix.len()..];
            if a.has("stage") {
                self.say(&format!("{:o} {} {}\t{shown}\n", e.mode, e.id, e.stage));
            } else {
                self.say(&format!("{shown}\n"));
            }
        }
        Ok(0)
    }

    fn config(&mut self, repo: &Repo<'_>, a: &crate::cmd::args::Parsed) -> Result<i32> {
        let mut config = repo.config()?;
        if a.has("list") {
            if !a.has("local") {
                self.say(&format!(
                    "user.name={DEFAULT_NAME}\nuser.email={DEFAULT_EMAIL}\n"
                ));
            }
            for (k, v) in config.entries() {
                self.say(&format!("{k}={v}\n"));
            }
            return Ok(0);
        }
        let ops = &a.operands;
        let Some(name) = ops.first() else {
            return Err(fatal(
                "stead: git config without a key is not in the light shell's git",
            ));
        };
        let key = match Key::parse(name) {
            Ok(key) => key,
            Err(Error::Fatal(message)) => {
                self.err(&format!("error: {message}\n"));
                return Ok(if message.starts_with("key does not contain") {
                    2
                } else {
                    1
                });
            }
            Err(e) => return Err(e),
        };
        if a.has("unset") {
            if !config.unset(&key) {
                return Ok(5);
            }
            repo.save_config(&config)?;
            return Ok(0);
        }
        match ops.as_slice() {
            [_] => {
                let mut values = config.get_all(&key);
                if values.is_empty() && !a.has("local") {
                    values.extend(self.global(&name.to_ascii_lowercase()));
                }
                if values.is_empty() {
                    return Ok(1);
                }
                if a.has("get-all") {
                    for v in values {
                        self.say(&format!("{v}\n"));
                    }
                } else {
                    let last = values.pop().expect("not empty");
                    self.say(&format!("{last}\n"));
                }
                Ok(0)
            }
            [_, value] if !a.has("get") && !a.has("get-all") => {
                if a.has("add") {
                    config.add(&key, value);
                } else {
                    config.set(&key, value);
                }
                repo.save_config(&config)?;
                Ok(0)
            }
            _ => Err(fatal(
                "stead: this form of git config is not in the light shell's git",
            )),
        }
    }
}

/// `stash@{N}` or `N`: the entry's number.
/// How status names a conflicted path by the stages it has (1: base,
/// 2: ours, 4: theirs): its short code and its long label.
fn unmerged_label(stages: u8) -> ((char, char), &'static str) {
    match stages {
        1 => (('D', 'D'), "both deleted"),
        2 => (('A', 'U'), "added by us"),
        3 => (('U', 'D'), "deleted by them"),
        4 => (('U', 'A'), "added by them"),
        5 => (('D', 'U'), "deleted by us"),
        6 => (('A', 'A'), "both added"),
        _ => (('U', 'U'), "both modified"),
    }
}

pub(crate) fn stash_index(text: &str) -> Option<usize> {
    let inner = text
        .strip_prefix("stash@{")
        .and_then(|t| t.strip_suffix('}'))
        .unwrap_or(text);
    inner.parse().ok()
}

/// How `git add` stages, and what it did (for `-v` and `-n`).
struct Adding {
    dry: bool,
    filemode: bool,
    changes: Vec<String>,
}

/// Paths that differ between two flat trees, by path.
fn changed_paths(before: &Flat, after: &Flat) -> Vec<(String, Change)> {
    let mut out = Vec::new();
    for (path, entry) in after {
        match before.get(path) {
            None => out.push((path.clone(), Change::Added)),
            Some(old) if old != entry => out.push((path.clone(), Change::Modified)),
            Some(_) => {}
        }
    }
    for path in before.keys() {
        if !after.contains_key(path) {
            out.push((path.clone(), Change::Deleted));
        }
    }
    out.sort();
    out
}

/// Renames as (old path, new path).
type Renames = Vec<(String, String)>;

/// Deleted/added pairs with the same blob (git's 100% renames), and the
/// changes left.
fn exact_renames(
    before: &Flat,
    after: &Flat,
    changes: Vec<(String, Change)>,
) -> (Renames, Vec<(String, Change)>) {
    let mut added: BTreeMap<ObjectId, Vec<String>> = BTreeMap::new();
    for (p, c) in &changes {
        if *c == Change::Added {
            added.entry(after[p].1).or_default().push(p.clone());
        }
    }
    let mut renames = Vec::new();
    let mut renamed: HashSet<String> = HashSet::new();
    for (p, c) in &changes {
        if *c != Change::Deleted {
            continue;
        }
        let (mode, id) = before[p];
        if let Some(candidates) = added.get_mut(&id) {
            if let Some(i) = candidates.iter().position(|n| after[n].0 == mode) {
                let to = candidates.remove(i);
                renamed.insert(p.clone());
                renamed.insert(to.clone());
                renames.push((p.clone(), to));
            }
        }
    }
    let rest = changes
        .into_iter()
        .filter(|(p, _)| !renamed.contains(p))
        .collect();
    (renames, rest)
}

/// Whether `path` is `dir` itself or lies beneath it; every path lies
/// beneath the repository's root (`""`).
fn at_or_under(path: &str, dir: &str) -> bool {
    dir.is_empty()
        || path == dir
        || path
            .strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
}
