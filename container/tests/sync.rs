//! Pushing the workspace to the container: chunks, modes, idempotence,
//! full pushes, bad paths and local work that must not be lost.

mod common;

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;

use common::*;
use serde_json::json;
use stead_sync::{hash_content, ApplyReply, Change, ChunkHash, CHUNK_SIZE};

fn big(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 251) as u8).collect()
}

#[test]
fn push_needs_chunks_then_applies_files_dirs_and_symlinks_with_modes() {
    let computer = Computer::start();
    let client = computer.client();
    let large = big(CHUNK_SIZE + 1000);
    let changes = vec![
        dir("/src", 0o750),
        file("/src/a.txt", 0o640, b"hello"),
        file("/src/copy.txt", 0o600, b"hello"),
        file("/run.sh", 0o755, b"#!/bin/sh\necho hi\n"),
        file("/empty", 0o644, b""),
        file("/big.bin", 0o644, &large),
        symlink("/link", "src/a.txt"),
    ];

    let ApplyReply::Need { chunks } = client.push_reply(false, &changes) else {
        panic!("a fresh container must need chunks");
    };
    let mut expected: HashSet<ChunkHash> = HashSet::new();
    for content in [&b"hello"[..], b"#!/bin/sh\necho hi\n", &large] {
        expected.extend(hash_content(content));
    }
    assert_eq!(chunks.len(), expected.len(), "deduplicated: {chunks:?}");
    assert_eq!(chunks.iter().copied().collect::<HashSet<_>>(), expected);
    assert!(
        std::fs::read_dir(&client.root).unwrap().next().is_none(),
        "nothing written before all chunks are there"
    );

    let stored = client.upload(&[
        b"hello",
        b"#!/bin/sh\necho hi\n",
        &large[..CHUNK_SIZE],
        &large[CHUNK_SIZE..],
    ]);
    assert_eq!(stored.status, 200);
    assert_eq!(stored.json(), json!({"stored": 4}));

    assert_eq!(
        client.push_reply(false, &changes),
        ApplyReply::Applied { written: 5 }
    );
    assert_eq!(std::fs::read(client.disk("/src/a.txt")).unwrap(), b"hello");
    assert_eq!(
        std::fs::read(client.disk("/src/copy.txt")).unwrap(),
        b"hello"
    );
    assert_eq!(std::fs::read(client.disk("/big.bin")).unwrap(), large);
    assert_eq!(std::fs::read(client.disk("/empty")).unwrap(), b"");
    assert_eq!(
        std::fs::read_link(client.disk("/link")).unwrap().to_str(),
        Some("src/a.txt")
    );
    assert_eq!(mode_of(&client.disk("/src")), 0o750);
    assert_eq!(mode_of(&client.disk("/src/a.txt")), 0o640);
    assert_eq!(mode_of(&client.disk("/src/copy.txt")), 0o600);
    assert_eq!(mode_of(&client.disk("/run.sh")), 0o755);

    // The same push again needs nothing and writes nothing.
    let before = std::fs::metadata(client.disk("/big.bin")).unwrap();
    assert_eq!(
        client.push_reply(false, &changes),
        ApplyReply::Applied { written: 0 }
    );
    let after = std::fs::metadata(client.disk("/big.bin")).unwrap();
    assert_eq!(
        (before.ino(), before.mtime_nsec()),
        (after.ino(), after.mtime_nsec())
    );

    // A mode-only change is applied without rewriting.
    assert_eq!(
        client.push_reply(false, &[file("/run.sh", 0o700, b"#!/bin/sh\necho hi\n")]),
        ApplyReply::Applied { written: 0 }
    );
    assert_eq!(mode_of(&client.disk("/run.sh")), 0o700);

    // What the push wrote is the baseline: a command that changes nothing
    // reports nothing.
    let (out, _, exit) = client.exec("look", "./run.sh");
    assert_eq!(out, "hi\n");
    assert!(exit.changes.is_empty(), "{:?}", exit.changes);
}

#[test]
fn chunks_on_disk_are_reused_and_used_chunks_dropped() {
    let computer = Computer::start();
    let client = computer.client();
    let content = big(3000);
    assert_eq!(
        client.sync(false, &[file("/a", 0o644, &content)], &[&content]),
        1
    );
    // The same content under another name: read from /a, nothing asked.
    assert_eq!(
        client.push_reply(false, &[file("/b", 0o644, &content)]),
        ApplyReply::Applied { written: 1 }
    );
    assert_eq!(std::fs::read(client.disk("/b")).unwrap(), content);

    // Once /a changed on disk, its old content is not trusted any more;
    // the staged copy was dropped after use, so it must be sent again.
    std::fs::write(client.disk("/a"), "other").unwrap();
    std::fs::write(client.disk("/b"), "other").unwrap();
    match client.push_reply(false, &[file("/c", 0o644, &content)]) {
        ApplyReply::Need { chunks } => assert_eq!(chunks, hash_content(&content)),
        other => panic!("expected need, got {other:?}"),
    }
    assert!(!client.disk("/c").exists());
}

