//! Socket subscriptions: change events and job output reach each
//! subscriber exactly once, however many there are, across restarts.

mod common;

use common::*;
use serde_json::{json, Value};
use stead_agent::auth::Caller;
use stead_agent::protocol::SocketState;
use stead_agent::socket::Incoming;
use stead_agent::{Action, Agent, Host as _, Tool};

fn socket(agent: &Agent<FakeHost>) -> FakeSocket {
    agent.host().accept(&SocketState {
        agent: "a".into(),
        caller: Caller::Admin,
        ..SocketState::default()
    })
}

fn say(agent: &Agent<FakeHost>, socket: &FakeSocket, message: Value) {
    block_on(agent.socket_message(socket, Incoming::Text(message.to_string())));
}

fn revision(agent: &Agent<FakeHost>) -> i64 {
    ok(agent, "a", Action::Info, "")["usage"]["revision"]
        .as_i64()
        .unwrap_or_else(|| {
            ok(
                agent,
                "a",
                Action::Tool(Tool::Changes),
                r#"{"since":0,"limit":1}"#,
            )["revision"]
                .as_i64()
                .unwrap()
        })
}

#[test]
fn a_large_change_reaches_subscribers_whole() {
    let agent = agent();
    create(&agent, "a");
    let watcher = socket(&agent);
    say(&agent, &watcher, json!({"type":"subscribe_changes","id":1}));
    assert_eq!(watcher.take()[0]["type"], "subscribed");
    // A computer command that made 100,001 files: one revision, more
    // change rows than any page (the feed once stopped at 100,000 and
    // called the rest seen).
    let files: Vec<stead_sync::Change> = (0..100_001)
        .map(|i| stead_sync::Change {
            path: format!("/out/f{i:06}"),
            entry: Some(stead_sync::Entry::File {
                mode: 0o644,
                size: 0,
                chunks: Vec::new(),
            }),
            mtime_ms: None,
        })
        .chain(std::iter::once(stead_sync::Change {
            path: "/out".into(),
            entry: Some(stead_sync::Entry::Dir { mode: 0o755 }),
            mtime_ms: None,
        }))
        .collect();
    let base = revision(&agent);
    let applied = agent.vfs().apply_sync(base, &files).unwrap();
    assert_eq!(applied.applied.len(), 100_002);
    ok(&agent, "a", Action::Ping, "");
    let events = watcher.take();
    assert_eq!(events.len(), 100_002);
    let mut paths: Vec<&str> = events
        .iter()
        .map(|e| {
            assert_eq!(
                (e["type"].as_str(), e["revision"].as_i64()),
                (Some("change"), Some(applied.revision))
            );
            e["path"].as_str().unwrap()
        })
        .collect();
    paths.sort_unstable();
    paths.dedup();
    assert_eq!(paths.len(), 100_002, "each path once");
    assert_eq!(
        stead_agent::Socket::state(&watcher).unwrap().changes,
        Some(applied.revision)
    );
    // Nothing more is sent on the next event: it has seen everything.
    ok(&agent, "a", Action::Ping, "");
    assert!(watcher.take().is_empty());
}

#[test]
fn job_output_arrives_live_once_and_resumes_from_an_offset() {
    let agent = agent();
    create(&agent, "a");
    let live = socket(&agent);
    say(&agent, &live, json!({"type":"subscribe_jobs"}));
    live.take();
    let queued = ok(
        &agent,
        "a",
        Action::Exec,
        r#"{"command":"echo one; echo two >&2; echo three","detach":true}"#,
    );
    let job = queued["job"]["id"].as_i64().unwrap();
    block_on(agent.alarm()).unwrap();
    let messages = live.take();
    let output: String = messages
        .iter()
        .filter(|m| m["type"] == "output")
        .map(|m| m["data"].as_str().unwrap())
        .collect();
    assert_eq!(output, "one\nthree\ntwo\n");
    let end = messages.last().unwrap();
    assert_eq!(
        (end["type"].clone(), end["job"].clone()),
        (json!("job_end"), json!(job))
    );
    let total = end["next"].as_i64().unwrap();
    // A client that dropped after the first piece resumes from its end.
    let first = &messages[0];
    let resume = first["offset"].as_i64().unwrap() + first["data"].as_str().unwrap().len() as i64;
    let late = socket(&agent);
    say(
        &agent,
        &late,
        json!({"type":"subscribe_job","job":job,"from":resume,"id":"r"}),
    );
    let replay = late.take();
    assert_eq!(replay[0]["type"], "subscribed");
    let rest: String = replay
        .iter()
        .filter(|m| m["type"] == "output")
        .map(|m| m["data"].as_str().unwrap())
        .collect();
    assert_eq!(rest.len() as i64, total - resume);
    assert_eq!(replay.last().unwrap()["type"], "job_end");
    // An offset past the end is an error, answered with the request id.
    say(
        &agent,
        &late,
        json!({"type":"subscribe_job","job":job,"from":total + 1,"id":"bad"}),
    );
    let error = late.take();
    assert_eq!(
        (error[0]["type"].clone(), error[0]["id"].clone()),
        (json!("error"), json!("bad"))
    );
}

