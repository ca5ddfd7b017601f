//! The conformance harness: runs the recorded corpus (`../shared/corpus`
//! from the repository root, or `CONFORMANCE_CORPUS`) against the shell and
//! prints pass rates per file.
//!
//! `cargo test -p stead-shell --release --test conformance -- --nocapture`
//! Environment: `CONFORMANCE_FILTER=substring` (file or case name; floors
//! are not checked then), `CONFORMANCE_VERBOSE=1` (print each failure).
//!
//! `cargo test -p stead-shell --release --test conformance bash_itself --
//! --ignored --nocapture` runs the same spec cases through the machine's
//! bash instead (the script on its stdin, as the Oils runner feeds it), to
//! tell an expectation bash 5.2 itself does not meet from a failure of the
//! light shell; `CONFORMANCE_VERBOSE=1` lists the cases bash fails.
//!
//! The harness cannot pass silently: it fails when the corpus, one of its
//! folders or the floor file is missing, when the floor file names a suite
//! this harness does not run (or misses one it does), when a suite ran fewer
//! cases than the floor file's minimum, or when a pass rate falls below its
//! floor. Spec cases marked `## SKIP` by the corpus's collectors are run and
//! counted (the mark says what *their* shell could not do, not bash); the
//! rate without them is printed too, and the floor applies to the rate with
//! them.
//!
//! Each spec case runs as the Oils runner runs it: in a fresh working
//! directory holding an empty `_tmp/`, with `TMP` naming it, `HOME` set,
//! `SH=bash` and `LANG=C.UTF-8`. Expectations are bash's: a `bash`
//! qualifier (`## OK bash ...`, `## N-I bash/zsh ...`, numbered alternatives
//! such as `## OK-2 bash ...`) replaces the default keys it names, and each
//! qualifier group is one acceptable outcome.

mod common;

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use common::corpus;
use stead_shell::{exec_with_commands, ExecRequest, Limits};
use stead_vfs::{VPath, Vfs, WriteOptions};

/// Where comparison fixtures run (their files are relative to it).
const COMPARISON_CWD: &str = "/work";
/// Where spec cases run, as the Oils runner's per-case folder.
const SPEC_CWD: &str = "/work/spec";

/// One acceptable outcome: the keys it checks.
#[derive(Debug, Clone, Default, PartialEq)]
struct Expect {
    stdout: Option<String>,
    status: Option<i32>,
}

