//! The `Computer` object's decisions (`stead_agent::computer::owner`) on a
//! fake container host: starts, retries, replacements, the heartbeat and
//! the idle release, port forwarding and local development, asserted on
//! what the platform was asked to do and on the answers.

mod fake;

use std::future::Future;
use std::pin::Pin;

use fake::{Event, FakeAnswer, FakeContainers, Next};
use futures::executor::block_on;
use serde_json::{json, Value};
use stead_agent::computer::owner::{
    Alarmed, Call, HeaderList, Hop, Owner, Provider, Reply, SendError, HEARTBEAT_MS, PORT,
    START_TRIES, TRY_MS,
};
use stead_agent::egress_gate::Plan;
use stead_agent::HostError;
use stead_sync::owner::{POLL_PATH, STATE_PATH, STOP_PATH};

fn call(method: &str, path: &str) -> Call {
    let (path, query) = match path.split_once('?') {
        Some((path, query)) => (path, Some(query.to_string())),
        None => (path, None),
    };
    let headers = [
        (stead_sync::IDLE_HEADER, "60000"),
        (stead_sync::CONTAINER_HEADER, "alice"),
        ("content-type", "application/json"),
        ("x-stead-caller", "admin"),
        ("accept", "*/*"),
    ];
    Call {
        method: method.to_string(),
        path: path.to_string(),
        query,
        headers: headers
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .to_vec(),
        body: b"{}".to_vec(),
        plan: Ok(Plan::default()),
    }
}

fn post(path: &str) -> Call {
    call("POST", path)
}

fn get(path: &str) -> Call {
    call("GET", path)
}

/// What the owner answered, as a status and JSON body.
fn ask(owner: &Owner<FakeContainers>, call: &Call) -> (u16, Value) {
    match block_on(owner.fetch(call, &())).expect("answered") {
        Reply::Passed(FakeAnswer { status, body }) | Reply::Json { status, body } => {
            (status, serde_json::from_slice(&body).expect("JSON"))
        }
    }
}

fn code(answer: &(u16, Value)) -> (u16, &str) {
    let code = answer.1["error"]["code"].as_str().unwrap_or("none");
    (answer.0, code)
}

fn owner() -> (Owner<FakeContainers>, FakeContainers) {
    let fake = FakeContainers::new();
    (Owner::new(fake.clone()), fake)
}

fn state(owner: &Owner<FakeContainers>) -> Value {
    ask(owner, &get(STATE_PATH)).1
}

#[test]
fn a_first_request_starts_a_container_with_its_plan_and_sets_the_heartbeat() {
    let (owner, fake) = owner();
    let mut plan_call = post("/v1/sync/plan");
    plan_call.plan = Ok(Plan {
        internet: false,
        intercept: vec!["api.example".into()],
        intercept_https: vec!["api.example".into()],
        all: true,
    });
    let answer = ask(&owner, &plan_call);
    assert_eq!(answer.0, 200);
    assert_eq!(answer.1["instance"], "instance-1");
    let Event::Start {
        internet,
        intercept,
        agent,
        ..
    } = &fake.events()[0]
    else {
        panic!("started first: {:?}", fake.events());
    };
    assert_eq!((*internet, agent.as_str()), (false, "alice"));
    assert_eq!(intercept, &["api.example".to_string()]);
    assert_eq!(fake.alarms(), [Event::Alarm(HEARTBEAT_MS)]);
    // A second request reuses it, and sets no second alarm (the alarm
    // re-sets itself), and a use a second later writes no storage.
    let saves = fake.saves();
    fake.now.set(fake.now.get() + 1_000);
    assert_eq!(
        ask(&owner, &post("/v1/sync/plan")).1["instance"],
        "instance-1"
    );
    assert_eq!(fake.starts(), ["instance-1"]);
    assert_eq!(fake.alarms().len(), 1);
    assert_eq!(
        fake.saves(),
        saves,
        "only the last use moved, by less than a heartbeat"
    );
    let state = state(&owner);
    assert_eq!(state["state"], "running");
    assert_eq!(state["last_used_ms"], fake.now.get());
    assert_eq!(state["idle_deadline_ms"], fake.now.get() + 60_000);
}

