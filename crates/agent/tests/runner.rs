//! The alarm loop and the job runner: what runs when, retries, restarts,
//! and failures that must end on the record.

mod common;

use common::*;
use serde_json::{json, Value};
use stead_agent::auth::Caller;
use stead_agent::{Action, Agent, Host};
use stead_sql::{params, Sql};

fn job(agent: &Agent<FakeHost>, id: i64) -> Value {
    ok(agent, "a", Action::Job(id), "")["job"].clone()
}

fn runs(agent: &Agent<FakeHost>, schedule: &str) -> Vec<Value> {
    let mut runs = ok(agent, "a", Action::Schedule(schedule.into()), "")["runs"]
        .as_array()
        .unwrap()
        .clone();
    runs.reverse(); // oldest first
    runs
}

#[test]
fn a_detached_exec_runs_on_the_alarm_and_keeps_its_output() {
    let agent = agent();
    create(&agent, "a");
    assert_eq!(agent.host().alarm.get(), None, "nothing due yet");
    let queued = ok(
        &agent,
        "a",
        Action::Exec,
        r#"{"command":"echo out; echo err >&2; exit 3","detach":true}"#,
    );
    let id = queued["job"]["id"].as_i64().unwrap();
    assert_eq!(queued["job"]["state"], "queued");
    assert_eq!(agent.host().alarm.get(), Some(agent.host().now_ms()));
    block_on(agent.alarm()).unwrap();
    let done = job(&agent, id);
    assert_eq!(
        (done["state"].clone(), done["exit_code"].clone()),
        (json!("failed"), json!(3))
    );
    let text = job_text(&agent, id);
    assert_eq!(text, "out\nerr\n");
    assert_eq!(
        agent.host().alarm.get(),
        None,
        "nothing left: the alarm is cleared"
    );
}

#[test]
fn one_alarm_runs_a_bounded_batch_and_rearms_for_the_rest() {
    let agent = agent();
    create(&agent, "a");
    for _ in 0..60 {
        ok(
            &agent,
            "a",
            Action::Exec,
            r#"{"command":"true","detach":true}"#,
        );
    }
    block_on(agent.alarm()).unwrap();
    let states: Vec<String> = ok(&agent, "a", Action::Jobs, "")["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["state"].as_str().unwrap().to_string())
        .collect();
    let queued = states.iter().filter(|s| *s == "queued").count();
    assert_eq!(queued, 10, "{states:?}");
    assert_eq!(agent.host().alarm.get(), Some(agent.host().now_ms()));
    block_on(agent.alarm()).unwrap();
    assert_eq!(agent.host().alarm.get(), None);
}

#[test]
fn a_failing_schedule_is_retried_with_backoff_then_given_up() {
    let agent = agent();
    create(&agent, "a");
    ok(
        &agent,
        "a",
        Action::SchedulePut("flaky".into()),
        r#"{"delay_ms":1000,"exec":{"command":"exit 1"},"max_attempts":3,"retry_delay_ms":500}"#,
    );
    let start = agent.host().now_ms();
    assert_eq!(agent.host().alarm.get(), Some(start + 1000));
    // The alarm may come late or early; only due work runs.
    block_on(agent.alarm()).unwrap();
    assert!(runs(&agent, "flaky").is_empty(), "ran before it was due");
    let mut expected_wakes = vec![start + 1000 + 500, start + 1000 + 500 + 1000];
    agent.host().advance(1000);
    block_on(agent.alarm()).unwrap();
    while let Some(wake) = expected_wakes.first().copied() {
        assert_eq!(agent.host().alarm.get(), Some(wake), "backoff doubles");
        agent.host().clock.set(wake);
        block_on(agent.alarm()).unwrap();
        expected_wakes.remove(0);
    }
    let runs = runs(&agent, "flaky");
    let attempts: Vec<(i64, &str)> = runs
        .iter()
        .map(|r| (r["attempt"].as_i64().unwrap(), r["state"].as_str().unwrap()))
        .collect();
    assert_eq!(attempts, vec![(1, "failed"), (2, "failed"), (3, "failed")]);
    assert_eq!(
        agent.host().alarm.get(),
        None,
        "given up after max_attempts"
    );
}

#[test]
fn a_restart_fails_the_running_job_and_retries_the_interrupted_run() {
    let agent = agent();
    create(&agent, "a");
    ok(
        &agent,
        "a",
        Action::SchedulePut("nightly".into()),
        r#"{"delay_ms":0,"exec":{"command":"true"},"max_attempts":2,"retry_delay_ms":100}"#,
    );
    // The run is taken and its job started, then the instance dies: mimic
    // it by doing the first half of a run by hand.
    let db = agent.host().db.clone();
    let schedules = stead_scheduler::Schedules::new(&db);
    let ticket = schedules
        .take_due(agent.host().now_ms())
        .unwrap()
        .expect("due");
    let jobs = stead_scheduler::Jobs::new(&db);
    let job = jobs
        .create(
            &stead_scheduler::NewJob {
                source: "schedule:nightly".into(),
                backend: stead_scheduler::Backend::Shell,
                request: json!({"command":"true"}),
            },
            agent.host().now_ms(),
        )
        .unwrap();
    schedules.set_job(&ticket, job.id).unwrap();
    jobs.claim(job.id, agent.host().now_ms()).unwrap();
    // A new instance on the same storage.
    let restarted = Agent::new(FakeHost::new(db));
    restarted.host().clock.set(agent.host().now_ms());
    let cut_off = ok(&restarted, "a", Action::Job(job.id), "")["job"].clone();
    assert_eq!(cut_off["state"], "failed");
    assert!(cut_off["error"].as_str().unwrap().contains("interrupted"));
    let first = runs(&restarted, "nightly");
    assert_eq!(first[0]["state"], "interrupted");
    // The retry runs on a later alarm, and succeeds.
    restarted.host().advance(100);
    block_on(restarted.alarm()).unwrap();
    let after = runs(&restarted, "nightly");
    assert_eq!(after.len(), 2);
    assert_eq!(
        (after[1]["attempt"].clone(), after[1]["state"].clone()),
        (json!(2), json!("succeeded"))
    );
}

#[test]
fn a_run_whose_job_cannot_be_finished_ends_failed_not_running() {
    let agent = agent();
    create(&agent, "a");
    ok(
        &agent,
        "a",
        Action::SchedulePut("once".into()),
        r#"{"delay_ms":0,"exec":{"command":"true"}}"#,
    );
    // Recording the job's end fails once.
    agent.host().db.fail_once("UPDATE jobs SET state = ?");
    block_on(agent.alarm()).unwrap();
    let runs = runs(&agent, "once");
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["state"], "failed", "{runs:?}");
    assert!(runs[0]["error"].as_str().is_some_and(|e| !e.is_empty()));
}

