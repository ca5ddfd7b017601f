//! Measure 3: the `grep` tool over a text corpus, against GNU `grep -r` on
//! the same files in a local temporary folder (which `crate::find` then
//! searches by name).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::json;

use crate::agent::Agent;
use crate::gen::{document, Rng};
use crate::report::{Aim, Report, Row, Unit};
use crate::stats::{best_of, millis, timed};

pub const ROOT: &str = "/corpus";
const RUNS: usize = 5;
const AIM: Aim = Aim::AtMost(3.0);
/// The tool's largest page of files.
const PAGE: usize = 10_000;

/// One search, as the tool and as `grep` run it.
struct Search {
    name: &'static str,
    pattern: &'static str,
    regex: bool,
    grep_flags: &'static str,
}

const SEARCHES: [Search; 2] = [
    Search {
        name: "literal",
        pattern: "needle_literal",
        regex: false,
        grep_flags: "-rl",
    },
    Search {
        name: "regex",
        pattern: "err(or)?_[0-9]{3}",
        regex: true,
        grep_flags: "-rlE",
    },
];

/// Lines put into some files: matches for the searches and near misses.
/// Generated text has no `_` or digits, so nothing else matches.
fn planted(i: usize) -> Vec<String> {
    let mut lines = Vec::new();
    if i % 89 == 3 {
        lines.push(format!("    // found the needle_literal here, file {i}"));
    }
    if i % 67 == 5 {
        let code = ["error_503", "err_404", "error_418"][i % 3];
        lines.push(format!(
            "2024-05-01T12:00:{:02}Z request failed: {code} upstream",
            i % 60
        ));
    }
    if i % 13 == 0 {
        lines.push("    note: needle literal, error-404 and err_12x are near misses".into());
    }
    lines
}

/// The corpus files' extensions, in turn: a third of them are `.rs`, which
/// `crate::find` looks for.
pub const EXTENSIONS: [&str; 3] = ["rs", "txt", "md"];

/// `(path under ROOT, content)` for `files` files of about `bytes` in all,
/// in a tree of 20 directories with 5 subdirectories each.
fn corpus(files: usize, bytes: usize) -> Vec<(String, String)> {
    let mut rng = Rng::new(3);
    let mean = bytes / files;
    (0..files)
        .map(|i| {
            let ext = EXTENSIONS[i % EXTENSIONS.len()];
            let path = format!("/d{:02}/s{}/f{i:05}.{ext}", i % 20, (i / 20) % 5);
            let len = rng.between(mean / 2, mean * 3 / 2);
            (path, document(&mut rng, len, &planted(i)))
        })
        .collect()
}

/// Writes the corpus through the JSON write tool (not timed).
fn upload(agent: &Agent, corpus: &[(String, String)]) {
    for (path, content) in corpus {
        agent.tool(
            "write",
            &json!({ "path": format!("{ROOT}{path}"), "content": content }),
        );
    }
}

fn write_local(dir: &Path, corpus: &[(String, String)]) {
    for (path, content) in corpus {
        let file = dir.join(path.trim_start_matches('/'));
        std::fs::create_dir_all(file.parent().expect("parent")).expect("local corpus dir");
        std::fs::write(file, content).expect("local corpus file");
    }
}

/// The files the tool finds, following pages until the last.
fn agent_grep(agent: &Agent, search: &Search) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut cursor = None;
    loop {
        let mut request = json!({
            "pattern": search.pattern, "regex": search.regex, "path": ROOT,
            "output": "files", "limit": PAGE,
        });
        if let Some(cursor) = cursor {
            request["cursor"] = cursor;
        }
        let page = agent.tool("grep", &request);
        let files = page["files"].as_array().expect("grep files");
        found.extend(files.iter().filter_map(|f| f.as_str().map(String::from)));
        if page["truncated"] != true {
            return found;
        }
        cursor = Some(page["next_cursor"].clone());
    }
}

/// The files `grep -r` finds in `dir`, named as the tool names them.
fn local_grep(dir: &Path, search: &Search) -> BTreeSet<String> {
    let output = Command::new("grep")
        .arg(search.grep_flags)
        .args(["--", search.pattern])
        .arg(dir)
        .env("LC_ALL", "C")
        .output()
        .expect("run grep");
    // Status 1 means no match, which the comparison reports.
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "grep failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let prefix = dir.to_str().expect("UTF-8 temp path");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| format!("{ROOT}{}", line.strip_prefix(prefix).unwrap_or(line)))
        .collect()
}

fn compare(
    search: &Search,
    agent: &BTreeSet<String>,
    local: &BTreeSet<String>,
    report: &mut Report,
) {
    if agent != local {
        let only_agent: Vec<_> = agent.difference(local).take(5).collect();
        let only_local: Vec<_> = local.difference(agent).take(5).collect();
        report.warn(format!(
            "grep {}: the tool found {} files, grep -r {}; only the tool: {only_agent:?}, \
             only grep -r: {only_local:?}",
            search.name,
            agent.len(),
            local.len()
        ));
    }
    if local.is_empty() {
        report.warn(format!(
            "grep {}: no file matches, so little is measured",
            search.name
        ));
    }
}

fn best<T>(f: impl Fn() -> T) -> (Duration, T) {
    best_of(RUNS, |_| timed(&f))
}

/// Uploads the corpus, measures the searches, and returns the local copy
/// (for `crate::find`).
pub fn run(agent: &Agent, files: usize, bytes: usize, report: &mut Report) -> tempfile::TempDir {
    let corpus = corpus(files, bytes);
    let total: usize = corpus.iter().map(|(_, content)| content.len()).sum();
    eprintln!(
        "grep: uploading {files} files ({:.1} MB)",
        total as f64 / 1e6
    );
    upload(agent, &corpus);
    let dir = tempfile::tempdir().expect("temp dir");
    write_local(dir.path(), &corpus);
    let section = format!(
        "grep: {files} files, {:.1} MB, output=files, best of {RUNS}; vs GNU grep on a local copy",
        total as f64 / 1e6
    );
    for search in &SEARCHES {
        eprintln!("grep: {} {:?}", search.name, search.pattern);
        let (agent_time, agent_found) = best(|| agent_grep(agent, search));
        let (local_time, local_found) = best(|| local_grep(dir.path(), search));
        compare(search, &agent_found, &local_found, report);
        report.rows.push(Row {
            section: section.clone(),
            measure: format!(
                "{} `{}` ({} files match)",
                search.name,
                search.pattern,
                agent_found.len()
            ),
            figure: Ok(millis(agent_time)),
            unit: Unit::Millis,
            baseline: Ok(millis(local_time)),
            baseline_label: format!("grep {}", search.grep_flags),
            aim: Some(AIM),
        });
    }
    dir
}
