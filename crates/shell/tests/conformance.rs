//! The conformance harness: runs the recorded corpus in
//! /work/shared/corpus against the shell and prints pass rates per file.
//!
//! `cargo test -p stead-shell --release --test conformance -- --nocapture`
//! Environment: `CONFORMANCE_FILTER=substring` (file or case name),
//! `CONFORMANCE_VERBOSE=1` (print each failure). The overall pass rates must
//! stay at or above the floors in `conformance-floor.txt`; when the corpus
//! is absent the test passes without checking.

mod common;

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use stead_shell::{exec_with_commands, ExecRequest, Limits};
use stead_vfs::{VPath, Vfs, WriteOptions};

const CORPUS: &str = "/work/shared/corpus";
const ROOT: &str = "/work";

struct Case {
    name: String,
    script: String,
    files: Vec<(String, String)>,
    stdout: Option<String>,
    status: Option<i32>,
}

fn limits() -> Limits {
    Limits {
        max_wall_ms: 2_000,
        max_output_bytes: 1 << 20,
        max_loop_iterations: 200_000,
        max_commands: 500_000,
        max_call_depth: 100,
        ..Limits::default()
    }
}

/// Runs one case; `Err` carries what differed.
fn run_case(case: &Case) -> Result<(), String> {
    let db = common::db();
    let vfs = Vfs::new(&db, 1_700_000_000_000);
    let opts = WriteOptions {
        mode: None,
        create_parents: true,
    };
    vfs.mkdir(&VPath::parse(ROOT).unwrap(), true, None)
        .map_err(|e| e.to_string())?;
    vfs.mkdir(&VPath::parse("/tmp").unwrap(), true, None)
        .map_err(|e| e.to_string())?;
    for (path, content) in &case.files {
        let p = VPath::parse_from(path, &VPath::parse(ROOT).unwrap()).map_err(|e| e.to_string())?;
        vfs.write(&p, content.as_bytes(), opts)
            .map_err(|e| e.to_string())?;
    }
    let env = BTreeMap::from([
        ("TMP".to_string(), "/tmp".to_string()),
        ("SH".to_string(), "bash".to_string()),
    ]);
    let request = ExecRequest {
        command: case.script.clone(),
        cwd: VPath::parse(ROOT).unwrap(),
        env,
        stdin: Vec::new(),
        limits: limits(),
    };
    let r = exec_with_commands(&vfs, &common::HostClock, request, common::EXTRA);
    let stdout = String::from_utf8_lossy(&r.stdout).into_owned();
    let mut problems = Vec::new();
    if let Some(want) = &case.stdout {
        if *want != stdout {
            problems.push(format!("stdout: want {want:?}\n           got  {stdout:?}"));
        }
    }
    if let Some(want) = case.status {
        if want != r.exit_code {
            problems.push(format!("status: want {want}, got {}", r.exit_code));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        let stderr = String::from_utf8_lossy(&r.stderr);
        let stderr: String = stderr.chars().take(300).collect();
        problems.push(format!("stderr: {stderr:?}"));
        Err(problems.join("\n  "))
    }
}

fn comparison_cases(path: &Path) -> Vec<Case> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    let Some(map) = json.as_object() else {
        return Vec::new();
    };
    map.iter()
        .map(|(id, v)| {
            let files = v["files"]
                .as_object()
                .map(|f| {
                    f.iter()
                        .map(|(k, c)| (k.clone(), c.as_str().unwrap_or("").to_string()))
                        .collect()
                })
                .unwrap_or_default();
            let command = v["command"].as_str().unwrap_or("").to_string();
            Case {
                name: format!("{id}: {}", command.lines().next().unwrap_or("")),
                script: command,
                files,
                stdout: v["stdout"].as_str().map(str::to_string),
                status: v["exitCode"].as_i64().map(|s| s as i32),
            }
        })
        .collect()
}

/// Applies one `## key: value` line (already stripped of any shell prefix).
fn apply_meta(case: &mut Case, key: &str, value: &str) {
    match key {
        "stdout" => case.stdout = Some(format!("{}\n", value.strip_prefix(' ').unwrap_or(value))),
        "stdout-json" => case.stdout = serde_json::from_str(value.trim()).ok(),
        "status" => case.status = value.trim().parse().ok(),
        _ => {}
    }
}

