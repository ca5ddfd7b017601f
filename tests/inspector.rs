//! End-to-end: the inspector (`/ui/`) in a real browser against the real
//! Worker. Each test seeds an agent through the API, then runs one scenario
//! of `tests/inspector/browser.mjs` (playwright-core driving the system's
//! Chromium, installed by scripts/setup) and checks what it reports.
//! Screenshots go to `target/inspector/`. The HTTP-level rules of sessions
//! (cookie attributes, cross-origin refusals) are tested here directly.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

use common::{base, client, expect_error, expect_status, mint, Agent};
use serde_json::{json, Value};
use stead_harness::{repo_root, Client};

/// One browser at a time: the machines have few cores.
static BROWSER: Mutex<()> = Mutex::new(());

/// The system's Chromium (`CHROMIUM` overrides).
fn chromium() -> String {
    if let Ok(path) = std::env::var("CHROMIUM") {
        return path;
    }
    for candidate in ["/usr/bin/chromium", "/usr/bin/chromium-browser"] {
        if std::path::Path::new(candidate).exists() {
            return candidate.to_string();
        }
    }
    panic!("no Chromium: scripts/setup installs Debian's chromium package (or set CHROMIUM)");
}

/// The inspector's origin as a browser uses it: `localhost`, whose
/// subdomains are the ports' origins.
fn inspector_origin() -> String {
    base().replace("127.0.0.1", "localhost")
}

fn artifacts() -> PathBuf {
    let dir = repo_root().join("target/inspector");
    std::fs::create_dir_all(&dir).expect("artifacts folder");
    dir
}

/// Runs scenario `name` against `agent` (with `token` as its second
/// credential, `port` a dev server's) and returns what it reports.
fn browse(name: &str, agent: &str, token: &str) -> Value {
    browse_port(name, agent, token, 0)
}

fn browse_port(name: &str, agent: &str, token: &str, port: u16) -> Value {
    browse_with(name, agent, token, &[("STEAD_UI_PORT", port.to_string())])
}

fn browse_with(name: &str, agent: &str, token: &str, extra: &[(&str, String)]) -> Value {
    let _one = BROWSER.lock().unwrap_or_else(|e| e.into_inner());
    let bin = repo_root().join("node_modules/.bin");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = Command::new("node")
        .arg(repo_root().join("tests/inspector/browser.mjs"))
        .arg(name)
        .current_dir(repo_root())
        .env("PATH", path)
        .env("STEAD_UI_BASE", inspector_origin())
        .env("STEAD_UI_AGENT", agent)
        .env("STEAD_UI_ADMIN", stead_harness::DEV_TOKEN)
        .env("STEAD_UI_TOKEN", token)
        .envs(extra.iter().map(|(k, v)| (*k, v.as_str())))
        .env("STEAD_UI_ARTIFACTS", artifacts())
        .env("CHROMIUM", chromium())
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "scenario {name} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let last = stdout.lines().last().expect("the scenario reports");
    eprintln!("{name}: {last}");
    serde_json::from_str(last).expect("a JSON report")
}

/// An agent with a small tree: a directory with a Rust file, an image and
/// a binary file.
fn seeded(id: &str) -> Agent {
    let agent = Agent::new(id);
    agent.write("/src/main.rs", "fn main() {\n    println!(\"hello\");\n}\n");
    agent.write("/README.md", "# hello\n");
    // A 1x1 PNG.
    const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
    agent.ok(
        "write",
        json!({ "path": "/logo.png", "content": PNG, "encoding": "base64" }),
    );
    agent.ok(
        "write",
        json!({ "path": "/blob.bin", "content": "AAECAwQFBgcICQ==", "encoding": "base64" }),
    );
    agent
}

#[test]
fn sign_in_opens_a_session_scripts_cannot_read_and_sign_out_ends_it() {
    let agent = seeded("ui-sign-in");
    let report = browse("sign_in", &agent.id, "");
    assert_eq!(
        report["cookie"],
        json!({ "httpOnly": true, "secure": true, "sameSite": "Strict" })
    );
}

#[test]
fn files_open_edit_save_with_a_revision_check_and_stay_live() {
    let agent = seeded("ui-files");
    let report = browse("files", &agent.id, "");
    let appeared = report["appeared_ms"].as_u64().expect("appeared_ms");
    assert!(
        appeared <= 2000,
        "the new file appeared after {appeared} ms"
    );
    assert_eq!(agent.read("/src/main.rs"), "mine\n");
    assert_eq!(agent.read("/src/live.txt"), "hello\n");
}

