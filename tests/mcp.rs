//! End-to-end: the MCP server of the real Worker under `wrangler dev`,
//! driven by the official MCP TypeScript SDK clients (tests/mcp/*.mjs, run
//! with the Node 22 of node_modules/.bin): v1 (`@modelcontextprotocol/sdk`,
//! which speaks 2025-11-25, and two older releases under npm aliases, whose
//! newest protocols are 2025-06-18 and 2025-03-26) and v2
//! (`@modelcontextprotocol/client`, which speaks 2026-07-28). Each lists tools, calls write, read, edit,
//! apply_patch, grep and bash, reads a detached job's output by offset,
//! starts a process on the computer (a real container when a Docker engine
//! runs, else a local process), lists it, follows its output by offset and
//! stops it, reads a file resource, receives a notification for a write made over
//! HTTP, and checks that a read-only token sees no write tools and cannot
//! write. Raw HTTP covers what an SDK never sends: bad input, refused
//! credentials and their challenge, `/.well-known`, other methods, `GET
//! /tools` in every format; and, on a runtime of its own with the MCP
//! settings set, keep-alive comments on a quiet stream and a listed page's
//! CORS preflight and headers.

mod common;

use std::process::Command;

use common::{
    base, chunked, client, expect_error, expect_ok, expect_status, mint, raw, raw_at, Agent,
};
use serde_json::{json, Value};
use stead_harness::repo_root;

const WRITER: &[&str] = &["read", "write", "exec:shell", "exec:computer", "schedule"];

/// Runs `tests/mcp/<script>` against a fresh agent; its summary (the last
/// line it prints).
fn run_client(script: &str, agent: &Agent) -> Value {
    run_client_with(script, agent, &[])
}

/// [`run_client`] with more environment for the script.
fn run_client_with(script: &str, agent: &Agent, vars: &[(&str, &str)]) -> Value {
    let bin = repo_root().join("node_modules/.bin");
    let node = bin.join("node");
    assert!(
        node.exists(),
        "Node 22 from npm is missing: run scripts/setup"
    );
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = Command::new(node)
        .arg(repo_root().join("tests/mcp").join(script))
        .current_dir(repo_root())
        .env("PATH", path)
        .env("STEAD_BASE", base())
        .env("STEAD_AGENT", &agent.id)
        .env("STEAD_ADMIN_TOKEN", stead_harness::DEV_TOKEN)
        .env("STEAD_TOKEN", mint(&agent.id, WRITER, Some(600)).0)
        .env("STEAD_READ_TOKEN", mint(&agent.id, &["read"], Some(600)).0)
        .envs(vars.iter().copied())
        .output()
        .expect("run node");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{script} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let last = stdout.lines().last().expect("a summary line");
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {last}"))
}

/// What both clients must have seen.
fn assert_scenario(summary: &Value, label: &str) {
    let tools: Vec<&str> = summary["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    for tool in [
        "read",
        "write",
        "edit",
        "apply_patch",
        "ls",
        "glob",
        "grep",
        "bash",
        "job_output",
        "job_cancel",
        "checkpoint",
        "checkpoint_list",
        "diff",
        "restore",
        "undo",
        "process_start",
        "process_list",
        "process_get",
        "process_output",
        "process_signal",
        "process_stop",
    ] {
        assert!(tools.contains(&tool), "{label}: {tool} listed: {tools:?}");
    }
    assert_eq!(summary["jobText"], "line1\nline2\nline3\nline4\nline5\n");
    assert_eq!(
        summary["processText"],
        format!("hello-from-process-{label}\n")
    );
    assert_eq!(
        (
            summary["processState"].as_str(),
            summary["processJob"].as_str()
        ),
        (Some("exited"), Some("cancelled")),
        "stopped on request: {summary}"
    );
    assert_eq!(summary["file"], "1\nTWO\none more line\n");
    let uri = format!("file:///e2e-{label}/notes.md");
    assert!(
        summary["updates"].as_array().unwrap().contains(&json!(uri)),
        "{summary}"
    );
    let reader: Vec<&str> = summary["readerTools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(
        reader,
        [
            "read",
            "ls",
            "glob",
            "grep",
            "job_output",
            "schedule_list",
            "hook_list",
            "checkpoint_list",
            "diff",
            "process_list",
            "process_get",
            "process_output"
        ]
    );
    assert_eq!(summary["refused"], "FORBIDDEN");
    assert_eq!(
        summary["afterRefusal"], "changed over HTTP\n",
        "the refused write changed nothing"
    );
}