/// Parses Oils spec tests; cases marked SKIP are left out.
fn spec_cases(path: &Path) -> Vec<Case> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut cases = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let Some(name) = line.strip_prefix("#### ") else {
            continue;
        };
        let mut case = Case {
            name: name.to_string(),
            script: String::new(),
            files: Vec::new(),
            stdout: None,
            status: Some(0),
        };
        let mut bash_stdout: Option<Option<String>> = None;
        let mut bash_status: Option<Option<i32>> = None;
        let mut skip = false;
        while let Some(&l) = lines.peek() {
            if l.starts_with("#### ") {
                break;
            }
            lines.next();
            let Some(meta) = l.strip_prefix("## ") else {
                if !l.starts_with("##") || l.starts_with("###") {
                    case.script.push_str(l);
                    case.script.push('\n');
                }
                continue;
            };
            if meta.starts_with("SKIP") {
                skip = true;
                continue;
            }
            // `OK bash/mksh stdout: x`, `N-I bash STDOUT:`, or plain `stdout: x`
            let mut words = meta.splitn(3, ' ');
            let first = words.next().unwrap_or("");
            let (shells, rest) = if matches!(first, "OK" | "BUG" | "N-I") {
                let shells = words.next().unwrap_or("");
                (Some(shells), words.next().unwrap_or(""))
            } else {
                (None, meta)
            };
            let for_bash = shells.is_none_or(|s| s.split('/').any(|x| x == "bash"));
            let (key, value) = rest.split_once(':').unwrap_or((rest, ""));
            let value = value.to_string();
            let block = if key == "STDOUT" || key == "STDERR" {
                let mut b = String::new();
                while let Some(&bl) = lines.peek() {
                    if bl == "## END" {
                        lines.next();
                        break;
                    }
                    if bl.starts_with("## ") || bl.starts_with("#### ") {
                        break;
                    }
                    lines.next();
                    b.push_str(bl);
                    b.push('\n');
                }
                Some(b)
            } else {
                None
            };
            if !for_bash {
                continue;
            }
            let mut target = Case {
                name: String::new(),
                script: String::new(),
                files: Vec::new(),
                stdout: None,
                status: None,
            };
            match (key, block) {
                ("STDOUT", Some(b)) => target.stdout = Some(b),
                ("STDERR", _) => continue,
                _ => apply_meta(&mut target, key, &value),
            }
            if shells.is_some() {
                if target.stdout.is_some() {
                    bash_stdout = Some(target.stdout);
                }
                if target.status.is_some() {
                    bash_status = Some(target.status);
                }
            } else {
                if target.stdout.is_some() {
                    case.stdout = target.stdout;
                }
                if target.status.is_some() {
                    case.status = target.status;
                }
            }
        }
        if let Some(s) = bash_stdout {
            case.stdout = s;
        }
        if let Some(s) = bash_status {
            case.status = s;
        }
        if !skip {
            cases.push(case);
        }
    }
    cases
}

/// Runs a suite; returns (passed, total).
fn run_suite(label: &str, dir: &str, ext: &str, load: fn(&Path) -> Vec<Case>) -> (usize, usize) {
    let filter = std::env::var("CONFORMANCE_FILTER").unwrap_or_default();
    let verbose = std::env::var("CONFORMANCE_VERBOSE").is_ok_and(|v| !v.is_empty() && v != "0");
    let mut paths: Vec<_> = std::fs::read_dir(Path::new(CORPUS).join(dir))
        .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    paths.retain(|p| p.to_string_lossy().ends_with(ext));
    paths.sort();
    let (mut passed, mut total) = (0, 0);
    println!("\n== {label} ==");
    for path in paths {
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        let file_match = file.contains(&filter);
        let cases: Vec<Case> = load(&path)
            .into_iter()
            .filter(|c| file_match || c.name.contains(&filter))
            .collect();
        if cases.is_empty() {
            continue;
        }
        let mut ok = 0;
        for case in &cases {
            let result = catch_unwind(AssertUnwindSafe(|| run_case(case))).unwrap_or_else(|p| {
                Err(format!(
                    "panic: {:?}",
                    p.downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                ))
            });
            match result {
                Ok(()) => ok += 1,
                Err(why) if verbose => println!(
                    "FAIL {file} :: {}\n  {why}\n---\n{}---",
                    case.name, case.script
                ),
                Err(_) => {}
            }
        }
        println!(
            "{:>5.1}%  {ok:>4}/{:<4} {file}",
            100.0 * ok as f64 / cases.len() as f64,
            cases.len()
        );
        passed += ok;
        total += cases.len();
    }
    let rate = if total == 0 {
        1.0
    } else {
        passed as f64 / total as f64
    };
    println!("{label}: {passed}/{total} = {:.1}%", 100.0 * rate);
    (passed, total)
}

fn floors() -> BTreeMap<String, f64> {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance-floor.txt"),
    )
    .unwrap_or_default();
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            Some((it.next()?.to_string(), it.next()?.parse().ok()?))
        })
        .collect()
}

#[test]
fn conformance() {
    if !Path::new(CORPUS).exists() {
        println!("corpus not found at {CORPUS}; skipping");
        return;
    }
    std::panic::set_hook(Box::new(|_| {}));
    let suites = [
        (
            "comparison",
            run_suite("comparison", "comparison", ".json", comparison_cases),
        ),
        (
            "bash-spec",
            run_suite("bash-spec", "bash-spec", ".test.sh", spec_cases),
        ),
    ];
    let _ = std::panic::take_hook();
    let filtered = std::env::var("CONFORMANCE_FILTER").is_ok_and(|f| !f.is_empty());
    let floors = floors();
    for (label, (passed, total)) in suites {
        let rate = if total == 0 {
            1.0
        } else {
            passed as f64 / total as f64
        };
        if let (false, Some(floor)) = (filtered, floors.get(label)) {
            assert!(
                rate >= *floor,
                "{label}: pass rate {rate:.3} fell below the floor {floor}"
            );
        }
    }
}
