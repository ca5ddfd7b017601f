//! End-to-end: checkpoints, diff, restore, undo and fork against the real
//! Worker: an agent breaks its workspace and undoes it, a computer command
//! is rolled back, a diff names exactly what `diff -r` names, and a large
//! fork reads back byte-exact in the new agent while the source keeps
//! serving writes.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use common::{assert_same_stream, expect_error, expect_ok, expect_status, Agent, Noise};
use serde_json::{json, Value};

fn post(agent: &Agent, route: &str, body: Value) -> Value {
    expect_ok(&agent.send("POST", &format!("/{route}"), body.to_string().as_bytes()))
}

#[test]
fn a_workspace_broken_by_a_command_is_undone() {
    let agent = Agent::new("tt-undo");
    agent.write("/src/main.rs", "fn main() {}\n");
    agent.write("/src/lib.rs", "pub fn f() {}\n");
    let broke = agent.ok(
        "exec",
        json!({ "command": "rm -rf /src && echo oops > /README", "backend": "shell" }),
    );
    let checkpoint = broke["checkpoint"]
        .as_i64()
        .expect("the exec names its checkpoint");
    expect_error(
        &agent.call("stat", json!({ "path": "/src" })),
        404,
        "ENOENT",
    );
    let undone = post(&agent, "undo", json!({}));
    assert_eq!(undone["undone"]["checkpoint"]["id"], checkpoint, "{undone}");
    assert_eq!(agent.read("/src/main.rs"), "fn main() {}\n");
    expect_error(
        &agent.call("stat", json!({ "path": "/README" })),
        404,
        "ENOENT",
    );
}

#[test]
fn a_computer_commands_changes_are_rolled_back() {
    let agent = Agent::new("tt-computer");
    agent.write("/data/in.txt", "original\n");
    let ran = agent.ok(
        "exec",
        json!({ "command": "echo changed > data/in.txt; mkdir -p out && echo made > out/new.txt",
                "backend": "computer" }),
    );
    assert_eq!(ran["status"], "exited", "{ran}");
    let checkpoint = ran["checkpoint"]
        .as_i64()
        .expect("a computer command names its checkpoint");
    assert_eq!(agent.read("/data/in.txt"), "changed\n");
    let undone = post(&agent, "undo", json!({}));
    assert_eq!(undone["undone"]["checkpoint"]["id"], checkpoint);
    assert_eq!(undone["undone"]["checkpoint"]["operation"], "computer");
    assert_eq!(agent.read("/data/in.txt"), "original\n");
    expect_error(
        &agent.call("stat", json!({ "path": "/out" })),
        404,
        "ENOENT",
    );
}

/// Writes every file of the workspace under `dir`.
fn export(agent: &Agent, dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let page = agent.ok("glob", json!({ "pattern": "**", "limit": 10000 }));
    for entry in page["matches"].as_array().unwrap() {
        let path = entry["path"].as_str().unwrap();
        let local = dir.join(path.trim_start_matches('/'));
        match entry["type"].as_str().unwrap() {
            "dir" => std::fs::create_dir_all(&local).unwrap(),
            "file" => {
                std::fs::create_dir_all(local.parent().unwrap()).unwrap();
                std::fs::write(&local, agent.download(path)).unwrap();
            }
            other => panic!("unexpected {other} at {path}"),
        }
    }
}

