//! Checkpoints: taking, reading, listing and deleting them; automatic ones
//! and their retention; what they cost and what they keep alive.

mod common;

use common::*;
use stead_sql::{params, Sql, SqliteDb};
use stead_vfs::{
    Before, CheckpointId, CheckpointKind, Limits, NewCheckpoint, Operation, Retention, Scope,
    VPath, Vfs, WriteOptions, CHUNK_SIZE,
};

fn before<'a>(operation: &'a Operation, scope: Scope<'a>) -> Before<'a> {
    Before {
        actor: "token:t1",
        operation,
        note: Some("npm install"),
        scope,
    }
}

fn rows(db: &SqliteDb, table: &str, checkpoint: CheckpointId) -> i64 {
    db.query_row(
        &format!("SELECT COUNT(*) FROM {table} WHERE checkpoint = ?"),
        params![checkpoint.0],
    )
    .unwrap()
    .unwrap()
    .int(0)
    .unwrap()
}

#[test]
fn a_checkpoint_pins_the_tree_without_copying_content() {
    let db = db();
    let vfs = vfs(&db);
    let big = noise(2 * CHUNK_SIZE + 10, 1);
    put(&vfs, "/src/main.rs", "fn main() {}\n");
    put(&vfs, "/src/big.bin", &big);
    put(&vfs, "/empty", "");
    vfs.mkdir(&p("/src/empty-dir"), false, Some(0o700)).unwrap();
    vfs.symlink("src/main.rs", &p("/link")).unwrap();
    vfs.chmod(&p("/src/main.rs"), 0o600).unwrap();
    let chunks_before = chunks(&db);
    let stored_before = vfs.usage().unwrap().stored_bytes;
    let revision = vfs.revision().unwrap();

    let made = vfs
        .create_checkpoint(NewCheckpoint {
            actor: "admin",
            name: Some("before refactor"),
            note: Some("all green"),
        })
        .unwrap();
    assert_eq!(chunks(&db), chunks_before, "no content copied");
    assert_eq!(vfs.usage().unwrap().stored_bytes, stored_before);
    assert_eq!(
        vfs.revision().unwrap(),
        revision,
        "a checkpoint changes no file"
    );
    assert_eq!(made.kind, CheckpointKind::Manual);
    assert_eq!(made.name.as_deref(), Some("before refactor"));
    assert_eq!(made.note.as_deref(), Some("all green"));
    assert_eq!(made.actor, "admin");
    assert_eq!(made.operation, None);
    assert!(made.whole);
    assert_eq!(made.roots, vec!["/"]);
    assert_eq!(made.revision, revision);
    assert_eq!(made.created_ms, NOW);
    assert_eq!((made.files, made.directories, made.symlinks), (3, 2, 1));
    assert_eq!(made.bytes, big.len() as u64 + 13);
    assert!(!made.undone);

    let tree_then = tree(&vfs, "/");
    // The live workspace moves on; the checkpoint does not.
    put(&vfs, "/src/main.rs", "changed");
    vfs.remove(&p("/src"), true).unwrap();
    put(&vfs, "/new", "new");
    let snapshot = vfs.snapshot(made.id).unwrap();
    assert_eq!(snapshot_tree(&snapshot, "/"), tree_then);
    let main = snapshot.stat(&p("/src/main.rs")).unwrap();
    assert_eq!(main.mode, 0o600);
    assert_eq!(snapshot.stat(&p("/src/empty-dir")).unwrap().mode, 0o700);
    assert_eq!(snapshot.read_file(&p("/src/big.bin")).unwrap(), big);
    assert_eq!(code(snapshot.stat(&p("/new"))), "ENOENT");
    assert_eq!(code(snapshot.read_file(&p("/src"))), "EISDIR");
    assert_eq!(code(snapshot.read_file(&p("/link"))), "EINVAL");
    assert_eq!(code(snapshot.list(&p("/empty"), None, 10)), "ENOTDIR");
    // Streaming the pinned content by chunk id works after the live file went.
    let (node, ids) = snapshot.file_chunks(&p("/src/big.bin")).unwrap();
    assert_eq!(node.size, big.len() as u64);
    let streamed: Vec<u8> = ids
        .iter()
        .flat_map(|&id| vfs.chunk(id, &p("/src/big.bin")).unwrap())
        .collect();
    assert_eq!(streamed, big);
}

