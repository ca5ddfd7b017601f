//! git's network commands in the light shell, through the agent: an exec
//! that clones, commits and pushes runs as a replay (each run rolled back
//! when it stops for a network answer, the agent fetching it in between),
//! against a real `git http-backend` on loopback. The target checks are
//! the webhooks': loopback only with the local-development setting.

mod common;
#[path = "../../git/tests/common/http_backend.rs"]
mod http_backend;

use std::sync::atomic::Ordering;

use common::{agent, call, create, ok, request};
use http_backend::fixture_git as git;
use serde_json::{json, Value};
use stead_agent::auth::Caller;
use stead_agent::route::Action;

/// A served bare repository `project.git` with two commits.
fn served() -> (tempfile::TempDir, http_backend::Server) {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    git(&work, &["init", "-q", "-b", "main"]);
    for i in 0..2 {
        std::fs::write(work.join("README.md"), format!("version {i}\n")).unwrap();
        git(&work, &["add", "-A"]);
        git(&work, &["commit", "-q", "-m", &format!("commit {i}")]);
    }
    let server = http_backend::serve_clone(dir.path(), &work);
    (dir, server)
}

fn exec(agent: &stead_agent::Agent<common::FakeHost>, command: &str) -> Value {
    let body = json!({ "command": command }).to_string();
    ok(agent, "a", Action::Exec, &body)
}

/// Agent `a`, allowed to reach the loopback server (local development).
fn agent_reaching_loopback() -> stead_agent::Agent<common::FakeHost> {
    let agent = agent();
    create(&agent, "a");
    agent.host().local.set(true);
    ok(
        &agent,
        "a",
        Action::SettingsPut,
        r#"{"webhooks":{"allow_private_targets":true}}"#,
    );
    agent
}

#[test]
fn a_clone_commit_and_push_run_in_the_light_shell() {
    let (dir, server) = served();
    let agent = agent_reaching_loopback();
    let url = server.url("project.git");
    let out = exec(
        &agent,
        &format!(
            "git clone {url} repo && cd repo && echo new > new.txt && git add new.txt && \
             git commit -qm 'from the light shell' && git push -q && git log --format=%s"
        ),
    );
    assert_eq!(out["backend"], "shell", "{out}");
    assert_eq!(out["exit_code"], 0, "{out}");
    assert_eq!(out["stdout"], "from the light shell\ncommit 1\ncommit 0\n");
    assert_eq!(out["stderr"], "Cloning into 'repo'...\n");
    let bare = dir.path().join("served/project.git");
    assert_eq!(
        git(&bare, &["log", "--format=%s", "-n", "1"]),
        "from the light shell\n"
    );
    assert_eq!(git(&bare, &["show", "main:new.txt"]), "new\n");
    git(&bare, &["fsck", "--strict"]);
    // The commit pushed is the one the workspace kept (the runs before
    // the last were rolled back, and replayed the same clock).
    let ours = exec(&agent, "cd repo && git rev-parse HEAD origin/main");
    let theirs = git(&bare, &["rev-parse", "main"]);
    assert_eq!(ours["stdout"], format!("{theirs}{theirs}"));
    // One automatic checkpoint for the exec, none for the rolled-back runs.
    let checkpoints = ok(&agent, "a", Action::Checkpoints, "");
    let notes: Vec<&Value> = checkpoints["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| {
            c["note"]
                .as_str()
                .is_some_and(|n| n.starts_with("git clone"))
        })
        .collect();
    assert_eq!(notes.len(), 1, "{checkpoints}");
    // A fetch with nothing new, and a pull that is up to date.
    let pulled = exec(&agent, "cd repo && git fetch && git pull");
    assert_eq!(pulled["stdout"], "Already up to date.\n", "{pulled}");
}

