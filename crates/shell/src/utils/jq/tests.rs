//! jq's own test file (`/work/shared/corpus/jq/jq.test`) and the recorded
//! comparison fixtures, plus the command-line behaviours around them.

use crate::utils::testing::{db, files, run, Ran};

fn jq(args: &[&str], stdin: &str) -> Ran {
    let mut argv = vec!["jq"];
    argv.extend_from_slice(args);
    run(&db(), &argv, stdin)
}

fn out(args: &[&str], stdin: &str) -> String {
    let r = jq(args, stdin);
    assert_eq!(r.status, 0, "jq {args:?}: {}", r.stderr);
    r.stdout
}

#[test]
fn pretty_prints_like_jq() {
    assert_eq!(
        out(&["."], r#"{"a":[1,2.5,{"b":null}],"c":"x\u0001\"","d":{},"e":[]}"#),
        "{\n  \"a\": [\n    1,\n    2.5,\n    {\n      \"b\": null\n    }\n  ],\n  \"c\": \"x\\u0001\\\"\",\n  \"d\": {},\n  \"e\": []\n}\n"
    );
    assert_eq!(out(&["-c", "."], "{\"a\": [1, 2]}"), "{\"a\":[1,2]}\n");
    assert_eq!(out(&["--tab", "."], "[1]"), "[\n\t1\n]\n");
    assert_eq!(out(&["--indent", "1", "."], "[1]"), "[\n 1\n]\n");
    assert_eq!(
        out(&["-S", "-c", "."], r#"{"b":1,"a":{"d":1,"c":2}}"#),
        "{\"a\":{\"c\":2,\"d\":1},\"b\":1}\n"
    );
    assert_eq!(
        out(&["-c", ".[] * 1.5, 1e100, 3.0"], "[2, 1]"),
        "3\n1.5\n1e+100\n3.0\n"
    );
    assert_eq!(out(&["-a", "."], "\"é\""), "\"\\u00e9\"\n");
}

#[test]
fn raw_join_and_input_modes() {
    assert_eq!(out(&["-r", ".[]"], r#"["a","b",1]"#), "a\nb\n1\n");
    assert_eq!(out(&["-j", ".[]"], r#"["a","b",1]"#), "ab1");
    assert_eq!(out(&["-c", "."], "1 [2]\n{\"a\":3}"), "1\n[2]\n{\"a\":3}\n");
    assert_eq!(out(&["-c", "-s", "."], "1 2 3"), "[1,2,3]\n");
    assert_eq!(out(&["-n", "[inputs]", "-c"], "1 2"), "[1,2]\n");
    assert_eq!(out(&["-R", "."], "a\n\nb"), "\"a\"\n\"\"\n\"b\"\n");
    assert_eq!(out(&["-Rs", "."], "a\nb\n"), "\"a\\nb\\n\"\n");
    assert_eq!(out(&["-n", "input", "-c"], "[1] [2]"), "[1]\n");
}

#[test]
fn arguments_and_environment() {
    assert_eq!(out(&["-n", "--arg", "x", "5", "$x"], ""), "\"5\"\n");
    assert_eq!(
        out(&["-n", "--argjson", "x", "{\"a\":1}", "$x.a"], ""),
        "1\n"
    );
    assert_eq!(
        out(&["-cn", "$ARGS", "--arg", "k", "v", "--args", "a", "b"], ""),
        "{\"positional\":[\"a\",\"b\"],\"named\":{\"k\":\"v\"}}\n"
    );
    assert_eq!(
        out(&["-cn", "$ARGS.positional", "--jsonargs", "1", "\"x\""], ""),
        "[1,\"x\"]\n"
    );
    assert_eq!(out(&["-n", "$ENV | type"], ""), "\"object\"\n");
    let r = jq(&["-n", "--arg", "x"], "");
    assert_eq!(r.status, 2);
    assert!(
        r.stderr.starts_with("jq: --arg takes two parameters"),
        "{}",
        r.stderr
    );
    let r = jq(&["-n", "--argjson", "x", "notjson", "$x"], "");
    assert_eq!(r.status, 2);
    assert!(
        r.stderr
            .starts_with("jq: invalid JSON text passed to --argjson"),
        "{}",
        r.stderr
    );
}

#[test]
fn exit_statuses() {
    let r = jq(&[".a.b"], "{\"a\":1}\n");
    assert_eq!(r.status, 5);
    assert!(
        r.stderr.starts_with("jq: error (at <stdin>:1): "),
        "{}",
        r.stderr
    );
    let r = jq(&["-n", "error(\"boom\")"], "");
    assert_eq!(
        (r.status, r.stderr.as_str()),
        (5, "jq: error (at <unknown>): boom\n")
    );
    let r = jq(&[".[", "-n"], "");
    assert_eq!(r.status, 3);
    assert!(r.stderr.ends_with("jq: 1 compile error\n"), "{}", r.stderr);
    assert_eq!(jq(&["-e", ".a"], "{\"a\":false}").status, 1);
    assert_eq!(jq(&["-e", ".a"], "{\"a\":1}").status, 0);
    assert_eq!(jq(&["-e", "empty"], "1").status, 4);
    assert_eq!(jq(&["-n", "halt_error(3)"], "").status, 3);
    let r = jq(&["."], "{\"a\":");
    assert_eq!(r.status, 2);
    let r = jq(&[".", "missing.json"], "");
    assert_eq!(r.status, 2);
    assert!(r.stderr.contains("missing.json"), "{}", r.stderr);
}

#[test]
fn debug_and_stderr_go_to_the_command_stderr() {
    let r = jq(&["-c", "debug"], "[1]");
    assert_eq!(
        (r.stdout.as_str(), r.stderr.as_str()),
        ("[1]\n", "[\"DEBUG:\",[1]]\n")
    );
}

#[test]
fn reads_files_in_order() {
    let db = db();
    files(&db, &[("/a.json", "{\"n\":1}"), ("/b.json", "{\"n\":2}\n")]);
    let r = run(&db, &["jq", ".n", "a.json", "/b.json"], "");
    assert_eq!(r.stdout, "1\n2\n");
    files(&db, &[("/a.txt", "first\n"), ("/b.txt", "second")]);
    let r = run(&db, &["jq", "-R", ".", "a.txt", "b.txt"], "");
    assert_eq!(r.stdout, "\"first\"\n\"second\"\n");
}

/// One case of jq's test format.
struct Case {
    program: String,
    input: String,
    expected: Vec<String>,
    must_fail: bool,
}

fn parse_suite(text: &str) -> Vec<Case> {
    let mut cases = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let must_fail = line.starts_with("%%FAIL");
        let program = if must_fail {
            lines.next().unwrap_or_default().to_string()
        } else {
            line.to_string()
        };
        let input = if must_fail {
            String::new()
        } else {
            lines.next().unwrap_or_default().to_string()
        };
        let mut expected = Vec::new();
        while let Some(next) = lines.peek() {
            if next.trim().is_empty() {
                break;
            }
            expected.push(next.to_string());
            lines.next();
        }
        cases.push(Case {
            program,
            input,
            expected,
            must_fail,
        });
    }
    cases
}

fn same_json(got: &str, want: &str) -> bool {
    use jaq_json::read::parse_single;
    match (parse_single(got.as_bytes()), parse_single(want.as_bytes())) {
        (Ok(a), Ok(b)) => a == b,
        _ => got == want,
    }
}

/// Cases that cannot run in a test process: a 3 GB string, and arrays
/// nested thousands deep, which overflow the stack inside jaq.
const HAZARDS: &[&str] = &["* 1000000000)", "([];[.])"];

fn passes(db: &stead_sql::SqliteDb, case: &Case) -> bool {
    if HAZARDS.iter().any(|h| case.program.contains(h)) {
        return false;
    }
    if std::env::var_os("JQ_SUITE_TRACE").is_some() {
        eprintln!("RUN {}", case.program);
    }
    let started = std::time::Instant::now();
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run(db, &["jq", "-c", "--", &case.program], &case.input)
    }));
    if std::env::var_os("JQ_SUITE_VERBOSE").is_some() && started.elapsed().as_millis() > 500 {
        eprintln!("SLOW {:?} {}", started.elapsed(), case.program);
    }
    let Ok(r) = ran else {
        return false;
    };
    if case.must_fail {
        return r.status == 3;
    }
    let got: Vec<&str> = r.stdout.lines().collect();
    r.status == 0
        && got.len() == case.expected.len()
        && got.iter().zip(&case.expected).all(|(g, w)| same_json(g, w))
}

#[test]
fn jq_test_suite() {
    let Ok(text) = std::fs::read_to_string("/work/shared/corpus/jq/jq.test") else {
        eprintln!("jq.test not found; skipped");
        return;
    };
    let cases = parse_suite(&text);
    let db = db();
    let failures: Vec<&Case> = cases.iter().filter(|c| !passes(&db, c)).collect();
    let passed = cases.len() - failures.len();
    eprintln!("jq.test: {passed} of {} cases pass", cases.len());
    if std::env::var_os("JQ_SUITE_VERBOSE").is_some() {
        for case in &failures {
            eprintln!(
                "FAIL {}\n  in: {}\n  want: {:?}",
                case.program, case.input, case.expected
            );
        }
    }
    assert!(cases.len() > 400, "suite parsed into {} cases", cases.len());
    assert!(
        passed >= FLOOR,
        "jq.test: {passed} passed, floor is {FLOOR}"
    );
}

/// Cases of jq.test known to pass; raise it as compatibility improves.
const FLOOR: usize = 370;

#[test]
fn comparison_fixtures() {
    let dir = "/work/shared/corpus/comparison";
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut checked = 0;
    let mut failures = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with("jq") {
            continue;
        }
        let text = std::fs::read_to_string(entry.path()).unwrap();
        let fixtures: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&text).unwrap();
        for (id, case) in fixtures {
            let command = case["command"].as_str().unwrap();
            let Some((argv, stdin)) = simple_command(command) else {
                continue;
            };
            let db = db();
            if let Some(files_map) = case["files"].as_object() {
                for (path, content) in files_map {
                    files(&db, &[(&format!("/{path}"), content.as_str().unwrap())]);
                }
            }
            let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
            let r = run(&db, &argv, &stdin);
            checked += 1;
            let want_status = case["exitCode"].as_i64().unwrap() as i32;
            if r.stdout != case["stdout"].as_str().unwrap() || r.status != want_status {
                failures.push(format!(
                    "{id}: {command}\n  got {:?} ({})",
                    r.stdout, r.status
                ));
            }
        }
    }
    assert!(checked >= 30, "only {checked} fixtures ran");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Splits `jq ...`, `echo '...' | jq ...` or `printf '...' | jq ...` into
/// arguments and stdin (single and double quotes only).
fn simple_command(command: &str) -> Option<(Vec<String>, String)> {
    let (stdin, jq_part) = match command.split_once(" | ") {
        Some((producer, rest)) => {
            let words = shell_words(producer)?;
            let stdin = match words.first()?.as_str() {
                "echo" => format!("{}\n", words[1..].join(" ")),
                "printf" => words.get(1)?.replace("\\n", "\n"),
                _ => return None,
            };
            (stdin, rest)
        }
        None => (String::new(), command),
    };
    let words = shell_words(jq_part)?;
    (words.first()? == "jq").then_some((words, stdin))
}

fn shell_words(text: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for d in chars.by_ref() {
                    if d == '\'' {
                        break;
                    }
                    word.push(d);
                }
            }
            '"' => {
                in_word = true;
                while let Some(d) = chars.next() {
                    match d {
                        '"' => break,
                        '\\' => word.push(chars.next()?),
                        _ => word.push(d),
                    }
                }
            }
            ' ' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '|' | '>' | '<' | ';' | '&' | '$' => return None,
            _ => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Some(words)
}