#[test]
fn checkpoint_names_and_notes_are_checked() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/f", "x");
    let named = |name: Option<&str>, note: Option<&str>| {
        vfs.create_checkpoint(NewCheckpoint {
            actor: "admin",
            name,
            note,
        })
    };
    named(Some("v1"), None).unwrap();
    let before = dump(&db);
    assert_eq!(code(named(Some("v1"), None)), "EEXIST");
    assert_eq!(code(named(Some(""), None)), "EINVAL");
    assert_eq!(code(named(Some("123"), None)), "EINVAL");
    assert_eq!(code(named(Some("tab\there"), None)), "EINVAL");
    assert_eq!(code(named(Some(&"x".repeat(129)), None)), "EINVAL");
    assert_eq!(code(named(None, Some(&"n".repeat(4097)))), "EINVAL");
    assert_eq!(code(named(None, Some("nul\0"))), "EINVAL");
    assert_eq!(dump(&db), before, "refused checkpoints leave nothing");
    assert_eq!(
        vfs.checkpoint_named("v1").unwrap().name.as_deref(),
        Some("v1")
    );
    assert_eq!(code(vfs.checkpoint_named("v2")), "ENOENT");
    named(Some(&"x".repeat(128)), Some(&"n".repeat(4096))).unwrap();
}

#[test]
fn list_is_paged_newest_first_and_delete_forgets() {
    let db = db();
    let vfs = vfs(&db);
    let mut ids = Vec::new();
    for i in 0..5 {
        put(&vfs, "/f", format!("{i}"));
        ids.push(checkpoint(&vfs));
    }
    let first = vfs.checkpoints(None, 2).unwrap();
    assert_eq!(
        first.iter().map(|c| c.id).collect::<Vec<_>>(),
        vec![ids[4], ids[3]]
    );
    let second = vfs.checkpoints(Some(ids[3]), 10).unwrap();
    assert_eq!(
        second.iter().map(|c| c.id).collect::<Vec<_>>(),
        vec![ids[2], ids[1], ids[0]]
    );
    assert!(second.iter().all(|c| c.roots == vec!["/"]));
    assert!(second.windows(2).all(|w| w[0].revision > w[1].revision));

    vfs.delete_checkpoint(ids[2]).unwrap();
    assert_eq!(code(vfs.checkpoint(ids[2])), "ENOENT");
    assert_eq!(code(vfs.snapshot(ids[2])), "ENOENT");
    assert_eq!(code(vfs.delete_checkpoint(ids[2])), "ENOENT");
    assert_eq!(code(vfs.checkpoint(CheckpointId(999))), "ENOENT");
    for table in [
        "checkpoint_roots",
        "checkpoint_entries",
        "checkpoint_chunks",
    ] {
        assert_eq!(rows(&db, table, ids[2]), 0, "{table}");
    }
    assert_eq!(vfs.checkpoints(None, 10).unwrap().len(), 4);
    assert_eq!(vfs.usage().unwrap().checkpoints, 4);
}

#[test]
fn chunks_live_while_any_checkpoint_names_them() {
    let db = db();
    let vfs = vfs(&db);
    let old = noise(CHUNK_SIZE + 5, 7);
    put(&vfs, "/data", &old);
    let first = checkpoint(&vfs);
    let second = checkpoint(&vfs);
    assert_eq!(vfs.usage().unwrap().checkpoint_only_bytes, 0);

    put(&vfs, "/data", "new content");
    let usage = vfs.usage().unwrap();
    assert_eq!(usage.checkpoint_only_bytes, old.len() as u64);
    assert_eq!(usage.stored_bytes, old.len() as u64 + 11);
    assert_eq!(
        vfs.snapshot(first).unwrap().read_file(&p("/data")).unwrap(),
        old
    );

    vfs.delete_checkpoint(first).unwrap();
    assert_eq!(
        vfs.snapshot(second)
            .unwrap()
            .read_file(&p("/data"))
            .unwrap(),
        old,
        "the other checkpoint still holds it"
    );
    assert_eq!(chunks(&db), 3);
    vfs.delete_checkpoint(second).unwrap();
    assert_eq!(chunks(&db), 1, "freed with its last reference");
    let usage = vfs.usage().unwrap();
    assert_eq!(usage.checkpoint_only_bytes, 0);
    assert_eq!(usage.stored_bytes, 11);
}

