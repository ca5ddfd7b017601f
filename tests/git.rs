//! End-to-end: git in the light shell and on the computer share one
//! repository, the workspace's `.git`. A commit made in the light shell is
//! one the computer's real git logs and sees as clean, and the reverse; the
//! identity the agent's settings name is the one both record; under
//! `auto`, what the light shell's git implements runs there and the rest
//! goes to the computer.

mod common;
#[path = "../crates/git/tests/common/http_backend.rs"]
mod http_backend;

use std::path::Path;
use std::sync::atomic::Ordering;

use common::{expect_ok, Agent};
use http_backend::fixture_git as real_git;
use serde_json::{json, Value};

fn run(agent: &Agent, command: &str, backend: &str) -> Value {
    let timeout_ms = if backend == "computer" {
        60_000
    } else {
        30_000
    };
    let out = agent.ok(
        "exec",
        json!({ "command": command, "backend": backend, "timeout_ms": timeout_ms }),
    );
    assert_eq!(out["exit_code"], 0, "{command} on {backend}: {out}");
    out
}

#[test]
fn a_light_shell_commit_is_the_computers_and_the_reverse() {
    let agent = Agent::new("git-both");
    run(
        &agent,
        "mkdir repo && cd repo && git init -q -b main && echo one > a.txt && git add a.txt && git commit -qm 'from the light shell'",
        "shell",
    );
    let log = run(&agent, "cd repo && git log --format='%an <%ae> %s' && git status --porcelain && git fsck --strict 2>&1", "computer");
    assert_eq!(
        log["stdout"],
        "stead agent <agent@stead.invalid> from the light shell\n"
    );
    run(
        &agent,
        "cd repo && echo two > b.txt && git add b.txt && git commit -qm 'from the computer' && git gc -q",
        "computer",
    );
    let log = run(
        &agent,
        "cd repo && git log --oneline --format=%s && git status --porcelain",
        "shell",
    );
    assert_eq!(log["stdout"], "from the computer\nfrom the light shell\n");
    assert_eq!(log["backend"], "shell");
    // The computer packed the objects: the light shell reads the pack.
    let show = run(&agent, "cd repo && git show HEAD~1:a.txt", "shell");
    assert_eq!(show["stdout"], "one\n");
}

#[test]
fn the_settings_identity_is_recorded_on_both_backends() {
    let agent = Agent::new("git-identity");
    expect_ok(&agent.send(
        "PUT",
        "/settings",
        br#"{"git":{"name":"Ada Lovelace","email":"ada@example.com"}}"#,
    ));
    run(
        &agent,
        "git init -q && echo 1 > f && git add f && git commit -qm light",
        "shell",
    );
    run(&agent, "echo 2 > f && git commit -qam computer", "computer");
    let log = run(&agent, "git log --format='%an <%ae>|%cn <%ce>'", "shell");
    assert_eq!(
        log["stdout"],
        "Ada Lovelace <ada@example.com>|Ada Lovelace <ada@example.com>\n".repeat(2)
    );
}

#[test]
fn auto_runs_what_the_light_shell_has_and_sends_the_rest() {
    let agent = Agent::new("git-auto");
    let out = agent.ok(
        "exec",
        json!({ "command": "git init -q && git status --short" }),
    );
    assert_eq!(out["backend"], "shell", "{out}");
    let out = agent.ok(
        "exec",
        json!({ "command": "git count-objects", "timeout_ms": 60_000 }),
    );
    assert_eq!(out["backend"], "computer", "{out}");
    assert_eq!(out["exit_code"], 0, "{out}");
}

/// A bare repository with history served by `git http-backend` on
/// loopback, and a clone of it made by the real git.
fn served(dir: &Path) -> http_backend::Server {
    let work = dir.join("work");
    std::fs::create_dir_all(work.join("src")).unwrap();
    real_git(&work, &["init", "-q", "-b", "main"]);
    for i in 0..5 {
        std::fs::write(
            work.join("src/lib.rs"),
            format!("pub fn v() -> u32 {{ {i} }}\n"),
        )
        .unwrap();
        real_git(&work, &["add", "-A"]);
        real_git(&work, &["commit", "-q", "-m", &format!("version {i}")]);
    }
    http_backend::serve_clone(dir, &work)
}

fn allow_loopback(agent: &Agent) {
    expect_ok(&agent.send(
        "PUT",
        "/settings",
        br#"{"webhooks":{"allow_private_targets":true}}"#,
    ));
}

