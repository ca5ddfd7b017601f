//! The MCP server on the fake host (real SQLite): JSON-RPC framing and
//! errors, both protocol shapes and the session versions negotiated (with
//! 2025-03-26 batches), sessions across restarts, tools shown and refused by
//! scope, every route error as an `isError` result, refused credentials
//! with their challenge, CORS headers, calls audited as their HTTP twins,
//! resources paged and read, change notifications resumed without loss
//! (between two listens too), and processes on a real `stead-computer`
//! started, followed, signalled and stopped through the tools.

mod common;

use common::*;
use serde_json::{json, Value};
use stead_agent::auth::{Caller, Scope};
use stead_agent::mcp::gate::Origins;
use stead_agent::mcp::http::{HttpMethod, McpBody, McpHeaders, McpReply, McpRequest};
use stead_agent::{Action, Agent, Bytes, Host as _, Tool};

const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";
const ORIGIN: &str = "http://127.0.0.1:8787";

/// What an MCP request was answered.
struct Answer {
    status: u16,
    headers: Vec<(&'static str, String)>,
    json: Option<Value>,
    events: Option<String>,
    stream: Option<FakeStream>,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    #[track_caller]
    fn json(&self) -> &Value {
        self.json.as_ref().expect("a JSON answer")
    }

    /// The JSON-RPC error code.
    #[track_caller]
    fn code(&self) -> i64 {
        self.json()["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("not an error: {}", self.json()))
    }

    /// The JSON-RPC result.
    #[track_caller]
    fn result(&self) -> &Value {
        let result = &self.json()["result"];
        assert!(!result.is_null(), "status {}: {}", self.status, self.json());
        result
    }
}

fn send(
    agent: &Agent<FakeHost>,
    caller: &Caller,
    method: HttpMethod,
    headers: McpHeaders,
    body: Vec<u8>,
) -> Answer {
    let request = McpRequest {
        agent: "a".into(),
        caller: caller.clone(),
        method,
        headers,
        origins: Origins::new(ORIGIN, Some("https://app.example")),
        body: Bytes(body),
    };
    let McpReply {
        status,
        headers,
        body,
    } = block_on(agent.mcp(request));
    let mut answer = Answer {
        status,
        headers,
        json: None,
        events: None,
        stream: None,
    };
    match body {
        McpBody::Empty => {}
        McpBody::Json(json) => answer.json = Some(json),
        McpBody::Events(text) => answer.events = Some(text),
        McpBody::Stream(stream) => answer.stream = Some(stream),
    }
    answer
}

fn json_headers() -> McpHeaders {
    McpHeaders {
        accept: Some("application/json, text/event-stream".into()),
        content_type: Some("application/json".into()),
        ..McpHeaders::default()
    }
}

/// A 2026-07-28 request with the `_meta` and headers the spec asks for.
fn modern(
    agent: &Agent<FakeHost>,
    caller: &Caller,
    id: i64,
    method: &str,
    mut params: Value,
) -> Answer {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": { "name": "test", "version": "1" },
    });
    let name = params
        .get("name")
        .or_else(|| params.get("uri"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let headers = McpHeaders {
        protocol_version: Some(MODERN.into()),
        mcp_method: Some(method.into()),
        mcp_name: name,
        ..json_headers()
    };
    let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
    send(
        agent,
        caller,
        HttpMethod::Post,
        headers,
        body.to_string().into_bytes(),
    )
}

/// A raw POST with `headers` and a raw body.
fn raw(agent: &Agent<FakeHost>, headers: McpHeaders, body: &str) -> Answer {
    send(
        agent,
        &Caller::Admin,
        HttpMethod::Post,
        headers,
        body.as_bytes().to_vec(),
    )
}

/// `initialize`; the new session's id.
fn initialize(agent: &Agent<FakeHost>, caller: &Caller) -> String {
    let body = json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": { "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } },
    });
    let answer = send(
        agent,
        caller,
        HttpMethod::Post,
        json_headers(),
        body.to_string().into_bytes(),
    );
    assert_eq!(answer.status, 200);
    assert_eq!(answer.result()["protocolVersion"], LEGACY);
    assert_eq!(
        answer.result()["capabilities"]["resources"]["subscribe"],
        true
    );
    answer
        .header("mcp-session-id")
        .expect("a session id")
        .to_string()
}

/// A 2025-11-25 request in session `session`.
fn legacy(
    agent: &Agent<FakeHost>,
    caller: &Caller,
    session: &str,
    method: &str,
    params: Value,
) -> Answer {
    let headers = McpHeaders {
        protocol_version: Some(LEGACY.into()),
        session_id: Some(session.into()),
        ..json_headers()
    };
    let body = json!({ "jsonrpc": "2.0", "id": "x", "method": method, "params": params });
    send(
        agent,
        caller,
        HttpMethod::Post,
        headers,
        body.to_string().into_bytes(),
    )
}

fn call_tool(agent: &Agent<FakeHost>, caller: &Caller, name: &str, arguments: Value) -> Value {
    let answer = modern(
        agent,
        caller,
        9,
        "tools/call",
        json!({ "name": name, "arguments": arguments }),
    );
    assert_eq!(answer.status, 200, "{:?}", answer.json);
    answer.result().clone()
}

