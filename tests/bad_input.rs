//! End-to-end: requests the Worker must refuse. Each one checks the status,
//! the error code, and that the workspace is exactly as before (usage and
//! revision, every node, every file's bytes). Also the credential: without
//! the right token nothing is read or written.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{
    base, bearer, chunked, client, expect_error, expect_made, expect_ok, raw, raw_authorized,
    Agent, Noise,
};
use serde_json::{json, Value};
use stead_harness::Reply;

/// A fresh agent with a few files to damage: `/probe.txt` (with a repeated
/// line), `/file.txt`, and `/dir/inner.txt`.
fn fixture(id: &str) -> Agent {
    let agent = Agent::new(id);
    agent.write("/probe.txt", "alpha\nbeta\nalpha\n");
    agent.write("/file.txt", "plain file");
    agent.write("/dir/inner.txt", "inner");
    agent
}

impl Agent {
    /// `tool` with a JSON body must fail with `status`/`code`, changing nothing.
    #[track_caller]
    fn tool_rejects(&self, tool: &str, body: Value, status: u16, code: &str) -> Value {
        self.rejects(status, code, || self.call(tool, body))
    }

    /// `tool` with a raw body must fail with `status`/`code`, changing nothing.
    #[track_caller]
    fn raw_body_rejects(&self, tool: &str, body: &[u8], status: u16, code: &str) -> Value {
        self.rejects(status, code, || {
            self.send("POST", &format!("/{tool}"), body)
        })
    }

    /// An authorized raw request to this agent's `rest` must fail, changing nothing.
    #[track_caller]
    fn raw_rejects(&self, method: &str, rest: &str, body: &[u8], status: u16, code: &str) -> Value {
        self.rejects(status, code, || {
            raw_authorized(method, &self.url(rest), body)
        })
    }

    /// An upload must fail, changing nothing.
    #[track_caller]
    fn upload_rejects(&self, path: &str, query: &str, status: u16, code: &str) -> Value {
        self.rejects(status, code, || self.upload(path, query, &b"data"[..]))
    }
}

#[test]
fn malformed_json() {
    let agent = fixture("malformed_json");
    for body in [
        &br#"{"path": "/new.txt", "content": "#[..],
        br#"{"path": "/new.txt", "content": "x",}"#,
        br#"{'path': '/new.txt'}"#,
        b"not json at all",
        b"{\"path\": \"/new.txt\", \"content\": \"\xff\"}",
    ] {
        agent.raw_body_rejects("write", body, 400, "MALFORMED_JSON");
    }
}

#[test]
fn wrong_field_types() {
    let agent = fixture("wrong_field_types");
    for (tool, body) in [
        ("write", json!({ "path": 5, "content": "x" })),
        ("write", json!({ "path": "/new.txt", "content": ["x"] })),
        (
            "write",
            json!({ "path": "/new.txt", "content": "x", "parents": "yes" }),
        ),
        ("read", json!({ "path": "/probe.txt", "offset": -1 })),
        ("mkdir", json!({ "path": "/d", "parents": 1 })),
        ("rm", json!({ "path": null })),
        (
            "edit",
            json!({ "path": "/probe.txt", "edits": { "old": "beta", "new": "b" } }),
        ),
        ("write", json!(["/new.txt", "x"])),
        ("write", json!("/new.txt")),
    ] {
        let error = agent.tool_rejects(tool, body.clone(), 400, "INVALID_REQUEST");
        assert!(
            error["message"].as_str().unwrap().contains("invalid"),
            "{tool} {body}: {error}"
        );
    }
}

#[test]
fn missing_fields() {
    let agent = fixture("missing_fields");
    for (tool, body, field) in [
        ("write", json!({ "path": "/new.txt" }), "content"),
        ("write", json!({ "content": "x" }), "path"),
        ("mv", json!({ "from": "/probe.txt" }), "to"),
        ("edit", json!({ "path": "/probe.txt" }), "edits"),
        (
            "edit",
            json!({ "path": "/probe.txt", "edits": [{ "old": "beta" }] }),
            "new",
        ),
        ("chmod", json!({ "path": "/probe.txt" }), "mode"),
        ("symlink", json!({ "path": "/l" }), "target"),
        ("grep", json!({}), "pattern"),
    ] {
        let error = agent.tool_rejects(tool, body, 400, "INVALID_REQUEST");
        assert!(
            error["message"].as_str().unwrap().contains(field),
            "{tool}: {error}"
        );
    }
}

