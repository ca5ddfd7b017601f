//! The differential tester: generated scripts run by the machine's bash and
//! by the light shell on identical trees, stdout, exit status and the
//! resulting files compared. See `differential/README.md`.

mod common;
#[path = "differential/gen.rs"]
mod gen;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use gen::{Area, Script, TREE};
use stead_shell::{exec_with_commands, ExecRequest, Limits};
use stead_sql::Sql;
use stead_vfs::{Kind, VPath, Vfs};

/// Where the light shell runs each script (bash runs in a temporary folder).
const CWD: &str = "/w";

/// What one side produced.
#[derive(Debug, PartialEq, Eq)]
struct Run {
    stdout: Vec<u8>,
    status: i32,
    /// Relative path → content (`None` for a directory).
    files: BTreeMap<String, Option<Vec<u8>>>,
}

/// How the light shell's run differs from bash's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mismatch {
    Stdout,
    Status,
    Files,
    /// The light shell panicked.
    Panic,
    /// A runaway script did not end with a limit of the light shell.
    NoLimit,
}

fn environment() -> [(&'static str, &'static str); 5] {
    [
        ("PATH", "/usr/bin:/bin"),
        ("LANG", "C.UTF-8"),
        ("LC_ALL", "C.UTF-8"),
        ("HOME", "/"),
        ("USER", "agent"),
    ]
}

/// Fails unless the machine's bash is 5.2, the reference.
fn check_bash() {
    let out = Command::new("bash")
        .args(["-c", "echo ${BASH_VERSINFO[0]}.${BASH_VERSINFO[1]}"])
        .output()
        .expect("the differential tester needs bash 5.2 on PATH");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "5.2",
        "the differential tester compares with bash 5.2"
    );
}

/// bash's run of `script`, killed after `seconds` (a runaway one is: only
/// what it printed before counts).
fn bash(script: &str, seconds: &str) -> Run {
    let dir = tempfile::tempdir().unwrap();
    for (path, content) in TREE {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }
    // bash reads the script from a file beside the tree, not from `-c`:
    // with `-c`, bash runs a last simple command without forking and then
    // gives some errors other statuses (`${x:?}` exits 127, not 1).
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), script).unwrap();
    let out = Command::new("timeout")
        .args(["-k", "1", seconds, "bash"])
        .arg(file.path())
        .current_dir(dir.path())
        .env_clear()
        .envs(environment())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let mut files = BTreeMap::new();
    walk_dir(dir.path(), "", &mut files);
    Run {
        stdout: out.stdout,
        status: out.status.code().unwrap_or(128),
        files,
    }
}

fn walk_dir(dir: &Path, prefix: &str, files: &mut BTreeMap<String, Option<Vec<u8>>>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
        let path = entry.path();
        if path.is_dir() {
            files.insert(format!("{name}/"), None);
            walk_dir(&path, &format!("{name}/"), files);
        } else {
            files.insert(name, std::fs::read(&path).ok());
        }
    }
}

thread_local! {
    /// One migrated workspace; each run rolls back what it did.
    static DB: stead_sql::SqliteDb = common::db();
}

/// The light shell's run, and whether a limit ended it; `Err` if it panicked.
fn light(script: &str) -> Result<(Run, bool), ()> {
    DB.with(|db| {
        db.execute("SAVEPOINT differential", &[]).unwrap();
        let run = light_in(db, script);
        db.execute("ROLLBACK TO differential", &[]).unwrap();
        db.execute("RELEASE differential", &[]).unwrap();
        run
    })
}