#[test]
fn a_clone_modified_committed_and_pushed_from_the_light_shell_is_the_servers() {
    let dir = tempfile::tempdir().unwrap();
    let server = served(dir.path());
    let url = server.url("project.git");
    let agent = Agent::new("git-remote");
    allow_loopback(&agent);
    let out = agent.ok(
        "exec",
        json!({ "command": format!(
            "git clone {url} && cd project && git status && git log --oneline -n 2 | wc -l && \
             echo 'pub fn w() {{}}' >> src/lib.rs && git commit -qam 'from stead' && git push"
        ) }),
    );
    assert_eq!(out["backend"], "shell", "{out}");
    assert_eq!(out["exit_code"], 0, "{out}");
    assert_eq!(
        out["stdout"],
        "On branch main\nYour branch is up to date with 'origin/main'.\n\nnothing to commit, working tree clean\n2\n"
    );
    let bare = dir.path().join("served/project.git");
    assert_eq!(
        real_git(&bare, &["log", "--format=%s", "-n", "2"]),
        "from stead\nversion 4\n"
    );
    assert!(real_git(&bare, &["show", "main:src/lib.rs"]).ends_with("pub fn w() {}\n"));
    real_git(&bare, &["fsck", "--strict"]);
    let stderr = out["stderr"].as_str().unwrap();
    assert!(
        stderr.starts_with(&format!("Cloning into 'project'...\nTo {url}\n   ")),
        "{stderr}"
    );
    assert!(stderr.ends_with("  main -> main\n"), "{stderr}");
    // The same repository, on the workspace: the light shell sees it clean.
    let status = agent.ok("exec", json!({ "command": "cd project && git status -sb" }));
    assert_eq!(status["stdout"], "## main...origin/main\n");
}

#[test]
fn a_cut_pack_stream_leaves_nothing_in_the_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let server = served(dir.path());
    let url = server.url("project.git");
    let agent = Agent::new("git-cut");
    allow_loopback(&agent);
    server
        .behaviour
        .cut_fetch_after
        .store(500, Ordering::SeqCst);
    let out = agent.ok(
        "exec",
        json!({ "command": format!("git clone {url} repo; echo $?; ls -a") }),
    );
    assert_eq!(out["backend"], "shell", "{out}");
    assert_eq!(out["stdout"], "128\n.\n..\n", "{out}");
    // A fetch cut short in a good clone leaves it as git fsck accepts it.
    server.behaviour.cut_fetch_after.store(0, Ordering::SeqCst);
    agent.ok(
        "exec",
        json!({ "command": format!("git clone -q {url} repo") }),
    );
    let work = dir.path().join("work");
    std::fs::write(work.join("more.txt"), "x".repeat(100_000)).unwrap();
    real_git(&work, &["add", "-A"]);
    real_git(&work, &["commit", "-q", "-m", "more"]);
    real_git(
        &work,
        &[
            "push",
            "-q",
            &dir.path().join("served/project.git").to_string_lossy(),
            "main",
        ],
    );
    server
        .behaviour
        .cut_fetch_after
        .store(2000, Ordering::SeqCst);
    let fetch = agent.ok("exec", json!({ "command": "cd repo && git fetch" }));
    assert_eq!(fetch["exit_code"], 128, "{fetch}");
    let fsck = agent.ok(
        "exec",
        json!({ "command": "cd repo && git fsck --strict && git log --format=%s -n 1 origin/main", "backend": "computer", "timeout_ms": 60_000 }),
    );
    assert_eq!(fsck["exit_code"], 0, "{fsck}");
    assert_eq!(fsck["stdout"], "version 4\n");
}

#[test]
fn a_private_repository_opens_to_the_agents_credential_for_its_host() {
    let dir = tempfile::tempdir().unwrap();
    let server = served(dir.path());
    server.behaviour.require_basic("ada", "e2e-secret-9f2");
    let url = server.url("project.git");
    let agent = Agent::new("git-private");
    allow_loopback(&agent);
    let refused = agent.ok(
        "exec",
        json!({ "command": format!("git clone {url} repo; echo $?; ls") }),
    );
    assert_eq!(refused["backend"], "shell", "{refused}");
    assert_eq!(refused["stdout"], "128\n", "{refused}");
    assert_eq!(
        refused["stderr"],
        format!(
            "Cloning into 'repo'...\nremote: Unauthorized\nfatal: Authentication failed for '{url}/'\n"
        )
    );
    let host = format!("127.0.0.1:{}", server.port);
    let body = json!({ "git_credentials": { host.clone(): { "username": "ada", "password": "e2e-secret-9f2" } } });
    let settings = expect_ok(&agent.send("PUT", "/settings", body.to_string().as_bytes()));
    assert!(
        settings["git_credentials"][&host]["set_at"].is_number(),
        "{settings}"
    );
    let out = agent.ok(
        "exec",
        json!({ "command": format!(
            "git clone -q {url} repo && cd repo && echo p > p.txt && git add p.txt && git commit -qm private && git push -q && cat .git/config"
        ) }),
    );
    assert_eq!(out["exit_code"], 0, "{out}");
    let bare = dir.path().join("served/project.git");
    assert_eq!(real_git(&bare, &["show", "main:p.txt"]), "p\n");
    let sent = server.behaviour.authorizations.lock().unwrap().clone();
    assert!(
        !sent.is_empty()
            && sent
                .iter()
                .all(|a| *a == http_backend::basic("ada", "e2e-secret-9f2"))
    );
    for reply in [
        agent.send("GET", "/settings", b""),
        agent.send("GET", "/audit", b""),
    ] {
        assert!(!String::from_utf8_lossy(&reply.body).contains("e2e-secret-9f2"));
    }
    assert!(!out.to_string().contains("e2e-secret-9f2"));
}
