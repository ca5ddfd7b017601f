//! `stead-bench ui`: the inspector (`/ui/`) in the system's Chromium.
//!
//! A fresh agent gets 10,000 small files in its root (quick: 1,000), the
//! worst case for a lazy tree: opening the page lists them all. Measured by
//! `bench/ui.mjs` (playwright-core, the browser `CHROMIUM` names or
//! Debian's): five times, the time from a navigation to `/ui/` (already
//! signed in) to a tree holding every entry, against the floor of the same
//! listing (`ls` of the root, every page) fetched by a plain client in the
//! same run. Aim: at most 5x the floor (and, the aim, under 1 s
//! locally). Then the page's size: what it loads before the terminal, raw
//! and gzip-compressed (aim: under 300 KB compressed).

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use crate::agent::Agent;
use crate::report::{Aim, Report, Row, Unit};

/// How many files the root holds.
pub fn files(quick: bool) -> usize {
    if quick {
        1_000
    } else {
        10_000
    }
}

/// Writes `count` small files into the agent's root, in light-shell
/// batches.
pub fn seed(agent: &Agent, count: usize) {
    const BATCH: usize = 1_000;
    for start in (0..count).step_by(BATCH) {
        let end = (start + BATCH).min(count);
        let script = format!(
            "i={start}; while [ $i -lt {end} ]; do echo \"file $i\" > /f$(printf %05d $i).txt; i=$((i+1)); done"
        );
        let answer = agent.tool("exec", &json!({ "command": script }));
        assert_eq!(answer["exit_code"], 0, "seeding failed: {answer}");
    }
}

fn chromium() -> String {
    std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into())
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[sorted.len() / 2]
}

fn numbers(value: &Value) -> Vec<f64> {
    value
        .as_array()
        .map(|list| list.iter().filter_map(Value::as_f64).collect())
        .unwrap_or_default()
}

/// Runs the browser side against `base` and adds its rows to `report`.
pub fn run(agent: &Agent, base: &str, token: &str, count: usize, report: &mut Report) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let bin = root.join("node_modules/.bin");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // A browser resolves *.localhost, the ports' origins, and treats
    // localhost as secure (the session cookie is Secure).
    let base = base.replace("127.0.0.1", "localhost");
    let output = Command::new("node")
        .arg(root.join("bench/ui.mjs"))
        .env("PATH", path)
        .env("STEAD_UI_BASE", &base)
        .env("STEAD_UI_AGENT", agent.id())
        .env("STEAD_UI_TOKEN", token)
        .env("STEAD_UI_FILES", count.to_string())
        .env("CHROMIUM", chromium())
        .output()
        .expect("node runs");
    if !output.status.success() {
        report.warn(format!(
            "the browser side failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
        return;
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let found: Value = stdout
        .lines()
        .last()
        .and_then(|line| serde_json::from_str(line).ok())
        .expect("bench/ui.mjs reports JSON");
    let tree = median(&numbers(&found["tree_ms"]));
    let floor = median(&numbers(&found["floor_ms"]));
    let section = format!("inspector, {count} files in the root");
    report.rows.push(Row {
        section: section.clone(),
        measure: "navigation to interactive tree (median)".into(),
        figure: Ok(tree),
        unit: Unit::Millis,
        baseline: Ok(floor),
        baseline_label: "(ls of the root by a plain client)".into(),
        aim: Some(Aim::AtMost(5.0)),
    });
    if tree > 1000.0 {
        report.warn(format!("the tree took {tree:.0} ms, over the 1 s aim"));
    }
    let page = found["page"].as_array().cloned().unwrap_or_default();
    let sum = |key: &str| {
        page.iter()
            .filter_map(|file| file[key].as_f64())
            .sum::<f64>()
    };
    let (raw, gzip) = (sum("bytes"), sum("gzip"));
    report.rows.push(Row {
        section,
        measure: "page before the terminal, gzip-compressed".into(),
        figure: Ok(gzip),
        unit: Unit::Bytes,
        baseline: Ok(raw),
        baseline_label: "(as served)".into(),
        aim: None,
    });
    if gzip > 300.0 * 1024.0 {
        report.warn(format!(
            "the page is {gzip:.0} bytes compressed, over the 300 KB aim"
        ));
    }
    report.details = json!({
        "tree_ms": found["tree_ms"], "floor_ms": found["floor_ms"], "page": page,
        "requests": found["requests"],
    });
}
