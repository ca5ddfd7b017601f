//! End-to-end: the agent's secret store and its computer's network policy,
//! through the real Worker.
//!
//! - A secret bound to a local git server's host, as a bearer token,
//!   reaches that server from the light shell's git, while the settings,
//!   the audit log, command output, the computer's `env`, `/proc` and files
//!   never show its value; its use is audited by name and host.
//! - In real containers (`STEAD_COMPUTER_MODE=container`): an allow-list
//!   admits one test server on the host (reached through the platform's
//!   egress interception, with the secret bound to it added outside the
//!   container) and refuses another, which is listening too; with a
//!   preset's hosts intercepted over HTTPS, the platform's CA is trusted
//!   by the container's clients.
//! - Bad input: a host pattern that does not parse, a secret bound to no
//!   host, a contradiction between `internet` and `network`: 400s that
//!   change nothing.

mod common;
#[path = "../crates/git/tests/common/http_backend.rs"]
mod http_backend;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use common::{expect_error, expect_ok, Agent};
use http_backend::fixture_git as real_git;
use serde_json::{json, Value};
use stead_harness::ComputerMode;

/// The value the tests store; it must never come back.
const SECRET: &str = "e2e-egress-secret-7d1";

fn put_settings(agent: &Agent, body: Value) -> Value {
    expect_ok(&agent.send("PUT", "/settings", body.to_string().as_bytes()))
}

fn run(agent: &Agent, command: &str, backend: &str) -> Value {
    agent.ok(
        "exec",
        json!({ "command": command, "backend": backend, "timeout_ms": if backend == "shell" { 30_000 } else { 60_000 } }),
    )
}

/// Asserts the secret is in none of `values`.
fn nowhere(values: &[Value]) {
    for value in values {
        assert!(!value.to_string().contains(SECRET), "{value}");
    }
}

#[test]
fn a_bearer_secret_reaches_its_git_host_and_is_shown_nowhere() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    real_git(&work, &["init", "-q", "-b", "main"]);
    std::fs::write(work.join("a.txt"), "private\n").unwrap();
    real_git(&work, &["add", "-A"]);
    real_git(&work, &["commit", "-q", "-m", "one"]);
    let server = http_backend::serve_clone(dir.path(), &work);
    *server.behaviour.require_authorization.lock().unwrap() = Some(format!("Bearer {SECRET}"));
    let url = server.url("project.git");
    let host = format!("127.0.0.1:{}", server.port);
    let agent = Agent::new("egress-git");
    put_settings(&agent, json!({"webhooks": {"allow_private_targets": true}}));
    let refused = run(
        &agent,
        &format!("git clone -q {url} repo; echo $?"),
        "shell",
    );
    assert_eq!(refused["stdout"], "128\n", "no secret yet: {refused}");
    let settings = put_settings(
        &agent,
        json!({"secrets": {"GIT_TOKEN": {"hosts": [host], "bearer": SECRET}}}),
    );
    assert_eq!(settings["secrets"]["GIT_TOKEN"]["hosts"], json!([host]));
    assert_eq!(settings["secrets"]["GIT_TOKEN"]["header"], "bearer");
    let cloned = run(
        &agent,
        &format!("git clone -q {url} repo && cat repo/a.txt"),
        "shell",
    );
    assert_eq!(cloned["exit_code"], 0, "{cloned}");
    assert_eq!(cloned["stdout"], "private\n");
    let sent = server.behaviour.authorizations.lock().unwrap().clone();
    assert!(
        sent.iter().any(|a| *a == format!("Bearer {SECRET}")),
        "{sent:?}"
    );
    let audit = expect_ok(&agent.send("GET", "/audit", b""));
    let used = |e: &&Value| e["action"] == "secret.use";
    let entries = audit["entries"].as_array().unwrap();
    assert!(entries.iter().any(|e| used(&e)), "{audit}");
    assert!(entries
        .iter()
        .filter(used)
        .all(|e| e["target"] == "GIT_TOKEN" && e["detail"]["host"] == host.as_str()));
    // Neither the light shell nor the computer holds it anywhere.
    let computer = run(
        &agent,
        "env; cat /proc/self/environ /proc/1/environ 2>/dev/null | tr '\\0' '\\n'; \
         grep -rsF e2e-egress-secret repo /tmp /var/tmp /etc 2>/dev/null | head -3; true",
        "computer",
    );
    assert_eq!(computer["exit_code"], 0, "{computer}");
    nowhere(&[
        expect_ok(&agent.send("GET", "/settings", b"")),
        expect_ok(&agent.send("GET", "/audit", b"")),
        run(
            &agent,
            "env; cat repo/.git/config; grep -r e2e-egress / ; true",
            "shell",
        ),
        computer,
        cloned,
    ]);
}

