//! `git merge` and the merge a pull makes when branches diverged, as git's
//! default strategy (`ort`) makes them: the merge base, each path merged
//! three ways (a side that did not change a path takes the other's; a
//! file both changed is merged line by line, `crate::merge`), and either
//! a merge commit (`Merge made by the 'ort' strategy.`) or the conflict
//! state git leaves: conflicted files with markers in the worktree, their
//! stages 1-3 in the index, `MERGE_HEAD`, `MERGE_MSG`, `MERGE_MODE`,
//! `ORIG_HEAD` and `AUTO_MERGE`, status 1.
//!
//! What `ort` would do differently, this does not guess at: a merge where
//! rename detection could change the result (a side that deleted and
//! added paths, where the other side touched the deleted ones, added the
//! same path, or added into a directory the first side emptied), more than
//! one merge base (ort merges the bases first), a file/directory clash,
//! symlinks or submodules changed on both sides, and modes changed both
//! ways are refused before anything is written, with the light shell's
//! message and status 129, for the computer's git.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use gix_hash::ObjectId;
use gix_object::Kind as ObjectKind;

use super::{fatal, Run};
use crate::cmd::args::Parsed;
use crate::error::{At, Result};
use crate::files;
use crate::index::{IndexEntry, MODE_GITLINK, MODE_SYMLINK};
use crate::objects::Commit;
use crate::refs::Head;
use crate::repo::{Flat, Repo};
use crate::worktree::Untracked;

/// A path's entry on one side: (mode, blob), or absent.
type Entry = Option<(u32, ObjectId)>;

/// The files of `.git` a merge in progress keeps.
const STATE: [&str; 4] = ["MERGE_HEAD", "MERGE_MSG", "MERGE_MODE", "AUTO_MERGE"];

/// What is merged in: the commit, the name its conflict markers show,
/// the merge commit's message (before ` into <branch>`), and the reflog
/// message's prefix (`merge feat`, `pull`).
pub(super) struct Theirs {
    pub(super) id: ObjectId,
    pub(super) label: String,
    pub(super) message: String,
    pub(super) reflog: String,
}

/// Whether a merge may, must not or must fast-forward.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ff {
    Allow,
    Never,
    Only,
}

/// How a merge is made.
pub(super) struct Options {
    pub(super) ff: Ff,
    pub(super) quiet: bool,
    /// `-m`: the merge commit's message instead of git's.
    pub(super) message: Option<String>,
}

/// A path left conflicted: its stages (base, ours, theirs) and what the
/// worktree gets.
pub(super) struct Conflict {
    path: String,
    stages: [Entry; 3],
    worktree: (u32, ObjectId),
}

/// A tree merge: the paths merged cleanly, the conflicts, and what git
/// says of each path (in path order).
#[derive(Default)]
pub(super) struct TreeMerge {
    pub(super) clean: Flat,
    pub(super) conflicts: Vec<Conflict>,
    messages: Vec<String>,
}

/// Why a merge is left to the computer's git.
pub(super) type Refused = &'static str;

/// Whether a side that both deleted and added paths may have renamed one
/// in a way that changes what `other` did: the case rename detection
/// would decide.
fn rename_may_matter(base: &Flat, side: &Flat, other: &Flat) -> bool {
    let deleted: Vec<&String> = base.keys().filter(|p| !side.contains_key(*p)).collect();
    let added: Vec<&String> = side.keys().filter(|p| !base.contains_key(*p)).collect();
    if deleted.is_empty() || added.is_empty() {
        return false;
    }
    if deleted.iter().any(|p| other.get(*p) != base.get(*p)) {
        return true;
    }
    if added
        .iter()
        .any(|p| other.get(*p).is_some_and(|o| Some(o) != side.get(*p)))
    {
        return true;
    }
    // Directories the side emptied, where the other side added a file.
    let emptied: BTreeSet<&str> = base
        .keys()
        .flat_map(|p| p.match_indices('/').map(move |(i, _)| &p[..i]))
        .filter(|dir| {
            let prefix = format!("{dir}/");
            !side.keys().any(|p| p.starts_with(&prefix))
        })
        .collect();
    other
        .keys()
        .filter(|p| !base.contains_key(*p))
        .any(|p| p.match_indices('/').any(|(i, _)| emptied.contains(&p[..i])))
}

