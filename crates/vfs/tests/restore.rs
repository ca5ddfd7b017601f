//! Restore (whole, by path, after the change log is gone) and undo; bad
//! input and quotas leave the workspace exactly as it was.

mod common;

use common::*;
use stead_sql::SqliteDb;
use stead_vfs::{CheckpointId, Limits, Operation, PathChange, Scope, VPath, Vfs, CHUNK_SIZE};

/// A workspace with a bit of everything.
fn populate(vfs: &Vfs<'_, SqliteDb>) {
    put(vfs, "/src/main.rs", "fn main() {}\n");
    put(vfs, "/src/lib/mod.rs", "pub mod x;\n");
    put(vfs, "/big.bin", noise(2 * CHUNK_SIZE + 3, 5));
    put(vfs, "/empty", "");
    vfs.mkdir(&p("/empty-dir"), false, Some(0o700)).unwrap();
    vfs.symlink("src/main.rs", &p("/main")).unwrap();
    vfs.chmod(&p("/src/main.rs"), 0o600).unwrap();
}

/// Breaks it in every way there is.
fn vandalise(vfs: &Vfs<'_, SqliteDb>) {
    put(vfs, "/src/main.rs", "broken");
    vfs.chmod(&p("/src/main.rs"), 0o777).unwrap();
    vfs.remove(&p("/src/lib"), true).unwrap();
    vfs.remove(&p("/big.bin"), false).unwrap();
    vfs.remove(&p("/empty"), false).unwrap();
    vfs.mkdir(&p("/empty"), false, None).unwrap();
    put(vfs, "/empty/inside", "x");
    vfs.remove(&p("/empty-dir"), false).unwrap();
    put(vfs, "/empty-dir", "now a file");
    vfs.remove(&p("/main"), false).unwrap();
    vfs.symlink("elsewhere", &p("/main")).unwrap();
    put(vfs, "/junk/deep/file", "junk");
    vfs.chmod(&VPath::root(), 0o700).unwrap();
}

#[test]
fn a_whole_restore_puts_everything_back() {
    let db = db();
    let vfs = vfs(&db);
    populate(&vfs);
    let tree_then = tree(&vfs, "/");
    let modes_then = modes(&vfs, &["/", "/src/main.rs", "/empty-dir"]);
    let chunks_then = chunks(&db);
    let a = checkpoint(&vfs);
    vandalise(&vfs);

    let restored = vfs.restore(a, None).unwrap();
    assert_eq!(tree(&vfs, "/"), tree_then);
    assert_eq!(
        modes(&vfs, &["/", "/src/main.rs", "/empty-dir"]),
        modes_then
    );
    assert_eq!(restored.checkpoint, a);
    assert_eq!(restored.revision, vfs.revision().unwrap());
    let got: Vec<(String, PathChange)> = restored
        .changes
        .iter()
        .map(|e| (e.path.clone(), e.change))
        .collect();
    assert_eq!(
        got,
        vec![
            ("/".into(), PathChange::ModeChanged),
            ("/big.bin".into(), PathChange::Added),
            ("/empty".into(), PathChange::TypeChanged),
            ("/empty-dir".into(), PathChange::TypeChanged),
            ("/empty/inside".into(), PathChange::Deleted),
            ("/junk".into(), PathChange::Deleted),
            ("/junk/deep".into(), PathChange::Deleted),
            ("/junk/deep/file".into(), PathChange::Deleted),
            ("/main".into(), PathChange::Modified),
            ("/src/lib".into(), PathChange::Added),
            ("/src/lib/mod.rs".into(), PathChange::Added),
            ("/src/main.rs".into(), PathChange::Modified),
        ]
    );
    // Nothing differs any more, and the change log knows what happened.
    assert!(vfs
        .diff(
            stead_vfs::Point::Checkpoint(a),
            stead_vfs::Point::Now,
            &Default::default()
        )
        .unwrap()
        .entries
        .is_empty());
    let logged = vfs
        .changes_since(restored.revision - 1, 100)
        .unwrap()
        .unwrap();
    assert!(logged.iter().all(|c| c.revision == restored.revision));
    assert!(logged.iter().any(|c| c.path == "/src/lib"));
    // Restoring again changes nothing and takes no revision.
    let again = vfs.restore(a, None).unwrap();
    assert!(again.changes.is_empty());
    assert_eq!(again.revision, restored.revision);
    // Content came back by reference: the same chunks, the vandal's gone.
    assert_eq!(chunks(&db), chunks_then);
    assert_eq!(vfs.usage().unwrap().checkpoint_only_bytes, 0);
}

