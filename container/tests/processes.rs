//! Long-running processes on the real binary: started beside commands,
//! their output polled by offset, signalled, stopped (SIGTERM, then SIGKILL
//! after the grace), restarted by their policy, and refused with the
//! protocol's errors when the request is wrong.

mod common;

use std::time::Duration;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use common::*;
use serde_json::{json, Value};
use stead_sync::ExecEvent;

fn start(client: &Client, spec: Value) -> Value {
    let answer = client.post("/v1/processes", &spec);
    answer.expect(201);
    answer.json()
}

/// Polls process `id` from `from`: its status, the output text, the next
/// offset.
fn poll(client: &Client, id: &str, from: u64) -> (Value, String, u64) {
    let answer = client.post("/v1/processes/poll", &json!({ "from": { id: from } }));
    answer.expect(200);
    let reply = answer.json();
    let polled = reply["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["status"]["id"] == id)
        .unwrap_or_else(|| panic!("no {id} in {reply}"))
        .clone();
    let events: Vec<ExecEvent> = serde_json::from_value(polled["output"].clone()).unwrap();
    let text: String = events
        .iter()
        .map(|event| match event {
            ExecEvent::Stdout { data } | ExecEvent::Stderr { data } => {
                String::from_utf8(BASE64.decode(data).unwrap()).unwrap()
            }
            other => panic!("unexpected event {other:?}"),
        })
        .collect();
    (
        polled["status"].clone(),
        text,
        polled["next"].as_u64().unwrap(),
    )
}

/// Polls until the whole output so far contains `needle`.
fn output_until(client: &Client, id: &str, needle: &str) -> String {
    let mut all = String::new();
    let mut next = 0;
    wait_until(needle, Duration::from_secs(10), || {
        let (_, text, to) = poll(client, id, next);
        all.push_str(&text);
        next = to;
        all.contains(needle)
    });
    all
}

fn spec(id: &str, command: &str) -> Value {
    json!({ "id": id, "command": command, "cwd": "/" })
}

#[test]
fn a_process_runs_beside_commands_and_its_output_is_read_by_offset() {
    let computer = Computer::start();
    let client = computer.client();
    let started = start(
        &client,
        spec(
            "srv",
            "for i in 1 2 3; do echo tick $i; sleep 0.2; done; sleep 60",
        ),
    );
    assert_eq!(started["id"], "srv");
    assert!(started["pid"].as_u64().is_some(), "{started}");
    // Commands run meanwhile: the process does not hold the computer.
    let (out, err, exit) = client.exec("beside", "echo beside");
    assert_eq!((out.as_str(), exit.code), ("beside\n", Some(0)), "{err}");
    let all = output_until(&client, "srv", "tick 3\n");
    assert_eq!(all, "tick 1\ntick 2\ntick 3\n");
    // From an offset inside the output: each byte once.
    let (_, tail, next) = poll(&client, "srv", 7);
    assert_eq!((tail.as_str(), next), ("tick 2\ntick 3\n", 21));
    let list = client.get("/v1/processes").json();
    assert_eq!(list["processes"][0]["state"], "running", "{list}");

    let stopped = client.post("/v1/processes/srv/stop", &json!({ "grace_ms": 1000 }));
    assert_eq!(stopped.status, 200);
    let stopped = stopped.json();
    assert_eq!(
        (stopped["state"].clone(), stopped["stopped"].clone()),
        (json!("exited"), json!(true)),
        "{stopped}"
    );
    let pid = started["pid"].as_u64().unwrap() as u32;
    wait_until("the process group to go", Duration::from_secs(5), || {
        process_gone(pid)
    });
}

#[test]
fn signals_reach_the_process_and_a_stop_escalates_to_sigkill() {
    let computer = Computer::start();
    let client = computer.client();
    start(
        &client,
        spec("trap", "trap 'echo got usr1' USR1; trap 'echo ignoring term' TERM; echo ready; while true; do sleep 0.1; done"),
    );
    output_until(&client, "trap", "ready\n");
    let signalled = client.post("/v1/processes/trap/signal", &json!({ "signal": "SIGUSR1" }));
    assert_eq!(
        signalled.status,
        200,
        "{}",
        String::from_utf8_lossy(&signalled.body)
    );
    output_until(&client, "trap", "got usr1\n");
    // It ignores SIGTERM: the stop kills it after the grace.
    let begun = std::time::Instant::now();
    let stopped = client
        .post("/v1/processes/trap/stop", &json!({ "grace_ms": 500 }))
        .json();
    assert!(
        begun.elapsed() >= Duration::from_millis(500),
        "SIGKILL came after the grace"
    );
    assert_eq!(stopped["state"], "exited");
    assert_eq!(stopped["signal"], 9, "{stopped}");
    let all = output_until(&client, "trap", "ignoring term\n");
    assert!(all.contains("got usr1"), "{all}");
    // Not running any more: a signal is refused.
    let late = client.post("/v1/processes/trap/signal", &json!({ "signal": "TERM" }));
    assert_eq!(late.status, 400);
}

#[test]
fn restart_policies_start_a_process_again() {
    let computer = Computer::start();
    let client = computer.client();
    start(
        &client,
        json!({ "id": "crash", "command": "echo run; exit 3", "cwd": "/", "restart": "on-failure" }),
    );
    wait_until("two restarts", Duration::from_secs(10), || {
        poll(&client, "crash", 0).0["restarts"].as_u64().unwrap() >= 2
    });
    let all = output_until(&client, "crash", "run\nrun\nrun\n");
    assert!(all.starts_with("run\nrun\nrun\n"));
    let stopped = client.post("/v1/processes/crash/stop", &json!({})).json();
    assert_eq!(stopped["state"], "exited");

    // on-failure leaves a clean exit alone; never leaves a failure alone.
    start(
        &client,
        json!({ "id": "clean", "command": "exit 0", "cwd": "/", "restart": "on-failure" }),
    );
    start(
        &client,
        json!({ "id": "fails", "command": "exit 7", "cwd": "/" }),
    );
    wait_until("both to end", Duration::from_secs(10), || {
        poll(&client, "clean", 0).0["state"] == "exited"
            && poll(&client, "fails", 0).0["state"] == "failed"
    });
    let (fails, _, _) = poll(&client, "fails", 0);
    assert_eq!(
        (fails["exit_code"].clone(), fails["restarts"].clone()),
        (json!(7), json!(0))
    );
    assert_eq!(poll(&client, "clean", 0).0["restarts"], 0);
}

#[test]
fn a_process_with_a_port_keeps_the_computer_busy() {
    let computer = Computer::start();
    let client = computer.client();
    assert_eq!(client.get("/v1/status").json()["busy"], false);
    start(&client, spec("quiet", "sleep 60"));
    assert_eq!(
        client.get("/v1/status").json()["busy"],
        false,
        "no port declared"
    );
    start(
        &client,
        json!({ "id": "web", "command": "sleep 60", "cwd": "/", "ports": [8000] }),
    );
    assert_eq!(client.get("/v1/status").json()["busy"], true);
    client.post("/v1/processes/web/stop", &json!({ "grace_ms": 100 }));
    assert_eq!(client.get("/v1/status").json()["busy"], false);
}

#[test]
fn bad_requests_start_nothing() {
    let computer = Computer::start();
    let client = computer.client();
    start(&client, spec("one", "sleep 60"));
    let refused = |body: Value, status: u16, code: &str| {
        let answer = client.post("/v1/processes", &body);
        assert_eq!(
            (answer.status, answer.code()),
            (status, code.to_string()),
            "{body}"
        );
    };
    refused(spec("one", "true"), 409, "ALREADY_STARTED");
    refused(spec("", "true"), 400, "INVALID_REQUEST");
    refused(spec("x", "  "), 400, "INVALID_REQUEST");
    refused(
        json!({ "id": "x", "command": "true", "cwd": "/nope" }),
        400,
        "BAD_PATH",
    );
    refused(
        json!({ "id": "x", "command": "true", "cwd": "/", "env": { "A=B": "c" } }),
        400,
        "INVALID_REQUEST",
    );
    refused(
        json!({ "id": "x", "command": "true", "cwd": "/", "restart": "sometimes" }),
        400,
        "INVALID_REQUEST",
    );
    refused(
        json!({ "id": "x", "command": "true", "cwd": "/", "bogus": 1 }),
        400,
        "INVALID_REQUEST",
    );
    let list = client.get("/v1/processes").json();
    assert_eq!(list["processes"].as_array().unwrap().len(), 1, "{list}");
    let unknown = client.post("/v1/processes/nope/signal", &json!({ "signal": "TERM" }));
    assert_eq!(
        (unknown.status, unknown.code()),
        (404, "UNKNOWN_PROCESS".to_string())
    );
    let bad_signal = client.post("/v1/processes/one/signal", &json!({ "signal": "SIGBOGUS" }));
    assert_eq!(
        (bad_signal.status, bad_signal.code()),
        (400, "INVALID_REQUEST".to_string())
    );
    let long_grace = client.post("/v1/processes/one/stop", &json!({ "grace_ms": 999_999 }));
    assert_eq!(long_grace.status, 400);
    assert_eq!(
        poll(&client, "one", 0).0["state"],
        "running",
        "nothing was stopped"
    );
}
