//! Diff between checkpoints, kept revisions and now: what each kind of
//! change looks like, text diffs and paging, the change-log and full-scan
//! methods agreeing, and a cost that follows the change.

mod common;

use std::cell::Cell;

use common::*;
use stead_sql::{Param, Row, Sql, SqlError, SqliteDb};
use stead_vfs::{
    Diff, DiffMethod, DiffOptions, Operation, Oversize, PathChange, Point, Scope, TextDiff,
    TextOptions, Vfs, CHUNK_SIZE,
};

fn diff(vfs: &Vfs<'_, impl Sql>, from: Point, to: Point) -> Diff {
    vfs.diff(from, to, &DiffOptions::default()).unwrap()
}

fn changes(diff: &Diff) -> Vec<(String, PathChange)> {
    diff.entries
        .iter()
        .map(|e| (e.path.clone(), e.change))
        .collect()
}

fn text_options() -> DiffOptions {
    DiffOptions {
        text: Some(TextOptions::default()),
        ..DiffOptions::default()
    }
}

#[test]
fn every_kind_of_change_is_told_apart() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/keep", "same");
    put(&vfs, "/edit.txt", "one\ntwo\nthree\n");
    put(&vfs, "/chmod.sh", "echo");
    put(&vfs, "/gone/a", "a");
    put(&vfs, "/gone/b", "b");
    put(&vfs, "/old-name.txt", "moved content");
    put(&vfs, "/type", "was a file");
    vfs.symlink("keep", &p("/link")).unwrap();
    let a = checkpoint(&vfs);

    put(&vfs, "/edit.txt", "one\n2\nthree\n");
    vfs.chmod(&p("/chmod.sh"), 0o755).unwrap();
    vfs.remove(&p("/gone"), true).unwrap();
    vfs.mkdir(&p("/dir"), false, None).unwrap();
    vfs.rename(&p("/old-name.txt"), &p("/dir/new-name.txt"))
        .unwrap();
    vfs.remove(&p("/type"), false).unwrap();
    vfs.mkdir(&p("/type"), false, None).unwrap();
    vfs.remove(&p("/link"), false).unwrap();
    vfs.symlink("edit.txt", &p("/link")).unwrap();
    put(&vfs, "/added", "");
    let b = checkpoint(&vfs);

    let got = diff(&vfs, Point::Checkpoint(a), Point::Checkpoint(b));
    assert_eq!(got.method, DiffMethod::ChangeLog);
    assert_eq!(
        changes(&got),
        vec![
            ("/added".into(), PathChange::Added),
            ("/chmod.sh".into(), PathChange::ModeChanged),
            ("/dir".into(), PathChange::Added),
            ("/dir/new-name.txt".into(), PathChange::Moved),
            ("/edit.txt".into(), PathChange::Modified),
            ("/gone".into(), PathChange::Deleted),
            ("/gone/a".into(), PathChange::Deleted),
            ("/gone/b".into(), PathChange::Deleted),
            ("/link".into(), PathChange::Modified),
            ("/type".into(), PathChange::TypeChanged),
        ]
    );
    let moved = &got.entries[3];
    assert_eq!(moved.from.as_deref(), Some("/old-name.txt"));
    assert_eq!(moved.old.as_ref().unwrap().size, 13);
    let chmod = &got.entries[1];
    assert_eq!(
        (
            chmod.old.as_ref().unwrap().mode,
            chmod.new.as_ref().unwrap().mode
        ),
        (0o644, 0o755)
    );
    let link = &got.entries[8];
    assert_eq!(
        link.new.as_ref().unwrap().target.as_deref(),
        Some("edit.txt")
    );
    assert_eq!(got.total, 10);
    assert_eq!(got.next_after, None);

    // The other way round, everything mirrors; the full scan agrees.
    let back = diff(&vfs, Point::Checkpoint(b), Point::Checkpoint(a));
    let mirrored: Vec<(String, PathChange)> = changes(&back);
    assert!(mirrored.contains(&("/old-name.txt".into(), PathChange::Moved)));
    assert!(mirrored.contains(&("/added".into(), PathChange::Deleted)));
    assert!(mirrored.contains(&("/gone/a".into(), PathChange::Added)));
    let scanned = vfs
        .diff(
            Point::Checkpoint(a),
            Point::Checkpoint(b),
            &DiffOptions {
                full_scan: true,
                ..DiffOptions::default()
            },
        )
        .unwrap();
    assert_eq!(scanned.method, DiffMethod::FullScan);
    assert_eq!(scanned.entries, got.entries);

    // Serialised as the API shows it.
    let json = serde_json::to_value(&got).unwrap();
    assert_eq!(json["entries"][1]["change"], "mode_changed");
    assert_eq!(json["entries"][1]["new"]["mode"], "0755");
    assert_eq!(json["entries"][3]["from"], "/old-name.txt");
    assert_eq!(json["method"], "change_log");
}

