//! `stead-bench computer`: what the computer backend costs, in each way it
//! can run.
//!
//! Per mode (real containers through the Container binding, and the
//! local-process fallback, both in the same run when a Docker engine
//! answers): a workspace of many files is written, then the first command
//! on a fresh computer (container start + the full push + the command, to
//! its output), then one file changes and a warm command runs. Reported:
//! the bytes each push ships (as the exec result reports them) against the
//! bytes that changed, the cold start, and the time of a warm `true` on the
//! computer against the same request in the light shell (the HTTP and
//! Durable Object floor) plus `bash -lc true` run directly (the process
//! floor). What remains is the sync's own overhead.

use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use crate::agent::Agent;
use crate::report::{Aim, Report, Row, Unit};
use crate::stats::{millis, timed, Latency};

/// Warm `true` runs per measure.
const RUNS: usize = 20;
/// Aim: warm sync overhead under this many milliseconds.
const OVERHEAD_AIM_MS: f64 = 50.0;
/// Aim: the first output of a cold computer within this many milliseconds.
const COLD_AIM_MS: f64 = 3000.0;

fn exec(agent: &Agent, command: &str, backend: &str) -> Value {
    // The light shell caps its timeout lower than the computer does.
    let timeout_ms = if backend == "shell" { 30_000 } else { 120_000 };
    agent.tool(
        "exec",
        &json!({ "command": command, "backend": backend, "timeout_ms": timeout_ms }),
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

/// Writes `files` files totalling `total_bytes` into the agent's workspace.
pub fn write_workspace(agent: &Agent, files: usize, total_bytes: usize) {
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
}

/// What one mode measured: the cold start, for comparing modes.
pub struct Measured {
    pub cold: Duration,
}

/// Measures one computer (`label` names its mode) on a fresh agent whose
/// workspace [`write_workspace`] filled.
pub fn run(
    agent: &Agent,
    label: &str,
    files: usize,
    total_bytes: usize,
    report: &mut Report,
) -> Measured {
    let section = format!("computer ({label})");
    let row = |measure: String, figure: f64, unit, baseline: f64, label: &str, aim| Row {
        section: section.clone(),
        measure,
        figure: Ok(figure),
        unit,
        baseline: Ok(baseline),
        baseline_label: label.into(),
        aim,
    };
    eprintln!("computer ({label}): cold start");
    let (cold, out) = timed(|| exec(agent, "echo ready", "computer"));
    assert_eq!(out["stdout"], "ready\n", "cold start: {out}");
    let (cold_bytes, cold_manifest) = sent_bytes(&out);
    let workspace = ((total_bytes / files) * files) as f64;
    report.rows.push(row(
        format!(
            "cold start to first output ({files} files, {} MB)",
            total_bytes / 1_000_000
        ),
        millis(cold),
        Unit::Millis,
        COLD_AIM_MS,
        "aim",
        Some(Aim::AtMost(1.0)),
    ));
    report.rows.push(row(
        "cold push: content bytes".into(),
        cold_bytes,
        Unit::Bytes,
        workspace,
        "in the workspace",
        Some(Aim::AtMost(1.0)),
    ));
    report.rows.push(row(
        "cold push: manifest bytes".into(),
        cold_manifest,
        Unit::Bytes,
        workspace,
        "in the workspace",
        None,
    ));

    let changed = "one changed file\n".repeat(1000);
    agent.tool(
        "write",
        &json!({ "path": "/ws/d07/f00007.txt", "content": changed }),
    );
    let warm = exec(agent, "true", "computer");
    let (warm_bytes, warm_manifest) = sent_bytes(&warm);
    report.rows.push(row(
        "warm push after a one-file change: content bytes".into(),
        warm_bytes,
        Unit::Bytes,
        changed.len() as f64,
        "changed",
        Some(Aim::AtMost(1.1)),
    ));
    report.rows.push(row(
        "warm push: manifest bytes (per-file overhead)".into(),
        warm_manifest,
        Unit::Bytes,
        changed.len() as f64,
        "changed",
        None,
    ));

    eprintln!("computer ({label}): warm `true`, {RUNS} runs each way");
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
    report.rows.push(row(
        "warm `true` on the computer (p50)".into(),
        millis(computer),
        Unit::Millis,
        millis(shell),
        "`true` in the light shell (HTTP + DO floor)",
        None,
    ));
    report.rows.push(row(
        "`bash -lc true` run directly on the host (p50)".into(),
        millis(native),
        Unit::Millis,
        millis(computer),
        "warm `true` on the computer",
        None,
    ));
    // Can come out below zero when the machine is noisy: the sync then
    // costs less than the spread of the measures.
    let overhead = millis(computer) - millis(shell) - millis(native);
    report.rows.push(row(
        "warm overhead (computer - shell - direct)".into(),
        overhead,
        Unit::Millis,
        OVERHEAD_AIM_MS,
        "aim",
        Some(Aim::AtMost(1.0)),
    ));
    Measured { cold }
}

/// The row comparing the modes' cold starts, measured in the same run.
pub fn compare_cold(container: &Measured, local: &Measured) -> Row {
    Row {
        section: "computer (real container)".into(),
        measure: "cold start to first output, against the local process".into(),
        figure: Ok(millis(container.cold)),
        unit: Unit::Millis,
        baseline: Ok(millis(local.cold)),
        baseline_label: "local-process cold start".into(),
        aim: None,
    }
}
