//! End-to-end: scoped tokens, quotas, the audit log, and path escapes
//! through every entry point, against the real Worker.

mod common;

use common::{client, expect_error, expect_made, expect_ok, expect_status, mint, Agent};
use serde_json::{json, Value};
use stead_harness::{Client, Socket};

fn as_token(agent: &Agent, token: &str) -> Agent {
    Agent {
        id: agent.id.clone(),
        client: client().with_token(Some(token)),
    }
}

#[test]
fn a_read_only_token_reads_and_nothing_else() {
    let agent = Agent::new("sec-reader");
    agent.write("/notes.txt", "hello\n");
    let (token, _) = mint(&agent.id, &["read"], Some(600));
    let reader = as_token(&agent, &token);
    assert_eq!(reader.read("/notes.txt"), "hello\n");
    expect_ok(&reader.call("ls", json!({ "path": "/" })));
    expect_ok(&reader.send("GET", "", b""));
    let before = agent.snapshot();
    for (tool, body) in [
        ("write", json!({ "path": "/x", "content": "x" })),
        (
            "edit",
            json!({ "path": "/notes.txt", "edits": [{ "old": "hello", "new": "bye" }] }),
        ),
        ("rm", json!({ "path": "/notes.txt" })),
        ("mkdir", json!({ "path": "/d" })),
        ("exec", json!({ "command": "echo hi > /y" })),
    ] {
        expect_error(&reader.call(tool, body), 403, "FORBIDDEN");
    }
    // A refused command names the scope it needs where it would run.
    for (command, needed) in [("echo hi", "exec:shell"), ("python3 -c 1", "exec:computer")] {
        let refused = expect_error(
            &reader.call("exec", json!({ "command": command })),
            403,
            "FORBIDDEN",
        );
        let message = refused["message"].as_str().unwrap();
        assert!(message.contains(needed), "{command}: {message}");
    }
    expect_error(&reader.send("DELETE", "", b""), 403, "FORBIDDEN");
    expect_error(
        &reader.send("PUT", "/files/up.bin", b"data"),
        403,
        "FORBIDDEN",
    );
    expect_error(
        &reader.send(
            "POST",
            "/schedules",
            json!({ "delay_ms": 1000, "command": "true" })
                .to_string()
                .as_bytes(),
        ),
        403,
        "FORBIDDEN",
    );
    assert_eq!(agent.snapshot(), before, "nothing changed");
    // Only the admin token mints tokens.
    let minted = Client::with_token(&client(), Some(&token)).send(
        "POST",
        "/tokens",
        json!({ "agent": agent.id, "scopes": ["admin"] })
            .to_string()
            .as_bytes(),
    );
    expect_error(&minted, 403, "FORBIDDEN");
}

#[test]
fn scheduling_a_command_needs_the_scopes_to_run_it() {
    let agent = Agent::new("sec-schedule");
    let (scheduler, _) = mint(&agent.id, &["schedule"], Some(600));
    let (shell, _) = mint(&agent.id, &["schedule", "exec:shell"], Some(600));
    let put = |token: &str, name: &str, body: Value| {
        as_token(&agent, token).send(
            "PUT",
            &format!("/schedules/{name}"),
            body.to_string().as_bytes(),
        )
    };
    let later = |command: &str| json!({ "delay_ms": 3_600_000, "exec": { "command": command } });
    expect_error(&put(&scheduler, "a", later("echo hi")), 403, "FORBIDDEN");
    expect_error(&put(&shell, "b", later("python3 -c 1")), 403, "FORBIDDEN");
    expect_status(&put(&shell, "c", later("echo hi")), 201);
    let hook = json!({ "exec": { "command": "cat" } }).to_string();
    expect_error(
        &as_token(&agent, &scheduler).send("PUT", "/hooks/h", hook.as_bytes()),
        403,
        "FORBIDDEN",
    );
    let listed = expect_ok(&agent.send("GET", "/schedules", b""));
    assert_eq!(
        listed["schedules"].as_array().map(Vec::len),
        Some(1),
        "{listed}"
    );
}