/// Whether a path is a file in one place and a directory in another.
fn file_directory_clash(paths: &BTreeSet<&str>) -> bool {
    paths
        .iter()
        .any(|p| p.match_indices('/').any(|(i, _)| paths.contains(&p[..i])))
}

impl<'a> Run<'a> {
    /// `git merge [-q] [--no-ff|--ff-only] [-m MSG] [--no-edit] [REV]` and
    /// `git merge --abort`.
    pub(super) fn merge_command(&mut self, repo: &Repo<'_>, a: &Parsed) -> Result<i32> {
        let in_progress = self.merging(repo)?;
        if a.has("abort") {
            if !in_progress {
                return Err(fatal("There is no merge to abort (MERGE_HEAD missing)."));
            }
            return self.merge_abort(repo);
        }
        let (index, _) = repo.index()?;
        if index.entries.iter().any(|e| e.stage != 0) {
            return Err(self.unmerged_refusal("Merging"));
        }
        if in_progress {
            return Err(fatal("You have not concluded your merge (MERGE_HEAD exists).\nPlease, commit your changes before you merge."));
        }
        let theirs = match a.operands.as_slice() {
            [] => self.upstream_to_merge(repo)?,
            [rev] => self.named_to_merge(repo, rev)?,
            _ => return Ok(self.merge_refused("of more than one commit")),
        };
        let theirs = match theirs {
            Ok(theirs) => theirs,
            Err(status) => return Ok(status),
        };
        let ff = match (a.has("no-ff"), a.has("ff-only")) {
            (true, _) => Ff::Never,
            (false, true) => Ff::Only,
            _ => Ff::Allow,
        };
        let options = Options {
            ff,
            quiet: a.has("quiet"),
            message: a.value("message").map(str::to_string),
        };
        self.merge_into(repo, &theirs, &options)
    }

    /// The current branch's upstream, as `git merge` without a commit
    /// takes it.
    fn upstream_to_merge(&mut self, repo: &Repo<'_>) -> Result<std::result::Result<Theirs, i32>> {
        let branch = repo.refs.head()?.branch().map(str::to_string);
        let upstream = match &branch {
            Some(b) => self.upstream(repo, b)?,
            None => None,
        };
        let Some((shown, reference)) = upstream else {
            return Err(fatal("No remote for the current branch."));
        };
        let Some(id) = repo.refs.resolve(&reference)? else {
            return Err(fatal(format!("{shown} - not something we can merge")));
        };
        let kind = if reference.starts_with("refs/remotes/") {
            "remote-tracking branch"
        } else {
            "branch"
        };
        Ok(Ok(Theirs {
            id: repo.peel(id)?.1,
            label: shown.clone(),
            message: format!("Merge {kind} '{shown}'"),
            reflog: format!("merge {shown}"),
        }))
    }

    /// What `rev` names, with git's message for it: a branch, a
    /// remote-tracking branch, a lightweight tag or a commit; else the
    /// status, its message printed (not a commit, an annotated tag).
    fn named_to_merge(
        &mut self,
        repo: &Repo<'_>,
        rev: &str,
    ) -> Result<std::result::Result<Theirs, i32>> {
        let plain = !rev.contains(['~', '^', ':', '@']);
        let kind = if plain && repo.refs.resolve(&format!("refs/heads/{rev}"))?.is_some() {
            "branch"
        } else if plain && repo.refs.resolve(&format!("refs/remotes/{rev}"))?.is_some() {
            "remote-tracking branch"
        } else if plain && repo.refs.resolve(&format!("refs/tags/{rev}"))?.is_some() {
            "tag"
        } else {
            "commit"
        };
        let found = match repo.rev_parse(rev)? {
            Some(id) => Some((id, repo.peel(id)?)),
            None => None,
        };
        let Some((id, (ObjectKind::Commit, commit))) = found else {
            self.err(&format!("merge: {rev} - not something we can merge\n"));
            return Ok(Err(1));
        };
        if kind == "tag" && commit != id {
            return Ok(Err(self.merge_refused("of an annotated tag")));
        }
        Ok(Ok(Theirs {
            id: commit,
            label: rev.to_string(),
            message: format!("Merge {kind} '{rev}'"),
            reflog: format!("merge {rev}"),
        }))
    }

