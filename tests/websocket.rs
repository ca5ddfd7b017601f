//! End-to-end: the agent's WebSocket (hibernation API). A client follows a
//! job's output live and, after losing its connection, reattaches from the
//! last offset it saw and gets the rest with nothing lost or doubled; change
//! events arrive for writes by HTTP, by the shell and by the computer, and
//! resume from a revision; tool calls run over the socket with request ids;
//! bad messages get an error and the socket stays open.

mod common;

use std::time::Duration;

use common::{base, expect_error, expect_ok, expect_status, Agent};
use serde_json::{json, Value};
use stead_harness::{Socket, DEV_TOKEN};

const WAIT: Duration = Duration::from_secs(30);

fn connect(agent: &Agent) -> Socket {
    Socket::connect(base(), &agent.id, Some(DEV_TOKEN)).expect("websocket connect")
}

fn is_type(kind: &'static str) -> impl Fn(&Value) -> bool {
    move |m| m["type"] == kind
}

/// The output pieces among `messages`, checked to be contiguous from
/// `from`; returns their text and the offset after them.
fn contiguous(messages: &[Value], from: i64) -> (String, i64) {
    let mut at = from;
    let mut text = String::new();
    for m in messages.iter().filter(|m| m["type"] == "output") {
        assert_eq!(m["offset"], at, "a gap or an overlap at {at}: {m}");
        let data = m["data"].as_str().unwrap();
        text.push_str(data);
        at += data.len() as i64;
    }
    (text, at)
}