#[test]
fn the_v1_sdk_speaks_2025_11_25_with_a_session() {
    let agent = Agent::new("mcp-v1");
    let summary = run_client("legacy.mjs", &agent);
    assert_eq!(summary["protocol"], "2025-11-25");
    assert_eq!(summary["versionHeaders"], json!(["2025-11-25"]));
    assert_eq!(summary["session"].as_str().map(str::len), Some(32));
    assert_eq!(summary["server"], "stead");
    assert_scenario(&summary, "v1");
    // The calls are in the audit log as their HTTP twins' are.
    let audit = expect_ok(&agent.send("GET", "/audit", b""));
    let actions: Vec<&str> = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    for action in ["write", "edit", "apply_patch", "exec"] {
        assert!(actions.contains(&action), "{action} audited: {actions:?}");
    }
    // The session was ended by the client (DELETE): it is gone.
    let session = summary["session"].as_str().unwrap();
    let token = mint(&agent.id, WRITER, Some(600)).0;
    let auth = format!("Bearer {token}");
    let gone = raw(
        "POST",
        &agent.url("/mcp"),
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("Mcp-Session-Id", session),
            ("MCP-Protocol-Version", "2025-11-25"),
        ],
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
    );
    assert_eq!(gone.status, 404);
}

/// An older v1 SDK release (an npm alias in package.json) whose newest
/// protocol is `version`: it agrees on that version and runs the whole
/// scenario in its session, sending `headers` as MCP-Protocol-Version.
fn older_sdk_runs_its_own_revision(version: &str, label: &str, headers: Value) {
    let agent = Agent::new(&format!("mcp-{label}"));
    let sdk = format!("mcp-sdk-{version}");
    let summary = run_client_with(
        "legacy.mjs",
        &agent,
        &[("STEAD_MCP_SDK", &sdk), ("STEAD_LABEL", label)],
    );
    assert_eq!(summary["protocol"], version, "{summary}");
    assert_eq!(summary["versionHeaders"], headers, "{summary}");
    assert_eq!(summary["session"].as_str().map(str::len), Some(32));
    assert_scenario(&summary, label);
}

#[test]
fn a_2025_06_18_client_gets_2025_06_18() {
    older_sdk_runs_its_own_revision("2025-06-18", "v1-0618", json!(["2025-06-18"]));
}

#[test]
fn a_2025_03_26_client_gets_2025_03_26_and_sends_no_version_header() {
    older_sdk_runs_its_own_revision("2025-03-26", "v1-0326", json!(["none"]));
}

#[test]
fn the_v2_sdk_speaks_2026_07_28_statelessly() {
    let agent = Agent::new("mcp-v2");
    let summary = run_client("stateless.mjs", &agent);
    assert_eq!(summary["era"], "modern");
    assert_eq!(summary["protocol"], "2026-07-28");
    assert_eq!(
        summary["supportedVersions"],
        json!(["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"])
    );
    assert_eq!(
        summary["honored"],
        json!({ "resourceSubscriptions": ["file:///e2e-v2/notes.md"] })
    );
    assert_scenario(&summary, "v2");
}

/// A 2026-07-28 POST with the headers the spec asks for.
fn modern(
    agent: &Agent,
    token: &str,
    method: &str,
    params: Value,
    name: Option<&str>,
) -> stead_harness::Reply {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params }).to_string();
    let auth = format!("Bearer {token}");
    let mut headers = vec![
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
    ];
    if let Some(name) = name {
        headers.push(("Mcp-Name", name));
    }
    raw("POST", &agent.url("/mcp"), &headers, body.as_bytes())
}