#[test]
fn unknown_fields() {
    let agent = fixture("unknown_fields");
    for (tool, body, field) in [
        (
            "write",
            json!({ "path": "/new.txt", "content": "x", "bogus": 1 }),
            "bogus",
        ),
        ("read", json!({ "path": "/probe.txt", "lines": 5 }), "lines"),
        (
            "rm",
            json!({ "path": "/dir", "recursve": true }),
            "recursve",
        ),
        ("changes", json!({ "sinse": 0 }), "sinse"),
    ] {
        let error = agent.tool_rejects(tool, body, 400, "INVALID_REQUEST");
        assert!(
            error["message"].as_str().unwrap().contains(field),
            "{tool}: {error}"
        );
    }
}

#[test]
fn empty_body() {
    let agent = fixture("empty_body");
    for tool in ["write", "read", "rm", "ls", "changes"] {
        agent.raw_body_rejects(tool, b"", 400, "INVALID_REQUEST");
        agent.raw_body_rejects(tool, b" \n\t", 400, "INVALID_REQUEST");
    }
}

/// A valid write request of more than 16 MiB.
fn oversized_write() -> Vec<u8> {
    let content = "a".repeat((16 << 20) + 1);
    json!({ "path": "/big.txt", "content": content })
        .to_string()
        .into_bytes()
}

#[test]
fn oversized_json_body() {
    let agent = fixture("oversized_json_body");
    let body = oversized_write();
    // A declared length over the limit: see `oversized_json_body_sent_whole`.
    // Without a Content-Length the limit is enforced while streaming.
    let streamed = chunked(&body);
    agent.rejects(413, "BODY_TOO_LARGE", || {
        raw(
            "POST",
            &agent.url("/write"),
            &[
                ("Authorization", &bearer()),
                ("Transfer-Encoding", "chunked"),
            ],
            &streamed,
        )
    });
    // Just under the limit is fine.
    let content = "b".repeat((16 << 20) - 100);
    let written = agent.ok("write", json!({ "path": "/big.txt", "content": content }));
    assert_eq!(written["size"], (16 << 20) - 100);
}

/// The same request as a client such as curl sends it: the whole body,
/// reading the answer as it comes.
#[test]
fn oversized_json_body_sent_whole() {
    let agent = fixture("oversized_json_body_sent_whole");
    let body = oversized_write();
    for _ in 0..5 {
        agent.raw_rejects("POST", "/write", &body, 413, "BODY_TOO_LARGE");
    }
}

#[test]
fn paths_escaping_the_root() {
    let agent = fixture("paths_escaping_the_root");
    for (tool, body) in [
        ("write", json!({ "path": "/../etc/passwd", "content": "x" })),
        (
            "write",
            json!({ "path": "dir/../../escape.txt", "content": "x" }),
        ),
        ("read", json!({ "path": "../probe.txt" })),
        ("mkdir", json!({ "path": "/..", "parents": true })),
        ("ls", json!({ "path": "/dir/../.." })),
        ("mv", json!({ "from": "/probe.txt", "to": "/../probe.txt" })),
        (
            "cp",
            json!({ "from": "/../../probe.txt", "to": "/copy.txt" }),
        ),
        (
            "symlink",
            json!({ "target": "/probe.txt", "path": "/../link" }),
        ),
        ("rm", json!({ "path": "/..", "recursive": true })),
        ("grep", json!({ "pattern": "alpha", "path": "/.." })),
        ("glob", json!({ "pattern": "**", "path": "/.." })),
    ] {
        agent.tool_rejects(tool, body, 403, "EACCES");
    }
    // `%2F` keeps the `..` away from URL normalisation, so it reaches the API.
    agent.upload_rejects("/..%2Fescape.txt", "", 403, "EACCES");
    agent.raw_rejects("GET", "/files/..%2F..%2Fprobe.txt", b"", 403, "EACCES");
}

