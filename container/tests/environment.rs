//! Packing a computer's environment (ignored paths and the per-user
//! directory) and restoring it on a fresh one: content checked, whole or
//! not at all, nothing of it reported as workspace changes.

mod common;

use std::collections::HashMap;

use common::*;
use serde_json::json;
use stead_sync::environment::{EnvEntry, EnvKind, PackReply, RestoreReply};
use stead_sync::{frame, ChunkHash};

/// Builds an environment on `client`'s computer: a venv-like tree, a
/// nested `node_modules`, a user-level install, plus a workspace file and
/// a FIFO that must not be packed.
fn install(client: &Client) {
    client.sync(true, &[], &[]);
    let script = "set -e
        mkdir -p .venv/bin web/node_modules/left-pad src
        printf '#!/bin/sh\\necho tool ran\\n' > .venv/bin/tool && chmod 755 .venv/bin/tool
        ln -s tool .venv/bin/alias
        ln .venv/bin/tool .venv/bin/hard
        head -c 700000 /dev/urandom > web/node_modules/left-pad/blob
        echo 'module.exports = 1' > web/node_modules/left-pad/index.js
        mkfifo .venv/pipe
        mkdir -p \"$XDG_CACHE_HOME/pip\" && echo cached > \"$XDG_CACHE_HOME/pip/entry\"
        echo 'fn main() {}' > src/main.rs";
    let (_, err, exit) = client.exec("20260101000000-install", script);
    assert_eq!(exit.code, Some(0), "{err}");
    // Only the workspace file is reported; the rest stays on the computer.
    let paths: Vec<&str> = exit.changes.iter().map(|c| c.path.as_str()).collect();
    assert!(paths.contains(&"/src/main.rs"), "{paths:?}");
    assert!(!paths.iter().any(|p| p.contains(".venv")), "{paths:?}");
    client.ack("20260101000000-install").expect(200);
}

fn pack(client: &Client, limit: u64) -> PackReply {
    let answer = client.post("/v1/environment/pack", &json!({ "limit_bytes": limit }));
    serde_json::from_slice(&answer.expect(200).body).unwrap()
}

/// Every chunk of a pack, fetched from its computer.
fn fetch(client: &Client, pack: &str, entries: &[EnvEntry]) -> HashMap<ChunkHash, Vec<u8>> {
    let mut wanted: Vec<ChunkHash> = entries.iter().flat_map(|e| e.chunks().to_vec()).collect();
    wanted.sort();
    wanted.dedup();
    let answer = client.post(
        "/v1/environment/chunks",
        &json!({ "pack": pack, "chunks": wanted }),
    );
    let chunks: HashMap<_, _> = frame::decode_all(&answer.expect(200).body)
        .unwrap()
        .into_iter()
        .collect();
    assert_eq!(chunks.len(), wanted.len());
    chunks
}

fn restore(client: &Client, entries: &[EnvEntry]) -> RestoreReply {
    let answer = client.post(
        "/v1/environment/restore",
        &json!({ "instance": client.instance(), "entries": entries }),
    );
    serde_json::from_slice(&answer.expect(200).body).unwrap()
}

