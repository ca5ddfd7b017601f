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
//!   container) and refuses another, which is listening too; a secret's
//!   host outside the allow-list is handed to the agent, refused there
//!   with a 403 and audited as `egress.refuse`; with a
//!   preset's hosts intercepted over HTTPS, the platform's CA is trusted
//!   by the container's clients; a venv installs a wheel with `pip` from
//!   a package index the test serves on the host (the only host the
//!   allow-list admits), then `pytest` passes on the project's tests.
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
/// A test server on the host: what each request asked for.
struct Served {
    port: u16,
    /// Each request's path and `authorization` header (empty if none).
    seen: Arc<Mutex<Vec<(String, String)>>>,
}

impl Served {
    fn authorizations(&self) -> Vec<String> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .map(|(_, a)| a.clone())
            .collect()
    }

    fn paths(&self) -> Vec<String> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .map(|(p, _)| p.clone())
            .collect()
    }
}

/// Serves `answer(path)`, a content type and a body (a 404 for `None`), on
/// every address of the host,
/// one connection at a time.
fn serve(answer: impl Fn(&str) -> Option<(&'static str, Vec<u8>)> + Send + 'static) -> Served {
    let listener = TcpListener::bind("0.0.0.0:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let shared = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let (mut path, mut authorization) = (String::new(), String::new());
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
                let trimmed = line.trim_end().to_string();
                line.clear();
                if trimmed.is_empty() {
                    break;
                }
                if path.is_empty() {
                    path = trimmed.split(' ').nth(1).unwrap_or_default().to_string();
                } else if let Some((key, value)) = trimmed.split_once(':') {
                    if key.eq_ignore_ascii_case("authorization") {
                        authorization = value.trim().to_string();
                    }
                }
            }
            let body = answer(&path);
            shared.lock().unwrap().push((path, authorization));
            let (status, content_type, body) = match body {
                Some((content_type, body)) => ("200 OK", content_type, body),
                None => ("404 Not Found", "text/plain", b"not found\n".to_vec()),
            };
            let head = format!(
                "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\
                 connection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
        }
    });
    Served { port, seen }
}

/// A server that answers every request with `hello from <name>`.
fn echo(name: &'static str) -> Served {
    serve(move |_| Some(("text/plain", format!("hello from {name}\n").into_bytes())))
}