fn wait_job(agent: &Agent, id: i64) -> Value {
    for _ in 0..600 {
        let job = expect_ok(&agent.send("GET", &format!("/jobs/{id}"), b""))["job"].clone();
        if !matches!(job["state"].as_str(), Some("queued" | "running")) {
            return job;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("job {id} never ended");
}

#[test]
fn a_client_reattaches_from_an_offset_and_gets_the_rest_exactly_once() {
    let agent = Agent::new("ws-reattach");
    let mut live = connect(&agent);
    // Follow every job's output live, then start a job with many pieces.
    live.send(&json!({ "type": "subscribe_jobs", "id": 1 }));
    let reply = live.recv_until(WAIT, is_type("subscribed"));
    assert_eq!(reply.last().unwrap()["id"], 1);
    let expected: String = (1..=30000).map(|n| format!("{n}\n")).collect();
    let started = agent.call("exec", json!({ "command": "seq 1 30000", "detach": true }));
    expect_status(&started, 202);
    let job = started.json()["job"]["id"].as_i64().unwrap();
    let messages = live.recv_until(WAIT, is_type("job_end"));
    let (text, end) = contiguous(&messages, 0);
    assert_eq!(text, expected, "live delivery lost or doubled output");
    assert_eq!(messages.last().unwrap()["next"], end);
    assert_eq!(messages.last().unwrap()["state"], "succeeded");
    assert!(messages.iter().filter(|m| m["type"] == "output").count() > 5);

    // A second client subscribes from the start, takes a few pieces, and
    // loses its connection.
    let mut first = connect(&agent);
    first.send(&json!({ "type": "subscribe_job", "job": job, "from": 0 }));
    let mut seen = Vec::new();
    while seen
        .iter()
        .filter(|m: &&Value| m["type"] == "output")
        .count()
        < 3
    {
        seen.push(first.recv(WAIT).expect("output"));
    }
    let (head, resume) = contiguous(&seen, 0);
    first.drop_connection();

    // It reattaches from the last offset it saw and gets exactly the rest.
    let mut second = connect(&agent);
    second.send(&json!({ "type": "subscribe_job", "job": job, "from": resume, "id": "again" }));
    let rest = second.recv_until(WAIT, is_type("job_end"));
    assert_eq!(rest[0]["type"], "subscribed");
    assert_eq!(
        (rest[0]["id"].clone(), rest[0]["from"].clone()),
        (json!("again"), json!(resume))
    );
    let (tail, end) = contiguous(&rest, resume);
    assert_eq!(format!("{head}{tail}"), expected);
    assert_eq!(end as usize, expected.len());

    // Offsets outside the log are refused with a reason.
    second.send(&json!({ "type": "subscribe_job", "job": job, "from": end + 1, "id": 5 }));
    let error = second.recv_until(WAIT, is_type("error")).pop().unwrap();
    assert_eq!(
        (error["id"].clone(), error["error"]["code"].clone()),
        (json!(5), json!("OFFSET_BEYOND_END"))
    );
    second.send(&json!({ "type": "subscribe_job", "job": 999, "id": 6 }));
    let error = second.recv_until(WAIT, is_type("error")).pop().unwrap();
    assert_eq!(error["error"]["code"], "JOB_NOT_FOUND");
}

#[test]
fn a_computer_job_is_followed_live_and_reattached_mid_job() {
    let agent = Agent::new("ws-computer-job");
    let mut socket = connect(&agent);
    let command = "for i in $(seq 1 30); do echo line $i; sleep 0.05; done";
    socket.send(&json!({
        "type": "call", "id": "start", "tool": "exec",
        "args": { "command": command, "backend": "computer", "detach": true, "timeout_ms": 60000 },
    }));
    let result = socket.recv_until(WAIT, is_type("result")).pop().unwrap();
    assert_eq!(result["id"], "start");
    let job = result["result"]["job"]["id"].as_i64().unwrap();
    socket.send(&json!({ "type": "subscribe_job", "job": job, "from": 0 }));
    // Take the first few lines, then drop the connection mid-job.
    let mut seen = Vec::new();
    loop {
        let message = socket.recv(WAIT).expect("output");
        seen.push(message);
        let (text, _) = contiguous(&seen, 0);
        if text.lines().count() >= 5 {
            break;
        }
        assert!(
            seen.last().unwrap()["type"] != "job_end",
            "ended early: {seen:?}"
        );
    }
    let (head, resume) = contiguous(&seen, 0);
    socket.drop_connection();
    std::thread::sleep(Duration::from_millis(200));
    let mut again = connect(&agent);
    again.send(&json!({ "type": "subscribe_job", "job": job, "from": resume }));
    let rest = again.recv_until(Duration::from_secs(120), is_type("job_end"));
    let (tail, _) = contiguous(&rest, resume);
    let expected: String = (1..=30).map(|n| format!("line {n}\n")).collect();
    assert_eq!(format!("{head}{tail}"), expected);
    let end = rest.last().unwrap();
    assert_eq!(end["state"], "succeeded", "{end}");
    assert_eq!(wait_job(&agent, job)["backend"], "computer");
}

#[test]
fn change_events_arrive_for_http_shell_and_computer_writes_and_resume() {
    let agent = Agent::new("ws-changes");
    agent.write("/before.txt", "old");
    let start = agent.revision();
    let mut socket = connect(&agent);
    socket.send(&json!({ "type": "subscribe_changes", "id": "c" }));
    let subscribed = socket
        .recv_until(WAIT, is_type("subscribed"))
        .pop()
        .unwrap();
    assert_eq!(subscribed["changes"], start);

    let change_for = |socket: &mut Socket, path: &str| -> Value {
        let messages = socket.recv_until(WAIT, |m| m["type"] == "change" && m["path"] == path);
        messages.last().unwrap().clone()
    };
    // By HTTP.
    agent.write("/http.txt", "by http");
    let http = change_for(&mut socket, "/http.txt");
    assert_eq!(
        (http["kind"].clone(), http["revision"].clone()),
        (json!("created"), json!(start + 1))
    );
    // By the shell.
    agent.ok(
        "exec",
        json!({ "command": "echo by shell > /shell.txt", "backend": "shell" }),
    );
    let shell = change_for(&mut socket, "/shell.txt");
    assert!(shell["revision"].as_i64().unwrap() > start + 1);
    // By the computer.
    let out = agent.ok(
        "exec",
        // The computer's cwd is the workspace root (its `/` is the machine's).
        json!({ "command": "echo by computer > computer.txt", "backend": "computer", "timeout_ms": 60000 }),
    );
    assert_eq!(out["exit_code"], 0, "{out}");
    let computer = change_for(&mut socket, "/computer.txt");
    assert!(computer["revision"].as_i64().unwrap() > shell["revision"].as_i64().unwrap());
    // By a tool call over the socket itself.
    socket.send(&json!({
        "type": "call", "id": 9, "tool": "rm", "args": { "path": "/before.txt" },
    }));
    let messages = socket.recv_until(WAIT, |m| {
        m["type"] == "change" && m["path"] == "/before.txt"
    });
    assert_eq!(messages.last().unwrap()["kind"], "deleted");
    socket.close();

    // Resuming from a revision replays exactly the changes after it.
    let mut resumed = connect(&agent);
    resumed.send(&json!({ "type": "subscribe_changes", "since": start + 1 }));
    let replay = resumed.recv_until(WAIT, |m| {
        m["type"] == "change" && m["path"] == "/before.txt"
    });
    let paths: Vec<&str> = replay
        .iter()
        .filter(|m| m["type"] == "change")
        .map(|m| m["path"].as_str().unwrap())
        .collect();
    assert!(!paths.contains(&"/http.txt"), "{paths:?}");
    assert!(
        paths.contains(&"/shell.txt") && paths.contains(&"/computer.txt"),
        "{paths:?}"
    );
    let revisions: Vec<i64> = replay
        .iter()
        .filter(|m| m["type"] == "change")
        .map(|m| m["revision"].as_i64().unwrap())
        .collect();
    assert!(revisions.windows(2).all(|w| w[0] <= w[1]), "{revisions:?}");
    assert!(revisions.iter().all(|r| *r > start + 1));
}

#[test]
fn tool_calls_run_over_the_socket_and_bad_messages_get_errors() {
    let agent = Agent::new("ws-calls");
    let mut socket = connect(&agent);
    socket.send(&json!({
        "type": "call", "id": "w1", "tool": "write", "args": { "path": "/a.txt", "content": "hello\n" },
    }));
    let reply = socket.recv_until(WAIT, is_type("result")).pop().unwrap();
    assert_eq!(reply["id"], "w1");
    assert_eq!(reply["result"]["created"], true);
    socket.send(
        &json!({ "type": "call", "id": 2, "tool": "exec", "args": { "command": "cat /a.txt" } }),
    );
    let reply = socket.recv_until(WAIT, is_type("result")).pop().unwrap();
    assert_eq!(
        (reply["id"].clone(), reply["result"]["stdout"].clone()),
        (json!(2), json!("hello\n"))
    );
    assert_eq!(agent.read("/a.txt"), "hello\n");

    let mut expect_socket_error = |message: &str, code: &str, id: Value| {
        socket.send_text(message);
        let error = socket.recv_until(WAIT, is_type("error")).pop().unwrap();
        assert_eq!(error["error"]["code"], code, "{message}: {error}");
        assert!(!error["error"]["message"].as_str().unwrap().is_empty());
        assert_eq!(
            error.get("id").cloned().unwrap_or(Value::Null),
            id,
            "{message}"
        );
    };
    expect_socket_error("not json", "MALFORMED_JSON", Value::Null);
    expect_socket_error("[1]", "INVALID_REQUEST", Value::Null);
    expect_socket_error(r#"{"type":"fly","id":"x"}"#, "INVALID_REQUEST", json!("x"));
    expect_socket_error(
        r#"{"type":"subscribe_job","id":3}"#,
        "INVALID_REQUEST",
        json!(3),
    );
    expect_socket_error(
        r#"{"type":"call","id":4,"tool":"format_disk","args":{}}"#,
        "INVALID_REQUEST",
        json!(4),
    );
    expect_socket_error(
        r#"{"type":"call","id":5,"tool":"read","args":{"path":"/missing"}}"#,
        "ENOENT",
        json!(5),
    );
    expect_socket_error(
        r#"{"type":"call","id":6,"tool":"write","args":{"path":"/x","colour":1}}"#,
        "INVALID_REQUEST",
        json!(6),
    );
    socket.send_binary(b"\x00\x01");
    let error = socket.recv_until(WAIT, is_type("error")).pop().unwrap();
    assert_eq!(error["error"]["code"], "INVALID_REQUEST");
    // Still open after all that.
    socket.send(&json!({ "type": "ping", "id": "p" }));
    let pong = socket.recv_until(WAIT, is_type("pong")).pop().unwrap();
    assert_eq!(pong["id"], "p");
    // A bare keepalive is answered too (by the runtime, without waking the agent).
    socket.send_text(r#"{"type":"ping"}"#);
    let pong = socket.recv_until(WAIT, is_type("pong")).pop().unwrap();
    assert_eq!(pong, json!({ "type": "pong" }));
}

#[test]
fn the_socket_needs_the_token_an_agent_and_an_upgrade() {
    let agent = Agent::new("ws-auth");
    let refused = Socket::connect(base(), &agent.id, None)
        .err()
        .expect("connected without a token");
    assert!(refused.contains("401"), "{refused}");
    let refused = Socket::connect(base(), &agent.id, Some("wrong"))
        .err()
        .expect("wrong token");
    assert!(refused.contains("401"), "{refused}");
    let missing = Socket::connect(base(), "ws-no-such-agent", Some(DEV_TOKEN))
        .err()
        .expect("unknown agent");
    // (A refused handshake may come without its body: check the status.)
    assert!(missing.contains("404"), "{missing}");
    let missing = common::client().send("GET", "/agents/ws-no-such-agent/ws", b"");
    expect_error(&missing, 404, "AGENT_NOT_FOUND");
    expect_error(&agent.send("GET", "/ws", b""), 426, "UPGRADE_REQUIRED");
}