fn light_in(db: &stead_sql::SqliteDb, script: &str) -> Result<(Run, bool), ()> {
    let tree: Vec<(String, &[u8])> = TREE
        .iter()
        .map(|(p, c)| (format!("{CWD}/{p}"), c.as_bytes()))
        .collect();
    let tree: Vec<(&str, &[u8])> = tree.iter().map(|(p, c)| (p.as_str(), *c)).collect();
    common::write_files(db, &tree);
    let vfs = Vfs::new(db, 1_700_000_000_000);
    let request = ExecRequest {
        command: script.to_string(),
        cwd: VPath::parse(CWD).unwrap(),
        env: environment()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        stdin: Vec::new(),
        limits: Limits {
            max_wall_ms: 3_000,
            ..Limits::default()
        },
    };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        exec_with_commands(&vfs, &common::HostClock, request, &[])
    }))
    .map_err(drop)?;
    let mut files = BTreeMap::new();
    walk_vfs(&vfs, &VPath::parse(CWD).unwrap(), "", &mut files);
    let run = Run {
        stdout: result.stdout,
        status: result.exit_code,
        files,
    };
    Ok((run, result.limit.is_some()))
}

fn walk_vfs(
    vfs: &Vfs<'_, stead_sql::SqliteDb>,
    dir: &VPath,
    prefix: &str,
    files: &mut BTreeMap<String, Option<Vec<u8>>>,
) {
    let Ok(entries) = vfs.list(dir, None, 10_000) else {
        return;
    };
    for entry in entries {
        let name = format!("{prefix}{}", entry.name);
        let path = dir.join(&entry.name);
        match entry.node.kind {
            Kind::Dir => {
                files.insert(format!("{name}/"), None);
                walk_vfs(vfs, &path, &format!("{name}/"), files);
            }
            _ => {
                files.insert(name, vfs.read_file(&path).ok());
            }
        }
    }
}

/// How the light shell differs from bash on `script`, if it does.
fn compare(script: &Script) -> Option<Mismatch> {
    let text = script.text();
    let runaway = script.has(Area::Runaway);
    let reference = bash(&text, if runaway { "0.3" } else { "3" });
    let Ok((ours, limited)) = light(&text) else {
        return Some(Mismatch::Panic);
    };
    if runaway && !limited {
        return Some(Mismatch::NoLimit);
    }
    if ours.stdout != reference.stdout {
        return Some(Mismatch::Stdout);
    }
    // A runaway script ends with the light shell's documented limit (124)
    // where bash runs until killed or crashes.
    if !runaway && ours.status != reference.status {
        return Some(Mismatch::Status);
    }
    if ours.files != reference.files {
        return Some(Mismatch::Files);
    }
    None
}

/// The smallest script (fewest statements, then pieces) that still
/// mismatches.
fn shrink(script: &Script) -> Script {
    let mut best = script.clone();
    let mut changed = true;
    while changed {
        changed = false;
        for i in (0..best.statements.len()).rev() {
            if best.statements.len() == 1 {
                break;
            }
            let mut candidate = best.clone();
            candidate.statements.remove(i);
            if compare(&candidate).is_some() {
                best = candidate;
                changed = true;
            }
        }
        for i in 0..best.statements.len() {
            let mut j = best.statements[i].1.len();
            while j > 0 {
                j -= 1;
                if best.statements[i].1.len() == 1 {
                    break;
                }
                let mut candidate = best.clone();
                candidate.statements[i].1.remove(j);
                if compare(&candidate).is_some() {
                    best = candidate;
                    changed = true;
                }
            }
        }
    }
    best
}

/// Counts per area: (scripts, mismatches).
type Tally = BTreeMap<Area, (u64, u64)>;

struct Report {
    scripts: u64,
    mismatches: u64,
    by_area: Tally,
    /// Shrunk failing scripts with what differed.
    shrunk: Vec<(Mismatch, Script)>,
}

fn run_many(seed: u64, count: u64, keep: usize) -> Report {
    check_bash();
    let mut report = Report {
        scripts: 0,
        mismatches: 0,
        by_area: BTreeMap::new(),
        shrunk: Vec::new(),
    };
    for index in 0..count {
        let script = gen::script(seed, index);
        let mismatch = compare(&script);
        report.scripts += 1;
        for area in script.areas() {
            let entry = report.by_area.entry(area).or_default();
            entry.0 += 1;
            entry.1 += u64::from(mismatch.is_some());
        }
        if let Some(kind) = mismatch {
            report.mismatches += 1;
            if report.shrunk.len() < keep {
                report.shrunk.push((kind, shrink(&script)));
            }
        }
    }
    report
}

