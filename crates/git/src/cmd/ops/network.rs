//! The subcommands that talk to a remote over smart HTTP: `clone`,
//! `fetch`, `pull` (fast-forward) and `push`, with git's output and exit
//! statuses. The protocol is `crate::transport`'s; this is what git does
//! around it: which refs to want and have, where fetched refs go, what is
//! written to `.git` (in that order: pack, shallow boundary, refs, config,
//! then the worktree), and what is printed.

use std::collections::{BTreeMap, HashSet};

use gix_hash::ObjectId;
use gix_object::Kind as ObjectKind;

use super::merge::{Ff, Options, Theirs};
use super::push::is_url;
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

/// One fetch refspec: `+refs/heads/*:refs/remotes/origin/*` or an exact
/// `src:dst`.
struct Refspec {
    force: bool,
    src: String,
    dst: String,
}

impl Refspec {
    fn parse(text: &str) -> Option<Refspec> {
        let (force, text) = match text.strip_prefix('+') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (src, dst) = text.split_once(':')?;
        Some(Refspec {
            force,
            src: src.to_string(),
            dst: dst.to_string(),
        })
    }

    /// Where remote ref `name` goes locally under this refspec.
    fn map(&self, name: &str) -> Option<String> {
        match (self.src.split_once('*'), self.dst.split_once('*')) {
            (Some((sp, ss)), Some((dp, ds))) => {
                let middle = name.strip_prefix(sp)?.strip_suffix(ss)?;
                Some(format!("{dp}{middle}{ds}"))
            }
            (None, None) if name == self.src => Some(self.dst.clone()),
            _ => None,
        }
    }

    /// The prefix `ls-refs` is asked for.
    fn prefix(&self) -> &str {
        self.src.split('*').next().unwrap_or(&self.src)
    }
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

/// The refs a fetch updated, and what it fetched for `FETCH_HEAD`.
struct FetchResult {
    lines: Vec<Shown>,
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
        let result = self.fetch_remote(repo, &name, &url)?;
        self.show_fetch(&url, &result, a.has("quiet"));
        Ok(0)
    }

    fn show_fetch(&mut self, url: &str, result: &FetchResult, quiet: bool) {
        if quiet || result.lines.is_empty() {
            return;
        }
        let width = result
            .lines
            .iter()
            .map(|l| l.from.chars().count())
            .max()
            .unwrap_or(0)
            .max(10);
        self.err(&format!("From {}\n", shown_url(url)));
        for line in &result.lines {
            self.err(&line.fetch_line(width));
        }
    }

