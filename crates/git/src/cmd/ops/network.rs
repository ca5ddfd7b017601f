//! The subcommands that fetch from a remote over smart HTTP: `clone`,
//! `fetch` and `pull` (which merges, `merge.rs`, or rebases,
//! `rebase.rs`, what its fetch marked for merging), with git's output
//! and exit statuses; `push` is `push.rs`. The protocol is
//! `crate::transport`'s; this is what git does around it: which refs to
//! want and have (git's `get_ref_map`: refspecs matched by git's rules,
//! tags followed), where fetched refs go and which updates git refuses,
//! what is written to `.git` (in that order: pack, shallow boundary,
//! refs, `FETCH_HEAD`, config, then the worktree), and what is printed.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use gix_hash::ObjectId;
use gix_object::Kind as ObjectKind;

use super::merge::{Ff, Options, Theirs};
use super::{fatal, Run};
use crate::cmd::args::Parsed;
use crate::cmd::Command;
use crate::config::Key;
use crate::error::{At, Error, Result};
use crate::files::{self, FileError, Kind};
use crate::packfile;
use crate::refs::valid_name;
use crate::repo::{Flat, Repo};
use crate::transport::{FetchRequest, Http, Remote, RemoteRef, Session, TransportError};

/// How many of our own commits a fetch offers as `have`s.
const MAX_HAVES: usize = 256;

/// Width of the `a..b` column in fetch and push lines (two 7-digit
/// abbreviations and the dots, as git pads it).
const SUMMARY_WIDTH: usize = 17;

pub(super) fn transport(error: TransportError) -> Error {
    match error {
        TransportError::Said { said, error } => Error::Remote {
            said,
            message: error.to_string(),
        },
        error => Error::Fatal(error.to_string()),
    }
}

/// The name git gives a clone of `url`: its last path component without
/// `.git` (`https://host/a/b.git/` → `b`).
pub(crate) fn clone_dir_name(url: &str) -> String {
    let trimmed = url.trim_end_matches('/');
    let trimmed = trimmed.strip_suffix("/.git").unwrap_or(trimmed);
    let last = trimmed.rsplit(['/', ':']).next().unwrap_or(trimmed);
    let name = last.strip_suffix(".git").unwrap_or(last);
    if name.is_empty() {
        "repo".to_string()
    } else {
        name.to_string()
    }
}

/// A URL as `From` lines show it: no trailing slash or `.git`.
fn shown_url(url: &str) -> &str {
    let url = url.trim_end_matches('/');
    url.strip_suffix(".git").unwrap_or(url)
}

/// `refs/heads/main` → `main` (for display).
pub(super) fn short(name: &str) -> &str {
    name.strip_prefix("refs/heads/")
        .or_else(|| name.strip_prefix("refs/tags/"))
        .or_else(|| name.strip_prefix("refs/remotes/"))
        .unwrap_or(name)
}

/// git's rules for what a short ref name may stand for
/// (`ref_rev_parse_rules`), in their order of preference.
const REF_RULES: [(&str, &str); 6] = [
    ("", ""),
    ("refs/", ""),
    ("refs/tags/", ""),
    ("refs/heads/", ""),
    ("refs/remotes/", ""),
    ("refs/remotes/", "/HEAD"),
];

/// Which of git's rules lets `pattern` name ref `name` (its index in
/// [`REF_RULES`], lower preferred), as git's `refname_match`.
pub(super) fn refname_match(pattern: &str, name: &str) -> Option<usize> {
    REF_RULES.iter().position(|(prefix, suffix)| {
        name.strip_prefix(prefix)
            .and_then(|rest| rest.strip_suffix(suffix))
            == Some(pattern)
    })
}

/// The ref of `names` that `pattern` names best, as git's
/// `find_ref_by_name_abbrev` picks it for a fetch.
pub(super) fn best_ref<'n>(
    pattern: &str,
    names: impl IntoIterator<Item = &'n str>,
) -> Option<&'n str> {
    names
        .into_iter()
        .filter_map(|name| refname_match(pattern, name).map(|rule| (rule, name)))
        .min_by_key(|(rule, _)| *rule)
        .map(|(_, name)| name)
}

/// What a push refspec side names among some refs, as git's
/// `count_refspec_match` decides: one full match, or one of the weak
/// matches (outside `refs/heads/` and `refs/tags/`, and not spelled
/// from `refs/` or its top level) when there is no full one.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Matched<'n> {
    None,
    One(&'n str),
    Many,
}

pub(super) fn count_refspec_match<'n>(
    pattern: &str,
    names: impl IntoIterator<Item = &'n str>,
) -> Matched<'n> {
    let (mut strong, mut weak): (Vec<&str>, Vec<&str>) = (Vec::new(), Vec::new());
    for name in names {
        if refname_match(pattern, name).is_none() {
            continue;
        }
        let spelled_out = name.len() == pattern.len() || name.len() == pattern.len() + 5;
        if spelled_out || name.starts_with("refs/heads/") || name.starts_with("refs/tags/") {
            strong.push(name);
        } else {
            weak.push(name);
        }
    }
    let chosen = if strong.is_empty() { weak } else { strong };
    match chosen.as_slice() {
        [] => Matched::None,
        [one] => Matched::One(one),
        _ => Matched::Many,
    }
}

/// One fetch refspec: `+refs/heads/*:refs/remotes/origin/*`, an exact
/// `src:dst`, or a source alone (`main`: fetched into `FETCH_HEAD` only).
struct Refspec {
    force: bool,
    src: String,
    /// Empty: stored nowhere but `FETCH_HEAD`.
    dst: String,
}

impl Refspec {
    fn parse(text: &str) -> Refspec {
        let (force, text) = match text.strip_prefix('+') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (src, dst) = text.split_once(':').unwrap_or((text, ""));
        Refspec {
            force,
            src: src.to_string(),
            dst: dst.to_string(),
        }
    }

    fn is_pattern(&self) -> bool {
        self.src.contains('*')
    }

    /// The local ref this refspec's destination names, as git's
    /// `get_local_ref` spells a short one out (`x` → `refs/heads/x`).
    fn local(dst: &str) -> Option<String> {
        if dst.is_empty() {
            None
        } else if dst.starts_with("refs/") {
            Some(dst.to_string())
        } else if ["heads/", "tags/", "remotes/"]
            .iter()
            .any(|p| dst.starts_with(p))
        {
            Some(format!("refs/{dst}"))
        } else {
            Some(format!("refs/heads/{dst}"))
        }
    }

