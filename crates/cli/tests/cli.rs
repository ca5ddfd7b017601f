//! End-to-end tests of the real `stead` binary against the real Worker
//! under `wrangler dev` (the computer in the mode the harness picks).
//!
//! Each test runs the binary as a user would, with its configuration in a
//! folder of its own (`STEAD_CONFIG_DIR`) and its working directory in
//! another, and asserts what it printed, what it left on disk and in the
//! workspace, and its exit code.

#[path = "../../../tests/common/mod.rs"]
mod common;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::thread;

use serde_json::Value;
use stead_harness::DEV_TOKEN;

/// What one run of the binary gave.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    #[track_caller]
    fn ok(&self) -> &str {
        assert_eq!(
            self.code, 0,
            "stdout: {}\nstderr: {}",
            self.stdout, self.stderr
        );
        &self.stdout
    }

    /// Asserts a failure with `code` and one line of error, no backtrace.
    #[track_caller]
    fn failed(&self, code: i32) -> &str {
        assert_eq!(
            self.code, code,
            "stdout: {}\nstderr: {}",
            self.stdout, self.stderr
        );
        let line = self.stderr.trim_end();
        assert!(line.starts_with("stead: "), "{line}");
        assert!(!line.contains('\n'), "more than one line: {line}");
        assert!(!line.contains("panicked"), "{line}");
        line
    }

    fn json_lines(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect()
    }
}

/// A user of the CLI: a configuration folder and a working directory.
struct User {
    config: tempfile::TempDir,
    cwd: tempfile::TempDir,
    /// `STEAD_URL`/`STEAD_TOKEN` given (or none, to read the profile).
    env: Vec<(&'static str, String)>,
}

impl User {
    /// A user whose environment names the shared runtime.
    fn new() -> User {
        let mut user = User::bare();
        user.env = vec![
            ("STEAD_URL", common::base().to_string()),
            ("STEAD_TOKEN", DEV_TOKEN.to_string()),
        ];
        user
    }

    /// A user with no URL or token in the environment.
    fn bare() -> User {
        User {
            config: tempfile::tempdir().unwrap(),
            cwd: tempfile::tempdir().unwrap(),
            env: Vec::new(),
        }
    }

    fn command(&self, args: &[&str], dir: &Path) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_stead"));
        command
            .args(args)
            .current_dir(dir)
            .env_remove("STEAD_URL")
            .env_remove("STEAD_TOKEN")
            .env_remove("STEAD_AGENT")
            .env_remove("STEAD_PROFILE")
            .env("STEAD_CONFIG_DIR", self.config.path())
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null());
        command
    }

    fn run_in(&self, dir: &Path, args: &[&str]) -> Run {
        let out = self.command(args, dir).output().expect("run stead");
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    fn run(&self, args: &[&str]) -> Run {
        self.run_in(self.cwd.path(), args)
    }

    /// Runs with `input` on standard input and `env` added.
    fn run_with(&self, args: &[&str], input: &str, env: &[(&str, &str)]) -> Run {
        let mut command = self.command(args, self.cwd.path());
        command
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("run stead");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.cwd.path().join(name)
    }
}

/// A new agent with a name no other test uses.
fn new_agent(user: &User, name: &str) -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let id = format!(
        "cli-{name}-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    user.run(&["agents", "create", &id]).ok();
    id
}

/// `-a AGENT` and `rest`.
fn on<'a>(agent: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    [&["-a", agent][..], rest].concat()
}