#[test]
fn a_restore_without_the_change_log_scans_and_agrees() {
    let db = db();
    let vfs = vfs(&db);
    populate(&vfs);
    let tree_then = tree(&vfs, "/");
    let a = checkpoint(&vfs);
    vandalise(&vfs);
    prune_log(&db);
    let restored = vfs.restore(a, None).unwrap();
    assert!(!restored.changes.is_empty());
    assert_eq!(tree(&vfs, "/"), tree_then);
}

#[test]
fn chosen_paths_are_restored_and_nothing_else() {
    let db = db();
    let vfs = vfs(&db);
    populate(&vfs);
    let a = checkpoint(&vfs);
    vandalise(&vfs);
    let restored = vfs
        .restore(a, Some(&[p("/src"), p("/junk"), p("/big.bin")]))
        .unwrap();
    assert_eq!(get(&vfs, "/src/main.rs"), b"fn main() {}\n");
    assert_eq!(get(&vfs, "/src/lib/mod.rs"), b"pub mod x;\n");
    assert_eq!(get(&vfs, "/big.bin"), noise(2 * CHUNK_SIZE + 3, 5));
    assert_eq!(code(vfs.stat(&p("/junk"), false)), "ENOENT");
    // Outside the chosen paths the damage stays.
    assert_eq!(get(&vfs, "/empty-dir"), b"now a file");
    assert_eq!(vfs.readlink(&p("/main")).unwrap(), "elsewhere");
    assert!(restored.changes.iter().all(|e| e.path.starts_with("/src")
        || e.path.starts_with("/junk")
        || e.path == "/big.bin"));

    // A file deep in a directory that is gone brings its parents back.
    vfs.remove(&p("/src"), true).unwrap();
    vfs.restore(a, Some(&[p("/src/lib/mod.rs")])).unwrap();
    assert_eq!(get(&vfs, "/src/lib/mod.rs"), b"pub mod x;\n");
    assert_eq!(code(vfs.stat(&p("/src/main.rs"), false)), "ENOENT");
}

#[test]
fn bad_restores_change_nothing() {
    let db = db();
    let limits = Limits::default();
    let vfs = Vfs::new(&db, NOW).with_limits(limits);
    populate(&vfs);
    let a = checkpoint(&vfs);
    let partial = {
        put(&vfs, "/src/main.rs", "v2");
        auto(
            &vfs,
            Operation::Tool("write".into()),
            Scope::Paths(&[p("/src/main.rs")]),
        )
    };
    vandalise(&vfs);
    put(&vfs, "/blocker", "a file");
    let before = dump(&db);

    assert_eq!(code(vfs.restore(CheckpointId(99), None)), "ENOENT");
    assert_eq!(code(vfs.restore(a, Some(&[p("/never/was")]))), "ENOENT");
    let outside = vfs.restore(partial.id, Some(&[p("/big.bin")])).unwrap_err();
    assert_eq!(outside.code().as_str(), "ENOENT");
    assert!(outside.to_string().contains("does not cover"), "{outside}");
    // Paths are parsed at the boundary: `..` above the root, NUL and
    // over-long ones never reach a restore.
    assert_eq!(code(VPath::parse("/../etc")), "EACCES");
    assert_eq!(code(VPath::parse("/a\0b")), "EINVAL");
    assert_eq!(code(VPath::parse(&"/x".repeat(2100))), "ENAMETOOLONG");
    assert_eq!(dump(&db), before, "refused restores left nothing behind");

    // The quotas are checked at the end, and all or nothing.
    let tight = Vfs::new(&db, NOW).with_limits(Limits {
        max_nodes: 8,
        ..limits
    });
    let error = tight.restore(a, None).unwrap_err();
    assert_eq!(error.code().as_str(), "ENOSPC");
    let shallow = Vfs::new(&db, NOW).with_limits(Limits {
        max_path_depth: 1,
        ..limits
    });
    assert_eq!(code(shallow.restore(a, Some(&[p("/src")]))), "ENAMETOOLONG");
    let small = Vfs::new(&db, NOW).with_limits(Limits {
        max_file_bytes: 100,
        ..limits
    });
    assert_eq!(code(small.restore(a, Some(&[p("/big.bin")]))), "EFBIG");
    assert_eq!(dump(&db), before, "refused restores left nothing behind");

    // A restore root whose parent is now a file is refused, not forced.
    put(&vfs, "/p/child", "c");
    let b = checkpoint(&vfs);
    vfs.remove(&p("/p"), true).unwrap();
    put(&vfs, "/p", "file in the way");
    let before = dump(&db);
    assert_eq!(code(vfs.restore(b, Some(&[p("/p/child")]))), "ENOTDIR");
    assert_eq!(dump(&db), before);
    vfs.restore(b, Some(&[p("/p")])).unwrap();
    assert_eq!(get(&vfs, "/p/child"), b"c");
}