#[test]
fn content_only_checkpoints_hold_counts_against_the_quota() {
    let db = db();
    let limits = Limits {
        max_stored_bytes: 3 * CHUNK_SIZE as u64,
        ..Limits::default()
    };
    let vfs = Vfs::new(&db, NOW).with_limits(limits);
    put(&vfs, "/a", noise(2 * CHUNK_SIZE, 1));
    let held = checkpoint(&vfs);
    vfs.remove(&p("/a"), false).unwrap();
    assert_eq!(
        vfs.usage().unwrap().checkpoint_only_bytes,
        2 * CHUNK_SIZE as u64
    );
    let before = dump(&db);
    let error = vfs
        .write(&p("/b"), &noise(2 * CHUNK_SIZE, 2), WriteOptions::default())
        .unwrap_err();
    assert_eq!(error.code().as_str(), "ENOSPC");
    assert_eq!(dump(&db), before);
    vfs.delete_checkpoint(held).unwrap();
    put(&vfs, "/b", noise(2 * CHUNK_SIZE, 2));
}

#[test]
fn automatic_checkpoints_are_reused_while_nothing_changes() {
    let db = db();
    let vfs = vfs(&db);
    let retention = Retention::default();
    put(&vfs, "/f", "x");
    let exec = Operation::Exec;
    let first = vfs
        .auto_checkpoint(before(&exec, Scope::Whole), &retention)
        .unwrap();
    assert!(!first.reused);
    assert_eq!(first.checkpoint.kind, CheckpointKind::Automatic);
    assert_eq!(first.checkpoint.operation, Some(Operation::Exec));
    assert_eq!(first.checkpoint.actor, "token:t1");
    assert_eq!(first.checkpoint.note.as_deref(), Some("npm install"));
    // A read-only command later: the same checkpoint serves.
    let again = vfs
        .auto_checkpoint(before(&exec, Scope::Whole), &retention)
        .unwrap();
    assert!(again.reused);
    assert_eq!(again.checkpoint.id, first.checkpoint.id);
    assert_eq!(vfs.checkpoints(None, 10).unwrap().len(), 1);
    // A partial one is always taken: it names its own operation.
    let write = Operation::Tool("write".into());
    let paths = [p("/f")];
    let partial = vfs
        .auto_checkpoint(before(&write, Scope::Paths(&paths)), &retention)
        .unwrap();
    assert!(!partial.reused);
    assert_eq!(vfs.checkpoints(None, 10).unwrap().len(), 2);

    put(&vfs, "/f", "y");
    let next = vfs
        .auto_checkpoint(before(&write, Scope::Paths(&paths)), &retention)
        .unwrap();
    assert!(!next.reused);
    assert!(!next.checkpoint.whole);
    assert_eq!(
        next.checkpoint.operation,
        Some(Operation::Tool("write".into()))
    );
    let json = serde_json::to_value(&next.checkpoint).unwrap();
    assert_eq!(json["operation"], "tool:write");
    assert_eq!(json["kind"], "automatic");
}

#[test]
fn a_partial_checkpoint_pins_only_its_paths() {
    let db = db();
    let vfs = vfs(&db);
    for i in 0..50 {
        put(&vfs, &format!("/big/f{i:02}"), format!("{i}"));
    }
    put(&vfs, "/work/a/one", "1");
    put(&vfs, "/work/a/two", "2");
    put(&vfs, "/target/file", "t");
    vfs.symlink("/target", &p("/work/link")).unwrap();
    let write = Operation::Tool("mv".into());
    let paths = [
        p("/work/a"),
        p("/work/a/one"),
        p("/work/missing/deeper/x"),
        p("/work/link"),
        p("/big/f00/below-a-file"),
    ];
    let made = vfs
        .auto_checkpoint(before(&write, Scope::Paths(&paths)), &Retention::default())
        .unwrap()
        .checkpoint;
    assert!(!made.whole);
    // The symlink and what it points to; the first missing name; the
    // nested path folded into its ancestor; the path through a file dropped.
    assert_eq!(
        made.roots,
        vec!["/target", "/work/a", "/work/link", "/work/missing"]
    );
    assert_eq!((made.files, made.directories, made.symlinks), (3, 2, 1));
    assert_eq!(
        rows(&db, "checkpoint_entries", made.id),
        3,
        "only below the roots"
    );
    let snapshot = vfs.snapshot(made.id).unwrap();
    assert_eq!(snapshot.read_file(&p("/work/a/two")).unwrap(), b"2");
    assert_eq!(
        snapshot.stat(&p("/work/link")).unwrap().target.as_deref(),
        Some("/target")
    );
    assert_eq!(code(snapshot.stat(&p("/work/missing"))), "ENOENT");
    assert_eq!(code(snapshot.stat(&p("/work/missing/deeper"))), "ENOENT");
    assert_eq!(code(snapshot.stat(&p("/big/f01"))), "ENOENT");
    assert_eq!(
        snapshot.stat(&p("/big/f01")).unwrap_err().to_string(),
        "checkpoint 1 does not cover /big/f01: it pinned only /target, /work/a, /work/link, /work/missing"
    );
    // A scope naming the root is the whole workspace.
    put(&vfs, "/x", "changed");
    let whole = vfs
        .auto_checkpoint(
            before(&write, Scope::Paths(&[p("/x"), VPath::root()])),
            &Retention::default(),
        )
        .unwrap()
        .checkpoint;
    assert!(whole.whole);
}