#[test]
fn a_cold_container_is_tried_until_it_answers() {
    let (owner, fake) = owner();
    fake.cold_tries.set(7);
    assert_eq!(ask(&owner, &post("/v1/sync/plan")).0, 200);
    assert_eq!(fake.sleeps.get(), 7);
    assert_eq!(fake.starts().len(), 1, "waited for, not replaced");
    let tried = fake
        .sent()
        .iter()
        .filter(|(hop, _)| *hop == Hop::Container { port: PORT })
        .count();
    assert_eq!(tried, 8);
}

#[test]
fn a_container_that_dies_while_starting_is_replaced() {
    let (owner, fake) = owner();
    fake.die_while_starting.set(2);
    let answer = ask(&owner, &post("/v1/sync/plan"));
    assert_eq!(answer.0, 200);
    assert_eq!(answer.1["instance"], "instance-3", "answered by the third");
    assert_eq!(fake.starts(), ["instance-1", "instance-2", "instance-3"]);
    assert_eq!(fake.sleeps.get(), 2);
    assert!(fake.destroys().is_empty(), "a dead one needs no destroy");
    // The record names the one that runs.
    assert_eq!(state(&owner)["state"], "running");
    let secret = fake.storage.borrow().as_ref().unwrap()["secret"].clone();
    assert!(secret.as_str().unwrap().ends_with('3'), "{secret}");
}

#[test]
fn a_container_that_never_answers_is_given_up_after_the_start_tries() {
    let (owner, fake) = owner();
    fake.cold_tries.set(u32::MAX);
    let failed = block_on(owner.fetch(&post("/v1/sync/plan"), &()));
    assert!(failed.is_err());
    assert_eq!(fake.sleeps.get(), START_TRIES);
    assert_eq!(fake.starts().len(), 1);
    assert_eq!(
        fake.now.get(),
        1_000_000 + i64::from(START_TRIES) * TRY_MS as i64
    );
}

#[test]
fn an_exec_whose_container_dies_once_it_arrived_is_lost_and_given_to_no_other() {
    let (owner, fake) = owner();
    // The round before it: the status (and the push) reached instance-1.
    assert_eq!(ask(&owner, &get("/v1/status")).1["instance"], "instance-1");
    *fake.dies_on.borrow_mut() = Some("/v1/exec".into());
    let lost = ask(&owner, &post("/v1/exec"));
    assert_eq!(code(&lost), (503, "COMPUTER_LOST"));
    let message = lost.1["error"]["message"].as_str().unwrap();
    assert!(message.contains("may or may not have run"), "{message}");
    assert_eq!(fake.received_by("/v1/exec"), ["instance-1"]);
    assert_eq!(fake.starts(), ["instance-1"], "no replacement for it");
    assert_eq!(fake.sleeps.get(), 1, "one look: it had died");
    let stored = fake.storage.borrow().clone().unwrap();
    assert_eq!(stored["secret"], Value::Null, "the dead one is forgotten");
    assert_eq!(stored["released"], false, "lost, not released");
    assert_eq!(state(&owner)["state"], "stopped");
    // The next round gets a fresh computer; the command was not replayed.
    assert_eq!(ask(&owner, &get("/v1/status")).1["instance"], "instance-2");
    assert_eq!(fake.received_by("/v1/exec"), ["instance-1"]);
}

#[test]
fn an_exec_planned_for_a_container_that_died_reaches_the_replacement_named_and_is_refused() {
    let (owner, fake) = owner();
    // The round before it: the status (and the push) reached instance-1,
    // which then died.
    assert_eq!(ask(&owner, &get("/v1/status")).1["instance"], "instance-1");
    fake.kill();
    let param = stead_sync::EXEC_INSTANCE_PARAM;
    let stale = ask(&owner, &post(&format!("/v1/exec?{param}=instance-1")));
    assert_eq!(code(&stale), (409, "STALE_INSTANCE"), "{stale:?}");
    assert_eq!(fake.starts(), ["instance-1", "instance-2"]);
    let exec_urls: Vec<String> = fake.sent().into_iter().map(|(_, url)| url).collect();
    assert!(
        exec_urls.contains(&format!("http://container/v1/exec?{param}=instance-1")),
        "the query went with it: {exec_urls:?}"
    );
    // Planned again on the one that answers now, it runs there.
    assert_eq!(ask(&owner, &get("/v1/status")).1["instance"], "instance-2");
    let ran = ask(&owner, &post(&format!("/v1/exec?{param}=instance-2")));
    assert_eq!(
        ran,
        (200, json!({"path": "/v1/exec", "instance": "instance-2"}))
    );
    assert_eq!(
        fake.starts(),
        ["instance-1", "instance-2"],
        "no other start"
    );
}