    /// git's refusal to go on (`Committing`, `Merging`) with unmerged
    /// paths: the hint printed, the fatal error returned.
    pub(super) fn unmerged_refusal(&mut self, what: &str) -> crate::error::Error {
        self.err(&format!("error: {what} is not possible because you have unmerged files.\nhint: Fix them up in the work tree, and then use 'git add/rm <file>'\nhint: as appropriate to mark resolution and make a commit.\n"));
        fatal("Exiting because of an unresolved conflict.")
    }

    /// Prints the light shell's refusal of a merge; its status.
    fn merge_refused(&mut self, what: &str) -> i32 {
        self.err(&format!(
            "stead: git merge {what} is not in the light shell's git; run it on the computer\n"
        ));
        129
    }

    /// Whether a merge is in progress (`MERGE_HEAD` exists).
    pub(super) fn merging(&self, repo: &Repo<'_>) -> Result<bool> {
        let path = files::join(&repo.git_dir, "MERGE_HEAD");
        Ok(files::read_optional(self.files, &path).at(&path)?.is_some())
    }

    /// The commits `MERGE_HEAD` names.
    pub(super) fn merge_heads(&self, repo: &Repo<'_>) -> Result<Vec<ObjectId>> {
        let path = files::join(&repo.git_dir, "MERGE_HEAD");
        let text = files::read_optional(self.files, &path)
            .at(&path)?
            .unwrap_or_default();
        String::from_utf8_lossy(&text)
            .lines()
            .filter(|l| !l.is_empty())
            .map(|l| {
                ObjectId::from_hex(l.trim().as_bytes())
                    .map_err(|_| fatal(format!("corrupt MERGE_HEAD: {l}")))
            })
            .collect()
    }

    /// Removes the files of a merge in progress (after its commit).
    pub(super) fn clear_merge_state(&self, repo: &Repo<'_>) -> Result<()> {
        for name in STATE {
            let path = files::join(&repo.git_dir, name);
            match self.files.remove(&path) {
                Ok(()) | Err(crate::files::FileError::NotFound) => {}
                Err(e) => return Err(e).at(&path),
            }
        }
        Ok(())
    }

    /// `git merge --abort`: the index and the paths it changed back to
    /// HEAD (other local changes kept, as `reset --merge` keeps them),
    /// and the merge state gone.
    fn merge_abort(&mut self, repo: &Repo<'_>) -> Result<i32> {
        let (index, _) = repo.index()?;
        let head = self.head_files(repo)?;
        let staged = crate::repo::Repo::index_files(&index);
        let touched: BTreeSet<String> = index
            .entries
            .iter()
            .filter(|e| e.stage != 0 || head.get(&e.path) != Some(&(e.mode, e.id)))
            .map(|e| e.path.clone())
            .chain(head.keys().filter(|p| !staged.contains_key(*p)).cloned())
            .collect();
        let mut kept = index;
        kept.entries.retain(|e| !touched.contains(&e.path));
        for path in &touched {
            let abs = repo.abs(path);
            match head.get(path) {
                Some((mode, id)) => {
                    self.write_worktree_file(repo, path, *mode, id)?;
                    let meta = self.files.stat(&abs).at(&abs)?;
                    kept.upsert(IndexEntry::new(
                        path.clone(),
                        *mode,
                        *id,
                        meta.size,
                        meta.mtime_ms,
                    ));
                }
                None => {
                    match self.files.remove(&abs) {
                        Ok(()) | Err(crate::files::FileError::NotFound) => {}
                        Err(e) => return Err(e).at(&abs),
                    }
                    self.prune_dirs(repo, path);
                }
            }
        }
        kept.sort();
        repo.save_index(&kept)?;
        self.clear_merge_state(repo)?;
        Ok(0)
    }

