//! `Vfs::apply_patch` on real SQLite: V4A patches and unified diffs made by
//! the real `git` and GNU `diff` (generated in each test from real files),
//! one transaction per patch, and every kind of bad input refused with its
//! typed error and nothing changed.
//!
//! The tests that use `git` and `diff` need them installed: without them
//! they fail rather than skip.

mod common;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use common::*;
use stead_patch::{Format, Malformed, MatchRule, Missing, PatchError};
use stead_sql::SqliteDb;
use stead_vfs::{ChangeKind, FileAction, Kind, VPath, Vfs, VfsError, WriteOptions};

const APP: &str = r#"import os


class Greeter:
    def __init__(self, name):
        self.name = name

    def greet(self):
        print("Hi")
        return None


class Farewell:
    def greet(self):
        print("Hi")
        return None


def main():
    Greeter("x").greet()
"#;

/// A small project under /proj.
fn project(vfs: &Vfs<'_, SqliteDb>) {
    put(vfs, "/proj/src/app.py", APP);
    put(vfs, "/proj/README.md", "# Project\n\nOld text.\n");
    put(vfs, "/proj/obsolete.txt", "bye\n");
    put(vfs, "/proj/tail.txt", "one\ntwo\nthree\n");
}

/// Every regular file below `dir`: relative path -> (content, mode).
fn files(vfs: &Vfs<'_, SqliteDb>, dir: &str) -> BTreeMap<String, (Vec<u8>, u32)> {
    let mut out = BTreeMap::new();
    for entry in tree(vfs, dir) {
        if entry.kind == Kind::File {
            let path = p(dir).join(&entry.path);
            let mode = vfs.stat(&path, false).unwrap().1.mode;
            out.insert(entry.path, (entry.data, mode));
        }
    }
    out
}

const MULTI_FILE_V4A: &str = r#"*** Begin Patch
*** Add File: docs/guide.md
+# Guide
+
+Use it.
*** Update File: src/app.py
*** Move to: src/main.py
@@ class Farewell:
@@     def greet(self):
-        print("Hi")
+        print("Bye")
@@
 def main():
-    Greeter("x").greet()
+    Greeter("y").greet()
+    Farewell().greet()
*** End of File
*** Delete File: obsolete.txt
*** Update File: README.md
@@
 # Project
 
-Old text.
+New text.
*** End Patch
"#;