#[test]
fn a_read_only_token_gets_a_read_only_page() {
    let agent = seeded("ui-read-only");
    let token = mint(&agent.id, &["read"], None).0;
    let report = browse("read_only", &agent.id, &token);
    assert_eq!(report["write"], json!([403, "FORBIDDEN"]));
    assert!(agent.call("stat", json!({ "path": "/x" })).status == 404);
}

/// A session cookie from a sign-in over plain HTTP, as a browser on the
/// inspector's page would send it.
fn session_cookie(token: &str) -> String {
    let reply = Client::new(base(), None).send_with(
        "POST",
        "/ui/session",
        &[("origin", base()), ("content-type", "application/json")],
        json!({ "token": token }).to_string().as_bytes(),
    );
    expect_status(&reply, 201);
    let set = reply.header("set-cookie").expect("a cookie").to_string();
    set.split(';').next().expect("name=value").to_string()
}

#[test]
fn a_session_acts_as_its_token_and_only_from_the_inspectors_origin() {
    let agent = seeded("ui-session-http");
    let anonymous = Client::new(base(), None);
    // A wrong token opens nothing; neither does one from another page.
    let wrong = anonymous.send_with(
        "POST",
        "/ui/session",
        &[("origin", base())],
        br#"{"token":"stk_no.pe"}"#,
    );
    expect_error(&wrong, 401, "UNAUTHORIZED");
    let elsewhere = anonymous.send_with(
        "POST",
        "/ui/session",
        &[
            ("origin", "http://evil.example"),
            ("sec-fetch-site", "cross-site"),
        ],
        json!({ "token": stead_harness::DEV_TOKEN })
            .to_string()
            .as_bytes(),
    );
    expect_error(&elsewhere, 403, "CROSS_ORIGIN_REFUSED");

    let cookie = session_cookie(&mint(&agent.id, &["read", "write"], None).0);
    let stat = json!({ "path": "/README.md" }).to_string();
    let read = anonymous.send_with(
        "POST",
        &agent.url("/stat"),
        &[("cookie", &cookie), ("origin", base())],
        stat.as_bytes(),
    );
    expect_status(&read, 200);
    assert_eq!(read.header("x-content-type-options"), Some("nosniff"));
    // A write from a port's origin (same site, another origin) is refused.
    let port_origin = base().replace("127.0.0.1", "3000-ui-2session-0http.localhost");
    let write = json!({ "path": "/pwned", "content": "x" }).to_string();
    let forged = anonymous.send_with(
        "POST",
        &agent.url("/write"),
        &[
            ("cookie", &cookie),
            ("origin", &port_origin),
            ("sec-fetch-site", "same-site"),
        ],
        write.as_bytes(),
    );
    expect_error(&forged, 403, "CROSS_ORIGIN_REFUSED");
    assert_eq!(agent.call("stat", json!({ "path": "/pwned" })).status, 404);
    // The session carries the token's scopes: no exec with this one.
    let exec = anonymous.send_with(
        "POST",
        &agent.url("/exec"),
        &[("cookie", &cookie), ("origin", base())],
        br#"{"command":"true"}"#,
    );
    expect_error(&exec, 403, "FORBIDDEN");
    // Who is signed in; a made-up session is refused.
    let shown = anonymous.send_with("GET", "/ui/session", &[("cookie", &cookie)], b"");
    expect_status(&shown, 200);
    assert_eq!(shown.json()["session"]["agent"], agent.id);
    let forged_cookie = format!("{}x", cookie);
    let refused = anonymous.send_with("GET", &agent.url(""), &[("cookie", &forged_cookie)], b"");
    expect_error(&refused, 401, "SESSION_INVALID");
}

#[test]
fn a_revoked_token_opens_no_session() {
    let agent = seeded("ui-revoked");
    let reply = client().send(
        "POST",
        "/tokens",
        json!({ "agent": agent.id, "scopes": ["read"] })
            .to_string()
            .as_bytes(),
    );
    let minted = reply.json();
    let revoke = client().send(
        "POST",
        "/tokens/revoke",
        json!({ "agent": agent.id, "id": minted["id"] })
            .to_string()
            .as_bytes(),
    );
    expect_status(&revoke, 200);
    let signed_in = Client::new(base(), None).send_with(
        "POST",
        "/ui/session",
        &[("origin", base())],
        json!({ "token": minted["token"] }).to_string().as_bytes(),
    );
    expect_error(&signed_in, 401, "TOKEN_REVOKED");
}