    /// The best common ancestors of `a` and `b`.
    pub(super) fn merge_bases(
        &self,
        repo: &Repo<'_>,
        a: ObjectId,
        b: ObjectId,
    ) -> Result<Vec<ObjectId>> {
        let mut of_a = HashSet::new();
        let mut todo = vec![a];
        while let Some(id) = todo.pop() {
            if of_a.insert(id) && repo.odb.contains(&id)? {
                todo.extend(repo.commit(&id)?.parents);
            }
        }
        let mut candidates: Vec<ObjectId> = Vec::new();
        let mut seen = HashSet::new();
        let mut todo = vec![b];
        while let Some(id) = todo.pop() {
            if !seen.insert(id) {
                continue;
            }
            if of_a.contains(&id) {
                candidates.push(id);
            } else if repo.odb.contains(&id)? {
                todo.extend(repo.commit(&id)?.parents);
            }
        }
        let mut best = Vec::new();
        for c in &candidates {
            let mut below_another = false;
            for other in candidates.iter().filter(|o| *o != c) {
                if self.is_ancestor(repo, *c, *other)? {
                    below_another = true;
                    break;
                }
            }
            if !below_another {
                best.push(*c);
            }
        }
        Ok(best)
    }

    /// Merges the three trees path by path.
    pub(super) fn merge_trees(
        &self,
        repo: &Repo<'_>,
        base: &Flat,
        ours: &Flat,
        theirs: &Flat,
        label: &str,
    ) -> Result<std::result::Result<TreeMerge, Refused>> {
        if rename_may_matter(base, ours, theirs) || rename_may_matter(base, theirs, ours) {
            return Ok(Err("with renames"));
        }
        let mut merged = TreeMerge::default();
        let paths: BTreeSet<&String> = base
            .keys()
            .chain(ours.keys())
            .chain(theirs.keys())
            .collect();
        for path in paths {
            let (b, o, t) = (
                base.get(path).copied(),
                ours.get(path).copied(),
                theirs.get(path).copied(),
            );
            let taken = if o == t || b == t {
                o
            } else if b == o {
                t
            } else {
                match self.merge_path(repo, path, [b, o, t], label, &mut merged)? {
                    Ok(()) => continue,
                    Err(refused) => return Ok(Err(refused)),
                }
            };
            if let Some(entry) = taken {
                merged.clean.insert(path.clone(), entry);
            }
        }
        let all: BTreeSet<&str> = merged
            .clean
            .keys()
            .map(String::as_str)
            .chain(merged.conflicts.iter().map(|c| c.path.as_str()))
            .collect();
        if file_directory_clash(&all) {
            return Ok(Err("with a file/directory conflict"));
        }
        Ok(Ok(merged))
    }

    /// One path both sides changed, each its own way.
    fn merge_path(
        &self,
        repo: &Repo<'_>,
        path: &str,
        [b, o, t]: [Entry; 3],
        label: &str,
        merged: &mut TreeMerge,
    ) -> Result<std::result::Result<(), Refused>> {
        let special = |e: Entry| e.is_some_and(|(m, _)| m == MODE_SYMLINK || m == MODE_GITLINK);
        if special(b) || special(o) || special(t) {
            return Ok(Err("of a symlink or submodule changed on both sides"));
        }
        let (o, t) = match (o, t) {
            (Some(o), Some(t)) => (o, t),
            (Some(kept), None) | (None, Some(kept)) => {
                let (deleted_in, modified_in) = if t.is_none() {
                    (label, "HEAD")
                } else {
                    ("HEAD", label)
                };
                merged.messages.push(format!("CONFLICT (modify/delete): {path} deleted in {deleted_in} and modified in {modified_in}.  Version {modified_in} of {path} left in tree.\n"));
                merged.conflicts.push(Conflict {
                    path: path.to_string(),
                    stages: [b, o, t],
                    worktree: kept,
                });
                return Ok(Ok(()));
            }
            (None, None) => unreachable!("both deleted is taken as it is"),
        };
        let mode = match b.map(|b| b.0) {
            Some(bm) if o.0 == bm => t.0,
            Some(bm) if t.0 == bm => o.0,
            _ if o.0 == t.0 => o.0,
            _ => return Ok(Err("of a file whose mode both sides changed")),
        };
        let id = if o.1 == t.1 || b.is_some_and(|b| b.1 == t.1) {
            o.1
        } else if b.is_some_and(|b| b.1 == o.1) {
            t.1
        } else {
            merged.messages.push(format!("Auto-merging {path}\n"));
            let read = |e: Entry| -> Result<Vec<u8>> {
                Ok(match e {
                    Some((_, id)) => repo.odb.read_kind(&id, ObjectKind::Blob)?,
                    None => Vec::new(),
                })
            };
            let result =
                crate::merge::merge(&read(b)?, &read(Some(o))?, &read(Some(t))?, "HEAD", label);
            let id = repo.odb.write(ObjectKind::Blob, &result.data)?;
            if result.conflicts > 0 {
                let kind = if b.is_some() { "content" } else { "add/add" };
                merged
                    .messages
                    .push(format!("CONFLICT ({kind}): Merge conflict in {path}\n"));
                merged.conflicts.push(Conflict {
                    path: path.to_string(),
                    stages: [b, Some(o), Some(t)],
                    worktree: (mode, id),
                });
                return Ok(Ok(()));
            }
            id
        };
        merged.clean.insert(path.to_string(), (mode, id));
        Ok(Ok(()))
    }