    /// Where remote ref `name` goes locally under this refspec, if it
    /// matches exactly or by its pattern (`Some(None)`: matched, stored
    /// nowhere).
    fn map(&self, name: &str) -> Option<Option<String>> {
        match self.src.split_once('*') {
            Some((sp, ss)) => {
                let middle = name.strip_prefix(sp)?.strip_suffix(ss)?;
                Some(Refspec::local(&self.dst.replacen('*', middle, 1)))
            }
            None if name == self.src => Some(Refspec::local(&self.dst)),
            None => None,
        }
    }

    /// The remote refs this refspec fetches, with where each goes: every
    /// match of a pattern, else the ref its source names best.
    fn resolve<'r>(&self, refs: &'r [RemoteRef]) -> Vec<(&'r RemoteRef, Option<String>)> {
        if self.is_pattern() {
            return refs
                .iter()
                .filter_map(|r| Some((r, self.map(&r.name)?)))
                .collect();
        }
        best_ref(&self.src, refs.iter().map(|r| r.name.as_str()))
            .and_then(|name| refs.iter().find(|r| r.name == name))
            .map(|r| vec![(r, Refspec::local(&self.dst))])
            .unwrap_or_default()
    }

    /// The prefixes `ls-refs` is asked for: a pattern's fixed part, or
    /// every name git's rules let the source stand for.
    fn prefixes(&self) -> Vec<String> {
        match self.src.split_once('*') {
            Some((prefix, _)) => vec![prefix.to_string()],
            None => REF_RULES
                .iter()
                .map(|(prefix, suffix)| format!("{prefix}{}{suffix}", self.src))
                .collect(),
        }
    }
}

/// Which tags a fetch takes: those pointing into what it fetched (git's
/// default), every tag the server has (`--tags`), or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tags {
    Following,
    All,
    /// `--no-tags`.
    Off,
}

/// Who fetches: `fetch` itself, or `pull` (which lets git's fetch
/// update the current branch, `--update-head-ok`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Caller {
    Fetch,
    Pull,
}

/// How a fetched ref goes into `FETCH_HEAD` (git's `fetch_head_status`),
/// in the order git writes them: for merging, not for merging, or not at
/// all (a remote-tracking ref updated on the side).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum FetchHead {
    Merge,
    NotForMerge,
    Ignore,
}

/// One ref a fetch takes (git's `ref_map` entry): the remote ref, the
/// local ref it is stored as (none: `FETCH_HEAD` only), whether that may
/// move other than forward.
struct Wanted<'r> {
    remote: &'r RemoteRef,
    local: Option<String>,
    force: bool,
    status: FetchHead,
}

impl<'r> Wanted<'r> {
    fn new(remote: &'r RemoteRef, local: Option<String>, force: bool, status: FetchHead) -> Self {
        Wanted {
            remote,
            local,
            force,
            status,
        }
    }

    /// What `FETCH_HEAD` and the fetch's lines call the remote ref:
    /// `branch`/`tag`/`remote-tracking branch` and its short name; the
    /// whole name of another ref; nothing for `HEAD`.
    fn kind_and_what(&self) -> (&'static str, &'r str) {
        let name = self.remote.name.as_str();
        if name == "HEAD" {
            return ("", "");
        }
        for (prefix, kind) in [
            ("refs/heads/", "branch"),
            ("refs/tags/", "tag"),
            ("refs/remotes/", "remote-tracking branch"),
        ] {
            if let Some(what) = name.strip_prefix(prefix) {
                return (kind, what);
            }
        }
        ("", name)
    }
}

/// The refs a fetch updated and their lines, whether one was refused,
/// and what it fetched for merging (id, how a merge message names it,
/// the remote ref).
#[derive(Default)]
struct FetchResult {
    lines: Vec<Shown>,
    /// The widest remote ref name among the lines of stored refs.
    width: usize,
    failed: bool,
    merge: Vec<(ObjectId, String, String)>,
}

/// Drops the entries storing into a local ref an earlier one stores
/// into, as git's `ref_remove_duplicates` does: its warning when the
/// earlier one was asked for and the later one only configured, its
/// refusal when two refs would go to one.
fn remove_duplicates<'r>(map: Vec<Wanted<'r>>, run: &mut Run<'_>) -> Result<Vec<Wanted<'r>>> {
    let mut kept: Vec<Wanted<'r>> = Vec::new();
    for w in map {
        let Some(earlier) = kept
            .iter()
            .find(|k| k.local.is_some() && k.local == w.local)
        else {
            kept.push(w);
            continue;
        };
        if earlier.remote.name != w.remote.name {
            let local = w.local.as_deref().unwrap_or_default();
            let (a, b) = (&earlier.remote.name, &w.remote.name);
            match (earlier.status, w.status) {
                (FetchHead::Ignore, FetchHead::Ignore) => {
                    return Err(fatal(format!("{local} tracks both {a} and {b}")))
                }
                (_, FetchHead::Ignore) => {
                    run.err(&format!("warning: {local} usually tracks {b}, not {a}\n"))
                }
                _ => return Err(fatal(format!("Cannot fetch both {a} and {b} to {local}"))),
            }
        }
    }
    Ok(kept)
}

/// Whether git logs updates of ref `name` (`core.logAllRefUpdates`'s
/// default in a repository with a worktree).
fn logs_updates(name: &str) -> bool {
    ["refs/heads/", "refs/remotes/", "refs/notes/"]
        .iter()
        .any(|p| name.starts_with(p))
        || name == "HEAD"
}

/// One line of fetch's or push's report, before formatting.
pub(super) struct Shown {
    pub(super) code: char,
    pub(super) summary: String,
    pub(super) from: String,
    pub(super) to: String,
    pub(super) note: Option<String>,
}

impl Shown {
    /// As fetch prints it: the source column padded to `width`.
    fn fetch_line(&self, width: usize) -> String {
        let note = self
            .note
            .as_ref()
            .map(|n| format!("  ({n})"))
            .unwrap_or_default();
        format!(
            " {} {:<SUMMARY_WIDTH$} {:<width$} -> {}{note}\n",
            self.code, self.summary, self.from, self.to
        )
    }