#[test]
fn nul_bytes() {
    let agent = fixture("nul_bytes");
    let error = agent.tool_rejects(
        "write",
        json!({ "path": "/a\u{0}b.txt", "content": "x" }),
        400,
        "EINVAL",
    );
    assert!(
        error["message"].as_str().unwrap().contains("NUL"),
        "{error}"
    );
    agent.tool_rejects("read", json!({ "path": "/probe.txt\u{0}" }), 400, "EINVAL");
    agent.tool_rejects(
        "symlink",
        json!({ "target": "/probe\u{0}.txt", "path": "/link" }),
        400,
        "EINVAL",
    );
    agent.upload_rejects("/a%00b.txt", "", 400, "EINVAL");
}

#[test]
fn over_long_paths_and_names() {
    let agent = fixture("over_long_paths_and_names");
    let long_path = format!("/{}x", "abcdefgh/".repeat(460));
    assert!(long_path.len() > 4096);
    let long_name = format!("/{}", "n".repeat(256));
    for path in [&long_path, &long_name] {
        agent.tool_rejects(
            "write",
            json!({ "path": path, "content": "x" }),
            400,
            "ENAMETOOLONG",
        );
        agent.tool_rejects(
            "mkdir",
            json!({ "path": path, "parents": true }),
            400,
            "ENAMETOOLONG",
        );
        agent.upload_rejects(path, "", 400, "ENAMETOOLONG");
    }
    agent.tool_rejects(
        "mv",
        json!({ "from": "/probe.txt", "to": long_name }),
        400,
        "ENAMETOOLONG",
    );
    // The limits themselves are allowed.
    let longest_name = format!("/{}", "n".repeat(255));
    agent.write(&longest_name, "ok");
    assert_eq!(agent.read(&longest_name), "ok");
}

#[test]
fn missing_files() {
    let agent = fixture("missing_files");
    let edit = json!({ "path": "/missing.txt", "edits": [{ "old": "a", "new": "b" }] });
    let error = agent.tool_rejects("edit", edit, 404, "ENOENT");
    assert_eq!(error["path"], "/missing.txt");
    agent.tool_rejects("read", json!({ "path": "/missing.txt" }), 404, "ENOENT");
    agent.tool_rejects("rm", json!({ "path": "/missing.txt" }), 404, "ENOENT");
    agent.tool_rejects(
        "mv",
        json!({ "from": "/missing.txt", "to": "/x.txt" }),
        404,
        "ENOENT",
    );
    agent.tool_rejects(
        "write",
        json!({ "path": "/nodir/x.txt", "content": "x", "parents": false }),
        404,
        "ENOENT",
    );
    agent.upload_rejects("/nodir/x.txt", "?parents=false", 404, "ENOENT");
    agent.raw_rejects("GET", "/files/missing.txt", b"", 404, "ENOENT");
}

#[test]
fn files_used_as_directories_and_back() {
    let agent = fixture("files_used_as_directories");
    agent.tool_rejects(
        "write",
        json!({ "path": "/file.txt/child.txt", "content": "x" }),
        409,
        "ENOTDIR",
    );
    agent.tool_rejects(
        "mkdir",
        json!({ "path": "/file.txt/sub", "parents": true }),
        409,
        "ENOTDIR",
    );
    agent.upload_rejects("/file.txt/child.bin", "", 409, "ENOTDIR");
    agent.tool_rejects("ls", json!({ "path": "/file.txt" }), 409, "ENOTDIR");
    agent.tool_rejects(
        "write",
        json!({ "path": "/dir", "content": "x" }),
        409,
        "EISDIR",
    );
    agent.upload_rejects("/dir", "", 409, "EISDIR");
    agent.raw_rejects("GET", "/files/dir", b"", 409, "EISDIR");
    agent.raw_rejects("GET", "/files/", b"", 409, "EISDIR");
    agent.raw_rejects("PUT", "/files", b"data", 409, "EISDIR");
    agent.tool_rejects("rm", json!({ "path": "/dir" }), 409, "ENOTEMPTY");
    agent.tool_rejects("mkdir", json!({ "path": "/dir" }), 409, "EEXIST");
    agent.tool_rejects(
        "rm",
        json!({ "path": "/", "recursive": true }),
        409,
        "EBUSY",
    );
}

