//! `grep` against behaviour checked with GNU grep 3.8 (recursion in name
//! order, which GNU does not promise).

use crate::utils::testing::{db, files, run, Ran};

const TREE: &[(&str, &str)] = &[
    ("/dir/a.txt", "hello\nworld\n"),
    ("/dir/b.md", "say hello\n"),
    ("/dir/sub/c.txt", "hello sub\n"),
    ("/t.txt", "one\nmatch\ntwo\nthree\nfour\nmatch\nfive\n"),
];

fn grep(args: &[&str], stdin: &str) -> Ran {
    let db = db();
    files(&db, TREE);
    let mut argv = vec!["grep"];
    argv.extend_from_slice(args);
    run(&db, &argv, stdin)
}

fn out(args: &[&str], stdin: &str) -> String {
    grep(args, stdin).stdout
}

#[test]
fn recursive_paths_and_filters() {
    assert_eq!(
        out(&["-r", "hello", "dir"], ""),
        "dir/a.txt:hello\ndir/b.md:say hello\ndir/sub/c.txt:hello sub\n"
    );
    assert_eq!(
        out(&["-r", "--include=*.txt", "-n", "hello", "dir"], ""),
        "dir/a.txt:1:hello\ndir/sub/c.txt:1:hello sub\n"
    );
    assert_eq!(
        out(&["-r", "hello", "--exclude-dir=sub", "dir/"], ""),
        "dir/a.txt:hello\ndir/b.md:say hello\n"
    );
    assert_eq!(out(&["-rl", "sub"], ""), "dir/sub/c.txt\n");
    assert_eq!(
        out(&["-r", "--exclude-dir=sub", "hello", "dir/sub"], ""),
        ""
    );
    assert_eq!(out(&["-rl", "sub", "."], ""), "./dir/sub/c.txt\n");
    assert_eq!(
        out(&["-c", "-r", "hello", "dir"], ""),
        "dir/a.txt:1\ndir/b.md:1\ndir/sub/c.txt:1\n"
    );
}

#[test]
fn context_groups_are_separated() {
    assert_eq!(
        out(&["-C1", "-n", "match", "t.txt"], ""),
        "1-one\n2:match\n3-two\n--\n5-four\n6:match\n7-five\n"
    );
    assert_eq!(
        out(&["-B1", "-A0", "match", "t.txt"], ""),
        "one\nmatch\n--\nfour\nmatch\n"
    );
    assert_eq!(
        out(&["-m1", "-n", "-A1", "match", "t.txt"], ""),
        "2:match\n3-two\n"
    );
    assert_eq!(out(&["-m1", "-A2", "x"], "x\nx\nb\nx\n"), "x\nx\nb\n");
}

#[test]
fn regex_dialects() {
    assert_eq!(out(&["-x", "-E", "o.e|two", "t.txt"], ""), "one\ntwo\n");
    assert_eq!(out(&["-o", "[a-z]\\+"], "ab1 cd\n"), "ab\ncd\n");
    assert_eq!(out(&["a+b"], "a+b\naab\n"), "a+b\n");
    assert_eq!(out(&["-o", "a\\{2\\}"], "aab\n"), "aa\n");
    assert_eq!(out(&["-E", "-o", "(b|c)+"], "abc\n"), "bc\n");
    assert_eq!(out(&["-F", ".*"], "a.*b\nab\n"), "a.*b\n");
    assert_eq!(out(&["-w", "-o", "hel*o", "dir/a.txt"], ""), "hello\n");
    assert_eq!(out(&["-w", "ab"], "aab\nx ab-c\n"), "x ab-c\n");
    assert_eq!(out(&["-i", "HELLO"], "Hello\nbye\n"), "Hello\n");
    assert_eq!(
        out(&["-e", "one", "-e", "two", "-e", "zzz", "t.txt"], ""),
        "one\ntwo\n"
    );
    assert_eq!(out(&["-o", "b*"], "ab\n"), "b\n");
}