#[test]
fn a_multi_file_v4a_patch_is_one_change() {
    let db = db();
    let vfs = vfs(&db);
    project(&vfs);
    let mode = vfs.stat(&p("/proj/src/app.py"), true).unwrap().1.mode;
    let before = vfs.revision().unwrap();

    let out = vfs.apply_patch(MULTI_FILE_V4A, &p("/proj"), false).unwrap();

    assert_eq!(out.format, Format::V4a);
    assert_eq!(out.revision, Some(before + 1));
    assert_eq!(vfs.revision().unwrap(), before + 1);
    let summary: Vec<_> = out
        .files
        .iter()
        .map(|f| (f.action, f.path.as_str(), f.from.as_deref()))
        .collect();
    assert_eq!(
        summary,
        [
            (FileAction::Added, "/proj/docs/guide.md", None),
            (
                FileAction::Moved,
                "/proj/src/main.py",
                Some("/proj/src/app.py")
            ),
            (FileAction::Deleted, "/proj/obsolete.txt", None),
            (FileAction::Updated, "/proj/README.md", None),
        ]
    );
    assert_eq!(
        out.summary(None),
        "Success. Updated the following files:\nA /proj/docs/guide.md\nM /proj/src/main.py\nD /proj/obsolete.txt\nM /proj/README.md\n"
    );
    assert_eq!(
        out.summary(Some(&p("/proj/src"))),
        "Success. Updated the following files:\nA /proj/docs/guide.md\nM main.py\nD /proj/obsolete.txt\nM /proj/README.md\n"
    );
    assert!(out.files.iter().all(|f| f.fuzzy.is_empty()));

    let expected_app = APP
        .replace(
            "class Farewell:\n    def greet(self):\n        print(\"Hi\")",
            "class Farewell:\n    def greet(self):\n        print(\"Bye\")",
        )
        .replace(
            "    Greeter(\"x\").greet()\n",
            "    Greeter(\"y\").greet()\n    Farewell().greet()\n",
        );
    assert_ne!(expected_app, APP);
    assert_eq!(get(&vfs, "/proj/src/main.py"), expected_app.as_bytes());
    // The first greet() (same lines, other class) is untouched.
    assert!(String::from_utf8(get(&vfs, "/proj/src/main.py"))
        .unwrap()
        .contains("class Greeter:\n    def __init__(self, name):\n        self.name = name\n\n    def greet(self):\n        print(\"Hi\")"));
    assert_eq!(
        vfs.stat(&p("/proj/src/main.py"), true).unwrap().1.mode,
        mode
    );
    assert_eq!(get(&vfs, "/proj/docs/guide.md"), b"# Guide\n\nUse it.\n");
    assert_eq!(get(&vfs, "/proj/README.md"), b"# Project\n\nNew text.\n");
    assert_eq!(code(vfs.stat(&p("/proj/src/app.py"), false)), "ENOENT");
    assert_eq!(code(vfs.stat(&p("/proj/obsolete.txt"), false)), "ENOENT");
    assert_eq!(get(&vfs, "/proj/tail.txt"), b"one\ntwo\nthree\n");

    // The change log has it all under one revision.
    let changes: Vec<_> = vfs
        .changes_since(before, 100)
        .unwrap()
        .unwrap()
        .into_iter()
        .map(|c| (c.revision, c.path, c.kind))
        .collect();
    let rev = before + 1;
    assert_eq!(
        changes,
        [
            (rev, "/proj/docs".to_string(), ChangeKind::Created),
            (rev, "/proj/docs/guide.md".to_string(), ChangeKind::Created),
            (rev, "/proj/src/main.py".to_string(), ChangeKind::Created),
            (rev, "/proj/src/app.py".to_string(), ChangeKind::Deleted),
            (rev, "/proj/obsolete.txt".to_string(), ChangeKind::Deleted),
            (rev, "/proj/README.md".to_string(), ChangeKind::Modified),
        ]
    );

    // The diff of the answer shows each change.
    let diff = &out.diff;
    for expected in [
        "--- /dev/null\n+++ b/proj/docs/guide.md\n@@ -0,0 +1,3 @@\n+# Guide\n",
        "diff --git a/proj/src/app.py b/proj/src/main.py\nrename from proj/src/app.py\nrename to proj/src/main.py\n--- a/proj/src/app.py\n+++ b/proj/src/main.py\n",
        "-        print(\"Hi\")\n+        print(\"Bye\")\n",
        "--- a/proj/obsolete.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n",
        "--- a/proj/README.md\n+++ b/proj/README.md\n",
    ] {
        assert!(diff.contains(expected), "{expected:?} not in\n{diff}");
    }
}

#[test]
fn the_answer_diff_applies_with_git_apply_and_with_apply_patch() {
    let db = db();
    let vfs = vfs(&db);
    project(&vfs);
    let original = files(&vfs, "/");
    let out = vfs.apply_patch(MULTI_FILE_V4A, &p("/proj"), false).unwrap();
    let after = files(&vfs, "/");

    // Real git applies our diff to the original tree on disk.
    let repo = tempfile::tempdir().unwrap();
    write_disk(repo.path(), &original);
    run(repo.path(), "git", &["init", "-q"]);
    std::fs::write(repo.path().join(".git/answer.diff"), &out.diff).unwrap();
    run(repo.path(), "git", &["apply", ".git/answer.diff"]);
    assert_eq!(read_disk(repo.path()), after);

    // So does this module, on a fresh copy of the original workspace; and
    // the unified diff it was given reads as a unified diff.
    let db2 = common::db();
    let vfs2 = common::vfs(&db2);
    project(&vfs2);
    let again = vfs2.apply_patch(&out.diff, &VPath::root(), false).unwrap();
    assert_eq!(again.format, Format::Unified);
    assert_eq!(files(&vfs2, "/"), after);
}

