//! End-to-end: the MCP server of the real Worker under `wrangler dev`,
//! driven by the official MCP TypeScript SDK clients (tests/mcp/*.mjs, run
//! with the Node 22 of node_modules/.bin): v1 (`@modelcontextprotocol/sdk`,
//! which speaks 2025-11-25) and v2 (`@modelcontextprotocol/client`, which
//! speaks 2026-07-28). Each lists tools, calls write, read, edit,
//! apply_patch, grep and bash, reads a detached job's output by offset,
//! starts a process on the computer (a real container when a Docker engine
//! runs, else a local process), lists it, follows its output by offset and
//! stops it, reads a file resource, receives a notification for a write made over
//! HTTP, and checks that a read-only token sees no write tools and cannot
//! write. Raw HTTP covers what an SDK never sends: bad input and refused
//! credentials, and `GET /tools` in every format.

mod common;

use std::process::Command;

use common::{base, chunked, client, expect_error, expect_ok, raw, Agent};
use serde_json::{json, Value};
use stead_harness::repo_root;

/// Mints a token for `agent` with `scopes`.
fn mint(agent: &str, scopes: &[&str], ttl_seconds: i64) -> String {
    let body = json!({ "agent": agent, "scopes": scopes, "ttl_seconds": ttl_seconds });
    let reply = client().send("POST", "/tokens", body.to_string().as_bytes());
    assert_eq!(
        reply.status,
        201,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    reply.json()["token"].as_str().unwrap().to_string()
}

const WRITER: &[&str] = &["read", "write", "exec:shell", "exec:computer", "schedule"];

/// Runs `tests/mcp/<script>` against a fresh agent; its summary (the last
/// line it prints).
fn run_client(script: &str, agent: &Agent) -> Value {
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
        .env("STEAD_TOKEN", mint(&agent.id, WRITER, 600))
        .env("STEAD_READ_TOKEN", mint(&agent.id, &["read"], 600))
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
    let token = mint(&agent.id, WRITER, 600);
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

#[test]
fn the_v2_sdk_speaks_2026_07_28_statelessly() {
    let agent = Agent::new("mcp-v2");
    let summary = run_client("stateless.mjs", &agent);
    assert_eq!(summary["era"], "modern");
    assert_eq!(summary["protocol"], "2026-07-28");
    assert_eq!(
        summary["supportedVersions"],
        json!(["2026-07-28", "2025-11-25"])
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
    let token = mint(&agent.id, WRITER, 600);
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

    // Credentials: a token for another agent, an expired one, a revoked one.
    let other = mint("someone-else", WRITER, 600);
    let foreign = modern(&agent, &other, "tools/list", json!({}), None);
    expect_error(&foreign, 403, "FORBIDDEN");
    let short = mint(&agent.id, WRITER, 1);
    std::thread::sleep(std::time::Duration::from_millis(2100));
    expect_error(
        &modern(&agent, &short, "tools/list", json!({}), None),
        401,
        "TOKEN_EXPIRED",
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
    expect_error(&refused, 401, "TOKEN_REVOKED");
    let anonymous = raw(
        "POST",
        &agent.url("/mcp"),
        &[("Content-Type", "application/json")],
        b"{}",
    );
    expect_error(&anonymous, 401, "UNAUTHORIZED");
    assert_eq!(agent.read("/kept.txt"), "kept", "nothing changed");
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
    let reader = mint(&agent.id, &["read"], 600);
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