#[test]
fn files_reports_and_status() {
    assert_eq!(
        out(&["-l", "-v", "hello", "dir/a.txt", "dir/b.md"], ""),
        "dir/a.txt\n"
    );
    assert_eq!(
        out(&["-L", "world", "dir/a.txt", "dir/b.md"], ""),
        "dir/b.md\n"
    );
    let r = grep(&["-q", "hello", "dir/a.txt", "missing"], "");
    assert_eq!((r.stdout.as_str(), r.status), ("", 0));
    let r = grep(&["hello", "dir/a.txt", "missing"], "");
    assert_eq!(r.status, 2);
    assert_eq!(r.stderr, "grep: missing: No such file or directory\n");
    let r = grep(&["-s", "hello", "missing"], "");
    assert_eq!((r.stderr.as_str(), r.status), ("", 2));
    assert_eq!(grep(&["zzz", "t.txt"], "").status, 1);
    let r = grep(&["hello", "dir"], "");
    assert_eq!(
        (r.stderr.as_str(), r.status),
        ("grep: dir: Is a directory\n", 2)
    );
    let r = grep(&["-E", "a(", "t.txt"], "");
    assert_eq!(r.status, 2);
    assert_eq!(grep(&[], "").status, 2);
}

#[test]
fn stdin_and_filename_prefixes() {
    assert_eq!(out(&["-H", "foo"], "foo\n"), "(standard input):foo\n");
    assert_eq!(
        out(&["hello", "dir/a.txt", "-"], "hello there\n"),
        "dir/a.txt:hello\n(standard input):hello there\n"
    );
    assert_eq!(
        out(&["-h", "hello", "dir/a.txt", "dir/b.md"], ""),
        "hello\nsay hello\n"
    );
    assert_eq!(out(&["-c", "x"], "x\nx\ny"), "2\n");
    assert_eq!(out(&["b"], "a\nb"), "b\n");
    assert_eq!(out(&["-n", "-b", "o"], "x\nfoo\n"), "2:2:foo\n");
}

#[test]
fn pattern_files() {
    let db = db();
    files(
        &db,
        &[
            ("/p.txt", "app\n\n"),
            ("/e.txt", ""),
            ("/h.txt", "apple\nkiwi\n"),
        ],
    );
    // An empty line in a pattern file matches every line.
    assert_eq!(
        run(&db, &["grep", "-f", "/p.txt", "/h.txt"], "").stdout,
        "apple\nkiwi\n"
    );
    let r = run(&db, &["grep", "-f", "/e.txt", "/h.txt"], "");
    assert_eq!((r.stdout.as_str(), r.status), ("", 1));
    assert_eq!(
        run(&db, &["grep", "-f", "-", "/h.txt"], "kiw\n").stdout,
        "kiwi\n"
    );
    assert_eq!(run(&db, &["grep", "-f", "/nope", "/h.txt"], "").status, 2);
}

#[test]
fn binary_files_are_summarised() {
    let r = grep(&["foo"], "a\0b\nfoo\n");
    assert_eq!(r.stdout, "");
    assert_eq!(r.stderr, "grep: (standard input): binary file matches\n");
    assert_eq!(r.status, 0);
    assert_eq!(out(&["-c", "foo"], "a\0b\nfoo\n"), "1\n");
    assert_eq!(out(&["-a", "foo"], "a\0b\nfoo\n"), "foo\n");
}

#[test]
fn gnu_details() {
    // Back-references, -P as written, -l/-L over -c, repeated stdin.
    assert_eq!(out(&["\\(o\\)\\1"], "foo\nfo\n"), "foo\n");
    assert_eq!(out(&["-E", "-o", "(.)\\1"], "abbcdd\n"), "bb\ndd\n");
    assert_eq!(out(&["-P", "\\d+"], "a1\nb\n"), "a1\n");
    assert_eq!(out(&["-lc", "x"], "x\n"), "(standard input)\n");
    assert_eq!(
        out(&["-c", "x", "-", "-"], "x\n"),
        "(standard input):1\n(standard input):0\n"
    );
    assert_eq!(out(&["-r", "hello", "dir/a.txt"], ""), "hello\n");
    assert_eq!(out(&["--version"], ""), "grep (GNU grep) 3.8\n");
    assert_eq!(
        out(&["-lZ", "hello", "dir/a.txt", "dir/b.md"], ""),
        "dir/a.txt\0dir/b.md\0"
    );
    assert_eq!(
        out(&["-HZ", "hello", "dir/a.txt"], ""),
        "dir/a.txt\0hello\n"
    );
    assert_eq!(
        out(&["-cZ", "hello", "dir/a.txt", "t.txt"], ""),
        "dir/a.txt\x001\nt.txt\x000\n"
    );
    let r = grep(&["-c", "-f", "/dev/null", "t.txt"], "");
    assert_eq!((r.stdout.as_str(), r.status), ("", 1));
}

#[test]
fn egrep_and_fgrep() {
    let db = db();
    assert_eq!(run(&db, &["egrep", "a|b"], "a\nc\n").stdout, "a\n");
    assert_eq!(run(&db, &["fgrep", "a|b"], "a|b\na\n").stdout, "a|b\n");
}