#[test]
fn bad_input_and_refused_credentials_get_the_protocols_errors() {
    let agent = Agent::new("mcp-bad");
    agent.write("/kept.txt", "kept");
    let token = mint(&agent.id, WRITER, Some(600)).0;
    let auth = format!("Bearer {token}");
    let post = |headers: &[(&str, &str)], body: &[u8]| {
        let mut all = vec![
            ("Authorization", auth.as_str()),
            ("Accept", "application/json, text/event-stream"),
        ];
        all.extend_from_slice(headers);
        raw("POST", &agent.url("/mcp"), &all, body)
    };
    let json_type = [("Content-Type", "application/json")];
    let parse = post(&json_type, b"{nope");
    assert_eq!(
        (parse.status, parse.json()["error"]["code"].as_i64()),
        (400, Some(-32700))
    );
    let batch = post(
        &json_type,
        br#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]"#,
    );
    assert_eq!(
        (batch.status, batch.json()["error"]["code"].as_i64()),
        (400, Some(-32600))
    );
    let media = post(&[("Content-Type", "text/plain")], b"{}");
    assert_eq!(media.status, 415);
    let unknown = modern(&agent, &token, "tools/teleport", json!({}), None);
    assert_eq!(
        (unknown.status, unknown.json()["error"]["code"].as_i64()),
        (404, Some(-32601))
    );
    let tool = modern(
        &agent,
        &token,
        "tools/call",
        json!({ "name": "teleport", "arguments": {} }),
        Some("teleport"),
    );
    assert_eq!(
        (tool.status, tool.json()["error"]["code"].as_i64()),
        (200, Some(-32602))
    );
    let typed = modern(
        &agent,
        &token,
        "tools/call",
        json!({ "name": "write", "arguments": { "path": "/kept.txt", "content": 5 } }),
        Some("write"),
    );
    let result = &typed.json()["result"];
    assert_eq!(result["isError"], true, "{result}");
    assert_eq!(
        result["structuredContent"]["error"]["code"],
        "INVALID_REQUEST"
    );
    assert!(result["structuredContent"]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("content"));
    let version = raw(
        "POST",
        &agent.url("/mcp"),
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
            ("MCP-Protocol-Version", "2099-01-01"),
        ],
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
    );
    assert_eq!(
        (version.status, version.json()["error"]["code"].as_i64()),
        (400, Some(-32022))
    );
    // Oversized: refused by its declared length before it travels on, or
    // while it streams in when it declares none.
    let huge = vec![b' '; (16 << 20) + 1];
    let big = post(&json_type, &huge);
    assert_eq!(
        (big.status, big.json()["error"]["code"].as_i64()),
        (413, Some(-32600))
    );
    let streamed = post(
        &[
            ("Content-Type", "application/json"),
            ("Transfer-Encoding", "chunked"),
        ],
        &chunked(&huge),
    );
    assert_eq!(
        (streamed.status, streamed.json()["error"]["code"].as_i64()),
        (413, Some(-32600))
    );
    // A page on another origin may not call it.
    let origin = post(
        &[
            ("Content-Type", "application/json"),
            ("Origin", "https://evil.example"),
        ],
        b"{}",
    );
    assert_eq!(origin.status, 403);

    // Credentials: a token for another agent, an expired one, a revoked one,
    // a wrong one: JSON-RPC errors for the request with a Bearer challenge.
    let someone_else = Agent::new("mcp-someone-else");
    let other = mint(&someone_else.id, WRITER, Some(600)).0;
    let foreign = modern(&agent, &other, "tools/list", json!({}), None);
    expect_refusal(&foreign, 403, "FORBIDDEN", "insufficient_scope");
    let short = mint(&agent.id, WRITER, Some(1)).0;
    std::thread::sleep(std::time::Duration::from_millis(2100));
    expect_refusal(
        &modern(&agent, &short, "tools/list", json!({}), None),
        401,
        "TOKEN_EXPIRED",
        "invalid_token",
    );
    expect_refusal(
        &modern(&agent, "not-a-token", "tools/list", json!({}), None),
        401,
        "UNAUTHORIZED",
        "invalid_token",
    );
    let revoked_reply = client().send(
        "POST",
        "/tokens",
        json!({ "agent": agent.id, "scopes": WRITER })
            .to_string()
            .as_bytes(),
    );
    let revoked = revoked_reply.json();
    expect_ok(&agent.send(
        "POST",
        "/tokens/revoke",
        json!({ "id": revoked["id"] }).to_string().as_bytes(),
    ));
    let refused = modern(
        &agent,
        revoked["token"].as_str().unwrap(),
        "tools/list",
        json!({}),
        None,
    );
    expect_refusal(&refused, 401, "TOKEN_REVOKED", "invalid_token");
    let anonymous = raw(
        "POST",
        &agent.url("/mcp"),
        &[("Content-Type", "application/json")],
        br#"{"jsonrpc":"2.0","id":"a1","method":"tools/list"}"#,
    );
    expect_status(&anonymous, 401);
    assert_eq!(anonymous.json()["id"], "a1");
    assert_eq!(
        anonymous.json()["error"]["data"]["error"]["code"],
        "UNAUTHORIZED"
    );
    assert_eq!(anonymous.header("www-authenticate"), Some("Bearer"));
    // Discovery documents: none, said without a credential (an OAuth
    // client learns there is no authorization server to go to).
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-authorization-server",
        "/.well-known/openid-configuration",
    ] {
        expect_error(&raw("GET", path, &[], b""), 404, "NO_ROUTE");
    }
    // A method the endpoint does not serve: 405 with Allow.
    let put = raw("PUT", &agent.url("/mcp"), &[("Authorization", &auth)], b"");
    assert_eq!(
        (put.status, put.header("allow")),
        (405, Some("GET, POST, DELETE, OPTIONS"))
    );
    assert_eq!(put.json()["id"], Value::Null);
    assert_eq!(agent.read("/kept.txt"), "kept", "nothing changed");
}

