//! End-to-end: the chunk tier under `wrangler dev` with its local R2
//! binding. Chunks of a large file move to the bucket in the background
//! (the waits shortened by variables), and the file still streams in and
//! out byte for byte (a range of it too) and reads through the file tools; a runtime killed
//! while chunks are moving loses nothing; `GET /verify` reports the walk.
//! A light-shell exec and a computer exec read a tiered file whole; a fork
//! of a tiered workspace shares the bucket's objects (its stored bytes do
//! not grow); a deleted agent's objects are collected.

mod common;

use std::time::{Duration, Instant};

use common::{assert_same_stream, expect_made, expect_ok, Agent, Noise};
use serde_json::{json, Value};
use stead_harness::{temp_state, ComputerMode, Runtime};

/// 16 full chunks and a short tail (which stays inline).
const LEN: u64 = 16 * 512 * 1024 + 4321;
const FULL_CHUNKS: u64 = 16;

fn start(state: &std::path::Path, grace_ms: u64) -> Runtime {
    let grace = format!("TIER_GRACE_MS:{grace_ms}");
    Runtime::start_with(state, ComputerMode::from_env(), &["TIER_HOT_MS:0", &grace])
}

fn verify(agent: &Agent) -> Value {
    expect_ok(&agent.send("GET", "/verify", b""))
}