#[test]
fn git_diff_output_applies_with_renames_adds_deletes_and_modes() {
    let repo = tempfile::tempdir().unwrap();
    let dir = repo.path();
    let mut before: BTreeMap<String, (Vec<u8>, u32)> = BTreeMap::new();
    let lines = |prefix: &str, n: usize| -> String {
        (1..=n).map(|i| format!("{prefix} line {i}\n")).collect()
    };
    before.insert("src/lib.rs".into(), (lines("lib", 40).into_bytes(), 0o644));
    before.insert(
        "src/old_name.rs".into(),
        (lines("moved", 30).into_bytes(), 0o644),
    );
    before.insert(
        "docs/gone.md".into(),
        (lines("gone", 5).into_bytes(), 0o644),
    );
    before.insert("run.sh".into(), (b"#!/bin/sh\necho hi\n".to_vec(), 0o644));
    before.insert(
        "crlf.txt".into(),
        (b"one\r\ntwo\r\nthree\r\n".to_vec(), 0o644),
    );
    before.insert("no_newline.txt".into(), (b"first\nlast".to_vec(), 0o644));
    write_disk(dir, &before);
    git(dir, &["init", "-q"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "before"]);

    // The changes, made by real tools on real files.
    let edit = |name: &str, f: &dyn Fn(String) -> String| {
        let path = dir.join(name);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, f(text)).unwrap();
    };
    edit("src/lib.rs", &|t| {
        t.replace("lib line 3\n", "lib line three\n")
            .replace("lib line 20\n", "lib line 20\ninserted after 20\n")
            .replace("lib line 38\n", "")
    });
    git(dir, &["mv", "src/old_name.rs", "src/new_name.rs"]);
    edit("src/new_name.rs", &|t| {
        t.replace("moved line 15\n", "moved line fifteen\n")
    });
    git(dir, &["rm", "-q", "docs/gone.md"]);
    std::fs::create_dir_all(dir.join("docs/new")).unwrap();
    std::fs::write(dir.join("docs/new/added.md"), "# Added\n\nfresh\n").unwrap();
    std::fs::write(dir.join("empty.txt"), "").unwrap();
    std::fs::set_permissions(dir.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    edit("crlf.txt", &|t| t.replace("two\r\n", "2\r\n"));
    edit("no_newline.txt", &|t| {
        t.replace("last", "last, still no newline")
    });
    git(dir, &["add", "-A"]);
    let diff = git(
        dir,
        &["diff", "--cached", "-M", "--no-color", "--no-ext-diff"],
    );
    assert!(diff.contains("rename from src/old_name.rs"), "{diff}");
    assert!(diff.contains("new mode 100755"), "{diff}");
    assert!(diff.contains("\\ No newline at end of file"), "{diff}");
    let after = read_disk(dir);

    let db = db();
    let vfs = vfs(&db);
    load(&vfs, "/repo", &before);
    let out = vfs.apply_patch(&diff, &p("/repo"), false).unwrap();
    assert_eq!(out.format, Format::Unified);
    assert_eq!(files(&vfs, "/repo"), after);
    let actions: BTreeMap<_, _> = out
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.action))
        .collect();
    assert_eq!(actions["/repo/src/new_name.rs"], FileAction::Moved);
    assert_eq!(actions["/repo/docs/gone.md"], FileAction::Deleted);
    assert_eq!(actions["/repo/docs/new/added.md"], FileAction::Added);
    assert_eq!(actions["/repo/empty.txt"], FileAction::Added);
    assert_eq!(actions["/repo/run.sh"], FileAction::Updated);
    assert_eq!(out.files.len(), 8);
}

