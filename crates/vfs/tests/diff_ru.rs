//! The diff of two checkpoints says what GNU `diff -rq --no-dereference`
//! says of the two trees exported to disk (modes aside, which `diff` does
//! not compare). Needs the `diff` program; without it the test fails.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use common::*;
use stead_sql::SqliteDb;
use stead_vfs::{CheckpointId, DiffOptions, Kind, PathChange, Point, Snapshot, VPath, Vfs};

/// Writes a checkpoint's tree below `dir`.
fn export(snapshot: &Snapshot<'_, '_, SqliteDb>, at: &VPath, dir: &Path) {
    for entry in snapshot.list(at, None, 100_000).unwrap() {
        let path = at.join(&entry.name);
        let local = dir.join(&entry.name);
        match entry.node.kind {
            Kind::File => std::fs::write(&local, snapshot.read_file(&path).unwrap()).unwrap(),
            Kind::Dir => {
                std::fs::create_dir(&local).unwrap();
                export(snapshot, &path, &local);
            }
            Kind::Symlink => {
                std::os::unix::fs::symlink(entry.node.target.unwrap(), &local).unwrap()
            }
        }
    }
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::File => "regular file",
        Kind::Dir => "directory",
        Kind::Symlink => "symbolic link",
    }
}

fn parent_and_name(path: &str) -> (String, String) {
    let cut = path.rfind('/').unwrap();
    (path[..cut].to_string(), path[cut + 1..].to_string())
}

/// What `diff -rq` prints for the diff of `a` to `b`: it descends only into
/// directories present on both sides, so a path is named only when its
/// parent is a directory on both.
fn expected_lines(vfs: &Vfs<'_, SqliteDb>, a: CheckpointId, b: CheckpointId) -> BTreeSet<String> {
    let options = DiffOptions {
        limit: 100_000,
        ..DiffOptions::default()
    };
    let diff = vfs
        .diff(Point::Checkpoint(a), Point::Checkpoint(b), &options)
        .unwrap();
    let mut not_both_dirs: BTreeSet<String> = BTreeSet::new();
    for entry in &diff.entries {
        if !matches!(entry.change, PathChange::Modified | PathChange::ModeChanged) {
            not_both_dirs.insert(entry.path.clone());
        }
        not_both_dirs.extend(entry.from.clone());
    }
    let shown = |path: &str| {
        let mut at = path;
        while let Some(cut) = at.rfind('/') {
            at = &at[..cut];
            if not_both_dirs.contains(at) {
                return false;
            }
        }
        true
    };
    let only_in = |side: &str, path: &str| {
        let (parent, name) = parent_and_name(path);
        format!("Only in {side}{parent}: {name}")
    };
    let mut lines = BTreeSet::new();
    for entry in &diff.entries {
        let path = entry.path.as_str();
        let old = entry.old.as_ref();
        let new = entry.new.as_ref();
        match entry.change {
            PathChange::Added if shown(path) => {
                lines.insert(only_in("b", path));
            }
            PathChange::Deleted if shown(path) => {
                lines.insert(only_in("a", path));
            }
            PathChange::Moved => {
                let from = entry.from.as_deref().unwrap();
                if shown(from) {
                    lines.insert(only_in("a", from));
                }
                if shown(path) {
                    lines.insert(only_in("b", path));
                }
            }
            PathChange::Modified if shown(path) => {
                let what = match new.unwrap().kind {
                    Kind::Symlink => "Symbolic links",
                    _ => "Files",
                };
                lines.insert(format!("{what} a{path} and b{path} differ"));
            }
            PathChange::TypeChanged if shown(path) => {
                lines.insert(format!(
                    "File a{path} is a {} while file b{path} is a {}",
                    kind_name(old.unwrap().kind),
                    kind_name(new.unwrap().kind)
                ));
            }
            _ => {}
        }
    }
    lines
}

#[test]
fn a_diff_names_what_diff_rq_names() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/src/main.rs", "fn main() {}\n");
    put(&vfs, "/src/lib.rs", "pub fn f() {}\n");
    put(&vfs, "/src/util/a.rs", "a\n");
    put(&vfs, "/src/util/b.rs", "b\n");
    put(&vfs, "/docs/readme.md", "# readme\n");
    put(&vfs, "/data.bin", b"\x00\x01\x02".as_slice());
    put(&vfs, "/was-file", "file\n");
    vfs.mkdir(&p("/was-dir/inner"), true, None).unwrap();
    put(&vfs, "/was-dir/inner/x", "x\n");
    vfs.symlink("src/main.rs", &p("/link")).unwrap();
    put(&vfs, "/to-move.txt", "moving content\n");
    let a = checkpoint(&vfs);

    put(&vfs, "/src/main.rs", "fn main() { println!(\"hi\"); }\n");
    vfs.chmod(&p("/src/lib.rs"), 0o755).unwrap();
    vfs.remove(&p("/src/util"), true).unwrap();
    put(&vfs, "/src/new/deep/file.rs", "new\n");
    put(&vfs, "/data.bin", b"\x00\x01\x03".as_slice());
    vfs.remove(&p("/was-file"), false).unwrap();
    vfs.mkdir(&p("/was-file"), false, None).unwrap();
    put(&vfs, "/was-file/child", "c\n");
    vfs.remove(&p("/was-dir"), true).unwrap();
    vfs.symlink("docs", &p("/was-dir")).unwrap();
    vfs.remove(&p("/link"), false).unwrap();
    vfs.symlink("src/lib.rs", &p("/link")).unwrap();
    vfs.rename(&p("/to-move.txt"), &p("/docs/moved.txt"))
        .unwrap();
    let b = checkpoint(&vfs);

    let dir = tempfile::tempdir().unwrap();
    for (id, side) in [(a, "a"), (b, "b")] {
        let root = dir.path().join(side);
        std::fs::create_dir(&root).unwrap();
        export(&vfs.snapshot(id).unwrap(), &VPath::root(), &root);
    }
    let output = Command::new("diff")
        .args(["-rq", "--no-dereference", "a", "b"])
        .current_dir(dir.path())
        .env("LC_ALL", "C")
        .output()
        .expect("the diff program (GNU diffutils) must be installed");
    assert_eq!(output.status.code(), Some(1), "diff found differences");
    let actual: BTreeSet<String> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let expected = expected_lines(&vfs, a, b);
    assert_eq!(expected, actual);
    assert!(actual.len() >= 9, "{actual:?}");
}