#[test]
fn undo_walks_back_one_operation_at_a_time() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/notes", "v1");
    // exec 1 changes a file; exec 2 changes nothing; a write tool call.
    auto(&vfs, Operation::Exec, Scope::Whole);
    put(&vfs, "/notes", "v2");
    put(&vfs, "/made-by-exec", "x");
    auto(&vfs, Operation::Exec, Scope::Whole);
    auto(&vfs, Operation::Exec, Scope::Whole);
    let write = auto(
        &vfs,
        Operation::Tool("write".into()),
        Scope::Paths(&[p("/notes")]),
    );
    put(&vfs, "/notes", "v3");

    auto(&vfs, Operation::Undo, Scope::Whole);
    let first = vfs.undo().unwrap();
    assert_eq!(first.checkpoint.id, write.id);
    assert_eq!(
        first.checkpoint.operation,
        Some(Operation::Tool("write".into()))
    );
    assert_eq!(get(&vfs, "/notes"), b"v2");
    assert_eq!(
        first
            .restored
            .changes
            .iter()
            .map(|e| (e.path.as_str(), e.change))
            .collect::<Vec<_>>(),
        vec![("/notes", PathChange::Modified)]
    );

    auto(&vfs, Operation::Undo, Scope::Whole);
    let second = vfs.undo().unwrap();
    assert_eq!(second.checkpoint.operation, Some(Operation::Exec));
    assert_eq!(get(&vfs, "/notes"), b"v1");
    assert_eq!(code(vfs.stat(&p("/made-by-exec"), false)), "ENOENT");

    auto(&vfs, Operation::Undo, Scope::Whole);
    let before = dump(&db);
    assert_eq!(code(vfs.undo()), "ENOENT", "nothing older to undo");
    assert_eq!(dump(&db), before);

    // A new operation after undos is undone on its own.
    auto(&vfs, Operation::Computer, Scope::Whole);
    put(&vfs, "/notes", "v4");
    vfs.undo().unwrap();
    assert_eq!(get(&vfs, "/notes"), b"v1");
}

#[test]
fn an_undo_can_be_taken_back_by_restoring_its_checkpoint() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/f", "before");
    auto(&vfs, Operation::Exec, Scope::Whole);
    put(&vfs, "/f", "after");
    let undo_point = auto(&vfs, Operation::Undo, Scope::Whole);
    vfs.undo().unwrap();
    assert_eq!(get(&vfs, "/f"), b"before");
    let redo_point = auto(&vfs, Operation::Restore, Scope::Whole);
    vfs.restore(undo_point.id, None).unwrap();
    assert_eq!(get(&vfs, "/f"), b"after");
    // ...and that restore is undone in turn.
    assert_ne!(redo_point, undo_point);
    vfs.undo().unwrap();
    assert_eq!(get(&vfs, "/f"), b"before");
}
