//! `git push [-u] [-q] [-f] [--tags] [--delete] [--force-with-lease[=REF[:EXPECT]]]
//! [REMOTE|URL [[+]SRC[:DST] | :DST]...]` over smart HTTP: which refs to
//! update (the refspecs, every tag, else the current branch's upstream),
//! which of them git would refuse (a non-fast-forward, a remote ref we do
//! not have, a tag that exists, unless forced by `+` or `--force`; a ref a
//! lease expected elsewhere, forced or not), the pack of what the server
//! lacks, and git's report: ` * [new branch]`, `a..b`, ` + a...b (forced
//! update)`, ` - [deleted]`, ` ! [rejected]` with git's hint, and the
//! remote-tracking refs moved (or deleted) as the server accepted each
//! update (a URL has none).

use gix_hash::ObjectId;

use super::network::{count_refspec_match, is_url, short, transport, Matched, Shown};
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

/// Why a push refuses one ref, in git's words. The order is git's for
/// the one hint it prints when several were refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Rejection {
    /// A non-fast-forward of the remote ref named as the current branch.
    NonFastForwardHead,
    /// A non-fast-forward of any other ref.
    NonFastForwardOther,
    AlreadyExists,
    FetchFirst,
    Stale,
}

impl Rejection {
    fn note(self) -> &'static str {
        match self {
            Rejection::NonFastForwardHead | Rejection::NonFastForwardOther => "non-fast-forward",
            Rejection::AlreadyExists => "already exists",
            Rejection::FetchFirst => "fetch first",
            Rejection::Stale => "stale info",
        }
    }

    fn hint(self) -> &'static str {
        match self {
            Rejection::NonFastForwardHead => "hint: Updates were rejected because the tip of your current branch is behind\nhint: its remote counterpart. If you want to integrate the remote changes,\nhint: use 'git pull' before pushing again.\nhint: See the 'Note about fast-forwards' in 'git push --help' for details.\n",
            Rejection::NonFastForwardOther => "hint: Updates were rejected because a pushed branch tip is behind its remote\nhint: counterpart. If you want to integrate the remote changes, use 'git pull'\nhint: before pushing again.\nhint: See the 'Note about fast-forwards' in 'git push --help' for details.\n",
            Rejection::AlreadyExists => "hint: Updates were rejected because the tag already exists in the remote.\n",
            Rejection::FetchFirst => "hint: Updates were rejected because the remote contains work that you do not\nhint: have locally. This is usually caused by another repository pushing to\nhint: the same ref. If you want to integrate the remote changes, use\nhint: 'git pull' before pushing again.\nhint: See the 'Note about fast-forwards' in 'git push --help' for details.\n",
            Rejection::Stale => "",
        }
    }
}

/// What `--force-with-lease` expects a remote ref to be: what its
/// remote-tracking ref says, or a given commit (null: that it is absent).
#[derive(Clone, Copy)]
enum Expect {
    Tracking,
    Id(ObjectId),
}

/// The leases of a push: for every ref (`None`) or one named.
type Leases = Vec<(Option<String>, Expect)>;

/// What a push will ask for and show.
#[derive(Default)]
struct Plan {
    updates: Vec<Update>,
    shown: Vec<Shown>,
    /// Why one was refused (the first in git's hint order).
    rejected: Option<Rejection>,
}

impl Plan {
    fn reject(&mut self, why: Rejection, from: String, to: String) {
        self.rejected = Some(self.rejected.map_or(why, |r| r.min(why)));
        self.shown.push(Shown {
            code: '!',
            summary: "[rejected]".into(),
            from,
            to,
            note: Some(why.note().into()),
        });
    }
}

/// The local ref a refspec's source names, as git matches it against
/// every local ref (`HEAD` the current branch); `refs/heads/X` when none
/// does, `Err` with git's message when more than one does (a tag and a
/// branch of one name).
fn local_src(
    repo: &Repo<'_>,
    head: &Head,
    side: &str,
) -> Result<std::result::Result<String, String>> {
    if side == "HEAD" {
        return Ok(Ok(full_ref(head, side)));
    }
    let refs = repo.refs.list("refs/")?;
    Ok(
        match count_refspec_match(side, refs.keys().map(String::as_str)) {
            Matched::One(name) => Ok(name.to_string()),
            Matched::None => Ok(full_ref(head, side)),
            Matched::Many => Err(format!("src refspec {side} matches more than one")),
        },
    )
}