#[test]
fn stale_instances_are_refused() {
    let computer = Computer::start();
    let client = computer.client();
    let answer = client.post(
        "/v1/sync/apply",
        &json!({"instance": "not-this-one", "full": true, "changes": [file("/x", 0o644, b"")], "ignore": ""}),
    );
    assert_eq!(answer.status, 409);
    assert_eq!(answer.code(), "STALE_INSTANCE");
    assert!(!client.disk("/x").exists());
}

#[test]
fn full_push_removes_unlisted_paths_but_keeps_ignored_ones() {
    let computer = Computer::start();
    let client = computer.client();
    let changes = [
        file("/keep.txt", 0o644, b"k"),
        file("/drop.txt", 0o644, b"d"),
        dir("/old", 0o755),
        file("/old/inner.txt", 0o644, b"i"),
        dir("/src", 0o755),
        file("/src/main.rs", 0o644, b"fn main() {}"),
    ];
    client.sync(false, &changes, &[b"k", b"d", b"i", b"fn main() {}"]);
    std::fs::create_dir_all(client.disk("/node_modules/pkg")).unwrap();
    std::fs::write(client.disk("/node_modules/pkg/index.js"), "x").unwrap();
    std::fs::create_dir_all(client.disk("/src/target/debug")).unwrap();
    std::fs::write(client.disk("/src/target/debug/app"), "bin").unwrap();

    let full = [
        dir("/", 0o755),
        file("/keep.txt", 0o644, b"k"),
        dir("/src", 0o755),
        file("/src/main.rs", 0o644, b"fn main() {}"),
    ];
    assert_eq!(
        client.push_reply(true, &full),
        ApplyReply::Applied { written: 0 }
    );
    assert!(client.disk("/keep.txt").exists());
    assert!(client.disk("/src/main.rs").exists());
    assert!(!client.disk("/drop.txt").exists());
    assert!(!client.disk("/old").exists());
    assert!(
        client.disk("/node_modules/pkg/index.js").exists(),
        "ignored paths stay"
    );
    assert!(
        client.disk("/src/target/debug/app").exists(),
        "ignored paths stay"
    );

    // Removed paths left the baseline too: nothing is reported deleted.
    let (_, _, exit) = client.exec("after", "true");
    assert!(exit.changes.is_empty(), "{:?}", exit.changes);
}

#[test]
fn bad_paths_are_refused_and_nothing_is_written() {
    let computer = Computer::start();
    let client = computer.client();
    let bad = ["/../x", "a/b", "/a\0b", "/a//b", "/a/./b", "/a/", ""];
    for path in bad {
        let answer = client.push(
            false,
            &[file("/ok.txt", 0o644, b""), file(path, 0o644, b"")],
        );
        assert_eq!(answer.status, 400, "{path:?}");
        assert_eq!(answer.code(), "BAD_PATH", "{path:?}");
    }
    for change in [file("/", 0o644, b""), symlink("/", "x"), gone("/")] {
        assert_eq!(client.push(false, &[change]).code(), "BAD_PATH");
    }
    let twice = client.push(false, &[file("/ok.txt", 0o644, b""), gone("/ok.txt")]);
    assert_eq!(twice.code(), "BAD_PATH");
    assert!(
        std::fs::read_dir(&client.root).unwrap().next().is_none(),
        "nothing written"
    );
    assert!(!computer.dir.path().join("x").exists());
}

#[test]
fn corrupt_chunk_bodies_are_refused() {
    let computer = Computer::start();
    let client = computer.client();
    let mut body = Vec::new();
    stead_sync::frame::encode(&mut body, b"payload");
    let mut corrupt = body.clone();
    *corrupt.last_mut().unwrap() ^= 1;
    for bad in [&corrupt[..], &body[..body.len() - 1]] {
        let answer = client.post_raw(
            "/v1/sync/chunks",
            "application/octet-stream",
            bad,
            Some(SECRET),
        );
        assert_eq!(answer.status, 400);
        assert_eq!(answer.code(), "INVALID_REQUEST");
    }
    // Nothing was stored from the bad bodies: the chunk is still needed.
    let reply = client.push_reply(false, &[file("/p", 0o644, b"payload")]);
    assert_eq!(
        reply,
        ApplyReply::Need {
            chunks: hash_content(b"payload")
        }
    );

    let answer = client.post_raw(
        "/v1/sync/chunks",
        "application/octet-stream",
        &body,
        Some(SECRET),
    );
    assert_eq!(answer.json(), json!({"stored": 1}));
    assert_eq!(
        client.push_reply(false, &[file("/p", 0o644, b"payload")]),
        ApplyReply::Applied { written: 1 }
    );
}