#[test]
fn a_diff_names_what_diff_r_names() {
    let agent = Agent::new("tt-diff");
    for (path, text) in [
        ("/keep.txt", "same\n"),
        ("/edit.txt", "before\n"),
        ("/gone.txt", "bye\n"),
        ("/dir/a.txt", "a\n"),
        ("/dir/sub/b.txt", "b\n"),
    ] {
        agent.write(path, text);
    }
    let dir = tempfile::tempdir().unwrap();
    export(&agent, &dir.path().join("one"));
    let first = agent.send("POST", "/checkpoints", br#"{"name":"one"}"#);
    expect_status(&first, 201);
    let first = first.json();
    agent.write("/edit.txt", "after\n");
    agent.ok("rm", json!({ "path": "/gone.txt" }));
    agent.ok("rm", json!({ "path": "/dir/sub", "recursive": true }));
    agent.write("/dir/new.txt", "new\n");
    agent.write("/added.txt", "+\n");
    export(&agent, &dir.path().join("two"));
    expect_status(
        &agent.send("POST", "/checkpoints", br#"{"name":"two"}"#),
        201,
    );
    let diff = post(
        &agent,
        "diff",
        json!({ "from": "one", "to": "two", "text": true }),
    );
    let ours: BTreeSet<String> = diff["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap().to_string())
        .collect();
    // Ours names every path; `diff -r` names an added or deleted directory
    // and none of what is under it.
    let ours: BTreeSet<String> = ours
        .iter()
        .filter(|path| !ours.iter().any(|dir| path.starts_with(&format!("{dir}/"))))
        .cloned()
        .collect();
    let output = Command::new("diff")
        .args(["-rq", "one", "two"])
        .current_dir(dir.path())
        .output()
        .expect("run diff");
    let theirs: BTreeSet<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| {
            if let Some(rest) = line.strip_prefix("Only in ") {
                let (dir, name) = rest.split_once(": ").unwrap();
                let dir = dir.trim_start_matches("one").trim_start_matches("two");
                format!("{dir}/{name}").replace("//", "/")
            } else {
                let file = line.split(' ').nth(1).unwrap();
                file.trim_start_matches("one").to_string()
            }
        })
        .collect();
    assert!(!theirs.is_empty());
    assert_eq!(ours, theirs, "{diff}");
    assert_eq!(first["checkpoint"]["name"], "one");
    let edit = diff["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == "/edit.txt")
        .unwrap();
    assert!(edit["text"]["patch"]
        .as_str()
        .unwrap()
        .contains("-before\n+after\n"));
}

#[test]
fn a_large_fork_reads_back_byte_exact_while_the_source_serves_writes() {
    let source = Agent::new("tt-fork-source");
    const SIZE: u64 = 200 << 20;
    expect_status(
        &source.upload("/data/big.bin", "", Noise::new(7, SIZE)),
        201,
    );
    const NOTES: &str = "at fork time\n";
    source.write("/notes.md", NOTES);
    let client = source.client.clone();
    let fork = std::thread::spawn(move || {
        client.send(
            "POST",
            "/agents/tt-fork-source/fork",
            br#"{"to":"tt-fork-target"}"#,
        )
    });
    // Once the copy is under way, writes keep landing on the source.
    let target = Agent::existing("tt-fork-target");
    while target.send("GET", "", b"").error_code() != "AGENT_FORKING" {
        assert!(!fork.is_finished(), "the fork ended before it was seen");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    for i in 0..20 {
        source.write(&format!("/later/{i}.txt"), "during the fork\n");
    }
    let forked = fork.join().unwrap();
    // A new agent: 201, and where it is.
    expect_status(&forked, 201);
    assert_eq!(forked.header("location"), Some("/agents/tt-fork-target"));
    let forked = forked.json();
    // The fork copies the checkpoint taken when it began: the big file and
    // the notes, none of the writes landing meanwhile.
    assert_eq!(
        forked["fork"]["bytes"].as_u64().unwrap(),
        SIZE + NOTES.len() as u64,
        "{forked}"
    );
    let (status, body) = target.client.download(&target.id, "/data/big.bin");
    assert_eq!(status, 200);
    assert_eq!(assert_same_stream(body, Noise::new(7, SIZE)), SIZE);
    assert_eq!(target.read("/notes.md"), "at fork time\n");
    // The fork is the checkpoint: later writes are the source's alone.
    assert_eq!(
        source
            .tree()
            .iter()
            .filter(|p| p.starts_with("/later/"))
            .count(),
        20
    );
    expect_error(
        &target.call("stat", json!({ "path": "/later" })),
        404,
        "ENOENT",
    );
    // The checkpoint forked from came along, and only it.
    let checkpoints = expect_ok(&target.send("GET", "/checkpoints", b""));
    let checkpoints = checkpoints["checkpoints"].as_array().unwrap();
    assert_eq!(checkpoints.len(), 1, "{checkpoints:?}");
    assert_eq!(checkpoints[0]["actor"], "fork", "{checkpoints:?}");
    // Forking onto an agent that exists is refused, and changes nothing;
    // an empty one too.
    let again = source.send("POST", "/fork", br#"{"to":"tt-fork-target"}"#);
    let error = expect_error(&again, 409, "AGENT_EXISTS");
    assert!(
        error["message"].as_str().unwrap().contains("never used"),
        "{error}"
    );
    let empty = Agent::new("tt-fork-empty");
    let onto_empty = source.send("POST", "/fork", br#"{"to":"tt-fork-empty"}"#);
    expect_error(&onto_empty, 409, "AGENT_EXISTS");
    assert_eq!(
        empty.tree(),
        Vec::<String>::new(),
        "the empty agent is unchanged"
    );
    // One that existed and was deleted too: its Durable Object keeps a
    // tombstone through the wipe, and a fork never reuses its id.
    expect_ok(&empty.send("DELETE", "", b""));
    let onto_deleted = source.send("POST", "/fork", br#"{"to":"tt-fork-empty"}"#);
    let error = expect_error(&onto_deleted, 409, "AGENT_EXISTED");
    assert!(
        error["message"].as_str().unwrap().contains("was deleted"),
        "{error}"
    );
    expect_error(&empty.send("GET", "", b""), 404, "AGENT_NOT_FOUND");
}