fn tool_names(result: &Value) -> Vec<String> {
    result["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

fn revision(agent: &Agent<FakeHost>) -> i64 {
    ok(agent, "a", Action::Info, "")["usage"]["revision"]
        .as_i64()
        .unwrap_or_else(|| agent.vfs().revision().unwrap())
}

fn setup() -> Agent<FakeHost> {
    let agent = agent();
    create(&agent, "a");
    agent
}

/// The id of the request in `body` when it is a valid one, else `null`.
fn jsonrpc_id(body: &str) -> Value {
    serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| v.get("id").cloned())
        .filter(|id| id.is_string() || id.is_i64())
        .unwrap_or(Value::Null)
}

#[test]
fn malformed_messages_get_json_rpc_errors_and_http_statuses() {
    let agent = setup();
    let cases = [
        ("{nope", 400, -32700),
        ("[]", 400, -32600),
        (
            r#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]"#,
            400,
            -32600,
        ),
        (r#""tools/list""#, 400, -32600),
        (r#"{"id":1,"method":"tools/list"}"#, 400, -32600),
        (
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/list"}"#,
            400,
            -32600,
        ),
    ];
    for (body, status, code) in cases {
        let answer = raw(&agent, json_headers(), body);
        assert_eq!((answer.status, answer.code()), (status, code), "{body}");
        assert_eq!(answer.json()["jsonrpc"], "2.0");
        // JSON-RPC 2.0: an error carries the request's id, "id": null when
        // it could not be read.
        let id = jsonrpc_id(body);
        assert_eq!(answer.json().get("id"), Some(&id), "{body}");
    }
    let bad_id = raw(
        &agent,
        json_headers(),
        r#"{"jsonrpc":"2.0","id":{"n":1},"method":"tools/list"}"#,
    );
    assert_eq!(
        bad_id.json()["error"]["message"],
        "Invalid Request: id must be a string or an integer, got an object"
    );
    let wrong_type = McpHeaders {
        content_type: Some("text/plain".into()),
        ..json_headers()
    };
    assert_eq!(raw(&agent, wrong_type, "{}").status, 415);
    let html_only = McpHeaders {
        accept: Some("text/html".into()),
        ..json_headers()
    };
    assert_eq!(raw(&agent, html_only, "{}").status, 406);
    let huge = format!("{{\"pad\":\"{}\"}}", "x".repeat(16 << 20));
    let answer = raw(&agent, json_headers(), &huge);
    assert_eq!((answer.status, answer.code()), (413, -32600));
    let foreign = McpHeaders {
        origin: Some("https://evil.example".into()),
        ..json_headers()
    };
    let answer = raw(
        &agent,
        foreign,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
    );
    assert_eq!(answer.status, 403);
    assert!(answer.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("evil.example"));
    assert_eq!(answer.header("access-control-allow-origin"), None);
    // The endpoint's own origin, as the request's Host names it, is what a
    // DNS rebinding page sends: not trusted unless configured.
    let own = McpHeaders {
        origin: Some(ORIGIN.into()),
        ..json_headers()
    };
    let answer = raw(
        &agent,
        own,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
    );
    assert_eq!(answer.status, 403);
    let listed = McpHeaders {
        origin: Some("https://app.example".into()),
        ..json_headers()
    };
    let answer = raw(&agent, listed, "{}");
    assert_ne!(answer.status, 403);
    // An allowed page can read every answer, errors included.
    assert_eq!(
        (
            answer.header("access-control-allow-origin"),
            answer.header("vary")
        ),
        (Some("https://app.example"), Some("Origin"))
    );
    assert!(answer
        .header("access-control-expose-headers")
        .unwrap()
        .contains("Mcp-Session-Id"));
}

#[test]
fn the_stateless_revision_checks_meta_and_headers() {
    let agent = setup();
    let discover = modern(&agent, &Caller::Admin, 1, "server/discover", json!({}));
    let result = discover.result();
    assert_eq!(
        result["supportedVersions"],
        json!([MODERN, LEGACY, "2025-06-18", "2025-03-26"])
    );
    assert_eq!(result["resultType"], "complete");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "stead"
    );
    assert!(result["ttlMs"].as_i64().is_some() && result["cacheScope"] == "public");

    let unknown = modern(&agent, &Caller::Admin, 2, "prompts/list", json!({}));
    assert_eq!((unknown.status, unknown.code()), (404, -32601));
    // ping and initialize-era methods are not in 2026-07-28.
    let ping = modern(&agent, &Caller::Admin, 3, "ping", json!({}));
    assert_eq!((ping.status, ping.code()), (404, -32601));

    let body = |meta: Value| {
        json!({ "jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": { "_meta": meta } })
            .to_string()
    };
    let headers = |version: &str, method: &str| McpHeaders {
        protocol_version: Some(version.into()),
        mcp_method: Some(method.into()),
        ..json_headers()
    };
    let full = json!({ "io.modelcontextprotocol/protocolVersion": MODERN,
                       "io.modelcontextprotocol/clientCapabilities": {} });
    let answer = raw(&agent, headers(MODERN, "tools/list"), &body(json!({})));
    assert_eq!((answer.status, answer.code()), (400, -32602));
    let answer = raw(
        &agent,
        headers(MODERN, "tools/list"),
        &body(json!({ "io.modelcontextprotocol/protocolVersion": MODERN })),
    );
    assert_eq!(
        (answer.status, answer.code()),
        (400, -32602),
        "capabilities are required"
    );
    let answer = raw(&agent, headers(MODERN, "tools/call"), &body(full.clone()));
    assert_eq!(
        (answer.status, answer.code()),
        (400, -32020),
        "Mcp-Method must match"
    );
    let answer = raw(
        &agent,
        McpHeaders {
            mcp_method: None,
            ..headers(MODERN, "tools/list")
        },
        &body(full.clone()),
    );
    assert_eq!(
        (answer.status, answer.code()),
        (400, -32020),
        "Mcp-Method is required"
    );
    let mismatched = json!({ "io.modelcontextprotocol/protocolVersion": LEGACY,
                             "io.modelcontextprotocol/clientCapabilities": {} });
    let answer = raw(&agent, headers(MODERN, "tools/list"), &body(mismatched));
    assert_eq!((answer.status, answer.code()), (400, -32020));
    let answer = raw(
        &agent,
        headers("1900-01-01", "tools/list"),
        &body(full.clone()),
    );
    assert_eq!((answer.status, answer.code()), (400, -32022));
    assert_eq!(
        answer.json()["error"]["data"],
        json!({ "supported": [MODERN, LEGACY, "2025-06-18", "2025-03-26"], "requested": "1900-01-01" })
    );
    // _meta says modern, but no version header: the header is required.
    let answer = raw(&agent, json_headers(), &body(full));
    assert_eq!((answer.status, answer.code()), (400, -32020));
    // Neither a session nor a version: 400 without a modern error code, so
    // a client speaking both revisions falls back to initialize.
    let answer = raw(
        &agent,
        json_headers(),
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/list"}"#,
    );
    assert_eq!((answer.status, answer.code()), (400, -32600));

    // Mcp-Name must match the tool called; the base64 form is decoded.
    let call = json!({ "jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {
        "name": "ls", "arguments": {},
        "_meta": { "io.modelcontextprotocol/protocolVersion": MODERN,
                   "io.modelcontextprotocol/clientCapabilities": {} } } })
    .to_string();
    let named = |name: Option<&str>| McpHeaders {
        mcp_name: name.map(str::to_string),
        ..headers(MODERN, "tools/call")
    };
    assert_eq!(raw(&agent, named(None), &call).code(), -32020);
    assert_eq!(raw(&agent, named(Some("read")), &call).code(), -32020);
    assert_eq!(raw(&agent, named(Some("ls")), &call).status, 200);
    assert_eq!(
        raw(&agent, named(Some("=?base64?bHM=?=")), &call).status,
        200
    );
    // Notifications are accepted with 202.
    let note = raw(
        &agent,
        headers(MODERN, "notifications/cancelled"),
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
    );
    assert_eq!((note.status, note.json.is_none()), (202, true));
}

#[test]
fn sessions_of_the_previous_revision_survive_a_restart_and_are_their_creators() {
    let db = FaultySql::new();
    let agent = Agent::new(FakeHost::new(db.clone()));
    create(&agent, "a");
    let alice = token("alice", &[Scope::Read]);
    let session = initialize(&agent, &alice);
    assert_eq!(session.len(), 32);
    let listed = legacy(&agent, &alice, &session, "tools/list", json!({}));
    assert!(tool_names(listed.result()).contains(&"read".to_string()));
    assert!(
        listed.result().get("resultType").is_none(),
        "no 2026 fields in 2025-11-25"
    );
    assert_eq!(
        legacy(&agent, &alice, &session, "ping", json!({})).result(),
        &json!({})
    );
    // A method 2025-11-25 lacks is an error answered 200 (404 would end the
    // session in the client's eyes).
    let unknown = legacy(&agent, &alice, &session, "server/discover", json!({}));
    assert_eq!((unknown.status, unknown.code()), (200, -32601));

    // A restarted instance (a new Agent on the same database) knows it.
    let restarted = Agent::new(FakeHost::new(db.clone()));
    assert_eq!(
        legacy(&restarted, &alice, &session, "tools/list", json!({})).status,
        200
    );
    // Another credential presenting the id finds nothing.
    let mallory = token("mallory", &[Scope::Read]);
    assert_eq!(
        legacy(&restarted, &mallory, &session, "tools/list", json!({})).status,
        404
    );
    // The wrong protocol version for the session is a bad request.
    let headers = McpHeaders {
        protocol_version: Some("2025-06-18".into()),
        session_id: Some(session.clone()),
        ..json_headers()
    };
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }).to_string();
    assert_eq!(
        send(
            &restarted,
            &alice,
            HttpMethod::Post,
            headers,
            body.into_bytes()
        )
        .status,
        400
    );
    // Notifications of the session are accepted.
    let headers = McpHeaders {
        session_id: Some(session.clone()),
        ..json_headers()
    };
    let note = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_vec();
    assert_eq!(
        send(
            &restarted,
            &alice,
            HttpMethod::Post,
            headers.clone(),
            note.clone()
        )
        .status,
        202
    );

    // DELETE ends it: 204, then 404 for everything.
    let delete = |agent: &Agent<FakeHost>| {
        send(
            agent,
            &alice,
            HttpMethod::Delete,
            headers.clone(),
            Vec::new(),
        )
        .status
    };
    assert_eq!(delete(&restarted), 204);
    assert_eq!(delete(&restarted), 404);
    assert_eq!(
        legacy(&restarted, &alice, &session, "tools/list", json!({})).status,
        404
    );
    assert_eq!(
        send(&restarted, &alice, HttpMethod::Post, headers, note).status,
        404
    );

    // An idle session ends after a day.
    let session = initialize(&restarted, &alice);
    restarted.host().advance(25 * 60 * 60 * 1000);
    assert_eq!(
        legacy(&restarted, &alice, &session, "tools/list", json!({})).status,
        404
    );
}

