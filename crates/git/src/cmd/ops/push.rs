//! `git push [-u] [-q] [-f] [REMOTE [[+]SRC[:DST] | :DST]...]` over smart
//! HTTP: which refs to update (the refspecs, else the current branch's
//! upstream), which of them git would refuse (a non-fast-forward, or a
//! remote ref we do not have, unless forced by `+` or `--force`), the pack
//! of what the server lacks, and git's report: ` * [new branch]`, `a..b`,
//! ` + a...b (forced update)`, ` - [deleted]`, ` ! [rejected]` with git's
//! hints, and the remote-tracking refs moved (or deleted) as the server
//! accepted each update.

use gix_hash::ObjectId;

use super::network::{short, transport, Shown};
use super::{fatal, Run};
use crate::cmd::args::Parsed;
use crate::config::Key;
use crate::error::Result;
use crate::packfile;
use crate::refs::Head;
use crate::repo::Repo;
use crate::transport::{Remote, RemoteRef, Report, Update};

/// One ref a push names: the local ref (`None`: delete the remote one),
/// the remote ref, and whether it may move other than forward.
struct PushSpec {
    src: Option<String>,
    dst: String,
    force: bool,
}

/// What a push will ask for and show.
#[derive(Default)]
struct Plan {
    updates: Vec<Update>,
    shown: Vec<Shown>,
    /// Why one was refused (`fetch first`, `non-fast-forward`).
    rejected: Option<&'static str>,
}

/// A refspec side as a full ref name (`HEAD` → the current branch).
fn full_ref(head: &Head, side: &str) -> String {
    if side == "HEAD" {
        match head {
            Head::Branch(b) => b.clone(),
            Head::Detached(_) => "HEAD".to_string(),
        }
    } else if side.starts_with("refs/") {
        side.to_string()
    } else {
        format!("refs/heads/{side}")
    }
}

impl<'a> Run<'a> {
    /// The refs `a` names, or the current branch's upstream.
    fn push_specs(&mut self, repo: &Repo<'_>, a: &Parsed, name: &str) -> Result<Vec<PushSpec>> {
        let head = repo.refs.head()?;
        let force = a.has("force");
        if a.operands.len() > 1 {
            let mut specs = Vec::new();
            for spec in &a.operands[1..] {
                let (plus, spec) = match spec.strip_prefix('+') {
                    Some(rest) => (true, rest),
                    None => (false, spec.as_str()),
                };
                let (src, dst) = spec.split_once(':').unwrap_or((spec, spec));
                let src = (!src.is_empty()).then(|| full_ref(&head, src));
                let dst = match (&src, dst) {
                    (Some(src), "HEAD") => src.clone(),
                    (_, dst) => full_ref(&head, dst),
                };
                specs.push(PushSpec {
                    src,
                    dst,
                    force: force || plus,
                });
            }
            return Ok(specs);
        }
        let Head::Branch(branch) = &head else {
            return Err(fatal("You are not currently on a branch.\nTo push the history leading to the current (detached HEAD)\nstate now, use\n\n    git push origin HEAD:<name-of-remote-branch>\n"));
        };
        let short_name = short(branch).to_string();
        let config = repo.config()?;
        let upstream = config.get(&Key::parse(&format!("branch.{short_name}.merge"))?);
        let upstream_remote = config.get(&Key::parse(&format!("branch.{short_name}.remote"))?);
        let dst = match upstream {
            Some(merge) if upstream_remote.as_deref() == Some(name) => {
                if merge != *branch {
                    return Err(fatal(format!("The upstream branch of your current branch does not match\nthe name of your current branch.  To push to the upstream branch\non the remote, use\n\n    git push {name} HEAD:{}\n\nTo push to the branch of the same name on the remote, use\n\n    git push {name} HEAD\n", short(&merge))));
                }
                merge
            }
            _ if a.has("set-upstream") || upstream_remote.as_deref().is_some_and(|r| r != name) => {
                branch.clone()
            }
            _ => {
                return Err(fatal(format!("The current branch {short_name} has no upstream branch.\nTo push the current branch and set the remote as upstream, use\n\n    git push --set-upstream {name} {short_name}\n\nTo have this happen automatically for branches without a tracking\nupstream, see 'push.autoSetupRemote' in 'git help config'.\n")));
            }
        };
        Ok(vec![PushSpec {
            src: Some(branch.clone()),
            dst,
            force,
        }])
    }

