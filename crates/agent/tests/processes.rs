//! Long-running processes through the agent, against a real
//! `stead-computer`: started after the workspace is pushed, their output in
//! their job's log as the alarm watches them, signalled and stopped, lost
//! when their computer goes away and started again on a fresh one by their
//! policy, with the workspace as it is then. Bad requests start nothing.

mod common;

use common::*;
use serde_json::{json, Value};
use stead_agent::auth::{Caller, Scope};
use stead_agent::{Action, Agent, Tool};

fn start(agent: &Agent<FakeHost>, body: Value) -> Value {
    let (status, answer) = call(
        agent,
        request("a", Action::ProcessStart, Caller::Admin, &body.to_string()),
    );
    assert_eq!(status, 201, "{answer}");
    answer["process"].clone()
}

fn get(agent: &Agent<FakeHost>, id: &str) -> Value {
    ok(agent, "a", Action::Process(id.into()), "")["process"].clone()
}

fn output(agent: &Agent<FakeHost>, id: &str) -> String {
    let page = ok(agent, "a", Action::ProcessOutput(id.into()), "");
    page["output"]
        .as_array()
        .expect("output pieces")
        .iter()
        .map(|p| p["data"].as_str().unwrap().to_string())
        .collect()
}

fn write(agent: &Agent<FakeHost>, path: &str, content: &str) {
    let body = json!({ "path": path, "content": content }).to_string();
    ok(agent, "a", Action::Tool(Tool::Write), &body);
}

#[test]
fn a_process_runs_its_output_reaches_its_log_and_a_stop_ends_it() {
    let (agent, _computer, _dir) = agent_with_computer();
    write(&agent, "/app/name.txt", "alpha\n");
    let started = start(
        &agent,
        json!({ "command": "cat name.txt; for i in 1 2 3; do echo tick $i; sleep 0.1; done; sleep 60",
                "cwd": "/app", "ports": [8000] }),
    );
    let id = started["id"].as_str().unwrap().to_string();
    assert_eq!(started["state"], "running", "{started}");
    assert!(started["pid"].as_u64().is_some());
    assert!(
        agent.host().alarm.get().is_some(),
        "the alarm watches a live process"
    );
    tick_until(&agent, "its output", || {
        output(&agent, &id).contains("tick 3")
    });
    assert_eq!(output(&agent, &id), "alpha\ntick 1\ntick 2\ntick 3\n");
    let job = get(&agent, &id)["job"].as_i64().unwrap();
    assert_eq!(
        job_text(&agent, job),
        output(&agent, &id),
        "the log is its job's"
    );

    let listed = ok(&agent, "a", Action::Processes, "");
    assert_eq!(listed["processes"][0]["id"], id.as_str());

    let stopped = ok(&agent, "a", Action::ProcessStop(id.clone()), "");
    let stopped = &stopped["process"];
    assert_eq!(
        (stopped["state"].clone(), stopped["stopped"].clone()),
        (json!("exited"), json!(true)),
        "{stopped}"
    );
    let job = ok(&agent, "a", Action::Job(job), "")["job"].clone();
    assert_eq!(job["state"], "cancelled", "stopped on request: {job}");
    assert!(
        !ok(&agent, "a", Action::Processes, "")["processes"][0]["state"].eq("running"),
        "nothing runs"
    );
    // A second delete forgets the ended process.
    ok(&agent, "a", Action::ProcessStop(id.clone()), "");
    let (status, gone) = call(&agent, request("a", Action::Process(id), Caller::Admin, ""));
    assert_eq!(failure(status, &gone), (404, "PROCESS_NOT_FOUND"));
}

#[test]
fn signals_reach_the_process() {
    let (agent, _computer, _dir) = agent_with_computer();
    let started = start(
        &agent,
        json!({ "command": "trap 'echo got hup' HUP; echo ready; while true; do sleep 0.1; done" }),
    );
    let id = started["id"].as_str().unwrap().to_string();
    tick_until(&agent, "ready", || output(&agent, &id).contains("ready"));
    let body = json!({ "signal": "HUP" }).to_string();
    ok(&agent, "a", Action::ProcessSignal(id.clone()), &body);
    tick_until(&agent, "the trap", || {
        output(&agent, &id).contains("got hup")
    });
    assert_eq!(get(&agent, &id)["state"], "running");
}