/// `initialize` asking for `version`; the answer.
fn initialize_as(agent: &Agent<FakeHost>, version: &str) -> Answer {
    let body = json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": { "protocolVersion": version, "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } },
    });
    send(
        agent,
        &Caller::Admin,
        HttpMethod::Post,
        json_headers(),
        body.to_string().into_bytes(),
    )
}

#[test]
fn initialize_echoes_each_session_version_served_and_keeps_its_header_rules() {
    let agent = setup();
    // A version served with sessions is echoed; any other gets the newest.
    for (asked, answered) in [
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        (LEGACY, LEGACY),
        ("2024-11-05", LEGACY),
        (MODERN, LEGACY),
    ] {
        let answer = initialize_as(&agent, asked);
        assert_eq!(answer.status, 200, "{asked}");
        assert_eq!(answer.result()["protocolVersion"], answered, "{asked}");
    }
    let in_session = |session: &str, header: Option<&str>| {
        let headers = McpHeaders {
            protocol_version: header.map(str::to_string),
            session_id: Some(session.to_string()),
            ..json_headers()
        };
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" });
        send(
            &agent,
            &Caller::Admin,
            HttpMethod::Post,
            headers,
            body.to_string().into_bytes(),
        )
    };
    for version in ["2025-03-26", "2025-06-18"] {
        let session = initialize_as(&agent, version);
        let session = session.header("mcp-session-id").unwrap().to_string();
        // Its own version in the header, or none (a 2025-03-26 client
        // sends none; the session says which version it speaks).
        for header in [Some(version), None] {
            let answer = in_session(&session, header);
            assert_eq!(answer.status, 200, "{version} {header:?}");
            assert!(tool_names(answer.result()).contains(&"read".to_string()));
        }
        // Another version served is not this session's; one not served is
        // unsupported.
        assert_eq!(in_session(&session, Some(LEGACY)).status, 400);
        let unsupported = in_session(&session, Some("2024-11-05"));
        assert_eq!((unsupported.status, unsupported.code()), (400, -32022));
    }
}