    /// What each spec asks of the server given what it has; `None` (the
    /// error printed) for a source or a deletion that names nothing.
    fn plan_push(
        &mut self,
        repo: &Repo<'_>,
        specs: &[PushSpec],
        remote_refs: &[RemoteRef],
        url: &str,
    ) -> Result<Option<Plan>> {
        let null = ObjectId::null(gix_hash::Kind::Sha1);
        let mut plan = Plan::default();
        for spec in specs {
            let old = remote_refs
                .iter()
                .find(|r| r.name == spec.dst)
                .map(|r| r.id);
            let to = short(&spec.dst).to_string();
            let Some(src) = &spec.src else {
                let Some(old) = old else {
                    self.err(&format!("error: unable to delete '{to}': remote ref does not exist\nerror: failed to push some refs to '{url}'\n"));
                    return Ok(None);
                };
                plan.shown.push(Shown {
                    code: '-',
                    summary: "[deleted]".into(),
                    from: String::new(),
                    to,
                    note: None,
                });
                plan.updates.push(Update {
                    name: spec.dst.clone(),
                    old,
                    new: null,
                });
                continue;
            };
            let Some(new) = repo.rev_parse(src)? else {
                self.err(&format!(
                    "error: src refspec {} does not match any\nerror: failed to push some refs to '{url}'\n",
                    short(src)
                ));
                return Ok(None);
            };
            let from = short(src).to_string();
            let (code, summary, note) = match old {
                Some(old) if old == new => continue,
                Some(old) => {
                    let known = repo.odb.contains(&old)?;
                    let forward = known && self.is_ancestor(repo, old, new)?;
                    let (x, y) = (self.abbrev(repo, &old), self.abbrev(repo, &new));
                    if forward {
                        (' ', format!("{x}..{y}"), None)
                    } else if spec.force {
                        ('+', format!("{x}...{y}"), Some("forced update".to_string()))
                    } else {
                        let why = if known {
                            "non-fast-forward"
                        } else {
                            "fetch first"
                        };
                        plan.rejected = Some(why);
                        plan.shown.push(Shown {
                            code: '!',
                            summary: "[rejected]".into(),
                            from,
                            to,
                            note: Some(why.into()),
                        });
                        continue;
                    }
                }
                None if spec.dst.starts_with("refs/tags/") => ('*', "[new tag]".into(), None),
                None => ('*', "[new branch]".into(), None),
            };
            plan.shown.push(Shown {
                code,
                summary,
                from,
                to,
                note,
            });
            plan.updates.push(Update {
                name: spec.dst.clone(),
                old: old.unwrap_or(null),
                new,
            });
        }
        Ok(Some(plan))
    }

    /// Sends the plan's updates with the pack the server lacks; whether one
    /// failed. Each accepted update moves (or deletes) its remote-tracking
    /// ref; each refused one is shown as the server's reason.
    fn send_push(
        &mut self,
        repo: &Repo<'_>,
        remote: &Remote<'_>,
        remote_name: &str,
        (remote_refs, capabilities): (&[RemoteRef], &[String]),
        plan: &mut Plan,
    ) -> Result<bool> {
        let tips: Vec<ObjectId> = plan
            .updates
            .iter()
            .map(|u| u.new)
            .filter(|id| !id.is_null())
            .collect();
        // Deletions alone send no pack, as git sends none.
        let pack = if tips.is_empty() {
            Vec::new()
        } else {
            let theirs: Vec<ObjectId> = remote_refs.iter().map(|r| r.id).collect();
            let objects = packfile::objects_to_send(repo, &tips, &theirs)?;
            packfile::build(&repo.odb, &objects)?
        };
        let report: Report = remote
            .push(&plan.updates, &pack, capabilities)
            .map_err(transport)?;
        let mut failed = false;
        if let Err(reason) = &report.unpack {
            self.err(&format!("error: remote unpack failed: {reason}\n"));
            failed = true;
        }
        for update in &plan.updates {
            let status = report
                .refs
                .iter()
                .find(|(n, _)| *n == update.name)
                .map(|(_, s)| s.clone())
                .unwrap_or_else(|| Err("no report".into()));
            let line = plan
                .shown
                .iter_mut()
                .find(|s| s.to == short(&update.name) && s.code != '!')
                .expect("shown for every update");
            match status {
                Ok(()) if update.name.starts_with("refs/heads/") => {
                    let tracking = format!("refs/remotes/{remote_name}/{}", short(&update.name));
                    if update.new.is_null() {
                        repo.refs.delete(&tracking)?;
                    } else {
                        repo.refs.write(&tracking, &update.new)?;
                    }
                }
                Ok(()) => {}
                Err(reason) => {
                    failed = true;
                    line.code = '!';
                    line.summary = "[remote rejected]".into();
                    line.note = Some(reason);
                }
            }
        }
        Ok(failed)
    }

