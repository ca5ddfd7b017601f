//! Live scans on the real binary: what a running process writes is
//! reported page by page while it runs, files that move after the scan are
//! left out and reported again, and a scan is refused while a command runs
//! or when the request is wrong.

mod common;

use std::time::Duration;

use common::*;
use serde_json::{json, Value};
use stead_sync::live::LiveReport;
use stead_sync::{frame, hash_content, Change, Entry};

fn scan(client: &Client, id: &str, limit: usize) -> LiveReport {
    let answer = client.post("/v1/live/scan", &json!({ "id": id, "limit": limit }));
    answer.expect(200);
    serde_json::from_slice(&answer.body).unwrap()
}

fn ack(client: &Client, report: &str, left_out: &[&str]) -> Value {
    let answer = client.post(
        "/v1/live/ack",
        &json!({ "report": report, "left_out": left_out }),
    );
    assert_eq!(answer.status, 200);
    answer.json()
}

fn file_chunks(change: &Change) -> Vec<stead_sync::ChunkHash> {
    match &change.entry {
        Some(Entry::File { chunks, .. }) => chunks.clone(),
        _ => Vec::new(),
    }
}

/// Starts a process that writes `count` files under `/out`, and waits until
/// it has written them all.
fn write_files(computer: &Computer, client: &Client, count: usize) {
    let command = format!(
        "mkdir -p out; i=1; while [ $i -le {count} ]; do echo $i > out/f$i; i=$((i+1)); done; \
         echo done > out.flag; sleep 60"
    );
    let answer = client.post(
        "/v1/processes",
        &json!({ "id": "writer", "command": command, "cwd": "/" }),
    );
    assert_eq!(answer.status, 201);
    wait_until(
        "the process wrote its files",
        Duration::from_secs(20),
        || computer.root().join("out.flag").exists(),
    );
}

#[test]
fn a_running_process_is_reported_page_by_page_until_acknowledged() {
    let computer = Computer::start();
    let client = computer.client();
    client.sync(true, &[], &[]);
    let idle = scan(&client, "0001-idle", 100);
    assert!(idle.changes.is_empty() && !idle.more, "{idle:?}");
    let answer = client.post("/v1/live/ack", &json!({ "report": "0001-idle" }));
    assert_eq!(
        (answer.status, answer.code().as_str()),
        (404, "UNKNOWN_EXEC"),
        "an empty scan keeps no report"
    );
    assert_eq!(idle.instance, client.instance());

    write_files(&computer, &client, 25);
    let mut seen: Vec<String> = Vec::new();
    for page in 0.. {
        let id = format!("0002-page{page:02}");
        let report = scan(&client, &id, 10);
        assert!(report.changes.len() <= 10, "{}", report.changes.len());
        let wanted: Vec<_> = report.changes.iter().flat_map(file_chunks).collect();
        let answer = client.post("/v1/live/chunks", &json!({ "exec": id, "chunks": wanted }));
        assert_eq!(answer.status, 200);
        assert_eq!(frame::decode_all(&answer.body).unwrap().len(), wanted.len());
        seen.extend(report.changes.iter().map(|c| c.path.clone()));
        assert_eq!(ack(&client, &id, &[]), json!({ "acked": true }));
        if !report.more {
            break;
        }
        assert!(page < 5, "the pages never end");
    }
    let mut expected: Vec<String> = (1..=25).map(|i| format!("/out/f{i}")).collect();
    expected.extend(["/out".to_string(), "/out.flag".to_string()]);
    expected.sort();
    assert_eq!(seen, expected, "every path once, in path order");
    let after = scan(&client, "0003-after", 100);
    assert!(after.changes.is_empty(), "{:?}", after.changes);
}

#[test]
fn a_file_that_moves_after_the_scan_is_left_out_and_reported_again() {
    let computer = Computer::start();
    let client = computer.client();
    client.sync(true, &[], &[]);
    std::fs::write(client.disk("/log.txt"), "one\n").unwrap();
    std::fs::write(client.disk("/steady.txt"), "steady\n").unwrap();
    let report = scan(&client, "0001-first", 100);
    assert_eq!(report.changes.len(), 2, "{:?}", report.changes);
    std::fs::write(client.disk("/log.txt"), "one\ntwo\n").unwrap();

    let mut wanted = hash_content(b"one\n");
    wanted.extend(hash_content(b"steady\n"));
    let answer = client.post(
        "/v1/live/chunks",
        &json!({ "exec": "0001-first", "chunks": wanted }),
    );
    assert_eq!(answer.status, 200, "a moved file is no error here");
    let got = frame::decode_all(&answer.body).unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].1, b"steady\n");
    // The exec route still refuses it.
    let refused = client.fetch_chunks("0001-first", &hash_content(b"one\n"));
    assert_eq!(refused.code(), "CHUNK_GONE");

    ack(&client, "0001-first", &["/log.txt"]);
    let again = scan(&client, "0002-again", 100);
    assert_eq!(
        untimed(&again.changes),
        vec![file("/log.txt", 0o644, b"one\ntwo\n")],
        "left out: reported again in its newer state; the rest is acknowledged"
    );
}

#[test]
fn a_scan_waits_for_no_command_and_bad_scans_are_refused() {
    let computer = Computer::start();
    let client = computer.client();
    client.sync(true, &[], &[]);
    let (status, mut events) = client.exec_stream(&json!({
        "id": "0001-busy", "command": "echo started; sleep 3", "cwd": "/", "timeout_ms": 30_000
    }));
    assert_eq!(status, 200);
    next_event(&mut events).expect("the command started");
    let busy = client.post("/v1/live/scan", &json!({ "id": "0002-live", "limit": 10 }));
    assert_eq!((busy.status, busy.code().as_str()), (409, "BUSY"));
    while next_event(&mut events).is_some() {}

    for (body, code) in [
        (json!({ "id": "0003-x", "limit": 0 }), "INVALID_REQUEST"),
        (
            json!({ "id": "0003-x", "limit": stead_sync::live::MAX_LIMIT + 1 }),
            "INVALID_REQUEST",
        ),
        (json!({ "id": "", "limit": 10 }), "INVALID_REQUEST"),
        (json!({ "id": "0003-x" }), "INVALID_REQUEST"),
        (
            json!({ "id": "0003-x", "limit": 10, "extra": 1 }),
            "INVALID_REQUEST",
        ),
        (json!({ "id": "0001-busy", "limit": 10 }), "ALREADY_STARTED"),
    ] {
        let answer = client.post("/v1/live/scan", &body);
        assert_eq!(answer.code(), code, "{body}");
    }
    let unauthorized = client.post_raw("/v1/live/scan", "application/json", b"{}", None);
    assert_eq!(unauthorized.status, 401);
}