#[test]
fn an_exec_is_asked_again_of_a_cold_container_and_lost_if_it_then_dies() {
    let (owner, fake) = owner();
    fake.cold_tries.set(3);
    *fake.dies_on.borrow_mut() = Some("/v1/exec".into());
    let lost = ask(&owner, &post("/v1/exec"));
    assert_eq!(code(&lost), (503, "COMPUTER_LOST"));
    assert_eq!(fake.sleeps.get(), 4, "three refusals, then it died");
    assert_eq!(fake.received_by("/v1/exec"), ["instance-1"]);
    assert_eq!(fake.starts(), ["instance-1"]);
}

#[test]
fn an_exec_that_never_reached_a_container_dying_while_starting_runs_once_on_the_next() {
    let (owner, fake) = owner();
    fake.die_while_starting.set(1);
    fake.cold_tries.set(2);
    let ran = ask(&owner, &post("/v1/exec"));
    assert_eq!(
        ran,
        (200, json!({"path": "/v1/exec", "instance": "instance-2"}))
    );
    assert_eq!(fake.received_by("/v1/exec"), ["instance-2"]);
    assert_eq!(fake.starts(), ["instance-1", "instance-2"]);
    assert_eq!(fake.sleeps.get(), 3);
}

#[test]
fn other_requests_move_to_a_replacement_but_a_reattach_does_not() {
    let (owner, fake) = owner();
    ask(&owner, &get("/v1/status"));
    // A push is planned for one instance: the new one refuses it as stale
    // and the workspace side plans again.
    *fake.dies_on.borrow_mut() = Some("/v1/sync/apply".into());
    let applied = ask(&owner, &post("/v1/sync/apply"));
    assert_eq!(
        applied,
        (
            200,
            json!({"path": "/v1/sync/apply", "instance": "instance-2"})
        )
    );
    assert_eq!(
        fake.received_by("/v1/sync/apply"),
        ["instance-1", "instance-2"]
    );
    *fake.dies_on.borrow_mut() = Some("/v1/exec/e1/output".into());
    let reattach = ask(&owner, &get("/v1/exec/e1/output?from=0"));
    assert_eq!(code(&reattach), (503, "COMPUTER_LOST"));
    assert_eq!(fake.received_by("/v1/exec/e1/output"), ["instance-2"]);
    assert_eq!(fake.starts().len(), 2);
}

#[test]
fn a_platform_failure_says_whether_the_request_may_have_arrived() {
    for (message, undelivered) in [
        (
            "The container is not listening in the TCP address 10.0.0.1:8080",
            true,
        ),
        (
            "connection refused: container port not found. Make sure you exposed the port",
            true,
        ),
        (
            "there is no container instance that can be provided to this durable object",
            true,
        ),
        ("Network connection lost.", false),
        ("Container suddenly disconnected", false),
        ("", false),
    ] {
        let error = SendError::of_platform(HostError::new("reach the computer", message));
        let said = matches!(error, SendError::Undelivered(_));
        assert_eq!(said, undelivered, "{message:?}");
    }
}

