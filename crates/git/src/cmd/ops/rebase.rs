//! `git pull --rebase` without conflicts: the commits of the current
//! branch since it forked from the upstream are replayed, one by one, on
//! what the pull fetched, as git's rebase (merge backend) replays them:
//! the same author and message, a new committer, reflog entries
//! `pull --rebase (start|pick|finish)`. What git would decide with more
//! than a replay of plain commits (a fork point other than the merge
//! base, a merge commit to linearize, a commit that conflicts or whose
//! change is already upstream) is left to the computer's git before
//! anything is written, so the light shell never leaves a rebase half
//! done.

use gix_hash::ObjectId;
use gix_object::Kind as ObjectKind;

use super::merge::Refused;
use super::Run;
use crate::error::{At, Result};
use crate::files;
use crate::objects::Commit;
use crate::refs::Head;
use crate::repo::{Flat, Repo};

/// One commit replayed: the commit, and the tree it gets.
struct Pick {
    commit: Commit,
    tree: Flat,
}

impl<'a> Run<'a> {
    /// git's `require_clean_work_tree` for a pull with rebase: `Some`
    /// (its status) when the worktree or index has changes.
    pub(super) fn refuse_unclean_rebase(&mut self, repo: &Repo<'_>) -> Result<Option<i32>> {
        let (status, _) = self.compute_status(repo, crate::worktree::Untracked::No)?;
        let unstaged = !status.unstaged.is_empty();
        let staged = !status.staged.is_empty();
        if unstaged {
            self.err("error: cannot pull with rebase: You have unstaged changes.\n");
        }
        match (unstaged, staged) {
            (true, true) => {
                self.err("error: additionally, your index contains uncommitted changes.\n")
            }
            (false, true) => self
                .err("error: cannot pull with rebase: Your index contains uncommitted changes.\n"),
            _ => {}
        }
        if unstaged || staged {
            self.err("error: Please commit or stash them.\n");
            return Ok(Some(128));
        }
        Ok(None)
    }

    /// Rebases the current branch (at `ours`) onto `theirs`; `tracking`
    /// is the remote-tracking ref whose reflog git reads for the fork
    /// point.
    pub(super) fn rebase_onto(
        &mut self,
        repo: &Repo<'_>,
        (ours, theirs): (ObjectId, ObjectId),
        tracking: Option<&str>,
        quiet: bool,
    ) -> Result<i32> {
        let Head::Branch(branch) = repo.refs.head()? else {
            return Ok(self.rebase_refused("on a detached HEAD"));
        };
        if self.is_ancestor(repo, theirs, ours)? {
            self.say(&format!(
                "Current branch {} is up to date.\n",
                super::network::short(&branch)
            ));
            return Ok(0);
        }
        let picks = match self.plan_rebase(repo, (ours, theirs), tracking)? {
            Ok(picks) => picks,
            Err(refused) => return Ok(self.rebase_refused(refused)),
        };
        let Some(last) = picks.last() else {
            return Ok(self.rebase_refused("with nothing to replay"));
        };
        if !self.move_worktree(repo, &last.tree, "merge")? {
            return Ok(1);
        }
        let orig = files::join(&repo.git_dir, "ORIG_HEAD");
        self.files
            .write(&orig, format!("{ours}\n").as_bytes())
            .at(&orig)?;
        let action = self.action.clone();
        repo.refs.set_head_detached(&theirs)?;
        self.write_reflog(
            repo,
            "HEAD",
            Some(ours),
            &theirs,
            &format!("{action} (start): checkout {theirs}"),
        )?;
        let mut at = theirs;
        let mut tree = ObjectId::null(gix_hash::Kind::Sha1);
        for (i, pick) in picks.iter().enumerate() {
            if !quiet {
                self.err(&format!("Rebasing ({}/{})\r", i + 1, picks.len()));
            }
            tree = repo.write_tree(&pick.tree)?;
            let commit = Commit {
                tree,
                parents: vec![at],
                author: pick.commit.author.clone(),
                committer: self.signature(repo, "COMMITTER")?,
                extra: Vec::new(),
                message: pick.commit.message.clone(),
            };
            let id = repo.odb.write(ObjectKind::Commit, &commit.to_bytes())?;
            repo.refs.set_head_detached(&id)?;
            let subject = pick.commit.message.lines().next().unwrap_or_default();
            self.write_reflog(
                repo,
                "HEAD",
                Some(at),
                &id,
                &format!("{action} (pick): {subject}"),
            )?;
            at = id;
        }
        // What git's last merge left (the merged tree).
        let auto = files::join(&repo.git_dir, "AUTO_MERGE");
        self.files
            .write(&auto, format!("{tree}\n").as_bytes())
            .at(&auto)?;
        repo.refs.write(&branch, &at)?;
        self.write_reflog(
            repo,
            &branch,
            Some(ours),
            &at,
            &format!("{action} (finish): {branch} onto {theirs}"),
        )?;
        repo.refs.set_head_branch(&branch)?;
        self.write_reflog(
            repo,
            "HEAD",
            Some(at),
            &at,
            &format!("{action} (finish): returning to {branch}"),
        )?;
        if !quiet {
            self.err(&format!("Successfully rebased and updated {branch}.\n"));
        }
        Ok(0)
    }