/// Polls `verify` until `done` holds of it (or fails after 60 s).
fn wait_for(agent: &Agent, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let start = Instant::now();
    loop {
        let report = verify(agent);
        if done(&report) {
            return report;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "waited for {what}: {report}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The chunks of a file of `len` bytes that move: the full ones, and a
/// tail of at least half a chunk (the default `TIER_MIN_BYTES`).
fn moved_chunks(len: u64) -> u64 {
    const CHUNK: u64 = 512 * 1024;
    len / CHUNK + u64::from(len % CHUNK >= CHUNK / 2)
}

/// Streams `path` out and checks it is `LEN` bytes of noise `seed`.
fn streams_back(agent: &Agent, path: &str, seed: u64) {
    let (status, body) = agent.client.download(&agent.id, path);
    assert_eq!(status, 200, "download of {path}");
    assert_eq!(assert_same_stream(body, Noise::new(seed, LEN)), LEN);
}

fn tiered(report: &Value) -> u64 {
    report["usage"]["tiered"][0].as_u64().unwrap()
}

fn moving(report: &Value) -> u64 {
    report["usage"]["moving"][0].as_u64().unwrap()
}

#[test]
fn a_large_file_streams_in_and_out_byte_for_byte_after_its_chunks_moved() {
    let state = temp_state();
    let runtime = start(state.path(), 300);
    let agent = Agent::create_on(runtime.client(), "tier-stream");
    expect_made(&agent.upload("/data/big.bin", "", Noise::new(7, LEN)));
    let report = wait_for(&agent, "every full chunk tiered", |r| {
        tiered(r) == FULL_CHUNKS && moving(r) == 0
    });
    assert_eq!(report["store"], true);
    assert_eq!(report["checked"], FULL_CHUNKS, "{report}");
    assert_eq!(report["missing"], json!([]));
    assert_eq!(report["unmarked"], json!([]));
    assert_eq!(report["usage"]["inline"][0], 1, "the tail stays inline");

    // Streamed out from the bucket, verified, and left there.
    streams_back(&agent, "/data/big.bin", 7);
    assert_eq!(tiered(&verify(&agent)), FULL_CHUNKS);
    // A range across a chunk boundary reads only its two chunks from the
    // bucket, and leaves them there.
    let (start, end) = (5 * 512 * 1024 - 100, 5 * 512 * 1024 + 99);
    let part = agent.client.send_with(
        "GET",
        &agent.url("/files/data/big.bin"),
        &[("range", &format!("bytes={start}-{end}"))],
        b"",
    );
    assert_eq!(part.status, 206);
    let mut whole = Vec::new();
    std::io::Read::read_to_end(&mut Noise::new(7, LEN), &mut whole).unwrap();
    assert!(part.body == whole[start..=end], "the range's bytes");
    assert_eq!(tiered(&verify(&agent)), FULL_CHUNKS);

    // A file tool that needs the bytes brings them back and answers right.
    let text: String = (0..120_000).map(|i| format!("line {i}\n")).collect();
    expect_made(&agent.upload(
        "/notes.txt",
        "",
        std::io::Cursor::new(text.clone().into_bytes()),
    ));
    let moved = moved_chunks(text.len() as u64);
    wait_for(&agent, "the text file tiered", |r| {
        tiered(r) == FULL_CHUNKS + moved && moving(r) == 0
    });
    let read = agent.ok(
        "read",
        json!({ "path": "/notes.txt", "offset": 100_000, "limit": 2 }),
    );
    assert!(
        read.to_string().contains("line 99999") || read.to_string().contains("line 100000"),
        "{read}"
    );
    let found = agent.ok(
        "grep",
        json!({ "pattern": "line 119999", "path": "/notes.txt" }),
    );
    assert!(found.to_string().contains("119999"), "{found}");
    // The rewritten-in-place copy is hot again; everything is still whole.
    assert_eq!(agent.download("/notes.txt"), text.into_bytes());
    streams_back(&agent, "/data/big.bin", 7);
}

#[test]
fn a_runtime_killed_while_chunks_move_loses_nothing() {
    let state = temp_state();
    // A long grace: the kill comes while chunks are put but not confirmed.
    let first = start(state.path(), 4_000);
    let agent = Agent::create_on(first.client(), "tier-crash");
    expect_made(&agent.upload("/big.bin", "", Noise::new(9, LEN)));
    wait_for(&agent, "chunks moving", |r| moving(r) > 0);
    first.crash();

    let second = start(state.path(), 300);
    let agent = Agent {
        client: second.client(),
        ..agent
    };
    let report = wait_for(&agent, "the move resumed and finished", |r| {
        tiered(r) == FULL_CHUNKS && moving(r) == 0
    });
    assert_eq!(report["missing"], json!([]), "{report}");
    streams_back(&agent, "/big.bin", 9);
}

#[test]
fn verify_takes_only_its_parameters() {
    let state = temp_state();
    let runtime = start(state.path(), 300);
    let agent = Agent::create_on(runtime.client(), "tier-verify");
    let reply = agent.send("GET", "/verify?limit=x", b"");
    common::expect_error(&reply, 400, "INVALID_REQUEST");
    let reply = agent.send("GET", "/verify?deep=1", b"");
    common::expect_error(&reply, 400, "INVALID_REQUEST");
    let report = verify(&agent);
    assert_eq!(report["checked"], 0);
    assert_eq!(report["next"], Value::Null);
    let reply = agent.send("POST", "/verify", b"");
    common::expect_error(&reply, 405, "METHOD_NOT_ALLOWED");
}

/// Bytes the local R2 bucket stores: the blobs `wrangler dev` keeps under
/// its persistence folder (markers are empty objects).
fn bucket_bytes(state: &std::path::Path) -> u64 {
    fn walk(dir: &std::path::Path, in_blobs: bool, total: &mut u64) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                let blobs = in_blobs || path.file_name().is_some_and(|n| n == "blobs");
                walk(&path, blobs, total);
            } else if in_blobs {
                *total += entry.metadata().map_or(0, |m| m.len());
            }
        }
    }
    let mut total = 0;
    walk(&state.join("v3").join("r2"), false, &mut total);
    total
}

/// What the real `sha256sum` says of `bytes`.
fn real_sha256(bytes: &[u8]) -> String {
    use std::io::Write;
    let mut child = std::process::Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("sha256sum runs");
    child.stdin.take().unwrap().write_all(bytes).unwrap();
    let out = String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap();
    out.split_whitespace().next().unwrap().to_string()
}