#[test]
fn login_stores_a_private_profile_that_later_commands_use() {
    let user = User::bare();
    // Nothing configured: the error says what to run.
    let none = user.run(&["agents", "ls"]);
    assert!(none.failed(3).contains("stead login"), "{}", none.stderr);

    // A wrong token is refused before anything is stored.
    let wrong = user.run(&["login", "--url", common::base(), "--token", "nope"]);
    assert!(
        wrong.failed(5).contains("check the token"),
        "{}",
        wrong.stderr
    );
    assert!(!user.config.path().join("config.json").exists());
    // A URL where nothing listens.
    let unused = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = unused.local_addr().unwrap().port();
    drop(unused);
    let nowhere = format!("http://127.0.0.1:{port}");
    let unreachable = user.run(&["login", "--url", &nowhere, "--token", DEV_TOKEN]);
    assert!(
        unreachable.failed(8).contains("cannot reach"),
        "{}",
        unreachable.stderr
    );

    user.run(&["login", "--url", common::base(), "--token", DEV_TOKEN])
        .ok();
    let file = user.config.path().join("config.json");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the file holds tokens");
    let stored: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(stored["current"], "default");
    assert_eq!(stored["profiles"]["default"]["token"], DEV_TOKEN);

    // Later commands need no URL or token; the environment overrides the
    // profile (here with a wrong token, which then fails).
    let id = new_agent(&user, "login");
    user.run(&["agents", "info", &id]).ok();
    let mut overridden = User::bare();
    overridden.config = user.config;
    overridden.env = vec![("STEAD_TOKEN", "wrong".to_string())];
    overridden.run(&["agents", "info", &id]).failed(5);
    // An unknown profile names the stored ones; logging in makes it, and
    // it becomes the current one.
    let unknown = overridden.run(&["--profile", "staging", "agents", "ls"]);
    assert!(
        unknown.failed(3).contains("stored: default"),
        "{}",
        unknown.stderr
    );
    let staging = User {
        config: overridden.config,
        cwd: tempfile::tempdir().unwrap(),
        env: Vec::new(),
    };
    let base = common::base();
    let login = [
        "--profile",
        "staging",
        "login",
        "--url",
        base,
        "--token",
        DEV_TOKEN,
    ];
    staging.run(&login).ok();
    let stored: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(stored["current"], "staging");
    staging.run(&["agents", "info", &id]).ok();
}

#[test]
fn agents_are_listed_newest_first_with_usage_until_deleted() {
    let user = User::new();
    let older = new_agent(&user, "older");
    let newer = new_agent(&user, "newer");
    user.run(&["-a", &newer, "exec", "--light", "--", "echo hi > /f"])
        .ok();
    let listed = user.run(&["--json", "agents", "ls", "--all"]).json_lines();
    let position = |id: &str| {
        listed
            .iter()
            .position(|a| a["id"] == id)
            .unwrap_or_else(|| panic!("{id} not listed: {listed:?}"))
    };
    assert!(position(&newer) < position(&older), "newest first");
    let entry = &listed[position(&newer)];
    assert!(entry["created_ms"].as_i64().unwrap() > 0);
    assert_eq!(entry["usage"]["files"], 1);

    // Deleting needs a confirmation, then the agent leaves the list.
    let unconfirmed = user.run(&["agents", "rm", &older]);
    assert!(unconfirmed.failed(10).contains("--yes"));
    user.run(&["agents", "rm", &older, "--yes"]).ok();
    let listed = user.run(&["--json", "agents", "ls", "--all"]).json_lines();
    assert!(listed.iter().all(|a| a["id"] != older.as_str()));
    let gone = user.run(&["agents", "info", &older]);
    assert!(
        gone.failed(4).contains("AGENT_NOT_FOUND"),
        "{}",
        gone.stderr
    );

    // The listing is the admin's: an agent token is refused.
    let minted = common::client().send(
        "POST",
        "/tokens",
        format!(r#"{{"agent":"{newer}","scopes":["admin"]}}"#).as_bytes(),
    );
    let token = minted.json()["token"].as_str().unwrap().to_string();
    let mut agent_user = User::new();
    agent_user.env[1].1 = token;
    agent_user.run(&["agents", "ls"]).failed(5);
}

#[test]
fn use_records_the_agent_for_the_directory_and_the_folders_below() {
    let user = User::new();
    let id = new_agent(&user, "use");
    let nowhere = user.run(&["ls"]);
    assert!(nowhere.failed(3).contains("stead use"));
    user.run(&["use", &id]).ok();
    user.run(&["exec", "--light", "--", "mkdir -p /src && echo x > /src/a"])
        .ok();
    let below = user.path("deep/er");
    std::fs::create_dir_all(&below).unwrap();
    assert_eq!(user.run_in(&below, &["ls", "/src"]).ok(), "a\n");
    let unknown = user.run(&["use", "cli-no-such-agent"]);
    assert!(unknown.failed(4).contains("stead agents create"));
}

#[test]
fn files_go_up_and_come_back_with_their_bytes_mode_and_mtime() {
    let user = User::new();
    let id = new_agent(&user, "files");
    let local = user.path("run.sh");
    let content: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&local, &content).unwrap();
    std::fs::set_permissions(&local, std::fs::Permissions::from_mode(0o755)).unwrap();
    user.run(&on(&id, &["put", local.to_str().unwrap(), "/bin2/run.sh"]))
        .ok();
    let long = user.run(&on(&id, &["ls", "-l", "/bin2"]));
    assert!(
        long.ok().starts_with("- 0755     300000 "),
        "{}",
        long.stdout
    );

    let back = user.path("back.sh");
    user.run(&on(&id, &["get", "/bin2/run.sh", back.to_str().unwrap()]))
        .ok();
    assert_eq!(std::fs::read(&back).unwrap(), content);
    let meta = std::fs::metadata(&back).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o755);
    let stat = common::client().tool(&id, "stat", serde_json::json!({"path": "/bin2/run.sh"}));
    let mtime_ms = stat.json()["mtime"].as_i64().unwrap();
    let local_ms = meta
        .modified()
        .unwrap()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    assert_eq!(local_ms, mtime_ms);

    user.run(&on(&id, &["mv", "/bin2/run.sh", "/bin2/go.sh"]))
        .ok();
    let cat = user.run(&on(&id, &["cat", "/bin2/go.sh"]));
    assert_eq!(cat.code, 0);
    assert_eq!(cat.stdout.len(), String::from_utf8_lossy(&content).len());
    user.run(&on(&id, &["rm", "/bin2/go.sh"])).ok();
    let missing = user.run(&on(&id, &["cat", "/bin2/go.sh"]));
    assert!(missing.failed(4).contains("ENOENT"), "{}", missing.stderr);
    user.run(&on(&id, &["rm", "-f", "/bin2/go.sh"])).ok();
    let no_local = user.run(&on(&id, &["put", "nothing-here", "/x"]));
    assert!(no_local.failed(11).contains("nothing-here"));
    // A failed download leaves nothing where the file would have gone.
    assert!(!user.path("gone").exists());
    user.run(&on(&id, &["get", "/bin2/go.sh", "gone"]))
        .failed(4);
    assert_eq!(std::fs::read_dir(user.cwd.path()).unwrap().count(), 2);
}