#[test]
fn the_agents_edits_reach_a_running_process() {
    let (agent, _computer, _dir) = agent_with_computer();
    write(&agent, "/site/page.txt", "old\n");
    let started = start(
        &agent,
        json!({
            "command": "echo watching; until grep -qx new page.txt; do sleep 0.1; done; echo saw new; sleep 60",
            "cwd": "/site",
        }),
    );
    let id = started["id"].as_str().unwrap().to_string();
    tick_until(&agent, "the watcher", || {
        output(&agent, &id).contains("watching")
    });
    write(&agent, "/site/page.txt", "new\n");
    tick_until(&agent, "the edit on the computer", || {
        output(&agent, &id).contains("saw new")
    });
    assert_eq!(get(&agent, &id)["state"], "running");
}

#[test]
fn a_lost_process_starts_again_on_a_fresh_computer_with_the_latest_files() {
    let (agent, mut computer, _dir) = agent_with_computer();
    write(&agent, "/site/version.txt", "v1\n");
    let keeps = start(
        &agent,
        json!({ "command": "cat version.txt; sleep 60", "cwd": "/site", "restart": "always" }),
    );
    let once = start(&agent, json!({ "command": "sleep 60" }));
    let (keeps, once) = (keeps["id"].as_str().unwrap(), once["id"].as_str().unwrap());
    tick_until(&agent, "v1", || output(&agent, keeps).contains("v1"));
    write(&agent, "/site/version.txt", "v2\n");

    computer.restart();
    tick_until(&agent, "the restart", || {
        get(&agent, keeps)["restarts"] == 1
    });
    tick_until(&agent, "v2", || output(&agent, keeps).contains("v2"));
    assert_eq!(
        output(&agent, keeps),
        "v1\nv2\n",
        "one log across computers"
    );
    assert_eq!(get(&agent, keeps)["state"], "running");
    let lost = get(&agent, once);
    assert_eq!(lost["state"], "lost", "{lost}");
    let job = ok(&agent, "a", Action::Job(lost["job"].as_i64().unwrap()), "")["job"].clone();
    assert_eq!(
        job["state"], "failed",
        "a lost process that never restarts ends its job: {job}"
    );
}

#[test]
fn a_process_outlives_an_agent_restart() {
    let (agent, _computer, _dir) = agent_with_computer();
    let started = start(&agent, json!({ "command": "echo up; sleep 60" }));
    let id = started["id"].as_str().unwrap().to_string();
    let restarted = Agent::new(FakeHost::new(agent.host().db.clone()));
    *restarted.host().computer.borrow_mut() = agent.host().computer.borrow().clone();
    let job = get(&restarted, &id)["job"].as_i64().unwrap();
    assert_eq!(
        ok(&restarted, "a", Action::Job(job), "")["job"]["state"],
        "running"
    );
    tick_until(&restarted, "its output", || {
        output(&restarted, &id).contains("up")
    });
}

