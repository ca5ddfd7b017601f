//! End-to-end: durable jobs and webhook hooks. A detached exec answers with
//! a job at once and runs without its caller; its record and output log are
//! readable from any offset; a hook runs its command with the caller's body
//! on stdin, and a wrong secret is refused and runs nothing.

mod common;

use std::time::{Duration, Instant};

use common::{expect_error, expect_made, expect_ok, expect_status, Agent};
use serde_json::{json, Value};
use stead_harness::Reply;

/// Starts a detached exec and returns its job id.
fn detach(agent: &Agent, request: Value) -> i64 {
    let mut request = request;
    request["detach"] = json!(true);
    let reply = agent.call("exec", request);
    expect_status(&reply, 202);
    let job = reply.json()["job"].clone();
    assert_eq!(job["state"], "queued", "{job}");
    job["id"].as_i64().expect("job id")
}

/// Polls job `id` until it ends.
fn wait_job(agent: &Agent, id: i64) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let job = expect_ok(&agent.send("GET", &format!("/jobs/{id}"), b""))["job"].clone();
        if !matches!(job["state"].as_str(), Some("queued" | "running")) {
            return job;
        }
        assert!(Instant::now() < deadline, "job {id} never ended: {job}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn output(agent: &Agent, id: i64, query: &str) -> Value {
    expect_ok(&agent.send("GET", &format!("/jobs/{id}/output{query}"), b""))
}

fn text_of(page: &Value) -> String {
    page["output"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["data"].as_str().unwrap())
        .collect()
}

#[test]
fn detached_exec_answers_at_once_and_its_output_is_readable_from_any_offset() {
    let agent = Agent::new("jobs-detach");
    let id = detach(
        &agent,
        json!({ "command": "echo one; echo two >&2; mkdir -p /out; seq 1 3 > /out/n; echo three" }),
    );
    let job = wait_job(&agent, id);
    assert_eq!(job["state"], "succeeded", "{job}");
    assert_eq!(job["exit_code"], 0);
    assert_eq!(job["backend"], "shell");
    assert_eq!(job["source"], "api");
    assert!(job["started_ms"].as_i64().unwrap() >= job["created_ms"].as_i64().unwrap());
    assert!(job["finished_ms"].as_i64().unwrap() >= job["started_ms"].as_i64().unwrap());
    // The job's writes are in the workspace.
    assert_eq!(agent.read("/out/n"), "1\n2\n3\n");

    let page = output(&agent, id, "");
    assert_eq!(page["done"], true);
    let pieces = page["output"].as_array().unwrap();
    let streams: Vec<&str> = pieces
        .iter()
        .map(|p| p["stream"].as_str().unwrap())
        .collect();
    assert!(
        streams.contains(&"stdout") && streams.contains(&"stderr"),
        "{page}"
    );
    let all = text_of(&page);
    assert_eq!(all.len(), job["output_bytes"].as_u64().unwrap() as usize);
    for from in 0..=all.len() {
        let rest = output(&agent, id, &format!("?from={from}"));
        assert_eq!(text_of(&rest), all[from..], "from {from}");
        assert_eq!(rest["next"], all.len());
    }

    let listed = expect_ok(&agent.send("GET", "/jobs", b""));
    assert_eq!(listed["jobs"][0]["id"], id);
    assert_eq!(
        listed["jobs"][0]["command"]
            .as_str()
            .unwrap()
            .split(';')
            .next(),
        Some("echo one")
    );
}

#[test]
fn a_large_output_is_kept_in_bounded_pieces_and_paged() {
    let agent = Agent::new("jobs-large");
    let id = detach(&agent, json!({ "command": "seq 1 40000" }));
    let job = wait_job(&agent, id);
    let expected: String = (1..=40000).map(|n| format!("{n}\n")).collect();
    assert_eq!(job["output_bytes"], expected.len());
    let mut got = String::new();
    let mut from = 0;
    loop {
        let page = output(&agent, id, &format!("?from={from}&limit=50000"));
        for piece in page["output"].as_array().unwrap() {
            assert_eq!(piece["offset"], got.len(), "a gap or an overlap");
            assert!(piece["data"].as_str().unwrap().len() <= 16 << 10);
            got.push_str(piece["data"].as_str().unwrap());
        }
        if page["done"] == true {
            break;
        }
        from = page["next"].as_i64().unwrap();
    }
    assert_eq!(got, expected);
}