    /// Fetches remote `name` by its configured refspecs: the objects, the
    /// remote-tracking refs, tags pointing into what was fetched, and
    /// `FETCH_HEAD`.
    fn fetch_remote(&mut self, repo: &Repo<'_>, name: &str, url: &str) -> Result<FetchResult> {
        let config = repo.config()?;
        let specs: Vec<Refspec> = config
            .get_all(&Key::parse(&format!("remote.{name}.fetch"))?)
            .iter()
            .filter_map(|s| Refspec::parse(s))
            .collect();
        let http = self.http()?;
        let remote = Remote::new(http, url);
        let session = remote.upload_pack().map_err(transport)?;
        let mut prefixes: Vec<&str> = specs.iter().map(Refspec::prefix).collect();
        prefixes.push("refs/tags/");
        let refs = session.list_refs(&prefixes).map_err(transport)?;
        // (remote ref, local ref, force) for every ref a refspec maps.
        let mut mapped: Vec<(&RemoteRef, String, bool)> = Vec::new();
        for r in &refs {
            if let Some(spec) = specs.iter().find(|s| s.map(&r.name).is_some()) {
                mapped.push((r, spec.map(&r.name).expect("matched"), spec.force));
            }
        }
        let mut wants: Vec<ObjectId> = Vec::new();
        for (r, _, _) in &mapped {
            if !repo.odb.contains(&r.id)? && !wants.contains(&r.id) {
                wants.push(r.id);
            }
        }
        self.fetch_objects(repo, &session, wants, None)?;
        let repo = Repo::open(self.files, &repo.worktree);
        // Tags follow what was fetched (the server includes them).
        let mut new_tags: Vec<&RemoteRef> = Vec::new();
        for r in refs.iter().filter(|r| r.name.starts_with("refs/tags/")) {
            if repo.refs.resolve(&r.name)?.is_none() && repo.odb.contains(&r.id)? {
                new_tags.push(r);
            }
        }
        let mut lines = Vec::new();
        let mut fetch_head = String::new();
        let merge = repo
            .refs
            .head()?
            .branch()
            .and_then(|b| config.get(&Key::parse(&format!("branch.{b}.merge")).ok()?));
        for (r, local, force) in &mapped {
            let kind = if r.name.starts_with("refs/tags/") {
                "tag"
            } else {
                "branch"
            };
            let for_merge = merge.as_deref() == Some(r.name.as_str());
            fetch_head.push_str(&format!(
                "{}\t{}\t{kind} '{}' of {}\n",
                r.id,
                if for_merge { "" } else { "not-for-merge" },
                short(&r.name),
                shown_url(url)
            ));
            let old = repo.refs.resolve(local)?;
            let summary = match old {
                Some(old) if old == r.id => continue,
                Some(old) => {
                    let ff = self.is_ancestor(&repo, old, r.id)?;
                    if !ff && !force {
                        lines.push(Shown {
                            code: '!',
                            summary: "[rejected]".into(),
                            from: short(&r.name).into(),
                            to: short(local).into(),
                            note: Some("non-fast-forward".into()),
                        });
                        continue;
                    }
                    let (a, b) = (self.abbrev(&repo, &old), self.abbrev(&repo, &r.id));
                    if ff {
                        (' ', format!("{a}..{b}"), None)
                    } else {
                        ('+', format!("{a}...{b}"), Some("forced update".to_string()))
                    }
                }
                None => ('*', "[new branch]".to_string(), None),
            };
            repo.refs.write(local, &r.id)?;
            self.write_reflog(
                &repo,
                local,
                old,
                &r.id,
                &format!(
                    "fetch: {}",
                    if old.is_some() {
                        "fast-forward"
                    } else {
                        "storing head"
                    }
                ),
            )?;
            lines.push(Shown {
                code: summary.0,
                summary: summary.1,
                from: short(&r.name).into(),
                to: short(local).into(),
                note: summary.2,
            });
        }
        for tag in new_tags {
            repo.refs.write(&tag.name, &tag.id)?;
            lines.push(Shown {
                code: '*',
                summary: "[new tag]".into(),
                from: short(&tag.name).into(),
                to: short(&tag.name).into(),
                note: None,
            });
        }
        let path = files::join(&repo.git_dir, "FETCH_HEAD");
        self.files.write(&path, fetch_head.as_bytes()).at(&path)?;
        Ok(FetchResult { lines })
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
        let Some(branch) = repo.refs.head()?.branch().map(str::to_string) else {
            return Err(fatal("You are not currently on a branch."));
        };
        let (name, url) = self.remote_of(repo, a.operands.first().map(String::as_str))?;
        let config = repo.config()?;
        let merge = match a.operands.get(1) {
            Some(b) => Some(format!("refs/heads/{b}")),
            None => config.get(&Key::parse(&format!("branch.{branch}.merge"))?),
        };
        let Some(merge) = merge else {
            self.err(&format!("There is no tracking information for the current branch.\nPlease specify which branch you want to merge with.\nSee git-pull(1) for details.\n\n    git pull <remote> <branch>\n\nIf you wish to set tracking information for this branch you can do so with:\n\n    git branch --set-upstream-to={name}/<branch> {branch}\n\n"));
            return Ok(1);
        };
        let result = self.fetch_remote(repo, &name, &url)?;
        self.show_fetch(&url, &result, quiet);
        let repo = Repo::open(self.files, &repo.worktree);
        let tracking = format!("refs/remotes/{name}/{}", short(&merge));
        let Some(theirs) = repo.refs.resolve(&tracking)? else {
            return Err(fatal(format!("couldn't find remote ref {merge}")));
        };
        let theirs = repo.peel(theirs)?.1;
        let Some(ours) = repo.refs.head_id()? else {
            if !self.move_tree(&repo, &theirs, "merge")? {
                return Ok(1);
            }
            self.update_head(&repo, &theirs, "pull: Fast-forward")?;
            return Ok(0);
        };
        if self.is_ancestor(&repo, theirs, ours)? {
            if !quiet {
                self.say("Already up to date.\n");
            }
            return Ok(0);
        }
        if self.is_ancestor(&repo, ours, theirs)? {
            return self.fast_forward(&repo, ours, theirs, "pull: Fast-forward", quiet);
        }
        if let Some(refused) = self.diverged(&config, a)? {
            return Ok(refused);
        }
        let theirs = Theirs {
            id: theirs,
            label: theirs.to_string(),
            message: format!("Merge branch '{}' of {}", short(&merge), shown_url(&url)),
            reflog: "pull".to_string(),
        };
        let options = Options {
            ff: Ff::Allow,
            quiet,
            message: None,
        };
        self.merge_into(&repo, &theirs, &options)
    }

    /// What `pull` does with branches that diverged: `None` to merge
    /// (`--no-rebase`, `pull.rebase=false`, `pull.ff` set), else git's
    /// refusal (`--ff-only`, nothing configured) or, for a rebase, that
    /// the light shell cannot (its status).
    fn diverged(&mut self, config: &crate::config::Config, a: &Parsed) -> Result<Option<i32>> {
        let get = |k: &str| Key::parse(k).ok().and_then(|k| config.get(&k));
        let ff_only = a.has("ff-only") || get("pull.ff").as_deref() == Some("only");
        if ff_only {
            self.err("hint: Diverging branches can't be fast-forwarded, you need to either:\nhint:\nhint: \tgit merge --no-ff\nhint:\nhint: or:\nhint:\nhint: \tgit rebase\nhint:\nhint: Disable this message with \"git config advice.diverging false\"\n");
            return Err(fatal("Not possible to fast-forward, aborting."));
        }
        let rebase = get("pull.rebase");
        if a.has("no-rebase") || rebase.as_deref() == Some("false") {
            return Ok(None);
        }
        if rebase.is_some() {
            self.err("stead: git pull that rebases is not in the light shell's git; run it on the computer\n");
            return Ok(Some(129));
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

/// Whether `name` may be a remote's name here (not a URL or path).
pub(crate) fn is_remote_name(name: &str) -> bool {
    valid_name(name) && !name.contains(':')
}