#[test]
fn symlink_loops() {
    let agent = fixture("symlink_loops");
    agent.ok("symlink", json!({ "target": "/loop-b", "path": "/loop-a" }));
    agent.ok("symlink", json!({ "target": "loop-a", "path": "/loop-b" }));
    agent.tool_rejects("read", json!({ "path": "/loop-a" }), 400, "ELOOP");
    agent.tool_rejects(
        "write",
        json!({ "path": "/loop-b", "content": "x" }),
        400,
        "ELOOP",
    );
    agent.tool_rejects("stat", json!({ "path": "/loop-a/x" }), 400, "ELOOP");
    agent.raw_rejects("GET", "/files/loop-a", b"", 400, "ELOOP");
    // Not following the last link is fine.
    let link = agent.ok("stat", json!({ "path": "/loop-a", "follow": false }));
    assert_eq!(link["type"], "symlink");
}

#[test]
fn invalid_arguments() {
    let agent = fixture("invalid_arguments");
    for (tool, body, status, code) in [
        (
            "mv",
            json!({ "from": "/dir", "to": "/dir/moved" }),
            400,
            "EINVAL",
        ),
        (
            "cp",
            json!({ "from": "/dir", "to": "/dir/copy", "recursive": true }),
            400,
            "EINVAL",
        ),
        ("mv", json!({ "from": "/", "to": "/root" }), 409, "EBUSY"),
        (
            "mv",
            json!({ "from": "/dir", "to": "/d2", "recursive": true }),
            400,
            "INVALID_REQUEST",
        ),
        ("glob", json!({ "pattern": "[" }), 400, "EINVAL"),
        (
            "grep",
            json!({ "pattern": "(", "regex": true }),
            400,
            "EINVAL",
        ),
        ("grep", json!({ "pattern": "" }), 400, "INVALID_REQUEST"),
        (
            "grep",
            json!({ "pattern": "a", "cursor": "nonsense" }),
            400,
            "EINVAL",
        ),
        (
            "read",
            json!({ "path": "/probe.txt", "offset": 2, "byte_offset": 0 }),
            400,
            "INVALID_REQUEST",
        ),
        (
            "read",
            json!({ "path": "/probe.txt", "encoding": "base64" }),
            400,
            "INVALID_REQUEST",
        ),
        (
            "read",
            json!({ "path": "/probe.txt", "byte_offset": 0, "encoding": "utf16" }),
            400,
            "INVALID_REQUEST",
        ),
        (
            "write",
            json!({ "path": "/b.bin", "content": "not base64!", "encoding": "base64" }),
            400,
            "INVALID_REQUEST",
        ),
        ("readlink", json!({ "path": "/probe.txt" }), 400, "EINVAL"),
        (
            "symlink",
            json!({ "target": "", "path": "/empty-link" }),
            400,
            "EINVAL",
        ),
        (
            "symlink",
            json!({ "target": "/probe.txt", "path": "/probe.txt" }),
            409,
            "EEXIST",
        ),
    ] {
        agent.tool_rejects(tool, body, status, code);
    }
}