#[test]
fn a_tokens_scopes_decide_which_tools_it_sees_and_may_call() {
    let agent = setup();
    let reader = token("r", &[Scope::Read]);
    let listed = modern(&agent, &reader, 1, "tools/list", json!({}));
    let names = tool_names(listed.result());
    assert_eq!(
        names,
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
    assert_eq!(listed.result()["cacheScope"], "private");
    let everything =
        tool_names(modern(&agent, &Caller::Admin, 2, "tools/list", json!({})).result());
    assert!(everything.len() > names.len());
    let listed_all = modern(&agent, &Caller::Admin, 3, "tools/list", json!({}));
    let tool = &listed_all.result()["tools"][0];
    assert_eq!(tool["name"], "read");
    assert_eq!(tool["inputSchema"]["type"], "object");
    assert_eq!(tool["annotations"]["readOnlyHint"], true);

    // A tool it does not see is refused as its HTTP twin is, and audited.
    let before = revision(&agent);
    let result = call_tool(
        &agent,
        &reader,
        "write",
        json!({ "path": "/f", "content": "x" }),
    );
    assert_eq!(result["isError"], true, "{result}");
    assert_eq!(result["structuredContent"]["error"]["code"], "FORBIDDEN");
    assert!(result["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("FORBIDDEN"));
    assert_eq!(revision(&agent), before, "nothing changed");
    let audit = ok(&agent, "a", Action::Audit, "");
    // Newest first.
    let last = audit["entries"].as_array().unwrap()[0].clone();
    assert_eq!(
        (last["action"].as_str(), last["outcome"].as_str()),
        (Some("write"), Some("FORBIDDEN")),
        "{last}"
    );
    assert_eq!(last["actor"], "token:r");
    let bash = call_tool(
        &agent,
        &reader,
        "bash",
        json!({ "command": "echo hi > /g" }),
    );
    assert_eq!(bash["structuredContent"]["error"]["code"], "FORBIDDEN");
    assert_eq!(revision(&agent), before);
}

#[test]
fn tool_calls_run_as_their_http_twins_and_are_audited() {
    let agent = setup();
    let writer = token("w", &[Scope::Read, Scope::Write, Scope::ExecShell]);
    let wrote = call_tool(
        &agent,
        &writer,
        "write",
        json!({ "path": "/src/a.txt", "content": "one\ntwo\n" }),
    );
    assert_eq!(wrote["isError"], false);
    assert_eq!(wrote["structuredContent"]["size"], 8);
    let text: Value = serde_json::from_str(wrote["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        text, wrote["structuredContent"],
        "the text block is the serialized JSON"
    );
    let read = call_tool(
        &agent,
        &writer,
        "read",
        json!({ "path": "/src/a.txt", "offset": 2 }),
    );
    assert_eq!(read["structuredContent"]["content"], "two\n");
    let edited = call_tool(
        &agent,
        &writer,
        "edit",
        json!({
            "path": "/src/a.txt",
            "edits": [{ "old": "one", "new": "uno" }, { "old": "o\n", "new": "os\n", "replace_all": true }],
        }),
    );
    assert_eq!(edited["structuredContent"]["replacements"], 2, "{edited}");
    let grep = call_tool(
        &agent,
        &writer,
        "grep",
        json!({ "pattern": "uno", "output": "files" }),
    );
    assert_eq!(
        grep["structuredContent"]["files"],
        json!(["/src/a.txt"]),
        "{grep}"
    );
    let bash = call_tool(
        &agent,
        &writer,
        "bash",
        json!({ "command": "wc -l < /src/a.txt" }),
    );
    assert_eq!(bash["structuredContent"]["stdout"], "2\n", "{bash}");
    let ls = call_tool(&agent, &writer, "ls", json!({ "path": "/src" }));
    assert_eq!(ls["structuredContent"]["entries"][0]["name"], "a.txt");
    let glob = call_tool(&agent, &writer, "glob", json!({ "pattern": "**/*.txt" }));
    assert_eq!(
        glob["structuredContent"]["matches"][0]["path"],
        "/src/a.txt"
    );

    let audit = ok(&agent, "a", Action::Audit, "");
    let recorded: Vec<(String, String)> = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .rev() // oldest first
        .filter(|e| e["actor"] == "token:w")
        .map(|e| {
            (
                e["action"].as_str().unwrap().into(),
                e["target"].as_str().unwrap_or("").into(),
            )
        })
        .collect();
    assert_eq!(
        recorded,
        [
            ("write".into(), "/src/a.txt".into()),
            ("edit".into(), "/src/a.txt".into()),
            ("exec".into(), "wc -l < /src/a.txt".into()),
        ]
    );
}

#[test]
fn a_detached_job_is_read_by_offset() {
    let agent = setup();
    let started = call_tool(
        &agent,
        &Caller::Admin,
        "bash",
        json!({ "command": "echo hello; echo world >&2", "detach": true }),
    );
    let job = started["structuredContent"]["job"]["id"]
        .as_i64()
        .expect("a job id");
    block_on(agent.alarm()).unwrap();
    // Pieces are whole: a page holds at least one, and `limit` stops it
    // after the first.
    let first = call_tool(
        &agent,
        &Caller::Admin,
        "job_output",
        json!({ "job": job, "from": 0, "limit": 1 }),
    );
    let page = &first["structuredContent"];
    assert_eq!(page["output"][0]["data"], "hello\n", "{page}");
    assert_eq!(
        (page["next"].as_i64(), page["done"].as_bool()),
        (Some(6), Some(false))
    );
    let rest = call_tool(
        &agent,
        &Caller::Admin,
        "job_output",
        json!({ "job": job, "from": 6 }),
    );
    let page = &rest["structuredContent"];
    assert_eq!(page["output"][0]["data"], "world\n", "{page}");
    assert_eq!(page["output"][0]["stream"], "stderr");
    assert_eq!(
        (page["done"].as_bool(), page["state"].as_str()),
        (Some(true), Some("succeeded"))
    );
    let cancel = call_tool(&agent, &Caller::Admin, "job_cancel", json!({ "job": job }));
    assert_eq!(cancel["structuredContent"]["error"]["code"], "JOB_FINISHED");
    let missing = call_tool(&agent, &Caller::Admin, "job_output", json!({ "job": 999 }));
    assert_eq!(
        missing["structuredContent"]["error"]["code"],
        "JOB_NOT_FOUND"
    );
}

#[test]
fn schedule_and_hook_tools_work_like_their_routes() {
    let agent = setup();
    let put = call_tool(
        &agent,
        &Caller::Admin,
        "schedule_put",
        json!({ "id": "nightly", "cron": "0 3 * * *", "exec": { "command": "date" } }),
    );
    assert_eq!(
        put["structuredContent"]["schedule"]["id"], "nightly",
        "{put}"
    );
    let list = call_tool(&agent, &Caller::Admin, "schedule_list", json!({}));
    assert_eq!(list["structuredContent"]["schedules"][0]["id"], "nightly");
    let gone = call_tool(
        &agent,
        &Caller::Admin,
        "schedule_delete",
        json!({ "id": "nightly" }),
    );
    assert_eq!(gone["structuredContent"]["deleted"], "nightly");
    let hook = call_tool(
        &agent,
        &Caller::Admin,
        "hook_put",
        json!({ "name": "gh", "exec": { "command": "cat" } }),
    );
    assert!(
        hook["structuredContent"]["secret"].as_str().is_some(),
        "{hook}"
    );
    let hooks = call_tool(&agent, &Caller::Admin, "hook_list", json!({}));
    assert_eq!(hooks["structuredContent"]["hooks"][0]["name"], "gh");
    let deleted = call_tool(
        &agent,
        &Caller::Admin,
        "hook_delete",
        json!({ "name": "gh" }),
    );
    assert_eq!(deleted["isError"], false, "{deleted}");
    // A schedule binding a command needs the scope to run it, as over HTTP.
    let scheduler = token("s", &[Scope::Schedule, Scope::Read]);
    let refused = call_tool(
        &agent,
        &scheduler,
        "schedule_put",
        json!({ "delay_ms": 1000, "exec": { "command": "true" } }),
    );
    assert_eq!(refused["structuredContent"]["error"]["code"], "FORBIDDEN");
}

#[test]
fn bad_calls_name_the_problem_and_change_nothing() {
    let agent = setup();
    let before = revision(&agent);
    let unknown = modern(
        &agent,
        &Caller::Admin,
        1,
        "tools/call",
        json!({ "name": "teleport", "arguments": {} }),
    );
    assert_eq!((unknown.status, unknown.code()), (200, -32602));
    assert!(unknown.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("teleport"));
    let not_object = modern(
        &agent,
        &Caller::Admin,
        2,
        "tools/call",
        json!({ "name": "write", "arguments": [1] }),
    );
    assert_eq!(not_object.code(), -32602);
    for (tool, arguments, needle) in [
        ("write", json!({ "path": "/f", "content": 7 }), "content"),
        ("write", json!({ "path": "/f" }), "content"),
        (
            "write",
            json!({ "path": "/f", "content": "x", "colour": "red" }),
            "colour",
        ),
        ("read", json!({ "path": 3 }), "path"),
        ("edit", json!({ "path": "/f", "edits": "all" }), "edits"),
        ("job_output", json!({ "job": "one" }), "job"),
        ("hook_put", json!({ "exec": { "command": "true" } }), "name"),
    ] {
        let result = call_tool(&agent, &Caller::Admin, tool, arguments.clone());
        assert_eq!(result["isError"], true, "{tool} {arguments}");
        let error = &result["structuredContent"]["error"];
        assert_eq!(
            error["code"], "INVALID_REQUEST",
            "{tool} {arguments}: {error}"
        );
        assert!(
            error["message"].as_str().unwrap().contains(needle),
            "{error}"
        );
    }
    let missing = call_tool(&agent, &Caller::Admin, "read", json!({ "path": "/nope" }));
    assert_eq!(missing["structuredContent"]["error"]["code"], "ENOENT");
    assert_eq!(revision(&agent), before, "nothing changed");
}

#[test]
fn every_error_of_the_dispatched_route_is_a_tool_result_the_model_reads() {
    let agent = setup();
    // A quota refusal is a 507 of the route: still the tool's result, with
    // its code and message in the text a model sees.
    ok(
        &agent,
        "a",
        Action::SettingsPut,
        r#"{"quotas":{"max_file_bytes":4}}"#,
    );
    for revision in [MODERN, LEGACY] {
        let arguments = json!({ "path": "/big.txt", "content": "too big for the quota" });
        let result = match revision {
            MODERN => call_tool(&agent, &Caller::Admin, "write", arguments),
            _ => {
                let session = initialize(&agent, &Caller::Admin);
                let answer = legacy(
                    &agent,
                    &Caller::Admin,
                    &session,
                    "tools/call",
                    json!({ "name": "write", "arguments": arguments }),
                );
                assert_eq!(answer.status, 200);
                answer.result().clone()
            }
        };
        assert_eq!(result["isError"], true, "{revision}: {result}");
        let error = &result["structuredContent"]["error"];
        assert_eq!(error["code"], "EFBIG", "{revision}: {result}");
        let text: Value =
            serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(text["error"]["code"], "EFBIG");
        assert!(text["error"]["message"].as_str().unwrap().len() > 5);
    }
    ok(
        &agent,
        "a",
        Action::SettingsPut,
        r#"{"quotas":{"max_stored_bytes":8}}"#,
    );
    let full = call_tool(
        &agent,
        &Caller::Admin,
        "write",
        json!({ "path": "/full.txt", "content": "more than eight bytes" }),
    );
    assert_eq!(
        (
            &full["isError"],
            &full["structuredContent"]["error"]["code"]
        ),
        (&json!(true), &json!("ENOSPC")),
        "a 5xx of the route is the tool's result too: {full}"
    );
}

#[test]
fn a_revoked_or_foreign_credential_is_refused_before_any_method() {
    let agent = setup();
    let holder = token("t1", &[Scope::Read, Scope::Write]);
    assert_eq!(
        modern(&agent, &holder, 1, "tools/list", json!({})).status,
        200
    );
    ok(&agent, "a", Action::RevokeToken, r#"{"id":"t1"}"#);
    let refused = modern(&agent, &holder, 2, "tools/list", json!({}));
    assert_eq!(refused.status, 401);
    // A JSON-RPC error for the request, the API's error as its data, and a
    // Bearer challenge naming the problem (RFC 6750).
    assert_eq!(refused.json()["id"], 2);
    assert_eq!(refused.code(), -32600);
    assert_eq!(
        refused.json()["error"]["data"]["error"]["code"],
        "TOKEN_REVOKED"
    );
    let challenge = refused.header("www-authenticate").unwrap();
    assert!(
        challenge.starts_with("Bearer error=\"invalid_token\", error_description=\""),
        "{challenge}"
    );
    let anonymous = modern(&agent, &Caller::Anonymous, 3, "tools/list", json!({}));
    assert_eq!(anonymous.status, 401);
    assert_eq!(anonymous.header("www-authenticate"), Some("Bearer"));
    // A missing scope is a 403 with insufficient_scope.
    let writer = token("t2", &[Scope::Write]);
    let session = initialize(&agent, &writer);
    let resources = legacy(&agent, &writer, &session, "resources/list", json!({}));
    assert_eq!(
        (resources.status, resources.json()["id"].as_str()),
        (403, Some("x"))
    );
    assert!(resources
        .header("www-authenticate")
        .unwrap()
        .starts_with("Bearer error=\"insufficient_scope\""));
    // An agent that does not exist.
    let fresh = stead_agent::Agent::new(FakeHost::new(FaultySql::new()));
    let answer = modern(&fresh, &Caller::Admin, 4, "tools/list", json!({}));
    assert_eq!(
        (answer.status, answer.json()["error"]["code"].as_str()),
        (404, Some("AGENT_NOT_FOUND"))
    );
}

fn write(agent: &Agent<FakeHost>, path: &str, content: &str) {
    let body = json!({ "path": path, "content": content }).to_string();
    ok(agent, "a", Action::Tool(Tool::Write), &body);
}

#[test]
fn files_are_resources_listed_in_pages_and_read_as_text_or_blob() {
    let agent = setup();
    for i in 0..700 {
        write(&agent, &format!("/many/f{i:03}.txt"), "x");
    }
    write(&agent, "/doc/readme.md", "# hi\n");
    ok(
        &agent,
        "a",
        Action::Tool(Tool::Write),
        r#"{"path":"/bin/blob","content":"AAEC/w==","encoding":"base64"}"#,
    );
    let mut uris = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let params = match &cursor {
            Some(cursor) => json!({ "cursor": cursor }),
            None => json!({}),
        };
        let answer = modern(&agent, &Caller::Admin, 1, "resources/list", params);
        let result = answer.result();
        pages += 1;
        for resource in result["resources"].as_array().unwrap() {
            uris.push(resource["uri"].as_str().unwrap().to_string());
        }
        match result.get("nextCursor").and_then(Value::as_str) {
            Some(next) => cursor = Some(next.to_string()),
            None => break,
        }
    }
    assert!(pages >= 2, "paged");
    assert_eq!(uris.len(), 702, "every file once");
    assert!(uris.contains(&"file:///doc/readme.md".to_string()));
    let bad = modern(
        &agent,
        &Caller::Admin,
        2,
        "resources/list",
        json!({ "cursor": "../x" }),
    );
    assert_eq!(bad.code(), -32602);

    let text = modern(
        &agent,
        &Caller::Admin,
        3,
        "resources/read",
        json!({ "uri": "file:///doc/readme.md" }),
    );
    assert_eq!(
        text.result()["contents"],
        json!([{ "uri": "file:///doc/readme.md", "mimeType": "text/markdown", "text": "# hi\n" }])
    );
    let blob = modern(
        &agent,
        &Caller::Admin,
        4,
        "resources/read",
        json!({ "uri": "file:///bin/blob" }),
    );
    let contents = &blob.result()["contents"][0];
    assert_eq!(
        (contents["blob"].as_str(), contents["mimeType"].as_str()),
        (Some("AAEC/w=="), Some("application/octet-stream"))
    );
    let dir = modern(
        &agent,
        &Caller::Admin,
        5,
        "resources/read",
        json!({ "uri": "file:///doc" }),
    );
    assert_eq!(dir.result()["contents"][0]["text"], "readme.md\n");
    let templates = modern(
        &agent,
        &Caller::Admin,
        6,
        "resources/templates/list",
        json!({}),
    );
    assert_eq!(
        templates.result()["resourceTemplates"][0]["uriTemplate"],
        "file:///{+path}"
    );

    let missing = modern(
        &agent,
        &Caller::Admin,
        7,
        "resources/read",
        json!({ "uri": "file:///nope" }),
    );
    assert_eq!(
        missing.code(),
        -32602,
        "2026-07-28: not found is invalid params"
    );
    assert_eq!(missing.json()["error"]["data"]["uri"], "file:///nope");
    let session = initialize(&agent, &Caller::Admin);
    let missing = legacy(
        &agent,
        &Caller::Admin,
        &session,
        "resources/read",
        json!({ "uri": "file:///nope" }),
    );
    assert_eq!(missing.code(), -32002, "2025-11-25: resource not found");
    let outside = modern(
        &agent,
        &Caller::Admin,
        8,
        "resources/read",
        json!({ "uri": "https://example.com/x" }),
    );
    assert_eq!(outside.code(), -32602);
    let no_scope = modern(
        &agent,
        &token("x", &[Scope::Write]),
        9,
        "resources/read",
        json!({ "uri": "file:///doc/readme.md" }),
    );
    assert_eq!(no_scope.status, 403);
}

#[test]
fn a_session_stream_resumes_after_last_event_id_with_nothing_lost_or_doubled() {
    let agent = setup();
    write(&agent, "/watched.txt", "0");
    let session = initialize(&agent, &Caller::Admin);
    let subscribed = legacy(
        &agent,
        &Caller::Admin,
        &session,
        "resources/subscribe",
        json!({ "uri": "file:///watched.txt" }),
    );
    assert_eq!(subscribed.result(), &json!({}));
    let get = |last: Option<&str>| {
        let headers = McpHeaders {
            accept: Some("text/event-stream".into()),
            session_id: Some(session.clone()),
            protocol_version: Some(LEGACY.into()),
            last_event_id: last.map(str::to_string),
            ..McpHeaders::default()
        };
        send(&agent, &Caller::Admin, HttpMethod::Get, headers, Vec::new())
    };
    let opened = get(None);
    assert_eq!(opened.status, 200);
    assert_eq!(opened.header("content-type"), Some("text/event-stream"));
    let stream = opened.stream.expect("a stream");
    write(&agent, "/watched.txt", "1");
    write(&agent, "/other.txt", "x");
    let events = stream.events();
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0].1["method"], "notifications/resources/updated");
    assert_eq!(events[0].1["params"]["uri"], "file:///watched.txt");
    assert_eq!(
        events[1].1["method"],
        "notifications/resources/list_changed"
    );
    let last_seen = events[1].0.clone().expect("an event id");

    // The connection drops; changes go on; the client comes back.
    stream.disconnect();
    write(&agent, "/watched.txt", "2");
    write(&agent, "/watched.txt", "3");
    assert!(
        stream.closed(),
        "a gone client's stream is closed on the next push"
    );
    let resumed = get(Some(&last_seen)).stream.expect("a stream");
    let events = resumed.events();
    let updates: Vec<&Value> = events.iter().map(|(_, m)| &m["params"]["uri"]).collect();
    assert_eq!(
        updates,
        [&json!("file:///watched.txt"), &json!("file:///watched.txt")],
        "{events:?}"
    );
    let ids: Vec<String> = events.iter().map(|(id, _)| id.clone().unwrap()).collect();
    assert_ne!(ids[0], ids[1]);
    assert!(!ids.contains(&last_seen));
    // Live again; unsubscribing stops updates but not list changes.
    legacy(
        &agent,
        &Caller::Admin,
        &session,
        "resources/unsubscribe",
        json!({ "uri": "file:///watched.txt" }),
    );
    write(&agent, "/watched.txt", "4");
    assert!(resumed.events().is_empty());
    // A new GET replaces the stream (one stream per session).
    let again = get(Some(&ids[1])).stream.expect("a stream");
    assert!(resumed.closed());
    assert!(
        again.events().is_empty(),
        "the unsubscribed change is not sent"
    );
    // A stateless client has no GET stream.
    let headers = McpHeaders {
        accept: Some("text/event-stream".into()),
        protocol_version: Some(MODERN.into()),
        ..McpHeaders::default()
    };
    assert_eq!(
        send(&agent, &Caller::Admin, HttpMethod::Get, headers, Vec::new()).status,
        405
    );
    let bad = get(Some("not-an-id"));
    assert_eq!(bad.status, 400);
}

#[test]
fn subscriptions_listen_acknowledges_then_streams_and_resumes_from_a_cursor() {
    let agent = setup();
    let listen = |meta: Option<&str>| {
        let mut params = json!({ "notifications": {
            "resourceSubscriptions": ["file:///src/"],
            "toolsListChanged": true,
        } });
        let mut answer = modern(
            &agent,
            &Caller::Admin,
            41,
            "subscriptions/listen",
            params.take(),
        );
        if let Some(cursor) = meta {
            // modern() sets _meta; resend with the cursor added.
            let mut params =
                json!({ "notifications": { "resourceSubscriptions": ["file:///src/"] } });
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {},
                "stead/cursor": cursor,
            });
            let headers = McpHeaders {
                protocol_version: Some(MODERN.into()),
                mcp_method: Some("subscriptions/listen".into()),
                ..json_headers()
            };
            let body = json!({ "jsonrpc": "2.0", "id": 42, "method": "subscriptions/listen", "params": params });
            answer = send(
                &agent,
                &Caller::Admin,
                HttpMethod::Post,
                headers,
                body.to_string().into_bytes(),
            );
        }
        answer
    };
    write(&agent, "/src/.keep", "");
    let opened = listen(None);
    assert_eq!(opened.status, 200);
    let stream = opened.stream.expect("a stream");
    let events = stream.events();
    assert_eq!(events.len(), 1);
    let ack = &events[0].1;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        41
    );
    // Tools do not change: not acknowledged.
    assert_eq!(
        ack["params"]["notifications"],
        json!({ "resourceSubscriptions": ["file:///src/"] })
    );
    assert_eq!(events[0].0, None, "no SSE ids in 2026-07-28");

    write(&agent, "/src/main.rs", "fn main() {}");
    write(&agent, "/elsewhere.txt", "x");
    let events = stream.events();
    assert_eq!(events.len(), 1, "{events:?}");
    let update = &events[0].1;
    assert_eq!(update["method"], "notifications/resources/updated");
    assert_eq!(update["params"]["uri"], "file:///src/main.rs");
    assert_eq!(
        update["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        41
    );
    let cursor = update["params"]["_meta"]["stead/cursor"]
        .as_str()
        .unwrap()
        .to_string();

    stream.disconnect();
    write(&agent, "/src/lib.rs", "1");
    write(&agent, "/src/main.rs", "2");
    let resumed = listen(Some(&cursor)).stream.expect("a stream");
    let events = resumed.events();
    let got: Vec<&str> = events
        .iter()
        .map(|(_, m)| m["params"]["uri"].as_str().unwrap_or("ack"))
        .collect();
    assert_eq!(
        got,
        ["ack", "file:///src/lib.rs", "file:///src/main.rs"],
        "{events:?}"
    );
    // Without text/event-stream in Accept, listen is not acceptable.
    let params = json!({ "notifications": {}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {} } });
    let headers = McpHeaders {
        accept: Some("application/json".into()),
        protocol_version: Some(MODERN.into()),
        mcp_method: Some("subscriptions/listen".into()),
        ..json_headers()
    };
    let body =
        json!({ "jsonrpc": "2.0", "id": 43, "method": "subscriptions/listen", "params": params });
    assert_eq!(
        send(
            &agent,
            &Caller::Admin,
            HttpMethod::Post,
            headers,
            body.to_string().into_bytes()
        )
        .status,
        406
    );
}