#[test]
fn a_stopping_container_is_replaced_for_new_work_but_an_exec_is_not_moved() {
    let (owner, fake) = owner();
    assert_eq!(
        ask(&owner, &post("/v1/sync/plan")).1["instance"],
        "instance-1"
    );
    // An exec that meets a stopping program: passed on as it came.
    fake.script.borrow_mut().push_back(Next::ShuttingDown);
    let exec = ask(&owner, &post("/v1/exec"));
    assert_eq!(code(&exec), (503, "SHUTTING_DOWN"));
    assert!(fake.destroys().is_empty());
    // A reattach to it too.
    fake.script.borrow_mut().push_back(Next::ShuttingDown);
    let reattach = ask(&owner, &get("/v1/exec/e1?from=10"));
    assert_eq!(code(&reattach), (503, "SHUTTING_DOWN"));
    assert_eq!(fake.starts().len(), 1);
    // New work: the container is replaced and the new one asked.
    fake.script.borrow_mut().push_back(Next::ShuttingDown);
    let planned = ask(&owner, &post("/v1/sync/plan"));
    assert_eq!(
        planned,
        (
            200,
            json!({"path": "/v1/sync/plan", "instance": "instance-2"})
        )
    );
    assert_eq!(fake.destroys(), ["replacing a stopping container"]);
    assert_eq!(fake.starts(), ["instance-1", "instance-2"]);
    // Replaced once per request: a new one stopping too is passed on.
    fake.script
        .borrow_mut()
        .extend([Next::ShuttingDown, Next::ShuttingDown]);
    assert_eq!(
        code(&ask(&owner, &post("/v1/sync/plan"))),
        (503, "SHUTTING_DOWN")
    );
    assert_eq!(fake.starts().len(), 3);
}

#[test]
fn another_503_is_passed_on_and_a_background_request_never_replaces() {
    let (owner, fake) = owner();
    ask(&owner, &post("/v1/sync/plan"));
    let busy = json!({"error": {"code": "BUSY", "message": "a command runs"}});
    fake.script
        .borrow_mut()
        .push_back(Next::Answer(503, busy.clone()));
    assert_eq!(ask(&owner, &post("/v1/sync/plan")), (503, busy));
    fake.script.borrow_mut().push_back(Next::ShuttingDown);
    assert_eq!(code(&ask(&owner, &post(POLL_PATH))), (503, "GONE"));
    assert!(fake.destroys().is_empty());
    assert_eq!(fake.starts().len(), 1);
}

#[test]
fn a_background_request_never_starts_a_computer_nor_counts_as_use() {
    let (owner, fake) = owner();
    for path in [
        POLL_PATH,
        stead_sync::environment::PACK_PATH,
        stead_sync::environment::CHUNKS_PATH,
    ] {
        assert_eq!(code(&ask(&owner, &post(path))), (503, "GONE"), "{path}");
    }
    assert!(fake.starts().is_empty());
    assert!(fake.alarms().is_empty());
    ask(&owner, &post("/v1/sync/plan"));
    let used = fake.now.get();
    fake.now.set(used + 30_000);
    assert_eq!(ask(&owner, &post(POLL_PATH)).0, 200);
    assert_eq!(
        ask(&owner, &post(stead_sync::environment::PACK_PATH)).0,
        200
    );
    let state = state(&owner);
    assert_eq!(state["last_used_ms"], used, "watching is not use");
    assert_eq!(state["idle_deadline_ms"], used + 60_000);
    // The container goes between the check and the request: said, not
    // repaired.
    fake.hung.set(true);
    assert_eq!(code(&ask(&owner, &post(POLL_PATH))), (503, "GONE"));
    assert_eq!(fake.sleeps.get(), 0);
}

#[test]
fn a_running_container_whose_secret_was_lost_is_restarted() {
    let (owner, fake) = owner();
    fake.leave_running("nobody-knows");
    let answer = ask(&owner, &post("/v1/sync/plan"));
    assert_eq!(answer.1["instance"], "instance-1");
    assert_eq!(fake.destroys(), ["secret lost"]);
    assert_eq!(fake.events()[0], Event::Destroy("secret lost".into()));
}

#[test]
fn a_restarted_object_reaches_its_container_with_the_stored_secret() {
    let (owner, fake) = owner();
    ask(&owner, &post("/v1/sync/plan"));
    drop(owner);
    // A new life of the object: memory is gone, storage and container stay.
    let again = Owner::new(fake.clone());
    assert_eq!(
        ask(&again, &post("/v1/sync/plan")).1["instance"],
        "instance-1"
    );
    assert_eq!(fake.starts().len(), 1);
    assert!(fake.destroys().is_empty());
}

#[test]
fn a_record_stored_before_the_enum_still_reaches_its_container() {
    let fake = FakeContainers::new();
    fake.leave_running("old-secret");
    *fake.storage.borrow_mut() = Some(json!({
        "secret": "old-secret", "started_ms": 900_000, "ready": true,
        "instance": "stray", "image": "build-0", "last_used_ms": 990_000,
        "idle_ms": 60_000,
    }));
    let owner = Owner::new(fake.clone());
    let state = state(&owner);
    assert_eq!(state["state"], "running");
    assert_eq!(state["instance"], "stray");
    assert_eq!(state["idle_deadline_ms"], 1_050_000);
    assert_eq!(ask(&owner, &post("/v1/sync/plan")).1["instance"], "stray");
    assert!(fake.starts().is_empty() && fake.destroys().is_empty());
}