    /// As push prints it (a deletion names only the remote ref).
    pub(super) fn push_line(&self) -> String {
        let note = self
            .note
            .as_ref()
            .map(|n| format!(" ({n})"))
            .unwrap_or_default();
        if self.from.is_empty() {
            return format!(
                " {} {:<SUMMARY_WIDTH$} {}{note}\n",
                self.code, self.summary, self.to
            );
        }
        format!(
            " {} {:<SUMMARY_WIDTH$} {} -> {}{note}\n",
            self.code, self.summary, self.from, self.to
        )
    }
}

impl<'a> Run<'a> {
    pub(super) fn http(&self) -> Result<&'a dyn Http> {
        self.net
            .ok_or_else(|| fatal("stead: this git has no network (the light shell gave it none)"))
    }

    /// Removes `path` and everything under it.
    fn remove_tree(&self, path: &str) -> Result<()> {
        match self.files.stat(path) {
            Err(FileError::NotFound) => return Ok(()),
            Err(e) => return Err(e).at(path),
            Ok(meta) if meta.kind == Kind::Dir => {
                for entry in self.files.list(path).at(path)? {
                    self.remove_tree(&files::join(path, &entry.name))?;
                }
            }
            Ok(_) => {}
        }
        self.files.remove(path).at(path)
    }

    /// Our commits to offer as `have`s: the tips of every local ref and
    /// their ancestors, newest tips first, at most [`MAX_HAVES`].
    fn haves(&self, repo: &Repo<'_>) -> Result<Vec<ObjectId>> {
        let mut todo: Vec<ObjectId> = Vec::new();
        for id in repo.refs.list("refs/")?.into_values() {
            if let Ok((ObjectKind::Commit, commit)) = repo.peel(id) {
                todo.push(commit);
            }
        }
        if let Some(head) = repo.refs.head_id()? {
            todo.push(head);
        }
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        while let Some(id) = todo.pop() {
            if out.len() >= MAX_HAVES {
                break;
            }
            if seen.insert(id) && repo.odb.contains(&id)? {
                out.push(id);
                todo.extend(repo.commit(&id)?.parents);
            }
        }
        Ok(out)
    }

    /// Fetches `wants` into `repo`: the pack stored, the shallow boundary
    /// updated. Nothing is written when the server's answer is bad.
    fn fetch_objects(
        &self,
        repo: &Repo<'_>,
        session: &Session<'_, '_>,
        wants: Vec<ObjectId>,
        depth: Option<u32>,
    ) -> Result<()> {
        if wants.is_empty() {
            return Ok(());
        }
        let request = FetchRequest {
            wants,
            haves: self.haves(repo)?,
            shallow: repo.shallow()?.iter().copied().collect(),
            depth,
        };
        let fetched = session.fetch(&request).map_err(transport)?;
        packfile::store(self.files, &repo.git_dir, &fetched.pack)?;
        if !fetched.shallow.is_empty() || !fetched.unshallow.is_empty() {
            let mut shallow: Vec<ObjectId> = repo.shallow()?.iter().copied().collect();
            shallow.retain(|id| !fetched.unshallow.contains(id));
            shallow.extend(
                fetched
                    .shallow
                    .iter()
                    .filter(|id| !shallow.contains(id))
                    .collect::<Vec<_>>(),
            );
            shallow.sort();
            let path = files::join(&repo.git_dir, "shallow");
            if shallow.is_empty() {
                self.files.remove(&path).at(&path)?;
            } else {
                let text: String = shallow.iter().map(|id| format!("{id}\n")).collect();
                self.files.write(&path, text.as_bytes()).at(&path)?;
            }
        }
        Ok(())
    }

    // ---- clone -------------------------------------------------------------

    pub(crate) fn clone(&mut self, command: &Command) -> Result<i32> {
        let a = &command.args;
        let (url, dir_operand) = match a.operands.as_slice() {
            [url] => (url.clone(), clone_dir_name(url)),
            [url, dir] => (url.clone(), dir.clone()),
            _ => return Err(fatal("You must specify a repository to clone.")),
        };
        let dir = if dir_operand.starts_with('/') {
            super::normalize(&dir_operand)
        } else {
            super::normalize(&format!("{}/{dir_operand}", self.cwd))
        };
        let created = match self.files.stat(&dir) {
            Err(FileError::NotFound) => true,
            Ok(meta) if meta.kind == Kind::Dir && self.files.list(&dir).at(&dir)?.is_empty() => {
                false
            }
            Ok(_) => {
                return Err(fatal(format!(
                    "destination path '{dir_operand}' already exists and is not an empty directory."
                )))
            }
            Err(e) => return Err(e).at(&dir),
        };
        let quiet = a.has("quiet");
        if !quiet {
            self.err(&format!("Cloning into '{dir_operand}'...\n"));
        }
        let done = self.clone_into(&url, &dir, a);
        if done.is_err() {
            // git removes what a failed clone made.
            if created {
                self.remove_tree(&dir)?;
            } else if let Ok(entries) = self.files.list(&dir) {
                for entry in entries {
                    self.remove_tree(&files::join(&dir, &entry.name))?;
                }
            }
        }
        done
    }

    fn clone_into(&mut self, url: &str, dir: &str, a: &Parsed) -> Result<i32> {
        let http = self.http()?;
        let remote = Remote::new(http, url);
        let session = remote.upload_pack().map_err(transport)?;
        let refs = session
            .list_refs(&["HEAD", "refs/heads/", "refs/tags/"])
            .map_err(transport)?;
        let depth = match a.value("depth") {
            Some(text) => match text.parse::<u32>() {
                Ok(0) | Err(_) => {
                    return Err(fatal(format!("depth {text} is not a positive number")))
                }
                Ok(n) => Some(n),
            },
            None => None,
        };
        let single = depth.is_some() || a.has("single-branch");
        let head = refs.iter().find(|r| r.name == "HEAD");
        let default_branch = head.and_then(|h| h.symref.clone()).or_else(|| {
            let id = head?.id;
            refs.iter()
                .find(|r| r.name.starts_with("refs/heads/") && r.id == id)
                .map(|r| r.name.clone())
        });
        // What HEAD will be: a branch, or (for `--branch TAG`) a commit.
        let chosen: Option<&RemoteRef> = match a.value("branch") {
            Some(name) => Some(
                refs.iter()
                    .find(|r| r.name == format!("refs/heads/{name}"))
                    .or_else(|| refs.iter().find(|r| r.name == format!("refs/tags/{name}")))
                    .ok_or_else(|| {
                        fatal(format!("Remote branch {name} not found in upstream origin"))
                    })?,
            ),
            None => default_branch
                .as_ref()
                .and_then(|b| refs.iter().find(|r| &r.name == b)),
        };
        let heads: Vec<&RemoteRef> = refs
            .iter()
            .filter(|r| r.name.starts_with("refs/heads/"))
            .filter(|r| !single || chosen.is_some_and(|c| c.name == r.name))
            .collect();
        let tags: Vec<&RemoteRef> = refs
            .iter()
            .filter(|r| r.name.starts_with("refs/tags/"))
            .collect();
        let branch_name = match chosen {
            Some(c) if c.name.starts_with("refs/heads/") => short(&c.name).to_string(),
            _ => default_branch
                .as_deref()
                .map(short)
                .unwrap_or("master")
                .to_string(),
        };
        self.files.mkdir_all(dir).at(dir)?;
        Repo::init(self.files, dir, &branch_name)?;
        let mut wants: Vec<ObjectId> = Vec::new();
        // A full clone wants every tag too; a single branch gets the
        // tags pointing into it from the server (`include-tag`).
        let wanted_tags = if single { &[][..] } else { &tags[..] };
        for r in heads.iter().chain(wanted_tags).chain(chosen.iter()) {
            if !wants.contains(&r.id) {
                wants.push(r.id);
            }
        }
        {
            let repo = Repo::open(self.files, dir);
            self.fetch_objects(&repo, &session, wants, depth)?;
        }
        // A fresh view: the new pack is read from here on.
        let repo = Repo::open(self.files, dir);
        let mut packed = String::from("# pack-refs with: peeled fully-peeled sorted \n");
        let mut entries: BTreeMap<String, (ObjectId, Option<ObjectId>)> = BTreeMap::new();
        for r in &heads {
            entries.insert(
                format!("refs/remotes/origin/{}", short(&r.name)),
                (r.id, None),
            );
        }
        for r in wanted_tags {
            entries.insert(r.name.clone(), (r.id, r.peeled));
        }
        // Tags the server sent along are written loose, as git's tag
        // following writes them.
        if single {
            for r in &tags {
                if repo.odb.contains(&r.id)? && !entries.contains_key(&r.name) {
                    repo.refs.write(&r.name, &r.id)?;
                }
            }
        }
        if let Some(c) = chosen.filter(|c| c.name.starts_with("refs/tags/")) {
            entries.insert(c.name.clone(), (c.id, c.peeled));
        }
        for (name, (id, peeled)) in &entries {
            packed.push_str(&format!("{id} {name}\n"));
            if let Some(peeled) = peeled {
                packed.push_str(&format!("^{peeled}\n"));
            }
        }
        if !entries.is_empty() {
            let path = files::join(&repo.git_dir, "packed-refs");
            self.files.write(&path, packed.as_bytes()).at(&path)?;
        }
        // The remote and the branch's upstream, as git configures them.
        let mut config = repo.config()?;
        config.set(&Key::parse("remote.origin.url")?, url);
        let fetch = if single {
            match chosen {
                Some(c) if c.name.starts_with("refs/heads/") => {
                    format!("+{}:refs/remotes/origin/{}", c.name, short(&c.name))
                }
                _ => "+refs/heads/*:refs/remotes/origin/*".to_string(),
            }
        } else {
            "+refs/heads/*:refs/remotes/origin/*".to_string()
        };
        config.set(&Key::parse("remote.origin.fetch")?, &fetch);
        let message = format!("clone: from {url}");
        let Some(chosen) = chosen else {
            repo.save_config(&config)?;
            if !a.has("quiet") {
                self.err("warning: You appear to have cloned an empty repository.\n");
            }
            return Ok(0);
        };
        if chosen.name.starts_with("refs/heads/") {
            config.set(
                &Key::parse(&format!("branch.{branch_name}.remote"))?,
                "origin",
            );
            config.set(
                &Key::parse(&format!("branch.{branch_name}.merge"))?,
                &chosen.name,
            );
        }
        repo.save_config(&config)?;
        let (kind, commit) = repo.peel(chosen.id)?;
        if kind != ObjectKind::Commit {
            return Err(fatal(format!("{} does not point at a commit", chosen.name)));
        }
        if let Some(default) = default_branch
            .as_ref()
            .filter(|d| heads.iter().any(|h| &h.name == *d))
        {
            let path = files::join(&repo.git_dir, "refs/remotes/origin/HEAD");
            let text = format!("ref: refs/remotes/origin/{}\n", short(default));
            self.files.write(&path, text.as_bytes()).at(&path)?;
            self.write_reflog(
                &repo,
                "refs/remotes/origin/HEAD",
                None,
                &chosen.id,
                &message,
            )?;
        }
        if chosen.name.starts_with("refs/heads/") {
            let local = format!("refs/heads/{branch_name}");
            repo.refs.write(&local, &commit)?;
            repo.refs.set_head_branch(&local)?;
            self.write_reflog(&repo, &local, None, &commit, &message)?;
        } else {
            repo.refs.set_head_detached(&commit)?;
        }
        self.write_reflog(&repo, "HEAD", None, &commit, &message)?;
        if a.has("no-checkout") {
            return Ok(0);
        }
        let tree = repo.commit_files(Some(&commit))?;
        self.hard_reset(&repo, &tree)?;
        if !chosen.name.starts_with("refs/heads/") && !a.has("quiet") {
            self.err(&format!(
                "Note: switching to '{commit}'.\n\nYou are in 'detached HEAD' state. You can look around, make experimental\nchanges and commit them, and you can discard any commits you make in this\nstate without impacting any branches by switching back to a branch.\n\nIf you want to create a new branch to retain commits you create, you may\ndo so (now or later) by using -c with the switch command. Example:\n\n  git switch -c <new-branch-name>\n\nOr undo this operation with:\n\n  git switch -\n\nTurn off this advice by setting config variable advice.detachedHead to false\n\n"
            ));
        }
        Ok(0)
    }

    // ---- fetch -------------------------------------------------------------

    /// The remote a command talks to: the operand (a name, or a URL that
    /// names itself), else the current branch's upstream remote, else
    /// `origin`; with its URL.
    pub(super) fn remote_of(
        &self,
        repo: &Repo<'_>,
        operand: Option<&str>,
    ) -> Result<(String, String)> {
        if let Some(url) = operand.filter(|o| is_url(o)) {
            return Ok((url.to_string(), url.to_string()));
        }
        let config = repo.config()?;
        let name = match operand {
            Some(name) => name.to_string(),
            None => repo
                .refs
                .head()?
                .branch()
                .and_then(|b| config.get(&Key::parse(&format!("branch.{b}.remote")).ok()?))
                .unwrap_or_else(|| "origin".to_string()),
        };
        let url = Key::parse(&format!("remote.{name}.url"))
            .ok()
            .and_then(|k| config.get(&k));
        match url {
            Some(url) => Ok((name, url)),
            None => Err(fatal(format!(
                "'{name}' does not appear to be a git repository\nfatal: Could not read from remote repository.\n\nPlease make sure you have the correct access rights\nand the repository exists."
            ))),
        }
    }

    pub(crate) fn fetch(&mut self, repo: &Repo<'_>, a: &Parsed) -> Result<i32> {
        let (name, url) = self.remote_of(repo, a.operands.first().map(String::as_str))?;
        let cmdline = refspec_operands(a);
        // `--tags` and `--no-tags` are one option: the last one counts.
        let tags = a.opts.iter().rev().find_map(|(long, _)| match *long {
            "tags" => Some(Tags::All),
            "no-tags" => Some(Tags::Off),
            _ => None,
        });
        if let Some(status) = self.refuse_pruning(repo, &name)? {
            return Ok(status);
        }
        let Some(result) =
            self.fetch_remote(repo, (&name, &url), &cmdline, (tags, Caller::Fetch))?
        else {
            unreachable!("only a pull's fetch stops without an error")
        };
        self.show_fetch(&url, &result, a.has("quiet"));
        Ok(if result.failed { 1 } else { 0 })
    }

    /// A fetch configured to prune (`remote.<name>.prune`, else
    /// `fetch.prune`) is the computer's: its status, said.
    fn refuse_pruning(&mut self, repo: &Repo<'_>, name: &str) -> Result<Option<i32>> {
        let config = repo.config()?;
        let get = |k: &str| Key::parse(k).ok().and_then(|k| config.get(&k));
        let remote = (!is_url(name))
            .then(|| get(&format!("remote.{name}.prune")))
            .flatten();
        let prune = remote.or_else(|| get("fetch.prune"));
        if prune.as_deref().and_then(crate::config::parse_bool) == Some(false) || prune.is_none() {
            return Ok(None);
        }
        self.err("stead: git fetch that prunes (fetch.prune, remote.<name>.prune) is not in the light shell's git; run it on the computer\n");
        Ok(Some(129))
    }

    fn show_fetch(&mut self, url: &str, result: &FetchResult, quiet: bool) {
        if quiet || result.lines.is_empty() {
            return;
        }
        self.err(&format!("From {}\n", shown_url(url)));
        for line in &result.lines {
            self.err(&line.fetch_line(result.width.max(10)));
        }
    }

    /// Fetches from remote `name` at `url` what git's `get_ref_map`
    /// chooses: the command line's refspecs (and, opportunistically, the
    /// remote-tracking refs the configured ones map them to), else the
    /// configured refspecs with the upstream for merging, else (a URL)
    /// `HEAD`; all tags for `--tags`, else the tags pointing into what
    /// was fetched. Then the objects, the refs as git updates them, and
    /// `FETCH_HEAD` (for-merge entries first, as git writes it). `None`
    /// (said) for a pull's refspec into the current branch, which git
    /// fast-forwards the worktree for and the light shell leaves to the
    /// computer.
    fn fetch_remote(
        &mut self,
        repo: &Repo<'_>,
        (name, url): (&str, &str),
        cmdline: &[Refspec],
        (tags, caller): (Option<Tags>, Caller),
    ) -> Result<Option<FetchResult>> {
        // git empties FETCH_HEAD first: a fetch that fails leaves it so.
        let fetch_head_path = files::join(&repo.git_dir, "FETCH_HEAD");
        let previous = files::read_optional(self.files, &fetch_head_path).at(&fetch_head_path)?;
        self.files
            .write(&fetch_head_path, b"")
            .at(&fetch_head_path)?;
        let config = repo.config()?;
        // Unless asked, as `remote.<name>.tagOpt` says.
        let tag_opt = match is_url(name) {
            true => None,
            false => config.get(&Key::parse(&format!("remote.{name}.tagOpt"))?),
        };
        let tags = tags.unwrap_or(match tag_opt.as_deref() {
            Some("--tags") => Tags::All,
            Some("--no-tags") => Tags::Off,
            _ => Tags::Following,
        });
        let configured: Vec<Refspec> = match is_url(name) {
            true => Vec::new(),
            false => config
                .get_all(&Key::parse(&format!("remote.{name}.fetch"))?)
                .iter()
                .map(|s| Refspec::parse(s))
                .collect(),
        };
        let branch = repo.refs.head()?.branch().map(str::to_string);
        let branch_key = |k: &str| {
            branch
                .as_ref()
                .and_then(|b| Key::parse(&format!("branch.{b}.{k}")).ok())
        };
        let merges: Vec<String> = branch_key("merge")
            .map(|k| config.get_all(&k))
            .unwrap_or_default();
        let upstream_here = !merges.is_empty()
            && branch_key("remote").and_then(|k| config.get(&k)).as_deref() == Some(name);
        let http = self.http()?;
        let remote = Remote::new(http, url);
        let session = remote.upload_pack().map_err(transport)?;
        let mut prefixes: Vec<String> = cmdline
            .iter()
            .chain(&configured)
            .flat_map(Refspec::prefixes)
            .chain(merges.iter().cloned())
            .collect();
        prefixes.extend(["HEAD".to_string(), "refs/tags/".to_string()]);
        let prefixes: Vec<&str> = prefixes.iter().map(String::as_str).collect();
        let refs = session.list_refs(&prefixes).map_err(transport)?;
        let mut map: Vec<Wanted<'_>> = Vec::new();
        let mut follow_tags = false;
        if !cmdline.is_empty() {
            for spec in cmdline {
                let found = spec.resolve(&refs);
                if found.is_empty() && !spec.is_pattern() {
                    return Err(fatal(format!("couldn't find remote ref {}", spec.src)));
                }
                for (r, local) in found {
                    map.push(Wanted::new(r, local, spec.force, FetchHead::Merge));
                }
                follow_tags |= !spec.dst.is_empty();
            }
            // What the configured refspecs would store the same refs
            // as is updated too (not written to FETCH_HEAD).
            let explicit: Vec<&RemoteRef> = map.iter().map(|w| w.remote).collect();
            for spec in &configured {
                for r in &explicit {
                    if let Some(local) = spec.map(&r.name).flatten() {
                        map.push(Wanted::new(r, Some(local), spec.force, FetchHead::Ignore));
                    }
                }
            }
        } else if !configured.is_empty() || upstream_here {
            for (i, spec) in configured.iter().enumerate() {
                let first = map.len();
                for (r, local) in spec.resolve(&refs) {
                    map.push(Wanted::new(r, local, spec.force, FetchHead::NotForMerge));
                }
                follow_tags |= !spec.dst.is_empty();
                if i == 0 && merges.is_empty() && !spec.is_pattern() && map.len() > first {
                    map[first].status = FetchHead::Merge;
                }
            }
            if upstream_here {
                for merge in &merges {
                    match map.iter_mut().find(|w| &w.remote.name == merge) {
                        Some(w) => w.status = FetchHead::Merge,
                        None => {
                            if let Some(r) = refs.iter().find(|r| &r.name == merge) {
                                map.push(Wanted::new(r, None, false, FetchHead::Merge));
                            }
                        }
                    }
                }
            }
        } else {
            let head = refs
                .iter()
                .find(|r| r.name == "HEAD")
                .ok_or_else(|| fatal("couldn't find remote ref HEAD"))?;
            map.push(Wanted::new(head, None, false, FetchHead::Merge));
        }
        if tags == Tags::All {
            for r in refs.iter().filter(|r| r.name.starts_with("refs/tags/")) {
                map.push(Wanted::new(
                    r,
                    Some(r.name.clone()),
                    false,
                    FetchHead::NotForMerge,
                ));
            }
        }
        let mut map = remove_duplicates(map, self)?;
        // git refuses before fetching anything.
        if let Some(current) = repo.refs.head()?.branch() {
            let current = format!("refs/heads/{current}");
            if map
                .iter()
                .any(|w| w.local.as_deref() == Some(current.as_str()))
            {
                if caller == Caller::Pull {
                    // Left to the computer as it was.
                    match &previous {
                        Some(text) => self.files.write(&fetch_head_path, text),
                        None => self.files.remove(&fetch_head_path),
                    }
                    .at(&fetch_head_path)?;
                    self.err("stead: git pull of a refspec into the current branch is not in the light shell's git; run it on the computer\n");
                    return Ok(None);
                }
                return Err(fatal(format!(
                    "refusing to fetch into branch '{current}' checked out at '{}'",
                    repo.worktree
                )));
            }
        }
        let mut wants: Vec<ObjectId> = Vec::new();
        for w in &map {
            if !repo.odb.contains(&w.remote.id)? && !wants.contains(&w.remote.id) {
                wants.push(w.remote.id);
            }
        }
        // A tag we lack of a commit we have is followed too (the server
        // includes only the tags of what it sends).
        if tags == Tags::Following && follow_tags {
            for r in refs.iter().filter(|r| r.name.starts_with("refs/tags/")) {
                let target = r.peeled.unwrap_or(r.id);
                if repo.refs.resolve(&r.name)?.is_none()
                    && !repo.odb.contains(&r.id)?
                    && repo.odb.contains(&target)?
                    && !wants.contains(&r.id)
                {
                    wants.push(r.id);
                }
            }
        }
        self.fetch_objects(repo, &session, wants, None)?;
        let repo = Repo::open(self.files, &repo.worktree);
        // Tags follow what was fetched (the server includes them).
        if tags == Tags::Following && follow_tags {
            for r in refs.iter().filter(|r| r.name.starts_with("refs/tags/")) {
                let listed = map
                    .iter()
                    .any(|w| w.local.as_deref() == Some(r.name.as_str()));
                if !listed && repo.refs.resolve(&r.name)?.is_none() && repo.odb.contains(&r.id)? {
                    map.push(Wanted::new(
                        r,
                        Some(r.name.clone()),
                        false,
                        FetchHead::NotForMerge,
                    ));
                }
            }
        }
        map.sort_by_key(|w| w.status);
        let mut result = FetchResult::default();
        let mut fetch_head = String::new();
        for w in &map {
            let (kind, what) = w.kind_and_what();
            if w.status != FetchHead::Ignore {
                let marker = match w.status {
                    FetchHead::Merge => "",
                    FetchHead::NotForMerge | FetchHead::Ignore => "not-for-merge",
                };
                let note = match (kind, what.is_empty()) {
                    (_, true) => String::new(),
                    ("", false) => format!("'{what}' of "),
                    (kind, false) => format!("{kind} '{what}' of "),
                };
                fetch_head.push_str(&format!(
                    "{}\t{marker}\t{note}{}\n",
                    w.remote.id,
                    shown_url(url)
                ));
                if w.status == FetchHead::Merge {
                    let label = match kind {
                        "" if what.is_empty() => shown_url(url).to_string(),
                        "" => format!("'{what}' of {}", shown_url(url)),
                        kind => format!("{kind} '{what}' of {}", shown_url(url)),
                    };
                    result
                        .merge
                        .push((w.remote.id, label, w.remote.name.clone()));
                }
            }
            match &w.local {
                Some(local) => self.update_local_ref(&repo, w, local, &mut result)?,
                None => result.lines.push(Shown {
                    code: '*',
                    summary: (if kind.is_empty() { "branch" } else { kind }).to_string(),
                    from: (if what.is_empty() { "HEAD" } else { what }).to_string(),
                    to: "FETCH_HEAD".into(),
                    note: None,
                }),
            }
        }
        self.files
            .write(&fetch_head_path, fetch_head.as_bytes())
            .at(&fetch_head_path)?;
        Ok(Some(result))
    }

    /// Moves local ref `local` to what `w` fetched, as git's
    /// `update_local_ref` decides (refusing a moved tag or a
    /// non-fast-forward unless forced), with its line and reflog.
    fn update_local_ref(
        &mut self,
        repo: &Repo<'_>,
        w: &Wanted<'_>,
        local: &str,
        result: &mut FetchResult,
    ) -> Result<()> {
        let new = w.remote.id;
        let old = repo.refs.resolve(local)?;
        if old == Some(new) {
            return Ok(());
        }
        let from = short(&w.remote.name).to_string();
        result.width = result.width.max(from.chars().count());
        let to = short(local).to_string();
        let refuse = |result: &mut FetchResult, why: &str| {
            result.failed = true;
            result.lines.push(Shown {
                code: '!',
                summary: "[rejected]".into(),
                from: from.clone(),
                to: to.clone(),
                note: Some(why.into()),
            });
        };
        let commit = |id: ObjectId| -> Result<bool> {
            Ok(repo.odb.contains(&id)? && matches!(repo.peel(id), Ok((ObjectKind::Commit, _))))
        };
        let (code, summary, note, message) = match old {
            Some(_) if local.starts_with("refs/tags/") => {
                if !w.force {
                    refuse(result, "would clobber existing tag");
                    return Ok(());
                }
                ('t', "[tag update]".to_string(), None, "updating tag")
            }
            Some(old) if commit(old)? && commit(new)? => {
                let (a, b) = (self.abbrev(repo, &old), self.abbrev(repo, &new));
                let (old_commit, new_commit) = (repo.peel(old)?.1, repo.peel(new)?.1);
                if self.is_ancestor(repo, old_commit, new_commit)? {
                    (' ', format!("{a}..{b}"), None, "fast-forward")
                } else if w.force {
                    (
                        '+',
                        format!("{a}...{b}"),
                        Some("forced update"),
                        "forced-update",
                    )
                } else {
                    refuse(result, "non-fast-forward");
                    return Ok(());
                }
            }
            _ => {
                let name = &w.remote.name;
                if name.starts_with("refs/tags/") {
                    ('*', "[new tag]".to_string(), None, "storing tag")
                } else if name.starts_with("refs/heads/") {
                    ('*', "[new branch]".to_string(), None, "storing head")
                } else {
                    ('*', "[new ref]".to_string(), None, "storing ref")
                }
            }
        };
        repo.refs.write(local, &new)?;
        if logs_updates(local) {
            let message = format!("{}: {message}", self.action);
            self.write_reflog(repo, local, old, &new, &message)?;
        }
        result.lines.push(Shown {
            code,
            summary,
            from,
            to,
            note: note.map(str::to_string),
        });
        Ok(())
    }

    /// Whether commit `old` is `new` or one of its ancestors.
    pub(super) fn is_ancestor(
        &self,
        repo: &Repo<'_>,
        old: ObjectId,
        new: ObjectId,
    ) -> Result<bool> {
        let mut seen = HashSet::new();
        let mut todo = vec![new];
        while let Some(id) = todo.pop() {
            if id == old {
                return Ok(true);
            }
            if seen.insert(id) {
                if !repo.odb.contains(&id)? {
                    continue;
                }
                todo.extend(repo.commit(&id)?.parents);
            }
        }
        Ok(false)
    }

    // ---- pull --------------------------------------------------------------

    pub(crate) fn pull(&mut self, repo: &Repo<'_>, a: &Parsed) -> Result<i32> {
        let quiet = a.has("quiet");
        let operand = a.operands.first().map(String::as_str);
        let (name, url) = self.remote_of(repo, operand)?;
        let cmdline = refspec_operands(a);
        let config = repo.config()?;
        // `--rebase`/`--no-rebase`, else `branch.<name>.rebase`, else
        // `pull.rebase`; what is not a boolean (`merges`, `interactive`)
        // is the computer's.
        let configured_rebase = {
            let get = |k: &str| Key::parse(k).ok().and_then(|k| config.get(&k));
            let branch = repo.refs.head()?.branch().map(str::to_string);
            let key = branch.map(|b| format!("branch.{b}.rebase"));
            match key.as_deref().and_then(get).or_else(|| get("pull.rebase")) {
                None => None,
                Some(value) => match crate::config::parse_bool(&value) {
                    Some(on) => Some(on),
                    None => {
                        self.err(&format!("stead: git pull that rebases with rebase={value} is not in the light shell's git; run it on the computer\n"));
                        return Ok(129);
                    }
                },
            }
        };
        let rebase = if a.has("rebase") {
            true
        } else if a.has("no-rebase") {
            false
        } else {
            configured_rebase == Some(true)
        };
        if rebase && repo.refs.head_id()?.is_some() {
            if let Some(status) = self.refuse_unclean_rebase(repo)? {
                return Ok(status);
            }
        }
        if let Some(status) = self.refuse_pruning(repo, &name)? {
            return Ok(status);
        }
        let Some(result) =
            self.fetch_remote(repo, (&name, &url), &cmdline, (None, Caller::Pull))?
        else {
            return Ok(129);
        };
        self.show_fetch(&url, &result, quiet);
        if result.failed {
            return Ok(1);
        }
        let repo = Repo::open(self.files, &repo.worktree);
        let (theirs, label, merged_ref) = match result.merge.as_slice() {
            [] => {
                self.no_merge_candidates(&repo, operand, !cmdline.is_empty())?;
                return Ok(1);
            }
            [one] => one.clone(),
            _ => {
                self.err("stead: git pull of more than one ref (an octopus merge) is not in the light shell's git; run it on the computer\n");
                return Ok(129);
            }
        };
        if repo.refs.head()?.branch().is_none() {
            self.err("stead: git pull on a detached HEAD is not in the light shell's git; run it on the computer\n");
            return Ok(129);
        }
        let theirs = repo.peel(theirs)?.1;
        let fast_forward = format!("{}: Fast-forward", self.action);
        let Some(ours) = repo.refs.head_id()? else {
            if !self.move_tree(&repo, &theirs, "merge")? {
                return Ok(1);
            }
            self.update_head(&repo, &theirs, &fast_forward)?;
            return Ok(0);
        };
        // A rebase says its own words when there is nothing to replay
        // (`Current branch main is up to date.`), unless the two are one.
        if (!rebase || ours == theirs) && self.is_ancestor(&repo, theirs, ours)? {
            if !quiet {
                self.say("Already up to date.\n");
            }
            return Ok(0);
        }
        if self.is_ancestor(&repo, ours, theirs)? {
            return self.fast_forward(&repo, ours, theirs, &fast_forward, quiet);
        }
        if rebase {
            // The remote-tracking ref git reads the fork point from.
            let tracking = merged_ref
                .strip_prefix("refs/heads/")
                .filter(|_| !is_url(&name))
                .map(|b| format!("refs/remotes/{name}/{b}"));
            return self.rebase_onto(&repo, (ours, theirs), tracking.as_deref(), quiet);
        }
        if let Some(refused) = self.diverged(&config, a, configured_rebase.is_some())? {
            return Ok(refused);
        }
        let theirs = Theirs {
            id: theirs,
            label: theirs.to_string(),
            message: format!("Merge {label}"),
            reflog: self.action.clone(),
        };
        let options = Options {
            ff: Ff::Allow,
            quiet,
            message: None,
        };
        self.merge_into(&repo, &theirs, &options)
    }

    /// What git's pull says when the fetch gave it nothing to merge
    /// (`die_no_merge_candidates`), by what was asked and configured.
    fn no_merge_candidates(
        &mut self,
        repo: &Repo<'_>,
        given_remote: Option<&str>,
        refspecs: bool,
    ) -> Result<()> {
        let config = repo.config()?;
        let head = repo.refs.head()?;
        let branch = head.branch();
        let branch_value = |k: &str| {
            branch
                .and_then(|b| Key::parse(&format!("branch.{b}.{k}")).ok())
                .and_then(|k| config.get(&k))
        };
        let upstream_remote = branch_value("remote");
        let message = if refspecs {
            "There are no candidates for merging among the refs that you just fetched.\nGenerally this means that you provided a wildcard refspec which had no\nmatches on the remote end.\n".to_string()
        } else if given_remote.is_some()
            && branch.is_some()
            && upstream_remote.as_deref() != given_remote
        {
            format!("You asked to pull from the remote '{}', but did not specify\na branch. Because this is not the default configured remote\nfor your current branch, you must specify a branch on the command line.\n", given_remote.unwrap_or_default())
        } else if let Some(branch) = branch {
            match branch_value("merge") {
                None => {
                    let remotes: BTreeSet<String> = config
                        .entries()
                        .into_iter()
                        .filter_map(|(key, _)| {
                            let rest = key.strip_prefix("remote.")?;
                            Some(rest.rsplit_once('.')?.0.to_string())
                        })
                        .collect();
                    let remote = match remotes.len() {
                        1 => remotes.into_iter().next().unwrap_or_default(),
                        _ => "<remote>".to_string(),
                    };
                    format!("There is no tracking information for the current branch.\nPlease specify which branch you want to merge with.\nSee git-pull(1) for details.\n\n    git pull <remote> <branch>\n\nIf you wish to set tracking information for this branch you can do so with:\n\n    git branch --set-upstream-to={remote}/<branch> {branch}\n\n")
                }
                Some(merge) => format!("Your configuration specifies to merge with the ref '{merge}'\nfrom the remote, but no such ref was fetched.\n"),
            }
        } else {
            "You are not currently on a branch.\nPlease specify which branch you want to merge with.\nSee git-pull(1) for details.\n\n    git pull <remote> <branch>\n\n".to_string()
        };
        self.err(&message);
        Ok(())
    }

    /// What `pull` does with branches that diverged and are not
    /// rebased: `None` to merge (`--no-rebase`, a rebase configured off,
    /// `pull.ff` set), else git's refusal (`--ff-only`, nothing
    /// configured).
    fn diverged(
        &mut self,
        config: &crate::config::Config,
        a: &Parsed,
        rebase_configured: bool,
    ) -> Result<Option<i32>> {
        let get = |k: &str| Key::parse(k).ok().and_then(|k| config.get(&k));
        let ff_only = a.has("ff-only") || get("pull.ff").as_deref() == Some("only");
        if ff_only {
            self.err("hint: Diverging branches can't be fast-forwarded, you need to either:\nhint:\nhint: \tgit merge --no-ff\nhint:\nhint: or:\nhint:\nhint: \tgit rebase\nhint:\nhint: Disable this message with \"git config advice.diverging false\"\n");
            return Err(fatal("Not possible to fast-forward, aborting."));
        }
        if a.has("no-rebase") || rebase_configured {
            return Ok(None);
        }
        if get("pull.ff").is_some() {
            return Ok(None);
        }
        self.err("hint: You have divergent branches and need to specify how to reconcile them.\nhint: You can do so by running one of the following commands sometime before\nhint: your next pull:\nhint:\nhint:   git config pull.rebase false  # merge\nhint:   git config pull.rebase true   # rebase\nhint:   git config pull.ff only       # fast-forward only\nhint:\nhint: You can replace \"git config\" with \"git config --global\" to set a default\nhint: preference for all repositories. You can also pass --rebase, --no-rebase,\nhint: or --ff-only on the command line to override the configured default per\nhint: invocation.\n");
        Err(fatal(
            "Need to specify how to reconcile divergent branches.",
        ))
    }

    /// ` path | N ++--` lines for each changed path, as `--stat` prints
    /// them in 80 columns.
    pub(super) fn diffstat(&self, repo: &Repo<'_>, before: &Flat, after: &Flat) -> Result<String> {
        let mut rows: Vec<(String, usize, usize)> = Vec::new();
        let paths: std::collections::BTreeSet<&String> =
            before.keys().chain(after.keys()).collect();
        for path in paths {
            let old = before.get(path);
            let new = after.get(path);
            if old == new {
                continue;
            }
            let read = |side: Option<&(u32, ObjectId)>| -> Result<Vec<u8>> {
                Ok(match side {
                    Some((_, id)) => repo.odb.read(id)?.1,
                    None => Vec::new(),
                })
            };
            let counts = crate::diff::counts(&read(old)?, &read(new)?);
            rows.push((path.clone(), counts.added, counts.removed));
        }
        let name_width = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(0);
        let most = rows.iter().map(|r| r.1 + r.2).max().unwrap_or(0);
        let count_width = most.to_string().len();
        let room = 80usize.saturating_sub(name_width + count_width + 6).max(1);
        let mut out = String::new();
        for (path, added, removed) in rows {
            let (mut plus, mut minus) = (added, removed);
            if most > room {
                let scale = |n: usize| if n == 0 { 0 } else { (n * room / most).max(1) };
                plus = scale(added);
                minus = scale(removed);
            }
            out.push_str(&format!(
                " {path:<name_width$} | {:>count_width$} {}{}\n",
                added + removed,
                "+".repeat(plus),
                "-".repeat(minus)
            ));
        }
        Ok(out)
    }
}

/// Whether `remote` is a URL rather than a configured remote's name.
pub(crate) fn is_url(remote: &str) -> bool {
    remote.starts_with("http://") || remote.starts_with("https://")
}

/// Whether `name` may be a remote's name here (not a URL or path).
pub(crate) fn is_remote_name(name: &str) -> bool {
    valid_name(name) && !name.contains(':')
}

/// The refspecs a `fetch` or `pull` command line names after its remote.
fn refspec_operands(a: &Parsed) -> Vec<Refspec> {
    a.operands
        .iter()
        .skip(1)
        .map(|s| Refspec::parse(s))
        .collect()
}