    /// The message a merge commit gets: git's, with ` into <branch>`
    /// unless the branch is `main` or `master`.
    fn merge_message(&self, repo: &Repo<'_>, theirs: &Theirs) -> Result<String> {
        let into = match repo.refs.head()? {
            Head::Branch(name) => match name.strip_prefix("refs/heads/").unwrap_or(&name) {
                "main" | "master" => String::new(),
                other => format!(" into {other}"),
            },
            Head::Detached(_) => " into HEAD".to_string(),
        };
        Ok(format!("{}{into}\n", theirs.message))
    }

    /// Merges `theirs` into HEAD: up to date, a fast-forward, a merge
    /// commit, or the conflict state.
    pub(super) fn merge_into(
        &mut self,
        repo: &Repo<'_>,
        theirs: &Theirs,
        options: &Options,
    ) -> Result<i32> {
        let Some(ours) = repo.refs.head_id()? else {
            return Ok(self.merge_refused("into a branch without commits"));
        };
        if self.is_ancestor(repo, theirs.id, ours)? {
            self.say("Already up to date.\n");
            return Ok(0);
        }
        if options.ff != Ff::Never && self.is_ancestor(repo, ours, theirs.id)? {
            let message = format!("{}: Fast-forward", theirs.reflog);
            return self.fast_forward(repo, ours, theirs.id, &message, options.quiet);
        }
        if options.ff == Ff::Only {
            return Err(fatal("Not possible to fast-forward, aborting."));
        }
        let bases = self.merge_bases(repo, ours, theirs.id)?;
        let base = match bases.as_slice() {
            [] => return Err(fatal("refusing to merge unrelated histories")),
            [base] => *base,
            _ => return Ok(self.merge_refused("with more than one merge base")),
        };
        let (status, _) = self.compute_status(repo, Untracked::No)?;
        if !status.staged.is_empty() {
            self.err(
                "error: Your local changes to the following files would be overwritten by merge:\n",
            );
            for (path, _) in &status.staged {
                self.err(&format!("  {path}\n"));
            }
            self.err("Merge with strategy ort failed.\n");
            return Ok(2);
        }
        let head = self.head_files(repo)?;
        let flat = |id: &ObjectId| -> Result<Flat> { repo.commit_files(Some(id)) };
        let merged = match self.merge_trees(
            repo,
            &flat(&base)?,
            &head,
            &flat(&theirs.id)?,
            &theirs.label,
        )? {
            Ok(merged) => merged,
            Err(refused) => return Ok(self.merge_refused(refused)),
        };
        let mut target = merged.clean.clone();
        for conflict in &merged.conflicts {
            target.insert(conflict.path.clone(), conflict.worktree);
        }
        if !self.move_worktree(repo, &target, "merge")? {
            self.err("Merge with strategy ort failed.\n");
            return Ok(2);
        }
        let orig = files::join(&repo.git_dir, "ORIG_HEAD");
        self.files
            .write(&orig, format!("{ours}\n").as_bytes())
            .at(&orig)?;
        if !options.quiet || !merged.conflicts.is_empty() {
            self.say(&merged.messages.concat());
        }
        let message = match &options.message {
            Some(m) => super::clean_message(m),
            None => self.merge_message(repo, theirs)?,
        };
        if merged.conflicts.is_empty() {
            self.commit_merge(repo, theirs, &message, &target, options.quiet)?;
            return Ok(0);
        }
        self.leave_conflicts(repo, theirs, &message, &merged.conflicts, &target)?;
        self.say("Automatic merge failed; fix conflicts and then commit the result.\n");
        Ok(1)
    }

