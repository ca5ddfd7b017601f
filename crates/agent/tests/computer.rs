//! The computer driver against a real `stead-computer` process: sync both
//! ways, conflicts, cancel, and a failure at every step of the protocol,
//! after which the workspace is as it was and the next command works.

mod common;

use common::*;
use serde_json::{json, Value};
use stead_agent::auth::Caller;
use stead_agent::{Action, Agent, Tool};

fn exec(agent: &Agent<FakeHost>, command: &str) -> (u16, Value) {
    let body = json!({ "command": command, "backend": "computer" }).to_string();
    call(agent, request("a", Action::Exec, Caller::Admin, &body))
}

fn write(agent: &Agent<FakeHost>, path: &str, content: &str) {
    let body = json!({ "path": path, "content": content }).to_string();
    ok(agent, "a", Action::Tool(Tool::Write), &body);
}

fn read(agent: &Agent<FakeHost>, path: &str) -> Value {
    let body = json!({ "path": path }).to_string();
    call(
        agent,
        request("a", Action::Tool(Tool::Read), Caller::Admin, &body),
    )
    .1
}

fn revision(agent: &Agent<FakeHost>) -> i64 {
    ok(agent, "a", Action::Tool(Tool::Changes), r#"{"limit":1}"#)["revision"]
        .as_i64()
        .unwrap()
}

/// An agent with a real computer, and two files in its workspace.
fn setup() -> (
    Agent<FakeHost>,
    stead_harness::ComputerProcess,
    tempfile::TempDir,
) {
    let (agent, process, dir) = agent_with_computer();
    write(&agent, "/notes/plan.md", "step one\n");
    write(&agent, "/keep.txt", "kept\n");
    (agent, process, dir)
}

fn transport(agent: &Agent<FakeHost>) -> FaultyTransport {
    agent.host().computer.borrow().clone().unwrap()
}

#[test]
fn commands_see_the_workspace_and_their_changes_come_back() {
    let (agent, _process, _dir) = setup();
    let (status, result) = exec(
        &agent,
        "cat notes/plan.md && echo made > out.txt && mkdir -p build && printf x > build/a && rm keep.txt",
    );
    assert_eq!(status, 200, "{result}");
    assert_eq!(
        (result["status"].clone(), result["exit_code"].clone()),
        (json!("exited"), json!(0))
    );
    assert_eq!(result["stdout"], "step one\n");
    let mut changed: Vec<&str> = result["changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    changed.sort_unstable();
    assert_eq!(changed, ["/build", "/build/a", "/keep.txt", "/out.txt"]);
    assert_eq!(read(&agent, "/out.txt")["content"], "made\n");
    assert_eq!(read(&agent, "/keep.txt")["error"]["code"], "ENOENT");
    // Warm: only what changed since travels.
    write(&agent, "/notes/plan.md", "step two\n");
    let (_, warm) = exec(&agent, "cat notes/plan.md");
    assert_eq!(warm["stdout"], "step two\n");
    assert_eq!(warm["sync"]["sent"]["files"], 1, "{warm}");
    assert_eq!(warm["sync"]["sent"]["bytes"], 9);
}

#[test]
fn both_sides_changing_a_file_keeps_both_versions() {
    let (agent, _process, _dir) = setup();
    let command = async {
        let body = json!({
            "command": "sleep 1; echo container > notes/plan.md",
            "backend": "computer"
        });
        agent
            .dispatch(request("a", Action::Exec, Caller::Admin, &body.to_string()))
            .await
    };
    let meanwhile = async {
        pause(300).await;
        let body = json!({ "path": "/notes/plan.md", "content": "workspace\n" }).to_string();
        let written = agent
            .dispatch(request(
                "a",
                Action::Tool(Tool::Write),
                Caller::Admin,
                &body,
            ))
            .await;
        assert!(written.is_ok(), "{written:?}");
    };
    let (reply, ()) = block_on(futures::future::join(command, meanwhile));
    let stead_agent::Reply::Json { body: result, .. } = reply.unwrap() else {
        panic!("not JSON")
    };
    let conflicts = result["conflicts"].as_array().unwrap();
    assert_eq!(conflicts.len(), 1, "{result}");
    assert_eq!(conflicts[0]["path"], "/notes/plan.md");
    let copy = conflicts[0]["container_copy"].as_str().unwrap();
    assert_eq!(read(&agent, "/notes/plan.md")["content"], "workspace\n");
    assert_eq!(read(&agent, copy)["content"], "container\n");
}

#[test]
fn cancelling_a_job_stops_its_command_on_the_computer() {
    let (agent, _process, _dir) = setup();
    let queued = ok(
        &agent,
        "a",
        Action::Exec,
        r#"{"command":"echo started; sleep 30; echo finished","backend":"computer","detach":true}"#,
    );
    let id = queued["job"]["id"].as_i64().unwrap();
    let run = agent.alarm();
    let cancel = async {
        pause(700).await;
        agent
            .dispatch(request("a", Action::JobCancel(id), Caller::Admin, ""))
            .await
    };
    let (ran, cancelled) = block_on(futures::future::join(run, cancel));
    ran.unwrap();
    let stead_agent::Reply::Json {
        body: cancelled, ..
    } = cancelled.unwrap()
    else {
        panic!("not JSON")
    };
    assert_eq!(cancelled["job"]["cancel_requested"], true, "{cancelled}");
    let job = ok(&agent, "a", Action::Job(id), "")["job"].clone();
    assert_eq!(job["state"], "cancelled", "{job}");
    // Stopped, not run to its end: killed by a signal, before `finished`.
    assert!(job["exit_code"].as_i64().unwrap() > 128, "{job}");
    let text = job_text(&agent, id);
    assert_eq!(text, "started\n");
}

/// Breaks `fault`, runs a command that would change the workspace, and
/// checks the failure left the workspace as it was; then heals and checks
/// the next command works.
fn survives(fault: Fault) -> Value {
    let (agent, _process, _dir) = setup();
    let warm = exec(&agent, "true");
    assert_eq!(warm.0, 200, "{}", warm.1);
    write(&agent, "/notes/plan.md", "edited\n");
    let before = revision(&agent);
    transport(&agent).break_next(fault.clone());
    let (status, failed) = exec(&agent, "echo broken > notes/plan.md; echo new > new.txt");
    let unchanged = revision(&agent) == before
        && read(&agent, "/notes/plan.md")["content"] == "edited\n"
        && read(&agent, "/new.txt")["error"]["code"] == "ENOENT";
    assert!(
        unchanged,
        "{fault:?} changed the workspace: {status} {failed}"
    );
    let (next_status, next) = exec(&agent, "cat notes/plan.md");
    assert_eq!(next_status, 200, "after {fault:?}: {next}");
    assert_eq!(next["status"], "exited", "after {fault:?}: {next}");
    assert_eq!(
        next["stdout"], "edited\n",
        "after {fault:?}: the computer's copy is current"
    );
    json!({ "status": status, "failed": failed, "next": next })
}

#[test]
fn a_failed_status_or_push_changes_nothing() {
    for fault in [
        Fault::Refuse("/v1/status"),
        Fault::Refuse("/v1/sync/apply"),
        Fault::Cut("/v1/sync/apply", 3),
        Fault::Refuse("/v1/sync/chunks"),
    ] {
        let seen = survives(fault.clone());
        assert_eq!(seen["status"], 502, "{fault:?}: {seen}");
        assert_eq!(seen["failed"]["error"]["code"], "COMPUTER_FAILED");
    }
}

#[test]
fn a_command_lost_midway_changes_nothing_and_is_not_replayed() {
    for fault in [Fault::Refuse("/v1/exec"), Fault::Cut("/v1/exec", 10)] {
        let seen = survives(fault.clone());
        assert_eq!(seen["status"], 200, "{fault:?}: {seen}");
        assert_eq!(seen["failed"]["status"], "lost", "{fault:?}: {seen}");
        assert_eq!(seen["failed"]["exit_code"], Value::Null);
        // The next command started over with the whole workspace.
        assert!(
            seen["next"]["sync"]["sent"]["files"].as_u64().unwrap() >= 3,
            "{fault:?}: {seen}"
        );
    }
}

#[test]
fn a_failed_pull_leaves_the_changes_for_the_next_command() {
    let (agent, _process, _dir) = setup();
    exec(&agent, "true");
    transport(&agent).break_next(Fault::Refuse("/v1/chunks"));
    let before = revision(&agent);
    let (status, failed) = exec(&agent, "echo new > new.txt");
    assert_eq!(failure(status, &failed), (502, "COMPUTER_FAILED"));
    assert_eq!(revision(&agent), before, "nothing applied");
    // Unacknowledged, the container reports the change again next time.
    let (_, next) = exec(&agent, "true");
    assert_eq!(next["changed"], json!(["/new.txt"]), "{next}");
    assert_eq!(read(&agent, "/new.txt")["content"], "new\n");
}

#[test]
fn a_lost_acknowledgement_costs_only_a_harmless_repeat() {
    let (agent, _process, _dir) = setup();
    exec(&agent, "true");
    transport(&agent).break_next(Fault::Refuse("/v1/sync/ack"));
    let (_, first) = exec(&agent, "echo new > new.txt");
    assert_eq!(first["changed"], json!(["/new.txt"]));
    let after_first = revision(&agent);
    let (_, again) = exec(&agent, "true");
    assert!(again["conflicts"].as_array().unwrap().is_empty(), "{again}");
    assert_eq!(read(&agent, "/new.txt")["content"], "new\n");
    assert!(revision(&agent) >= after_first);
    let sent = transport(&agent).sent.borrow().clone();
    assert!(sent.iter().filter(|s| s.ends_with("/v1/sync/ack")).count() >= 3);
}