#[test]
fn retention_keeps_the_newest_and_the_recent_and_all_manual_ones() {
    let db = db();
    let policy = Retention {
        keep_last: 2,
        keep_within_ms: 60_000,
        max_automatic: 3,
    };
    let exec = Operation::Computer;
    let manual = checkpoint(&vfs(&db));
    let mut made = Vec::new();
    // One automatic checkpoint a minute: older ones fall out of the window.
    for minute in 0..6 {
        let at = Vfs::new(&db, NOW + minute * 60_000);
        put(&at, "/f", format!("{minute}"));
        let auto = at
            .auto_checkpoint(before(&exec, Scope::Whole), &policy)
            .unwrap();
        made.push(auto.checkpoint.id);
        if minute >= 2 {
            assert_eq!(
                auto.pruned,
                vec![made[minute as usize - 2]],
                "minute {minute}"
            );
        }
    }
    let kept: Vec<CheckpointId> = vfs(&db)
        .checkpoints(None, 10)
        .unwrap()
        .iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(kept, vec![made[5], made[4], manual]);

    // Within the window the ceiling still applies.
    let burst = Vfs::new(&db, NOW + 10 * 60_000);
    for i in 0..5 {
        put(&burst, "/f", format!("burst {i}"));
        burst
            .auto_checkpoint(before(&exec, Scope::Whole), &policy)
            .unwrap();
    }
    let automatic = burst
        .checkpoints(None, 20)
        .unwrap()
        .iter()
        .filter(|c| c.kind == CheckpointKind::Automatic)
        .count();
    assert_eq!(automatic, 3);
    assert!(
        burst.checkpoint(manual).is_ok(),
        "manual ones are never pruned"
    );
    // Partial checkpoints count apart: a burst of them pushes out none of
    // the whole-workspace ones.
    let edits = Vfs::new(&db, NOW + 10 * 60_000 + 30_000);
    let write = Operation::Tool("write".into());
    for i in 0..5 {
        put(&edits, "/g", format!("edit {i}"));
        let paths = [p("/g")];
        edits
            .auto_checkpoint(before(&write, Scope::Paths(&paths)), &policy)
            .unwrap();
    }
    let kinds: Vec<bool> = edits
        .checkpoints(None, 20)
        .unwrap()
        .iter()
        .filter(|c| c.kind == CheckpointKind::Automatic)
        .map(|c| c.whole)
        .collect();
    assert_eq!(kinds, [false, false, false, true, true, true]);
    // A stricter policy applies on demand.
    let pruned = burst
        .prune_checkpoints(&Retention {
            keep_last: 1,
            keep_within_ms: 0,
            max_automatic: 1,
        })
        .unwrap();
    assert_eq!(pruned.len(), 4, "two of each kind");
}

#[test]
fn deleting_a_large_checkpoint_frees_every_chunk_only_it_held() {
    let db = db();
    let vfs = vfs(&db);
    // More chunks than one collecting statement takes.
    for i in 0..9_000 {
        put(&vfs, &format!("/many/d{}/f{i}", i % 30), format!("{i}"));
    }
    let held = checkpoint(&vfs);
    vfs.remove(&p("/many"), true).unwrap();
    assert_eq!(chunks(&db), 9_000);
    assert_eq!(
        vfs.usage().unwrap().checkpoint_only_bytes,
        vfs.usage().unwrap().stored_bytes
    );
    vfs.delete_checkpoint(held).unwrap();
    assert_eq!(chunks(&db), 0);
    assert_eq!(vfs.usage().unwrap().stored_bytes, 0);
}