#[test]
fn edits_that_cannot_apply() {
    let agent = fixture("edits_that_cannot_apply");
    let edit = |edits: Value| json!({ "path": "/probe.txt", "edits": edits });
    let no_match = agent.tool_rejects(
        "edit",
        edit(json!([{ "old": "beta", "new": "BETA" }, { "old": "gamma", "new": "x" }])),
        422,
        "EDIT_NO_MATCH",
    );
    assert_eq!(no_match["edit_index"], 1);
    assert_eq!(no_match["path"], "/probe.txt");
    let ambiguous = agent.tool_rejects(
        "edit",
        edit(json!([{ "old": "alpha", "new": "ALPHA" }])),
        422,
        "EDIT_AMBIGUOUS",
    );
    assert_eq!(ambiguous["edit_index"], 0);
    let overlap = agent.tool_rejects(
        "edit",
        edit(json!([{ "old": "beta", "new": "b" }, { "old": "eta\nal", "new": "x" }])),
        422,
        "EDIT_OVERLAP",
    );
    assert_eq!(overlap["edit_index"], 1);
    agent.tool_rejects(
        "edit",
        edit(json!([{ "old": "beta", "new": "beta" }])),
        422,
        "EDIT_NO_CHANGE",
    );
    let empty = agent.tool_rejects(
        "edit",
        edit(json!([{ "old": "", "new": "x" }])),
        400,
        "EINVAL",
    );
    assert_eq!(empty["edit_index"], 0);
    agent.tool_rejects("edit", edit(json!([])), 422, "EDIT_NO_CHANGE");
}

/// Authorized requests (method, URL) refused by the router before any
/// workspace is reached; none may change `agent`'s workspace.
fn routing_rejects(agent: &Agent, status: u16, code: &str, cases: Vec<(&str, String)>) {
    agent.rejects_all(status, code, cases, |(method, target)| {
        let body: &[u8] = if *method == "GET" { b"" } else { b"{}" };
        raw_authorized(method, target, body)
    });
}

#[test]
fn bad_agent_ids() {
    let agent = fixture("bad_agent_ids");
    let too_long = "a".repeat(65);
    let ids = [
        "bad!id",
        "sp%20ace",
        "a%2Fb",
        &too_long,
        "%C3%A9t%C3%A9",
        "",
    ];
    let cases = ids
        .iter()
        .flat_map(|id| {
            [
                ("PUT", ""),
                ("GET", ""),
                ("POST", "/write"),
                ("GET", "/files/x"),
            ]
            .map(|(method, rest)| (method, format!("/agents/{id}{rest}")))
        })
        .collect();
    routing_rejects(&agent, 400, "INVALID_AGENT_ID", cases);
    // The longest valid id works.
    Agent::new(&"z".repeat(64));
}

#[test]
fn unknown_routes() {
    let agent = fixture("unknown_routes");
    let cases = vec![
        ("POST", agent.url("/frobnicate")),
        ("POST", agent.url("/write/extra")),
        ("POST", agent.url("/WRITE")),
        ("GET", "/nope".to_string()),
        ("GET", "/agentz".to_string()),
    ];
    routing_rejects(&agent, 404, "NO_ROUTE", cases);
}

#[test]
fn wrong_methods() {
    let agent = fixture("wrong_methods");
    let mut cases: Vec<(&str, String)> = [
        ("GET", "/write"),
        ("PUT", "/rm"),
        ("DELETE", "/read"),
        ("POST", ""),
        ("PATCH", ""),
        ("GET", "/ping"),
        ("DELETE", "/files/probe.txt"),
        ("POST", "/files/probe.txt"),
    ]
    .into_iter()
    .map(|(method, rest)| (method, agent.url(rest)))
    .collect();
    cases.push(("POST", "/health".to_string()));
    routing_rejects(&agent, 405, "METHOD_NOT_ALLOWED", cases);
}

#[test]
fn bad_percent_encoding_in_file_urls() {
    let agent = fixture("bad_percent_encoding");
    let cases = ["/bad%zz.txt", "/trunc%4", "/%ff%fe.txt", "/end%"]
        .iter()
        .flat_map(|path| ["PUT", "GET"].map(|method| (method, agent.url(&format!("/files{path}")))))
        .collect();
    routing_rejects(&agent, 400, "INVALID_REQUEST", cases);
}

