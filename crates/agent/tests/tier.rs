//! The chunk tier through the agent, on the fake host with a fake object
//! store: the alarm moves a large file's chunks out, the file tools bring
//! them back and answer the right bytes, `verify` reports, and a store
//! failure fails the alarm (to be retried) without losing anything. A
//! light-shell exec or terminal line reads a tiered file whole (within its
//! bound), and a deleted agent's markers and objects are released.

mod common;

use common::{block_on, create, ok, FakeHost, FaultySql};
use serde_json::{json, Value};
use stead_agent::auth::Caller;
use stead_agent::{Action, Agent, Tool};
use stead_vfs::tier::fake::FakeStore;
use stead_vfs::tier::TierPolicy;

fn tiered_agent() -> Agent<FakeHost> {
    let mut host = FakeHost::new(FaultySql::new());
    host.store = Some(FakeStore::default());
    host.tier_policy.set(TierPolicy {
        hot_ms: 0,
        grace_ms: 0,
        ..TierPolicy::default()
    });
    Agent::new(host)
}

fn verify(agent: &Agent<FakeHost>) -> Value {
    ok(agent, "a", Action::Verify, "")
}

fn text() -> String {
    (0..150_000).map(|i| format!("line {i}\n")).collect()
}

#[test]
fn the_alarm_moves_chunks_out_and_the_tools_bring_them_back() {
    let agent = tiered_agent();
    create(&agent, "a");
    let text = text();
    let body = json!({ "path": "/notes.txt", "content": text }).to_string();
    ok(&agent, "a", Action::Tool(Tool::Write), &body);
    // One alarm starts the move, the next confirms it.
    for _ in 0..2 {
        agent.host().advance(1);
        block_on(agent.alarm()).expect("the alarm runs");
    }
    let report = verify(&agent);
    assert_eq!(report["store"], true);
    let tiered = report["usage"]["tiered"][0].as_u64().unwrap();
    assert!(tiered >= 3, "{report}");
    assert_eq!(report["missing"], json!([]));
    let store = agent.host().store.as_ref().unwrap();
    assert_eq!(store.keys("chunks/").len() as u64, tiered);

    let read = ok(
        &agent,
        "a",
        Action::Tool(Tool::Read),
        r#"{"path": "/notes.txt", "offset": 140001, "limit": 1}"#,
    );
    assert!(read.to_string().contains("line 140000"), "{read}");
    let report = verify(&agent);
    assert_eq!(report["usage"]["tiered"][0], 0, "brought back: {report}");
    assert_eq!(report["usage"]["garbage"].as_u64().unwrap(), tiered);

    // Moved out again once cold; a removal keeps them while the automatic
    // checkpoint before it pins the file.
    for _ in 0..3 {
        agent.host().advance(1);
        block_on(agent.alarm()).expect("the alarm runs");
    }
    ok(
        &agent,
        "a",
        Action::Tool(Tool::Rm),
        r#"{"path": "/notes.txt"}"#,
    );
    for _ in 0..3 {
        agent.host().advance(1);
        block_on(agent.alarm()).expect("the alarm runs");
    }
    let report = verify(&agent);
    assert_eq!(
        report["usage"]["tiered"][0].as_u64().unwrap(),
        tiered,
        "{report}"
    );
    assert_eq!(report["missing"], json!([]));
    assert_eq!(store.keys("chunks/").len() as u64, tiered);
    assert_eq!(store.keys("refs/").len() as u64, tiered, "one marker each");
}

#[test]
fn a_store_failure_fails_the_alarm_and_the_next_one_finishes_the_move() {
    let agent = tiered_agent();
    create(&agent, "a");
    let body = json!({ "path": "/notes.txt", "content": text() }).to_string();
    ok(&agent, "a", Action::Tool(Tool::Write), &body);
    let store = agent.host().store.as_ref().unwrap();
    store.fail_in(2);
    agent.host().advance(1);
    let failed = block_on(agent.alarm()).expect_err("the store failed");
    assert!(failed.to_string().contains("injected fault"), "{failed}");
    for _ in 0..3 {
        agent.host().advance(1);
        block_on(agent.alarm()).expect("the alarm runs");
    }
    let report = verify(&agent);
    assert_eq!(report["usage"]["moving"][0], 0, "{report}");
    assert!(
        report["usage"]["tiered"][0].as_u64().unwrap() >= 3,
        "{report}"
    );
    let read = ok(
        &agent,
        "a",
        Action::Tool(Tool::Read),
        r#"{"path": "/notes.txt"}"#,
    );
    assert!(read.to_string().contains("line 0\\n"), "{read}");
}

/// A tiered agent whose text file's chunks all moved to the store.
fn tiered_text(agent: &Agent<FakeHost>) -> String {
    create(agent, "a");
    let text = text();
    let body = json!({ "path": "/notes.txt", "content": text }).to_string();
    ok(agent, "a", Action::Tool(Tool::Write), &body);
    for _ in 0..2 {
        agent.host().advance(1);
        block_on(agent.alarm()).expect("the alarm runs");
    }
    assert!(verify(agent)["usage"]["tiered"][0].as_u64().unwrap() >= 3);
    text
}

fn shell(agent: &Agent<FakeHost>, command: &str) -> (u16, Value) {
    let body = json!({ "command": command, "backend": "shell" }).to_string();
    common::call(
        agent,
        common::request("a", Action::Exec, Caller::Admin, &body),
    )
}