#[test]
fn now_and_kept_revisions_are_points_too() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/f", "1");
    let a = checkpoint(&vfs);
    let kept = vfs.checkpoint(a).unwrap().revision;
    put(&vfs, "/f", "2");
    let unkept = vfs.revision().unwrap();
    put(&vfs, "/g", "3");

    let to_now = diff(&vfs, Point::Checkpoint(a), Point::Now);
    assert_eq!(
        changes(&to_now),
        vec![
            ("/f".into(), PathChange::Modified),
            ("/g".into(), PathChange::Added)
        ]
    );
    assert_eq!(to_now.to.checkpoint, None);
    assert_eq!(to_now.to.revision, vfs.revision().unwrap());
    assert_eq!(to_now.from.checkpoint, Some(a));
    let by_revision = diff(&vfs, Point::Revision(kept), Point::Now);
    assert_eq!(by_revision.entries, to_now.entries);
    assert_eq!(by_revision.from.checkpoint, Some(a));
    let current = vfs.revision().unwrap();
    assert!(diff(&vfs, Point::Revision(current), Point::Now)
        .entries
        .is_empty());
    assert!(diff(&vfs, Point::Now, Point::Now).entries.is_empty());

    let options = DiffOptions::default();
    let error = vfs
        .diff(Point::Revision(unkept), Point::Now, &options)
        .unwrap_err();
    assert_eq!(error.code().as_str(), "ENOENT");
    assert!(error.to_string().contains("not kept"), "{error}");
    assert_eq!(
        code(vfs.diff(Point::Revision(current + 1), Point::Now, &options)),
        "ENOENT"
    );
    assert_eq!(
        code(vfs.diff(Point::Revision(-1), Point::Now, &options)),
        "ENOENT"
    );
    assert_eq!(
        code(vfs.diff(
            Point::Checkpoint(stead_vfs::CheckpointId(77)),
            Point::Now,
            &options
        )),
        "ENOENT"
    );
    // A partial checkpoint pins no revision as a whole.
    put(&vfs, "/h", "4");
    let partial = auto(
        &vfs,
        Operation::Tool("write".into()),
        Scope::Paths(&[p("/h")]),
    );
    put(&vfs, "/h", "5");
    assert_eq!(
        code(vfs.diff(Point::Revision(partial.revision), Point::Now, &options)),
        "ENOENT"
    );
}

#[test]
fn a_partial_checkpoint_compares_only_what_it_pinned() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/scope/a", "1");
    put(&vfs, "/outside", "x");
    let partial = auto(
        &vfs,
        Operation::Tool("write".into()),
        Scope::Paths(&[p("/scope"), p("/not-yet")]),
    );
    put(&vfs, "/scope/a", "2");
    put(&vfs, "/not-yet/b", "b");
    put(&vfs, "/outside", "y");
    vfs.remove(&p("/scope"), true).unwrap();
    let got = diff(&vfs, Point::Checkpoint(partial.id), Point::Now);
    assert_eq!(
        changes(&got),
        vec![
            ("/not-yet".into(), PathChange::Added),
            ("/not-yet/b".into(), PathChange::Added),
            ("/scope".into(), PathChange::Deleted),
            ("/scope/a".into(), PathChange::Deleted),
        ]
    );
}