#[test]
fn bad_policies_and_secrets_are_refused_and_change_nothing() {
    let agent = Agent::new("egress-bad");
    let before = expect_ok(&agent.send("GET", "/settings", b""));
    assert_eq!(before["computer"]["network"], "off", "{before}");
    for (body, names) in [
        (
            json!({"computer": {"network": {"allow": ["ok.org", "https://x.org/"]}}}),
            "https://x.org/",
        ),
        (
            json!({"computer": {"network": {"presets": ["cpan"]}}}),
            "cpan",
        ),
        (
            json!({"computer": {"internet": true, "network": "off"}}),
            "internet",
        ),
        (
            json!({"secrets": {"T": {"hosts": [], "bearer": "x"}}}),
            "no host",
        ),
        (
            json!({"secrets": {"T": {"hosts": ["a b"], "bearer": "x"}}}),
            "a b",
        ),
        (json!({"secrets": {"T": {"hosts": ["a.org"]}}}), "bearer"),
    ] {
        let reply = agent.send("PUT", "/settings", body.to_string().as_bytes());
        let error = expect_error(&reply, 400, "INVALID_REQUEST");
        assert!(
            error["message"].as_str().unwrap().contains(names),
            "{body}: {error}"
        );
    }
    assert_eq!(expect_ok(&agent.send("GET", "/settings", b"")), before);
    // `internet` keeps working, as `on`.
    let on = put_settings(&agent, json!({"computer": {"internet": true}}));
    assert_eq!(on["computer"], json!({"internet": true, "network": "on"}));
}

/// A loopback-free HTTP server on the host for containers to reach: it
/// answers `name` and records each request's `Authorization`.
struct Echo {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

fn echo(name: &'static str) -> Echo {
    let listener = TcpListener::bind("0.0.0.0:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let shared = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut authorization = String::new();
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
                let trimmed = line.trim_end().to_string();
                line.clear();
                if trimmed.is_empty() {
                    break;
                }
                if let Some((key, value)) = trimmed.split_once(':') {
                    if key.eq_ignore_ascii_case("authorization") {
                        authorization = value.trim().to_string();
                    }
                }
            }
            shared.lock().unwrap().push(authorization);
            let body = format!("hello from {name}\n");
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(answer.as_bytes());
        }
    });
    Echo { port, seen }
}

#[test]
fn in_a_real_container_the_allow_list_admits_one_host_and_refuses_another() {
    if ComputerMode::from_env() != ComputerMode::Container {
        eprintln!(
            "skipped: needs STEAD_COMPUTER_MODE=container (the platform's egress interception)"
        );
        return;
    }
    // The host as the containers see it: the bridge's gateway.
    let gateway = stead_harness::computer::docker(&[
        "network",
        "inspect",
        "bridge",
        "-f",
        "{{(index .IPAM.Config 0).Gateway}}",
    ])
    .expect("the bridge's gateway");
    let (allowed, other) = (echo("allowed"), echo("other"));
    let allowed_host = format!("{gateway}:{}", allowed.port);
    let other_host = format!("{gateway}:{}", other.port);
    let agent = Agent::new("egress-box");
    put_settings(
        &agent,
        json!({
            "webhooks": {"allow_private_targets": true},
            "computer": {"network": {"allow": [allowed_host], "presets": ["pypi"]}},
            "secrets": {"BOX_TOKEN": {"hosts": [allowed_host], "bearer": SECRET}}
        }),
    );
    let out = run(
        &agent,
        &format!(
            "curl -sS -m 10 http://{allowed_host}/a; echo \"a=$?\"; \
             curl -sS -m 10 http://{other_host}/b; echo \"b=$?\"; \
             env; cat /proc/self/environ | tr '\\0' '\\n'; \
              grep -rsF e2e-egress-secret /tmp /var/tmp /etc | head -3; \
             openssl verify -CAfile /etc/ssl/certs/ca-certificates.crt {PLATFORM_CA}; true"
        ),
        "computer",
    );
    let stdout = out["stdout"].as_str().unwrap();
    assert!(stdout.starts_with("hello from allowed\na=0\n"), "{out}");
    assert!(
        !stdout.contains("hello from other") && !stdout.contains("b=0"),
        "{out}"
    );
    assert_eq!(
        allowed.seen.lock().unwrap().clone(),
        [format!("Bearer {SECRET}")],
        "the secret was added outside the container"
    );
    assert!(
        other.seen.lock().unwrap().is_empty(),
        "refused before it left"
    );
    let audit = expect_ok(&agent.send("GET", "/audit", b""));
    assert!(
        audit["entries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["action"] == "secret.use"
                && e["actor"] == "computer"
                && e["detail"]["host"] == allowed_host.as_str()),
        "{audit}"
    );
    // A preset's hosts are intercepted over HTTPS too: the runtime then
    // places its CA in the container, and the program makes the machine
    // trust it before the command runs.
    assert!(
        stdout.contains(&format!("{PLATFORM_CA}: OK\n")),
        "the platform CA is trusted: {out}"
    );
    assert!(
        stdout.contains(&format!("NODE_EXTRA_CA_CERTS={PLATFORM_CA}\n")),
        "{out}"
    );
    nowhere(&[out, audit, expect_ok(&agent.send("GET", "/settings", b""))]);
}

/// Where the platform puts the CA it terminates intercepted HTTPS with.
const PLATFORM_CA: &str = "/etc/cloudflare/certs/cloudflare-containers-ca.crt";
