//! Quotas: each one refuses the operation that would exceed it, names
//! itself, and leaves the workspace exactly as it was.

mod common;

use common::*;
use stead_sql::SqliteDb;
use stead_vfs::{Errno, Limits, Vfs, VfsError, WriteOptions, CHUNK_SIZE};

fn limited(db: &SqliteDb, limits: Limits) -> Vfs<'_, SqliteDb> {
    Vfs::new(db, NOW).with_limits(limits)
}

#[test]
fn stored_bytes_count_distinct_content_and_refuse_overflow() {
    let db = db();
    let limits = Limits {
        max_stored_bytes: 3 * CHUNK_SIZE as u64,
        ..Limits::default()
    };
    let vfs = limited(&db, limits);
    let two_chunks = noise(2 * CHUNK_SIZE, 1);
    put(&vfs, "/a", &two_chunks);
    // The same content again is stored once: no new bytes.
    put(&vfs, "/copy-of-a", &two_chunks);
    vfs.copy(&p("/a"), &p("/cp"), false).unwrap();
    let before = dump(&db);
    let error = vfs
        .write(&p("/b"), &noise(2 * CHUNK_SIZE, 2), WriteOptions::default())
        .unwrap_err();
    assert_eq!(error.code(), Errno::Enospc);
    assert!(error.to_string().contains("max_stored_bytes"), "{error}");
    assert_eq!(dump(&db), before, "the refused write left nothing behind");
    // Freeing space makes room again.
    vfs.remove(&p("/a"), false).unwrap();
    vfs.remove(&p("/copy-of-a"), false).unwrap();
    vfs.remove(&p("/cp"), false).unwrap();
    put(&vfs, "/b", noise(2 * CHUNK_SIZE, 2));
    assert_eq!(vfs.usage().unwrap().stored_bytes, 2 * CHUNK_SIZE as u64);
}

#[test]
fn staged_uploads_count_against_stored_bytes() {
    let db = db();
    let vfs = limited(
        &db,
        Limits {
            max_stored_bytes: CHUNK_SIZE as u64,
            ..Limits::default()
        },
    );
    let upload = vfs
        .begin_upload(&p("/big"), WriteOptions::default())
        .unwrap();
    vfs.stage_chunk(upload, 0, &noise(CHUNK_SIZE, 3)).unwrap();
    let error = vfs
        .stage_chunk(upload, 1, b"one byte too many")
        .unwrap_err();
    assert!(matches!(error, VfsError::NoSpace { .. }), "{error}");
    vfs.abort_upload(upload).unwrap();
    assert_eq!(chunks(&db), 0);
}

#[test]
fn node_count_is_bounded() {
    let db = db();
    let vfs = limited(
        &db,
        Limits {
            max_nodes: 4,
            ..Limits::default()
        },
    );
    // The root counts: three more nodes fit.
    put(&vfs, "/d/e", "x");
    put(&vfs, "/f", "y");
    let before = dump(&db);
    let error = vfs.mkdir(&p("/g"), false, None).unwrap_err();
    assert_eq!(error.code(), Errno::Enospc);
    assert!(error.to_string().contains("max_nodes"), "{error}");
    assert_eq!(dump(&db), before);
    // Overwriting an existing file adds no node.
    put(&vfs, "/f", "z");
}

#[test]
fn path_depth_is_bounded() {
    let db = db();
    let vfs = limited(
        &db,
        Limits {
            max_path_depth: 3,
            ..Limits::default()
        },
    );
    put(&vfs, "/a/b/c", "fits");
    let error = vfs
        .write(&p("/a/b/c2/d"), b"too deep", WriteOptions::default())
        .unwrap_err();
    assert_eq!(error.code(), Errno::Enametoolong);
    assert!(error.to_string().contains("max_path_depth"), "{error}");
    assert!(matches!(
        vfs.stat(&p("/a/b/c2"), false),
        Err(VfsError::NotFound { .. })
    ));
}

#[test]
fn counters_match_the_tables_after_mixed_operations() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/x/y", noise(CHUNK_SIZE + 5, 4));
    vfs.copy(&p("/x"), &p("/x2"), true).unwrap();
    vfs.rename(&p("/x2"), &p("/moved")).unwrap();
    vfs.symlink("x/y", &p("/ln")).unwrap();
    vfs.remove(&p("/x"), true).unwrap();
    put(&vfs, "/moved/y", b"small now");
    let usage = vfs.usage().unwrap();
    let meta = |key: &str| {
        stead_sql::Sql::query_row(
            &db,
            "SELECT value FROM meta WHERE key = ?",
            stead_sql::params![key],
        )
        .unwrap()
        .unwrap()
        .int(0)
        .unwrap() as u64
    };
    assert_eq!(meta("stored_bytes"), usage.stored_bytes);
    assert_eq!(meta("node_count"), count(&db, "nodes") as u64);
}

#[test]
fn a_removal_frees_even_a_workspace_already_over_its_quota() {
    let db = db();
    put(&vfs(&db), "/a", noise(2 * CHUNK_SIZE, 7));
    put(&vfs(&db), "/b", b"small");
    // The quota lowered below what the workspace holds (a settings change).
    let vfs = limited(
        &db,
        Limits {
            max_stored_bytes: CHUNK_SIZE as u64,
            max_nodes: 2,
            ..Limits::default()
        },
    );
    assert_eq!(
        vfs.write(&p("/c"), b"more", WriteOptions::default())
            .unwrap_err()
            .code(),
        Errno::Enospc
    );
    vfs.remove(&p("/b"), false).unwrap();
    vfs.remove(&p("/a"), false).unwrap();
    assert_eq!(vfs.usage().unwrap().stored_bytes, 0);
    put(&vfs, "/c", b"fits again");
}

/// In one batch (an exec's transaction), a write that would pass a quota
/// fails by itself and leaves nothing of itself: the writes before it are
/// kept, and one that fits still goes in after it. Far from the quota a
/// write does not read the usage again; near it, it does.
#[test]
fn a_write_passing_a_quota_inside_a_batch_fails_alone() {
    let db = db();
    let vfs = limited(
        &db,
        Limits {
            max_stored_bytes: 3 * CHUNK_SIZE as u64,
            max_nodes: 6,
            ..Limits::default()
        },
    );
    vfs.mkdir(&p("/d"), false, None).unwrap();
    vfs.atomically(|| {
        put(&vfs, "/d/a", noise(CHUNK_SIZE, 1));
        put(&vfs, "/d/b", noise(CHUNK_SIZE, 2));
        let before = dump(&db);
        let error = vfs
            .write(&p("/d/c"), &noise(2 * CHUNK_SIZE, 3), no_parents())
            .unwrap_err();
        assert!(error.to_string().contains("max_stored_bytes"), "{error}");
        assert_eq!(dump(&db), before, "the refused write left nothing");
        put(&vfs, "/d/c", b"small");
        // The root, /d and three files: one node more fits, not two.
        put(&vfs, "/d/e", b"fits");
        let before = dump(&db);
        let error = vfs.write(&p("/d/f"), b"x", no_parents()).unwrap_err();
        assert!(error.to_string().contains("max_nodes"), "{error}");
        assert_eq!(dump(&db), before);
        Ok(())
    })
    .unwrap();
    assert_eq!(get(&vfs, "/d/b"), noise(CHUNK_SIZE, 2));
    assert_eq!(get(&vfs, "/d/e"), b"fits");
    assert!(matches!(
        vfs.stat(&p("/d/f"), false),
        Err(VfsError::NotFound { .. })
    ));
}