#[test]
fn exec_streams_output_and_exits_with_the_commands_status() {
    let user = User::new();
    let id = new_agent(&user, "exec");
    let light = user.run(&[
        "-a", &id, "exec", "--light", "--", "echo", "hi;", "exit", "3",
    ]);
    assert_eq!(
        (light.code, light.stdout.as_str()),
        (3, "hi\n"),
        "{}",
        light.stderr
    );
    let computer = user.run(&[
        "-a",
        &id,
        "exec",
        "--computer",
        "--",
        "echo out; echo err >&2; python3 -c 'import sys; sys.exit(7)'",
    ]);
    assert_eq!(computer.code, 7, "{}", computer.stderr);
    assert_eq!(computer.stdout, "out\n");
    assert_eq!(computer.stderr, "err\n");
    let json = user.run(&["-a", &id, "--json", "exec", "--", "exit 5"]);
    assert_eq!(json.code, 5);
    assert_eq!(json.json_lines()[0]["exit_code"], 5);
    let detached = user.run(&["-a", &id, "--json", "exec", "--detach", "--", "echo later"]);
    let job = detached.json_lines()[0]["job"]["id"].as_i64().unwrap();
    let logs = user.run(&["-a", &id, "logs", "-f", &job.to_string()]);
    assert_eq!(logs.ok(), "later\n");
    let jobs = user.run(&["-a", &id, "--json", "jobs", "ls"]).json_lines();
    assert!(jobs.iter().any(|j| j["id"] == job));
}

/// Which way a [`cutting_proxy`] counts the bytes it cuts after.
#[derive(Clone, Copy, PartialEq)]
enum Cut {
    /// What the server sends.
    Answers,
    /// What the client sends.
    Requests,
}