#[test]
fn a_container_that_stops_answering_mid_command_is_not_replaced_and_is_released_when_idle() {
    let (owner, fake) = owner();
    assert_eq!(ask(&owner, &post("/v1/exec")).0, 200);
    fake.hung.set(true);
    let reattach = block_on(owner.fetch(&get("/v1/exec/e1?from=0"), &()));
    assert!(reattach.is_err(), "given up on");
    assert_eq!(fake.sleeps.get(), START_TRIES);
    assert_eq!(
        fake.starts().len(),
        1,
        "it still runs: waited for, not moved"
    );
    assert!(fake.destroys().is_empty());
    let reattached = fake
        .sent()
        .iter()
        .filter(|(_, url)| url.ends_with("?from=0"))
        .count();
    assert_eq!(reattached as u32, START_TRIES + 1);
    // Its status does not answer either: past the deadline it is idle.
    fake.now.set(fake.now.get() + 60_000);
    assert_eq!(block_on(owner.alarm()).unwrap(), Alarmed::Released);
    assert_eq!(fake.destroys(), ["idle"]);
}

#[test]
fn the_heartbeat_runs_until_the_deadline_then_the_idle_computer_is_released() {
    let (owner, fake) = owner();
    ask(&owner, &post("/v1/sync/plan"));
    let used = fake.now.get();
    fake.forget_events();
    fake.now.set(used + HEARTBEAT_MS);
    assert_eq!(block_on(owner.alarm()).unwrap(), Alarmed::Running);
    fake.now.set(used + 58_000);
    assert_eq!(block_on(owner.alarm()).unwrap(), Alarmed::Running);
    assert_eq!(
        fake.alarms(),
        [Event::Alarm(HEARTBEAT_MS), Event::Alarm(2_000)],
        "a heartbeat, then the deadline"
    );
    assert!(fake.destroys().is_empty());
    fake.now.set(used + 60_000);
    assert_eq!(block_on(owner.alarm()).unwrap(), Alarmed::Released);
    assert_eq!(fake.destroys(), ["idle"]);
    assert_eq!(fake.alarms().len(), 2, "the alarm stops");
    assert_eq!(fake.storage.borrow().as_ref().unwrap()["released"], true);
    let state = state(&owner);
    assert_eq!(
        (state["state"].clone(), state["image"].clone()),
        (json!("stopped"), json!(null))
    );
    assert_eq!(code(&ask(&owner, &post(POLL_PATH))), (503, "RELEASED"));
    assert_eq!(
        code(&ask(&owner, &get("/computer/ports/3000/"))),
        (503, "RELEASED")
    );
    // The next command gets a fresh computer.
    assert_eq!(
        ask(&owner, &post("/v1/sync/plan")).1["instance"],
        "instance-2"
    );
    assert_eq!(fake.alarms().last(), Some(&Event::Alarm(HEARTBEAT_MS)));
}

#[test]
fn a_running_command_or_a_busy_process_keeps_the_computer() {
    let (owner, fake) = owner();
    ask(&owner, &post("/v1/sync/plan"));
    let used = fake.now.get();
    *fake.exec_running.borrow_mut() = Some("e1".into());
    fake.now.set(used + 60_000);
    assert_eq!(block_on(owner.alarm()).unwrap(), Alarmed::Running);
    assert_eq!(
        state(&owner)["last_used_ms"],
        used + 60_000,
        "a command is activity"
    );
    // A terminal or a port's server: `busy`.
    *fake.exec_running.borrow_mut() = None;
    fake.busy.set(true);
    fake.now.set(used + 120_000);
    assert_eq!(block_on(owner.alarm()).unwrap(), Alarmed::Running);
    assert!(fake.destroys().is_empty());
    assert_eq!(fake.alarms().last(), Some(&Event::Alarm(HEARTBEAT_MS)));
    fake.busy.set(false);
    fake.now.set(used + 180_000);
    assert_eq!(block_on(owner.alarm()).unwrap(), Alarmed::Released);
    assert_eq!(fake.destroys(), ["idle"]);
}

