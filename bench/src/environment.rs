//! `stead-bench environment`: what a restored durable environment costs a
//! cold start (see the README's "The durable environment").
//!
//! In real containers only (the local program is never released, so
//! nothing is ever restored there). On a fresh agent with a small
//! workspace: the cold start without an environment (the first command on
//! a computer that does not run, to its output); then a dependency tree of
//! 200 MB (`--quick`: 20 MB) is made on the computer in `node_modules`,
//! the computer is released (`POST .../computer/stop`, which saves it),
//! and the cold start is measured again, now with the restore before the
//! first command. The rows: the cold start with the restored environment
//! against the one without it, in the same run, and against the aim of
//! 5 s; the save at release against the environment's size.

use serde_json::{json, Value};

use crate::agent::Agent;
use crate::report::{Aim, Report, Row, Unit};
use crate::stats::{millis, timed};

/// Aim: the first output of a cold computer with its environment restored.
const RESTORED_AIM_MS: f64 = 5000.0;

/// Files of the environment, each 512 KiB of distinct content.
const FILE_BYTES: usize = 512 * 1024;

fn on_computer(agent: &Agent, command: &str) -> Value {
    agent.tool(
        "exec",
        &json!({ "command": command, "backend": "computer", "timeout_ms": 600_000 }),
    )
}

fn stop(agent: &Agent) {
    let reply = agent.send(&agent.route_call("POST", "computer/stop", Vec::new()));
    assert!(
        reply.status == 200,
        "stop: {}",
        String::from_utf8_lossy(&reply.body)
    );
}

/// Measures on `agent` (whose computer runs in real containers); `bytes`
/// is the environment's size.
pub fn run(agent: &Agent, bytes: usize, report: &mut Report) {
    let section = "environment (real container)";
    agent.tool(
        "write",
        &json!({ "path": "/app/main.py", "content": "print('hi')\n" }),
    );
    eprintln!("environment: cold start without an environment");
    let (bare, out) = timed(|| on_computer(agent, "echo ready"));
    assert_eq!(out["stdout"], "ready\n", "{out}");

    let files = bytes / FILE_BYTES;
    eprintln!("environment: making {files} files of {FILE_BYTES} bytes in node_modules");
    let make = format!(
        "set -e; for i in $(seq 1 {files}); do d=node_modules/pkg$((i % 40)); mkdir -p $d; \
         head -c {FILE_BYTES} /dev/urandom > $d/blob$i; done; du -sb node_modules | cut -f1"
    );
    let out = on_computer(agent, &make);
    assert_eq!(out["exit_code"], 0, "{out}");
    let (save, ()) = timed(|| stop(agent));
    let shown = agent.send(&agent.route_call("GET", "computer", Vec::new()));
    let environment = shown.json()["environment"].clone();
    assert_eq!(environment["state"], "ready", "{environment}");

    eprintln!("environment: cold start with the environment restored");
    let (restored, out) = timed(|| on_computer(agent, "ls node_modules/pkg1 | wc -l"));
    assert_eq!(out["exit_code"], 0, "{out}");
    assert!(
        out["stdout"].as_str().unwrap_or("0").trim() != "0",
        "restored: {out}"
    );
    let mb = bytes / 1_000_000;
    let without = (millis(bare), "cold start without an environment");
    report.rows.push(Row::measured(
        section,
        format!("cold start with a restored {mb} MB environment, against one without"),
        (millis(restored), Unit::Millis),
        without,
        None,
    ));
    report.rows.push(Row::measured(
        section,
        format!("cold start with a restored {mb} MB environment"),
        (millis(restored), Unit::Millis),
        (RESTORED_AIM_MS, "aim"),
        Some(Aim::AtMost(1.0)),
    ));
    report.rows.push(Row::measured(
        section,
        format!("release saving a {mb} MB environment"),
        (millis(save), Unit::Millis),
        without,
        None,
    ));
}