#[test]
fn bad_requests_start_nothing() {
    let (agent, _computer, _dir) = agent_with_computer();
    let refused = |body: Value, status: u16, code: &str| {
        let (got, answer) = call(
            &agent,
            request("a", Action::ProcessStart, Caller::Admin, &body.to_string()),
        );
        assert_eq!(failure(got, &answer), (status, code), "{body}: {answer}");
    };
    refused(json!({ "command": " " }), 400, "INVALID_REQUEST");
    refused(
        json!({ "command": "x", "ports": [0] }),
        400,
        "INVALID_REQUEST",
    );
    refused(
        json!({ "command": "x", "ports": [70000] }),
        400,
        "INVALID_REQUEST",
    );
    refused(
        json!({ "command": "x", "ports": [3000, 3000] }),
        400,
        "INVALID_REQUEST",
    );
    refused(
        json!({ "command": "x", "ports": [8080] }),
        400,
        "INVALID_REQUEST",
    );
    refused(
        json!({ "command": "x", "restart": "sometimes" }),
        400,
        "INVALID_REQUEST",
    );
    refused(
        json!({ "command": "x", "env": { "A=B": "1" } }),
        400,
        "INVALID_REQUEST",
    );
    refused(json!({ "command": "x", "cwd": "/missing" }), 404, "ENOENT");
    // A system name of the computer is refused before anything is sent,
    // whether the workspace has a folder of that name or not.
    refused(
        json!({ "command": "x", "cwd": "/tmp" }),
        400,
        "INVALID_REQUEST",
    );
    ok(
        &agent,
        "a",
        Action::Tool(Tool::Mkdir),
        r#"{"path":"/etc/app","parents":true}"#,
    );
    refused(
        json!({ "command": "x", "cwd": "/etc/app" }),
        400,
        "INVALID_REQUEST",
    );
    assert!(
        !agent
            .host()
            .computer
            .borrow()
            .as_ref()
            .unwrap()
            .sent
            .borrow()
            .iter()
            .any(|sent| sent.contains("/v1/processes")),
        "nothing was started"
    );
    refused(
        json!({ "command": "x", "bogus": true }),
        400,
        "INVALID_REQUEST",
    );
    let shell_only = token("t", &[Scope::ExecShell, Scope::Read]);
    let (status, answer) = call(
        &agent,
        request(
            "a",
            Action::ProcessStart,
            shell_only,
            &json!({ "command": "sleep 1" }).to_string(),
        ),
    );
    assert_eq!(failure(status, &answer), (403, "FORBIDDEN"));
    assert_eq!(
        ok(&agent, "a", Action::Processes, "")["processes"],
        json!([]),
        "nothing was recorded"
    );
    let sent = agent
        .host()
        .computer
        .borrow()
        .clone()
        .unwrap()
        .sent
        .borrow()
        .clone();
    assert!(
        !sent.iter().any(|s| s.contains("/v1/processes")),
        "nothing reached the computer: {sent:?}"
    );

    let started = start(&agent, json!({ "command": "sleep 60" }));
    let id = started["id"].as_str().unwrap().to_string();
    let body = json!({ "signal": "SIGNOPE" }).to_string();
    let (status, answer) = call(
        &agent,
        request("a", Action::ProcessSignal(id.clone()), Caller::Admin, &body),
    );
    assert_eq!(failure(status, &answer), (400, "INVALID_REQUEST"));
    let (status, answer) = call(
        &agent,
        request(
            "a",
            Action::ProcessSignal("p-nope".into()),
            Caller::Admin,
            r#"{"signal":"TERM"}"#,
        ),
    );
    assert_eq!(failure(status, &answer), (404, "PROCESS_NOT_FOUND"));
    let mut stop = request("a", Action::ProcessStop(id.clone()), Caller::Admin, "");
    stop.query = vec![("grace_ms".into(), "999999999".into())];
    let (status, answer) = call(&agent, stop);
    assert_eq!(failure(status, &answer), (400, "INVALID_REQUEST"));
    assert_eq!(get(&agent, &id)["state"], "running", "still running");
}

fn read(agent: &Agent<FakeHost>, path: &str) -> Option<String> {
    let body = json!({ "path": path }).to_string();
    let (status, answer) = call(
        agent,
        request("a", Action::Tool(Tool::Read), Caller::Admin, &body),
    );
    (status == 200).then(|| answer["content"].as_str().unwrap().to_string())
}

fn live_status(agent: &Agent<FakeHost>) -> Value {
    stead_agent::computer::live::status(&agent.host().db).unwrap()
}

