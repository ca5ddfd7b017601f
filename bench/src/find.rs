//! Measure 4: finding files by name in the grep corpus (2,000 files in 121
//! directories, a third of them `.rs`), the `glob` tool (`**/*.rs`) and the
//! light shell's `find -type f -name '*.rs'`, against GNU `find` on the same
//! files in a local temporary folder (process spawn included, as for
//! `grep -r`). Each must find the same files as GNU `find`.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use serde_json::json;

use crate::agent::{expect_success, Agent};
use crate::grep::{EXTENSIONS, ROOT};
use crate::report::{Aim, Report, Row, Unit};
use crate::stats::{best_of, millis, timed};

const RUNS: usize = 5;
const AIM: Aim = Aim::AtMost(1.5);
const GLOB: &str = "**/*.rs";
/// The glob tool's largest page.
const PAGE: usize = 10_000;

/// A way to find the files by name through the agent.
type Way = fn(&Agent) -> BTreeSet<String>;

/// The files the glob tool finds (one page holds them all).
fn agent_glob(agent: &Agent) -> BTreeSet<String> {
    let page = agent.tool(
        "glob",
        &json!({ "path": ROOT, "pattern": GLOB, "limit": PAGE }),
    );
    page["matches"]
        .as_array()
        .expect("glob matches")
        .iter()
        .filter(|m| m["type"] == "file")
        .filter_map(|m| m["path"].as_str().map(String::from))
        .collect()
}

/// The files the light shell's `find` prints.
fn agent_find(agent: &Agent) -> BTreeSet<String> {
    let call = agent.tool_call(
        "exec",
        &json!({ "command": format!("find {ROOT} -type f -name '*.rs'"), "backend": "shell" }),
    );
    let reply = agent.send(&call);
    expect_success(&reply, "exec find");
    let answer = reply.json();
    assert_eq!(answer["exit_code"], 0, "find failed: {answer}");
    answer["stdout"]
        .as_str()
        .expect("find stdout")
        .lines()
        .map(String::from)
        .collect()
}

/// The files GNU `find` prints in `dir`, named as the agent names them.
fn local_find(dir: &Path) -> BTreeSet<String> {
    let output = Command::new("find")
        .arg(dir)
        .args(["-type", "f", "-name", "*.rs"])
        .env("LC_ALL", "C")
        .output()
        .expect("run find");
    assert!(output.status.success(), "find failed");
    let prefix = dir.to_str().expect("UTF-8 temp path");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| format!("{ROOT}{}", line.strip_prefix(prefix).unwrap_or(line)))
        .collect()
}

/// Measures both ways over the corpus `crate::grep` uploaded, whose local
/// copy is `dir`.
pub fn run(agent: &Agent, dir: &Path, files: usize, report: &mut Report) {
    eprintln!("find: {GLOB} over {files} files");
    let (local_time, local) = best_of(RUNS, |_| timed(|| local_find(dir)));
    let section = format!(
        "find: {files} files in {} directories, 1 in {} `.rs`, best of {RUNS}; vs GNU find on a local copy",
        1 + 20 + 100,
        EXTENSIONS.len()
    );
    let ways: [(&str, Way); 2] = [
        ("glob tool `**/*.rs`", agent_glob),
        ("shell `find -type f -name '*.rs'`", agent_find),
    ];
    for (name, way) in ways {
        let (time, found) = best_of(RUNS, |_| timed(|| way(agent)));
        if found != local {
            report.warn(format!(
                "find: the {name} found {} files, GNU find {}",
                found.len(),
                local.len()
            ));
        }
        report.rows.push(Row {
            section: section.clone(),
            measure: format!("{name} ({} files)", found.len()),
            figure: Ok(millis(time)),
            unit: Unit::Millis,
            baseline: Ok(millis(local_time)),
            baseline_label: "find -name".into(),
            aim: Some(AIM),
        });
    }
}
