//! End-to-end: schedules on the Durable Object's alarm. A one-shot schedule
//! fires and its job's output is readable; a recurring one fires once per
//! due time, across a restart of the runtime, with missed due times handled
//! by the catch-up policy; failing runs are retried and every attempt is
//! recorded; webhook calls carry a signature the receiver can check.

mod common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{expect_error, expect_made, expect_ok, expect_status, Agent};
use serde_json::{json, Value};
use stead_harness::{temp_state, Runtime};

fn put(agent: &Agent, id: &str, body: Value) -> Value {
    expect_made(&agent.send(
        "PUT",
        &format!("/schedules/{id}"),
        body.to_string().as_bytes(),
    ))
}

/// Lets the agent's webhooks call this machine (a local development
/// setting: the receivers below listen on loopback).
fn allow_local_webhooks(agent: &Agent) {
    expect_ok(
        &agent.send(
            "PUT",
            "/settings",
            json!({ "webhooks": { "allow_private_targets": true } })
                .to_string()
                .as_bytes(),
        ),
    );
}

fn get(agent: &Agent, id: &str) -> Value {
    expect_ok(&agent.send("GET", &format!("/schedules/{id}"), b""))
}

/// Polls schedule `id` until `done` holds for it, for at most `secs`.
fn wait_for(agent: &Agent, id: &str, secs: u64, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let schedule = get(agent, id);
        if done(&schedule) {
            return schedule;
        }
        assert!(
            Instant::now() < deadline,
            "schedule never got there: {schedule:#}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn runs(schedule: &Value) -> Vec<Value> {
    schedule["runs"].as_array().cloned().unwrap_or_default()
}

fn finished(run: &Value) -> bool {
    run["state"] != "running" && run["retry_at_ms"].is_null()
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[test]
fn a_one_shot_schedule_fires_and_its_job_output_is_readable() {
    let agent = Agent::new("sched-once");
    let made = put(
        &agent,
        "hello",
        json!({ "delay_ms": 300, "exec": { "command": "echo scheduled; echo hi > /from-schedule" } }),
    );
    assert_eq!(made["schedule"]["kind"], "once");
    assert_eq!(made["schedule"]["state"], "scheduled");
    let due = made["schedule"]["next_due_ms"].as_i64().unwrap();
    let schedule = wait_for(&agent, "hello", 20, |s| runs(s).iter().any(finished));
    let run = &runs(&schedule)[0];
    assert_eq!(run["state"], "succeeded", "{run}");
    assert_eq!(
        (run["due_ms"].as_i64(), run["attempt"].as_i64()),
        (Some(due), Some(1))
    );
    assert!(
        run["started_ms"].as_i64().unwrap() >= due,
        "ran before it was due"
    );
    assert!(schedule["schedule"]["next_due_ms"].is_null());
    let job = run["job_id"].as_i64().unwrap();
    let output = expect_ok(&agent.send("GET", &format!("/jobs/{job}/output"), b""));
    assert_eq!(output["output"][0]["data"], "scheduled\n");
    assert_eq!(output["done"], true);
    let job = expect_ok(&agent.send("GET", &format!("/jobs/{job}"), b""))["job"].clone();
    assert_eq!(job["source"], "schedule:hello");
    assert_eq!(agent.read("/from-schedule"), "hi\n");
    // Nothing more ever runs for it; it stays listed, done, for a while.
    std::thread::sleep(Duration::from_millis(500));
    let done = get(&agent, "hello");
    assert_eq!(runs(&done).len(), 1);
    assert_eq!(done["schedule"]["state"], "done", "{done}");
    assert_eq!(done["schedule"]["done_ms"], run["finished_ms"], "{done}");
    let listed = expect_ok(&agent.send("GET", "/schedules", b""));
    assert_eq!(listed["schedules"][0]["state"], "done", "{listed}");
}

/// Checks the ledger of an every-2-seconds schedule: each due time at most
/// once, every run its own due time, and every due time between the first
/// and the last either run or counted as skipped by the next run.
fn check_ledger(runs: &[Value]) -> Vec<i64> {
    let mut dues: Vec<i64> = runs.iter().map(|r| r["due_ms"].as_i64().unwrap()).collect();
    dues.sort();
    let unique: BTreeSet<i64> = dues.iter().copied().collect();
    assert_eq!(unique.len(), dues.len(), "a due time ran twice: {dues:?}");
    for run in runs {
        assert_eq!(run["attempt"], 1, "{run}");
        assert_eq!(run["due_ms"].as_i64().unwrap() % 2000, 0, "{run}");
    }
    let mut by_due: Vec<&Value> = runs.iter().collect();
    by_due.sort_by_key(|r| r["due_ms"].as_i64());
    for pair in by_due.windows(2) {
        let gap =
            (pair[1]["due_ms"].as_i64().unwrap() - pair[0]["due_ms"].as_i64().unwrap()) / 2000;
        assert_eq!(
            gap - 1,
            pair[1]["skipped"].as_i64().unwrap(),
            "due times lost between {} and {}",
            pair[0],
            pair[1]
        );
    }
    dues
}

#[test]
fn a_recurring_schedule_fires_once_per_due_time_across_a_restart() {
    let state = temp_state();
    let first = Runtime::start(state.path());
    let agent = Agent::create_on(first.client(), "sched-cron");
    put(
        &agent,
        "tick",
        json!({ "cron": "*/2 * * * * *", "exec": { "command": "echo $RANDOM >> /ticks" } }),
    );
    let before = wait_for(&agent, "tick", 30, |s| {
        runs(s).iter().filter(|r| r["state"] == "succeeded").count() >= 3
    });
    let ran_before = check_ledger(&runs(&before));
    first.stop();
    let stopped_at = now_ms();
    // Asleep long enough to miss at least one due time.
    std::thread::sleep(Duration::from_millis(4500));

    let second = Runtime::start(state.path());
    let agent = Agent {
        client: second.client(),
        ..agent
    };
    // Nothing wakes the agent but its alarm: wait, then look.
    std::thread::sleep(Duration::from_millis(5000));
    let first_request = now_ms();
    let after = wait_for(&agent, "tick", 30, |s| {
        runs(s)
            .iter()
            .filter(|r| r["started_ms"].as_i64().unwrap() > stopped_at && r["state"] == "succeeded")
            .count()
            >= 2
    });
    let all = runs(&after);
    let dues = check_ledger(&all);
    assert!(dues.len() > ran_before.len());
    let caught_up: Vec<&Value> = all
        .iter()
        .filter(|r| r["started_ms"].as_i64().unwrap() > stopped_at)
        .collect();
    // The persisted alarm woke the agent on its own after the restart.
    assert!(
        caught_up
            .iter()
            .any(|r| r["started_ms"].as_i64().unwrap() < first_request),
        "nothing ran until a request woke the agent: {all:#?}"
    );
    assert!(
        caught_up
            .iter()
            .any(|r| r["skipped"].as_i64().unwrap() >= 1),
        "the missed due times were not accounted for: {all:#?}"
    );
    // Exactly one effect per run: one line per succeeded run.
    let lines = agent.read("/ticks").lines().count();
    let succeeded = all.iter().filter(|r| r["state"] == "succeeded").count();
    // A run may be under way as we read: its line may or may not be there.
    let running = all.iter().filter(|r| r["state"] == "running").count();
    assert!(
        (succeeded..=succeeded + running).contains(&lines),
        "{lines} lines for {succeeded} runs"
    );
    expect_ok(&agent.send("DELETE", "/schedules/tick", b""));
    second.stop();
}

#[test]
fn a_failing_schedule_is_retried_and_every_attempt_is_recorded() {
    let agent = Agent::new("sched-retry");
    put(
        &agent,
        "flaky",
        json!({
            "delay_ms": 0, "exec": { "command": "echo attempt >> /attempts; exit 3" },
            "max_attempts": 3, "retry_delay_ms": 200,
        }),
    );
    let schedule = wait_for(&agent, "flaky", 30, |s| {
        let runs = runs(s);
        runs.len() == 3 && runs.iter().all(finished)
    });
    let runs = runs(&schedule);
    let attempts: Vec<i64> = runs
        .iter()
        .map(|r| r["attempt"].as_i64().unwrap())
        .collect();
    assert_eq!(attempts, vec![3, 2, 1]);
    for run in &runs {
        assert_eq!(run["state"], "failed", "{run}");
        assert!(
            run["error"].as_str().unwrap().contains("exit code 3"),
            "{run}"
        );
        assert_eq!(
            run["due_ms"], runs[0]["due_ms"],
            "retries keep the due time"
        );
    }
    // Retries back off: 200 ms, then 400 ms.
    let started: Vec<i64> = runs
        .iter()
        .rev()
        .map(|r| r["started_ms"].as_i64().unwrap())
        .collect();
    assert!(
        started[1] - started[0] >= 200 && started[2] - started[1] >= 400,
        "{started:?}"
    );
    assert_eq!(agent.read("/attempts"), "attempt\nattempt\nattempt\n");
    std::thread::sleep(Duration::from_millis(1000));
    assert_eq!(
        self::runs(&get(&agent, "flaky")).len(),
        3,
        "retried past max_attempts"
    );

    // A webhook that cannot be reached throws inside the agent: recorded and retried too.
    allow_local_webhooks(&agent);
    put(
        &agent,
        "unreachable",
        json!({
            "delay_ms": 0, "webhook": { "url": "http://127.0.0.1:1/hook" },
            "max_attempts": 2, "retry_delay_ms": 100,
        }),
    );
    let schedule = wait_for(&agent, "unreachable", 30, |s| {
        let runs = self::runs(s);
        runs.len() == 2 && runs.iter().all(finished)
    });
    for run in self::runs(&schedule) {
        assert_eq!(run["state"], "failed");
        assert!(run["error"].as_str().unwrap().contains("webhook"), "{run}");
    }
}

/// One HTTP request received by [`receiver`].
struct Received {
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

/// A tiny HTTP server that answers `status` to every request and hands the
/// requests over.
fn receiver(status: u16) -> (String, mpsc::Receiver<Received>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut headers = Vec::new();
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            loop {
                line.clear();
                reader.read_line(&mut line).unwrap();
                let trimmed = line.trim_end();
                if trimmed.is_empty() {
                    break;
                }
                let (name, value) = trimmed.split_once(':').unwrap();
                headers.push((name.to_ascii_lowercase(), value.trim().to_string()));
            }
            let len = headers
                .iter()
                .find(|(n, _)| n == "content-length")
                .map_or(0, |(_, v)| v.parse().unwrap());
            let mut body = vec![0; len];
            reader.read_exact(&mut body).unwrap();
            let answer =
                format!("HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
            stream.write_all(answer.as_bytes()).unwrap();
            if tx.send(Received { headers, body }).is_err() {
                return;
            }
        }
    });
    (url, rx)
}

#[test]
fn a_webhook_schedule_sends_a_signed_body() {
    let agent = Agent::new("sched-webhook");
    allow_local_webhooks(&agent);
    let (url, requests) = receiver(200);
    let secret = "a-secret-the-receiver-knows";
    put(
        &agent,
        "notify",
        json!({ "delay_ms": 100, "webhook": { "url": url, "secret": secret, "body": { "hello": "world" } } }),
    );
    let request = requests
        .recv_timeout(Duration::from_secs(20))
        .expect("no webhook call");
    let header = |name: &str| {
        request
            .headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("no {name} header"))
    };
    let timestamp: i64 = header("x-stead-timestamp").parse().unwrap();
    assert_eq!(
        header("x-stead-signature"),
        stead_scheduler::signing::signature(secret, timestamp, &request.body)
    );
    assert_ne!(
        header("x-stead-signature"),
        stead_scheduler::signing::signature("another-secret-entirely", timestamp, &request.body)
    );
    let body: Value = serde_json::from_slice(&request.body).unwrap();
    assert_eq!(body["schedule"], "notify");
    assert_eq!(body["body"], json!({ "hello": "world" }));
    assert_eq!(body["attempt"], 1);
    let schedule = wait_for(&agent, "notify", 20, |s| runs(s).iter().any(finished));
    let run = &runs(&schedule)[0];
    assert_eq!(
        (run["state"].clone(), run["status"].clone()),
        (json!("succeeded"), json!(200))
    );

    // A receiver answering 500 is a failure, recorded with its status.
    let (url, requests) = receiver(500);
    put(
        &agent,
        "refused",
        json!({ "delay_ms": 0, "webhook": { "url": url } }),
    );
    requests
        .recv_timeout(Duration::from_secs(20))
        .expect("no webhook call");
    let schedule = wait_for(&agent, "refused", 20, |s| runs(s).iter().any(finished));
    let run = &runs(&schedule)[0];
    assert_eq!(
        (run["state"].clone(), run["status"].clone()),
        (json!("failed"), json!(500))
    );
}

