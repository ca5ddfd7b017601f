//! Checkpoints, diff, restore, undo and fork, through the agent's dispatch:
//! the automatic checkpoints each kind of operation takes, what undo puts
//! back, and a fork across two agents that breaks off and resumes.

mod common;

use std::rc::Rc;

use common::*;
use serde_json::{json, Value};
use stead_agent::auth::{Caller, Scope};
use stead_agent::{Action, Agent, Host, Tool};
use stead_sql::Sql;

fn write(agent: &Agent<FakeHost>, path: &str, content: &str) -> Value {
    let body = json!({ "path": path, "content": content }).to_string();
    ok(agent, "a", Action::Tool(Tool::Write), &body)
}

fn read(agent: &Agent<FakeHost>, id: &str, path: &str) -> Value {
    let body = json!({ "path": path }).to_string();
    call(
        agent,
        request(id, Action::Tool(Tool::Read), Caller::Admin, &body),
    )
    .1
}

fn exec(agent: &Agent<FakeHost>, command: &str) -> Value {
    ok(
        agent,
        "a",
        Action::Exec,
        &json!({ "command": command }).to_string(),
    )
}

#[test]
fn a_broken_workspace_is_undone_to_before_the_command() {
    let agent = agent();
    create(&agent, "a");
    write(&agent, "/src/main.rs", "fn main() {}\n");
    write(&agent, "/src/lib.rs", "pub fn f() {}\n");
    let broke = exec(&agent, "rm -rf /src && echo oops > /README");
    let checkpoint = broke["checkpoint"]
        .as_i64()
        .expect("the exec names its checkpoint");
    assert_eq!(read(&agent, "a", "/src/main.rs")["error"]["code"], "ENOENT");
    let undone = ok(&agent, "a", Action::Undo, "{}");
    assert_eq!(undone["undone"]["checkpoint"]["id"], checkpoint);
    assert_eq!(undone["undone"]["checkpoint"]["operation"], "exec");
    let changes: Vec<(&str, &str)> = undone["undone"]["restored"]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["path"].as_str().unwrap(), c["change"].as_str().unwrap()))
        .collect();
    assert!(changes.contains(&("/README", "deleted")), "{changes:?}");
    assert!(changes.contains(&("/src", "added")), "{changes:?}");
    assert_eq!(
        read(&agent, "a", "/src/main.rs")["content"],
        "fn main() {}\n"
    );
    assert_eq!(read(&agent, "a", "/README")["error"]["code"], "ENOENT");
    // The undo itself can be undone.
    assert!(undone["checkpoint"].as_i64().is_some(), "{undone}");
}

#[test]
fn a_file_tool_call_is_undone_alone() {
    let agent = agent();
    create(&agent, "a");
    write(&agent, "/notes.md", "first\n");
    write(&agent, "/other.md", "kept\n");
    write(&agent, "/notes.md", "second\n");
    let undone = ok(&agent, "a", Action::Undo, "{}");
    assert_eq!(undone["undone"]["checkpoint"]["operation"], "tool:write");
    assert_eq!(undone["undone"]["checkpoint"]["whole"], false);
    assert_eq!(read(&agent, "a", "/notes.md")["content"], "first\n");
    assert_eq!(read(&agent, "a", "/other.md")["content"], "kept\n");
    // Undo walks further back: the first write of the file goes too.
    ok(&agent, "a", Action::Undo, "{}");
    assert_eq!(read(&agent, "a", "/other.md")["error"]["code"], "ENOENT");
}