    /// The commits to replay and the tree each gets, or why git's rebase
    /// would do something a plain replay does not.
    fn plan_rebase(
        &self,
        repo: &Repo<'_>,
        (ours, theirs): (ObjectId, ObjectId),
        tracking: Option<&str>,
    ) -> Result<std::result::Result<Vec<Pick>, Refused>> {
        let base = match self.merge_bases(repo, ours, theirs)?.as_slice() {
            [base] => *base,
            _ => return Ok(Err("without exactly one merge base")),
        };
        // git starts from the fork point its reflog of the upstream
        // shows; it is the merge base when the base is in that reflog and
        // no other entry lies on our side of it (or there is no reflog).
        if let Some(tracking) = tracking {
            let log = files::join(&files::join(&repo.git_dir, "logs"), tracking);
            let text = files::read_optional(self.files, &log).at(&log)?;
            let mut seen: Vec<ObjectId> = Vec::new();
            for line in String::from_utf8_lossy(&text.unwrap_or_default()).lines() {
                for word in line.split(' ').take(2) {
                    if let Ok(id) = ObjectId::from_hex(word.as_bytes()) {
                        if !id.is_null() {
                            seen.push(id);
                        }
                    }
                }
            }
            if !seen.is_empty() {
                if !seen.contains(&base) {
                    return Ok(Err("from a fork point other than the merge base"));
                }
                for id in &seen {
                    if repo.odb.contains(id)?
                        && self.is_ancestor(repo, *id, ours)?
                        && !self.is_ancestor(repo, *id, base)?
                    {
                        return Ok(Err("from a fork point other than the merge base"));
                    }
                }
            }
        }
        let mut chain = Vec::new();
        let mut at = ours;
        while at != base {
            let commit = repo.commit(&at)?;
            let [parent] = commit.parents.as_slice() else {
                return Ok(Err("of merge commits"));
            };
            let parent = *parent;
            chain.push(commit);
            at = parent;
        }
        chain.reverse();
        let mut current = repo.commit_files(Some(&theirs))?;
        let mut picks = Vec::new();
        for commit in chain {
            let parent = repo.commit_files(commit.parents.first())?;
            let mine = repo.flatten(&commit.tree)?;
            let merged = match self.merge_trees(repo, &parent, &current, &mine, "")? {
                Ok(merged) if merged.conflicts.is_empty() => merged.clean,
                Ok(_) => return Ok(Err("with conflicts")),
                Err(refused) => return Ok(Err(refused)),
            };
            if merged == current {
                return Ok(Err("of a commit already upstream"));
            }
            current = merged.clone();
            picks.push(Pick {
                commit,
                tree: merged,
            });
        }
        Ok(Ok(picks))
    }

    fn rebase_refused(&mut self, what: &str) -> i32 {
        self.err(&format!(
            "stead: git pull --rebase {what} is not in the light shell's git; run it on the computer\n"
        ));
        129
    }
}