    pub(crate) fn push(&mut self, repo: &Repo<'_>, a: &Parsed) -> Result<i32> {
        let quiet = a.has("quiet");
        let (name, url) = self.remote_of(repo, a.operands.first().map(String::as_str))?;
        let specs = self.push_specs(repo, a, &name)?;
        let remote = Remote::new(self.http()?, &url);
        let (remote_refs, capabilities) = remote.receive_pack_refs().map_err(transport)?;
        let Some(mut plan) = self.plan_push(repo, &specs, &remote_refs, &url)? else {
            return Ok(1);
        };
        if plan.shown.is_empty() {
            if !quiet {
                self.err("Everything up-to-date\n");
            }
            return Ok(0);
        }
        let mut failed = plan.rejected.is_some();
        if !plan.updates.is_empty() {
            let advertised = (&remote_refs[..], &capabilities[..]);
            failed |= self.send_push(repo, &remote, &name, advertised, &mut plan)?;
        }
        if !quiet || failed {
            self.err(&format!("To {url}\n"));
            for line in &plan.shown {
                self.err(&line.push_line());
            }
        }
        if failed {
            self.err(&format!("error: failed to push some refs to '{url}'\n"));
            match plan.rejected {
                Some("fetch first") => self.err("hint: Updates were rejected because the remote contains work that you do not\nhint: have locally. This is usually caused by another repository pushing to\nhint: the same ref. If you want to integrate the remote changes, use\nhint: 'git pull' before pushing again.\nhint: See the 'Note about fast-forwards' in 'git push --help' for details.\n"),
                Some(_) => self.err("hint: Updates were rejected because the tip of your current branch is behind\nhint: its remote counterpart. If you want to integrate the remote changes,\nhint: use 'git pull' before pushing again.\nhint: See the 'Note about fast-forwards' in 'git push --help' for details.\n"),
                None => {}
            }
            return Ok(1);
        }
        if a.has("set-upstream") {
            self.set_upstreams(repo, &name, &specs)?;
        }
        Ok(0)
    }

    /// `push -u`: each pushed branch tracks the ref it was pushed to.
    fn set_upstreams(&mut self, repo: &Repo<'_>, name: &str, specs: &[PushSpec]) -> Result<()> {
        let mut config = repo.config()?;
        for spec in specs {
            let Some(b) = spec
                .src
                .as_deref()
                .and_then(|s| s.strip_prefix("refs/heads/"))
            else {
                continue;
            };
            config.set(&Key::parse(&format!("branch.{b}.remote"))?, name);
            config.set(&Key::parse(&format!("branch.{b}.merge"))?, &spec.dst);
            self.say(&format!(
                "branch '{b}' set up to track '{name}/{}'.\n",
                short(&spec.dst)
            ));
        }
        repo.save_config(&config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refspec_sides_name_full_refs() {
        let head = Head::Branch("refs/heads/main".into());
        assert_eq!(full_ref(&head, "HEAD"), "refs/heads/main");
        assert_eq!(full_ref(&head, "topic"), "refs/heads/topic");
        assert_eq!(full_ref(&head, "refs/tags/v1"), "refs/tags/v1");
    }
}