#[test]
fn named_checkpoints_diff_and_restore() {
    let agent = agent();
    create(&agent, "a");
    write(&agent, "/a.txt", "one\n");
    write(&agent, "/b.txt", "bee\n");
    let taken = call(
        &agent,
        request(
            "a",
            Action::CheckpointCreate,
            Caller::Admin,
            r#"{"name":"v1","note":"before"}"#,
        ),
    );
    assert_eq!(taken.0, 201, "{}", taken.1);
    let v1 = taken.1["checkpoint"]["id"].as_i64().unwrap();
    assert_eq!(taken.1["checkpoint"]["files"], 2);
    let duplicate = call(
        &agent,
        request(
            "a",
            Action::CheckpointCreate,
            Caller::Admin,
            r#"{"name":"v1"}"#,
        ),
    );
    assert_eq!(failure(duplicate.0, &duplicate.1), (409, "EEXIST"));
    write(&agent, "/a.txt", "two\n");
    ok(&agent, "a", Action::Tool(Tool::Rm), r#"{"path":"/b.txt"}"#);
    write(&agent, "/c.txt", "sea\n");
    let diff = ok(
        &agent,
        "a",
        Action::Diff,
        r#"{"from":"v1","to":"now","text":true}"#,
    );
    let entries: Vec<(&str, &str)> = diff["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["path"].as_str().unwrap(), e["change"].as_str().unwrap()))
        .collect();
    assert_eq!(
        entries,
        [
            ("/a.txt", "modified"),
            ("/b.txt", "deleted"),
            ("/c.txt", "added")
        ]
    );
    assert!(diff["entries"][0]["text"]["patch"]
        .as_str()
        .unwrap()
        .contains("-one\n+two\n"));
    // Only /b.txt comes back; the rest stays.
    let restored = ok(
        &agent,
        "a",
        Action::Restore,
        &json!({ "checkpoint": v1, "paths": ["/b.txt"] }).to_string(),
    );
    assert_eq!(restored["restored"]["changes"][0]["path"], "/b.txt");
    assert_eq!(read(&agent, "a", "/b.txt")["content"], "bee\n");
    assert_eq!(read(&agent, "a", "/a.txt")["content"], "two\n");
    let listed = ok(&agent, "a", Action::Checkpoints, "");
    assert!(listed["checkpoints"].as_array().unwrap().len() >= 2);
    assert_eq!(
        ok(&agent, "a", Action::Checkpoint("v1".into()), "")["checkpoint"]["id"],
        v1
    );
    ok(&agent, "a", Action::CheckpointDelete("v1".into()), "");
    let gone = call(
        &agent,
        request("a", Action::Checkpoint("v1".into()), Caller::Admin, ""),
    );
    assert_eq!(failure(gone.0, &gone.1), (404, "ENOENT"));
}

#[test]
fn bad_time_travel_requests_change_nothing() {
    let agent = agent();
    create(&agent, "a");
    write(&agent, "/a.txt", "one\n");
    write(&agent, "/b.txt", "two\n");
    let revision = ok(&agent, "a", Action::Tool(Tool::Changes), "{}")["revision"].clone();
    for (action, body, status, code) in [
        (Action::Restore, r#"{"checkpoint":999}"#, 404, "ENOENT"),
        (Action::Restore, r#"{"checkpoint":"nope"}"#, 404, "ENOENT"),
        (
            Action::Restore,
            r#"{"checkpoint":1,"paths":["/../etc"]}"#,
            403,
            "EACCES",
        ),
        (Action::Diff, r#"{"from":"rev:1"}"#, 404, "ENOENT"),
        (Action::Diff, r#"{"from":"rev:x"}"#, 400, "INVALID_REQUEST"),
        (
            Action::Diff,
            r#"{"from":"now","limit":0}"#,
            400,
            "INVALID_REQUEST",
        ),
        (
            Action::Diff,
            r#"{"from":"now","text":true,"max_text_file_bytes":1000000000000}"#,
            400,
            "INVALID_REQUEST",
        ),
        (
            Action::Diff,
            r#"{"from":"now","text":true,"max_text_file_bytes":0}"#,
            400,
            "INVALID_REQUEST",
        ),
        (Action::CheckpointCreate, r#"{"name":"123"}"#, 400, "EINVAL"),
        (Action::Fork, r#"{"to":"a"}"#, 400, "INVALID_REQUEST"),
        (Action::Fork, r#"{"to":"bad id"}"#, 400, "INVALID_AGENT_ID"),
    ] {
        let (got, answer) = call(&agent, request("a", action.clone(), Caller::Admin, body));
        assert_eq!(
            (got, answer["error"]["code"].as_str()),
            (status, Some(code)),
            "{action:?} {body}"
        );
    }
    let after = ok(&agent, "a", Action::Tool(Tool::Changes), "{}")["revision"].clone();
    assert_eq!(after, revision);
    // A reader may look back but not put back.
    let reader = token("r", &[Scope::Read]);
    assert_eq!(
        call(
            &agent,
            request("a", Action::Diff, reader.clone(), r#"{"from":"now"}"#)
        )
        .0,
        200
    );
    assert_eq!(
        call(&agent, request("a", Action::Undo, reader, "{}")).0,
        403
    );
}

/// `max_text_file_bytes` out of range is refused with the range, not
/// capped silently; a text diff not sent says which limit it exceeded (the
/// file's size, or the patch's).
#[test]
fn diff_text_limits_are_bounded_and_named() {
    let agent = agent();
    create(&agent, "a");
    let (status, answer) = call(
        &agent,
        request(
            "a",
            Action::Diff,
            Caller::Admin,
            r#"{"from":"now","text":true,"max_text_file_bytes":1000000000000}"#,
        ),
    );
    assert_eq!(failure(status, &answer), (400, "INVALID_REQUEST"));
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("max_text_file_bytes must be between 1 and 4194304"),
        "{message}"
    );
    ok(&agent, "a", Action::CheckpointCreate, r#"{"name":"empty"}"#);
    let big: String = (0..40_000).map(|i| format!("line {i}\n")).collect();
    write(&agent, "/big.txt", &big);
    write(&agent, "/small.txt", "x\n");
    let text = |max: u64| {
        let body = json!({ "from": "empty", "text": true, "max_text_file_bytes": max });
        let diff = ok(&agent, "a", Action::Diff, &body.to_string());
        let entry = |path: &str| {
            diff["entries"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["path"] == path)
                .unwrap()["text"]
                .clone()
        };
        (entry("/big.txt"), entry("/small.txt"))
    };
    let (big_text, small_text) = text(1 << 20);
    assert_eq!(
        big_text,
        json!({ "kind": "too_large", "limit": 256 * 1024, "exceeds": "patch" })
    );
    assert_eq!(small_text["kind"], "unified");
    let (big_text, _) = text(1000);
    assert_eq!(
        big_text,
        json!({ "kind": "too_large", "limit": 1000, "exceeds": "file" })
    );
}

#[test]
fn automatic_checkpoints_can_be_turned_off() {
    let agent = agent();
    create(&agent, "a");
    ok(
        &agent,
        "a",
        Action::SettingsPut,
        r#"{"checkpoints":{"automatic":false}}"#,
    );
    write(&agent, "/a.txt", "x");
    let ran = exec(&agent, "echo y > /a.txt");
    assert!(ran.get("checkpoint").is_none(), "{ran}");
    assert_eq!(
        ok(&agent, "a", Action::Checkpoints, "")["checkpoints"],
        json!([])
    );
    let nothing = call(&agent, request("a", Action::Undo, Caller::Admin, "{}"));
    assert_eq!(failure(nothing.0, &nothing.1), (404, "ENOENT"));
}

/// `len` bytes of hex text from a seeded generator: content whose chunks
/// are all distinct (a repeated byte would be one chunk, stored once).
fn noise(seed: u64, len: usize) -> String {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut out = String::with_capacity(len);
    while out.len() < len {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        out.push_str(&format!("{:016x}", state));
    }
    out.truncate(len);
    out
}

/// Two agents of one deployment: `a` (created, with files) and `b`, the
/// fork target, reachable from `a`'s host.
fn pair() -> (Agent<FakeHost>, Rc<Agent<FakeHost>>) {
    let source = agent();
    create(&source, "a");
    let target = Rc::new(common::agent());
    source
        .host()
        .peers
        .borrow_mut()
        .push(("b".into(), target.clone()));
    (source, target)
}

#[test]
fn a_fork_is_a_new_agent_with_the_checkpointed_workspace() {
    let (source, target) = pair();
    let big: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
    write(&source, "/src/big.txt", &big);
    write(&source, "/src/small.txt", "small\n");
    let forked = ok(&source, "a", Action::Fork, r#"{"to":"b"}"#);
    assert_eq!(forked["fork"]["to"], "b", "{forked}");
    assert_eq!(read(&target, "b", "/src/small.txt")["content"], "small\n");
    let stat = ok(
        &target,
        "b",
        Action::Tool(Tool::Stat),
        r#"{"path":"/src/big.txt"}"#,
    );
    assert_eq!(stat["size"], big.len());
    let tail = ok(
        &target,
        "b",
        Action::Tool(Tool::Read),
        &json!({ "path": "/src/big.txt", "byte_offset": big.len() - 11 }).to_string(),
    );
    assert_eq!(tail["content"], "line 19999\n");
    // The source goes on; the fork is its own workspace now.
    write(&source, "/src/small.txt", "changed\n");
    assert_eq!(read(&target, "b", "/src/small.txt")["content"], "small\n");
    // Forking onto an agent that exists is refused.
    let again = call(
        &source,
        request("a", Action::Fork, Caller::Admin, r#"{"to":"b"}"#),
    );
    assert_eq!(failure(again.0, &again.1), (409, "AGENT_EXISTS"));
}

/// The checkpoint a fork copies travels with it: the new agent's first
/// checkpoint pins the copied tree, under the same name, saying where it
/// came from; the source's other checkpoints stay behind.
#[test]
fn a_fork_carries_the_checkpoint_it_was_forked_from() {
    let (source, target) = pair();
    write(&source, "/plan.md", "v1\n");
    ok(
        &source,
        "a",
        Action::CheckpointCreate,
        r#"{"name":"green"}"#,
    );
    write(&source, "/plan.md", "v2\n");
    ok(
        &source,
        "a",
        Action::CheckpointCreate,
        r#"{"name":"later"}"#,
    );
    let forked = ok(
        &source,
        "a",
        Action::Fork,
        r#"{"to":"b","checkpoint":"green"}"#,
    );
    let from = forked["fork"]["checkpoint"].as_i64().unwrap();
    let listed = ok(&target, "b", Action::Checkpoints, "")["checkpoints"].clone();
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 1, "only the one forked from: {listed:?}");
    assert_eq!(listed[0]["name"], "green");
    let note = listed[0]["note"].as_str().unwrap();
    assert!(
        note.contains("\"a\"") && note.contains(&from.to_string()),
        "{note}"
    );
    // It pins the copied tree: restoring it after a change puts v1 back.
    write(&target, "/plan.md", "changed\n");
    ok(&target, "b", Action::Restore, r#"{"checkpoint":"green"}"#);
    assert_eq!(read(&target, "b", "/plan.md")["content"], "v1\n");
}

/// Forking onto an agent that exists, even an empty one, is refused with
/// `AGENT_EXISTS` and a message that says what to do; the target is left
/// as it was.
#[test]
fn forking_onto_an_existing_agent_is_refused_and_says_what_to_do() {
    let (source, target) = pair();
    write(&source, "/a.txt", "x");
    create(&target, "b");
    let (status, answer) = call(
        &source,
        request("a", Action::Fork, Caller::Admin, r#"{"to":"b"}"#),
    );
    assert_eq!(failure(status, &answer), (409, "AGENT_EXISTS"), "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("\"b\" already exists") && message.contains("never used"),
        "{message}"
    );
    let listed = ok(&target, "b", Action::Tool(Tool::Ls), "{}");
    assert_eq!(listed["entries"], json!([]), "the target is unchanged");
}

/// The tables in `agent`'s storage.
fn tables(agent: &Agent<FakeHost>) -> Vec<String> {
    let tables = agent
        .host()
        .db
        .query(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
            &[],
        )
        .unwrap();
    tables
        .iter()
        .map(|t| t.text(0).unwrap().to_string())
        .collect()
}

/// A deleted agent leaves a tombstone: forking onto its id is refused
/// (`409 AGENT_EXISTED`, saying why), nothing is staged there, and that
/// holds again after the admin re-creates it empty and deletes it again.
#[test]
fn forking_onto_a_deleted_agent_is_refused_and_says_why() {
    let (source, target) = pair();
    write(&source, "/a.txt", "x");
    create(&target, "b");
    ok(
        &target,
        "b",
        Action::HookPut("gh".into()),
        r#"{"exec":{"command":"cat"},"secret":"a-long-enough-secret"}"#,
    );
    ok(&target, "b", Action::Delete, "");
    for round in 0..2 {
        let (status, answer) = call(
            &source,
            request("a", Action::Fork, Caller::Admin, r#"{"to":"b"}"#),
        );
        assert_eq!(
            failure(status, &answer),
            (409, "AGENT_EXISTED"),
            "round {round}: {answer}"
        );
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("\"b\" existed and was deleted") && message.contains("never used"),
            "{message}"
        );
        // Nothing was staged: the id is still no agent.
        let (status, answer) = call(
            &target,
            request("b", Action::Tool(Tool::Ls), Caller::Admin, "{}"),
        );
        assert_eq!(
            failure(status, &answer),
            (404, "AGENT_NOT_FOUND"),
            "{answer}"
        );
        assert_eq!(tables(&target), ["agent_tombstone"], "round {round}");
        // The admin may re-create it (empty, without its hook) and delete
        // it again: the tombstone stays.
        create(&target, "b");
        let hooks = ok(&target, "b", Action::Hooks, "");
        assert_eq!(hooks["hooks"], json!([]), "{hooks}");
        ok(&target, "b", Action::Delete, "");
    }
}

/// A broken-off import (its source deleted mid-fork) is dropped whole by
/// the target's alarm, and that removes only what the import made: while
/// it was staged nothing else could be added to the target, an agent that
/// exists is never an import's target (its hooks, schedules and settings
/// stay), and the dropped id, which never held an agent, takes a new fork.
#[test]
fn a_broken_off_import_removes_only_what_it_made() {
    let (source, target) = pair();
    write(&source, "/f.bin", &noise(3, 5 << 20));
    // An agent that exists, with a hook, a schedule and settings, refuses
    // the fork and keeps all of them.
    let other = Rc::new(common::agent());
    source
        .host()
        .peers
        .borrow_mut()
        .push(("c".into(), other.clone()));
    create(&other, "c");
    ok(
        &other,
        "c",
        Action::HookPut("gh".into()),
        r#"{"exec":{"command":"cat"},"secret":"a-long-enough-secret"}"#,
    );
    ok(
        &other,
        "c",
        Action::ScheduleCreate,
        r#"{"delay_ms":60000,"exec":{"command":"true"}}"#,
    );
    ok(
        &other,
        "c",
        Action::SettingsPut,
        r#"{"checkpoints":{"automatic":false}}"#,
    );
    let (status, answer) = call(
        &source,
        request("a", Action::Fork, Caller::Admin, r#"{"to":"c"}"#),
    );
    assert_eq!(failure(status, &answer), (409, "AGENT_EXISTS"), "{answer}");
    assert_eq!(
        ok(&other, "c", Action::Hooks, "")["hooks"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        ok(&other, "c", Action::Schedules, "")["schedules"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        ok(&other, "c", Action::Settings, "")["checkpoints"]["automatic"],
        false
    );
    // A fork into a fresh id breaks off, and its source is deleted.
    target.host().db.fail_nth("INTO import_chunks", 9);
    let broken = call(
        &source,
        request("a", Action::Fork, Caller::Admin, r#"{"to":"b"}"#),
    );
    assert_eq!(broken.0, 502, "{}", broken.1);
    ok(&source, "a", Action::Delete, "");
    // Meanwhile nothing else lands on the target.
    for (action, body) in [
        (
            Action::HookPut("gh".into()),
            r#"{"exec":{"command":"cat"},"secret":"a-long-enough-secret"}"#,
        ),
        (
            Action::SettingsPut,
            r#"{"checkpoints":{"automatic":false}}"#,
        ),
        (Action::Create, ""),
    ] {
        let (status, answer) = call(&target, request("b", action.clone(), Caller::Admin, body));
        assert_eq!(
            failure(status, &answer),
            (409, "AGENT_FORKING"),
            "{action:?}: {answer}"
        );
    }
    let deadline = target.host().alarm.get().expect("the target set its alarm");
    target.host().clock.set(deadline);
    block_on(target.alarm()).unwrap();
    assert_eq!(
        tables(&target),
        Vec::<String>::new(),
        "no agent, no tombstone"
    );
    // The id never held an agent: a new fork into it is taken.
    let again = agent();
    create(&again, "a");
    again
        .host()
        .peers
        .borrow_mut()
        .push(("b".into(), target.clone()));
    write(&again, "/g.txt", "g");
    ok(&again, "a", Action::Fork, r#"{"to":"b"}"#);
    assert_eq!(read(&target, "b", "/g.txt")["content"], "g");
}

/// Only the deployment's admin token makes agents: an agent token holding
/// `admin` may not fork (another agent) nor create its own agent, and the
/// refusal names the admin token; it may still `PUT` its agent once it
/// exists.
#[test]
fn an_agent_token_may_not_make_agents() {
    let (source, target) = pair();
    write(&source, "/a.txt", "x");
    let admin_of_a = token("t", &[Scope::Admin, Scope::Read, Scope::Write]);
    let (status, answer) = call(
        &source,
        request("a", Action::Fork, admin_of_a.clone(), r#"{"to":"b"}"#),
    );
    assert_eq!(failure(status, &answer), (403, "FORBIDDEN"), "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains("admin token (API_TOKEN)"), "{message}");
    let (status, _) = call(
        &target,
        request("b", Action::Tool(Tool::Ls), Caller::Admin, "{}"),
    );
    assert_eq!(status, 404, "no agent was made");
    let (status, answer) = call(
        &target,
        request("b", Action::Create, admin_of_a.clone(), ""),
    );
    assert_eq!(failure(status, &answer), (403, "FORBIDDEN"), "{answer}");
    assert_eq!(tables(&target), Vec::<String>::new());
    let (status, answer) = call(&source, request("a", Action::Create, admin_of_a, ""));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["created"], false);
}

#[test]
fn a_fork_that_breaks_off_leaves_nothing_usable_and_resumes() {
    let (source, target) = pair();
    for i in 0..3 {
        write(&source, &format!("/f{i}.bin"), &noise(i, 3 << 20));
    }
    // The target fails to stage its second page (a page holds 8 chunks).
    target.host().db.fail_nth("INTO import_chunks", 9);
    let broken = call(
        &source,
        request("a", Action::Fork, Caller::Admin, r#"{"to":"b"}"#),
    );
    assert_eq!(
        failure(broken.0, &broken.1),
        (502, "FORK_FAILED"),
        "{}",
        broken.1
    );
    // Half copied: not usable.
    let (status, answer) = call(
        &target,
        request("b", Action::Tool(Tool::Ls), Caller::Admin, "{}"),
    );
    assert_eq!(failure(status, &answer), (409, "AGENT_FORKING"));
    // Asked again, it resumes and completes.
    let done = ok(&source, "a", Action::Fork, r#"{"to":"b"}"#);
    assert!(done["fork"]["pages"].as_u64().unwrap() >= 1, "{done}");
    let listed = ok(&target, "b", Action::Tool(Tool::Ls), "{}");
    assert_eq!(listed["entries"].as_array().unwrap().len(), 3, "{listed}");
}

#[test]
fn a_stalled_fork_is_dropped_by_the_targets_alarm() {
    let (source, target) = pair();
    write(&source, "/f.bin", &noise(9, 5 << 20));
    target.host().db.fail_nth("INTO import_chunks", 9);
    let broken = call(
        &source,
        request("a", Action::Fork, Caller::Admin, r#"{"to":"b"}"#),
    );
    assert_eq!(broken.0, 502, "{}", broken.1);
    let deadline = target.host().alarm.get().expect("the target set its alarm");
    target.host().clock.set(deadline);
    block_on(target.alarm()).unwrap();
    let (status, answer) = call(
        &target,
        request("b", Action::Tool(Tool::Ls), Caller::Admin, "{}"),
    );
    assert_eq!(failure(status, &answer), (404, "AGENT_NOT_FOUND"));
    let names = tables(&target);
    assert!(names.is_empty(), "the dropped fork left storage: {names:?}");
    assert_eq!(target.host().now_ms(), deadline);
}

#[test]
fn a_patch_applies_in_one_step_and_is_undone_in_one_step() {
    let agent = agent();
    create(&agent, "a");
    write(&agent, "/proj/main.py", "def main():\n    print(\"hi\")\n");
    write(&agent, "/proj/old.txt", "old\n");
    let patch = "*** Begin Patch\n*** Add File: proj/new.md\n+# New\n*** Update File: proj/main.py\n@@ def main():\n-    print(\"hi\")\n+    print(\"hello\")\n*** Delete File: proj/old.txt\n*** End Patch\n";
    let applied = ok(
        &agent,
        "a",
        Action::Tool(Tool::ApplyPatch),
        &json!({ "patch": patch }).to_string(),
    );
    assert_eq!(applied["files"].as_array().unwrap().len(), 3, "{applied}");
    assert!(applied["summary"].as_str().unwrap().starts_with("Success."));
    assert_eq!(read(&agent, "a", "/proj/new.md")["content"], "# New\n");
    let undone = ok(&agent, "a", Action::Undo, "{}");
    assert_eq!(
        undone["undone"]["checkpoint"]["operation"],
        "tool:apply_patch"
    );
    assert_eq!(read(&agent, "a", "/proj/new.md")["error"]["code"], "ENOENT");
    assert_eq!(read(&agent, "a", "/proj/old.txt")["content"], "old\n");
    assert_eq!(
        read(&agent, "a", "/proj/main.py")["content"],
        "def main():\n    print(\"hi\")\n"
    );
    // A hunk that does not apply changes nothing and says where it looked.
    let bad = "*** Begin Patch\n*** Update File: proj/main.py\n@@\n-    print(\"nope\")\n+    print(\"x\")\n*** End Patch\n";
    let (status, answer) = call(
        &agent,
        request(
            "a",
            Action::Tool(Tool::ApplyPatch),
            Caller::Admin,
            &json!({ "patch": bad }).to_string(),
        ),
    );
    assert_eq!(failure(status, &answer), (422, "EDIT_NO_MATCH"), "{answer}");
}

#[test]
fn a_failed_call_leaves_no_checkpoint_behind() {
    let agent = agent();
    create(&agent, "a");
    write(&agent, "/a.txt", "x");
    let count = || ok(&agent, "a", Action::Info, "")["usage"]["checkpoints"].clone();
    let before = count();
    for (tool, body) in [
        (
            Tool::Edit,
            r#"{"path":"/a.txt","edits":[{"old":"zzz","new":"y"}]}"#,
        ),
        (Tool::Mkdir, r#"{"path":"/a.txt"}"#),
        (Tool::Write, r#"{"path":"/a.txt/inner","content":"x"}"#),
    ] {
        let (status, _) = call(
            &agent,
            request("a", Action::Tool(tool), Caller::Admin, body),
        );
        assert!(status >= 400, "{tool:?} {body}");
    }
    let (status, _) = call(
        &agent,
        request(
            "a",
            Action::Restore,
            Caller::Admin,
            r#"{"checkpoint":1,"paths":["/a.txt/x"]}"#,
        ),
    );
    assert!(status >= 400);
    assert_eq!(count(), before, "a failed call kept a checkpoint");
}

/// A dry run writes nothing: it takes no checkpoint, makes no revision, and
/// its audit entry says it was a dry run.
#[test]
fn a_dry_run_takes_no_checkpoint_and_makes_no_revision() {
    let agent = agent();
    create(&agent, "a");
    write(&agent, "/a.txt", "one\n");
    let count = || ok(&agent, "a", Action::Info, "")["usage"]["checkpoints"].clone();
    // PUT of an existing agent answers its revision.
    let revision = || ok(&agent, "a", Action::Create, "")["revision"].clone();
    let (checkpoints, rev) = (count(), revision());
    let edit = r#"{"path":"/a.txt","edits":[{"old":"one","new":"two"}],"dry_run":true}"#;
    let shown = ok(&agent, "a", Action::Tool(Tool::Edit), edit);
    assert!(shown.get("checkpoint").is_none(), "{shown}");
    let patch = json!({
        "patch": "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+three\n*** End Patch\n",
        "dry_run": true,
    });
    ok(
        &agent,
        "a",
        Action::Tool(Tool::ApplyPatch),
        &patch.to_string(),
    );
    let entries = ok(&agent, "a", Action::Audit, "")["entries"].clone();
    assert_eq!(count(), checkpoints, "a dry run took a checkpoint");
    assert_eq!(revision(), rev, "a dry run made a revision");
    assert_eq!(read(&agent, "a", "/a.txt")["content"], "one\n");
    for (entry, action) in entries.as_array().unwrap()[..2]
        .iter()
        .zip(["apply_patch", "edit"])
    {
        assert_eq!(entry["action"], action, "{entry}");
        assert_eq!(entry["detail"], json!({ "dry_run": true }), "{entry}");
    }
    // The same edit for real takes its checkpoint.
    let real = r#"{"path":"/a.txt","edits":[{"old":"one","new":"two"}]}"#;
    ok(&agent, "a", Action::Tool(Tool::Edit), real);
    assert_ne!(count(), checkpoints);
}

#[test]
fn time_travel_works_over_the_socket_too() {
    use stead_agent::protocol::SocketState;
    use stead_agent::socket::Incoming;
    let agent = agent();
    create(&agent, "a");
    write(&agent, "/a.txt", "one\n");
    let socket = agent.host().accept(&SocketState {
        agent: "a".into(),
        caller: Caller::Admin,
        ..SocketState::default()
    });
    let say = |message: Value| {
        block_on(agent.socket_message(&socket, Incoming::Text(message.to_string())));
        socket.take().pop().expect("an answer")
    };
    let taken = say(json!({"type":"call","id":1,"tool":"checkpoint","args":{"name":"s"}}));
    assert_eq!(taken["result"]["checkpoint"]["name"], "s", "{taken}");
    write(&agent, "/a.txt", "two\n");
    let diff = say(json!({"type":"call","tool":"diff","args":{"from":"s"}}));
    assert_eq!(diff["result"]["entries"][0]["path"], "/a.txt", "{diff}");
    let undone = say(json!({"type":"call","tool":"undo","args":{}}));
    assert_eq!(undone["type"], "result", "{undone}");
    assert_eq!(read(&agent, "a", "/a.txt")["content"], "one\n");
    let restored = say(json!({"type":"call","tool":"restore","args":{"checkpoint":"s"}}));
    assert_eq!(restored["type"], "result", "{restored}");
}

/// A fork page that arrives only once `arrived` is set (or, with
/// `fails`, breaks off then): how a slow first page looks to the target.
struct SlowPage {
    arrived: Rc<std::cell::Cell<bool>>,
    fails: bool,
    bytes: Vec<u8>,
}

impl stead_agent::Body for SlowPage {
    fn declared_len(&self) -> Option<usize> {
        Some(self.bytes.len())
    }

    async fn read_into(
        &mut self,
        buffer: &mut Vec<u8>,
        max: usize,
    ) -> Result<usize, stead_agent::ApiError> {
        let arrived = self.arrived.clone();
        futures::future::poll_fn(|cx| match arrived.get() {
            true => std::task::Poll::Ready(()),
            false => {
                cx.waker().wake_by_ref();
                std::task::Poll::Pending
            }
        })
        .await;
        if self.fails {
            return Err(stead_agent::ApiError::InvalidRequest(
                "the connection broke off".into(),
            ));
        }
        let take = self.bytes.len().min(max);
        buffer.extend(self.bytes.drain(..take));
        Ok(take)
    }
}

/// The first page of a fork into agent `b`, still on its way.
fn first_page(fails: bool) -> (stead_agent::Request<SlowPage>, Rc<std::cell::Cell<bool>>) {
    let arrived = Rc::new(std::cell::Cell::new(false));
    let page = request("b", Action::ForkImport, Caller::Admin, "");
    let request = stead_agent::Request {
        entry: page.entry,
        agent: page.agent,
        action: page.action,
        caller: page.caller,
        query: vec![
            ("from".into(), "a".into()),
            ("checkpoint".into(), "1".into()),
        ],
        hook: page.hook,
        range: page.range,
        upgrade: page.upgrade,
        origin: page.origin,
        body: SlowPage {
            arrived: arrived.clone(),
            fails,
            bytes: b"not a page of any fork".to_vec(),
        },
    };
    (request, arrived)
}

/// While the first page of a fork is read, the new agent's storage exists
/// but holds nothing yet: a request then is told a fork is under way
/// (never shown an empty agent), and a first page that cannot be read or
/// staged leaves no agent behind.
#[test]
fn a_request_during_a_forks_first_page_is_told_the_fork_is_under_way() {
    use futures::FutureExt;
    for fails in [false, true] {
        let target = agent();
        let stat_root = || {
            call(
                &target,
                request(
                    "b",
                    Action::Tool(Tool::Stat),
                    Caller::Admin,
                    r#"{"path":"/"}"#,
                ),
            )
        };
        let (page, arrived) = first_page(fails);
        let mut import = Box::pin(target.dispatch(page));
        assert!(
            (&mut import).now_or_never().is_none(),
            "the page is on its way"
        );
        let (status, body) = stat_root();
        assert_eq!(failure(status, &body), (409, "AGENT_FORKING"), "{body}");
        arrived.set(true);
        let reply = block_on(import).unwrap_or_else(|error| stead_agent::Reply::error(&error));
        let stead_agent::Reply::Json { status, body, .. } = reply else {
            panic!("not a JSON reply");
        };
        assert!(
            status >= 400,
            "a page that is no page is refused: {status} {body}"
        );
        let (status, body) = stat_root();
        assert_eq!(failure(status, &body), (404, "AGENT_NOT_FOUND"), "{body}");
    }
}

/// Checkpoints know git: each names the commit every repository it pinned
/// was at (the workspace's root and the directories under it), diff names
/// both sides', and restoring a checkpoint puts `.git` back with the tree,
/// so git itself is back at that commit.
#[test]
fn checkpoints_name_the_commit_and_restore_it_with_the_tree() {
    let agent = agent();
    create(&agent, "a");
    exec(
        &agent,
        "mkdir app && cd app && git init -q -b main && echo v1 > f && git add f && git commit -qm one",
    );
    let first = exec(&agent, "cd app && git rev-parse HEAD")["stdout"]
        .as_str()
        .unwrap()
        .trim()
        .to_string();
    let made = ok(
        &agent,
        "a",
        Action::CheckpointCreate,
        r#"{"name":"at-one"}"#,
    );
    assert_eq!(
        made["checkpoint"]["git"],
        json!([{ "repo": "/app", "branch": "main", "commit": first }])
    );
    let second = exec(
        &agent,
        "cd app && echo v2 > f && git commit -qam two && git switch -qc topic && git rev-parse HEAD",
    );
    let second = second["stdout"].as_str().unwrap().trim().to_string();
    // The automatic checkpoints name the commit each was taken at: none
    // before the repository existed, the first one after.
    let listed = ok(&agent, "a", Action::Checkpoints, "");
    let automatic: Vec<&Value> = listed["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["kind"] == "automatic")
        .collect();
    assert_eq!(automatic.last().unwrap()["git"], json!([]), "{listed}");
    assert_eq!(automatic[0]["git"][0]["commit"], first.as_str(), "{listed}");
    let diff = ok(&agent, "a", Action::Diff, r#"{"from":"at-one"}"#);
    assert_eq!(diff["from"]["git"][0]["commit"], first.as_str(), "{diff}");
    assert_eq!(
        diff["to"]["git"],
        json!([{ "repo": "/app", "branch": "topic", "commit": second }])
    );
    let shown = ok(&agent, "a", Action::Checkpoint("at-one".into()), "");
    assert_eq!(shown["checkpoint"]["git"][0]["branch"], "main");
    // Restored: the tree and `.git` together, so git agrees with the files.
    ok(&agent, "a", Action::Restore, r#"{"checkpoint":"at-one"}"#);
    let after = exec(
        &agent,
        "cd app && git rev-parse HEAD && git branch --show-current && git status --porcelain && cat f && git log --format=%s && git branch",
    );
    assert_eq!(
        after["stdout"],
        format!("{first}\nmain\nv1\none\n* main\n"),
        "{after}"
    );
    // A workspace without git names none.
    let bare = stead_agent_without_git();
    assert_eq!(bare["checkpoint"]["git"], json!([]));
}

/// A checkpoint of a new workspace that has no repository.
fn stead_agent_without_git() -> Value {
    let agent = agent();
    create(&agent, "a");
    write(&agent, "/notes.md", "no git here\n");
    ok(&agent, "a", Action::CheckpointCreate, "{}")
}