#[test]
fn an_agent_without_a_recorded_name_never_borrows_a_nameless_computer() {
    let agent = agent();
    create(&agent, "a");
    agent
        .host()
        .db
        .execute("DELETE FROM agent_name", params![])
        .unwrap();
    let queued = ok(
        &agent,
        "a",
        Action::Exec,
        r#"{"command":"uname","backend":"computer","detach":true}"#,
    );
    block_on(agent.alarm()).unwrap();
    let done = job(&agent, queued["job"]["id"].as_i64().unwrap());
    assert_eq!(done["state"], "failed");
    assert!(
        done["error"].as_str().unwrap().contains("INTERNAL"),
        "{done}"
    );
    assert!(
        agent.host().computers_asked.borrow().is_empty(),
        "asked for computers {:?}",
        agent.host().computers_asked.borrow()
    );
}

#[test]
fn webhook_schedules_post_signed_bodies_and_retry_failures() {
    let agent = agent();
    create(&agent, "a");
    agent.host().names.borrow_mut().push((
        "example.test".into(),
        vec!["93.184.215.14".parse().unwrap()],
    ));
    let created = ok(
        &agent,
        "a",
        Action::SchedulePut("ping".into()),
        r#"{"delay_ms":0,"webhook":{"url":"https://example.test/hook","body":{"hello":1}},
            "max_attempts":2,"retry_delay_ms":10}"#,
    );
    let secret = created["webhook_secret"].as_str().unwrap().to_string();
    agent.host().answers.borrow_mut().push_back(Ok(503));
    block_on(agent.alarm()).unwrap();
    agent.host().advance(10);
    block_on(agent.alarm()).unwrap();
    let posted = agent.host().posted.borrow().clone();
    assert_eq!(posted.len(), 2);
    let header = |name: &str| {
        posted[1]
            .headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .unwrap()
    };
    let timestamp: i64 = header("x-stead-timestamp").parse().unwrap();
    assert_eq!(
        header("x-stead-signature"),
        stead_scheduler::signing::signature(&secret, timestamp, posted[1].body.as_bytes())
    );
    let body: Value = serde_json::from_str(&posted[1].body).unwrap();
    assert_eq!(
        (body["schedule"].clone(), body["attempt"].clone()),
        (json!("ping"), json!(2))
    );
    let runs = runs(&agent, "ping");
    assert_eq!(
        (runs[0]["state"].clone(), runs[0]["status"].clone()),
        (json!("failed"), json!(503))
    );
    assert_eq!(runs[1]["state"], "succeeded");
}

