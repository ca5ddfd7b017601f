//! Computer jobs longer than one alarm, against a real `stead-computer`:
//! with the job slice made small, a detached command runs on in the
//! container while alarms come and go, each alarm reads its output on from
//! where the job's log ends, and the last one applies its changes. The
//! command survives an agent restart between alarms, can be cancelled
//! while no alarm follows it, and is reported lost when its computer goes
//! (between alarms, or as the command is sent).

mod common;

use common::*;
use serde_json::{json, Value};
use stead_agent::{Action, Agent};

/// A job slice short enough that the commands below outlast several.
const SLICE_MS: u64 = 400;

/// Prints six numbered lines over about 1.8 s, then writes a file.
const BUILD: &str = "for i in 1 2 3 4 5 6; do echo line $i; sleep 0.3; done; echo built > out.txt";

fn expected_output() -> String {
    (1..=6).map(|i| format!("line {i}\n")).collect()
}

fn setup() -> (
    Agent<FakeHost>,
    stead_harness::ComputerProcess,
    tempfile::TempDir,
) {
    let (agent, process, dir) = agent_with_computer();
    agent.host().job_slice_ms.set(SLICE_MS);
    (agent, process, dir)
}

fn queue(agent: &Agent<FakeHost>, command: &str) -> i64 {
    let body = json!({ "command": command, "backend": "computer", "detach": true });
    let queued = ok(agent, "a", Action::Exec, &body.to_string());
    queued["job"]["id"].as_i64().expect("a job id")
}

fn job(agent: &Agent<FakeHost>, id: i64) -> Value {
    ok(agent, "a", Action::Job(id), "")["job"].clone()
}

/// Runs alarms until job `id` ends (at most `max`); returns how many ran.
fn alarms_until_done(agent: &Agent<FakeHost>, id: i64, max: usize) -> usize {
    for n in 1..=max {
        block_on(agent.alarm()).expect("the alarm runs");
        if job(agent, id)["state"] != "running" {
            return n;
        }
        assert!(
            agent.host().alarm.get().is_some(),
            "a running job keeps the alarm armed"
        );
    }
    panic!("job {id} still runs after {max} alarms: {}", job(agent, id));
}

#[test]
fn a_computer_job_outlives_its_alarms_and_each_byte_arrives_once() {
    let (agent, _process, _dir) = setup();
    let id = queue(&agent, BUILD);

    block_on(agent.alarm()).unwrap();
    let first = job(&agent, id);
    assert_eq!(first["state"], "running", "{first}");
    assert_eq!(first["computer"]["alarms"], 1, "{first}");
    let partial = job_text(&agent, id);
    assert!(
        partial.starts_with("line 1\n") && partial.len() < expected_output().len(),
        "the first slice saw the start of the output: {partial:?}"
    );
    // Meanwhile the computer is the job's: a command for it waits its turn.
    let body = json!({ "command": "true", "backend": "computer" }).to_string();
    let (status, busy) = call(
        &agent,
        request("a", Action::Exec, stead_agent::auth::Caller::Admin, &body),
    );
    assert_eq!(failure(status, &busy), (409, "COMPUTER_BUSY"), "{busy}");

    let more = alarms_until_done(&agent, id, 30);
    assert!(more >= 2, "the command took several more alarms ({more})");
    let done = job(&agent, id);
    assert_eq!(
        (done["state"].clone(), done["exit_code"].clone()),
        (json!("succeeded"), json!(0)),
        "{done}"
    );
    assert_eq!(job_text(&agent, id), expected_output());
    assert!(
        done["computer"].is_null(),
        "an ended job runs nowhere: {done}"
    );
    let read = ok(
        &agent,
        "a",
        Action::Tool(stead_agent::Tool::Read),
        r#"{"path":"/out.txt"}"#,
    );
    assert_eq!(read["content"], "built\n");
    // The computer is free again.
    let (status, after) = call(
        &agent,
        request("a", Action::Exec, stead_agent::auth::Caller::Admin, &body),
    );
    assert_eq!(status, 200, "{after}");
}

#[test]
fn a_detached_command_survives_an_agent_restart_between_alarms() {
    let (agent, _process, _dir) = setup();
    let id = queue(&agent, BUILD);
    block_on(agent.alarm()).unwrap();
    assert_eq!(job(&agent, id)["state"], "running");

    // A new instance over the same storage, as after an eviction or deploy.
    let restarted = Agent::new(FakeHost::new(agent.host().db.clone()));
    *restarted.host().computer.borrow_mut() = agent.host().computer.borrow().clone();
    restarted.host().job_slice_ms.set(SLICE_MS);
    assert_eq!(
        job(&restarted, id)["state"],
        "running",
        "not failed as interrupted: it runs on"
    );
    alarms_until_done(&restarted, id, 30);
    let done = job(&restarted, id);
    assert_eq!(done["state"], "succeeded", "{done}");
    assert_eq!(job_text(&restarted, id), expected_output());
}

#[test]
fn cancelling_a_job_between_alarms_stops_its_command() {
    let (agent, _process, _dir) = setup();
    let id = queue(&agent, "echo started; sleep 30; echo never");
    block_on(agent.alarm()).unwrap();
    assert_eq!(job(&agent, id)["state"], "running");
    ok(&agent, "a", Action::JobCancel(id), "");
    alarms_until_done(&agent, id, 10);
    let done = job(&agent, id);
    assert_eq!(done["state"], "cancelled", "{done}");
    assert_eq!(job_text(&agent, id), "started\n");
}

#[test]
fn a_job_whose_computer_goes_away_between_alarms_is_lost() {
    let (agent, mut process, _dir) = setup();
    let id = queue(&agent, "echo started; sleep 30; echo never > never.txt");
    block_on(agent.alarm()).unwrap();
    assert_eq!(job(&agent, id)["state"], "running");
    process.restart();
    alarms_until_done(&agent, id, 5);
    let done = job(&agent, id);
    assert_eq!(done["state"], "failed", "{done}");
    assert!(
        done["error"]
            .as_str()
            .unwrap_or("")
            .contains("outcome is unknown"),
        "{done}"
    );
    let missing = call(
        &agent,
        request(
            "a",
            Action::Tool(stead_agent::Tool::Stat),
            stead_agent::auth::Caller::Admin,
            r#"{"path":"/never.txt"}"#,
        ),
    );
    assert_eq!(failure(missing.0, &missing.1), (404, "ENOENT"));
}

#[test]
fn a_job_whose_computer_is_lost_as_its_command_is_sent_fails_and_holds_nothing() {
    let (agent, _process, _dir) = setup();
    let transport = agent.host().computer.borrow().clone().unwrap();
    transport.break_next(Fault::Lost("/v1/exec"));
    let id = queue(&agent, "echo never > never.txt");
    alarms_until_done(&agent, id, 5);
    let done = job(&agent, id);
    assert_eq!(done["state"], "failed", "{done}");
    let error = done["error"].as_str().unwrap_or("");
    assert!(error.contains("may or may not have run"), "{done}");
    // Nothing holds the computer for it: the next job runs at once.
    let next = queue(&agent, "echo again");
    alarms_until_done(&agent, next, 10);
    assert_eq!(
        job(&agent, next)["state"],
        "succeeded",
        "{}",
        job(&agent, next)
    );
    assert_eq!(job_text(&agent, next), "again\n");
}