#[test]
fn a_container_gone_by_the_alarm_stops_it_and_the_state_says_stopped() {
    let (owner, fake) = owner();
    ask(&owner, &get("/v1/status"));
    fake.kill();
    assert_eq!(block_on(owner.alarm()).unwrap(), Alarmed::Stopped);
    let state = state(&owner);
    assert_eq!(state["state"], "stopped");
    assert_eq!(state["image"], "build-1", "the last build seen stays");
    assert_eq!(
        code(&ask(&owner, &post(POLL_PATH))),
        (503, "GONE"),
        "lost, not released"
    );
}

#[test]
fn a_stop_releases_at_once_and_clears_the_alarm() {
    let (owner, fake) = owner();
    ask(&owner, &post("/v1/status"));
    let stopped = ask(&owner, &post(STOP_PATH));
    assert_eq!(stopped.1["state"], "stopped");
    assert_eq!(fake.destroys(), ["released on request"]);
    assert_eq!(fake.alarms().last(), Some(&Event::AlarmCleared));
    assert_eq!(code(&ask(&owner, &post(POLL_PATH))), (503, "RELEASED"));
}

#[test]
fn a_status_answer_names_the_instance_and_build_in_the_state() {
    let (owner, fake) = owner();
    fake.cold_tries.set(1);
    ask(&owner, &post("/v1/sync/plan"));
    assert_eq!(state(&owner)["state"], "running");
    assert_eq!(
        state(&owner)["instance"],
        Value::Null,
        "no status asked yet"
    );
    let status = ask(&owner, &get("/v1/status"));
    assert_eq!(status.1["instance"], "instance-1");
    let state = state(&owner);
    assert_eq!(
        (state["instance"].clone(), state["image"].clone()),
        (json!("instance-1"), json!("build-1"))
    );
    assert_eq!(state["idle_ms"], 60_000);
}

#[test]
fn the_deployment_sets_the_idle_timeout_until_the_workspace_sends_one() {
    let (owner, fake) = owner();
    fake.default_idle.set(Some(90_000));
    assert_eq!(state(&owner)["idle_ms"], 90_000);
    ask(&owner, &post("/v1/sync/plan"));
    assert_eq!(state(&owner)["idle_ms"], 60_000, "the workspace's own");
}

#[test]
fn a_start_that_fails_leaves_nothing_started() {
    let (owner, fake) = owner();
    fake.start_fails.set(true);
    assert!(block_on(owner.fetch(&post("/v1/sync/plan"), &())).is_err());
    assert_eq!(state(&owner)["state"], "stopped");
    fake.start_fails.set(false);
    assert_eq!(
        ask(&owner, &post("/v1/sync/plan")).1["instance"],
        "instance-1"
    );
}

#[test]
fn port_requests_reach_the_running_container_count_as_use_and_never_start_one() {
    let (owner, fake) = owner();
    assert_eq!(
        code(&ask(&owner, &get("/computer/ports/3000/"))),
        (503, "GONE")
    );
    assert!(fake.starts().is_empty() && fake.sent().is_empty());
    let bad = ask(&owner, &get("/computer/ports/http/"));
    assert_eq!(code(&bad), (400, "INVALID_REQUEST"));
    assert_eq!(bad.1["error"]["message"], "\"http\" is not a port");
    ask(&owner, &post("/v1/sync/plan"));
    let used = fake.now.get();
    fake.now.set(used + 10_000);
    fake.forget_events();
    let reached = ask(&owner, &get("/computer/ports/3000/app/x?y=1"));
    assert_eq!(reached.1["url"], "http://localhost:3000/app/x?y=1");
    ask(&owner, &get("/computer/ports/5173"));
    assert_eq!(
        fake.sent(),
        [
            (
                Hop::Container { port: 3000 },
                "http://localhost:3000/app/x?y=1".to_string()
            ),
            (
                Hop::Container { port: 5173 },
                "http://localhost:5173/".to_string()
            ),
        ]
    );
    let passed = sent_headers(&fake);
    let expected = pairs(&[("content-type", "application/json"), ("accept", "*/*")]);
    assert_eq!(passed[0], expected, "no secret, nothing of stead's own");
    assert_eq!(passed[1], expected);
    assert_eq!(state(&owner)["last_used_ms"], used + 10_000);
}