#[test]
fn schedules_are_validated_listed_and_deleted() {
    let agent = Agent::new("sched-crud");
    let bad = |body: Value, code: &str| {
        let reply = agent.send("PUT", "/schedules/x", body.to_string().as_bytes());
        expect_error(&reply, 400, code);
    };
    bad(
        json!({ "cron": "61 * * * *", "exec": { "command": "x" } }),
        "INVALID_CRON",
    );
    bad(
        json!({ "cron": "* * * * *", "tz": "Mars/Base", "exec": { "command": "x" } }),
        "UNKNOWN_TIME_ZONE",
    );
    bad(json!({ "exec": { "command": "x" } }), "INVALID_REQUEST");
    bad(
        json!({ "delay_ms": 5, "exec": { "command": "x", "colour": 1 } }),
        "INVALID_REQUEST",
    );
    bad(
        json!({ "delay_ms": 5, "exec": { "command": "x" }, "catch_up": "maybe" }),
        "INVALID_REQUEST",
    );
    expect_error(
        &agent.send("GET", "/schedules/x", b""),
        404,
        "SCHEDULE_NOT_FOUND",
    );

    // A far-future cron in a time zone: stored, listed, never run here.
    let made = put(
        &agent,
        "yearly",
        json!({ "cron": "0 9 1 1 *", "tz": "Europe/Paris", "exec": { "command": "true" } }),
    );
    let due = made["schedule"]["next_due_ms"].as_i64().unwrap();
    assert!(due > now_ms());
    // 09:00 in Paris on 1 January is 08:00 UTC.
    assert_eq!(due % 86_400_000, 8 * 3_600_000);
    let reply = agent.send(
        "POST",
        "/schedules",
        json!({ "at": "2099-01-01T00:00:00Z", "exec": { "command": "true" } })
            .to_string()
            .as_bytes(),
    );
    expect_status(&reply, 201);
    let generated = reply.json()["schedule"]["id"].as_str().unwrap().to_string();
    assert!(generated.starts_with("s-"));
    let listed = expect_ok(&agent.send("GET", "/schedules", b""));
    assert_eq!(listed["schedules"].as_array().unwrap().len(), 2);
    expect_ok(&agent.send("DELETE", &format!("/schedules/{generated}"), b""));
    expect_error(
        &agent.send("DELETE", &format!("/schedules/{generated}"), b""),
        404,
        "SCHEDULE_NOT_FOUND",
    );
    assert_eq!(
        expect_ok(&agent.send("GET", "/schedules", b""))["schedules"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn a_run_cut_off_by_a_restart_is_recorded_and_retried() {
    let state = temp_state();
    let first = Runtime::start(state.path());
    let agent = Agent::create_on(first.client(), "sched-interrupted");
    put(
        &agent,
        "long",
        json!({
            "delay_ms": 0,
            "exec": {
                "command": "if [ -e go.txt ]; then echo second > second.txt; else sleep 20; fi",
                "backend": "computer", "timeout_ms": 60000,
            },
            "max_attempts": 2, "retry_delay_ms": 100,
        }),
    );
    wait_for(&agent, "long", 30, |s| {
        runs(s).iter().any(|r| r["state"] == "running")
    });
    std::thread::sleep(Duration::from_millis(500));
    // Cut off as a crash cuts it: the runtime goes before its containers
    // (an orderly stop takes the container first, and the run would end as
    // a command whose computer went away).
    first.crash();

    let second = Runtime::start(state.path());
    let agent = Agent {
        client: second.client(),
        ..agent
    };
    // The retry (2 s after the restart is noticed) finds this and ends fast.
    agent.write("/go.txt", "go");
    let schedule = wait_for(&agent, "long", 60, |s| {
        let runs = runs(s);
        runs.len() == 2 && runs.iter().all(finished)
    });
    let runs = runs(&schedule);
    assert_eq!(
        (runs[1]["attempt"].clone(), runs[1]["state"].clone()),
        (json!(1), json!("interrupted"))
    );
    assert!(
        runs[1]["error"].as_str().unwrap().contains("restarted"),
        "{runs:?}"
    );
    assert_eq!(
        (runs[0]["attempt"].clone(), runs[0]["state"].clone()),
        (json!(2), json!("succeeded"))
    );
    assert_eq!(runs[0]["due_ms"], runs[1]["due_ms"]);
    assert_eq!(agent.read("/second.txt"), "second\n");
    second.stop();
}