#[test]
fn in_a_real_container_the_allow_list_admits_one_host_and_refuses_another() {
    if ComputerMode::from_env() != ComputerMode::Container {
        eprintln!(
            "skipped: needs STEAD_COMPUTER_MODE=container (the platform's egress interception)"
        );
        return;
    }
    let gateway = gateway();
    let (allowed, other, bound) = (echo("allowed"), echo("other"), echo("bound"));
    let allowed_host = format!("{gateway}:{}", allowed.port);
    let other_host = format!("{gateway}:{}", other.port);
    // A secret's host is handed to the agent even when the allow-list does
    // not name it; the agent refuses it there, and audits the refusal.
    let bound_host = format!("{gateway}:{}", bound.port);
    let agent = Agent::new("egress-box");
    put_settings(
        &agent,
        json!({
            "webhooks": {"allow_private_targets": true},
            "computer": {"network": {"allow": [allowed_host], "presets": ["pypi"]}},
            "secrets": {
                "BOX_TOKEN": {"hosts": [allowed_host], "bearer": SECRET},
                "BOUND_ONLY": {"hosts": [bound_host], "bearer": SECRET}
            }
        }),
    );
    let out = run(
        &agent,
        &format!(
            "curl -sS -m 10 http://{allowed_host}/a; echo \"a=$?\"; \
             curl -sS -m 10 http://{other_host}/b; echo \"b=$?\"; \
             curl -s -m 10 -o /dev/null -w 'c=%{{http_code}}\\n' http://{bound_host}/c; \
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
        allowed.authorizations(),
        [format!("Bearer {SECRET}")],
        "the secret was added outside the container"
    );
    assert!(
        other.seen.lock().unwrap().is_empty(),
        "refused before it left"
    );
    assert!(stdout.contains("c=403\n"), "the agent refused it: {out}");
    assert!(
        bound.seen.lock().unwrap().is_empty(),
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
    let refusals: Vec<&Value> = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "egress.refuse")
        .collect();
    assert!(
        refusals.len() == 1
            && refusals[0]["actor"] == "computer"
            && refusals[0]["target"] == bound_host.as_str()
            && refusals[0]["outcome"] == "FORBIDDEN",
        "one refusal audited, the one the agent saw: {audit}"
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

/// The bridge's gateway: the host as the containers see it.
fn gateway() -> String {
    stead_harness::computer::docker(&[
        "network",
        "inspect",
        "bridge",
        "-f",
        "{{(index .IPAM.Config 0).Gateway}}",
    ])
    .expect("the bridge's gateway")
}

/// The Python project as a user runs it: a package index the test
/// serves on the host (PEP 503's simple index, over plain HTTP), admitted
/// by the allow-list and nothing else; `pip install` into a venv from it,
/// then `pytest` on the project's tests. The wheel is made by the computer
/// itself (offline) and served back to it from the host.
#[test]
fn in_a_real_container_pip_installs_from_an_allowed_index_and_pytest_passes() {
    if ComputerMode::from_env() != ComputerMode::Container {
        eprintln!(
            "skipped: needs STEAD_COMPUTER_MODE=container (the platform's egress interception)"
        );
        return;
    }
    // The index is up (and allowed) before the computer first starts: the
    // policy applies from a container's start.
    const WHEEL: &str = "shout-2.0-py3-none-any.whl";
    let wheel = Arc::new(Mutex::new(Vec::new()));
    let served = wheel.clone();
    let index = serve(move |path| match path {
        "/simple/shout/" => Some((
            "text/html",
            format!(
                "<!DOCTYPE html><html><body><a href=\"/files/{WHEEL}\">{WHEEL}</a></body></html>\n"
            )
            .into_bytes(),
        )),
        _ if path == format!("/files/{WHEEL}") => {
            Some(("application/octet-stream", served.lock().unwrap().clone()))
        }
        _ => None,
    });
    let (gateway, other) = (gateway(), echo("other"));
    let index_host = format!("{gateway}:{}", index.port);
    let agent = Agent::new("egress-pip");
    put_settings(
        &agent,
        json!({
            "webhooks": {"allow_private_targets": true},
            "computer": {"network": {"allow": [index_host]}}
        }),
    );
    agent.write(
        "/dist/make_wheel.py",
        &common::wheel_maker("shout", "2.0", "def up(s):\n    return s.upper() + '!'\n"),
    );
    let made = run(&agent, "cd /dist && python3 make_wheel.py", "computer");
    assert_eq!(made["exit_code"], 0, "{made}");
    *wheel.lock().unwrap() = agent.download(&format!("/dist/{WHEEL}"));
    assert!(wheel.lock().unwrap().starts_with(b"PK"), "a zip came back");
    run(&agent, "rm -r /dist", "shell");
    agent.write(
        "/proj/test_shout.py",
        "import shout\n\ndef test_up():\n    assert shout.up('hi') == 'HI!'\n",
    );
    let before = agent.info()["usage"]["stored_bytes"].as_u64().unwrap();
    let out = run(
        &agent,
        &format!(
            "set -e; cd /proj; python3 -m venv --system-site-packages .venv; \
             .venv/bin/pip install -q --disable-pip-version-check \
               --index-url http://{index_host}/simple/ --trusted-host {gateway} shout; \
             .venv/bin/python -m pytest -q -p no:cacheprovider test_shout.py; \
             if .venv/bin/pip download -q --no-deps -d /tmp/x --disable-pip-version-check \
                 --index-url http://{gateway}:{}/simple/ --trusted-host {gateway} shout 2>/dev/null; \
             then echo other=reached; else echo other=refused; fi",
            other.port
        ),
        "computer",
    );
    assert_eq!(out["exit_code"], 0, "{out}");
    let stdout = out["stdout"].as_str().unwrap();
    assert!(stdout.contains("1 passed"), "pytest ran the test: {out}");
    assert!(stdout.ends_with("other=refused\n"), "{out}");
    assert_eq!(
        index.paths(),
        ["/simple/shout/".to_string(), format!("/files/{WHEEL}")],
        "pip read the index and fetched the wheel through the allow-list"
    );
    assert!(
        other.seen.lock().unwrap().is_empty(),
        "refused before it left"
    );
    // The venv stays on the computer: the workspace got the test's cache
    // at most, not the installed tree.
    let after = agent.info()["usage"]["stored_bytes"].as_u64().unwrap();
    assert!(after - before < 64 << 10, "{before} -> {after}");
    assert!(!agent.tree().iter().any(|p| p.contains(".venv")));
}

/// Where the platform puts the CA it terminates intercepted HTTPS with.
const PLATFORM_CA: &str = "/etc/cloudflare/certs/cloudflare-containers-ca.crt";