#[test]
fn locally_one_program_serves_every_agent_and_is_never_started_or_released() {
    let fake = FakeContainers::new();
    *fake.provider.borrow_mut() = Some(Provider::Local {
        // Its trailing slash is the setting's, not the request's.
        base: "http://10.1.2.3:8788/".into(),
        secret: "dev".into(),
    });
    let owner = Owner::new(fake.clone());
    let planned = ask(&owner, &post("/v1/exec?x=1"));
    assert_eq!(planned.1["local"], "http://10.1.2.3:8788/v1/exec?x=1");
    let port = ask(&owner, &get("/computer/ports/3000/a"));
    assert_eq!(port.1["local"], "http://10.1.2.3:3000/a");
    let state = state(&owner);
    assert_eq!(state["provision"], "local-process");
    assert_eq!(state["state"], "running");
    assert_eq!(state["instance"], "local");
    assert_eq!(block_on(owner.alarm()).unwrap(), Alarmed::NoContainer);
    assert_eq!(ask(&owner, &post(STOP_PATH)).1["state"], "running");
    assert!(fake.starts().is_empty() && fake.destroys().is_empty());
    assert!(fake.alarms().is_empty());
    assert_eq!(fake.sent()[0].0, Hop::Network);
    let headers = sent_headers(&fake);
    assert_eq!(
        headers[0].last(),
        pairs(&[("authorization", "Bearer dev")]).last()
    );
    // Its status is asked for this agent.
    let status = headers
        .iter()
        .find(|h| h.len() == 2 && h[0].0 == "authorization")
        .expect("a status asked");
    assert_eq!(
        status[1],
        pairs(&[(stead_sync::CONTAINER_HEADER, "alice")])[0]
    );
}

/// The headers of each request sent, in order.
fn sent_headers(fake: &FakeContainers) -> Vec<HeaderList> {
    let sent = fake.events().into_iter().filter_map(|e| match e {
        Event::Sent { headers, .. } => Some(headers),
        _ => None,
    });
    sent.collect()
}

