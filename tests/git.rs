//! End-to-end: git in the light shell and on the computer share one
//! repository, the workspace's `.git`. A commit made in the light shell is
//! one the computer's real git logs and sees as clean, and the reverse; the
//! identity the agent's settings name is the one both record; under
//! `auto`, what the light shell's git implements runs there and the rest
//! goes to the computer.

mod common;

use common::{expect_ok, Agent};
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
