//! End-to-end: computer jobs longer than one alarm. The real Worker under
//! `wrangler dev` runs with its per-alarm job slice made small through
//! configuration (`JOB_SLICE_MS`), so a detached command on the computer
//! (in real containers when a Docker engine runs, else as a local
//! process) outlives several alarms: it keeps running while alarms come
//! and go, each alarm reads its output on from where the job's log ends,
//! and the last one applies its changes.

mod common;

use std::time::{Duration, Instant};

use common::{expect_ok, expect_status, Agent};
use serde_json::json;
use stead_harness::{temp_state, Runtime};

/// Short enough that the command below outlasts several alarms.
const SLICE_MS: u64 = 300;

#[test]
fn a_detached_computer_job_outlives_several_alarms() {
    let state = temp_state();
    let slice = format!("JOB_SLICE_MS:{SLICE_MS}");
    let runtime = Runtime::start_with(
        state.path(),
        stead_harness::ComputerMode::from_env(),
        &[&slice],
    );
    eprintln!("computer: {}", runtime.mode().describe());
    let agent = Agent::create_on(runtime.client(), "computer-long-job");
    agent.write("/in.txt", "input\n");

    // About 4 s of work: many times the slice.
    let command = "for i in $(seq 1 8); do echo line $i; sleep 0.5; done; \
                   cat in.txt > out.txt; echo built >> out.txt";
    let reply = agent.call(
        "exec",
        json!({ "command": command, "backend": "computer", "detach": true, "timeout_ms": 120_000 }),
    );
    expect_status(&reply, 202);
    let id = reply.json()["job"]["id"].as_i64().expect("a job id");

    // While it runs, the job says which alarm follows it.
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut most_alarms = 0;
    let job = loop {
        let job = expect_ok(&agent.send("GET", &format!("/jobs/{id}"), b""))["job"].clone();
        if let Some(alarms) = job["computer"]["alarms"].as_i64() {
            most_alarms = most_alarms.max(alarms);
        }
        if !matches!(job["state"].as_str(), Some("queued" | "running")) {
            break job;
        }
        assert!(Instant::now() < deadline, "job {id} never ended: {job}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(job["state"], "succeeded", "{job}");
    assert_eq!(job["exit_code"], 0, "{job}");
    assert!(
        most_alarms >= 3,
        "the command outlived several alarms (seen: {most_alarms})"
    );
    assert!(
        job["computer"].is_null(),
        "an ended job runs nowhere: {job}"
    );

    // Each byte of output arrived once, in order, across the alarms.
    let page = expect_ok(&agent.send("GET", &format!("/jobs/{id}/output"), b""));
    let text: String = page["output"]
        .as_array()
        .expect("output pieces")
        .iter()
        .map(|piece| piece["data"].as_str().expect("text"))
        .collect();
    let expected: String = (1..=8).map(|i| format!("line {i}\n")).collect();
    assert_eq!(text, expected, "{page}");
    // Its changes were applied when it exited.
    assert_eq!(agent.read("/out.txt"), "input\nbuilt\n");

    // The computer is free again for a plain command.
    let out = agent.ok(
        "exec",
        json!({ "command": "cat out.txt", "backend": "computer", "timeout_ms": 60_000 }),
    );
    assert_eq!(out["stdout"], "input\nbuilt\n", "{out}");
}