#[test]
fn gnu_diff_recursive_output_applies_with_adds_and_deletes() {
    let trees = tempfile::tempdir().unwrap();
    let dir = trees.path();
    let mut old: BTreeMap<String, (Vec<u8>, u32)> = BTreeMap::new();
    let mut new = BTreeMap::new();
    let text = |n: usize, f: &dyn Fn(usize) -> String| -> Vec<u8> {
        (1..=n).map(f).collect::<String>().into_bytes()
    };
    old.insert("a.c".into(), (text(50, &|i| format!("int a{i};\n")), 0o644));
    new.insert(
        "a.c".into(),
        (
            text(50, &|i| match i {
                10 => "int ten;\n".to_string(),
                40 => format!("int a{i};\nint extra;\n"),
                _ => format!("int a{i};\n"),
            }),
            0o644,
        ),
    );
    old.insert("sub/removed.h".into(), (b"#pragma once\n".to_vec(), 0o644));
    new.insert("sub/added.h".into(), (b"#define ADDED 1\n".to_vec(), 0o644));
    write_disk(&dir.join("old"), &old);
    write_disk(&dir.join("new"), &new);
    let diff = run(dir, "diff", &["-ruN", "old", "new"]);
    assert!(diff.contains("--- old/sub/added.h\t1970-01-01"), "{diff}");

    let db = db();
    let vfs = vfs(&db);
    load(&vfs, "/w", &old);
    let out = vfs.apply_patch(&diff, &p("/w"), false).unwrap();
    assert_eq!(files(&vfs, "/w"), new);
    let actions: Vec<_> = out
        .files
        .iter()
        .map(|f| (f.action, f.path.as_str()))
        .collect();
    assert_eq!(
        actions,
        [
            (FileAction::Updated, "/w/a.c"),
            (FileAction::Added, "/w/sub/added.h"),
            (FileAction::Deleted, "/w/sub/removed.h"),
        ]
    );
}

#[test]
fn a_failing_hunk_leaves_every_file_as_it_was() {
    let db = db();
    let vfs = vfs(&db);
    project(&vfs);
    let before = dump(&db);
    let patch = r#"*** Begin Patch
*** Add File: new.txt
+new
*** Delete File: obsolete.txt
*** Update File: src/app.py
@@ class Greeter:
-        self.name = name
+        self.name = name.title()
@@ def main():
-    Greeter("z").greet()
+    Greeter("y").greet()
*** End Patch
"#;
    let err = vfs.apply_patch(patch, &p("/proj"), false).unwrap_err();
    assert_eq!(err.code().as_str(), "EDIT_NO_MATCH");
    assert_eq!(err.path(), Some("/proj/src/app.py"));
    let VfsError::Patch(PatchError::HunkFailed(failed)) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(failed.hunk, 2);
    assert_eq!(failed.header, "@@ def main():");
    assert_eq!(
        failed.missing,
        Missing::Lines("    Greeter(\"z\").greet()".into())
    );
    let nearest = failed.nearest.as_ref().unwrap();
    assert_eq!(nearest.line, 20);
    assert_eq!(nearest.text, "    Greeter(\"x\").greet()");
    let message = err.to_string();
    assert!(
        message.contains("hunk #2 (@@ def main():) does not apply"),
        "{message}"
    );
    assert!(message.contains("at line 20"), "{message}");
    assert_eq!(dump(&db), before, "nothing changed");
}

#[test]
fn a_dry_run_reports_and_changes_nothing() {
    let db = db();
    let vfs = vfs(&db);
    project(&vfs);
    let before = dump(&db);
    let dry = vfs.apply_patch(MULTI_FILE_V4A, &p("/proj"), true).unwrap();
    assert_eq!(dry.revision, None);
    assert_eq!(dump(&db), before);
    let real = vfs.apply_patch(MULTI_FILE_V4A, &p("/proj"), false).unwrap();
    assert_eq!((dry.files, dry.diff), (real.files, real.diff));
}

#[test]
fn operations_see_earlier_operations_of_the_same_patch() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/a.txt", "1\n2\n3\n");
    let patch = "*** Begin Patch
