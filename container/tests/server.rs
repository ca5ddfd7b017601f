//! Start-up, authentication, request checking and per-container isolation.

mod common;

use std::process::{Command, Stdio};

use common::*;
use serde_json::json;

#[test]
fn refuses_to_start_without_a_secret() {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_stead-computer"))
        .args(["--listen", "127.0.0.1:0"])
        .arg("--root")
        .arg(dir.path().join("root"))
        .env_remove("STEAD_COMPUTER_SECRET")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("STEAD_COMPUTER_SECRET"));
}

#[test]
fn health_is_open_and_everything_else_needs_the_secret() {
    let computer = Computer::start();
    let client = computer.client();
    assert_eq!(client.get_as("/health", None).status, 200);

    for auth in [None, Some("wrong"), Some("test-secret-7f3a9")] {
        let answer = client.get_as("/v1/status", auth);
        assert_eq!(answer.status, 401, "{auth:?}");
        assert_eq!(answer.code(), "UNAUTHORIZED");
        let answer = client.post_raw("/v1/sync/ack", "application/json", br#"{"exec":"x"}"#, auth);
        assert_eq!(answer.status, 401);
    }
    let answer = client.post_raw("/v1/exec", "application/json", b"{}", Some("nope"));
    assert_eq!(answer.code(), "UNAUTHORIZED");

    let status = client.get("/v1/status");
    assert_eq!(status.status, 200);
    let status = status.json();
    assert_eq!(status["protocol"], stead_sync::PROTOCOL);
    assert_eq!(status["running"], serde_json::Value::Null);
    assert_eq!(status["instance"].as_str().unwrap().len(), 32);
}

#[test]
fn malformed_requests_are_invalid() {
    let computer = Computer::start();
    let client = computer.client();
    let instance = client.instance();
    let bad = [
        ("/v1/sync/apply", "{not json".to_string()),
        (
            "/v1/sync/apply",
            json!({"instance": instance, "full": false, "changes": []}).to_string(),
        ),
        (
            "/v1/sync/apply",
            json!({"instance": instance, "full": false, "changes": [], "ignore": "", "extra": 1})
                .to_string(),
        ),
        (
            "/v1/sync/apply",
            json!({"instance": 5, "full": false, "changes": [], "ignore": ""}).to_string(),
        ),
        (
            "/v1/exec",
            json!({"id": "a", "command": "true", "cwd": "/"}).to_string(),
        ),
        (
            "/v1/exec",
            json!({"id": "a", "command": "true", "cwd": "/", "timeout_ms": 1000, "stdin": "@@@"})
                .to_string(),
        ),
        (
            "/v1/chunks",
            json!({"exec": "a", "chunks": ["zz"]}).to_string(),
        ),
        (
            "/v1/sync/ack",
            json!({"exec": "a", "more": true}).to_string(),
        ),
    ];
    for (path, body) in bad {
        let answer = client.post_raw(path, "application/json", body.as_bytes(), Some(SECRET));
        assert_eq!(answer.status, 400, "{path} {body}");
        assert_eq!(answer.code(), "INVALID_REQUEST", "{path} {body}");
    }
    // The refused exec did not consume its id.
    let (out, _, exit) = client.exec("a", "echo ran");
    assert_eq!(out, "ran\n");
    assert_eq!(exit.code, Some(0));

    let answer = client.get("/v1/nothing");
    assert_eq!(answer.status, 404);
    assert_eq!(client.post("/nowhere", &json!({})).status, 404);
}

#[test]
fn start_up_wipes_the_root_and_state() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let state = dir.path().join("state");
    std::fs::create_dir_all(root.join("old/deep")).unwrap();
    std::fs::write(root.join("old/deep/file"), "x").unwrap();
    std::fs::create_dir_all(&state).unwrap();
    std::fs::write(state.join("leftover"), "x").unwrap();
    let computer = Computer::start_in(dir, false);
    assert!(root.is_dir());
    assert!(!root.join("old").exists());
    assert!(!state.join("leftover").exists());
    assert!(std::fs::read_dir(&root).unwrap().next().is_none());
    drop(computer);
}

#[test]
fn per_container_isolation() {
    let computer = Computer::start_with(true);
    let a = computer.container("agent-a");
    let b = computer.container("agent.b_2");
    let (ia, ib) = (a.instance(), b.instance());
    assert_ne!(ia, ib);
    assert_eq!(
        a.instance(),
        ia,
        "an instance is stable while the program runs"
    );

    assert_eq!(
        a.sync(false, &[file("/only-a.txt", 0o644, b"a")], &[b"a"]),
        1
    );
    assert_eq!(std::fs::read(a.disk("/only-a.txt")).unwrap(), b"a");
    assert!(!b.disk("/only-a.txt").exists());

    // Each sees its own workspace as `/`, beside the system's names only.
    let (out, _, exit) = b.exec("x", "pwd; ls -A");
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some("/"));
    assert!(lines.all(|name| SYSTEM_NAMES.contains(&name)), "{out}");
    assert!(exit.changes.is_empty());
    // Exec ids are per container too.
    let (out, _, _) = a.exec("x", "ls /*.txt");
    assert_eq!(out, "/only-a.txt\n");

    // A push planned for one container's instance is stale for another.
    let answer = b.post(
        "/v1/sync/apply",
        &json!({"instance": ia, "full": false, "changes": [], "ignore": ""}),
    );
    assert_eq!(answer.status, 409);
    assert_eq!(answer.code(), "STALE_INSTANCE");

    for name in ["..", ".", "a/b", "sp ace", &"x".repeat(65)] {
        let answer = computer.container(name).get("/v1/status");
        assert_eq!(answer.status, 400, "{name}");
        assert_eq!(answer.code(), "BAD_PATH", "{name}");
    }
    let mut no_header = computer.client();
    no_header.container = None;
    assert_eq!(no_header.get("/v1/status").code(), "INVALID_REQUEST");
}

#[test]
fn the_machines_root_is_a_workspace_only_in_the_image() {
    use std::os::unix::fs::MetadataExt;
    let before = std::fs::metadata("/").unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_stead-computer"));
    command
        .args(["--listen", "127.0.0.1:0", "--root", "/"])
        .env("STEAD_COMPUTER_SECRET", SECRET)
        .stdin(Stdio::null());
    if running_as_root() {
        command.args(["--run-as", "nobody"]);
    }
    let output = command.output().unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    // This host is not marked as the program's (the image is).
    let why = if running_as_root() {
        "/etc/stead-computer/machine"
    } else {
        "--run-as"
    };
    assert!(stderr.contains(why), "{stderr}");
    let after = std::fs::metadata("/").unwrap();
    assert_eq!(
        (before.mode(), before.uid(), before.gid()),
        (after.mode(), after.uid(), after.gid())
    );
}
