//! Reading what the machine's real `git` wrote: every object of a
//! repository whose history `git gc` packed (deltas by offset) and of a
//! thin-pack-free `git repack` with ref deltas, byte for byte as
//! `git cat-file` prints it; and objects written here, which git reads.

mod common;

use common::{git, Disk};
use gix_hash::ObjectId;
use stead_git::Repo;

/// A repository with history worth delta-compressing: one file grown over
/// many commits, a rename, a tag.
fn history(dir: &std::path::Path) {
    git(dir, &["init", "-q", "-b", "main"]);
    let mut text = String::new();
    for i in 0..40 {
        text.push_str(&format!(
            "line {i} of a file that grows, with some words to compress\n"
        ));
        std::fs::write(dir.join("grow.txt"), &text).unwrap();
        std::fs::write(
            dir.join(format!("f{}.txt", i % 5)),
            format!("version {i}\n"),
        )
        .unwrap();
        git(dir, &["add", "-A"]);
        git(dir, &["commit", "-q", "-m", &format!("commit {i}")]);
    }
    git(dir, &["tag", "-a", "v1", "-m", "release one"]);
}

/// Every object id in the repository, with its type, as git lists them.
fn all_objects(dir: &std::path::Path) -> Vec<(ObjectId, String)> {
    let out = git(
        dir,
        &[
            "cat-file",
            "--batch-all-objects",
            "--batch-check=%(objectname) %(objecttype)",
        ],
    );
    String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| {
            let (id, kind) = l.split_once(' ').unwrap();
            (ObjectId::from_hex(id.as_bytes()).unwrap(), kind.to_string())
        })
        .collect()
}

fn check_every_object(dir: &std::path::Path) {
    let disk = Disk {
        root: dir.to_path_buf(),
    };
    let repo = Repo::open(&disk, "/");
    let objects = all_objects(dir);
    assert!(objects.len() > 100, "history has {} objects", objects.len());
    for (id, kind) in objects {
        let (found, data) = repo.odb.read(&id).unwrap();
        assert_eq!(found.to_string(), kind, "{id}");
        let expected = git(dir, &["cat-file", &kind, &id.to_string()]);
        assert_eq!(data, expected, "{id}");
    }
}

#[test]
fn reads_every_object_of_a_gc_packed_repository() {
    let dir = tempfile::tempdir().unwrap();
    history(dir.path());
    git(dir.path(), &["gc", "-q", "--aggressive"]);
    let packs: Vec<_> = std::fs::read_dir(dir.path().join(".git/objects/pack"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".pack")
        })
        .collect();
    assert_eq!(packs.len(), 1, "gc packed everything");
    check_every_object(dir.path());
}

#[test]
fn reads_ref_deltas() {
    let dir = tempfile::tempdir().unwrap();
    history(dir.path());
    // A pack written without offset deltas holds REF_DELTA entries.
    let ids = git(dir.path(), &["rev-list", "--objects", "--all"]);
    let mut pack = common::git_command(
        dir.path(),
        &[
            "pack-objects",
            "-q",
            "--no-reuse-delta",
            ".git/objects/pack/pack",
        ],
    );
    pack.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut child = pack.spawn().unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), &ids).unwrap();
    drop(child.stdin.take());
    assert!(child.wait_with_output().unwrap().status.success());
    git(dir.path(), &["prune-packed"]);
    check_every_object(dir.path());
}

#[test]
fn git_reads_objects_written_here() {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q"]);
    let disk = Disk {
        root: dir.path().to_path_buf(),
    };
    let repo = Repo::open(&disk, "/");
    let id = repo
        .odb
        .write(gix_object::Kind::Blob, b"hello from the light shell\n")
        .unwrap();
    let printed = git(dir.path(), &["cat-file", "-p", &id.to_string()]);
    assert_eq!(printed, b"hello from the light shell\n");
    git(dir.path(), &["fsck", "--strict"]);
}

#[test]
fn a_corrupt_pack_is_an_error_not_a_wrong_object() {
    let dir = tempfile::tempdir().unwrap();
    history(dir.path());
    git(dir.path(), &["gc", "-q"]);
    let pack_dir = dir.path().join(".git/objects/pack");
    let pack = std::fs::read_dir(&pack_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "pack"))
        .unwrap();
    let mut bytes = std::fs::read(&pack).unwrap();
    // Flip bytes all through the middle of the pack's data.
    for i in (bytes.len() / 4..bytes.len() * 3 / 4).step_by(7) {
        bytes[i] ^= 0x5a;
    }
    std::fs::write(&pack, bytes).unwrap();
    let disk = Disk {
        root: dir.path().to_path_buf(),
    };
    let repo = Repo::open(&disk, "/");
    // Every object reads whole and right, or as an error: never wrong.
    let mut errors = 0;
    for (id, _) in all_objects(dir.path()) {
        match repo.odb.read(&id) {
            Ok((kind, data)) => assert_eq!(stead_git::odb::hash(kind, &data), id),
            Err(_) => errors += 1,
        }
    }
    assert!(errors > 0, "the damage was seen");
}