#[test]
fn a_socket_carries_the_scopes_of_whoever_opened_it() {
    let agent = Agent::new("sec-socket");
    agent.write("/a.txt", "a\n");
    let (token, _) = mint(&agent.id, &["read"], Some(600));
    let mut socket = Socket::connect(common::base(), &agent.id, Some(&token)).expect("connect");
    let wait = std::time::Duration::from_secs(20);
    let mut call = |id: &str, tool: &str, args: Value| {
        socket.send(&json!({ "type": "call", "id": id, "tool": tool, "args": args }));
        socket
            .recv_until(wait, |m| m["id"] == id)
            .pop()
            .expect("an answer")
    };
    let read = call("r", "read", json!({ "path": "/a.txt" }));
    assert_eq!(read["type"], "result", "{read}");
    for (id, tool, args) in [
        ("w", "write", json!({ "path": "/b.txt", "content": "b" })),
        ("x", "exec", json!({ "command": "echo hi > c.txt" })),
    ] {
        let answer = call(id, tool, args);
        assert_eq!(answer["type"], "error", "{answer}");
        assert_eq!(answer["error"]["code"], "FORBIDDEN", "{answer}");
    }
    assert_eq!(agent.tree(), vec!["/a.txt".to_string()]);
}

#[test]
fn a_socket_ends_with_its_tokens_expiry_or_revocation() {
    let agent = Agent::new("sec-socket-ends");
    let wait = std::time::Duration::from_secs(20);
    let ping = |socket: &mut Socket, id: &str| -> Value {
        socket.send(&json!({ "type": "ping", "id": id }));
        socket.recv(wait).expect("an answer")
    };
    // Expiry: a two-second token's socket works, then refuses.
    let (short, _) = mint(&agent.id, &["read"], Some(2));
    let mut socket = Socket::connect(common::base(), &agent.id, Some(&short)).expect("connect");
    assert_eq!(ping(&mut socket, "1")["type"], "pong");
    std::thread::sleep(std::time::Duration::from_millis(2_500));
    let refused = ping(&mut socket, "2");
    assert_eq!(refused["error"]["code"], "TOKEN_EXPIRED", "{refused}");
    assert_eq!(socket.recv_close(wait), Some(4401));

    // Revocation: a subscriber hears nothing more and is closed at once.
    let (token, id) = mint(&agent.id, &["read"], Some(600));
    let mut socket = Socket::connect(common::base(), &agent.id, Some(&token)).expect("connect");
    socket.send(&json!({ "type": "subscribe_changes", "id": "s" }));
    assert_eq!(socket.recv(wait).expect("subscribed")["type"], "subscribed");
    expect_ok(&agent.send(
        "POST",
        "/tokens/revoke",
        json!({ "id": id }).to_string().as_bytes(),
    ));
    let told = socket.recv(wait).expect("told why");
    assert_eq!(told["error"]["code"], "TOKEN_REVOKED", "{told}");
    agent.write("/after.txt", "x");
    assert_eq!(
        socket.recv_close(wait),
        Some(4401),
        "closed, nothing sent after"
    );
}