#[test]
fn a_packed_environment_comes_back_whole_on_a_fresh_computer() {
    let first = Computer::start();
    let a = first.client();
    install(&a);
    let PackReply::Packed {
        pack,
        entries,
        bytes,
        skipped,
    } = pack(&a, 10 << 20)
    else {
        panic!("under the limit");
    };
    let by_path: HashMap<&str, &EnvKind> =
        entries.iter().map(|e| (e.path.as_str(), &e.kind)).collect();
    assert!(matches!(by_path["/.venv"], EnvKind::Dir { .. }));
    assert!(matches!(by_path["/.venv/bin/alias"], EnvKind::Symlink { target } if target == "tool"));
    let hard = by_path["/.venv/bin/hard"];
    let tool = by_path["/.venv/bin/tool"];
    // The first name found (sorted) holds the content, the other links to it.
    assert!(
        matches!(hard, EnvKind::File { mode: 0o755, .. }),
        "{hard:?}"
    );
    assert!(matches!(tool, EnvKind::Hardlink { to } if to == "/.venv/bin/hard"));
    assert!(by_path.contains_key("/web/node_modules/left-pad/blob"));
    assert!(by_path.contains_key("/var/tmp/home/.cache/pip/entry"));
    assert!(
        !by_path.contains_key("/src/main.rs"),
        "synced files are not kept"
    );
    assert!(!by_path.contains_key("/web"), "only what the sync ignores");
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert_eq!(skipped[0].path, "/.venv/pipe");
    assert!(bytes > 700_000, "{bytes}");
    let chunks = fetch(&a, &pack, &entries);

    let second = Computer::start();
    let b = second.client();
    b.sync(true, &[dir("/web", 0o755)], &[]);
    let RestoreReply::Need { chunks: needed } = restore(&b, &entries) else {
        panic!("a fresh computer lacks the content");
    };
    assert_eq!(needed.len(), chunks.len());
    assert!(
        !b.disk("/.venv").exists(),
        "nothing written before all is there"
    );
    let pieces: Vec<&[u8]> = needed.iter().map(|h| chunks[h].as_slice()).collect();
    b.upload(&pieces).expect(200);
    let RestoreReply::Restored { files, .. } = restore(&b, &entries) else {
        panic!("every chunk was sent");
    };
    assert_eq!(files, entries.len() as u64);

    let (out, err, exit) = b.exec(
        "20260101000001-use",
        "/.venv/bin/alias && stat -c %h /.venv/bin/tool && cat \"$XDG_CACHE_HOME/pip/entry\" \
         && wc -c < /web/node_modules/left-pad/blob",
    );
    assert_eq!(exit.code, Some(0), "{err}");
    assert_eq!(out, "tool ran\n2\ncached\n700000\n");
    assert!(
        exit.changes.is_empty(),
        "a restored environment is not a workspace change: {:?}",
        exit.changes
    );
    let original = std::fs::read(a.disk("/web/node_modules/left-pad/blob")).unwrap();
    assert_eq!(
        std::fs::read(b.disk("/web/node_modules/left-pad/blob")).unwrap(),
        original
    );
}

#[test]
fn over_the_limit_nothing_is_packed_and_stale_packs_serve_nothing() {
    let computer = Computer::start();
    let client = computer.client();
    install(&client);
    assert!(matches!(
        pack(&client, 1000),
        PackReply::TooLarge { limit: 1000, bytes } if bytes > 700_000
    ));
    let answer = client.post(
        "/v1/environment/chunks",
        &json!({ "pack": "nope", "chunks": [] }),
    );
    assert_eq!(answer.status, 400);
}

#[test]
fn a_changed_file_is_refused_as_gone_and_a_bad_restore_writes_nothing() {
    let computer = Computer::start();
    let client = computer.client();
    install(&client);
    let PackReply::Packed { pack, entries, .. } = pack(&client, 10 << 20) else {
        panic!("under the limit");
    };
    let (_, _, exit) = client.exec(
        "20260101000002-change",
        "echo changed > web/node_modules/left-pad/index.js",
    );
    assert_eq!(exit.code, Some(0));
    let index = entries
        .iter()
        .find(|e| e.path == "/web/node_modules/left-pad/index.js")
        .unwrap();
    let answer = client.post(
        "/v1/environment/chunks",
        &json!({ "pack": pack, "chunks": index.chunks() }),
    );
    assert_eq!(answer.status, 409);
    assert_eq!(answer.code(), "CHUNK_GONE");

    // A restore for another instance, or with a path that escapes, is
    // refused and writes nothing.
    let fresh = Computer::start();
    let other = fresh.client();
    other.sync(true, &[], &[]);
    let stale = other.post(
        "/v1/environment/restore",
        &json!({ "instance": "not-this-one", "entries": entries }),
    );
    assert_eq!(stale.code(), "STALE_INSTANCE");
    let bad = other.post(
        "/v1/environment/restore",
        &json!({ "instance": other.instance(),
                 "entries": [{"path": "/.venv/../x", "type": "dir", "mode": 493}] }),
    );
    assert_eq!(bad.status, 400);
    assert!(!other.disk("/.venv").exists());
}