/// A TCP proxy to the runtime that cuts its first connection once
/// `cut_after` bytes went through it the `way` given; later connections
/// pass.
fn cutting_proxy(cut_after: usize, way: Cut) -> (String, Arc<AtomicBool>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let upstream = common::base().trim_start_matches("http://").to_string();
    let cut = Arc::new(AtomicBool::new(false));
    let was_cut = cut.clone();
    thread::spawn(move || {
        for (n, client) in listener.incoming().enumerate() {
            let Ok(client) = client else { return };
            let server = TcpStream::connect(&upstream).unwrap();
            let limit = move |this: Cut| (n == 0 && this == way).then_some(cut_after);
            let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
            let flag = was_cut.clone();
            thread::spawn(move || pipe(c2, s2, limit(Cut::Requests), Some(flag)));
            let flag = was_cut.clone();
            thread::spawn(move || pipe(server, client, limit(Cut::Answers), Some(flag)));
        }
    });
    (url, cut)
}

fn pipe(
    mut from: TcpStream,
    mut to: TcpStream,
    limit: Option<usize>,
    cut: Option<Arc<AtomicBool>>,
) {
    let mut sent = 0;
    let mut buffer = [0u8; 4096];
    loop {
        let n = match from.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if to.write_all(&buffer[..n]).is_err() {
            break;
        }
        sent += n;
        if limit.is_some_and(|limit| sent >= limit) {
            if let Some(cut) = &cut {
                cut.store(true, Ordering::SeqCst);
            }
            break;
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}

#[test]
fn logs_follow_resumes_after_a_cut_connection_and_prints_every_byte_once() {
    let user = User::new();
    let id = new_agent(&user, "logs");
    let script = "for i in $(seq 1 200); do echo line-$i; sleep 0.01; done";
    let detached = user.run(&[
        "-a",
        &id,
        "--json",
        "exec",
        "--computer",
        "--detach",
        "--",
        script,
    ]);
    let job = detached.json_lines()[0]["job"]["id"].as_i64().unwrap();
    // Cut the first connection a few pieces into the stream.
    let (url, cut) = cutting_proxy(900, Cut::Answers);
    let mut through = User::new();
    through.env[0].1 = url;
    let logs = through.run(&["-a", &id, "logs", "-f", &job.to_string()]);
    assert!(cut.load(Ordering::SeqCst), "the connection was never cut");
    let expected: String = (1..=200).map(|i| format!("line-{i}\n")).collect();
    assert_eq!(logs.code, 0, "{}", logs.stderr);
    assert_eq!(logs.stdout, expected, "stderr: {}", logs.stderr);
    assert!(logs.stderr.contains("resuming job"), "{}", logs.stderr);
}

#[test]
fn diff_shows_a_change_since_the_checkpoint_and_restore_takes_it_back() {
    let user = User::new();
    let id = new_agent(&user, "diff");
    user.run(&on(
        &id,
        &[
            "exec",
            "--light",
            "--",
            "printf 'one\\ntwo\\n' > /notes.txt",
        ],
    ))
    .ok();
    let made = user.run(&on(&id, &["--json", "checkpoint", "-m", "before", "good"]));
    assert_eq!(made.json_lines()[0]["checkpoint"]["name"], "good");
    user.run(&on(
        &id,
        &[
            "exec",
            "--light",
            "--",
            "printf 'one\\nTWO\\n' > /notes.txt",
        ],
    ))
    .ok();
    let diff = user.run(&on(&id, &["diff", "good"]));
    let text = diff.ok();
    assert!(text.contains("-two\n+TWO\n"), "{text}");
    assert!(!text.contains('\x1b'), "no colour when piped: {text:?}");
    let listed = user.run(&on(&id, &["checkpoints"]));
    assert!(listed.ok().contains("good"), "{}", listed.stdout);

    user.run(&on(&id, &["restore", "good"])).ok();
    assert_eq!(
        user.run(&on(&id, &["cat", "/notes.txt"])).ok(),
        "one\ntwo\n"
    );
    // The restore can be undone.
    user.run(&on(&id, &["undo"])).ok();
    assert_eq!(
        user.run(&on(&id, &["cat", "/notes.txt"])).ok(),
        "one\nTWO\n"
    );
    let unknown = user.run(&on(&id, &["restore", "no-such-checkpoint"]));
    assert!(unknown.failed(4).contains("ENOENT"), "{}", unknown.stderr);

    // A fork is a new agent, and the list shows it.
    let fork = format!("{id}-fork");
    user.run(&on(&id, &["fork", &fork])).ok();
    assert_eq!(
        user.run(&["-a", &fork, "cat", "/notes.txt"]).ok(),
        "one\nTWO\n"
    );
    let listed = user.run(&["--json", "agents", "ls", "--all"]).json_lines();
    assert!(listed.iter().any(|a| a["id"] == fork.as_str()));
}

#[test]
fn mcp_config_prints_each_clients_snippet() {
    let user = User::new();
    let id = new_agent(&user, "mcp");
    let url = format!("{}/agents/{id}/mcp", common::base());
    let claude = user.run(&["-a", &id, "mcp", "config", "--client", "claude-code"]);
    assert_eq!(
        claude.ok().trim(),
        format!("claude mcp add --transport http stead-{id} {url} --header \"Authorization: Bearer {DEV_TOKEN}\"")
    );
    let json = user.run(&["-a", &id, "mcp", "config", "--client", "json"]);
    let value: Value = serde_json::from_str(json.ok()).unwrap();
    assert_eq!(value["url"], url.as_str());
    let cursor = user.run(&["-a", &id, "mcp", "config", "--client", "cursor"]);
    let value: Value = serde_json::from_str(cursor.ok()).unwrap();
    assert_eq!(
        value["mcpServers"][format!("stead-{id}")]["url"],
        url.as_str()
    );
}

/// Every path below `root` with what is there: kind, mode, mtime (ms) and
/// bytes (a link's target).
fn tree_of(root: &Path) -> std::collections::BTreeMap<String, (char, u32, i64, Vec<u8>)> {
    use std::os::unix::fs::MetadataExt;
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let mode = meta.mode() & 0o7777;
            let item = if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                (
                    'l',
                    0,
                    0,
                    target.to_string_lossy().into_owned().into_bytes(),
                )
            } else if meta.is_dir() {
                stack.push(path.clone());
                ('d', mode, 0, Vec::new())
            } else {
                let mtime_ms = meta.mtime() * 1000 + meta.mtime_nsec() / 1_000_000;
                ('f', mode, mtime_ms, std::fs::read(&path).unwrap())
            };
            out.insert(rel, item);
        }
    }
    out
}