struct Case {
    name: String,
    script: String,
    files: Vec<(String, String)>,
    /// Passing any one of these passes the case.
    expect: Vec<Expect>,
    /// Marked `## SKIP` by the corpus's collectors.
    skip_marked: bool,
    cwd: &'static str,
    env: Vec<(&'static str, String)>,
}

fn limits() -> Limits {
    Limits {
        max_wall_ms: 5_000,
        max_output_bytes: 1 << 20,
        max_loop_iterations: 200_000,
        max_commands: 500_000,
        max_call_depth: 100,
        ..Limits::default()
    }
}

/// What one run of a case printed and ended with.
struct Outcome {
    stdout: String,
    status: i32,
    stderr: String,
}

/// Runs one case in the light shell; `Err` carries what differed.
fn run_case(case: &Case) -> Result<(), String> {
    judge(case, &run_light(case)?)
}

fn run_light(case: &Case) -> Result<Outcome, String> {
    let db = common::db();
    let vfs = Vfs::new(&db, 1_700_000_000_000);
    let opts = WriteOptions {
        mode: None,
        create_parents: true,
    };
    let cwd = VPath::parse(case.cwd).map_err(|e| e.to_string())?;
    for dir in [case.cwd, "/tmp"] {
        vfs.mkdir(&VPath::parse(dir).unwrap(), true, None)
            .map_err(|e| e.to_string())?;
    }
    for (path, content) in &case.files {
        let p = VPath::parse_from(path, &cwd).map_err(|e| e.to_string())?;
        if path.ends_with('/') {
            vfs.mkdir(&p, true, None).map_err(|e| e.to_string())?;
        } else {
            vfs.write(&p, content.as_bytes(), opts)
                .map_err(|e| e.to_string())?;
        }
    }
    let env = case
        .env
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    let request = ExecRequest {
        command: case.script.clone(),
        cwd,
        env,
        stdin: Vec::new(),
        limits: limits(),
    };
    let r = exec_with_commands(&vfs, &common::HostClock, request, common::EXTRA);
    Ok(Outcome {
        stdout: String::from_utf8_lossy(&r.stdout).into_owned(),
        status: r.exit_code,
        stderr: String::from_utf8_lossy(&r.stderr).into_owned(),
    })
}

/// `Ok` when the outcome is one the case accepts; `Err` says what differed.
fn judge(case: &Case, got: &Outcome) -> Result<(), String> {
    let matches = |e: &Expect| {
        e.stdout.as_ref().is_none_or(|want| *want == got.stdout)
            && e.status.is_none_or(|want| want == got.status)
    };
    if case.expect.iter().any(matches) {
        return Ok(());
    }
    let mut problems = Vec::new();
    for e in &case.expect {
        if let Some(want) = &e.stdout {
            if *want != got.stdout {
                problems.push(format!(
                    "stdout: want {want:?}\n           got  {:?}",
                    got.stdout
                ));
            }
        }
        if let Some(want) = e.status {
            if want != got.status {
                problems.push(format!("status: want {want}, got {}", got.status));
            }
        }
    }
    let stderr: String = got.stderr.chars().take(300).collect();
    problems.push(format!("stderr: {stderr:?}"));
    Err(problems.join("\n  "))
}

/// The Oils spec tests' helper programs, for the machine's bash: the same
/// behaviour as the light shell's test-only commands in `common`.
const BASH_HELPERS: &[(&str, &str)] = &[
    (
        "argv.py",
        r#"#!/usr/bin/env python3
import os, sys
def rep(b):
    q = '"' if b"'" in b and b'"' not in b else "'"
    out = q
    for c in b:
        ch = chr(c)
        if ch == '\\': out += '\\\\'
        elif ch == '\n': out += '\\n'
        elif ch == '\t': out += '\\t'
        elif ch == '\r': out += '\\r'
        elif ch == q: out += '\\' + q
        elif c < 0x20 or c >= 0x7f: out += '\\x%02x' % c
        else: out += ch
    return out + q
print('[' + ', '.join(rep(os.fsencode(a)) for a in sys.argv[1:]) + ']')
"#,
    ),
    (
        "stdout_stderr.py",
        r#"#!/usr/bin/env python3
import sys
print(sys.argv[1] if len(sys.argv) > 1 else 'STDOUT')
print(sys.argv[2] if len(sys.argv) > 2 else 'STDERR', file=sys.stderr)
"#,
    ),
    (
        "printenv.py",
        r#"#!/usr/bin/env python3
import os, sys
for name in sys.argv[1:]:
    print(os.environ.get(name, 'None'))
"#,
    ),
];

/// Runs one case through the machine's bash (killed after 5 s), in a
/// temporary folder set up as the light shell's run is, with the helper
/// programs in `helpers` first on `PATH`.
fn run_bash(case: &Case, helpers: &Path) -> Result<Outcome, String> {
    use std::io::Write;
    let root = tempfile::tempdir().map_err(|e| e.to_string())?;
    let dir = root.path().join("spec");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    for (path, content) in &case.files {
        let p = dir.join(path);
        if path.ends_with('/') {
            std::fs::create_dir_all(&p).map_err(|e| e.to_string())?;
        } else {
            std::fs::create_dir_all(p.parent().unwrap()).map_err(|e| e.to_string())?;
            std::fs::write(&p, content).map_err(|e| e.to_string())?;
        }
    }
    let here = |v: &str| v.replace(case.cwd, &dir.to_string_lossy());
    let mut child = std::process::Command::new("timeout")
        .args(["-k", "1", "5", "bash"])
        .current_dir(&dir)
        .env_clear()
        .envs(case.env.iter().map(|(k, v)| (*k, here(v))))
        .env("PATH", format!("{}:/usr/bin:/bin", helpers.display()))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run bash: {e}"))?;
    let mut stdin = child.stdin.take().unwrap();
    // A script that exits early closes the pipe: what it did not read is
    // not an error.
    let _ = stdin.write_all(case.script.as_bytes());
    drop(stdin);
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    Ok(Outcome {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        status: out.status.code().unwrap_or(128),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

fn comparison_cases(path: &Path) -> Vec<Case> {
    let text = corpus::read(path);
    let json: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: not JSON: {e}", path.display()));
    let map = json
        .as_object()
        .unwrap_or_else(|| panic!("{}: not a JSON object", path.display()));
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
            let command = v["command"]
                .as_str()
                .unwrap_or_else(|| panic!("{}: {id} has no command", path.display()))
                .to_string();
            Case {
                name: format!("{id}: {}", command.lines().next().unwrap_or("")),
                script: command,
                files,
                expect: vec![Expect {
                    stdout: v["stdout"].as_str().map(str::to_string),
                    status: v["exitCode"].as_i64().map(|s| s as i32),
                }],
                skip_marked: false,
                cwd: COMPARISON_CWD,
                env: vec![("TMP", "/tmp".to_string()), ("SH", "bash".to_string())],
            }
        })
        .collect()
}

/// Who a `## ...` expectation line is for.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Qualifier {
    /// No qualifier: the default for every shell.
    Default,
    /// `OK`, `BUG`, `N-I`, with the alternative's number (`OK-2` is 2).
    Shells {
        kind: String,
        number: u32,
        for_bash: bool,
    },
}

/// Splits `OK-2 bash/zsh stdout: x` into its qualifier and `stdout: x`.
fn qualifier(meta: &str) -> (Qualifier, &str) {
    let (first, rest) = meta.split_once(' ').unwrap_or((meta, ""));
    let parsed = ["N-I", "OK", "BUG"].iter().find_map(|kind| {
        let number = match first.strip_prefix(kind)? {
            "" => 1,
            n => n.strip_prefix('-')?.parse().ok()?,
        };
        Some((kind.to_string(), number))
    });
    let Some((kind, number)) = parsed else {
        return (Qualifier::Default, meta);
    };
    let (shells, rest) = rest.split_once(' ').unwrap_or((rest, ""));
    let for_bash = shells.split('/').any(|s| s == "bash");
    (
        Qualifier::Shells {
            kind,
            number,
            for_bash,
        },
        rest,
    )
}

fn spec_cases(path: &Path) -> Vec<Case> {
    parse_spec(&corpus::read(path), &path.display().to_string())
}

/// Parses one file of Oils spec tests (`origin` names it in errors).
fn parse_spec(text: &str, origin: &str) -> Vec<Case> {
    let mut cases = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let Some(name) = line.strip_prefix("#### ") else {
            continue;
        };
        let mut script = String::new();
        let mut default = Expect {
            stdout: None,
            status: Some(0),
        };
        let mut groups: BTreeMap<Qualifier, Expect> = BTreeMap::new();
        let mut skip_marked = false;
        while let Some(&l) = lines.peek() {
            if l.starts_with("#### ") {
                break;
            }
            lines.next();
            let Some(meta) = l.strip_prefix("## ") else {
                if !l.starts_with("##") || l.starts_with("###") {
                    script.push_str(l);
                    script.push('\n');
                }
                continue;
            };
            if meta.starts_with("SKIP") {
                skip_marked = true;
                continue;
            }
            let (qual, rest) = qualifier(meta);
            let (key, value) = rest.split_once(':').unwrap_or((rest, ""));
            // `## code: text`: the case's script on one line.
            if key == "code" && qual == Qualifier::Default {
                script.push_str(value.strip_prefix(' ').unwrap_or(value));
                script.push('\n');
                continue;
            }
            let block = if matches!(key, "STDOUT" | "STDERR") {
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
                    // The Oils runner reads every line starting with `#` as
                    // a comment, inside an expected block too.
                    if bl.trim_start().starts_with('#') {
                        continue;
                    }
                    b.push_str(bl);
                    b.push('\n');
                }
                Some(b)
            } else {
                None
            };
            let target = match &qual {
                Qualifier::Default => &mut default,
                Qualifier::Shells { for_bash: true, .. } => groups.entry(qual).or_default(),
                Qualifier::Shells { .. } => continue,
            };
            match key {
                "STDOUT" => target.stdout = block,
                "stdout" => {
                    target.stdout = Some(format!("{}\n", value.strip_prefix(' ').unwrap_or(value)))
                }
                "stdout-json" => {
                    target.stdout = Some(
                        serde_json::from_str(value.trim())
                            .unwrap_or_else(|e| panic!("{origin}: {name}: bad stdout-json: {e}")),
                    )
                }
                "status" => {
                    target.status = Some(
                        value
                            .trim()
                            .parse()
                            .unwrap_or_else(|e| panic!("{origin}: {name}: bad status: {e}")),
                    )
                }
                _ => {}
            }
        }
        // The Oils runner drops the blank lines between the `####` line and
        // the code (recorded `$LINENO`s count from the first code line).
        let script = script.trim_start_matches('\n').to_string();
        let expect = if groups.is_empty() {
            vec![default]
        } else {
            groups
                .into_values()
                .map(|g| Expect {
                    stdout: g.stdout.or_else(|| default.stdout.clone()),
                    status: g.status.or(default.status),
                })
                .collect()
        };
        let tmp = format!("{SPEC_CWD}/_tmp");
        cases.push(Case {
            name: name.to_string(),
            script,
            files: vec![("_tmp/".to_string(), String::new())],
            expect,
            skip_marked,
            cwd: SPEC_CWD,
            env: vec![
                ("TMP", tmp.clone()),
                ("HOME", tmp),
                ("SH", "bash".to_string()),
                ("LANG", "C.UTF-8".to_string()),
            ],
        });
    }
    cases
}