*** Update File: a.txt
@@
-1
+one
*** Update File: a.txt
@@
-3
+three
*** Add File: b.txt
+b
*** Update File: b.txt
*** Move to: c.txt
@@
-b
+c
*** Delete File: a.txt
*** Add File: a.txt
+fresh
*** End Patch";
    let out = vfs.apply_patch(patch, &VPath::root(), false).unwrap();
    assert_eq!(out.files.len(), 6);
    assert_eq!(get(&vfs, "/a.txt"), b"fresh\n");
    assert_eq!(get(&vfs, "/c.txt"), b"c\n");
    assert_eq!(code(vfs.stat(&p("/b.txt"), false)), "ENOENT");
    assert!(out.diff.contains("-1\n+one\n"));
    assert!(out.diff.contains("-3\n+three\n"));
}

#[test]
fn fuzzy_hunks_are_reported_per_file() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/q.py", "def f():\n\treturn \u{201C}x\u{201D}  \n");
    let patch = "*** Begin Patch\n*** Update File: q.py\n@@ def f():\n-    return \"x\"\n+    return \"y\"\n*** End Patch\n";
    let out = vfs.apply_patch(patch, &VPath::root(), false).unwrap();
    assert_eq!(get(&vfs, "/q.py"), b"def f():\n    return \"y\"\n");
    let fuzzy = &out.files[0].fuzzy;
    assert_eq!(fuzzy.len(), 1);
    assert_eq!(
        (fuzzy[0].hunk, fuzzy[0].line, fuzzy[0].rule),
        (1, 2, MatchRule::Typography)
    );
}

#[test]
fn symlinks_are_followed_by_updates_and_removed_by_deletes() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/real.txt", "a\n");
    vfs.symlink("real.txt", &p("/link")).unwrap();
    let patch = "*** Begin Patch\n*** Update File: link\n@@\n-a\n+b\n*** End Patch";
    let out = vfs.apply_patch(patch, &VPath::root(), false).unwrap();
    assert_eq!(out.files[0].path, "/real.txt");
    assert_eq!(get(&vfs, "/real.txt"), b"b\n");
    let patch = "*** Begin Patch\n*** Delete File: link\n*** End Patch";
    vfs.apply_patch(patch, &VPath::root(), false).unwrap();
    assert_eq!(code(vfs.stat(&p("/link"), false)), "ENOENT");
    assert_eq!(get(&vfs, "/real.txt"), b"b\n");
}

