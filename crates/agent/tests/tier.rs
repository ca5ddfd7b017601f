//! The chunk tier through the agent, on the fake host with a fake object
//! store: the alarm moves a large file's chunks out, the file tools bring
//! them back and answer the right bytes, `verify` reports, and a store
//! failure fails the alarm (to be retried) without losing anything.

mod common;

use common::{block_on, create, ok, FakeHost, FaultySql};
use serde_json::{json, Value};
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