/// The comparison fixtures (recorded from GNU bash + coreutils) whose
/// command is one utility call, optionally fed by `printf`/`echo`: the
/// others need the interpreter and are run by the shell's own harness.
pub(in crate::utils) mod fixtures {
    use crate::utils::testing::{db, files, run};

    /// Splits a command into words; `None` when it needs a real shell.
    fn words(command: &str) -> Option<Vec<String>> {
        let mut words = Vec::new();
        let mut word: Option<String> = None;
        let mut chars = command.chars();
        while let Some(c) = chars.next() {
            match c {
                ' ' => words.extend(word.take()),
                '\'' => {
                    let w = word.get_or_insert_with(String::new);
                    loop {
                        match chars.next()? {
                            '\'' => break,
                            c => w.push(c),
                        }
                    }
                }
                '"' => {
                    let w = word.get_or_insert_with(String::new);
                    loop {
                        match chars.next()? {
                            '"' => break,
                            '$' | '`' => return None,
                            '\\' => match chars.next()? {
                                c @ ('"' | '\\' | '$' | '`') => w.push(c),
                                c => {
                                    w.push('\\');
                                    w.push(c);
                                }
                            },
                            c => w.push(c),
                        }
                    }
                }
                '\\' => word.get_or_insert_with(String::new).push(chars.next()?),
                '|' | ';' | '&' | '<' | '>' | '$' | '`' | '*' | '(' | '{' => return None,
                c => word.get_or_insert_with(String::new).push(c),
            }
        }
        words.extend(word);
        Some(words)
    }

    fn unescape(text: &str) -> String {
        text.replace("\\n", "\n").replace("\\t", "\t")
    }

    /// The stdin a `printf`/`echo` first stage produces.
    fn feeder(stage: &str) -> Option<String> {
        let w = words(stage)?;
        match w.first()?.as_str() {
            "printf" if w.len() == 2 && !w[1].contains('%') => Some(unescape(&w[1])),
            "echo" if w.get(1).is_some_and(|a| a == "-e") => {
                Some(unescape(&w[2..].join(" ")) + "\n")
            }
            "echo" => Some(w[1..].join(" ") + "\n"),
            _ => None,
        }
    }

    /// Runs the single-utility fixtures in files named `<prefix>*`; returns
    /// (passed, run, failures).
    pub(crate) fn run_fixtures(prefix: &str, util: &str) -> (usize, usize, Vec<String>) {
        let paths = crate::test_corpus::files("comparison", ".json");
        let (mut passed, mut total, mut failures) = (0, 0, Vec::new());
        for path in paths {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if !name.starts_with(prefix) {
                continue;
            }
            let text = crate::test_corpus::read(&path);
            let cases: serde_json::Value = serde_json::from_str(&text).unwrap();
            for case in cases.as_object().unwrap().values() {
                let command = case["command"].as_str().unwrap();
                let (stdin, stage) = match command.split_once(" | ") {
                    Some((first, rest)) => match feeder(first) {
                        Some(stdin) => (stdin, rest),
                        None => continue,
                    },
                    None => (String::new(), command),
                };
                let Some(argv) = words(stage) else { continue };
                if argv.first().map(String::as_str) != Some(util) {
                    continue;
                }
                let db = db();
                let fixture_files: Vec<(String, String)> = case["files"]
                    .as_object()
                    .unwrap()
                    .iter()
                    .map(|(p, c)| (format!("/{p}"), c.as_str().unwrap().to_string()))
                    .collect();
                let refs: Vec<(&str, &str)> = fixture_files
                    .iter()
                    .map(|(p, c)| (p.as_str(), c.as_str()))
                    .collect();
                files(&db, &refs);
                let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
                let r = run(&db, &argv, &stdin);
                total += 1;
                if r.stdout == case["stdout"].as_str().unwrap()
                    && i64::from(r.status) == case["exitCode"].as_i64().unwrap()
                {
                    passed += 1;
                } else {
                    failures.push(format!("{command}: got {:?} status {}", r.stdout, r.status));
                }
            }
        }
        (passed, total, failures)
    }
}

#[test]
fn comparison_fixtures() {
    let (passed, total, failures) = fixtures::run_fixtures("grep", "grep");
    println!("grep fixtures: {passed}/{total}");
    assert!(total >= 72, "only {total} grep fixtures ran");
    assert_eq!(failures, Vec::<String>::new());
}