#[test]
fn subscriptions_survive_a_restart_of_the_agent() {
    let agent = agent();
    create(&agent, "a");
    let watcher = socket(&agent);
    say(&agent, &watcher, json!({"type":"subscribe_changes"}));
    watcher.take();
    // The instance is evicted; the platform keeps the socket and its
    // attachment, and a new instance serves the next event.
    let restarted = Agent::new(FakeHost::new(agent.host().db.clone()));
    restarted.host().sockets.borrow_mut().push(watcher.clone());
    ok(
        &restarted,
        "a",
        Action::Tool(Tool::Write),
        r#"{"path":"/x","content":"1"}"#,
    );
    let events = watcher.take();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(
        (events[0]["path"].clone(), events[0]["kind"].clone()),
        (json!("/x"), json!("created"))
    );
}

#[test]
fn bad_messages_get_errors_and_the_socket_stays_open() {
    let agent = agent();
    create(&agent, "a");
    let client = socket(&agent);
    for message in ["{nope", r#"{"type":"fly","id":3}"#, r#"[1]"#] {
        block_on(agent.socket_message(&client, Incoming::Text(message.into())));
    }
    block_on(agent.socket_message(&client, Incoming::Binary(b"x".to_vec())));
    let errors = client.take();
    let codes: Vec<&str> = errors
        .iter()
        .map(|e| e["error"]["code"].as_str().unwrap())
        .collect();
    assert_eq!(
        codes,
        [
            "MALFORMED_JSON",
            "INVALID_REQUEST",
            "INVALID_REQUEST",
            "INVALID_REQUEST"
        ]
    );
    assert_eq!(errors[1]["id"], 3);
    assert_eq!(client.closed(), None);
    say(
        &agent,
        &client,
        json!({"type":"call","tool":"teleport","args":{}}),
    );
    assert_eq!(client.take()[0]["error"]["code"], "INVALID_REQUEST");
}

/// A socket opened with `caller`, subscribed to changes.
fn watching(agent: &Agent<FakeHost>, caller: Caller) -> FakeSocket {
    let socket = agent.host().accept(&SocketState {
        agent: "a".into(),
        caller,
        ..SocketState::default()
    });
    say(agent, &socket, json!({"type":"subscribe_changes","id":1}));
    assert_eq!(socket.take()[0]["type"], "subscribed");
    socket
}

fn write(agent: &Agent<FakeHost>, path: &str) {
    let body = json!({ "path": path, "content": "x" }).to_string();
    ok(agent, "a", Action::Tool(Tool::Write), &body);
}

#[test]
fn a_socket_ends_when_the_token_that_opened_it_expires() {
    let agent = agent();
    create(&agent, "a");
    let now_s = agent.host().now_ms() / 1000;
    let reader = token_until("t-short", &[stead_agent::auth::Scope::Read], now_s + 3);
    let socket = watching(&agent, reader.clone());
    write(&agent, "/before.txt");
    assert_eq!(socket.take()[0]["path"], "/before.txt");
    say(&agent, &socket, json!({"type":"ping","id":2}));
    assert_eq!(socket.take()[0]["type"], "pong");

    agent.host().advance(3_000);
    // Nothing more is pushed: the socket is told why and closed.
    write(&agent, "/after.txt");
    let sent = socket.take();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["error"]["code"], "TOKEN_EXPIRED", "{sent:?}");
    assert_eq!(socket.closed(), Some(4401));

    // A message on a socket whose token expired is refused the same way,
    // subscriptions included.
    let late = agent.host().accept(&SocketState {
        agent: "a".into(),
        caller: reader,
        ..SocketState::default()
    });
    say(
        &agent,
        &late,
        json!({"type":"subscribe_changes","id":3,"since":0}),
    );
    let sent = late.take();
    assert_eq!(sent.len(), 1, "no change log for it: {sent:?}");
    assert_eq!(sent[0]["error"]["code"], "TOKEN_EXPIRED");
    assert_eq!(late.closed(), Some(4401));
}

#[test]
fn revoking_a_token_closes_what_it_opened_at_once() {
    let agent = agent();
    create(&agent, "a");
    let revoked = watching(&agent, token("t-gone", &[stead_agent::auth::Scope::Read]));
    let kept = watching(&agent, token("t-kept", &[stead_agent::auth::Scope::Read]));
    ok(&agent, "a", Action::RevokeToken, r#"{"id":"t-gone"}"#);
    let sent = revoked.take();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["error"]["code"], "TOKEN_REVOKED");
    assert_eq!(revoked.closed(), Some(4401));
    // The other token's socket goes on.
    write(&agent, "/f.txt");
    assert_eq!(kept.take()[0]["path"], "/f.txt");
    assert_eq!(kept.closed(), None);
    assert!(revoked.take().is_empty(), "nothing after the revocation");
}
