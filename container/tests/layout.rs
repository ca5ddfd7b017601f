//! The workspace is `/` for commands, beside the system's names: paths the
//! workspace has under those names stay out of the computer and every
//! report says so; a working directory must be the workspace's; clearing
//! `/` clears the workspace and leaves the system standing.

mod common;

use common::*;
use serde_json::json;

#[test]
fn workspace_paths_under_system_names_are_left_out_and_reported() {
    let computer = Computer::start();
    let client = computer.client();
    client.sync(
        true,
        &[
            dir("/tmp", 0o755),
            file("/tmp/from-the-shell", 0o644, b"x"),
            dir("/etc", 0o755),
            file("/etc/app.conf", 0o644, b"y"),
            file("/notes.txt", 0o644, b"z\n"),
        ],
        &[b"x", b"y", b"z\n"],
    );
    assert!(!client.disk("/etc").exists() && !client.disk("/tmp").exists());
    let (out, _, exit) = client.exec(
        "look",
        "cat /notes.txt; cat /etc/app.conf /tmp/from-the-shell 2>/dev/null || echo unseen",
    );
    assert_eq!(out, "z\nunseen\n");
    assert!(exit.changes.is_empty(), "{:?}", exit.changes);
    let skipped: Vec<&str> = exit.skipped.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(skipped, ["/etc", "/tmp"]);
    assert!(
        exit.skipped[1].reason.contains("system's /tmp"),
        "{:?}",
        exit.skipped
    );

    // The mount points the command needed survive a full push that does
    // not list them, and the system names stay out of every report.
    client.ack("look");
    client.sync(
        true,
        &[
            dir("/tmp", 0o755),
            file("/tmp/from-the-shell", 0o644, b"x"),
            file("/notes.txt", 0o644, b"z\n"),
        ],
        &[],
    );
    assert!(client.disk("/usr").is_dir() && client.disk("/proc").is_dir());
    let (out, _, exit) = client.exec("again", "python3 -c 'print(1)'");
    assert_eq!(out, "1\n");
    let skipped: Vec<&str> = exit.skipped.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(skipped, ["/tmp"], "the workspace's /etc is gone");
    client.ack("again");

    // Once the workspace has no /tmp, nothing is said about it.
    client.sync(false, &[gone("/tmp")], &[]);
    let (_, _, exit) = client.exec("quiet", "true");
    assert!(exit.skipped.is_empty(), "{:?}", exit.skipped);
}

#[test]
fn the_working_directory_is_a_workspace_directory() {
    let computer = Computer::start();
    let client = computer.client();
    client.sync(
        true,
        &[
            dir("/src", 0o755),
            dir("/src/app", 0o755),
            symlink("/app", "/src/app"),
            symlink("/bin-link", "/usr/bin"),
        ],
        &[],
    );
    // Through a symlink with an absolute target: `pwd` says the path as
    // asked for, as the light shell does; `pwd -P` the real one.
    let answer = client.exec_spec(&json!({
        "id": "via-link", "command": "pwd; pwd -P; echo \"$PWD\"", "cwd": "/app", "timeout_ms": 10_000
    }));
    let (out, _, _) = collect(parse_events(&answer.body));
    assert_eq!(out, "/app\n/src/app\n/app\n");
    for (id, cwd) in [
        ("sys", "/usr"),
        ("sys-deep", "/etc/ssl"),
        ("link", "/bin-link"),
    ] {
        let answer = client.exec_spec(&json!({
            "id": id, "command": "true", "cwd": cwd, "timeout_ms": 10_000
        }));
        assert_eq!(answer.status, 400, "{cwd}");
        assert_eq!(answer.code(), "BAD_PATH", "{cwd}");
        assert!(
            answer.json()["error"]["message"]
                .as_str()
                .unwrap()
                .contains("computer's own directory"),
            "{cwd}"
        );
    }
}

#[test]
fn clearing_the_root_clears_the_workspace_and_leaves_the_system() {
    let computer = Computer::start();
    let client = computer.client();
    client.sync(
        true,
        &[
            dir("/d", 0o755),
            file("/d/a", 0o644, b"a"),
            file("/b", 0o644, b"b"),
        ],
        &[b"a", b"b"],
    );
    let (out, _, exit) = client.exec("clear", "rm -rf /* 2>/dev/null; echo rm=$?");
    // rm cannot remove the system's directories, so it fails...
    assert_eq!(out, "rm=1\n");
    let changed: Vec<&str> = exit.changes.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(changed, ["/b", "/d", "/d/a"]);
    assert!(exit.changes.iter().all(|c| c.entry.is_none()));
    client.ack("clear");
    // ...and the next command has its tools.
    let (out, _, exit) = client.exec("after", "python3 -c 'print(2**10)'; ls -A / | tr '\\n' ' '");
    assert_eq!(exit.code, Some(0));
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some("1024"));
    let names: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert!(
        names.iter().all(|name| SYSTEM_NAMES.contains(name)),
        "{names:?}"
    );
    assert!(
        names.contains(&"usr") && names.contains(&"tmp"),
        "{names:?}"
    );
}