#[test]
fn tokens_are_bound_to_their_agent_scopes_expiry_and_revocation() {
    let alice = Agent::new("sec-alice");
    let bob = Agent::new("sec-bob");
    bob.write("/secret.txt", "bob's\n");
    let (token, id) = mint(&alice.id, &["read", "write", "exec:shell"], Some(600));
    let as_alice = as_token(&alice, &token);
    as_alice.write("/mine.txt", "ok\n");
    let out = as_alice.ok("exec", json!({ "command": "cat mine.txt" }));
    assert_eq!(out["stdout"], "ok\n");
    // Without exec:computer, a command for the computer is refused.
    expect_error(
        &as_alice.call("exec", json!({ "command": "python3 -c 1" })),
        403,
        "FORBIDDEN",
    );
    // Alice's token on Bob's workspace.
    let on_bob = as_token(&bob, &token);
    expect_error(
        &on_bob.call("read", json!({ "path": "/secret.txt" })),
        403,
        "FORBIDDEN",
    );
    // Tampering and junk are refused outright.
    let forged = format!("{}x", &token);
    expect_error(
        &as_token(&alice, &forged).send("GET", "", b""),
        401,
        "UNAUTHORIZED",
    );
    // A client cannot pose as the admin through the forwarded headers.
    let bearer = format!("Bearer {token}");
    let posing = common::raw(
        "GET",
        &alice.url("/audit"),
        &[
            ("authorization", bearer.as_str()),
            ("x-stead-actor", "admin"),
            ("x-stead-scopes", "*"),
        ],
        b"",
    );
    expect_error(&posing, 403, "FORBIDDEN");
    // Revocation works before expiry.
    expect_ok(&alice.send(
        "POST",
        "/tokens/revoke",
        json!({ "id": id }).to_string().as_bytes(),
    ));
    expect_error(
        &as_alice.call("read", json!({ "path": "/mine.txt" })),
        401,
        "TOKEN_REVOKED",
    );
    // Expiry.
    let (short, _) = mint(&alice.id, &["read"], Some(1));
    std::thread::sleep(std::time::Duration::from_millis(2100));
    expect_error(
        &as_token(&alice, &short).send("GET", "", b""),
        401,
        "TOKEN_EXPIRED",
    );
}

/// An agent deleted and made again under its id is a new agent: the old
/// agent's tokens do not open it, tokens minted for it do.
#[test]
fn a_deleted_agents_tokens_do_not_open_the_agent_made_again() {
    let agent = Agent::new("sec-reborn");
    let (old, _) = mint(&agent.id, &["read"], Some(600));
    expect_ok(&as_token(&agent, &old).call("stat", json!({ "path": "/" })));
    expect_ok(&agent.send("DELETE", "", b""));
    let again = Agent::new("sec-reborn");
    let refused = as_token(&again, &old).call("stat", json!({ "path": "/" }));
    expect_error(&refused, 401, "TOKEN_PREDATES_AGENT");
    let (new, _) = mint(&again.id, &["read"], Some(600));
    expect_ok(&as_token(&again, &new).call("stat", json!({ "path": "/" })));
}