#[test]
fn failures_timeouts_and_cancel_are_recorded() {
    let agent = Agent::new("jobs-states");
    let failed = wait_job(
        &agent,
        detach(&agent, json!({ "command": "echo no >&2; exit 3" })),
    );
    assert_eq!(
        (failed["state"].clone(), failed["exit_code"].clone()),
        (json!("failed"), json!(3))
    );

    let slow = detach(
        &agent,
        json!({ "command": "while true; do :; done", "timeout_ms": 100 }),
    );
    let slow = wait_job(&agent, slow);
    assert_eq!(slow["state"], "timed_out", "{slow}");
    assert_eq!(slow["exit_code"], 124);

    let bad = wait_job(
        &agent,
        detach(&agent, json!({ "command": "ls", "cwd": "/nowhere" })),
    );
    assert_eq!(bad["state"], "failed");
    assert!(bad["error"].as_str().unwrap().contains("ENOENT"), "{bad}");

    // A finished job cannot be cancelled; unknown jobs and offsets are errors.
    let id = failed["id"].as_i64().unwrap();
    expect_error(
        &agent.send("POST", &format!("/jobs/{id}/cancel"), b""),
        409,
        "JOB_FINISHED",
    );
    expect_error(&agent.send("GET", "/jobs/9999", b""), 404, "JOB_NOT_FOUND");
    expect_error(
        &agent.send("GET", "/jobs/9999/output", b""),
        404,
        "JOB_NOT_FOUND",
    );
    expect_error(
        &agent.send("GET", &format!("/jobs/{id}/output?from=999"), b""),
        400,
        "OFFSET_BEYOND_END",
    );
    expect_error(
        &agent.send("GET", &format!("/jobs/{id}/output?form=1"), b""),
        400,
        "INVALID_REQUEST",
    );
    expect_error(
        &agent.call("exec", json!({ "command": "true", "detach": "yes" })),
        400,
        "INVALID_REQUEST",
    );
    // A request the exec route would refuse is refused at once, not queued.
    let before = expect_ok(&agent.send("GET", "/jobs", b""))["jobs"].clone();
    expect_error(
        &agent.call(
            "exec",
            json!({ "command": "true", "colour": 1, "detach": true }),
        ),
        400,
        "INVALID_REQUEST",
    );
    assert_eq!(expect_ok(&agent.send("GET", "/jobs", b""))["jobs"], before);
    // The backend is decided when the job is made: `auto` sends a command the
    // light shell lacks to the computer.
    let on_computer = agent.call(
        "exec",
        json!({ "command": "python3 -c 'print(6*7)'", "detach": true, "timeout_ms": 60000 }),
    );
    expect_status(&on_computer, 202);
    assert_eq!(on_computer.json()["job"]["backend"], "computer");
    let job = wait_job(&agent, on_computer.json()["job"]["id"].as_i64().unwrap());
    assert_eq!(job["backend"], "computer");
    // Without detach (or with false) exec still answers in place.
    let out = agent.ok("exec", json!({ "command": "echo now", "detach": false }));
    assert_eq!(out["stdout"], "now\n");
}

/// Calls a hook as a third party does: with the hook secret (if any) and
/// no API token.
fn hook_call(agent: &str, name: &str, secret: Option<&str>, body: &str) -> Reply {
    let mut headers = vec![("content-type", "application/json")];
    if let Some(secret) = secret {
        headers.push(("x-hook-secret", secret));
    }
    common::raw(
        "POST",
        &format!("/agents/{agent}/hooks/{name}"),
        &headers,
        body.as_bytes(),
    )
}