/// What one suite did.
#[derive(Debug, Default)]
struct Tally {
    passed: usize,
    total: usize,
    /// Of those, cases marked `## SKIP` by the collectors.
    skip_passed: usize,
    skip_total: usize,
}

impl Tally {
    fn rate(&self) -> f64 {
        ratio(self.passed, self.total)
    }
}

fn ratio(passed: usize, total: usize) -> f64 {
    if total == 0 {
        0.0
    } else {
        passed as f64 / total as f64
    }
}

fn run_suite(
    label: &str,
    dir: &str,
    ext: &str,
    load: fn(&Path) -> Vec<Case>,
    run: &dyn Fn(&Case) -> Result<(), String>,
) -> Tally {
    let filter = std::env::var("CONFORMANCE_FILTER").unwrap_or_default();
    let verbose = std::env::var("CONFORMANCE_VERBOSE").is_ok_and(|v| !v.is_empty() && v != "0");
    let mut tally = Tally::default();
    println!("\n== {label} ==");
    for path in corpus::files(dir, ext) {
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
            let result = catch_unwind(AssertUnwindSafe(|| run(case))).unwrap_or_else(|p| {
                Err(format!(
                    "panic: {:?}",
                    p.downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                ))
            });
            let passed = result.is_ok();
            if passed {
                ok += 1;
            }
            if case.skip_marked {
                tally.skip_total += 1;
                tally.skip_passed += usize::from(passed);
            }
            if let (Err(why), true) = (result, verbose) {
                println!(
                    "FAIL {file} :: {}\n  {why}\n---\n{}---",
                    case.name, case.script
                );
            }
        }
        println!(
            "{:>5.1}%  {ok:>4}/{:<4} {file}",
            100.0 * ratio(ok, cases.len()),
            cases.len()
        );
        tally.passed += ok;
        tally.total += cases.len();
    }
    println!(
        "{label}: {}/{} = {:.1}%",
        tally.passed,
        tally.total,
        100.0 * tally.rate()
    );
    if tally.skip_total > 0 {
        let (p, t) = (
            tally.passed - tally.skip_passed,
            tally.total - tally.skip_total,
        );
        println!(
            "{label} without the {} SKIP-marked cases: {p}/{t} = {:.1}% (SKIP-marked alone: {}/{})",
            tally.skip_total,
            100.0 * ratio(p, t),
            tally.skip_passed,
            tally.skip_total
        );
    }
    tally
}