#[test]
fn text_diffs_are_unified_capped_and_never_binary() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/a.txt", "alpha\nbeta\ngamma\n");
    put(&vfs, "/bin", b"\x00\x01\x02".as_slice());
    put(&vfs, "/big.txt", "x\n".repeat(CHUNK_SIZE + 1));
    put(&vfs, "/latin1", b"caf\xe9\n".as_slice());
    let a = checkpoint(&vfs);
    put(&vfs, "/a.txt", "alpha\nBETA\ngamma\n");
    put(&vfs, "/bin", b"\x00\x01\x03".as_slice());
    put(&vfs, "/big.txt", "y\n".repeat(CHUNK_SIZE));
    put(&vfs, "/latin1", b"caf\xe8\n".as_slice());
    put(&vfs, "/new.txt", "hello\n");
    vfs.remove(&p("/a.txt"), false).unwrap();
    put(&vfs, "/a.txt", "alpha\nBETA\ngamma\n");

    let got = vfs
        .diff(Point::Checkpoint(a), Point::Now, &text_options())
        .unwrap();
    let text = |path: &str| {
        got.entries
            .iter()
            .find(|e| e.path == path)
            .and_then(|e| e.text.clone())
            .unwrap()
    };
    assert_eq!(
        text("/a.txt"),
        TextDiff::Unified {
            patch: "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n alpha\n-beta\n+BETA\n gamma\n"
                .into()
        }
    );
    assert_eq!(
        text("/new.txt"),
        TextDiff::Unified {
            patch: "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+hello\n".into()
        }
    );
    assert_eq!(text("/bin"), TextDiff::Binary);
    assert_eq!(text("/latin1"), TextDiff::Binary);
    assert_eq!(
        text("/big.txt"),
        TextDiff::TooLarge {
            limit: 1 << 20,
            exceeds: Oversize::File
        }
    );
}

#[test]
fn pages_follow_the_limit_and_the_text_budget() {
    let db = db();
    let vfs = vfs(&db);
    let a = checkpoint(&vfs);
    for i in 0..25 {
        put(
            &vfs,
            &format!("/f{i:02}"),
            format!("{}\n", "line ".repeat(20)),
        );
    }
    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let page = vfs
            .diff(
                Point::Checkpoint(a),
                Point::Now,
                &DiffOptions {
                    after: after.clone(),
                    limit: 10,
                    ..DiffOptions::default()
                },
            )
            .unwrap();
        assert!(page.entries.len() <= 10);
        assert_eq!(page.total, 25);
        seen.extend(page.entries.iter().map(|e| e.path.clone()));
        after = page.next_after;
        if after.is_none() {
            break;
        }
    }
    let expected: Vec<String> = (0..25).map(|i| format!("/f{i:02}")).collect();
    assert_eq!(seen, expected);

    // Each patch is ~150 bytes: a 400-byte budget holds two per page.
    let page = vfs
        .diff(
            Point::Checkpoint(a),
            Point::Now,
            &DiffOptions {
                text: Some(TextOptions {
                    max_file_bytes: 1 << 20,
                    max_page_bytes: 400,
                }),
                ..DiffOptions::default()
            },
        )
        .unwrap();
    assert_eq!(page.entries.len(), 2);
    assert_eq!(page.next_after.as_deref(), Some("/f01"));
}