#[test]
fn loopback_remotes_need_the_local_development_setting() {
    let (_dir, server) = served();
    let agent = agent();
    create(&agent, "a");
    let url = server.url("project.git");
    let out = exec(&agent, &format!("git clone {url} repo; ls"));
    assert_eq!(out["backend"], "shell");
    assert_eq!(
        out["stderr"],
        format!(
            "Cloning into 'repo'...\nfatal: unable to access '{url}/': 127.0.0.1 is 127.0.0.1, a loopback address\n"
        )
    );
    assert_eq!(out["stdout"], "", "nothing was left: {out}");
    assert_eq!(server.behaviour.requests.load(Ordering::SeqCst), 0);
}

#[test]
fn a_pack_cut_short_leaves_the_workspace_as_it_was() {
    let (_dir, server) = served();
    let agent = agent_reaching_loopback();
    server
        .behaviour
        .cut_fetch_after
        .store(300, Ordering::SeqCst);
    let url = server.url("project.git");
    let out = exec(&agent, &format!("git clone {url} repo; echo $?; ls -a"));
    assert_eq!(out["stdout"], "128\n.\n..\n", "{out}");
    let (status, body) = call(
        &agent,
        request(
            "a",
            Action::Exec,
            Caller::Admin,
            &json!({"command": "git status"}).to_string(),
        ),
    );
    assert_eq!(status, 200);
    assert_eq!(body["exit_code"], 128);
}

/// The secret the private-repository tests use.
const SECRET: &str = "s3cret-token-xyz";

#[test]
fn a_private_repository_is_cloned_and_pushed_with_the_hosts_credential_only() {
    let (dir, server) = served();
    server.behaviour.require_basic("ada", SECRET);
    let agent = agent_reaching_loopback();
    let url = server.url("project.git");
    // Without a credential: git's own refusal, and nothing left.
    let out = exec(&agent, &format!("git clone {url} repo; echo $?; ls"));
    assert_eq!(
        out["stderr"],
        format!(
            "Cloning into 'repo'...\nremote: Unauthorized\nfatal: Authentication failed for '{url}/'\n"
        )
    );
    assert_eq!(out["stdout"], "128\n", "{out}");
    // A credential for another host (the same address, another port) is
    // not sent here.
    let host = format!("127.0.0.1:{}", server.port);
    let other = format!("127.0.0.1:{}", server.port.wrapping_add(1).max(1));
    let body =
        json!({ "git_credentials": { other.clone(): { "username": "ada", "password": SECRET } } });
    ok(&agent, "a", Action::SettingsPut, &body.to_string());
    let out = exec(&agent, &format!("git clone -q {url} repo"));
    assert_eq!(out["exit_code"], 128, "{out}");
    assert!(server.behaviour.authorizations.lock().unwrap().is_empty());
    // Its own host's credential: clone, commit and push.
    let body =
        json!({ "git_credentials": { host.clone(): { "username": "ada", "password": SECRET } } });
    let settings = ok(&agent, "a", Action::SettingsPut, &body.to_string());
    assert_eq!(
        settings["git_credentials"][&host]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["set_at"],
        "only that one is set: {settings}"
    );
    let out = exec(
        &agent,
        &format!(
            "git clone {url} repo && cd repo && echo private > p.txt && git add p.txt && \
             git commit -qm private && git push -q && cat .git/config && git log --format=%s -n 1"
        ),
    );
    assert_eq!(out["exit_code"], 0, "{out}");
    assert!(
        out["stdout"].as_str().unwrap().ends_with("private\n"),
        "{out}"
    );
    let bare = dir.path().join("served/project.git");
    assert_eq!(git(&bare, &["show", "main:p.txt"]), "private\n");
    let sent = server.behaviour.authorizations.lock().unwrap().clone();
    assert!(!sent.is_empty());
    assert!(sent
        .iter()
        .all(|a| *a == http_backend::basic("ada", SECRET)));
    // The secret is nowhere the agent shows: settings, the audit log, the
    // workspace's files, a command's output.
    let shown = [
        ok(&agent, "a", Action::Settings, ""),
        ok(&agent, "a", Action::Audit, ""),
        exec(
            &agent,
            "cat repo/.git/config; cat repo/.git/FETCH_HEAD; env; grep -r s3cret / ; true",
        ),
    ];
    for value in shown {
        assert!(!value.to_string().contains(SECRET), "{value}");
    }
    // Forgotten: the repository is private again.
    let body = json!({ "git_credentials": { host.clone(): null } });
    let settings = ok(&agent, "a", Action::SettingsPut, &body.to_string());
    assert!(
        settings["git_credentials"].get(&host).is_none(),
        "{settings}"
    );
    let out = exec(&agent, "cd repo && git fetch");
    assert_eq!(
        out["stderr"],
        format!("remote: Unauthorized\nfatal: Authentication failed for '{url}/'\n")
    );
}