/// A 2026-07-28 `subscriptions/listen` for `filter`, with request id `id`.
fn listen(agent: &Agent<FakeHost>, caller: &Caller, id: i64, filter: Value) -> FakeStream {
    let opened = modern(
        agent,
        caller,
        id,
        "subscriptions/listen",
        json!({ "notifications": filter }),
    );
    assert_eq!(opened.status, 200, "{:?}", opened.json);
    opened.stream.expect("a stream")
}

/// The URIs of the `resources/updated` notifications among `events`.
fn updated(events: &[(Option<String>, Value)]) -> Vec<String> {
    events
        .iter()
        .filter(|(_, m)| m["method"] == "notifications/resources/updated")
        .map(|(_, m)| m["params"]["uri"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_change_made_between_two_listens_reaches_the_client() {
    let agent = setup();
    let filter = json!({ "resourceSubscriptions": ["file:///src/"] });
    // A first listener starts from now: nothing from before.
    write(&agent, "/src/old.rs", "0");
    let first = listen(&agent, &Caller::Admin, 1, filter.clone());
    assert_eq!(updated(&first.events()), Vec::<String>::new());
    write(&agent, "/src/a.rs", "1");
    assert_eq!(updated(&first.events()), ["file:///src/a.rs"]);
    write(&agent, "/src/b.rs", "2");
    assert_eq!(updated(&first.events()), ["file:///src/b.rs"]);
    // The stream dies; a change is made; the client listens again, as SDK
    // clients do, without any cursor of ours.
    first.disconnect();
    write(&agent, "/src/c.rs", "3");
    let second = listen(&agent, &Caller::Admin, 2, filter.clone());
    let got = updated(&second.events());
    assert!(
        got.ends_with(&["file:///src/c.rs".to_string()]),
        "the change made in between arrives: {got:?}"
    );
    // At most the last push is repeated (it may have been lost in flight);
    // nothing older.
    assert!(
        !got.contains(&"file:///src/a.rs".to_string()) && got.len() <= 2,
        "{got:?}"
    );
    // The same filter in another order is the same listener; another
    // filter, or another credential, starts from now.
    second.disconnect();
    write(&agent, "/src/d.rs", "4");
    let reordered = json!({ "resourceSubscriptions": ["file:///src/", "file:///src/"] });
    let third = listen(&agent, &Caller::Admin, 3, reordered);
    assert!(updated(&third.events()).contains(&"file:///src/d.rs".to_string()));
    let other = token("other", &[Scope::Read]);
    let stranger = listen(&agent, &other, 4, filter.clone());
    assert_eq!(updated(&stranger.events()), Vec::<String>::new());
    // A listener unseen for longer than an hour starts from now.
    third.disconnect();
    write(&agent, "/src/e.rs", "5");
    agent.host().advance(61 * 60 * 1000);
    let late = listen(&agent, &Caller::Admin, 5, filter);
    assert_eq!(updated(&late.events()), Vec::<String>::new());
}

#[test]
fn a_stream_ends_when_its_token_expires_or_is_revoked() {
    let agent = setup();
    let filter = json!({ "resourceSubscriptions": ["file:///src/"] });
    let now_s = agent.host().now_ms() / 1000;
    let short = token_until("t-short", &[Scope::Read], now_s + 5);
    let long = token("t-long", &[Scope::Read]);
    write(&agent, "/src/seed.rs", "0");
    let expiring = listen(&agent, &short, 1, filter.clone());
    let revoked = listen(&agent, &long, 2, filter.clone());
    let _ = (expiring.events(), revoked.events());
    write(&agent, "/src/a.rs", "1");
    assert_eq!(updated(&expiring.events()), ["file:///src/a.rs"]);
    assert_eq!(updated(&revoked.events()), ["file:///src/a.rs"]);

    ok(&agent, "a", Action::RevokeToken, r#"{"id":"t-long"}"#);
    assert!(
        revoked.closed(),
        "a revoked token's stream is closed at once"
    );
    agent.host().advance(5_000);
    write(&agent, "/src/b.rs", "2");
    assert!(expiring.closed(), "an expired token's stream is closed");
    assert_eq!(updated(&expiring.events()), Vec::<String>::new());
    assert_eq!(updated(&revoked.events()), Vec::<String>::new());
}

#[test]
fn a_client_accepting_only_event_streams_gets_one_event() {
    let agent = setup();
    let headers = McpHeaders {
        accept: Some("text/event-stream".into()),
        ..json_headers()
    };
    let body = json!({
        "jsonrpc": "2.0", "id": 7, "method": "initialize",
        "params": { "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } },
    });
    let answer = send(
        &agent,
        &Caller::Admin,
        HttpMethod::Post,
        headers,
        body.to_string().into_bytes(),
    );
    let events = parse_events(answer.events.as_deref().expect("an SSE body"));
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].1["id"], 7);
    assert_eq!(events[0].1["result"]["protocolVersion"], LEGACY);
}

#[test]
fn apply_patch_and_fuzzy_edit_answer_through_the_tools() {
    let agent = setup();
    let writer = token("p", &[Scope::Read, Scope::Write]);
    write(&agent, "/app.py", "def greet():\n    print(\"Hi\")\n");
    let patch = "*** Begin Patch\n*** Add File: docs/hello.txt\n+Hello\n*** Update File: app.py\n@@ def greet():\n-    print(\"Hi\")\n+    print(\"Hello\")\n*** End Patch\n";
    let applied = call_tool(&agent, &writer, "apply_patch", json!({ "patch": patch }));
    assert_eq!(applied["isError"], false, "{applied}");
    let files: Vec<&str> = applied["structuredContent"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(files, ["/docs/hello.txt", "/app.py"]);
    assert!(applied["structuredContent"]["diff"]
        .as_str()
        .unwrap()
        .contains("+    print(\"Hello\")"));
    // A hunk that does not apply changes nothing and says where.
    let before = revision(&agent);
    let bad = "*** Begin Patch\n*** Add File: more.txt\n+x\n*** Update File: app.py\n@@\n-    print(\"Bonjour\")\n+    print(\"Salut\")\n*** End Patch\n";
    let failed = call_tool(&agent, &writer, "apply_patch", json!({ "patch": bad }));
    assert_eq!(failed["isError"], true, "{failed}");
    let error = &failed["structuredContent"]["error"];
    assert!(
        error["message"].as_str().unwrap().contains("app.py"),
        "{error}"
    );
    assert_eq!(revision(&agent), before, "nothing changed");
    let missing = call_tool(&agent, &writer, "read", json!({ "path": "/more.txt" }));
    assert_eq!(missing["structuredContent"]["error"]["code"], "ENOENT");
    // edit: a near match (curly quotes for straight ones) is applied and said.
    let fuzzy = call_tool(
        &agent,
        &writer,
        "edit",
        json!({
            "path": "/app.py",
            "edits": [{ "old": "print(\u{201c}Hello\u{201d})", "new": "print(\"Hey\")" }],
        }),
    );
    assert_eq!(fuzzy["isError"], false, "{fuzzy}");
    let matched = &fuzzy["structuredContent"]["fuzzy"][0];
    assert!(
        matched["matched"]
            .as_str()
            .unwrap()
            .contains("print(\"Hello\")"),
        "{fuzzy}"
    );
    assert_eq!(matched["rule"], "typography");
    // A strict-mode client's nulls read as fields left out.
    let strict = call_tool(
        &agent,
        &writer,
        "read",
        json!({
            "path": "/app.py", "offset": null, "limit": null, "line_numbers": null,
            "byte_offset": null, "byte_length": null, "encoding": null,
        }),
    );
    assert!(
        strict["structuredContent"]["content"]
            .as_str()
            .unwrap()
            .contains("Hey"),
        "{strict}"
    );
}

/// The page of a process's output `process_output` answers from `from`.
fn process_output(agent: &Agent<FakeHost>, caller: &Caller, id: &str, from: i64) -> Value {
    let page = call_tool(
        agent,
        caller,
        "process_output",
        json!({ "id": id, "from": from }),
    );
    assert_eq!(page["isError"], false, "{page}");
    page["structuredContent"].clone()
}

fn page_text(page: &Value) -> String {
    page["output"]
        .as_array()
        .expect("output pieces")
        .iter()
        .map(|p| p["data"].as_str().unwrap())
        .collect()
}

#[test]
fn processes_are_started_followed_signalled_and_stopped_through_the_tools() {
    let agent = setup();
    let dir = tempfile::tempdir().unwrap();
    let _computer = with_computer(&agent, "a", dir.path());
    write(&agent, "/app/name.txt", "alpha\n");

    // Without `exec:computer` the tools that run something are not shown,
    // and calling one is refused as the route refuses it, and audited.
    let shell_only = token("s", &[Scope::Read, Scope::ExecShell]);
    let names = tool_names(modern(&agent, &shell_only, 1, "tools/list", json!({})).result());
    for shown in ["process_list", "process_get", "process_output"] {
        assert!(names.iter().any(|n| n == shown), "{shown}: {names:?}");
    }
    for hidden in ["process_start", "process_signal", "process_stop"] {
        assert!(!names.iter().any(|n| n == hidden), "{hidden}: {names:?}");
    }
    let body = json!({ "command": "sleep 30" });
    let refused = call_tool(&agent, &shell_only, "process_start", body.clone());
    assert_eq!(refused["isError"], true, "{refused}");
    let (status, over_http) = call(
        &agent,
        request(
            "a",
            Action::ProcessStart,
            shell_only.clone(),
            &body.to_string(),
        ),
    );
    assert_eq!(failure(status, &over_http), (403, "FORBIDDEN"));
    assert_eq!(refused["structuredContent"], over_http, "the route's error");
    let audit = ok(&agent, "a", Action::Audit, "");
    let refusals: Vec<(&str, &str)> = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .rev() // oldest first
        .filter(|e| e["actor"] == "token:s")
        .map(|e| {
            (
                e["action"].as_str().unwrap(),
                e["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        refusals,
        [
            ("process.start", "FORBIDDEN"),
            ("process.start", "FORBIDDEN")
        ]
    );
    let none = call_tool(&agent, &shell_only, "process_list", json!({}));
    assert_eq!(none["structuredContent"]["processes"], json!([]));

    let operator = token("o", &[Scope::Read, Scope::ExecComputer]);
    let started = call_tool(
        &agent,
        &operator,
        "process_start",
        json!({
            "command": "trap 'echo got usr1' USR1; cat name.txt; echo hello-from-process; while true; do sleep 0.1; done",
            "cwd": "/app",
            "restart": "on-failure",
        }),
    );
    assert_eq!(started["isError"], false, "{started}");
    let process = &started["structuredContent"]["process"];
    assert_eq!(
        (process["state"].as_str(), process["restart"].as_str()),
        (Some("running"), Some("on-failure")),
        "{process}"
    );
    let id = process["id"].as_str().unwrap().to_string();
    let job = process["job"].as_i64().expect("its job");

    // Its output is read by offset, page after page, and is its job's log.
    tick_until(&agent, "its output", || {
        page_text(&process_output(&agent, &operator, &id, 0)).contains("hello-from-process")
    });
    let first = call_tool(
        &agent,
        &operator,
        "process_output",
        json!({ "id": id, "from": 0, "limit": 1 }),
    );
    let first = &first["structuredContent"];
    let next = first["next"].as_i64().unwrap();
    assert!(page_text(first).starts_with("alpha\n"), "{first}");
    assert_eq!(next as usize, page_text(first).len());
    let rest = process_output(&agent, &operator, &id, next);
    assert_eq!(
        format!("{}{}", page_text(first), page_text(&rest)),
        "alpha\nhello-from-process\n"
    );
    assert_eq!(rest["done"], false, "it still runs");
    let by_job = call_tool(&agent, &operator, "job_output", json!({ "job": job }));
    assert_eq!(
        page_text(&by_job["structuredContent"]),
        "alpha\nhello-from-process\n"
    );

    let listed = call_tool(&agent, &shell_only, "process_list", json!({}));
    let listed = &listed["structuredContent"]["processes"];
    assert_eq!(
        (listed[0]["id"].as_str(), listed[0]["state"].as_str()),
        (Some(id.as_str()), Some("running")),
        "{listed}"
    );
    let got = call_tool(&agent, &shell_only, "process_get", json!({ "id": id }));
    assert_eq!(got["structuredContent"]["process"]["job"], job);

    let signalled = call_tool(
        &agent,
        &operator,
        "process_signal",
        json!({ "id": id, "signal": "SIGUSR1" }),
    );
    assert_eq!(signalled["structuredContent"]["signal"], "SIGUSR1");
    tick_until(&agent, "the trap", || {
        page_text(&process_output(&agent, &operator, &id, 0)).contains("got usr1")
    });
    let unknown = call_tool(
        &agent,
        &operator,
        "process_signal",
        json!({ "id": id, "signal": "NOPE" }),
    );
    assert_eq!(
        unknown["structuredContent"]["error"]["code"],
        "INVALID_REQUEST"
    );
    let bad_grace = call_tool(
        &agent,
        &operator,
        "process_stop",
        json!({ "id": id, "grace_ms": 60001 }),
    );
    assert_eq!(
        bad_grace["structuredContent"]["error"]["code"],
        "INVALID_REQUEST"
    );

    let stopped = call_tool(
        &agent,
        &operator,
        "process_stop",
        json!({ "id": id, "grace_ms": 1000 }),
    );
    let process = &stopped["structuredContent"]["process"];
    assert_eq!(
        (process["state"].as_str(), process["stopped"].as_bool()),
        (Some("exited"), Some(true)),
        "{stopped}"
    );
    let end = process_output(&agent, &operator, &id, 0);
    assert_eq!(
        (end["done"].as_bool(), end["state"].as_str()),
        (Some(true), Some("cancelled")),
        "{end}"
    );
    // Stopping it again forgets it; its job's log stays.
    let forgotten = call_tool(&agent, &operator, "process_stop", json!({ "id": id }));
    assert_eq!(forgotten["structuredContent"]["deleted"], id.as_str());
    let gone = call_tool(&agent, &operator, "process_get", json!({ "id": id }));
    assert_eq!(
        gone["structuredContent"]["error"]["code"],
        "PROCESS_NOT_FOUND"
    );
    assert!(job_text(&agent, job).contains("got usr1"));

    let audit = ok(&agent, "a", Action::Audit, "");
    let recorded: Vec<&str> = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .rev() // oldest first
        .filter(|e| e["actor"] == "token:o" && e["outcome"] == "ok")
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        recorded,
        [
            "process.start",
            "process.signal",
            "process.stop",
            "process.stop"
        ]
    );
}

#[test]
fn a_port_is_shared_through_the_tool() {
    let agent = setup();
    let sharer = token("p", &[Scope::Read, Scope::Ports]);
    let shared = call_tool(
        &agent,
        &sharer,
        "port_share",
        json!({ "port": 3000, "ttl_seconds": 600 }),
    );
    assert_eq!(shared["isError"], false, "{shared}");
    let share = &shared["structuredContent"]["share"];
    let url = share["url"].as_str().unwrap();
    assert!(
        url.starts_with("http://3000-a.ports.test:8787/?stead_share=shr_"),
        "a link on the port's own origin, with the endpoint's scheme and port: {url}"
    );
    let listed = ok(&agent, "a", Action::Shares, "");
    assert_eq!(listed["shares"][0]["id"], share["id"], "{listed}");
    // Without the `ports` scope the tool is neither shown nor callable.
    let reader = token("r", &[Scope::Read]);
    let names = tool_names(modern(&agent, &reader, 1, "tools/list", json!({})).result());
    assert!(!names.iter().any(|n| n == "port_share"), "{names:?}");
    let refused = call_tool(
        &agent,
        &reader,
        "port_share",
        json!({ "port": 3000, "ttl_seconds": 600 }),
    );
    assert_eq!(refused["structuredContent"]["error"]["code"], "FORBIDDEN");
    let zero = call_tool(
        &agent,
        &sharer,
        "port_share",
        json!({ "port": 0, "ttl_seconds": 600 }),
    );
    assert_eq!(
        zero["structuredContent"]["error"]["code"],
        "INVALID_REQUEST"
    );
    assert_eq!(
        ok(&agent, "a", Action::Shares, "")["shares"]
            .as_array()
            .map(Vec::len),
        Some(1),
        "the refused calls made no link"
    );
}

#[test]
fn a_2025_03_26_session_takes_batches_and_later_ones_do_not() {
    let agent = setup();
    let post = |session: &str, body: &str| {
        let headers = McpHeaders {
            session_id: Some(session.to_string()),
            ..json_headers()
        };
        send(
            &agent,
            &Caller::Admin,
            HttpMethod::Post,
            headers,
            body.as_bytes().to_vec(),
        )
    };
    let session = initialize_as(&agent, "2025-03-26");
    let session = session.header("mcp-session-id").unwrap().to_string();
    let batch = post(
        &session,
        r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},
            {"jsonrpc":"2.0","method":"notifications/initialized"},
            {"jsonrpc":"2.0","id":"t","method":"tools/call","params":{"name":"read","arguments":{"path":"/none"}}},
            {"jsonrpc":"2.0","id":3,"method":"initialize","params":{}},
            {"jsonrpc":"2.0","id":4,"method":"nope"},
            7]"#,
    );
    assert_eq!(batch.status, 200);
    let responses = batch.json().as_array().unwrap().clone();
    let ids: Vec<&Value> = responses.iter().map(|r| &r["id"]).collect();
    assert_eq!(
        ids,
        [&json!(1), &json!("t"), &json!(3), &json!(4), &Value::Null]
    );
    assert_eq!(responses[0]["result"], json!({}));
    assert_eq!(responses[1]["result"]["isError"], true);
    assert_eq!(
        responses[2]["error"]["code"], -32600,
        "initialize is not batched"
    );
    assert_eq!(responses[3]["error"]["code"], -32601);
    assert_eq!(responses[4]["error"]["code"], -32600);
    // Only notifications: accepted, nothing to answer.
    let notes = post(
        &session,
        r#"[{"jsonrpc":"2.0","method":"notifications/initialized"}]"#,
    );
    assert_eq!(notes.status, 202);
    let empty = post(&session, "[]");
    assert_eq!((empty.status, empty.code()), (400, -32600));
    // 2025-06-18 removed batches.
    let later = initialize_as(&agent, "2025-06-18");
    let later = later.header("mcp-session-id").unwrap().to_string();
    let refused = post(&later, r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#);
    assert_eq!((refused.status, refused.code()), (400, -32600));
    assert!(refused.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("2025-03-26"));
}