#[test]
fn bad_upload_queries() {
    let agent = fixture("bad_upload_queries");
    for query in [
        "?mode=999",
        "?mode=abc",
        "?mode=17777",
        "?mode=",
        "?mode=-1",
        "?parents=maybe",
        "?colour=red",
    ] {
        let error = agent.upload_rejects("/new.bin", query, 400, "INVALID_REQUEST");
        let message = error["message"].as_str().unwrap();
        let key = query[1..].split('=').next().unwrap();
        assert!(message.contains(key), "{query}: {message}");
    }
    // Replacing an existing file with a bad mode leaves it alone too.
    agent.upload_rejects("/probe.txt", "?mode=8", 400, "INVALID_REQUEST");
    for mode in [json!("999"), json!(0o17777), json!("rwx")] {
        agent.tool_rejects(
            "write",
            json!({ "path": "/probe.txt", "content": "x", "mode": mode }),
            400,
            "INVALID_REQUEST",
        );
    }
}

/// Starts a streamed upload to `path` declaring `declared` bytes, sends
/// only `sent` of them, waits until some chunks are staged, and hangs up.
fn abandon_upload(agent: &Agent, path: &str, declared: usize, sent: usize) {
    let host = base().trim_start_matches("http://");
    let mut stream = TcpStream::connect(host).expect("connect");
    let head = format!(
        "PUT {} HTTP/1.1\r\nHost: {host}\r\nAuthorization: {}\r\nContent-Length: {declared}\r\n\r\n",
        agent.url(&format!("/files{path}")),
        bearer()
    );
    stream.write_all(head.as_bytes()).expect("send head");
    stream
        .write_all(&Noise::bytes(9, sent))
        .expect("send part of the body");
    // Chunks are staged (stored) while the body arrives.
    let stored = || agent.info()["usage"]["stored_bytes"].as_u64().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let before = stored();
    while stored() < before + (1 << 20) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(stored() >= before + (1 << 20), "nothing was staged");
    drop(stream);
}

#[test]
fn interrupted_uploads_change_nothing() {
    let agent = fixture("interrupted_uploads");
    let before = agent.snapshot();
    abandon_upload(&agent, "/partial.bin", 8 << 20, 3 << 20);
    abandon_upload(&agent, "/probe.txt", 8 << 20, (3 << 20) + 100);
    // The server learns of the hang-up asynchronously: give it a moment.
    let deadline = Instant::now() + Duration::from_secs(10);
    while agent.snapshot() != before && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(agent.snapshot(), before, "an abandoned upload left traces");
    // Both paths are usable afterwards.
    expect_made(&agent.upload("/partial.bin", "", Noise::new(1, 1 << 20)));
    expect_made(&agent.upload("/probe.txt", "", &b"replaced"[..]));
    assert_eq!(agent.read("/probe.txt"), "replaced");
}

/// `Authorization` values that must not pass (`None`: no header at all).
const BAD_CREDENTIALS: &[Option<&str>] = &[
    None,
    Some("Bearer wrong-token"),
    Some("Bearer dev-token2"),
    Some("Bearer dev-toke"),
    Some("Bearer"),
    Some("dev-token"),
    Some("Token dev-token"),
    Some("Basic ZGV2LXRva2VuOg=="),
    Some("Bearer dev-token, Bearer dev-token"),
];

fn with_credential(credential: Option<&str>, method: &str, target: &str, body: &[u8]) -> Reply {
    let headers: Vec<(&str, &str)> = credential
        .map(|c| ("Authorization", c))
        .into_iter()
        .collect();
    raw(method, target, &headers, body)
}

/// The scheme of `Authorization` is case-insensitive and may be followed
/// by more than one space (RFC 9110 11.1, RFC 6750 2.1).
#[test]
fn the_bearer_scheme_is_read_as_http_defines_it() {
    let agent = fixture("bearer_scheme");
    for credential in ["bearer dev-token", "BEARER dev-token", "Bearer   dev-token"] {
        let reply = with_credential(Some(credential), "POST", &agent.url("/ping"), b"");
        assert_eq!(reply.status, 200, "{credential}: {:?}", reply.json());
    }
}