/// The remote ref a refspec's destination names: the one the server has
/// by git's rules, else a branch or tag as the source is one; `Err` with
/// git's message when it names more than one.
fn remote_dst(
    dst: &str,
    src: Option<&str>,
    remote_refs: &[RemoteRef],
) -> std::result::Result<String, String> {
    match count_refspec_match(dst, remote_refs.iter().map(|r| r.name.as_str())) {
        Matched::One(name) => Ok(name.to_string()),
        Matched::Many => Err(format!("dst refspec {dst} matches more than one")),
        Matched::None => Ok(guess_dst(dst, src)),
    }
}

/// The remote ref a destination the server lacks becomes: itself when
/// spelled from `refs/`, else a tag or branch as the source is one.
fn guess_dst(dst: &str, src: Option<&str>) -> String {
    match src {
        _ if dst.starts_with("refs/") => dst.to_string(),
        Some(src) if src.starts_with("refs/tags/") => format!("refs/tags/{dst}"),
        _ => format!("refs/heads/{dst}"),
    }
}

/// `--force-with-lease`, `=REF` and `=REF:EXPECT` as given; `Err` is
/// git's message for an expectation that names no object.
fn leases(repo: &Repo<'_>, a: &Parsed) -> Result<std::result::Result<Leases, String>> {
    let mut out = Vec::new();
    for (long, value) in &a.opts {
        if *long != "force-with-lease" {
            continue;
        }
        let Some(value) = value else {
            out.push((None, Expect::Tracking));
            continue;
        };
        let (name, expect) = match value.split_once(':') {
            None => (value.as_str(), Expect::Tracking),
            Some((name, "")) => (name, Expect::Id(ObjectId::null(gix_hash::Kind::Sha1))),
            Some((name, rev)) => match repo.rev_parse(rev) {
                Ok(Some(id)) => (name, Expect::Id(id)),
                Ok(None) | Err(_) => {
                    return Ok(Err(format!(
                        "error: cannot parse expected object name '{rev}'\n"
                    )))
                }
            },
        };
        out.push((Some(name.to_string()), expect));
    }
    Ok(Ok(out))
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
    /// The refs `a` names (refspecs, `--delete`'s refs, `--tags`' tags),
    /// or the current branch's upstream.
    /// `Err` is git's message for a refspec that names more than one ref.
    fn push_specs(
        &mut self,
        repo: &Repo<'_>,
        a: &Parsed,
        name: &str,
    ) -> Result<std::result::Result<Vec<PushSpec>, String>> {
        let head = repo.refs.head()?;
        let force = a.has("force");
        let named = &a.operands[a.operands.len().min(1)..];
        if a.has("delete") {
            if named.is_empty() {
                return Err(fatal("--delete doesn't make sense without any refs"));
            }
            if named.iter().any(|n| n.contains(':')) {
                return Err(fatal("--delete only accepts plain target ref names"));
            }
            return Ok(Ok(named
                .iter()
                .map(|dst| PushSpec {
                    src: None,
                    dst: dst.clone(),
                    force,
                })
                .collect()));
        }
        if !named.is_empty() || a.has("tags") {
            let mut specs = Vec::new();
            for spec in named {
                let (plus, spec) = match spec.strip_prefix('+') {
                    Some(rest) => (true, rest),
                    None => (false, spec.as_str()),
                };
                let (src, dst) = match spec.split_once(':') {
                    Some((src, dst)) => (src, Some(dst)),
                    None => (spec, None),
                };
                let src = match src {
                    "" => None,
                    src => match local_src(repo, &head, src)? {
                        Ok(name) => Some(name),
                        Err(message) => return Ok(Err(message)),
                    },
                };
                // Without `:DST` the source's full name is the
                // destination, as git takes it.
                let dst = match (&src, dst) {
                    (Some(src), None | Some("HEAD")) => src.clone(),
                    (None, Some("HEAD")) => full_ref(&head, "HEAD"),
                    (_, dst) => dst.unwrap_or_default().to_string(),
                };
                specs.push(PushSpec {
                    src,
                    dst,
                    force: force || plus,
                });
            }
            if a.has("tags") {
                for tag in repo.refs.list("refs/tags/")?.into_keys() {
                    specs.push(PushSpec {
                        src: Some(tag.clone()),
                        dst: tag,
                        force,
                    });
                }
            }
            return Ok(Ok(specs));
        }
        let Head::Branch(branch) = &head else {
            return Err(fatal("You are not currently on a branch.\nTo push the history leading to the current (detached HEAD)\nstate now, use\n\n    git push origin HEAD:<name-of-remote-branch>\n"));
        };
        let short_name = short(branch).to_string();
        let config = repo.config()?;
        let push_default = config.get(&Key::parse("push.default")?);
        let upstream = config.get(&Key::parse(&format!("branch.{short_name}.merge"))?);
        let upstream_remote = config.get(&Key::parse(&format!("branch.{short_name}.remote"))?);
        let dst = match upstream {
            Some(merge) if upstream_remote.as_deref() == Some(name) => {
                if merge != *branch {
                    // git's advice, unless configured away.
                    let mut advice = String::new();
                    if push_default.is_none() {
                        advice.push_str("\nTo choose either option permanently, see push.default in 'git help config'.\n");
                    }
                    if config.get(&Key::parse("branch.autoSetupMerge")?).as_deref()
                        != Some("simple")
                    {
                        advice.push_str("\nTo avoid automatically configuring an upstream branch when its name\nwon't match the local branch, see option 'simple' of branch.autoSetupMerge\nin 'git help config'.\n");
                    }
                    return Err(fatal(format!("The upstream branch of your current branch does not match\nthe name of your current branch.  To push to the upstream branch\non the remote, use\n\n    git push {name} HEAD:{}\n\nTo push to the branch of the same name on the remote, use\n\n    git push {name} HEAD\n{advice}", short(&merge))));
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
        Ok(Ok(vec![PushSpec {
            src: Some(branch.clone()),
            dst,
            force,
        }]))
    }

    /// What a lease expects of remote ref `dst`, if one applies to it.
    fn lease_of(
        &self,
        repo: &Repo<'_>,
        leases: &Leases,
        remote_name: &str,
        dst: &str,
    ) -> Result<Option<ObjectId>> {
        let lease = leases.iter().rev().find(|(name, _)| match name {
            None => true,
            Some(name) => name == dst || guess_dst(name, None) == dst,
        });
        Ok(match lease {
            None => None,
            Some((_, Expect::Id(id))) => Some(*id),
            Some((_, Expect::Tracking)) => {
                let tracking = match dst.strip_prefix("refs/heads/") {
                    Some(b) if !is_url(remote_name) => repo
                        .refs
                        .resolve(&format!("refs/remotes/{remote_name}/{b}"))?,
                    _ => None,
                };
                Some(tracking.unwrap_or(ObjectId::null(gix_hash::Kind::Sha1)))
            }
        })
    }

    /// What each spec asks of the server given what it has; `None` (the
    /// error printed) for a source or a deletion that names nothing.
    fn plan_push(
        &mut self,
        repo: &Repo<'_>,
        (specs, leases): (&[PushSpec], &Leases),
        (remote_name, remote_refs): (&str, &[RemoteRef]),
        url: &str,
    ) -> Result<Option<Plan>> {
        let null = ObjectId::null(gix_hash::Kind::Sha1);
        let head = match repo.refs.head()? {
            Head::Branch(name) => Some(name),
            Head::Detached(_) => None,
        };
        let mut plan = Plan::default();
        for spec in specs {
            let dst = match remote_dst(&spec.dst, spec.src.as_deref(), remote_refs) {
                Ok(dst) => dst,
                Err(message) => {
                    self.err(&format!(
                        "error: {message}\nerror: failed to push some refs to '{url}'\n"
                    ));
                    return Ok(None);
                }
            };
            let old = remote_refs.iter().find(|r| r.name == dst).map(|r| r.id);
            let to = short(&dst).to_string();
            let lease = self.lease_of(repo, leases, remote_name, &dst)?;
            let stale = lease.is_some_and(|expect| expect != old.unwrap_or(null));
            let Some(src) = &spec.src else {
                let Some(old) = old else {
                    self.err(&format!("error: unable to delete '{}': remote ref does not exist\nerror: failed to push some refs to '{url}'\n", spec.dst));
                    return Ok(None);
                };
                if stale {
                    plan.reject(Rejection::Stale, String::new(), to);
                    continue;
                }
                plan.shown.push(Shown {
                    code: '-',
                    summary: "[deleted]".into(),
                    from: String::new(),
                    to,
                    note: None,
                });
                plan.updates.push(Update {
                    name: dst,
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
            let force = spec.force || lease.is_some();
            let (code, summary, note) = match old {
                Some(old) if old == new => continue,
                _ if stale => {
                    plan.reject(Rejection::Stale, from, to);
                    continue;
                }
                Some(old) => {
                    let known = repo.odb.contains(&old)?;
                    let tag = dst.starts_with("refs/tags/");
                    let forward = !tag && known && self.is_ancestor(repo, old, new)?;
                    let (x, y) = (self.abbrev(repo, &old), self.abbrev(repo, &new));
                    if forward {
                        (' ', format!("{x}..{y}"), None)
                    } else if force {
                        ('+', format!("{x}...{y}"), Some("forced update".to_string()))
                    } else {
                        // git's "current branch" is the remote ref
                        // spelled as HEAD's branch, whatever was pushed.
                        let why = match (tag, known) {
                            (true, _) => Rejection::AlreadyExists,
                            (false, true) if head.as_deref() == Some(dst.as_str()) => {
                                Rejection::NonFastForwardHead
                            }
                            (false, true) => Rejection::NonFastForwardOther,
                            (false, false) => Rejection::FetchFirst,
                        };
                        plan.reject(why, from, to);
                        continue;
                    }
                }
                None if dst.starts_with("refs/tags/") => ('*', "[new tag]".into(), None),
                None if dst.starts_with("refs/heads/") => ('*', "[new branch]".into(), None),
                None => ('*', "[new reference]".into(), None),
            };
            plan.shown.push(Shown {
                code,
                summary,
                from,
                to,
                note,
            });
            plan.updates.push(Update {
                name: dst,
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
                Ok(()) if update.name.starts_with("refs/heads/") && !is_url(remote_name) => {
                    let tracking = format!("refs/remotes/{remote_name}/{}", short(&update.name));
                    if update.new.is_null() {
                        self.delete_ref(repo, &tracking)?;
                    } else {
                        let old = repo.refs.resolve(&tracking)?;
                        repo.refs.write(&tracking, &update.new)?;
                        self.write_reflog(repo, &tracking, old, &update.new, "update by push")?;
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
        let leases = match leases(repo, a)? {
            Ok(leases) => leases,
            Err(message) => {
                self.err(&message);
                return Ok(129);
            }
        };
        let named = a.operands.len() > 1 || a.has("tags") || a.has("delete");
        let push_default = repo.config()?.get(&Key::parse("push.default")?);
        if !named && !matches!(push_default.as_deref(), None | Some("simple")) {
            self.err("stead: git push by a push.default other than simple is not in the light shell's git; run it on the computer\n");
            return Ok(129);
        }
        let (name, url) = self.remote_of(repo, a.operands.first().map(String::as_str))?;
        let specs = self.push_specs(repo, a, &name)?;
        let remote = Remote::new(self.http()?, &url);
        let (remote_refs, capabilities) = remote.receive_pack_refs().map_err(transport)?;
        let specs = match specs {
            Ok(specs) => specs,
            Err(message) => {
                self.err(&format!(
                    "error: {message}\nerror: failed to push some refs to '{url}'\n"
                ));
                return Ok(1);
            }
        };
        let planned = self.plan_push(repo, (&specs, &leases), (&name, &remote_refs), &url)?;
        let Some(mut plan) = planned else {
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
            if let Some(why) = plan.rejected {
                self.err(why.hint());
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
            let merge = guess_dst(&spec.dst, spec.src.as_deref());
            config.set(&Key::parse(&format!("branch.{b}.merge"))?, &merge);
            self.say(&format!(
                "branch '{b}' set up to track '{name}/{}'.\n",
                short(&merge)
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