#[test]
fn chunk_bodies_over_the_limit_are_refused() {
    let computer = Computer::start();
    let client = computer.client();
    let piece = vec![3u8; CHUNK_SIZE];
    let mut body = Vec::new();
    for _ in 0..129 {
        stead_sync::frame::encode(&mut body, &piece);
    }
    // The program answers 413 as soon as the body passes the limit and
    // closes: the client sees the answer, or, still sending, a connection
    // the server broke off. Either way the program serves on.
    let sent = client
        .post_builder("/v1/sync/chunks", Some(SECRET))
        .header("content-type", "application/octet-stream")
        .send(&body[..]);
    match sent {
        Ok(answer) => assert_eq!(answer.status().as_u16(), 413),
        Err(error) => assert!(
            matches!(error, ureq::Error::Io(_)),
            "refused otherwise: {error}"
        ),
    }
    assert_eq!(client.get("/v1/status").status, 200);
}

#[test]
fn pushes_replace_whatever_stands_in_the_way() {
    let computer = Computer::start();
    let client = computer.client();
    client.sync(
        false,
        &[
            symlink("/d", "/tmp"),
            file("/f", 0o644, b"file"),
            dir("/g", 0o755),
            file("/g/x", 0o644, b"x"),
        ],
        &[b"file", b"x"],
    );
    // A symlink where a directory must be is replaced, never followed; a
    // file becomes a directory and a directory a file.
    let written = client.sync(
        false,
        &[
            file("/d/inside.txt", 0o644, b"in"),
            dir("/f", 0o700),
            file("/g", 0o644, b"now a file"),
        ],
        &[b"in", b"now a file"],
    );
    assert_eq!(written, 2);
    assert!(std::fs::symlink_metadata(client.disk("/d"))
        .unwrap()
        .is_dir());
    assert_eq!(std::fs::read(client.disk("/d/inside.txt")).unwrap(), b"in");
    assert!(!std::path::Path::new("/tmp/inside.txt").exists());
    assert!(client.disk("/f").is_dir());
    assert_eq!(std::fs::read(client.disk("/g")).unwrap(), b"now a file");

    client.sync(false, &[gone("/d"), gone("/nothing-here")], &[]);
    assert!(!client.disk("/d").exists());
    // Nothing was set aside: all of it was known.
    let names: Vec<_> = std::fs::read_dir(&client.root)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

#[test]
fn local_work_is_set_aside_before_a_push_overwrites_it() {
    let computer = Computer::start();
    let client = computer.client();
    client.sync(
        false,
        &[
            file("/f.txt", 0o644, b"v1\n"),
            file("/g.txt", 0o644, b"g\n"),
        ],
        &[b"v1\n", b"g\n"],
    );
    let (_, _, exit) = client.exec("edit", "echo local > f.txt; echo local-g > g.txt");
    assert_eq!(exit.changes.len(), 2);

    // Not acknowledged: the workspace pushes its own versions.
    client.sync(
        false,
        &[file("/f.txt", 0o644, b"v2\n"), gone("/g.txt")],
        &[b"v2\n"],
    );
    assert_eq!(std::fs::read(client.disk("/f.txt")).unwrap(), b"v2\n");
    assert_eq!(
        std::fs::read(client.disk("/f.txt.conflict-local-1")).unwrap(),
        b"local\n"
    );
    assert!(!client.disk("/g.txt").exists());
    assert_eq!(
        std::fs::read(client.disk("/g.txt.conflict-local-1")).unwrap(),
        b"local-g\n"
    );

    // A late ack of the report the push overtook does not undo the push.
    assert_eq!(client.ack("edit").status, 200);
    // The next scan reports the set-aside copies as new files, and nothing
    // about the pushed paths.
    let (_, _, exit) = client.exec("next", "true");
    let paths: Vec<_> = exit.changes.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(
        paths,
        ["/f.txt.conflict-local-1", "/g.txt.conflict-local-1"]
    );
}

/// A pushed file takes the workspace's modification time (written anew or
/// already in place), and a file a command writes is reported with its own.
#[test]
fn modification_times_travel_both_ways() {
    let computer = Computer::start();
    let client = computer.client();
    let timed = |path: &str, content: &[u8], ms: i64| Change {
        mtime_ms: Some(ms),
        ..file(path, 0o644, content)
    };
    let mtime_ms = |path: &str| {
        let meta = std::fs::metadata(client.disk(path)).unwrap();
        meta.mtime() * 1000 + meta.mtime_nsec() / 1_000_000
    };
    client.sync(
        false,
        &[timed("/a.c", b"int a;\n", 1_500_000_000_123)],
        &[b"int a;\n"],
    );
    assert_eq!(mtime_ms("/a.c"), 1_500_000_000_123);
    // Same content, new time: the file is not rewritten but takes it.
    client.sync(false, &[timed("/a.c", b"int a;\n", 1_600_000_000_456)], &[]);
    assert_eq!(mtime_ms("/a.c"), 1_600_000_000_456);
    let (_, _, exit) = client.exec("t", "echo b > b.c && touch -d @1400000000.5 b.c");
    assert_eq!(exit.changes.len(), 1, "{:?}", exit.changes);
    assert_eq!(exit.changes[0].mtime_ms, Some(1_400_000_000_500));
}