#[test]
fn bad_input_is_refused_with_its_error_and_changes_nothing() {
    let db = db();
    let vfs = vfs(&db);
    project(&vfs);
    put(&vfs, "/proj/bin.dat", b"\xff\xfe\x00");
    let long = "n".repeat(300);
    let wrap = |body: &str| format!("*** Begin Patch\n{body}\n*** End Patch\n");
    let cases: Vec<(String, &str, Option<&str>)> = vec![
        ("no patch here\n".into(), "EINVAL", None),
        (
            "*** Begin Patch\n*** Add File: x\n+x\n".into(),
            "EINVAL",
            None,
        ),
        (
            wrap("*** Update File: README.md\n@@\n-Old text.\n?bad"),
            "EINVAL",
            None,
        ),
        (
            wrap("*** Update File: missing.txt\n@@\n-a\n+b"),
            "ENOENT",
            Some("/proj/missing.txt"),
        ),
        (
            wrap("*** Delete File: missing.txt"),
            "ENOENT",
            Some("/proj/missing.txt"),
        ),
        (
            wrap("*** Add File: README.md\n+again"),
            "EEXIST",
            Some("/proj/README.md"),
        ),
        (
            wrap("*** Update File: tail.txt\n*** Move to: README.md\n@@\n-one\n+1"),
            "EEXIST",
            Some("/proj/README.md"),
        ),
        (
            wrap("*** Add File: ../../escape.txt\n+x"),
            "EACCES",
            Some("../../escape.txt"),
        ),
        (
            wrap("*** Update File: ../../etc/passwd\n@@\n-root\n+x"),
            "EACCES",
            Some("../../etc/passwd"),
        ),
        (wrap("*** Add File: a\0b\n+x"), "EINVAL", Some("a\0b")),
        (
            wrap(&format!("*** Add File: {long}\n+x")),
            "ENAMETOOLONG",
            None,
        ),
        (wrap("*** Delete File: src"), "EISDIR", Some("/proj/src")),
        (
            wrap("*** Update File: bin.dat\n@@\n-x\n+y"),
            "EILSEQ",
            Some("/proj/bin.dat"),
        ),
        (
            wrap("*** Update File: tail.txt\n@@\n-four\n+4"),
            "EDIT_NO_MATCH",
            Some("/proj/tail.txt"),
        ),
        (
            "--- a/tail.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-one\n-two\n".into(),
            "EDIT_NO_MATCH",
            Some("/proj/tail.txt"),
        ),
        (
            "diff --git a/x.png b/x.png\nBinary files a/x.png and b/x.png differ\n".into(),
            "EINVAL",
            Some("x.png"),
        ),
    ];
    let before = dump(&db);
    for (patch, expected, path) in &cases {
        let err = vfs.apply_patch(patch, &p("/proj"), false).expect_err(patch);
        assert_eq!(err.code().as_str(), *expected, "{patch:?}: {err}");
        if let Some(path) = path {
            assert_eq!(err.path(), Some(*path), "{patch:?}: {err}");
        }
        assert_eq!(dump(&db), before, "{patch:?} changed the workspace");
    }
    // The malformed ones say where and what.
    let err = vfs
        .apply_patch(&cases[2].0, &p("/proj"), false)
        .unwrap_err();
    assert!(
        matches!(
            err,
            VfsError::Patch(PatchError::Malformed {
                line: 5,
                problem: Malformed::BadHunkLine { .. }
            })
        ),
        "{err:?}"
    );
    let err = vfs
        .apply_patch(&cases[14].0, &p("/proj"), false)
        .unwrap_err();
    assert!(
        matches!(
            err,
            VfsError::Patch(PatchError::DeleteMismatch { remaining: 1, .. })
        ),
        "{err:?}"
    );
}

#[test]
fn quotas_apply_to_patched_files() {
    let db = db();
    let vfs = vfs(&db).with_limits(stead_vfs::Limits {
        max_file_bytes: 10,
        ..Default::default()
    });
    vfs.write(&p("/small.txt"), b"a\n", WriteOptions::default())
        .unwrap();
    let before = dump(&db);
    let patch =
        "*** Begin Patch\n*** Update File: small.txt\n@@\n-a\n+aaaaaaaaaaaaaaaa\n*** End Patch";
    let err = vfs.apply_patch(patch, &VPath::root(), false).unwrap_err();
    assert_eq!(err.code().as_str(), "EFBIG");
    assert_eq!(dump(&db), before);
}

// ---------------------------------------------------------------------------
// Disk trees and tools
// ---------------------------------------------------------------------------

fn load(vfs: &Vfs<'_, SqliteDb>, root: &str, files: &BTreeMap<String, (Vec<u8>, u32)>) {
    for (path, (data, mode)) in files {
        let options = WriteOptions {
            mode: Some(*mode),
            create_parents: true,
        };
        vfs.write(&p(root).join(path), data, options).unwrap();
    }
}

fn write_disk(root: &Path, files: &BTreeMap<String, (Vec<u8>, u32)>) {
    for (path, (data, mode)) in files {
        let path = root.join(path.trim_start_matches('/'));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, data).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(*mode)).unwrap();
    }
}

/// Every file below `root` (but `.git`), as `files` reports the workspace.
fn read_disk(root: &Path) -> BTreeMap<String, (Vec<u8>, u32)> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, (Vec<u8>, u32)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let relative = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if relative == ".git" {
                continue;
            }
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o7777;
                out.insert(relative, (std::fs::read(&path).unwrap(), mode));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn git(dir: &Path, args: &[&str]) -> String {
    let mut all = vec![
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@example.com",
        "-c",
        "core.autocrlf=false",
    ];
    all.extend_from_slice(args);
    run(dir, "git", &all)
}

fn run(dir: &Path, program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .unwrap_or_else(|e| panic!("{program} must be installed for this test: {e}"));
    // diff exits 1 when the trees differ.
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}