    /// Moves HEAD from `ours` to `theirs`, a descendant, as `Updating
    /// a..b` / `Fast-forward` and the diffstat say.
    pub(super) fn fast_forward(
        &mut self,
        repo: &Repo<'_>,
        ours: ObjectId,
        theirs: ObjectId,
        reflog: &str,
        quiet: bool,
    ) -> Result<i32> {
        let before = self.head_files(repo)?;
        if !quiet {
            let (x, y) = (self.abbrev(repo, &ours), self.abbrev(repo, &theirs));
            self.say(&format!("Updating {x}..{y}\n"));
        }
        if !self.move_tree(repo, &theirs, "merge")? {
            return Ok(1);
        }
        let orig = files::join(&repo.git_dir, "ORIG_HEAD");
        self.files
            .write(&orig, format!("{ours}\n").as_bytes())
            .at(&orig)?;
        self.update_head(repo, &theirs, reflog)?;
        if !quiet {
            let after = repo.commit_files(Some(&theirs))?;
            self.say("Fast-forward\n");
            let stat = self.diffstat(repo, &before, &after)?;
            self.say(&stat);
            let summary = self.summary(repo, &before, &after)?;
            self.say(&summary);
        }
        Ok(0)
    }

    /// Writes the merge commit of a clean merge of `after` and moves HEAD
    /// (still where the merge started) to it.
    fn commit_merge(
        &mut self,
        repo: &Repo<'_>,
        theirs: &Theirs,
        message: &str,
        after: &Flat,
        quiet: bool,
    ) -> Result<()> {
        let ours = repo
            .refs
            .head_id()?
            .ok_or_else(|| fatal("HEAD has no commit"))?;
        let before = &self.head_files(repo)?;
        let commit = Commit {
            tree: repo.write_tree(after)?,
            parents: vec![ours, theirs.id],
            author: self.signature(repo, "AUTHOR")?,
            committer: self.signature(repo, "COMMITTER")?,
            extra: Vec::new(),
            message: message.to_string(),
        };
        let id = repo.odb.write(ObjectKind::Commit, &commit.to_bytes())?;
        self.update_head(
            repo,
            &id,
            &format!("{}: Merge made by the 'ort' strategy.", theirs.reflog),
        )?;
        if !quiet {
            self.say("Merge made by the 'ort' strategy.\n");
            let stat = self.diffstat(repo, before, after)?;
            self.say(&stat);
            let summary = self.summary(repo, before, after)?;
            self.say(&summary);
        }
        Ok(())
    }

    /// The state a conflicted merge leaves: stages in the index, and the
    /// merge's files in `.git`.
    fn leave_conflicts(
        &mut self,
        repo: &Repo<'_>,
        theirs: &Theirs,
        message: &str,
        conflicts: &[Conflict],
        target: &Flat,
    ) -> Result<()> {
        let (mut index, _) = repo.index()?;
        for conflict in conflicts {
            index.remove(&conflict.path);
            for (stage, entry) in conflict.stages.iter().enumerate() {
                if let Some((mode, id)) = entry {
                    let mut e = IndexEntry::new(conflict.path.clone(), *mode, *id, 0, 0);
                    e.stage = stage as u16 + 1;
                    index.entries.push(e);
                }
            }
        }
        index.sort();
        repo.save_index(&index)?;
        let mut text = format!("{message}\n# Conflicts:\n");
        for conflict in conflicts {
            text.push_str(&format!("#\t{}\n", conflict.path));
        }
        let auto = repo.write_tree(target)?;
        let state: BTreeMap<&str, String> = [
            ("MERGE_HEAD", format!("{}\n", theirs.id)),
            ("MERGE_MSG", text),
            ("MERGE_MODE", String::new()),
            ("AUTO_MERGE", format!("{auto}\n")),
        ]
        .into_iter()
        .collect();
        for (name, text) in state {
            let path = files::join(&repo.git_dir, name);
            self.files.write(&path, text.as_bytes()).at(&path)?;
        }
        Ok(())
    }
}