/// Asserts `reply` refuses the credential as MCP clients read it: `status`,
/// a JSON-RPC error for request 1 carrying the API's `code`, and a Bearer
/// challenge with `error="<challenge>"`.
#[track_caller]
fn expect_refusal(reply: &stead_harness::Reply, status: u16, code: &str, challenge: &str) {
    expect_status(reply, status);
    let body = reply.json();
    assert_eq!(
        (&body["jsonrpc"], &body["id"], &body["error"]["code"]),
        (&json!("2.0"), &json!(1), &json!(-32600)),
        "{body}"
    );
    assert_eq!(body["error"]["data"]["error"]["code"], code, "{body}");
    let header = reply.header("www-authenticate").unwrap_or_default();
    assert!(
        header.starts_with(&format!(
            "Bearer error=\"{challenge}\", error_description=\""
        )),
        "{header}"
    );
}

#[test]
fn tools_are_published_in_each_harness_shape_to_any_credential() {
    let agent = Agent::new("mcp-tools");
    let listed = |query: &str, token: Option<&str>| {
        client()
            .with_token(token)
            .send("GET", &format!("/tools{query}"), b"")
    };
    let mcp = expect_ok(&listed("", Some(stead_harness::DEV_TOKEN)));
    assert_eq!(mcp["format"], "mcp");
    assert_eq!(mcp["tools"][0]["inputSchema"]["type"], "object");
    let anthropic = expect_ok(&listed("?format=anthropic", Some(stead_harness::DEV_TOKEN)));
    assert_eq!(
        anthropic["tools"][0]["input_schema"],
        mcp["tools"][0]["inputSchema"]
    );
    let openai = expect_ok(&listed("?format=openai", Some(stead_harness::DEV_TOKEN)));
    let function = &openai["tools"][0];
    assert_eq!(
        (function["type"].as_str(), function["strict"].as_bool()),
        (Some("function"), Some(true))
    );
    let ai = expect_ok(&listed("?format=ai-sdk", Some(stead_harness::DEV_TOKEN)));
    assert_eq!(
        ai["tools"]["read"]["inputSchema"],
        mcp["tools"][0]["inputSchema"]
    );
    // An agent token sees what its scopes allow; no credential, nothing.
    let reader = mint(&agent.id, &["read"], Some(600)).0;
    let names: Vec<String> = expect_ok(&listed("", Some(&reader)))["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert!(
        names.contains(&"read".to_string()) && !names.contains(&"write".to_string()),
        "{names:?}"
    );
    expect_error(&listed("", None), 401, "UNAUTHORIZED");
    expect_error(
        &listed("?format=langchain", Some(&reader)),
        400,
        "INVALID_REQUEST",
    );
}

/// Reads the answer to `head` (a whole request head) from the runtime at
/// `base` until it holds `needle` or `within` passes; what arrived.
fn read_until(base: &str, head: &str, needle: &str, within: std::time::Duration) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(base.trim_start_matches("http://")).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_millis(200)))
        .unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    let deadline = std::time::Instant::now() + within;
    let mut seen = Vec::new();
    let mut buffer = [0u8; 4096];
    while std::time::Instant::now() < deadline {
        match stream.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => seen.extend_from_slice(&buffer[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => panic!("read: {e}"),
        }
        if String::from_utf8_lossy(&seen).contains(needle) {
            break;
        }
    }
    String::from_utf8_lossy(&seen).into_owned()
}