#[test]
fn the_alarm_of_a_deleted_agent_does_nothing() {
    let agent = agent();
    create(&agent, "a");
    ok(
        &agent,
        "a",
        Action::Exec,
        r#"{"command":"true","detach":true}"#,
    );
    let (status, _) = call(&agent, request("a", Action::Delete, Caller::Admin, ""));
    assert_eq!(status, 200);
    assert_eq!(agent.host().alarm.get(), None);
    block_on(agent.alarm()).unwrap();
    let (status, _) = call(&agent, request("a", Action::Jobs, Caller::Admin, ""));
    assert_eq!(status, 404);
}

#[test]
fn webhooks_never_reach_the_network_the_agent_runs_in() {
    let agent = agent();
    create(&agent, "a");
    agent.host().names.borrow_mut().extend([
        (
            "inside.example".to_string(),
            vec!["10.0.0.5".parse().unwrap()],
        ),
        (
            "mixed.example".to_string(),
            vec!["1.1.1.1".parse().unwrap(), "::1".parse().unwrap()],
        ),
        (
            "public.example".to_string(),
            vec!["93.184.215.14".parse().unwrap()],
        ),
    ]);
    let put = |url: &str| {
        let body = json!({"delay_ms": 0, "webhook": {"url": url}}).to_string();
        call(
            &agent,
            request("a", Action::SchedulePut("w".into()), Caller::Admin, &body),
        )
    };
    for url in [
        "http://127.0.0.1:8080/",
        "http://localhost/",
        "http://[::1]/",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.1.2.3/",
        "http://192.168.0.1/",
        "http://[fd00::1]/",
        "http://2130706433/",
        "http://inside.example/",
        "http://mixed.example/",
        "http://unknown.example/",
        "file:///etc/passwd",
        "ftp://public.example/",
    ] {
        let (status, body) = put(url);
        assert_eq!(
            failure(status, &body),
            (400, "WEBHOOK_TARGET_REFUSED"),
            "{url}: {body}"
        );
    }
    let (status, body) = put("https://public.example/hook");
    assert_eq!(status, 201, "a new schedule: {body}");
    // The name moves inside after the schedule was stored: the call is
    // refused, on the record, and nothing is sent.
    agent.host().names.borrow_mut()[2].1 = vec!["127.0.0.1".parse().unwrap()];
    block_on(agent.alarm()).unwrap();
    assert!(agent.host().posted.borrow().is_empty());
    let runs = ok(&agent, "a", Action::Schedule("w".into()), "")["runs"].clone();
    assert_eq!(runs[0]["state"], "failed");
    assert!(
        runs[0]["error"].as_str().unwrap().contains("refused"),
        "{runs}"
    );
}

#[test]
fn private_webhook_targets_are_a_local_development_opt_in() {
    let agent = agent();
    create(&agent, "a");
    let allow = r#"{"webhooks":{"allow_private_targets":true}}"#;
    let (status, body) = call(
        &agent,
        request("a", Action::SettingsPut, Caller::Admin, allow),
    );
    assert_eq!(status, 400, "refused outside local development: {body}");
    agent.host().local.set(true);
    ok(&agent, "a", Action::SettingsPut, allow);
    let body = json!({"delay_ms": 0, "webhook": {"url": "http://127.0.0.1:9/hook"}}).to_string();
    ok(&agent, "a", Action::SchedulePut("w".into()), &body);
    agent.host().answers.borrow_mut().push_back(Ok(302));
    block_on(agent.alarm()).unwrap();
    assert_eq!(agent.host().posted.borrow().len(), 1);
    let runs = ok(&agent, "a", Action::Schedule("w".into()), "")["runs"].clone();
    assert!(
        runs[0]["error"]
            .as_str()
            .unwrap()
            .contains("redirects are not followed"),
        "{runs}"
    );
}