/// Recursion reads files in batches: order, names, counts and early exits
/// must be those of reading them one by one, across batch boundaries.
#[test]
fn recursion_over_many_files_keeps_order() {
    let db = db();
    let mut tree: Vec<(String, String)> = Vec::new();
    let mut expected = String::new();
    let mut counts = String::new();
    for d in 0..3 {
        for f in 0..300 {
            let path = format!("/w/d{d}/f{f:03}");
            let hit = f % 7 == 0;
            let content = if hit {
                format!("x\nneedle {d} {f}\n")
            } else {
                format!("x {d} {f}\n")
            };
            if hit {
                expected.push_str(&format!("w/d{d}/f{f:03}:2:needle {d} {f}\n"));
            }
            counts.push_str(&format!("w/d{d}/f{f:03}:{}\n", u8::from(hit)));
            tree.push((path, content));
        }
    }
    // A file of several chunks, between two directories of small files.
    let big = format!("{}needle big\n", "y\n".repeat(600_000));
    tree.push(("/w/d1z".to_string(), big));
    let refs: Vec<(&str, &str)> = tree.iter().map(|(p, c)| (p.as_str(), c.as_str())).collect();
    files(&db, &refs);
    let d1_end = expected.find("w/d2/").unwrap();
    expected.insert_str(d1_end, "w/d1z:600001:needle big\n");
    let c1_end = counts.find("w/d2/").unwrap();
    counts.insert_str(c1_end, "w/d1z:1\n");

    let r = run(&db, &["grep", "-rn", "needle", "w"], "");
    assert_eq!(
        (r.stdout.as_str(), r.stderr.as_str(), r.status),
        (expected.as_str(), "", 0)
    );
    assert_eq!(run(&db, &["grep", "-rc", "needle", "w"], "").stdout, counts);
    let r = run(&db, &["grep", "-rq", "needle", "w"], "");
    assert_eq!((r.stdout.as_str(), r.status), ("", 0));
    let listed = run(&db, &["grep", "-rl", "needle", "w"], "").stdout;
    assert_eq!(listed.lines().count(), 3 * 43 + 1);
    assert!(listed.starts_with("w/d0/f000\nw/d0/f007\n"));
}

/// Symlinks under -R: followed to their file, or reported where met.
#[test]
fn recursion_follows_symlinks_to_files() {
    let db = db();
    files(&db, &[("/w/a", "needle a\n"), ("/w/c", "needle c\n")]);
    let vfs = stead_vfs::Vfs::new(&db, 0);
    let p = |s: &str| stead_vfs::VPath::parse(s).unwrap();
    vfs.symlink("/nowhere", &p("/w/b")).unwrap();
    vfs.symlink("/w/a", &p("/w/b2")).unwrap();
    let r = run(&db, &["grep", "-R", "needle", "w"], "");
    assert_eq!(r.stdout, "w/a:needle a\nw/b2:needle a\nw/c:needle c\n");
    assert_eq!(r.stderr, "grep: w/b: No such file or directory\n");
    assert_eq!(r.status, 2);
}

/// `grep -r` reads the files of a walk in batches: a few statements per
/// directory, not some per file.
#[test]
fn recursion_reads_files_in_batches() {
    use crate::fs::Fs;
    use crate::utils::testing::FixedClock;

    let db = db();
    let tree: Vec<(String, String)> = (0..500)
        .map(|i| (format!("/w/d{}/f{i:03}", i % 5), format!("line {i}\n")))
        .collect();
    let refs: Vec<(&str, &str)> = tree.iter().map(|(p, c)| (p.as_str(), c.as_str())).collect();
    files(&db, &refs);
    let counting = crate::utils::testing::Counting {
        db: &db,
        statements: Default::default(),
    };
    let vfs = stead_vfs::Vfs::new(&counting, 0);
    let fs: &dyn Fs = &vfs;
    let request = crate::ExecRequest {
        command: "grep -rn 'line 4.7$' w".to_string(),
        cwd: stead_vfs::VPath::root(),
        env: Default::default(),
        stdin: Vec::new(),
        limits: Default::default(),
    };
    let out = crate::exec(fs, &FixedClock, request);
    let expected: String = (0..10)
        .map(|t| format!("w/d{}/f4{t}7:1:line 4{t}7\n", (7 + t * 10) % 5))
        .collect();
    assert_eq!(String::from_utf8_lossy(&out.stdout), expected);
    let statements = counting.statements.get();
    eprintln!("grep -rn over 500 files: {statements} statements");
    assert!(statements < 50, "{statements} statements");
}