#[test]
fn a_hook_runs_its_command_with_the_body_on_stdin_and_a_wrong_secret_runs_nothing() {
    let agent = Agent::new("jobs-hooks");
    let made = expect_made(
        &agent.send(
            "PUT",
            "/hooks/github",
            json!({ "exec": { "command": "cat > /hook-in.json; jq -r .action /hook-in.json" } })
                .to_string()
                .as_bytes(),
        ),
    );
    let secret = made["secret"].as_str().unwrap().to_string();
    assert!(secret.len() >= 32, "{made}");
    // The secret is shown once, never again.
    let shown = expect_ok(&agent.send("GET", "/hooks/github", b""));
    assert!(!shown.to_string().contains(&secret));

    for wrong in [None, Some("not-the-secret-at-all"), Some(&secret[1..])] {
        let reply = hook_call(&agent.id, "github", wrong, r#"{"action":"evil"}"#);
        expect_error(&reply, 401, "HOOK_REFUSED");
    }
    // The API token is not the hook's secret either.
    let reply = hook_call(&agent.id, "github", Some("dev-token"), "{}");
    expect_error(&reply, 401, "HOOK_REFUSED");
    // Unknown hooks and unknown agents are refused the same way.
    expect_error(
        &hook_call(&agent.id, "gitlab", Some(&secret), "{}"),
        401,
        "HOOK_REFUSED",
    );
    expect_error(
        &hook_call("jobs-no-such-agent", "github", Some(&secret), "{}"),
        401,
        "HOOK_REFUSED",
    );
    // Nothing ran.
    let jobs = expect_ok(&agent.send("GET", "/jobs", b""));
    assert_eq!(jobs["jobs"], json!([]), "a refused hook ran: {jobs}");
    assert_eq!(
        expect_ok(&agent.send("GET", "/hooks/github", b""))["hook"]["calls"],
        0
    );
    expect_error(
        &agent.call("stat", json!({ "path": "/hook-in.json" })),
        404,
        "ENOENT",
    );

    let reply = hook_call(&agent.id, "github", Some(&secret), r#"{"action":"opened"}"#);
    expect_status(&reply, 202);
    let id = reply.json()["job"]["id"].as_i64().unwrap();
    let job = wait_job(&agent, id);
    assert_eq!(job["state"], "succeeded", "{job}");
    assert_eq!(job["source"], "hook:github");
    assert_eq!(text_of(&output(&agent, id, "")), "opened\n");
    assert_eq!(agent.read("/hook-in.json"), r#"{"action":"opened"}"#);

    // Managing hooks takes the API token.
    let anonymous = agent.client.with_token(None);
    let reply = anonymous.send("GET", &agent.url("/hooks"), b"");
    expect_error(&reply, 401, "UNAUTHORIZED");
    let reply = anonymous.send(
        "PUT",
        &agent.url("/hooks/x"),
        br#"{"exec":{"command":"true"}}"#,
    );
    expect_error(&reply, 401, "UNAUTHORIZED");
    expect_ok(&agent.send("DELETE", "/hooks/github", b""));
    expect_error(
        &hook_call(&agent.id, "github", Some(&secret), "{}"),
        401,
        "HOOK_REFUSED",
    );
    expect_error(
        &agent.send("GET", "/hooks/github", b""),
        404,
        "HOOK_NOT_FOUND",
    );
}

#[test]
fn cancel_ends_a_queued_job_and_stops_a_running_one() {
    let agent = Agent::new("jobs-cancel");
    // A job on the computer would run for long; the next one queues behind it.
    let running = detach(
        &agent,
        json!({ "command": "sleep 30; echo slept > slept.txt", "backend": "computer",
                "timeout_ms": 60000 }),
    );
    let queued = detach(&agent, json!({ "command": "echo never > /never.txt" }));
    let deadline = Instant::now() + Duration::from_secs(30);
    while expect_ok(&agent.send("GET", &format!("/jobs/{running}"), b""))["job"]["state"]
        != "running"
    {
        assert!(Instant::now() < deadline, "the first job never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let cancelled =
        expect_ok(&agent.send("POST", &format!("/jobs/{queued}/cancel"), b""))["job"].clone();
    assert_eq!(cancelled["state"], "cancelled", "{cancelled}");
    let flagged =
        expect_ok(&agent.send("POST", &format!("/jobs/{running}/cancel"), b""))["job"].clone();
    assert_eq!(
        (
            flagged["state"].clone(),
            flagged["cancel_requested"].clone()
        ),
        (json!("running"), json!(true))
    );
    // The command itself is stopped on the computer before its end: what
    // it would have written after the sleep never comes back.
    let ended = wait_job(&agent, running);
    assert_eq!(ended["state"], "cancelled", "{ended}");
    // Stopped before it started (a cold computer), it has no exit status;
    // killed while it ran, its status is bash's for SIGTERM, 128 + 15.
    assert!(
        ended["exit_code"] == Value::Null || ended["exit_code"] == 143,
        "stopped: {ended}"
    );
    expect_error(
        &agent.call("stat", json!({ "path": "/slept.txt" })),
        404,
        "ENOENT",
    );
    std::thread::sleep(Duration::from_millis(300));
    let never = expect_ok(&agent.send("GET", &format!("/jobs/{queued}"), b""))["job"].clone();
    assert_eq!(
        (never["state"].clone(), never["started_ms"].clone()),
        (json!("cancelled"), Value::Null)
    );
    expect_error(
        &agent.call("stat", json!({ "path": "/never.txt" })),
        404,
        "ENOENT",
    );
}

#[test]
fn a_job_cut_off_by_a_restart_is_marked_failed_not_rerun() {
    let state = stead_harness::temp_state();
    let first = stead_harness::Runtime::start(state.path());
    let agent = Agent::create_on(first.client(), "jobs-restart");
    let id = detach(
        &agent,
        json!({ "command": "echo started; sleep 20; echo finished > done.txt", "backend": "computer", "timeout_ms": 60000 }),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while expect_ok(&agent.send("GET", &format!("/jobs/{id}"), b""))["job"]["state"] != "running" {
        assert!(Instant::now() < deadline, "the job never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    first.stop();

    let second = stead_harness::Runtime::start(state.path());
    let agent = Agent {
        client: second.client(),
        ..agent
    };
    let job = expect_ok(&agent.send("GET", &format!("/jobs/{id}"), b""))["job"].clone();
    assert_eq!(job["state"], "failed", "{job}");
    // Cut off with the runtime (a container outlives it and the job is
    // found interrupted), or with its computer too (the local program
    // stops with the runtime, so the job finds its computer gone).
    let error = job["error"].as_str().unwrap();
    assert!(
        error.contains("interrupted") || error.contains("computer that ran it is gone"),
        "{job}"
    );
    assert!(job["finished_ms"].is_i64());
    // Not re-run: nothing more happens to it.
    std::thread::sleep(Duration::from_millis(1000));
    assert_eq!(
        expect_ok(&agent.send("GET", &format!("/jobs/{id}"), b""))["job"],
        job
    );
    expect_error(
        &agent.call("stat", json!({ "path": "/done.txt" })),
        404,
        "ENOENT",
    );
    second.stop();
}