fn pairs(list: &[(&str, &str)]) -> HeaderList {
    list.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn a_protocol_request_carries_its_body_its_own_headers_and_the_secret_only() {
    let (owner, fake) = owner();
    ask(&owner, &post("/v1/sync/plan"));
    let headers = sent_headers(&fake);
    let secret = format!("Bearer {:0>64}", 1);
    assert_eq!(
        headers[0],
        pairs(&[
            (stead_sync::CONTAINER_HEADER, "alice"),
            ("content-type", "application/json"),
            ("authorization", &secret),
        ])
    );
    // The idle check asks the status with the secret alone.
    fake.now.set(fake.now.get() + 60_000);
    block_on(owner.alarm()).unwrap();
    assert_eq!(
        sent_headers(&fake).last(),
        Some(&pairs(&[("authorization", &secret)]))
    );
}

#[test]
fn without_containers_or_a_local_program_everything_is_unavailable() {
    let fake = FakeContainers::new();
    *fake.provider.borrow_mut() = Some(Provider::Missing);
    let owner = Owner::new(fake.clone());
    assert_eq!(code(&ask(&owner, &post("/v1/exec"))), (503, "UNAVAILABLE"));
    assert_eq!(
        code(&ask(&owner, &get("/computer/ports/3000/"))),
        (503, "UNAVAILABLE")
    );
    assert_eq!(
        code(&ask(&owner, &get("/computer/ports/x/"))),
        (400, "INVALID_REQUEST")
    );
    assert_eq!(state(&owner)["state"], "stopped");
    assert!(fake.events().is_empty());
}

#[test]
fn a_call_holds_its_body_unless_it_streams_to_a_port_or_is_the_owners_own() {
    assert!(post("/v1/sync/plan").holds_body());
    assert!(!get("/computer/ports/3000/").holds_body());
    assert!(!get(STATE_PATH).holds_body());
    assert!(!post(STOP_PATH).holds_body());
    assert!(post(STATE_PATH).holds_body(), "a POST there is forwarded");
}

/// What a begun request answered, as [`ask`] says it.
fn finish(future: Pin<Box<impl Future<Output = FetchResult>>>) -> (u16, Value) {
    match block_on(future).expect("answered") {
        Reply::Passed(FakeAnswer { status, body }) | Reply::Json { status, body } => {
            (status, serde_json::from_slice(&body).expect("JSON"))
        }
    }
}

type FetchResult = Result<Reply<FakeAnswer>, HostError>;

/// Polls `future` once, as the platform does before it runs another
/// request in the same object: it is to be waiting (on a held sleep or
/// send).
fn begin<F: Future>(future: &mut Pin<Box<F>>) {
    let waker = futures::task::noop_waker();
    let mut context = std::task::Context::from_waker(&waker);
    assert!(future.as_mut().poll(&mut context).is_pending(), "held");
}

#[test]
fn a_request_waiting_between_tries_goes_on_with_the_container_another_request_started() {
    let (owner, fake) = owner();
    // Request A finds its container cold and waits between tries.
    fake.cold_tries.set(1);
    fake.hold_sleeps.set(true);
    let status = get("/v1/status");
    let mut first = Box::pin(owner.fetch(&status, &()));
    begin(&mut first);
    assert_eq!(fake.starts(), ["instance-1"]);
    // Meanwhile request B finds it stopping and replaces it.
    fake.cold_tries.set(0);
    fake.script.borrow_mut().push_back(Next::ShuttingDown);
    let second = ask(&owner, &post("/v1/sync/plan"));
    assert_eq!(
        (second.0, &second.1["instance"]),
        (200, &json!("instance-2"))
    );
    // A goes on with the replacement, with its secret, and leaves the
    // record naming it.
    fake.hold_sleeps.set(false);
    let first = finish(first);
    assert_eq!((first.0, &first.1["instance"]), (200, &json!("instance-2")));
    let third = ask(&owner, &get("/v1/status"));
    assert_eq!((third.0, &third.1["instance"]), (200, &json!("instance-2")));
    assert_eq!(fake.starts(), ["instance-1", "instance-2"]);
    let stored = fake.storage.borrow().clone().unwrap();
    assert!(
        stored["secret"].as_str().unwrap().ends_with('2'),
        "{stored}"
    );
    assert_eq!(state(&owner)["instance"], "instance-2");
}

#[test]
fn a_request_waiting_between_tries_never_moves_the_last_use_back() {
    let (owner, fake) = owner();
    assert_eq!(ask(&owner, &get("/v1/status")).0, 200);
    // Request A finds the program not answering for a while, and waits.
    fake.cold_tries.set(1);
    fake.kill();
    let status = get("/v1/status");
    fake.hold_sleeps.set(true);
    let mut first = Box::pin(owner.fetch(&status, &()));
    begin(&mut first);
    // Meanwhile, later, a port request uses the computer.
    fake.now.set(fake.now.get() + 2 * HEARTBEAT_MS);
    let used = fake.now.get();
    assert_eq!(ask(&owner, &get("/computer/ports/3000/")).0, 200);
    fake.hold_sleeps.set(false);
    assert_eq!(finish(first).0, 200);
    let state = state(&owner);
    assert_eq!(state["last_used_ms"], used, "{state}");
    assert_eq!(state["idle_deadline_ms"], used + 60_000);
}

#[test]
fn a_request_that_comes_while_the_alarm_asks_the_program_keeps_the_container() {
    let (owner, fake) = owner();
    assert_eq!(ask(&owner, &get("/v1/status")).0, 200);
    // Past the idle deadline, the alarm asks the program whether it works.
    fake.now.set(fake.now.get() + 61_000);
    fake.hold_sends.set(true);
    let mut alarm = Box::pin(owner.alarm());
    begin(&mut alarm);
    // Meanwhile a port request uses the computer.
    let port = get("/computer/ports/3000/");
    let mut used = Box::pin(owner.fetch(&port, &()));
    begin(&mut used);
    fake.hold_sends.set(false);
    // The program is idle, but the alarm now finds the computer used:
    // nothing is destroyed, and the request reaches its port.
    assert_eq!(block_on(alarm).expect("alarmed"), Alarmed::Running);
    assert!(fake.destroys().is_empty(), "{:?}", fake.destroys());
    assert_eq!(finish(used).0, 200);
    assert_eq!(state(&owner)["state"], "running");
}