#[test]
fn quotas_refuse_with_the_limit_named_and_change_nothing() {
    let agent = Agent::new("sec-quotas");
    let settings = expect_ok(
        &agent.send(
            "PUT",
            "/settings",
            json!({ "quotas": { "max_file_bytes": 1000, "max_stored_bytes": 2500,
                            "max_nodes": 6, "max_path_depth": 3 } })
            .to_string()
            .as_bytes(),
        ),
    );
    assert_eq!(settings["quotas"]["max_nodes"], 6);
    assert_eq!(
        expect_ok(&agent.send("GET", "/settings", b""))["quotas"]["max_path_depth"],
        3
    );
    agent.write("/a.txt", &"a".repeat(900));
    agent.write("/b.txt", &"b".repeat(900));
    let before = agent.snapshot();
    let check = |reply: stead_harness::Reply, status: u16, code: &str, quota: &str| {
        let body: Value = expect_error(&reply, status, code);
        let message = body["message"].as_str().unwrap().to_string();
        assert!(message.contains(quota), "{message}");
    };
    check(
        agent.call(
            "write",
            json!({ "path": "/big", "content": "x".repeat(1001) }),
        ),
        413,
        "EFBIG",
        "max_file_bytes",
    );
    check(
        agent.call(
            "write",
            json!({ "path": "/c.txt", "content": "c".repeat(900) }),
        ),
        507,
        "ENOSPC",
        "max_stored_bytes",
    );
    check(
        agent.call(
            "write",
            json!({ "path": "/d1/d2/d3/deep.txt", "content": "x" }),
        ),
        400,
        "ENAMETOOLONG",
        "max_path_depth",
    );
    check(
        agent.send("PUT", "/files/up.bin", &vec![b'u'; 1500]),
        413,
        "EFBIG",
        "max_file_bytes",
    );
    assert_eq!(agent.snapshot(), before, "refused calls changed nothing");
    // The shell meets the same quotas.
    let out = agent.ok(
        "exec",
        json!({ "command": "for i in 1 2 3 4 5 6; do echo $i > f$i; done", "backend": "shell" }),
    );
    assert_ne!(out["exit_code"], 0, "{out}");
    assert!(
        out["stderr"].as_str().unwrap().contains("No space left"),
        "{out}"
    );
    // Six nodes in all (the root counts): the loop stopped at the quota.
    assert_eq!(agent.tree().len(), 5, "{:?}", agent.tree());
    // The number of schedules is a quota too.
    expect_ok(
        &agent.send(
            "PUT",
            "/settings",
            json!({ "quotas": { "max_schedules": 1 } })
                .to_string()
                .as_bytes(),
        ),
    );
    let schedule = json!({ "delay_ms": 3_600_000, "exec": { "command": "true" } }).to_string();
    expect_status(
        &agent.send("PUT", "/schedules/one", schedule.as_bytes()),
        201,
    );
    check(
        agent.send("PUT", "/schedules/two", schedule.as_bytes()),
        507,
        "ENOSPC",
        "max_schedules",
    );
    expect_status(
        &agent.send("PUT", "/schedules/one", schedule.as_bytes()),
        200,
    );
    // Raising the quota makes room; nothing else changed meanwhile.
    expect_ok(
        &agent.send(
            "PUT",
            "/settings",
            json!({ "quotas": { "max_nodes": 100 } })
                .to_string()
                .as_bytes(),
        ),
    );
    agent.write("/f6", "6\n");
}

#[test]
fn kept_job_output_is_bounded_by_its_quota() {
    let agent = Agent::new("sec-job-output");
    expect_ok(
        &agent.send(
            "PUT",
            "/settings",
            json!({ "quotas": { "max_job_output_bytes": 1000 } })
                .to_string()
                .as_bytes(),
        ),
    );
    let mut jobs = Vec::new();
    for _ in 0..3 {
        let reply = agent.call(
            "exec",
            json!({ "command": "yes x | head -c 600", "backend": "shell", "detach": true }),
        );
        expect_status(&reply, 202);
        let id = reply.json()["job"]["id"].as_i64().unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let job = expect_ok(&agent.send("GET", &format!("/jobs/{id}"), b""))["job"].clone();
            if job["state"] == "succeeded" {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "{job}");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        jobs.push(id);
    }
    // 1,800 bytes of output against a quota of 1,000: the oldest finished
    // jobs went, the newest is whole.
    expect_error(
        &agent.send("GET", &format!("/jobs/{}", jobs[0]), b""),
        404,
        "JOB_NOT_FOUND",
    );
    let last = expect_ok(&agent.send("GET", &format!("/jobs/{}/output", jobs[2]), b""));
    let text: String = last["output"]
        .as_array()
        .unwrap()
        .iter()
        .map(|piece| piece["data"].as_str().unwrap())
        .collect();
    assert_eq!(text.len(), 600, "{last}");
}