/// What the real `sha256sum` says of `bytes` (read from standard input).
fn real_sha256sum(bytes: &[u8]) -> String {
    use std::io::Write;
    let mut child = std::process::Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("sha256sum runs");
    child.stdin.take().unwrap().write_all(bytes).unwrap();
    String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap()
}

#[test]
fn a_light_shell_exec_reads_tiered_content_whole() {
    let agent = tiered_agent();
    let text = tiered_text(&agent);
    let (status, out) = shell(
        &agent,
        "cat /notes.txt | sha256sum; wc -c < /notes.txt; tail -n 1 /notes.txt; echo done > /ran",
    );
    assert_eq!(status, 200, "{out}");
    let want = format!(
        "{}{}\nline 149999\n",
        real_sha256sum(text.as_bytes()),
        text.len()
    );
    assert_eq!(out["stdout"], want, "{out}");
    assert_eq!(out["stderr"], "", "no EIO on the way: {out}");
    assert_eq!(out["exit_code"], 0);
    // The kept run's write happened once; the content is back inline.
    let ran = ok(&agent, "a", Action::Tool(Tool::Read), r#"{"path": "/ran"}"#);
    assert!(ran.to_string().contains("done"), "{ran}");
    assert_eq!(verify(&agent)["usage"]["tiered"][0], 0);
}

#[test]
fn an_exec_needing_more_tiered_content_than_its_bound_is_refused_and_changes_nothing() {
    let agent = tiered_agent();
    let policy = agent.host().tier_policy.get();
    agent.host().tier_policy.set(TierPolicy {
        exec_bytes: 1 << 20,
        ..policy
    });
    let text = tiered_text(&agent);
    assert!(text.len() > 1 << 20);
    let (status, out) = shell(&agent, "echo x > /marker; cat /notes.txt | wc -c");
    assert_eq!(
        common::failure(status, &out),
        (413, "EXEC_CONTENT_TOO_LARGE")
    );
    let message = out["error"]["message"].as_str().unwrap();
    assert!(message.contains("backend: computer"), "{message}");
    let (status, body) = common::call(
        &agent,
        common::request(
            "a",
            Action::Tool(Tool::Read),
            Caller::Admin,
            r#"{"path": "/marker"}"#,
        ),
    );
    assert_eq!(status, 404, "the refused exec wrote nothing: {body}");
    assert!(verify(&agent)["usage"]["tiered"][0].as_u64().unwrap() >= 3);
}

#[test]
fn deleting_an_agent_releases_its_markers_and_objects_after_the_grace() {
    let agent = tiered_agent();
    let policy = agent.host().tier_policy.get();
    agent.host().tier_policy.set(TierPolicy {
        grace_ms: 1_000,
        batch: 2,
        ..policy
    });
    create(&agent, "a");
    let body = json!({ "path": "/notes.txt", "content": text() }).to_string();
    ok(&agent, "a", Action::Tool(Tool::Write), &body);
    for _ in 0..4 {
        agent.host().advance(1_000);
        block_on(agent.alarm()).expect("the alarm runs");
    }
    let store = agent.host().store.as_ref().unwrap();
    let objects = store.keys("chunks/").len();
    assert!(objects >= 3);
    assert_eq!(store.keys("refs/").len(), objects);
    ok(&agent, "a", Action::Delete, "");
    assert!(agent.host().alarm.get().is_some(), "armed for the release");
    assert_eq!(store.keys("refs/").len(), objects, "not before the grace");
    // Bounded batches, and a store failure midway is resumed.
    agent.host().advance(1_000);
    store.fail_in(3);
    assert!(block_on(agent.alarm()).is_err());
    let mut alarms = 0;
    while agent.host().alarm.get().is_some() {
        agent.host().advance(1_000);
        block_on(agent.alarm()).expect("the alarm runs");
        alarms += 1;
        assert!(alarms < 10, "the release never ended");
    }
    assert!(alarms >= 2, "one batch per alarm");
    assert!(store.keys("").is_empty(), "{:?}", store.keys(""));
}

#[test]
fn a_light_terminal_line_reads_tiered_content_and_keeps_its_state_once() {
    use stead_agent::socket::Incoming;
    let agent = tiered_agent();
    let text = tiered_text(&agent);
    let socket = common::open_terminal(&agent, Caller::Admin, &[]).unwrap();
    socket.take();
    socket.take_bytes();
    // The line sets a variable, appends to a counter, then meets the
    // tiered file: the kept run does each once.
    let line = b"N=$((N+1)); echo x >> /count; tail -n 1 /notes.txt; wc -c < /notes.txt\r";
    block_on(agent.socket_message(&socket, Incoming::Binary(line.to_vec())));
    block_on(agent.socket_message(&socket, Incoming::Binary(b"echo $N\r".to_vec())));
    let screen = String::from_utf8_lossy(&socket.take_bytes()).into_owned();
    let want = format!("line 149999\r\n{}\r\n", text.len());
    assert!(screen.contains(&want), "{screen:?}");
    assert!(
        !screen.contains("EIO") && !screen.contains("object store"),
        "{screen:?}"
    );
    assert!(screen.contains("echo $N\r\n1\r\n"), "{screen:?}");
    let count = ok(
        &agent,
        "a",
        Action::Tool(Tool::Read),
        r#"{"path": "/count"}"#,
    );
    assert_eq!(
        count["content"].as_str().map(|c| c.matches('x').count()),
        Some(1),
        "{count}"
    );
}
