//! The workspace side of computer sync on real SQLite: manifests, change
//! sets since a revision, and applying a container's changes with conflicts.

mod common;

use common::*;
use stead_sql::SqliteDb;
use stead_sync::{hash_content, Change, Entry, IgnoreRules};
use stead_vfs::{Conflict, SyncOutcome, Vfs, VfsError, CHUNK_SIZE};

fn file(content: &[u8], mode: u32) -> Option<Entry> {
    Some(Entry::File {
        mode,
        size: content.len() as u64,
        chunks: hash_content(content),
    })
}

fn change(path: &str, entry: Option<Entry>) -> Change {
    Change {
        path: path.to_string(),
        entry,
        mtime_ms: None,
    }
}

/// Stages `contents` the way a pull does, returning the staging id.
fn stage(vfs: &Vfs<'_, SqliteDb>, contents: &[&[u8]]) -> stead_vfs::UploadId {
    let staging = vfs.begin_staging().unwrap();
    let mut idx = 0;
    for content in contents {
        for piece in content.chunks(CHUNK_SIZE) {
            vfs.stage_chunk(staging, idx, piece).unwrap();
            idx += 1;
        }
    }
    staging
}

fn paths(changes: &[Change]) -> Vec<&str> {
    changes.iter().map(|c| c.path.as_str()).collect()
}

#[test]
fn manifest_lists_everything_but_ignored_paths_with_stored_hashes() {
    let db = db();
    let vfs = vfs(&db);
    let big = noise(CHUNK_SIZE + 10, 3);
    put(&vfs, "/src/main.rs", b"fn main() {}");
    put(&vfs, "/big.bin", &big);
    put(&vfs, "/node_modules/x/index.js", b"x");
    vfs.symlink("src/main.rs", &p("/link")).unwrap();
    vfs.chmod(&p("/src/main.rs"), 0o755).unwrap();
    let manifest = vfs.sync_manifest(&IgnoreRules::default()).unwrap();
    assert_eq!(
        paths(&manifest),
        vec!["/big.bin", "/link", "/src", "/src/main.rs"]
    );
    assert_eq!(manifest[0].entry, file(&big, 0o644));
    assert_eq!(
        manifest[1].entry,
        Some(Entry::Symlink {
            target: "src/main.rs".into()
        })
    );
    assert_eq!(manifest[2].entry, Some(Entry::Dir { mode: 0o755 }));
    assert_eq!(manifest[3].entry, file(b"fn main() {}", 0o755));
    let everything = vfs.sync_manifest(&IgnoreRules::parse("")).unwrap();
    assert_eq!(everything.len(), 7);
}

#[test]
fn changes_since_give_current_states_and_whole_new_subtrees() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/keep", b"1");
    put(&vfs, "/gone", b"2");
    put(&vfs, "/stage/a/b", b"3");
    let base = vfs.revision().unwrap();
    put(&vfs, "/keep", b"changed");
    put(&vfs, "/keep", b"changed twice");
    vfs.remove(&p("/gone"), false).unwrap();
    vfs.rename(&p("/stage"), &p("/moved")).unwrap();
    let ignore = IgnoreRules::default();
    let changes = vfs.sync_changes_since(base, &ignore).unwrap().unwrap();
    assert_eq!(
        paths(&changes),
        vec![
            "/gone",
            "/keep",
            "/moved",
            "/moved/a",
            "/moved/a/b",
            "/stage"
        ]
    );
    assert_eq!(changes[0].entry, None);
    assert_eq!(changes[1].entry, file(b"changed twice", 0o644));
    assert_eq!(changes[4].entry, file(b"3", 0o644));
    assert_eq!(changes[5].entry, None);
    let now = vfs.revision().unwrap();
    assert!(vfs
        .sync_changes_since(now, &ignore)
        .unwrap()
        .unwrap()
        .is_empty());
}