fn print_report(seed: u64, report: &Report) {
    println!(
        "differential: seed {seed}, {} scripts, {} mismatches ({:.2}%)",
        report.scripts,
        report.mismatches,
        100.0 * report.mismatches as f64 / report.scripts.max(1) as f64
    );
    println!(
        "{:<16} {:>8} {:>10} {:>7}",
        "area", "scripts", "mismatches", "rate"
    );
    for (area, (scripts, mismatches)) in &report.by_area {
        println!(
            "{:<16} {scripts:>8} {mismatches:>10} {:>6.2}%",
            area.name(),
            100.0 * *mismatches as f64 / (*scripts).max(1) as f64
        );
    }
    for (kind, script) in &report.shrunk {
        let areas: Vec<&str> = script.areas().iter().map(|a| a.name()).collect();
        println!("--- {kind:?} [{}]\n{}", areas.join(","), script.text());
    }
}

/// The most mismatches the fixed-seed run may have (see the README): lower
/// it as the light shell improves, never raise it to make a change pass.
fn floor() -> (u64, u64, u64) {
    let text = include_str!("differential/floor.txt");
    let line = text
        .lines()
        .find(|l| !l.starts_with('#') && !l.trim().is_empty())
        .expect("a floor line");
    let v: Vec<u64> = line
        .split_whitespace()
        .map(|w| w.parse().expect("numbers"))
        .collect();
    (v[0], v[1], v[2])
}

/// The short fixed-seed run, part of `cargo test`.
#[test]
fn fixed_seed_run_stays_within_its_floor() {
    let (seed, count, most) = floor();
    let report = run_many(seed, count, 3);
    print_report(seed, &report);
    assert_eq!(report.scripts, count);
    assert!(
        report.mismatches <= most,
        "{} mismatches, the floor allows {most} (shrunk ones printed above)",
        report.mismatches
    );
}

/// The long run, by hand: `DIFF_SEED` (default 1) and `DIFF_SCRIPTS`
/// (default 100,000); shrunk failures are printed (`DIFF_KEEP`, default 50).
#[test]
#[ignore]
fn long_run() {
    let var = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let seed = var("DIFF_SEED", 1);
    let report = run_many(
        seed,
        var("DIFF_SCRIPTS", 100_000),
        var("DIFF_KEEP", 50) as usize,
    );
    print_report(seed, &report);
}

/// Shrunk failures the tester found, with bash 5.2's stdout and status as
/// recorded: each must now match (they need no bash to run).
#[test]
fn regressions_match_the_recorded_bash_results() {
    let cases: Vec<serde_json::Value> =
        serde_json::from_str(include_str!("differential/regressions.json")).unwrap();
    assert!(!cases.is_empty());
    let mut failed = Vec::new();
    for case in &cases {
        let script = case["script"].as_str().unwrap();
        let want_stdout = case["stdout"].as_str().unwrap();
        let want_status = case["status"].as_i64().unwrap() as i32;
        let (run, _) = light(script).unwrap_or_else(|()| panic!("panicked: {script}"));
        let stdout = common::text(&run.stdout);
        if stdout != want_stdout || run.status != want_status {
            failed.push(format!(
                "{script}\n  want {want_status} {want_stdout:?}\n  got  {} {stdout:?}",
                run.status
            ));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// Records a case for `regressions.json` from bash:
/// `DIFF_RECORD='script' cargo test -p stead-shell --test differential record -- --ignored --nocapture`.
#[test]
#[ignore]
fn record() {
    check_bash();
    let script = std::env::var("DIFF_RECORD").expect("DIFF_RECORD: the script");
    let run = bash(&script, "3");
    let case = serde_json::json!({
        "script": script,
        "stdout": String::from_utf8_lossy(&run.stdout),
        "status": run.status,
    });
    println!("{case},");
}