fn all_tiered(agent: &Agent, what: &str) -> Value {
    wait_for(agent, what, |r| tiered(r) == FULL_CHUNKS && moving(r) == 0)
}

#[test]
fn the_light_shell_and_the_computer_read_a_tiered_file_whole() {
    let state = temp_state();
    let runtime = start(state.path(), 300);
    let agent = Agent::create_on(runtime.client(), "tier-exec");
    expect_made(&agent.upload("/data/big.bin", "", Noise::new(5, LEN)));
    all_tiered(&agent, "every full chunk tiered");
    let sum = real_sha256(&common::Noise::bytes(5, LEN as usize));

    // The computer's sync reads the chunks from the bucket and leaves them.
    let out = agent.ok(
        "exec",
        json!({ "command": "sha256sum big.bin; wc -c < big.bin", "cwd": "/data",
                "backend": "computer" }),
    );
    assert_eq!(out["stdout"], format!("{sum}  big.bin\n{LEN}\n"), "{out}");
    assert_eq!(tiered(&verify(&agent)), FULL_CHUNKS, "left in the bucket");

    // The light shell brings them back and reads them whole, no EIO.
    let out = agent.ok(
        "exec",
        json!({ "command": "cat /data/big.bin | sha256sum; wc -c < /data/big.bin",
                "backend": "shell" }),
    );
    assert_eq!(out["stdout"], format!("{sum}  -\n{LEN}\n"), "{out}");
    assert_eq!(out["stderr"], "", "{out}");
}

#[test]
fn a_fork_of_a_tiered_workspace_shares_the_bucket_and_reads_its_files() {
    let state = temp_state();
    let runtime = start(state.path(), 300);
    let source = Agent::create_on(runtime.client(), "tier-fork-source");
    expect_made(&source.upload("/big.bin", "", Noise::new(13, LEN)));
    all_tiered(&source, "the source tiered");
    let stored = bucket_bytes(state.path());
    assert!(
        stored >= FULL_CHUNKS * 512 * 1024,
        "the bucket holds {stored}"
    );

    let forked = expect_made(&source.send("POST", "/fork", br#"{"to":"tier-fork-target"}"#));
    assert_eq!(
        forked["fork"]["shared_bytes"],
        FULL_CHUNKS * 512 * 1024,
        "{forked}"
    );
    assert!(
        forked["fork"]["bytes"].as_u64().unwrap() < 512 * 1024,
        "only the inline tail is copied: {forked}"
    );
    assert_eq!(bucket_bytes(state.path()), stored, "no byte stored twice");
    let target = Agent {
        id: "tier-fork-target".into(),
        client: runtime.client(),
    };
    let report = verify(&target);
    assert_eq!(tiered(&report), FULL_CHUNKS, "{report}");
    assert_eq!(report["missing"], json!([]));
    assert_eq!(report["unmarked"], json!([]));
    streams_back(&target, "/big.bin", 13);

    // The source goes: the target's markers keep every object.
    expect_ok(&source.send("DELETE", "", b""));
    std::thread::sleep(Duration::from_millis(1_500));
    assert_eq!(bucket_bytes(state.path()), stored);
    streams_back(&target, "/big.bin", 13);
}

#[test]
fn a_deleted_agents_objects_are_collected() {
    let state = temp_state();
    let runtime = start(state.path(), 300);
    let agent = Agent::create_on(runtime.client(), "tier-delete");
    expect_made(&agent.upload("/big.bin", "", Noise::new(17, LEN)));
    all_tiered(&agent, "every full chunk tiered");
    assert!(bucket_bytes(state.path()) >= FULL_CHUNKS * 512 * 1024);
    expect_ok(&agent.send("DELETE", "", b""));
    let start = Instant::now();
    while bucket_bytes(state.path()) > 0 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the bucket still holds {} bytes",
            bucket_bytes(state.path())
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}