#[test]
fn apply_takes_files_dirs_links_and_deletions_in_one_revision() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/old.txt", b"old");
    put(&vfs, "/was_file", b"becomes a directory");
    let base = vfs.revision().unwrap();
    let big = noise(2 * CHUNK_SIZE + 5, 9);
    let staging = stage(&vfs, &[b"new content", &big]);
    let changes = vec![
        change("/old.txt", None),
        change("/out/new.txt", file(b"new content", 0o600)),
        change("/out", Some(Entry::Dir { mode: 0o700 })),
        change("/big", file(&big, 0o755)),
        change("/was_file", Some(Entry::Dir { mode: 0o755 })),
        change("/was_file/inside", file(b"new content", 0o644)),
        change(
            "/ln",
            Some(Entry::Symlink {
                target: "out/new.txt".into(),
            }),
        ),
    ];
    let outcome = vfs.apply_sync(base, &changes).unwrap();
    vfs.abort_upload(staging).unwrap();
    assert_eq!(
        outcome.revision,
        base + 1,
        "one revision for the whole apply"
    );
    assert!(outcome.conflicts.is_empty() && outcome.rejected.is_empty());
    assert_eq!(outcome.applied.len(), 7);
    assert!(matches!(
        vfs.stat(&p("/old.txt"), false),
        Err(VfsError::NotFound { .. })
    ));
    assert_eq!(get(&vfs, "/out/new.txt"), b"new content");
    assert_eq!(vfs.stat(&p("/out/new.txt"), false).unwrap().1.mode, 0o600);
    assert_eq!(vfs.stat(&p("/out"), false).unwrap().1.mode, 0o700);
    assert_eq!(get(&vfs, "/big"), big);
    assert_eq!(get(&vfs, "/was_file/inside"), b"new content");
    assert_eq!(get(&vfs, "/ln"), b"new content");
    // Staged chunks the files took survive the release of the staging.
    assert_eq!(count(&db, "upload_chunks"), 0);

    // The same report again (a retry after a lost acknowledgement) is
    // harmless and changes nothing: what the workspace changed since is its
    // own apply, which holds the same content.
    let again = vfs.apply_sync(base, &changes).unwrap();
    assert!(again.applied.is_empty(), "{again:?}");
    assert_eq!(again.revision, base + 1);
}

#[test]
fn apply_without_the_content_changes_nothing() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/a", b"a");
    let before = dump(&db);
    let changes = vec![
        change("/a", None),
        change("/b", file(b"never pulled", 0o644)),
    ];
    let error = vfs
        .apply_sync(vfs.revision().unwrap(), &changes)
        .unwrap_err();
    assert!(matches!(error, VfsError::BadUpload { .. }), "{error}");
    assert_eq!(dump(&db), before);
}

#[test]
fn conflicts_keep_the_workspace_version_and_the_container_copy() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/notes.txt", b"base");
    put(&vfs, "/dir/file", b"base");
    let base = vfs.revision().unwrap();
    // While the command ran, the agent changed /notes.txt and added to /dir.
    put(&vfs, "/notes.txt", b"agent");
    put(&vfs, "/dir/agent-new", b"agent");
    let staging = stage(&vfs, &[b"container"]);
    let outcome = vfs
        .apply_sync(
            base,
            &[
                change("/notes.txt", file(b"container", 0o644)),
                change("/dir", None),
                change("/dir/file", None),
                change("/other", file(b"container", 0o644)),
            ],
        )
        .unwrap();
    vfs.abort_upload(staging).unwrap();
    let rev = outcome.revision;
    assert_eq!(
        outcome,
        SyncOutcome {
            revision: rev,
            applied: vec!["/dir/file".into(), "/other".into()],
            conflicts: vec![
                Conflict {
                    path: "/dir".into(),
                    container_copy: None
                },
                Conflict {
                    path: "/notes.txt".into(),
                    container_copy: Some(format!("/notes.txt.conflict-{rev}")),
                },
            ],
            rejected: vec![],
        }
    );
    assert_eq!(get(&vfs, "/notes.txt"), b"agent");
    assert_eq!(
        get(&vfs, &format!("/notes.txt.conflict-{rev}")),
        b"container"
    );
    assert_eq!(get(&vfs, "/dir/agent-new"), b"agent");
    assert_eq!(get(&vfs, "/other"), b"container");
}