fn copy_tree(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn push_and_pull_a_source_tree_send_only_what_the_other_side_lacks() {
    let user = User::new();
    let id = new_agent(&user, "push");
    let source = user.path("src");
    copy_tree(&stead_harness::repo_root().join("crates"), &source);
    // A symlink, an executable and an ignored file come along too.
    std::os::unix::fs::symlink("sql/Cargo.toml", source.join("link")).unwrap();
    std::fs::set_permissions(
        source.join("sql/Cargo.toml"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    std::fs::write(source.join(".steadignore"), "*.log\n").unwrap();
    std::fs::write(source.join("debug.log"), "noise\n").unwrap();
    let tree_bytes: u64 = tree_of(&source).values().map(|v| v.3.len() as u64).sum();

    let src = source.to_str().unwrap();
    let first = user.run(&on(&id, &["--json", "push", src, "/tree"]));
    let first = &first.json_lines()[0];
    assert!(first["bytes_sent"].as_u64().unwrap() > 0, "{first}");

    // Pulled into an empty folder, the tree is the same, byte for byte,
    // with modes and mtimes; the ignored file stayed behind.
    let copy = user.path("copy");
    let pulled = user.run(&on(
        &id,
        &["--json", "pull", "/tree", copy.to_str().unwrap()],
    ));
    assert_eq!(pulled.code, 0, "{}", pulled.stderr);
    let mut expected = tree_of(&source);
    expected.remove("debug.log");
    assert_eq!(tree_of(&copy), expected);

    // The unchanged tree again: no content crosses, nothing changes.
    let again = user.run(&on(&id, &["--json", "push", src, "/tree"]));
    assert_eq!(again.json_lines()[0]["bytes_sent"], 0, "{}", again.stdout);
    assert_eq!(again.json_lines()[0]["changes"], 0, "{}", again.stdout);

    // A one-line change sends one chunk, and less than 1% of the tree.
    let file = source.join("vfs/src/ops.rs");
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str("// one more line\n");
    std::fs::write(&file, &text).unwrap();
    let line = user.run(&on(&id, &["--json", "push", src, "/tree"]));
    let line = &line.json_lines()[0];
    assert_eq!(line["chunks_sent"], 1, "{line}");
    assert!(
        line["bytes_sent"].as_u64().unwrap() < tree_bytes / 100,
        "{line}"
    );
    assert_eq!(
        user.run(&on(&id, &["cat", "/tree/vfs/src/ops.rs"])).ok(),
        text
    );

    // A dry run changes nothing; --delete removes what the source lost.
    std::fs::remove_file(source.join("sql/Cargo.toml")).unwrap();
    let dry = user.run(&on(&id, &["push", "--delete", "--dry-run", src, "/tree"]));
    assert!(
        dry.ok().contains("- /tree/sql/Cargo.toml"),
        "{}",
        dry.stdout
    );
    user.run(&on(&id, &["cat", "/tree/sql/Cargo.toml"])).ok();
    user.run(&on(&id, &["push", "--delete", src, "/tree"])).ok();
    user.run(&on(&id, &["cat", "/tree/sql/Cargo.toml"]))
        .failed(4);
    // The pull brings the change and the deletion; the push can be undone.
    user.run(&on(
        &id,
        &["pull", "--delete", "/tree", copy.to_str().unwrap()],
    ))
    .ok();
    let mut expected = tree_of(&source);
    expected.remove("debug.log");
    assert_eq!(tree_of(&copy), expected);
    user.run(&on(&id, &["undo"])).ok();
    user.run(&on(&id, &["cat", "/tree/sql/Cargo.toml"])).ok();

    let missing = user.run(&on(&id, &["push", "no-such-dir"]));
    assert!(missing.failed(11).contains("no-such-dir"));
}

#[test]
fn a_push_over_the_quota_stops_before_sending_and_names_it() {
    let user = User::new();
    let id = new_agent(&user, "quota");
    let reply = common::client().send(
        "PUT",
        &format!("/agents/{id}/settings"),
        br#"{"quotas":{"max_stored_bytes":100000}}"#,
    );
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let big = user.path("big");
    std::fs::create_dir(&big).unwrap();
    std::fs::write(big.join("a.bin"), vec![7u8; 300_000]).unwrap();
    let refused = user.run(&on(&id, &["push", big.to_str().unwrap(), "/big"]));
    let line = refused.failed(7);
    assert!(line.contains("max_stored_bytes"), "{line}");
    let usage = common::client().send("GET", &format!("/agents/{id}"), b"");
    assert_eq!(usage.json()["usage"]["files"], 0, "nothing was sent");

    // A file over max_file_bytes is named before anything is sent.
    let reply = common::client().send(
        "PUT",
        &format!("/agents/{id}/settings"),
        br#"{"quotas":{"max_stored_bytes":10000000,"max_file_bytes":200000}}"#,
    );
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let refused = user.run(&on(&id, &["push", big.to_str().unwrap(), "/big"]));
    let line = refused.failed(7);
    assert!(
        line.contains("/big/a.bin") && line.contains("max_file_bytes"),
        "{line}"
    );
    let usage = common::client().send("GET", &format!("/agents/{id}"), b"");
    assert_eq!(usage.json()["usage"]["files"], 0, "nothing was sent");
}

#[test]
fn shell_keeps_the_directory_and_variables_between_lines() {
    let user = User::new();
    let id = new_agent(&user, "shell");
    let input =
        "mkdir -p /d/e\ncd /d\nGREETING=hello\necho $GREETING from $(pwd)\ncd e && pwd\nfalse\n";
    let run = user.run_with(&["-a", &id, "shell"], input, &[]);
    assert_eq!(
        run.stdout, "hello from /d\n/d/e\n",
        "stderr: {}",
        run.stderr
    );
    assert_eq!(run.code, 1, "the last line's status");
}

/// `shell -t`: the agent's terminal even from a pipe; what is typed is
/// echoed and answered after the prompt, and the session's exit status is
/// stead's.
#[test]
fn shell_on_the_terminal_keeps_its_session_and_exits_with_it() {
    let user = User::new();
    let id = new_agent(&user, "terminal");
    let input = "mkdir -p /t && cd /t\nV=42\necho v=$V in $(pwd)\nexit 5\n";
    let run = user.run_with(&["-a", &id, "shell", "-t"], input, &[]);
    assert!(
        run.stdout
            .contains("/t$ echo v=$V in $(pwd)\r\nv=42 in /t\r\n/t$ "),
        "stdout: {:?}, stderr: {}",
        run.stdout,
        run.stderr
    );
    assert_eq!(run.code, 5, "the session's status; stderr: {}", run.stderr);
    let listed = common::client().send("GET", &format!("/agents/{id}/terminals"), b"");
    assert_eq!(listed.json()["terminals"][0]["exit_code"], 5);
}

#[test]
fn edit_writes_back_only_when_the_file_did_not_move_meanwhile() {
    let user = User::new();
    let id = new_agent(&user, "edit");
    let local = user.path("f.txt");
    std::fs::write(&local, "old text\n").unwrap();
    user.run(&on(&id, &["put", local.to_str().unwrap(), "/f.txt"]))
        .ok();
    let editor = [("EDITOR", "sed -i s/old/new/")];
    user.run_with(&on(&id, &["edit", "/f.txt"]), "", &editor);
    assert_eq!(user.run(&on(&id, &["cat", "/f.txt"])).ok(), "new text\n");

    // An editor during which someone else writes the file: refused, the
    // local copy kept and named.
    let other = user.path("other.txt");
    std::fs::write(&other, "theirs\n").unwrap();
    let script = user.path("editor.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\nsed -i s/new/mine/ \"$1\"\n\"$STEAD_BIN\" put \"$OTHER\" /f.txt >/dev/null\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let env = [
        ("EDITOR", script.to_str().unwrap()),
        ("STEAD_BIN", env!("CARGO_BIN_EXE_stead")),
        ("OTHER", other.to_str().unwrap()),
        ("STEAD_AGENT", id.as_str()),
    ];
    let conflict = user.run_with(&["edit", "/f.txt"], "", &env);
    let line = conflict.failed(6);
    assert!(line.contains("changed in the workspace"), "{line}");
    assert_eq!(user.run(&on(&id, &["cat", "/f.txt"])).ok(), "theirs\n");
    let kept = line.rsplit("your copy is ").next().unwrap();
    assert_eq!(std::fs::read_to_string(kept).unwrap(), "mine text\n");
    std::fs::remove_file(kept).unwrap();
}

#[test]
fn tokens_schedules_and_hooks_are_managed_from_the_command_line() {
    let user = User::new();
    let id = new_agent(&user, "admin");
    let minted = user.run(&on(&id, &["tokens", "mint", "--scopes", "read"]));
    let token = minted.ok().trim().to_string();
    let mut reader = User::new();
    reader.env[1].1 = token;
    reader.run(&on(&id, &["ls", "/"])).ok();
    let refused = reader.run(&on(&id, &["put", "/dev/null", "/x"]));
    assert!(
        refused.failed(5).contains("FORBIDDEN"),
        "{}",
        refused.stderr
    );
    // The listing names the token (never the token itself) until revoked.
    let listed = user.run(&on(&id, &["--json", "tokens", "ls"])).json_lines();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["scopes"], serde_json::json!(["read"]));
    assert_eq!(listed[0]["revoked"], false);
    assert!(!listed[0].to_string().contains(&reader.env[1].1));
    let token_id = listed[0]["id"].as_str().unwrap().to_string();
    user.run(&on(&id, &["tokens", "revoke", &token_id])).ok();
    let shown = user.run(&on(&id, &["tokens", "ls"]));
    let shown = shown.ok();
    assert!(
        shown.starts_with(&format!("{token_id}  revoked")),
        "{shown}"
    );
    assert!(
        reader
            .run(&on(&id, &["tokens", "ls"]))
            .failed(5)
            .contains("FORBIDDEN"),
        "a read token does not list tokens"
    );

    user.run(&on(
        &id,
        &[
            "schedules",
            "create",
            "later",
            r#"{"delay_ms":3600000,"exec":{"command":"echo later"}}"#,
        ],
    ))
    .ok();
    let listed = user
        .run(&on(&id, &["--json", "schedules", "ls"]))
        .json_lines();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["id"], "later");
    user.run(&on(&id, &["schedules", "rm", "later"])).ok();
    assert!(user.run(&on(&id, &["schedules", "ls"])).ok().is_empty());
    let bad = user.run(&on(&id, &["schedules", "create", "x", "{not json"]));
    assert!(bad.failed(10).contains("not JSON"));
}

#[test]
fn forward_serves_a_dev_servers_page_to_a_local_curl() {
    let user = User::new();
    let id = new_agent(&user, "forward");
    user.run(&on(
        &id,
        &[
            "exec",
            "--light",
            "--",
            "mkdir -p /site && echo hello-from-the-dev-server > /site/index.html",
        ],
    ))
    .ok();
    let port = 20_000 + (std::process::id() % 5_000) as u16;
    let port_text = port.to_string();
    user.run(&on(
        &id,
        &[
            "start",
            "--port",
            &port_text,
            "--cwd",
            "/site",
            "--",
            "python3",
            "-m",
            "http.server",
            &port_text,
        ],
    ))
    .ok();
    let free = TcpListener::bind("127.0.0.1:0").unwrap();
    let local = free.local_addr().unwrap().port().to_string();
    drop(free);
    let mut forward = user
        .command(&on(&id, &["forward", &port_text, &local]), user.cwd.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let page = loop {
        let out = Command::new("curl")
            .args([
                "-s",
                "--max-time",
                "10",
                &format!("http://127.0.0.1:{local}/index.html"),
            ])
            .output()
            .unwrap();
        let body = String::from_utf8_lossy(&out.stdout).into_owned();
        if body.contains("hello-from-the-dev-server") || std::time::Instant::now() > deadline {
            break body;
        }
        thread::sleep(std::time::Duration::from_millis(500));
    };
    forward.kill().unwrap();
    forward.wait().unwrap();
    let processes = user.run(&on(&id, &["--json", "ps"])).json_lines();
    for process in &processes {
        user.run(&on(&id, &["kill", process["id"].as_str().unwrap()]));
    }
    assert_eq!(page, "hello-from-the-dev-server\n");
}

#[test]
fn a_push_or_pull_cut_off_midway_leaves_nothing_half_done_and_the_next_run_finishes_it() {
    let user = User::new();
    let id = new_agent(&user, "cutpush");
    let source = user.path("big");
    std::fs::create_dir(&source).unwrap();
    let mut seed = 1u64;
    for i in 0..6 {
        // 5 MB of bytes that do not repeat: 10 chunks each.
        let data: Vec<u8> = (0..5_000_000)
            .map(|_| {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (seed >> 33) as u8
            })
            .collect();
        std::fs::write(source.join(format!("f{i}.bin")), data).unwrap();
    }
    // The first connection breaks after 20 MB of upload: past the first
    // batch of chunks, before the apply.
    let (url, cut) = cutting_proxy(20_000_000, Cut::Requests);
    let mut through = User::new();
    through.env[0].1 = url;
    let src = source.to_str().unwrap();
    let broken = through.run(&on(&id, &["push", src, "/big"]));
    assert!(cut.load(Ordering::SeqCst), "the connection was never cut");
    broken.failed(8);
    let usage = common::client().send("GET", &format!("/agents/{id}"), b"");
    assert_eq!(usage.json()["usage"]["files"], 0, "nothing half-applied");

    let finished = user.run(&on(&id, &["--json", "push", src, "/big"]));
    assert_eq!(finished.code, 0, "{}", finished.stderr);

    // A pull cut off midway leaves no file half-written under its name,
    // and the next one finishes it and clears its staging.
    let copy = user.path("copy");
    let (url, cut) = cutting_proxy(20_000_000, Cut::Answers);
    through.env[0].1 = url;
    let broken = through.run(&on(&id, &["pull", "/big", copy.to_str().unwrap()]));
    assert!(cut.load(Ordering::SeqCst), "the connection was never cut");
    broken.failed(8);
    let expected = tree_of(&source);
    for (name, item) in tree_of(&copy) {
        if name.starts_with(".stead-pull") {
            continue;
        }
        assert_eq!(Some(&item), expected.get(&name), "{name} is not whole");
    }
    user.run(&on(&id, &["pull", "/big", copy.to_str().unwrap()]))
        .ok();
    assert_eq!(tree_of(&copy), expected);
}