/// A suite's floor: the lowest pass rate and the fewest cases it may run.
struct Floor {
    rate: f64,
    min_cases: usize,
}

const FLOOR_FILE: &str = "conformance-floor.txt";

/// Reads `conformance-floor.txt`: `label rate min_cases` per line.
fn floors(known: &[&str]) -> BTreeMap<String, Floor> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(FLOOR_FILE);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("floor file {} unreadable: {e}", path.display()));
    let mut floors = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [label, rate, min_cases] = fields[..] else {
            panic!("{FLOOR_FILE}: expected `label rate min_cases`, got {line:?}");
        };
        assert!(
            known.contains(&label),
            "{FLOOR_FILE}: unknown suite {label:?} (known: {known:?})"
        );
        let floor = Floor {
            rate: rate
                .parse()
                .unwrap_or_else(|e| panic!("{FLOOR_FILE}: {label}: bad rate {rate:?}: {e}")),
            min_cases: min_cases
                .parse()
                .unwrap_or_else(|e| panic!("{FLOOR_FILE}: {label}: bad count {min_cases:?}: {e}")),
        };
        assert!(
            floors.insert(label.to_string(), floor).is_none(),
            "{FLOOR_FILE}: {label} listed twice"
        );
    }
    for label in known {
        assert!(
            floors.contains_key(*label),
            "{FLOOR_FILE}: no floor for suite {label}"
        );
    }
    floors
}

