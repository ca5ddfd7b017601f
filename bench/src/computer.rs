//! `stead-bench computer`: what the computer backend's sync costs.
//!
//! A workspace of many files is pushed to a cold computer, then one file
//! changes and a warm command runs: the bytes each push ships (as the exec
//! result reports them) against the bytes that changed, and the time of a
//! warm `true` on the computer against the same request in the light shell
//! (the HTTP and Durable Object floor) plus `bash -lc true` run directly
//! (the process floor). What remains is the sync's own overhead.

use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use crate::agent::Agent;
use crate::report::{Aim, Report, Row, Unit};
use crate::stats::{millis, timed, Latency};

const SECTION: &str = "computer sync";
/// Warm `true` runs per measure.
const RUNS: usize = 20;
/// Aim: warm sync overhead under this many milliseconds.
const OVERHEAD_AIM_MS: f64 = 50.0;

fn exec(agent: &Agent, command: &str, backend: &str) -> Value {
    agent.tool(
        "exec",
        &json!({ "command": command, "backend": backend, "timeout_ms": 120_000 }),
    )
}

fn sent_bytes(out: &Value) -> (f64, f64) {
    let sent = &out["sync"]["sent"];
    (
        sent["bytes"].as_f64().unwrap_or(f64::NAN),
        sent["manifest_bytes"].as_f64().unwrap_or(f64::NAN),
    )
}

/// Median time of `RUNS` runs of `f`.
fn median(mut f: impl FnMut() -> Duration) -> Duration {
    let samples: Vec<Duration> = (0..RUNS).map(|_| f()).collect();
    Latency::of(&samples).p50
}

pub fn run(agent: &Agent, files: usize, total_bytes: usize, report: &mut Report) {
    let size = total_bytes / files;
    eprintln!("computer: writing {files} files of {size} bytes");
    for i in 0..files {
        // Distinct content per file, so no chunk is shared.
        let line = format!("file {i:05} ");
        let content: String = line.repeat(size / line.len() + 1)[..size].to_string();
        agent.tool(
            "write",
            &json!({ "path": format!("/ws/d{:02}/f{i:05}.txt", i % 50), "content": content }),
        );
    }
    eprintln!("computer: cold push");
    let (cold_time, cold) = timed(|| exec(agent, "true", "computer"));
    let (cold_bytes, cold_manifest) = sent_bytes(&cold);
    let workspace = (files * size) as f64;
    report.rows.push(Row {
        section: SECTION.into(),
        measure: format!("cold push: content bytes ({files} files)"),
        figure: Ok(cold_bytes),
        unit: Unit::Bytes,
        baseline: Ok(workspace),
        baseline_label: "in the workspace".into(),
        aim: Some(Aim::AtMost(1.0)),
    });
    report.rows.push(Row {
        section: SECTION.into(),
        measure: "cold push: manifest bytes".into(),
        figure: Ok(cold_manifest),
        unit: Unit::Bytes,
        baseline: Ok(workspace),
        baseline_label: "in the workspace".into(),
        aim: None,
    });

    let changed = "one changed file\n".repeat(1000);
    agent.tool(
        "write",
        &json!({ "path": "/ws/d07/f00007.txt", "content": changed }),
    );
    let warm = exec(agent, "true", "computer");
    let (warm_bytes, warm_manifest) = sent_bytes(&warm);
    report.rows.push(Row {
        section: SECTION.into(),
        measure: "warm push after a one-file change: content bytes".into(),
        figure: Ok(warm_bytes),
        unit: Unit::Bytes,
        baseline: Ok(changed.len() as f64),
        baseline_label: "changed".into(),
        aim: Some(Aim::AtMost(1.1)),
    });
    report.rows.push(Row {
        section: SECTION.into(),
        measure: "warm push: manifest bytes (per-file overhead)".into(),
        figure: Ok(warm_manifest),
        unit: Unit::Bytes,
        baseline: Ok(changed.len() as f64),
        baseline_label: "changed".into(),
        aim: None,
    });

    eprintln!("computer: warm `true`, {RUNS} runs each way");
    let computer = median(|| timed(|| exec(agent, "true", "computer")).0);
    let shell = median(|| timed(|| exec(agent, "true", "shell")).0);
    let native = median(|| {
        timed(|| {
            // The environment the computer gives a command: a clean one,
            // with a HOME that holds no profile.
            let status = Command::new("bash")
                .args(["-lc", "true"])
                .env_clear()
                .env("PATH", "/usr/local/bin:/usr/bin:/bin")
                .env("HOME", std::env::temp_dir())
                .env("LANG", "C.UTF-8")
                .status();
            assert!(status.is_ok_and(|s| s.success()), "bash -lc true failed");
        })
        .0
    });
    report.rows.push(Row {
        section: SECTION.into(),
        measure: "cold push + `true` on the computer".into(),
        figure: Ok(millis(cold_time)),
        unit: Unit::Millis,
        baseline: Ok(millis(computer)),
        baseline_label: "warm".into(),
        aim: None,
    });
    report.rows.push(Row {
        section: SECTION.into(),
        measure: "warm `true` on the computer (p50)".into(),
        figure: Ok(millis(computer)),
        unit: Unit::Millis,
        baseline: Ok(millis(shell)),
        baseline_label: "`true` in the light shell (HTTP + DO floor)".into(),
        aim: None,
    });
    report.rows.push(Row {
        section: SECTION.into(),
        measure: "`bash -lc true` run directly (p50)".into(),
        figure: Ok(millis(native)),
        unit: Unit::Millis,
        baseline: Ok(millis(computer)),
        baseline_label: "warm `true` on the computer".into(),
        aim: None,
    });
    // Can come out below zero when the machine is noisy: the sync then
    // costs less than the spread of the measures.
    let overhead = millis(computer) - millis(shell) - millis(native);
    report.rows.push(Row {
        section: SECTION.into(),
        measure: "warm sync overhead (computer - shell - direct)".into(),
        figure: Ok(overhead),
        unit: Unit::Millis,
        baseline: Ok(OVERHEAD_AIM_MS),
        baseline_label: "aim".into(),
        aim: Some(Aim::AtMost(1.0)),
    });
}