/// What HTTP requires beside a refusal's status: `Allow` with a 405 (the
/// methods the path takes, each of which it does take), a challenge with a
/// 401 (naming `invalid_token` only when a credential came) (RFC 9110
/// 15.5.2, 15.5.6; RFC 6750 3).
#[test]
fn refusals_carry_the_headers_http_requires() {
    let agent = fixture("refusal_headers");
    for (method, target, allow) in [
        // Another agent's path: trying DELETE there deletes it.
        (
            "POST",
            format!("/agents/{}-other", agent.id),
            "GET, HEAD, PUT, DELETE",
        ),
        ("GET", agent.url("/write"), "POST"),
        ("POST", "/health".to_string(), "GET, HEAD"),
    ] {
        let reply = raw_authorized(method, &target, b"{}");
        assert_eq!(reply.status, 405, "{method} {target}");
        assert_eq!(reply.header("allow"), Some(allow), "{method} {target}");
        let message = reply.json()["error"]["message"].to_string();
        assert!(message.contains(allow), "the message says so: {message}");
        for other in allow.split(", ").filter(|m| *m != "HEAD") {
            let status = raw_authorized(other, &target, b"{}").status;
            assert_ne!(status, 405, "{other} {target} is listed as allowed");
        }
    }
    let anonymous = with_credential(None, "POST", &agent.url("/ping"), b"");
    assert_eq!(anonymous.status, 401);
    assert_eq!(anonymous.header("www-authenticate"), Some("Bearer"));
    let wrong = with_credential(Some("Bearer wrong"), "POST", &agent.url("/ping"), b"");
    assert_eq!(wrong.status, 401);
    let challenge = wrong.header("www-authenticate").unwrap_or_default();
    assert!(
        challenge.starts_with("Bearer error=\"invalid_token\""),
        "{challenge}"
    );
}

#[test]
fn health_needs_no_token() {
    let health = expect_ok(&raw("GET", "/health", &[], b""));
    assert_eq!(health, json!({ "ok": true }));
    let through_client = client().with_token(None).send("GET", "/health", b"");
    assert_eq!(expect_ok(&through_client), json!({ "ok": true }));
}

#[test]
fn bad_credentials_are_refused_and_change_nothing() {
    let agent = fixture("bad_credentials");
    let stranger = "bad_credentials-new";
    let write = json!({ "path": "/probe.txt", "content": "overwritten" }).to_string();
    let requests: Vec<(&str, String, &[u8])> = vec![
        ("POST", agent.url("/write"), write.as_bytes()),
        (
            "POST",
            agent.url("/rm"),
            br#"{"path":"/dir","recursive":true}"#,
        ),
        ("PUT", agent.url("/files/probe.txt"), b"overwritten"),
        ("DELETE", agent.url(""), b""),
        ("GET", agent.url(""), b""),
        ("POST", agent.url("/ping"), b""),
        ("GET", agent.url("/files/probe.txt"), b""),
        ("POST", agent.url("/read"), br#"{"path":"/probe.txt"}"#),
        ("PUT", format!("/agents/{stranger}"), b""),
        (
            "POST",
            format!("/agents/{stranger}/write"),
            write.as_bytes(),
        ),
        // Even a wrong route needs the credential to learn that it is wrong.
        ("GET", "/nope".into(), b""),
        ("GET", "/agents/bad!id".into(), b""),
        ("POST", "/health".into(), b""),
    ];
    let cases = BAD_CREDENTIALS
        .iter()
        .flat_map(|credential| requests.iter().map(move |request| (*credential, request)));
    agent.rejects_all(
        401,
        "UNAUTHORIZED",
        cases,
        |(credential, (method, target, body))| with_credential(*credential, method, target, body),
    );
    // Through the harness client too, and the stranger was never created.
    let anonymous = client().with_token(None);
    let wrong = client().with_token(Some("wrong"));
    for unauthorized in [&anonymous, &wrong] {
        agent.rejects(401, "UNAUTHORIZED", || {
            unauthorized.tool(
                &agent.id,
                "write",
                json!({ "path": "/x.txt", "content": "x" }),
            )
        });
        expect_error(&unauthorized.create(stranger), 401, "UNAUTHORIZED");
    }
    expect_error(
        &Agent::existing(stranger).send("GET", "", b""),
        404,
        "AGENT_NOT_FOUND",
    );
    assert_eq!(agent.read("/probe.txt"), "alpha\nbeta\nalpha\n");
    assert!(base().starts_with("http://"));
}