/// The tokens minted for an agent are listed to its admin (ids, scopes,
/// expiry, whether revoked; never a token itself), newest first; a token
/// is only minted for an agent that exists, which records it first.
#[test]
fn an_agents_tokens_are_listed_to_its_admin() {
    let agent = Agent::new("sec-token-list");
    let (reader, reader_id) = mint(&agent.id, &["read"], Some(600));
    let (admin, admin_id) = mint(&agent.id, &["admin"], Some(60));
    let revoke = json!({ "agent": agent.id, "id": reader_id }).to_string();
    expect_ok(&client().send("POST", "/tokens/revoke", revoke.as_bytes()));
    let listing = expect_ok(&agent.send("GET", "/tokens", b""));
    let tokens = listing["tokens"].as_array().unwrap();
    let seen: Vec<(&str, bool)> = tokens
        .iter()
        .map(|t| (t["id"].as_str().unwrap(), t["revoked"].as_bool().unwrap()))
        .collect();
    assert_eq!(
        seen,
        [(admin_id.as_str(), false), (reader_id.as_str(), true)]
    );
    assert_eq!(tokens[1]["scopes"], json!(["read"]));
    assert!(tokens[0]["expires_at"].as_i64().unwrap() > tokens[0]["minted_at"].as_i64().unwrap());
    assert!(!listing.to_string().contains(&reader) && !listing.to_string().contains(&admin));
    assert_eq!(listing["truncated"], false);
    // The agent's own admin token lists them; a read token does not.
    let as_admin = as_token(&agent, &admin);
    assert_eq!(
        expect_ok(&as_admin.send("GET", "/tokens", b""))["tokens"],
        listing["tokens"]
    );
    let (read_only, _) = mint(&agent.id, &["read"], Some(600));
    expect_error(
        &as_token(&agent, &read_only).send("GET", "/tokens", b""),
        403,
        "FORBIDDEN",
    );
    // Only the Worker records tokens: the agent's admin cannot.
    let fake = json!({ "id": "f", "scopes": ["read"], "minted_at": 1, "expires_at": 2 });
    expect_error(
        &as_admin.send("POST", "/tokens/minted", fake.to_string().as_bytes()),
        403,
        "FORBIDDEN",
    );
    // No token for an agent that does not exist.
    let body = json!({ "agent": "sec-token-nobody", "scopes": ["read"] }).to_string();
    expect_error(
        &client().send("POST", "/tokens", body.as_bytes()),
        404,
        "AGENT_NOT_FOUND",
    );
}

/// Tokens are minted at `POST /tokens` and revoked beside it at `POST
/// /tokens/revoke` (naming the token's agent), as on the agent's route.
#[test]
fn tokens_are_revoked_beside_where_they_are_minted() {
    let agent = Agent::new("sec-revoke-top");
    agent.write("/a.txt", "a\n");
    let (token, id) = mint(&agent.id, &["read"], Some(600));
    let holder = as_token(&agent, &token);
    assert_eq!(holder.read("/a.txt"), "a\n");
    let revoke = |client: &stead_harness::Client, body: Value| {
        client.send("POST", "/tokens/revoke", body.to_string().as_bytes())
    };
    expect_error(
        &revoke(&client(), json!({ "id": id })),
        400,
        "INVALID_REQUEST",
    );
    expect_error(
        &revoke(&holder.client, json!({ "agent": agent.id, "id": id })),
        403,
        "FORBIDDEN",
    );
    expect_error(
        &revoke(&client(), json!({ "agent": "sec-revoke-nobody", "id": id })),
        404,
        "AGENT_NOT_FOUND",
    );
    assert_eq!(holder.read("/a.txt"), "a\n", "not revoked yet");
    let revoked = expect_ok(&revoke(&client(), json!({ "agent": agent.id, "id": id })));
    assert_eq!(revoked, json!({ "revoked": id, "agent": agent.id }));
    expect_error(
        &holder.call("read", json!({ "path": "/a.txt" })),
        401,
        "TOKEN_REVOKED",
    );
    expect_error(
        &client().send("GET", "/tokens/revoke", b""),
        405,
        "METHOD_NOT_ALLOWED",
    );
    // The agent's route refuses a body naming another agent.
    expect_error(
        &agent.send(
            "POST",
            "/tokens/revoke",
            json!({ "agent": "someone-else", "id": id })
                .to_string()
                .as_bytes(),
        ),
        400,
        "INVALID_REQUEST",
    );
}