#[test]
fn conformance() {
    const SUITES: [&str; 2] = ["comparison", "bash-spec"];
    let floors = floors(&SUITES);
    // Fail before running anything when a folder is missing.
    corpus::folder("comparison");
    corpus::folder("bash-spec");
    std::panic::set_hook(Box::new(|_| {}));
    let tallies = [
        run_suite(
            "comparison",
            "comparison",
            ".json",
            comparison_cases,
            &run_case,
        ),
        run_suite("bash-spec", "bash-spec", ".test.sh", spec_cases, &run_case),
    ];
    let _ = std::panic::take_hook();
    let filtered = std::env::var("CONFORMANCE_FILTER").is_ok_and(|f| !f.is_empty());
    if filtered {
        println!("CONFORMANCE_FILTER is set: floors not checked");
        return;
    }
    for (label, tally) in SUITES.iter().zip(&tallies) {
        let floor = &floors[*label];
        assert!(
            tally.total >= floor.min_cases,
            "{label}: only {} cases ran, the floor file expects at least {}",
            tally.total,
            floor.min_cases
        );
        assert!(
            tally.rate() >= floor.rate,
            "{label}: pass rate {:.4} fell below the floor {}",
            tally.rate(),
            floor.rate
        );
    }
}

/// The spec cases through the machine's bash (by hand, see the module
/// doc): how many of the corpus's expectations bash itself meets.
#[test]
#[ignore = "runs the machine's bash over the corpus; by hand"]
fn bash_itself() {
    let out = std::process::Command::new("bash")
        .args(["-c", "echo ${BASH_VERSINFO[0]}.${BASH_VERSINFO[1]}"])
        .output()
        .expect("bash_itself needs bash on PATH");
    println!("bash {}", String::from_utf8_lossy(&out.stdout).trim());
    let helpers = tempfile::tempdir().unwrap();
    for (name, text) in BASH_HELPERS {
        let path = helpers.path().join(name);
        std::fs::write(&path, text).unwrap();
        let mut perms = std::fs::metadata(&path).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&path, perms).unwrap();
    }
    let run = |case: &Case| judge(case, &run_bash(case, helpers.path())?);
    let tally = run_suite(
        "bash-spec (bash)",
        "bash-spec",
        ".test.sh",
        spec_cases,
        &run,
    );
    assert!(tally.total > 0, "no spec cases ran");
}

/// Checks of the expectation parser itself, on text written here.
mod parser {
    use super::*;

    fn parse(text: &str) -> Vec<Case> {
        parse_spec(text, "test")
    }

    #[test]
    fn numbered_qualifiers_are_expectations_not_script() {
        let cases = parse(
            "#### one\necho hi\n## STDOUT:\nhi\n## END\n## OK-2 bash STDOUT:\nHI\n## END\n\
             ## OK-3 zsh/ash STDOUT:\nzsh\n## END\n## N-I-2 dash status: 2\n",
        );
        assert_eq!(cases.len(), 1);
        assert_eq!(cases[0].script, "echo hi\n");
        assert_eq!(
            cases[0].expect,
            vec![Expect {
                stdout: Some("HI\n".into()),
                status: Some(0)
            }]
        );
    }

    #[test]
    fn comment_lines_inside_an_expected_block_are_not_output() {
        let cases = parse("#### c\necho a\n## STDOUT:\n# a note\na\n  # indented\n## END\n");
        assert_eq!(cases[0].expect[0].stdout.as_deref(), Some("a\n"));
    }

    #[test]
    fn a_code_line_is_the_script() {
        let cases = parse("#### three\n## code: foo() {\n## status: 2\n");
        assert_eq!(cases[0].script, "foo() {\n");
        assert_eq!(cases[0].expect[0].status, Some(2));
    }

    #[test]
    fn bash_groups_override_default_keys_and_skip_cases_are_kept() {
        let cases = parse(
            "#### two\n## SKIP (peer): no\nfalse\n## stdout: x\n## status: 1\n\
             ## N-I bash/mksh status: 2\n## BUG bash stdout-json: \"y\\n\"\n",
        );
        assert_eq!(cases.len(), 1);
        assert!(cases[0].skip_marked);
        assert_eq!(cases[0].script, "false\n");
        assert_eq!(
            cases[0].expect,
            vec![
                Expect {
                    stdout: Some("y\n".into()),
                    status: Some(1)
                },
                Expect {
                    stdout: Some("x\n".into()),
                    status: Some(2)
                },
            ]
        );
    }
}