#[test]
fn a_pruned_change_log_falls_back_to_a_full_scan() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/d/x", "1");
    put(&vfs, "/d/y", "2");
    let a = checkpoint(&vfs);
    put(&vfs, "/d/x", "changed");
    vfs.rename(&p("/d/y"), &p("/y")).unwrap();
    let logged = diff(&vfs, Point::Checkpoint(a), Point::Now);
    prune_log(&db);
    let scanned = diff(&vfs, Point::Checkpoint(a), Point::Now);
    assert_eq!(logged.method, DiffMethod::ChangeLog);
    assert_eq!(scanned.method, DiffMethod::FullScan);
    assert_eq!(scanned.entries, logged.entries);
    assert_eq!(
        changes(&scanned),
        vec![
            ("/d/x".into(), PathChange::Modified),
            ("/y".into(), PathChange::Moved)
        ]
    );
}

/// Counts the statements run through it.
struct Counting<'a> {
    db: &'a SqliteDb,
    statements: Cell<usize>,
}

impl Sql for Counting<'_> {
    fn query(&self, statement: &str, params: &[Param<'_>]) -> Result<Vec<Row>, SqlError> {
        self.statements.set(self.statements.get() + 1);
        self.db.query(statement, params)
    }

    fn transaction<T, E>(&self, body: impl FnOnce() -> Result<T, E>) -> Result<T, E>
    where
        E: From<SqlError>,
    {
        self.db.transaction(body)
    }
}

/// Statements a diff of two checkpoints ten files apart costs in a
/// workspace of `files` files.
fn statements_for_ten_changes(files: usize) -> usize {
    let db = db();
    let counting = Counting {
        db: &db,
        statements: Cell::new(0),
    };
    let vfs = Vfs::new(&counting, NOW);
    for i in 0..files {
        vfs.write(
            &p(&format!("/tree/d{}/f{i}", i % 20)),
            format!("file {i}").as_bytes(),
            Default::default(),
        )
        .unwrap();
    }
    let a = checkpoint(&vfs);
    for i in 0..10 {
        vfs.write(
            &p(&format!("/tree/d{}/f{}", i * 7 % 20, i * 7)),
            b"changed",
            Default::default(),
        )
        .unwrap();
    }
    let b = checkpoint(&vfs);
    counting.statements.set(0);
    let got = vfs
        .diff(
            Point::Checkpoint(a),
            Point::Checkpoint(b),
            &DiffOptions::default(),
        )
        .unwrap();
    assert_eq!(got.entries.len(), 10);
    assert!(got.entries.iter().all(|e| e.change == PathChange::Modified));
    counting.statements.get()
}

#[test]
fn a_diff_costs_what_changed_not_the_workspace() {
    let small = statements_for_ten_changes(200);
    let large = statements_for_ten_changes(2000);
    assert_eq!(small, large, "statements at 200 and 2,000 files");
}

#[test]
fn a_move_pairs_the_same_name_first_then_the_first_path() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/a/x", "same");
    put(&vfs, "/b/y", "same");
    put(&vfs, "/empty1", "");
    let a = checkpoint(&vfs);
    vfs.remove(&p("/a"), true).unwrap();
    vfs.remove(&p("/b"), true).unwrap();
    put(&vfs, "/c/y", "same");
    put(&vfs, "/d/z", "same");
    // Empty files are not told apart: no move.
    vfs.rename(&p("/empty1"), &p("/empty2")).unwrap();
    let got = diff(&vfs, Point::Checkpoint(a), Point::Now);
    let moves: Vec<(String, PathChange, Option<String>)> = got
        .entries
        .iter()
        .map(|e| (e.path.clone(), e.change, e.from.clone()))
        .collect();
    assert_eq!(
        moves,
        vec![
            ("/a".into(), PathChange::Deleted, None),
            ("/b".into(), PathChange::Deleted, None),
            ("/c".into(), PathChange::Added, None),
            // /a/x comes first by path, but /b/y has the same name.
            ("/c/y".into(), PathChange::Moved, Some("/b/y".into())),
            ("/d".into(), PathChange::Added, None),
            ("/d/z".into(), PathChange::Moved, Some("/a/x".into())),
            ("/empty1".into(), PathChange::Deleted, None),
            ("/empty2".into(), PathChange::Added, None),
        ]
    );
}