#[test]
fn the_timeline_diffs_two_points_per_file_and_restores_one() {
    let agent = seeded("ui-timeline");
    let report = browse("timeline", &agent.id, "");
    assert_eq!(report["restored"], "a one\n");
    assert_eq!(report["kept"], "b two\n");
    assert_eq!(
        agent.read("/notes/a.txt"),
        "a two\n",
        "undo took the restore back"
    );
}

#[test]
fn a_jobs_output_is_followed_live_and_a_job_is_cancelled() {
    let agent = seeded("ui-jobs");
    let report = browse("jobs", &agent.id, "");
    assert_eq!(
        report["during"], "running",
        "the output was seen while it ran"
    );
    assert_eq!(report["output"], "tick 1\ntick 2\ntick 3\ntick 4\n");
    assert_eq!(report["cancelled"], "cancelled");
}

#[test]
fn a_page_a_dev_server_serves_cannot_read_or_use_the_session() {
    let agent = seeded("ui-isolation");
    let probe =
        std::fs::read_to_string(repo_root().join("tests/inspector/probe.js")).expect("probe");
    agent.write(
        "/site/index.html",
        &format!(
            "<!doctype html><body data-agent=\"{}\"><pre id=\"out\"></pre><script>{probe}</script></body>\n",
            agent.id
        ),
    );
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("address").port()
    };
    let started = agent.send(
        "POST",
        "/processes",
        json!({
            "command": format!("exec python3 -m http.server {port} --bind 127.0.0.1"),
            "cwd": "/site",
            "ports": [port],
        })
        .to_string()
        .as_bytes(),
    );
    expect_status(&started, 201);
    let id = started.json()["process"]["id"]
        .as_str()
        .expect("id")
        .to_string();
    // Up before the browser comes.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while agent.send("GET", &format!("/ports/{port}/"), b"").status != 200 {
        assert!(
            std::time::Instant::now() < deadline,
            "the dev server never answered"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let report = browse_port("isolation", &agent.id, "", port);
    agent.send("DELETE", &format!("/processes/{id}"), b"");
    for place in ["port_origin", "port_route"] {
        let found = &report[place];
        let cookie = found["cookie"].as_str().expect("cookie");
        assert!(!cookie.contains("stead_session"), "{place}: {found}");
        assert_eq!(found["ws"], "refused", "{place}: {found}");
    }
    assert_eq!(agent.call("stat", json!({ "path": "/stolen" })).status, 404);
}

#[test]
fn a_session_that_ends_while_editing_asks_again_and_loses_nothing() {
    let agent = seeded("ui-expiry");
    let reply = client().send(
        "POST",
        "/tokens",
        json!({ "agent": agent.id, "scopes": ["read", "write"], "ttl_seconds": 8 })
            .to_string()
            .as_bytes(),
    );
    expect_status(&reply, 201);
    let minted = reply.json();
    let token = minted["token"].as_str().expect("token");
    let expires = minted["expires_at"].as_i64().expect("expires_at");
    let report = browse_with(
        "expiry",
        &agent.id,
        token,
        &[("STEAD_UI_EXPIRES", expires.to_string())],
    );
    assert_eq!(report["saved"], "typed before the session ended\n");
    assert_eq!(agent.read("/README.md"), "typed before the session ended\n");
}

#[test]
fn schedules_show_their_runs_and_hooks_their_calls() {
    let agent = seeded("ui-schedules");
    let report = browse("schedules", &agent.id, "");
    assert_eq!(report["run"], "succeeded");
}

#[test]
fn the_terminal_tab_runs_echo_hi_on_the_light_shell() {
    let agent = seeded("ui-terminal");
    let report = browse("terminal", &agent.id, "");
    let screen = report["screen"].as_str().expect("screen");
    assert!(
        screen.contains("echo hi"),
        "the typed line is echoed: {screen}"
    );
    assert!(
        screen.lines().any(|line| line.trim() == "hi"),
        "its output is on a line of its own: {screen}"
    );
}