#[test]
fn bad_paths_are_rejected_not_applied() {
    let db = db();
    let vfs = vfs(&db);
    let outcome = vfs
        .apply_sync(
            0,
            &[
                change("/a/../b", Some(Entry::Dir { mode: 0o755 })),
                change("relative", Some(Entry::Dir { mode: 0o755 })),
                change("/", None),
            ],
        )
        .unwrap();
    assert_eq!(outcome.rejected.len(), 3);
    assert!(outcome.applied.is_empty());
    assert_eq!(outcome.revision, 0);
}

#[test]
fn missing_chunks_names_what_a_pull_must_fetch() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/a", b"held");
    let held = hash_content(b"held")[0];
    let new = hash_content(b"new")[0];
    assert_eq!(vfs.missing_chunks(&[held, new, new]).unwrap(), vec![new]);
    assert_eq!(vfs.chunk_by_hash(&held).unwrap().unwrap(), b"held");
    assert!(vfs.chunk_by_hash(&new).unwrap().is_none());
    let many: Vec<_> = (0..250u32)
        .map(|i| hash_content(&i.to_le_bytes())[0])
        .collect();
    assert_eq!(vfs.missing_chunks(&many).unwrap().len(), 250);
}

/// A change the workspace cannot hold is refused on its own, with the
/// code the file API would give, and everything else applies: one file
/// too many, too large or too deep does not sink a command's whole result.
#[test]
fn changes_over_a_quota_are_rejected_one_by_one_and_the_rest_applies() {
    let db = db();
    let limits = stead_vfs::Limits {
        max_nodes: 5,
        max_file_bytes: 4,
        max_path_depth: 3,
        ..stead_vfs::Limits::default()
    };
    let vfs = vfs(&db).with_limits(limits);
    put(&vfs, "/kept", b"old");
    let staging = stage(&vfs, &[b"new".as_slice(), b"small", b"x"]);
    let mut changes: Vec<Change> = (1..=4)
        .map(|i| change(&format!("/out/f{i}"), file(b"x", 0o644)))
        .collect();
    changes.push(change("/big", file(b"small", 0o644)));
    changes.push(change("/kept", file(b"new", 0o644)));
    changes.push(change("/a/b/c/d", file(b"x", 0o644)));
    let outcome = vfs.apply_sync(vfs.revision().unwrap(), &changes).unwrap();
    vfs.abort_upload(staging).unwrap();
    // The root and /kept held 2 of 5 nodes: /out and two files fit.
    assert_eq!(outcome.applied, vec!["/kept", "/out/f1", "/out/f2"]);
    let refused: Vec<(&str, &str)> = outcome
        .rejected
        .iter()
        .map(|r| (r.path.as_str(), r.code.as_str()))
        .collect();
    assert_eq!(
        refused,
        vec![
            ("/a/b/c/d", "ENAMETOOLONG"),
            ("/big", "EFBIG"),
            ("/out/f3", "ENOSPC"),
            ("/out/f4", "ENOSPC"),
        ]
    );
    assert!(outcome.rejected[2].reason.contains("max_nodes"));
    assert!(outcome.rejected[2].reason.contains("limit 5"));
    assert_eq!(get(&vfs, "/kept"), b"new");
    assert!(vfs.stat(&p("/out/f3"), false).is_err());
    assert!(vfs.stat(&p("/a"), false).is_err());
    let json = serde_json::to_value(&outcome.rejected[1]).unwrap();
    assert_eq!(json["code"], "EFBIG");

    // Over the quota already (it was lowered): removals are still taken.
    let vfs = vfs.with_limits(stead_vfs::Limits {
        max_nodes: 2,
        ..limits
    });
    let outcome = vfs
        .apply_sync(
            vfs.revision().unwrap(),
            &[change("/out/f1", None), change("/new", file(b"x", 0o644))],
        )
        .unwrap();
    assert_eq!(outcome.applied, vec!["/out/f1"]);
    assert_eq!(outcome.rejected.len(), 1);
}