#[test]
fn settings_shorten_the_keep_alive_and_let_a_listed_page_call() {
    // A runtime of its own, with the two MCP settings set.
    let state = stead_harness::temp_state();
    let runtime = stead_harness::Runtime::start_with(
        state.path(),
        stead_harness::ComputerMode::LocalProcess,
        &[
            "MCP_KEEPALIVE_MS:700",
            "MCP_ALLOWED_ORIGINS:https://app.test",
        ],
    );
    let base = runtime.base().to_string();
    let agent = Agent::create_on(runtime.client(), "mcp-settings");
    let auth = format!("Bearer {}", stead_harness::DEV_TOKEN);
    let url = agent.url("/mcp");

    // A session's GET stream, quiet: it gets keep-alive comments.
    let initialize = raw_at(
        &base,
        "POST",
        &url,
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ],
        br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
    );
    expect_status(&initialize, 200);
    let session = initialize.header("mcp-session-id").unwrap().to_string();
    let host = base.trim_start_matches("http://");
    let head = format!(
        "GET {url} HTTP/1.1\r\nHost: {host}\r\nAuthorization: {auth}\r\nAccept: text/event-stream\r\n\
         Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n"
    );
    let started = std::time::Instant::now();
    let seen = read_until(
        &base,
        &head,
        ": keep-alive\n\n",
        std::time::Duration::from_secs(10),
    );
    assert!(seen.starts_with("HTTP/1.1 200"), "{seen}");
    assert!(seen.contains(": keep-alive\n\n"), "no keep-alive: {seen}");
    assert!(
        started.elapsed() >= std::time::Duration::from_millis(600),
        "sent after a quiet interval, not at once"
    );

    // A CORS preflight from the listed origin, without a credential.
    let preflight = |origin: &str| {
        raw_at(
            &base,
            "OPTIONS",
            &url,
            &[
                ("Origin", origin),
                ("Access-Control-Request-Method", "POST"),
                (
                    "Access-Control-Request-Headers",
                    "authorization, content-type, mcp-protocol-version",
                ),
            ],
            b"",
        )
    };
    let allowed = preflight("https://app.test");
    assert_eq!(allowed.status, 204);
    assert_eq!(
        (
            allowed.header("access-control-allow-origin"),
            allowed.header("vary")
        ),
        (Some("https://app.test"), Some("Origin"))
    );
    let headers = allowed
        .header("access-control-allow-headers")
        .unwrap()
        .to_ascii_lowercase();
    for name in [
        "authorization",
        "content-type",
        "mcp-session-id",
        "mcp-protocol-version",
        "last-event-id",
    ] {
        assert!(headers.contains(name), "{headers}");
    }
    assert!(allowed
        .header("access-control-allow-methods")
        .unwrap()
        .contains("POST"));
    // Another origin: 403, and nothing a browser would take as a yes.
    let refused = preflight("https://evil.test");
    assert_eq!(refused.status, 403);
    assert!(refused
        .headers
        .iter()
        .all(|(name, _)| !name.to_ascii_lowercase().starts_with("access-control-")));
    // The page's real requests carry Access-Control-Allow-Origin, a refused
    // credential's included (so the page can read why).
    let post = |token: &str| {
        let auth = format!("Bearer {token}");
        raw_at(
            &base,
            "POST",
            &url,
            &[
                ("Authorization", &auth),
                ("Origin", "https://app.test"),
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
                ("Mcp-Session-Id", &session),
                ("MCP-Protocol-Version", "2025-11-25"),
            ],
            br#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        )
    };
    let listed = post(stead_harness::DEV_TOKEN);
    expect_status(&listed, 200);
    assert_eq!(
        listed.header("access-control-allow-origin"),
        Some("https://app.test")
    );
    assert!(listed
        .header("access-control-expose-headers")
        .unwrap()
        .contains("Mcp-Session-Id"));
    let wrong = post("wrong");
    assert_eq!(
        (wrong.status, wrong.header("access-control-allow-origin")),
        (401, Some("https://app.test"))
    );
    runtime.stop();
}