#[test]
fn token_settings_and_audit_requests_are_validated() {
    let agent = Agent::new("sec-validate");
    let before = agent.snapshot();
    for (body, code) in [
        ("{", "MALFORMED_JSON"),
        (r#"{"agent":"a"}"#, "INVALID_REQUEST"),
        (r#"{"agent":"a","scopes":["root"]}"#, "INVALID_REQUEST"),
        (r#"{"agent":"a","scopes":"read"}"#, "INVALID_REQUEST"),
        (r#"{"agent":"a/b","scopes":["read"]}"#, "INVALID_AGENT_ID"),
        (
            r#"{"agent":"a","scopes":["read"],"ttl_seconds":-5}"#,
            "INVALID_REQUEST",
        ),
        (
            r#"{"agent":"a","scopes":["read"],"ttl_seconds":7776001}"#,
            "INVALID_REQUEST",
        ),
        (
            r#"{"agent":"a","scopes":["read"],"extra":1}"#,
            "INVALID_REQUEST",
        ),
    ] {
        expect_error(
            &client().send("POST", "/tokens", body.as_bytes()),
            400,
            code,
        );
    }
    expect_error(
        &client().send("GET", "/tokens", b""),
        405,
        "METHOD_NOT_ALLOWED",
    );
    for (body, code) in [
        ("[]", "INVALID_REQUEST"),
        (r#"{"quotas":{"max_nodes":"many"}}"#, "INVALID_REQUEST"),
        (r#"{"quotas":{"max_nodes":0}}"#, "INVALID_REQUEST"),
        (r#"{"limits":{}}"#, "INVALID_REQUEST"),
        (
            r#"{"git_credentials":{"https://github.com/x":{"token":"t"}}}"#,
            "INVALID_REQUEST",
        ),
        (
            r#"{"git_credentials":{"github.com":{"password":"p"}}}"#,
            "INVALID_REQUEST",
        ),
    ] {
        expect_error(&agent.send("PUT", "/settings", body.as_bytes()), 400, code);
    }
    expect_error(
        &agent.send("POST", "/tokens/revoke", b"{}"),
        400,
        "INVALID_REQUEST",
    );
    expect_error(
        &agent.send("GET", "/audit?after=x", b""),
        400,
        "INVALID_REQUEST",
    );
    expect_error(
        &client().send("GET", "/agents/sec-nobody/audit", b""),
        404,
        "AGENT_NOT_FOUND",
    );
    assert_eq!(agent.snapshot(), before);
    assert_eq!(
        expect_ok(&agent.send("GET", "/settings", b"")),
        json!({
            "quotas": { "max_file_bytes": 1u64 << 30, "max_stored_bytes": 8u64 << 30,
                        "max_nodes": 1_000_000, "max_path_depth": 128,
                        "max_job_output_bytes": 64u64 << 20, "max_schedules": 1000 },
            "computer": { "internet": false, "network": "off" },
            "webhooks": { "allow_private_targets": false },
            "checkpoints": { "automatic": true,
                             "retention": { "keep_last": 20, "keep_within_ms": 86_400_000,
                                            "max_automatic": 100 } },
            "git": {},
            "git_credentials": {},
            "secrets": {},
        }),
        "refused settings changed nothing"
    );
}

#[test]
fn the_audit_log_records_who_changed_what() {
    let agent = Agent::new("sec-audit");
    agent.write("/a.txt", "1");
    let _ = agent.call("rm", json!({ "path": "/missing" }));
    let (token, id) = mint(&agent.id, &["read", "write"], Some(600));
    as_token(&agent, &token).write("/b.txt", "2");
    agent.read("/a.txt");
    let log = expect_ok(&agent.send("GET", "/audit", b""));
    // Newest first: read oldest first to compare with what was done.
    let entries: Vec<(String, String, String, String)> = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .map(|e| {
            let text = |k: &str| e[k].as_str().unwrap_or("").to_string();
            (
                text("actor"),
                text("action"),
                text("target"),
                text("outcome"),
            )
        })
        .collect();
    assert_eq!(
        entries,
        vec![
            (
                "admin".into(),
                "agent.create".into(),
                "sec-audit".into(),
                "ok".into()
            ),
            ("admin".into(), "write".into(), "/a.txt".into(), "ok".into()),
            (
                "admin".into(),
                "rm".into(),
                "/missing".into(),
                "ENOENT".into()
            ),
            // The Worker records each token it mints, as the admin.
            ("admin".into(), "token.mint".into(), id.clone(), "ok".into()),
            (
                format!("token:{id}"),
                "write".into(),
                "/b.txt".into(),
                "ok".into()
            ),
        ],
        "reads are not audited"
    );
    // Paging by an opaque cursor, within time bounds, and admin only.
    let page = expect_ok(&agent.send("GET", "/audit?limit=3", b""));
    assert_eq!(
        page["entries"].as_array().unwrap()[..],
        log["entries"].as_array().unwrap()[..3]
    );
    let cursor = page["next_cursor"]
        .as_str()
        .expect("a next page")
        .to_string();
    let rest = expect_ok(&agent.send("GET", &format!("/audit?limit=3&cursor={cursor}"), b""));
    assert_eq!(rest["entries"].as_array().unwrap().len(), 2, "{rest}");
    assert_eq!(rest["entries"][1]["action"], "agent.create");
    assert_eq!(rest["next_cursor"], Value::Null);
    let newest = log["entries"][0]["at"].as_i64().unwrap();
    let window = expect_ok(&agent.send("GET", &format!("/audit?since={newest}"), b""));
    assert!(window["entries"]
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["at"].as_i64() >= Some(newest)));
    for bad in ["since=5&before=5", "before=soon", "cursor=3", "after=1"] {
        expect_error(
            &agent.send("GET", &format!("/audit?{bad}"), b""),
            400,
            "INVALID_REQUEST",
        );
    }
    expect_error(
        &as_token(&agent, &token).send("GET", "/audit", b""),
        403,
        "FORBIDDEN",
    );
}

#[test]
fn paths_cannot_escape_the_workspace_from_any_entry_point() {
    let agent = Agent::new("sec-escape");
    agent.write("/inside.txt", "in\n");
    // File API.
    for path in ["/../etc/passwd", "/a/../../b", "../x"] {
        let reply = agent.call("read", json!({ "path": path }));
        assert!(reply.status >= 400, "{path}: {}", reply.status);
    }
    let reply = agent.send("GET", "/files/..%2F..%2Fetc%2Fpasswd", b"");
    assert!(reply.status >= 400);
    // Shell: cd and redirections stop at the root; absolute paths are the
    // workspace's.
    let out = agent.ok(
        "exec",
        json!({ "command": "cd ../../..; pwd; echo x > ../../escape.txt; cat /etc/passwd 2>&1; ls /",
                "backend": "shell" }),
    );
    let stdout = out["stdout"].as_str().unwrap();
    assert!(stdout.starts_with("/\n"), "{out}");
    assert!(!stdout.contains("root:"), "{out}");
    assert!(agent.tree().iter().all(|p| !p.contains("escape")), "{out}");
    // Symlinks resolve inside the workspace.
    agent.ok(
        "symlink",
        json!({ "target": "/../../etc/passwd", "path": "/link" }),
    );
    let reply = agent.call("read", json!({ "path": "/link" }));
    assert!(reply.status >= 400 || !String::from_utf8_lossy(&reply.body).contains("root:"));
    // Archive extraction: a member climbing out of the extraction folder
    // (zip-slip) is refused.
    expect_made(&agent.send(
        "PUT",
        "/files/slip.tar",
        &tar_member("../../evil.txt", b"x"),
    ));
    let out = agent.ok(
        "exec",
        json!({ "command": "mkdir -p /t/sub && tar -xf /slip.tar -C /t/sub", "backend": "shell" }),
    );
    assert_ne!(out["exit_code"], 0, "{out}");
    assert!(out["stderr"].as_str().unwrap().contains(".."), "{out}");
    for path in ["/evil.txt", "/t/evil.txt", "/t/sub/evil.txt"] {
        expect_error(&agent.call("stat", json!({ "path": path })), 404, "ENOENT");
    }
    // The computer: commands see the workspace as `/`, so a symlink comes
    // back as it is and its target names the workspace's path there too;
    // reading it never gives the computer's file.
    let out = agent.ok(
        "exec",
        json!({ "command": "ln -s /etc/passwd pw && echo done", "backend": "computer" }),
    );
    assert_eq!(out["stdout"], "done\n", "{out}");
    assert_eq!(
        agent.ok("readlink", json!({ "path": "/pw" }))["target"],
        "/etc/passwd"
    );
    expect_error(&agent.call("read", json!({ "path": "/pw" })), 404, "ENOENT");
}

/// A one-member ustar archive.
fn tar_member(name: &str, data: &[u8]) -> Vec<u8> {
    let mut header = [0u8; 512];
    header[..name.len()].copy_from_slice(name.as_bytes());
    header[100..107].copy_from_slice(b"0000644");
    header[108..115].copy_from_slice(b"0000000");
    header[116..123].copy_from_slice(b"0000000");
    header[124..135].copy_from_slice(format!("{:011o}", data.len()).as_bytes());
    header[136..147].copy_from_slice(b"00000000000");
    header[156] = b'0';
    header[257..263].copy_from_slice(b"ustar\0");
    header[263..265].copy_from_slice(b"00");
    header[148..156].copy_from_slice(b"        ");
    let sum: u32 = header.iter().map(|&b| b as u32).sum();
    header[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
    let mut out = header.to_vec();
    out.extend_from_slice(data);
    out.resize(out.len().div_ceil(512) * 512 + 1024, 0);
    out
}

#[test]
fn webhooks_may_not_reach_the_agents_own_network() {
    let agent = Agent::new("sec-ssrf");
    for url in [
        "http://127.0.0.1:8787/health",
        "http://localhost:8787/",
        "http://[::1]/",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/",
        "http://0x7f000001/",
        "file:///etc/passwd",
    ] {
        let body = json!({ "delay_ms": 0, "webhook": { "url": url } });
        let reply = agent.send("PUT", "/schedules/probe", body.to_string().as_bytes());
        expect_error(&reply, 400, "WEBHOOK_TARGET_REFUSED");
    }
    expect_error(
        &agent.send("GET", "/schedules/probe", b""),
        404,
        "SCHEDULE_NOT_FOUND",
    );
}

#[test]
fn a_signed_hook_call_runs_once() {
    let agent = Agent::new("sec-hook-replay");
    let secret = "a-hook-secret-of-enough-length";
    expect_made(&agent.send(
        "PUT",
        "/hooks/deploy",
        json!({ "exec": { "command": "cat >> /deliveries" }, "secret": secret, "signed": true })
            .to_string()
            .as_bytes(),
    ));
    let body = br#"{"ref":"main"}"#;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let signature = stead_scheduler::signing::signature(secret, now, body);
    let target = agent.url("/hooks/deploy");
    let call = |timestamp: i64, signature: &str| {
        let timestamp = timestamp.to_string();
        common::raw(
            "POST",
            &target,
            &[
                ("x-stead-timestamp", &timestamp),
                ("x-stead-signature", signature),
            ],
            body,
        )
    };
    expect_status(&call(now, &signature), 202);
    expect_error(&call(now, &signature), 409, "HOOK_REPLAYED");
    let stale = now - 10 * 60_000;
    let old_signature = stead_scheduler::signing::signature(secret, stale, body);
    expect_error(&call(stale, &old_signature), 401, "HOOK_REFUSED");
    let bare = common::raw("POST", &target, &[("x-hook-secret", secret)], body);
    expect_error(&bare, 401, "HOOK_REFUSED");
}