#[test]
fn bad_credentials_are_refused_whole() {
    let agent = agent();
    create(&agent, "a");
    let (status, body) = call(
        &agent,
        request(
            "a",
            Action::SettingsPut,
            Caller::Admin,
            r#"{"git":{"name":"Ada"},"git_credentials":{"https://github.com":{"token":"t"}}}"#,
        ),
    );
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], "INVALID_REQUEST", "{body}");
    let settings = ok(&agent, "a", Action::Settings, "");
    assert_eq!(settings["git"], json!({}), "nothing was stored: {settings}");
    assert_eq!(settings["git_credentials"], json!({}));
}

/// A secret from the store, bound to the server's host and sent as a
/// bearer token, opens a private repository to the light shell's git;
/// each use is audited by name and host, and its value is in no answer.
#[test]
fn a_stored_bearer_secret_reaches_its_host_and_is_audited_by_name() {
    let (_dir, server) = served();
    *server.behaviour.require_authorization.lock().unwrap() = Some(format!("Bearer {SECRET}"));
    let agent = agent_reaching_loopback();
    let url = server.url("project.git");
    let host = format!("127.0.0.1:{}", server.port);
    let body = json!({ "secrets": {
        "CI_TOKEN": { "hosts": [host.clone()], "bearer": SECRET },
        "ELSEWHERE": { "hosts": ["*.example.com"], "bearer": "other-value" },
    } });
    let settings = ok(&agent, "a", Action::SettingsPut, &body.to_string());
    assert_eq!(
        settings["secrets"]["CI_TOKEN"],
        json!({ "hosts": [host.clone()], "header": "bearer", "set_at": settings["secrets"]["CI_TOKEN"]["set_at"] })
    );
    let out = exec(
        &agent,
        &format!("git clone -q {url} repo && cat repo/README.md"),
    );
    assert_eq!(out["exit_code"], 0, "{out}");
    assert_eq!(out["stdout"], "version 1\n");
    let sent = server.behaviour.authorizations.lock().unwrap().clone();
    assert!(
        !sent.is_empty() && sent.iter().all(|a| *a == format!("Bearer {SECRET}")),
        "{sent:?}"
    );
    let audit = ok(&agent, "a", Action::Audit, "");
    let uses: Vec<&Value> = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "secret.use")
        .collect();
    assert_eq!(uses.len(), sent.len(), "one entry per request: {audit}");
    assert!(uses
        .iter()
        .all(|e| e["target"] == "CI_TOKEN" && e["detail"]["host"] == host.as_str()));
    let shown = [
        ok(&agent, "a", Action::Settings, ""),
        audit,
        exec(&agent, "env; cat repo/.git/config; grep -r s3cret / ; true"),
    ];
    for value in shown {
        assert!(!value.to_string().contains(SECRET), "{value}");
    }
    // Bound to no host: refused, nothing changed.
    let (status, body) = call(
        &agent,
        request(
            "a",
            Action::SettingsPut,
            Caller::Admin,
            r#"{"secrets":{"CI_TOKEN":null,"NOWHERE":{"hosts":[],"bearer":"x"}}}"#,
        ),
    );
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], "INVALID_REQUEST", "{body}");
    let settings = ok(&agent, "a", Action::Settings, "");
    assert!(settings["secrets"]["CI_TOKEN"].is_object(), "{settings}");
}