#[test]
fn files_a_process_writes_come_back_while_it_runs_a_bounded_report_at_a_time() {
    let (agent, _computer, _dir) = agent_with_computer();
    let count = 2 * stead_agent::computer::live::BATCH + 500;
    start(
        &agent,
        json!({
            "command": format!(
                "mkdir -p out; i=1; while [ $i -le {count} ]; do echo $i > out/f$i; i=$((i+1)); done; \
                 echo done > out.flag; sleep 60"
            ),
        }),
    );
    tick_until(&agent, "every file in the workspace", || {
        read(&agent, "/out.flag").is_some()
            && live_status(&agent)["files"].as_u64() >= Some(count as u64 + 2)
    });
    for i in [1, count / 2, count] {
        assert_eq!(read(&agent, &format!("/out/f{i}")), Some(format!("{i}\n")));
    }
    let status = live_status(&agent);
    let limit = status["report_limit"].as_u64().unwrap();
    assert!(
        status["largest_report"].as_u64().unwrap() <= limit,
        "no report beyond the limit: {status}"
    );
    assert!(
        status["pulls"].as_u64().unwrap() >= (count as u64).div_ceil(limit),
        "{status}"
    );
    assert_eq!(status["last_error"], Value::Null, "{status}");
}

#[test]
fn a_file_both_sides_change_keeps_the_workspaces_version_and_the_conflict_is_reported() {
    let (agent, _computer, dir) = agent_with_computer();
    write(&agent, "/shared.txt", "first\n");
    start(
        &agent,
        json!({
            "command": "until [ -f go ]; do sleep 0.05; done; echo computer > shared.txt; sleep 60",
        }),
    );
    write(&agent, "/go", "");
    // One tick pushes `/go`; the computer then writes, and the agent edits
    // the same file before the next tick pulls.
    block_on(agent.alarm()).expect("the alarm runs");
    let on_disk = dir.path().join("workspaces/a/shared.txt");
    for _ in 0..100 {
        if std::fs::read_to_string(&on_disk).is_ok_and(|text| text == "computer\n") {
            break;
        }
        block_on(pause(50));
    }
    assert_eq!(std::fs::read_to_string(&on_disk).unwrap(), "computer\n");
    write(&agent, "/shared.txt", "agent\n");
    tick_until(&agent, "the conflict", || {
        !live_status(&agent)["conflicts"]
            .as_array()
            .unwrap()
            .is_empty()
    });
    assert_eq!(read(&agent, "/shared.txt").as_deref(), Some("agent\n"));
    let status = live_status(&agent);
    let conflict = &status["conflicts"][0];
    assert_eq!(conflict["path"], "/shared.txt", "{status}");
    let copy = conflict["container_copy"].as_str().unwrap();
    assert_eq!(read(&agent, copy).as_deref(), Some("computer\n"));
    // The workspace's version then goes to the computer.
    tick_until(&agent, "the workspace's version on the computer", || {
        std::fs::read_to_string(&on_disk).is_ok_and(|text| text == "agent\n")
    });
}

#[test]
fn an_edit_while_a_process_runs_brings_the_alarm_forward_once() {
    let (agent, _computer, _dir) = agent_with_computer();
    write(&agent, "/before.txt", "no process yet\n");
    assert_eq!(agent.host().alarm.get(), None, "nothing to push to");
    start(&agent, json!({ "command": "sleep 60" }));
    block_on(agent.alarm()).expect("the alarm runs");
    let now = agent.host().clock.get();
    let tick = agent.host().alarm.get().expect("the next tick");
    assert_eq!(tick, now + 500, "a tick while nothing changed");
    write(&agent, "/edit.txt", "one\n");
    let hastened = agent.host().alarm.get().unwrap();
    assert_eq!(hastened, now + 100, "the edit is pushed soon");
    // More edits do not put it off.
    agent.host().advance(50);
    write(&agent, "/edit.txt", "two\n");
    assert_eq!(agent.host().alarm.get(), Some(hastened));
    // Once pushed, the ticks go back to their pace.
    agent.host().advance(50);
    block_on(agent.alarm()).expect("the alarm runs");
    assert_eq!(agent.host().alarm.get(), Some(now + 100 + 500));
    let pushed = agent.host().alarm.get();
    ok(
        &agent,
        "a",
        Action::Tool(Tool::Read),
        r#"{"path":"/edit.txt"}"#,
    );
    assert_eq!(agent.host().alarm.get(), pushed, "a read changes nothing");
}
