//! Host integration tests: the VFS on real SQLite (rusqlite, bundled), through
//! its public API only, checking the storage tables where the contract is
//! about storage (dedup, garbage collection, atomicity).

mod common;

use std::collections::HashSet;

use common::*;
use stead_sql::{params, Sql};
use stead_vfs::edit::{self, Replacement};
use stead_vfs::glob::{GlobPage, GlobRequest};
use stead_vfs::grep::{GrepCursor, GrepMode, GrepPage, GrepRequest};
use stead_vfs::read::LineRequest;
use stead_vfs::{
    Change, ChangeKind, Errno, Kind, Limits, VPath, Vfs, VfsError, WriteOptions, CHUNK_SIZE,
};

const C: usize = CHUNK_SIZE;

// ---------------------------------------------------------------------------
// Round trips
// ---------------------------------------------------------------------------

#[test]
fn write_read_round_trip_at_chunk_edges() {
    let db = db();
    let vfs = vfs(&db);
    let sizes = [0, 1, 100, C - 1, C, C + 1, 2 * C, 3 * C + C / 2];
    for (seed, &size) in sizes.iter().enumerate() {
        let path = format!("/f{size}");
        let data = noise(size, seed as u64 + 1);
        let written = put(&vfs, &path, &data);
        assert!(written.created);
        assert_eq!(written.size, size as u64);
        assert_eq!(written.path, path);
        assert_eq!(get(&vfs, &path), data, "content of {path}");
        let (real, node) = vfs.stat(&p(&path), true).unwrap();
        assert_eq!(real.as_str(), path);
        assert_eq!(node.kind, Kind::File);
        assert_eq!(node.size, size as u64);
        assert_eq!(node.mtime, NOW);
        assert_eq!(
            chunk_ids(&db, &vfs, &path).len(),
            size.div_ceil(C),
            "chunk count of {path}"
        );
    }
    // Distinct noise everywhere: one chunk row per file chunk.
    let total: usize = sizes.iter().map(|s| s.div_ceil(C)).sum();
    assert_eq!(chunks(&db), total as i64);
}

#[test]
fn empty_file() {
    let db = db();
    let vfs = vfs(&db);
    let written = put(&vfs, "/empty", b"");
    assert!(written.created);
    assert_eq!(written.size, 0);
    assert_eq!(get(&vfs, "/empty"), b"");
    let (_, node) = vfs.stat(&p("/empty"), true).unwrap();
    assert_eq!((node.kind, node.size), (Kind::File, 0));
    assert_eq!(chunks(&db), 0);
    assert_eq!(count(&db, "file_chunks"), 0);
    let (node, bytes) = vfs.read_range(&p("/empty"), 0, 100).unwrap();
    assert_eq!(node.size, 0);
    assert!(bytes.is_empty());
    let lines = vfs
        .read_lines(&p("/empty"), LineRequest::default())
        .unwrap();
    assert_eq!(lines.content, "");
    assert_eq!(lines.lines, 0);
    assert_eq!(lines.total_lines, Some(0));
    assert!(!lines.binary && !lines.truncated);

    // Emptying a file drops its chunks.
    put(&vfs, "/full", noise(C + 10, 1));
    assert_eq!(chunks(&db), 2);
    let written = put(&vfs, "/full", b"");
    assert!(!written.created);
    assert_eq!(get(&vfs, "/full"), b"");
    assert_eq!(vfs.stat(&p("/full"), true).unwrap().1.size, 0);
    assert_eq!(chunks(&db), 0);
}

#[test]
fn read_range_across_chunk_boundaries_and_past_eof() {
    let db = db();
    let vfs = vfs(&db);
    let size = 3 * C + C / 2;
    let data = noise(size, 7);
    put(&vfs, "/big", &data);
    let cases: &[(usize, usize)] = &[
        (0, 10),
        (0, C),
        (0, C + 1),
        (C - 5, 10),
        (C - 1, 1),
        (C, 1),
        (C, C),
        (2 * C - 3, C + 6), // touches three chunks
        (1, 3 * C),         // all four chunks
        (size - 5, 100),    // runs past EOF
        (size - 1, 1),
        (size, 10),       // at EOF
        (size + 100, 10), // beyond EOF
        (10, 0),          // empty range
        (0, usize::MAX),  // everything
    ];
    for &(offset, len) in cases {
        let (node, got) = vfs
            .read_range(&p("/big"), offset as u64, len as u64)
            .unwrap();
        assert_eq!(node.size, size as u64);
        let end = size.min(offset.saturating_add(len));
        let want = if offset >= end {
            &[][..]
        } else {
            &data[offset..end]
        };
        assert_eq!(got.len(), want.len(), "range ({offset}, {len}) length");
        assert!(got == want, "range ({offset}, {len}) content");
    }
    assert_eq!(code(vfs.read_range(&p("/missing"), 0, 1)), "ENOENT");
    vfs.mkdir(&p("/dir"), false, None).unwrap();
    assert_eq!(code(vfs.read_range(&p("/dir"), 0, 1)), "EISDIR");
    assert_eq!(code(vfs.read_file(&p("/dir"))), "EISDIR");
}

#[test]
fn write_mode_and_timestamps() {
    let db = db();
    let vfs = Vfs::new(&db, 5_000);
    put(&vfs, "/d/default", b"x");
    let (_, node) = vfs.stat(&p("/d/default"), true).unwrap();
    assert_eq!(node.mode, stead_vfs::FILE_MODE);
    assert_eq!(node.mtime, 5_000);
    let (_, dir) = vfs.stat(&p("/d"), true).unwrap();
    assert_eq!(dir.mode, stead_vfs::DIR_MODE);
    assert!(dir.is_dir());

    let options = WriteOptions {
        mode: Some(0o100_600),
        create_parents: true,
    };
    vfs.write(&p("/d/private"), b"x", options).unwrap();
    assert_eq!(vfs.stat(&p("/d/private"), true).unwrap().1.mode, 0o600);

    // A rewrite with a mode sets it; without one keeps it.
    let later = Vfs::new(&db, 9_000);
    let options = WriteOptions {
        mode: Some(0o755),
        create_parents: true,
    };
    later.write(&p("/d/default"), b"yy", options).unwrap();
    let (_, node) = later.stat(&p("/d/default"), true).unwrap();
    assert_eq!((node.mode, node.mtime, node.size), (0o755, 9_000, 2));
    later
        .write(&p("/d/default"), b"z", WriteOptions::default())
        .unwrap();
    assert_eq!(later.stat(&p("/d/default"), true).unwrap().1.mode, 0o755);

    later.chmod(&p("/d/default"), 0o640).unwrap();
    assert_eq!(later.stat(&p("/d/default"), true).unwrap().1.mode, 0o640);
    assert_eq!(code(later.chmod(&p("/nope"), 0o640)), "ENOENT");
}

// ---------------------------------------------------------------------------
// Content dedup and garbage collection
// ---------------------------------------------------------------------------

#[test]
fn identical_files_share_chunks_until_the_last_goes() {
    let db = db();
    let vfs = vfs(&db);
    let data = noise(2 * C + C / 2, 11);
    put(&vfs, "/a", &data);
    assert_eq!(chunks(&db), 3);
    put(&vfs, "/dir/b", &data);
    assert_eq!(chunks(&db), 3, "identical content is stored once");
    assert_eq!(chunk_ids(&db, &vfs, "/a"), chunk_ids(&db, &vfs, "/dir/b"));

    vfs.remove(&p("/a"), false).unwrap();
    assert_eq!(chunks(&db), 3, "still referenced by /dir/b");
    assert_eq!(get(&vfs, "/dir/b"), data);

    vfs.remove(&p("/dir/b"), false).unwrap();
    assert_eq!(chunks(&db), 0, "collected with the last reference");
    assert_eq!(count(&db, "file_chunks"), 0);
}

#[test]
fn repeated_chunk_within_a_file_is_stored_once() {
    let db = db();
    let vfs = vfs(&db);
    let data = vec![0u8; 3 * C];
    put(&vfs, "/zeros", &data);
    assert_eq!(chunks(&db), 1);
    let ids = chunk_ids(&db, &vfs, "/zeros");
    assert_eq!(ids.len(), 3);
    assert!(ids.iter().all(|&id| id == ids[0]));
    assert_eq!(get(&vfs, "/zeros"), data);
    let (_, range) = vfs.read_range(&p("/zeros"), C as u64 - 2, 4).unwrap();
    assert_eq!(range, vec![0; 4]);
    vfs.remove(&p("/zeros"), false).unwrap();
    assert_eq!(chunks(&db), 0);
}

#[test]
fn overwrite_collects_old_chunks_but_keeps_shared_ones() {
    let db = db();
    let vfs = vfs(&db);
    let old = noise(2 * C, 1);
    put(&vfs, "/a", &old);
    put(&vfs, "/b", &old);
    put(&vfs, "/c", noise(C + 1, 2));
    assert_eq!(chunks(&db), 4);

    // /c's chunks are referenced only by /c: they go.
    let new = noise(100, 3);
    put(&vfs, "/c", &new);
    assert_eq!(chunks(&db), 3);
    assert_eq!(get(&vfs, "/c"), new);

    // /a's chunks are shared with /b: they stay.
    put(&vfs, "/a", b"short");
    assert_eq!(chunks(&db), 4);
    assert_eq!(get(&vfs, "/b"), old);
    assert_eq!(get(&vfs, "/a"), b"short");

    // Rewriting with the same content keeps exactly the same rows.
    let before = chunk_ids(&db, &vfs, "/b");
    put(&vfs, "/b", &old);
    assert_eq!(chunk_ids(&db, &vfs, "/b"), before);
    assert_eq!(chunks(&db), 4);

    put(&vfs, "/b", b"");
    assert_eq!(chunks(&db), 2, "only /a's and /c's chunks are left");
}

#[test]
fn copy_shares_chunks_and_survives_the_original() {
    let db = db();
    let vfs = vfs(&db);
    let data = noise(2 * C + 17, 5);
    put(&vfs, "/orig", &data);
    assert_eq!(chunks(&db), 3);

    let rev = vfs.copy(&p("/orig"), &p("/copy"), false).unwrap();
    assert_eq!(rev, vfs.revision().unwrap());
    assert_eq!(chunks(&db), 3, "copy stores no new chunks");
    assert_eq!(count(&db, "file_chunks"), 6);
    assert_eq!(get(&vfs, "/copy"), data);
    let (_, copy) = vfs.stat(&p("/copy"), true).unwrap();
    let (_, orig) = vfs.stat(&p("/orig"), true).unwrap();
    assert_ne!(copy.ino, orig.ino);
    assert_eq!(copy.size, orig.size);

    vfs.remove(&p("/orig"), false).unwrap();
    assert_eq!(chunks(&db), 3);
    assert_eq!(get(&vfs, "/copy"), data);
    let (_, range) = vfs.read_range(&p("/copy"), 2 * C as u64, 100).unwrap();
    assert_eq!(range, data[2 * C..]);

    // Writing the copy does not disturb a further copy of it.
    vfs.copy(&p("/copy"), &p("/copy2"), false).unwrap();
    put(&vfs, "/copy", b"changed");
    assert_eq!(get(&vfs, "/copy2"), data);
    vfs.remove(&p("/copy2"), false).unwrap();
    assert_eq!(chunks(&db), 1, "only the chunk of \"changed\"");
}

// ---------------------------------------------------------------------------
// Append
// ---------------------------------------------------------------------------

#[test]
fn append_creates_a_missing_file_and_parents() {
    let db = db();
    let vfs = vfs(&db);
    let written = vfs
        .append(
            &p("/logs/today/app.log"),
            b"first\n",
            WriteOptions::default(),
        )
        .unwrap();
    assert!(written.created);
    assert_eq!(written.size, 6);
    assert_eq!(written.path, "/logs/today/app.log");
    assert_eq!(get(&vfs, "/logs/today/app.log"), b"first\n");
    assert!(vfs.stat(&p("/logs/today"), true).unwrap().1.is_dir());

    let written = vfs
        .append(
            &p("/logs/today/app.log"),
            b"second\n",
            WriteOptions::default(),
        )
        .unwrap();
    assert!(!written.created);
    assert_eq!(written.size, 13);
    assert_eq!(get(&vfs, "/logs/today/app.log"), b"first\nsecond\n");

    // Appending nothing to a new file makes an empty file.
    let written = vfs.append(&p("/e"), b"", WriteOptions::default()).unwrap();
    assert!(written.created);
    assert_eq!(get(&vfs, "/e"), b"");
    assert_eq!(chunks(&db), 1);
    assert_eq!(
        code(vfs.append(&p("/missing/x"), b"x", no_parents())),
        "ENOENT"
    );
}

#[test]
fn append_to_partial_last_chunk_rewrites_only_it() {
    let db = db();
    let vfs = vfs(&db);
    let mut want = noise(C + 100, 21);
    put(&vfs, "/f", &want);
    let before = chunk_ids(&db, &vfs, "/f");
    assert_eq!(chunks(&db), 2);

    let more = noise(200, 22);
    let written = vfs
        .append(&p("/f"), &more, WriteOptions::default())
        .unwrap();
    want.extend_from_slice(&more);
    assert_eq!(written.size, want.len() as u64);
    assert_eq!(get(&vfs, "/f"), want);
    let after = chunk_ids(&db, &vfs, "/f");
    assert_eq!(after.len(), 2);
    assert_eq!(after[0], before[0], "the full first chunk is untouched");
    assert_ne!(after[1], before[1]);
    assert_eq!(chunks(&db), 2, "the old partial chunk was collected");

    // An append that fills the partial chunk and spills into a new one.
    let spill = noise(C, 23);
    vfs.append(&p("/f"), &spill, WriteOptions::default())
        .unwrap();
    want.extend_from_slice(&spill);
    assert_eq!(get(&vfs, "/f"), want);
    assert_eq!(chunk_ids(&db, &vfs, "/f").len(), 3);
    assert_eq!(chunk_ids(&db, &vfs, "/f")[0], before[0]);
    assert_eq!(chunks(&db), 3);
    assert_eq!(vfs.stat(&p("/f"), true).unwrap().1.size, want.len() as u64);
}

#[test]
fn append_to_full_chunks_adds_chunks_only() {
    let db = db();
    let vfs = vfs(&db);
    let mut want = noise(2 * C, 31);
    put(&vfs, "/f", &want);
    let before = chunk_ids(&db, &vfs, "/f");

    let more = noise(10, 32);
    vfs.append(&p("/f"), &more, WriteOptions::default())
        .unwrap();
    want.extend_from_slice(&more);
    let after = chunk_ids(&db, &vfs, "/f");
    assert_eq!(after.len(), 3);
    assert_eq!(after[..2], before[..]);
    assert_eq!(chunks(&db), 3);
    assert_eq!(get(&vfs, "/f"), want);
    let (_, tail) = vfs.read_range(&p("/f"), 2 * C as u64 - 1, 100).unwrap();
    assert_eq!(tail, want[2 * C - 1..]);
}

#[test]
fn many_small_appends_equal_the_concatenation_with_minimal_chunks() {
    let db = db();
    let vfs = vfs(&db);
    let mut want = Vec::new();
    let mut seed = 100;
    while want.len() < C + C / 3 {
        seed += 1;
        let piece = noise(20_000 + (seed as usize * 7919) % 17_000, seed);
        let written = vfs
            .append(&p("/log"), &piece, WriteOptions::default())
            .unwrap();
        want.extend_from_slice(&piece);
        assert_eq!(written.size, want.len() as u64);
        assert_eq!(
            chunks(&db),
            want.len().div_ceil(C) as i64,
            "no stale partial chunks after {} bytes",
            want.len()
        );
    }
    assert_eq!(get(&vfs, "/log"), want);
    // The partial-chunk appends kept chunk boundaries aligned.
    let (_, around) = vfs.read_range(&p("/log"), C as u64 - 3, 6).unwrap();
    assert_eq!(around, want[C - 3..C + 3]);
}

#[test]
fn append_empty_data_keeps_content() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/f", b"abc");
    let written = vfs.append(&p("/f"), b"", WriteOptions::default()).unwrap();
    assert_eq!(written.size, 3);
    assert_eq!(get(&vfs, "/f"), b"abc");
    assert_eq!(chunks(&db), 1);
}

// ---------------------------------------------------------------------------
// Write errors and parent creation
// ---------------------------------------------------------------------------

#[test]
fn write_creates_parents() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/a/b/c/d.txt", b"deep");
    for dir in ["/a", "/a/b", "/a/b/c"] {
        let (real, node) = vfs.stat(&p(dir), true).unwrap();
        assert_eq!(real.as_str(), dir);
        assert_eq!(node.kind, Kind::Dir);
    }
    assert_eq!(get(&vfs, "/a/b/c/d.txt"), b"deep");
    let names: Vec<String> = vfs
        .list(&p("/a/b"), None, 10)
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, ["c"]);
    // Relative and dotted paths normalise to the same file.
    assert_eq!(get(&vfs, "a/./b/../b/c/d.txt"), b"deep");
}

#[test]
fn write_through_a_file_is_enotdir() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/f", b"file");
    let before = dump(&db);
    assert_eq!(
        code(vfs.write(&p("/f/x"), b"x", WriteOptions::default())),
        "ENOTDIR"
    );
    assert_eq!(
        code(vfs.write(&p("/f/x/y"), b"x", WriteOptions::default())),
        "ENOTDIR"
    );
    assert_eq!(code(vfs.write(&p("/f/x"), b"x", no_parents())), "ENOTDIR");
    assert_eq!(
        code(vfs.append(&p("/f/x"), b"x", WriteOptions::default())),
        "ENOTDIR"
    );
    assert_eq!(code(vfs.mkdir(&p("/f/sub"), true, None)), "ENOTDIR");
    assert_eq!(code(vfs.mkdir(&p("/f/sub"), false, None)), "ENOTDIR");
    assert_eq!(code(vfs.read_file(&p("/f/x"))), "ENOTDIR");
    assert_eq!(dump(&db), before);
    assert_eq!(get(&vfs, "/f"), b"file");
}

#[test]
fn write_to_a_directory_is_eisdir() {
    let db = db();
    let vfs = vfs(&db);
    vfs.mkdir(&p("/d"), false, None).unwrap();
    put(&vfs, "/d/inner", b"x");
    let before = dump(&db);
    assert_eq!(
        code(vfs.write(&p("/d"), b"x", WriteOptions::default())),
        "EISDIR"
    );
    assert_eq!(
        code(vfs.append(&p("/d"), b"x", WriteOptions::default())),
        "EISDIR"
    );
    assert_eq!(
        code(vfs.write(&p("/"), b"x", WriteOptions::default())),
        "EISDIR"
    );
    assert_eq!(dump(&db), before);
}

#[test]
fn write_without_create_parents() {
    let db = db();
    let vfs = vfs(&db);
    let before = dump(&db);
    assert_eq!(
        code(vfs.write(&p("/missing/x"), b"x", no_parents())),
        "ENOENT"
    );
    assert_eq!(
        code(vfs.write(&p("/m1/m2/x"), b"x", no_parents())),
        "ENOENT"
    );
    assert_eq!(dump(&db), before, "nothing was created");
    // An existing parent is enough.
    vfs.write(&p("/top"), b"x", no_parents()).unwrap();
    vfs.mkdir(&p("/d"), false, None).unwrap();
    vfs.write(&p("/d/x"), b"y", no_parents()).unwrap();
    assert_eq!(get(&vfs, "/d/x"), b"y");
}

#[test]
fn file_size_limit_is_enforced() {
    let db = db();
    let vfs = vfs(&db).with_limits(Limits {
        max_file_bytes: 10,
        ..Limits::default()
    });
    assert_eq!(vfs.limits().max_file_bytes, 10);
    put(&vfs, "/ok", b"0123456789");
    let before = dump(&db);
    assert_eq!(
        code(vfs.write(&p("/big"), b"0123456789A", WriteOptions::default())),
        "EFBIG"
    );
    assert_eq!(
        code(vfs.append(&p("/ok"), b"A", WriteOptions::default())),
        "EFBIG"
    );
    // The append creates parents and the file before it finds the file too
    // big: all of it must roll back.
    assert_eq!(
        code(vfs.append(&p("/new/dir/f"), &[b'x'; 11], WriteOptions::default())),
        "EFBIG"
    );
    assert_eq!(dump(&db), before);
    assert_eq!(code(vfs.stat(&p("/new"), true)), "ENOENT");
}

// ---------------------------------------------------------------------------
// mkdir and rm
// ---------------------------------------------------------------------------

#[test]
fn mkdir_with_and_without_parents() {
    let db = db();
    let vfs = vfs(&db);
    vfs.mkdir(&p("/a"), false, None).unwrap();
    assert!(vfs.stat(&p("/a"), true).unwrap().1.is_dir());
    assert_eq!(code(vfs.mkdir(&p("/a"), false, None)), "EEXIST");
    assert_eq!(code(vfs.mkdir(&p("/"), false, None)), "EEXIST");
    assert_eq!(code(vfs.mkdir(&p("/x/y"), false, None)), "ENOENT");
    assert_eq!(code(vfs.stat(&p("/x"), true)), "ENOENT");

    vfs.mkdir(&p("/x/y/z"), true, None).unwrap();
    for dir in ["/x", "/x/y", "/x/y/z"] {
        assert!(vfs.stat(&p(dir), true).unwrap().1.is_dir(), "{dir}");
    }
    // -p on an existing directory is fine and changes nothing in the tree.
    vfs.mkdir(&p("/x/y/z"), true, None).unwrap();
    vfs.mkdir(&p("/x"), true, None).unwrap();
    assert_eq!(tree(&vfs, "/").len(), 4);

    vfs.mkdir(&p("/m"), false, Some(0o700)).unwrap();
    assert_eq!(vfs.stat(&p("/m"), true).unwrap().1.mode, 0o700);
    vfs.mkdir(&p("/m"), true, Some(0o750)).unwrap();
    assert_eq!(vfs.stat(&p("/m"), true).unwrap().1.mode, 0o750);

    put(&vfs, "/file", b"x");
    assert_eq!(code(vfs.mkdir(&p("/file"), false, None)), "EEXIST");
    vfs.symlink("/nowhere", &p("/dangling")).unwrap();
    assert_eq!(code(vfs.mkdir(&p("/dangling"), false, None)), "EEXIST");
}

#[test]
fn rm_file_and_empty_dir() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/d/f", noise(100, 1));
    assert_eq!(chunks(&db), 1);
    vfs.remove(&p("/d/f"), false).unwrap();
    assert_eq!(code(vfs.stat(&p("/d/f"), true)), "ENOENT");
    assert_eq!(chunks(&db), 0);
    assert!(vfs.list(&p("/d"), None, 10).unwrap().is_empty());
    vfs.remove(&p("/d"), false).unwrap();
    assert_eq!(code(vfs.stat(&p("/d"), true)), "ENOENT");
    assert_eq!(count(&db, "nodes"), 1, "only the root is left");
    assert_eq!(count(&db, "dirents"), 0);
    assert_eq!(code(vfs.remove(&p("/d"), false)), "ENOENT");
    assert_eq!(code(vfs.remove(&p("/d/f"), true)), "ENOENT");
}

#[test]
fn rm_non_empty_dir_needs_recursive() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/d/f", b"x");
    let before = dump(&db);
    assert_eq!(code(vfs.remove(&p("/d"), false)), "ENOTEMPTY");
    assert_eq!(dump(&db), before);
    assert_eq!(get(&vfs, "/d/f"), b"x");
}

#[test]
fn rm_recursive_deep_tree_collects_everything_below() {
    let db = db();
    let vfs = vfs(&db);
    let shared = noise(C + 5, 40);
    put(&vfs, "/keep/shared", &shared);
    let mut path = String::from("/t");
    for depth in 0..8 {
        path.push_str(&format!("/level{depth}"));
        put(
            &vfs,
            &format!("{path}/file"),
            noise(C / 2 + depth, depth as u64 + 41),
        );
        put(&vfs, &format!("{path}/empty"), b"");
        vfs.mkdir(&p(&format!("{path}/emptydir")), false, None)
            .unwrap();
        vfs.symlink("/keep/shared", &p(&format!("{path}/link")))
            .unwrap();
    }
    put(&vfs, "/t/level0/same-as-keep", &shared);
    assert_eq!(chunks(&db), 2 + 8);

    vfs.remove(&p("/t"), true).unwrap();
    assert_eq!(code(vfs.stat(&p("/t"), false)), "ENOENT");
    assert_eq!(chunks(&db), 2, "only /keep/shared's chunks remain");
    assert_eq!(get(&vfs, "/keep/shared"), shared);
    // Only the root, /keep and /keep/shared are left, with no dangling rows.
    assert_eq!(count(&db, "nodes"), 3);
    assert_eq!(count(&db, "dirents"), 2);
    assert_eq!(count(&db, "file_chunks"), 2);
    let names: Vec<String> = vfs
        .list(&p("/"), None, 10)
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, ["keep"]);
}

#[test]
fn rm_root_is_ebusy() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/f", b"x");
    let before = dump(&db);
    assert_eq!(code(vfs.remove(&p("/"), true)), "EBUSY");
    assert_eq!(code(vfs.remove(&p("/"), false)), "EBUSY");
    assert_eq!(code(vfs.remove(&p("/a/.."), true)), "EBUSY");
    assert_eq!(dump(&db), before);
}

// ---------------------------------------------------------------------------
// rename
// ---------------------------------------------------------------------------

#[test]
fn rename_file() {
    let db = db();
    let vfs = vfs(&db);
    let data = noise(C + 3, 50);
    put(&vfs, "/a", &data);
    vfs.mkdir(&p("/d"), false, None).unwrap();
    let ino = vfs.stat(&p("/a"), true).unwrap().1.ino;
    vfs.rename(&p("/a"), &p("/d/b")).unwrap();
    assert_eq!(code(vfs.stat(&p("/a"), false)), "ENOENT");
    assert_eq!(get(&vfs, "/d/b"), data);
    assert_eq!(vfs.stat(&p("/d/b"), true).unwrap().1.ino, ino);
    assert_eq!(chunks(&db), 2);

    assert_eq!(code(vfs.rename(&p("/a"), &p("/c"))), "ENOENT");
    assert_eq!(code(vfs.rename(&p("/d/b"), &p("/no/such/c"))), "ENOENT");
    // Renaming onto itself changes nothing.
    vfs.rename(&p("/d/b"), &p("/d/../d/b")).unwrap();
    assert_eq!(get(&vfs, "/d/b"), data);
}

#[test]
fn rename_whole_subtree() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/src/a/b/c.txt", b"c");
    put(&vfs, "/src/a/d.txt", b"d");
    put(&vfs, "/src/e.txt", b"e");
    vfs.symlink("a/d.txt", &p("/src/rel-link")).unwrap();
    let want = tree(&vfs, "/src");
    let ino = vfs.stat(&p("/src"), true).unwrap().1.ino;
    let nodes = count(&db, "nodes");

    vfs.mkdir(&p("/dst"), false, None).unwrap();
    vfs.rename(&p("/src"), &p("/dst/moved")).unwrap();
    assert_eq!(code(vfs.stat(&p("/src"), false)), "ENOENT");
    assert_eq!(code(vfs.read_file(&p("/src/a/b/c.txt"))), "ENOENT");
    assert_eq!(tree(&vfs, "/dst/moved"), want);
    assert_eq!(get(&vfs, "/dst/moved/a/b/c.txt"), b"c");
    assert_eq!(vfs.stat(&p("/dst/moved"), true).unwrap().1.ino, ino);
    // A relative link moves with its directory.
    assert_eq!(get(&vfs, "/dst/moved/rel-link"), b"d");
    assert_eq!(count(&db, "nodes"), nodes + 1, "only /dst was added");
}

#[test]
fn rename_over_existing_file_replaces_and_collects() {
    let db = db();
    let vfs = vfs(&db);
    let a = noise(2 * C, 60);
    put(&vfs, "/a", &a);
    put(&vfs, "/b", noise(2 * C, 61));
    assert_eq!(chunks(&db), 4);
    vfs.rename(&p("/a"), &p("/b")).unwrap();
    assert_eq!(get(&vfs, "/b"), a);
    assert_eq!(code(vfs.stat(&p("/a"), false)), "ENOENT");
    assert_eq!(chunks(&db), 2, "the replaced file's chunks are collected");
    assert_eq!(count(&db, "nodes"), 2);
}

#[test]
fn rename_dir_over_empty_dir_replaces_it() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/a/f", b"f");
    vfs.mkdir(&p("/b"), false, None).unwrap();
    vfs.rename(&p("/a"), &p("/b")).unwrap();
    assert_eq!(get(&vfs, "/b/f"), b"f");
    assert_eq!(code(vfs.stat(&p("/a"), false)), "ENOENT");
    assert_eq!(count(&db, "nodes"), 3);
}

#[test]
fn rename_dir_over_non_empty_dir_is_enotempty_and_atomic() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/a/f", b"a");
    put(&vfs, "/b/g", noise(C + 1, 62));
    let before = dump(&db);
    let revision = vfs.revision().unwrap();
    assert_eq!(code(vfs.rename(&p("/a"), &p("/b"))), "ENOTEMPTY");
    assert_eq!(vfs.revision().unwrap(), revision);
    assert_eq!(dump(&db), before);
    assert_eq!(get(&vfs, "/a/f"), b"a");
}

#[test]
fn rename_dir_into_its_own_subtree_is_einval() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/a/b/f", b"x");
    vfs.symlink("/a/b", &p("/link")).unwrap();
    let before = dump(&db);
    assert_eq!(code(vfs.rename(&p("/a"), &p("/a/b/c"))), "EINVAL");
    assert_eq!(code(vfs.rename(&p("/a"), &p("/a/new"))), "EINVAL");
    // Through a symlink into the subtree, too.
    assert_eq!(code(vfs.rename(&p("/a"), &p("/link/c"))), "EINVAL");
    assert_eq!(dump(&db), before);
}

#[test]
fn rename_file_over_dir_and_dir_over_file() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/f", b"f");
    vfs.mkdir(&p("/d"), false, None).unwrap();
    let before = dump(&db);
    assert_eq!(code(vfs.rename(&p("/f"), &p("/d"))), "EISDIR");
    assert_eq!(code(vfs.rename(&p("/d"), &p("/f"))), "ENOTDIR");
    assert_eq!(code(vfs.rename(&p("/"), &p("/x"))), "EBUSY");
    assert_eq!(code(vfs.rename(&p("/f"), &p("/"))), "EBUSY");
    assert_eq!(dump(&db), before);
}

#[test]
fn rename_moves_a_symlink_not_its_target() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/target", b"t");
    vfs.symlink("/target", &p("/link")).unwrap();
    vfs.rename(&p("/link"), &p("/moved")).unwrap();
    assert_eq!(vfs.readlink(&p("/moved")).unwrap(), "/target");
    assert_eq!(get(&vfs, "/target"), b"t");
    assert_eq!(code(vfs.stat(&p("/link"), false)), "ENOENT");
}

// ---------------------------------------------------------------------------
// copy
// ---------------------------------------------------------------------------

#[test]
fn copy_recursive_tree() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/src/a.txt", b"a");
    put(&vfs, "/src/sub/big", noise(2 * C + 9, 70));
    put(&vfs, "/src/sub/empty", b"");
    vfs.mkdir(&p("/src/emptydir"), false, Some(0o700)).unwrap();
    vfs.symlink("../a.txt", &p("/src/sub/link")).unwrap();
    let want = tree(&vfs, "/src");
    let chunk_rows = chunks(&db);

    vfs.copy(&p("/src"), &p("/dst"), true).unwrap();
    assert_eq!(tree(&vfs, "/dst"), want);
    assert_eq!(tree(&vfs, "/src"), want, "the source is untouched");
    assert_eq!(chunks(&db), chunk_rows, "a copy stores no new chunks");
    assert_eq!(vfs.readlink(&p("/dst/sub/link")).unwrap(), "../a.txt");
    assert_eq!(vfs.stat(&p("/dst/emptydir"), true).unwrap().1.mode, 0o700);
    // Symlinks are copied as links: the copy's link resolves in the copy.
    assert_eq!(
        vfs.stat(&p("/dst/sub/link"), true).unwrap().0.as_str(),
        "/dst/a.txt"
    );

    // The copies are independent.
    put(&vfs, "/dst/a.txt", b"changed");
    vfs.remove(&p("/src/sub"), true).unwrap();
    assert_eq!(get(&vfs, "/src/a.txt"), b"a");
    assert_eq!(get(&vfs, "/dst/sub/big"), want[3].data);
    assert_eq!(chunks(&db), chunk_rows + 1);
}

#[test]
fn copy_errors() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/d/f", b"x");
    put(&vfs, "/file", b"y");
    vfs.mkdir(&p("/other"), false, None).unwrap();
    let before = dump(&db);
    assert_eq!(code(vfs.copy(&p("/d"), &p("/e"), false)), "EISDIR");
    assert_eq!(code(vfs.copy(&p("/d"), &p("/d/inside"), true)), "EINVAL");
    assert_eq!(code(vfs.copy(&p("/d"), &p("/other"), true)), "EEXIST");
    assert_eq!(code(vfs.copy(&p("/d"), &p("/file"), true)), "EEXIST");
    assert_eq!(code(vfs.copy(&p("/file"), &p("/other"), false)), "EEXIST");
    assert_eq!(code(vfs.copy(&p("/missing"), &p("/x"), false)), "ENOENT");
    assert_eq!(
        code(vfs.copy(&p("/file"), &p("/no/dir/x"), false)),
        "ENOENT"
    );
    assert_eq!(dump(&db), before);
}

#[test]
fn copy_over_existing_file_replaces_it() {
    let db = db();
    let vfs = vfs(&db);
    let a = noise(C + 1, 80);
    put(&vfs, "/a", &a);
    put(&vfs, "/b", noise(C + 1, 81));
    assert_eq!(chunks(&db), 4);
    vfs.copy(&p("/a"), &p("/b"), false).unwrap();
    assert_eq!(get(&vfs, "/b"), a);
    assert_eq!(get(&vfs, "/a"), a);
    assert_eq!(chunks(&db), 2, "/b's old chunks are collected");
    // A copy onto itself leaves the file intact.
    vfs.copy(&p("/a"), &p("/a"), false).unwrap();
    assert_eq!(get(&vfs, "/a"), a);
}

#[test]
fn copy_follows_a_symlink_source() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/real", b"content");
    vfs.symlink("/real", &p("/link")).unwrap();
    vfs.copy(&p("/link"), &p("/copy"), false).unwrap();
    let (_, node) = vfs.stat(&p("/copy"), false).unwrap();
    assert_eq!(node.kind, Kind::File);
    assert_eq!(get(&vfs, "/copy"), b"content");
}

// ---------------------------------------------------------------------------
// Symlinks
// ---------------------------------------------------------------------------

#[test]
fn readlink_and_stat_follow_vs_no_follow() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/dir/target.txt", b"hello");
    vfs.symlink("dir/target.txt", &p("/link")).unwrap();
    assert_eq!(vfs.readlink(&p("/link")).unwrap(), "dir/target.txt");

    let (real, node) = vfs.stat(&p("/link"), false).unwrap();
    assert_eq!(real.as_str(), "/link");
    assert_eq!(node.kind, Kind::Symlink);
    assert_eq!(node.size, "dir/target.txt".len() as u64);
    assert_eq!(node.target.as_deref(), Some("dir/target.txt"));
    assert_eq!(node.mode, stead_vfs::SYMLINK_MODE);

    let (real, node) = vfs.stat(&p("/link"), true).unwrap();
    assert_eq!(real.as_str(), "/dir/target.txt");
    assert_eq!(node.kind, Kind::File);
    assert_eq!(node.size, 5);
    assert_eq!(get(&vfs, "/link"), b"hello");

    assert_eq!(code(vfs.readlink(&p("/dir/target.txt"))), "EINVAL");
    assert_eq!(code(vfs.readlink(&p("/dir"))), "EINVAL");
    assert_eq!(code(vfs.readlink(&p("/missing"))), "ENOENT");
    assert_eq!(code(vfs.symlink("x", &p("/link"))), "EEXIST");
    assert_eq!(code(vfs.symlink("x", &p("/dir"))), "EEXIST");
    assert_eq!(code(vfs.symlink("", &p("/empty-target"))), "EINVAL");
    assert_eq!(code(vfs.symlink("x", &p("/no/parent"))), "ENOENT");

    // A link to a directory works as a path component.
    vfs.symlink("/dir", &p("/dirlink")).unwrap();
    assert_eq!(get(&vfs, "/dirlink/target.txt"), b"hello");
    let names: Vec<String> = vfs
        .list(&p("/dirlink"), None, 10)
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, ["target.txt"]);
    // A link in the middle of a path is followed even without follow.
    let (real, _) = vfs.stat(&p("/dirlink/target.txt"), false).unwrap();
    assert_eq!(real.as_str(), "/dir/target.txt");
}

#[test]
fn write_through_a_symlink_writes_its_target() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/real/file", b"old");
    vfs.symlink("/real/file", &p("/link")).unwrap();
    let written = put(&vfs, "/link", b"new");
    assert_eq!(written.path, "/real/file");
    assert!(!written.created);
    assert_eq!(get(&vfs, "/real/file"), b"new");
    assert_eq!(vfs.stat(&p("/link"), false).unwrap().1.kind, Kind::Symlink);

    let written = vfs
        .append(&p("/link"), b"er", WriteOptions::default())
        .unwrap();
    assert_eq!(written.path, "/real/file");
    assert_eq!(get(&vfs, "/real/file"), b"newer");

    // Through a directory link; and a dangling link creates its target.
    vfs.symlink("/real", &p("/dirlink")).unwrap();
    let written = put(&vfs, "/dirlink/other", b"o");
    assert_eq!(written.path, "/real/other");
    assert!(written.created);
    vfs.symlink("/real/later", &p("/dangling")).unwrap();
    assert_eq!(code(vfs.stat(&p("/dangling"), true)), "ENOENT");
    let written = put(&vfs, "/dangling", b"l");
    assert_eq!(written.path, "/real/later");
    assert_eq!(get(&vfs, "/real/later"), b"l");
    assert_eq!(
        vfs.stat(&p("/dangling"), false).unwrap().1.kind,
        Kind::Symlink
    );
}

#[test]
fn symlink_loops_are_eloop() {
    let db = db();
    let vfs = vfs(&db);
    vfs.symlink("/b", &p("/a")).unwrap();
    vfs.symlink("/a", &p("/b")).unwrap();
    vfs.symlink("self", &p("/self")).unwrap();
    assert_eq!(code(vfs.stat(&p("/a"), true)), "ELOOP");
    assert_eq!(code(vfs.read_file(&p("/a"))), "ELOOP");
    assert_eq!(code(vfs.read_file(&p("/self"))), "ELOOP");
    assert_eq!(code(vfs.stat(&p("/a/x"), false)), "ELOOP");
    let before = dump(&db);
    assert_eq!(
        code(vfs.write(&p("/a"), b"x", WriteOptions::default())),
        "ELOOP"
    );
    assert_eq!(
        code(vfs.write(&p("/self/x"), b"x", WriteOptions::default())),
        "ELOOP"
    );
    assert_eq!(code(vfs.mkdir(&p("/a/x"), true, None)), "ELOOP");
    assert_eq!(dump(&db), before);
    // Without following, the links themselves are fine.
    assert_eq!(vfs.stat(&p("/a"), false).unwrap().1.kind, Kind::Symlink);
    assert_eq!(vfs.readlink(&p("/self")).unwrap(), "self");
    vfs.remove(&p("/a"), false).unwrap();
    assert_eq!(code(vfs.stat(&p("/b"), true)), "ENOENT");
}

#[test]
fn symlink_chain_of_forty_resolves_and_forty_one_loops() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/file", b"end");
    // /l1 -> /l2 -> ... -> /l40 -> /file: 40 follows.
    for i in 1..=40 {
        let target = if i == 40 {
            "/file".to_string()
        } else {
            format!("/l{}", i + 1)
        };
        vfs.symlink(&target, &p(&format!("/l{i}"))).unwrap();
    }
    assert_eq!(get(&vfs, "/l1"), b"end");
    vfs.symlink("/l1", &p("/l0")).unwrap();
    assert_eq!(code(vfs.read_file(&p("/l0"))), "ELOOP");
}

#[test]
fn symlink_targets_stay_inside_the_root() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/secret", b"inside");
    put(&vfs, "/etc/passwd", b"workspace passwd");
    vfs.mkdir(&p("/a/b"), true, None).unwrap();
    vfs.symlink("../../../../../../secret", &p("/a/b/up"))
        .unwrap();
    vfs.symlink("/etc/passwd", &p("/a/abs")).unwrap();
    vfs.symlink("../../../../..", &p("/a/b/root")).unwrap();

    assert_eq!(
        vfs.readlink(&p("/a/b/up")).unwrap(),
        "../../../../../../secret"
    );
    let (real, _) = vfs.stat(&p("/a/b/up"), true).unwrap();
    assert_eq!(real.as_str(), "/secret");
    assert_eq!(get(&vfs, "/a/b/up"), b"inside");
    assert_eq!(get(&vfs, "/a/abs"), b"workspace passwd");
    let (real, node) = vfs.stat(&p("/a/b/root"), true).unwrap();
    assert_eq!(real.as_str(), "/");
    assert!(node.is_dir());
    assert_eq!(get(&vfs, "/a/b/root/secret"), b"inside");

    // Writes through the escaping link land inside the workspace.
    let written = put(&vfs, "/a/b/up", b"rewritten");
    assert_eq!(written.path, "/secret");
    let written = put(&vfs, "/a/b/root/etc/new", b"n");
    assert_eq!(written.path, "/etc/new");
    assert_eq!(get(&vfs, "/etc/new"), b"n");
    // A caller's own `..` above the root is refused, not clamped.
    assert_eq!(
        VPath::parse("/a/../../secret").unwrap_err().code(),
        Errno::Eacces
    );
}

#[test]
fn rm_of_a_symlink_removes_the_link_not_the_target() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/file", b"f");
    put(&vfs, "/dir/inner", b"i");
    vfs.symlink("/file", &p("/flink")).unwrap();
    vfs.symlink("/dir", &p("/dlink")).unwrap();
    vfs.remove(&p("/flink"), false).unwrap();
    vfs.remove(&p("/dlink"), true).unwrap();
    assert_eq!(code(vfs.stat(&p("/flink"), false)), "ENOENT");
    assert_eq!(code(vfs.stat(&p("/dlink"), false)), "ENOENT");
    assert_eq!(get(&vfs, "/file"), b"f");
    assert_eq!(get(&vfs, "/dir/inner"), b"i");
    assert_eq!(chunks(&db), 2);
    // Removing through a directory link removes the real entry.
    vfs.symlink("/dir", &p("/dlink")).unwrap();
    vfs.remove(&p("/dlink/inner"), false).unwrap();
    assert_eq!(code(vfs.stat(&p("/dir/inner"), false)), "ENOENT");
    assert!(vfs.stat(&p("/dir"), false).unwrap().1.is_dir());
}

// ---------------------------------------------------------------------------
// list
// ---------------------------------------------------------------------------

#[test]
fn list_pages_in_name_order() {
    let db = db();
    let vfs = vfs(&db);
    let mut names: Vec<String> = [
        "b", "a", "B", "a0", "_x", "z", "é", "10", "9", "a.b", "a-b", "A", "zz", "0",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for (i, name) in names.iter().enumerate() {
        if i % 3 == 0 {
            vfs.mkdir(&p(&format!("/dir/{name}")), true, None).unwrap();
        } else {
            put(&vfs, &format!("/dir/{name}"), name.as_bytes());
        }
    }
    names.sort(); // byte order, as SQLite's BINARY collation
    let all: Vec<String> = vfs
        .list(&p("/dir"), None, 1000)
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(all, names);

    for limit in [1, 2, 3, 5, 13, 14, 100] {
        let mut got = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let page = vfs.list(&p("/dir"), after.as_deref(), limit).unwrap();
            assert!(page.len() <= limit);
            if page.is_empty() {
                break;
            }
            after = Some(page.last().unwrap().name.clone());
            got.extend(page.into_iter().map(|e| e.name));
        }
        assert_eq!(got, names, "pages of {limit}");
    }
    // `after` need not name an existing entry.
    let page = vfs.list(&p("/dir"), Some("a00"), 2).unwrap();
    let page: Vec<&str> = page.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(page, ["b", "z"]);
    // Entries carry their nodes.
    let entry = vfs.list(&p("/dir"), Some("9"), 1).unwrap().pop().unwrap();
    assert_eq!(entry.name, "A");
    assert_eq!((entry.node.kind, entry.node.size), (Kind::File, 1));
    assert!(vfs.list(&p("/dir"), None, 0).unwrap().is_empty());
    assert_eq!(code(vfs.list(&p("/dir/a"), None, 10)), "ENOTDIR");
    assert_eq!(code(vfs.list(&p("/nope"), None, 10)), "ENOENT");
}

// ---------------------------------------------------------------------------
// Revisions and atomicity
// ---------------------------------------------------------------------------

#[test]
fn revision_increments_once_per_mutating_op() {
    let db = db();
    let vfs = vfs(&db);
    assert_eq!(vfs.revision().unwrap(), 0);
    let expected = std::cell::Cell::new(0);
    let step = |rev: i64, what: &str| {
        expected.set(expected.get() + 1);
        assert_eq!(rev, expected.get(), "{what} returned the wrong revision");
        assert_eq!(vfs.revision().unwrap(), expected.get(), "{what}");
    };
    step(put(&vfs, "/a/b/f", b"x").revision, "write with parents");
    step(put(&vfs, "/a/b/f", noise(C + 1, 1)).revision, "overwrite");
    let appended = vfs
        .append(&p("/a/b/f"), b"y", WriteOptions::default())
        .unwrap();
    step(appended.revision, "append");
    step(vfs.mkdir(&p("/d"), false, None).unwrap(), "mkdir");
    step(vfs.mkdir(&p("/d/e/f"), true, None).unwrap(), "mkdir -p");
    step(vfs.symlink("/a", &p("/l")).unwrap(), "symlink");
    step(vfs.chmod(&p("/a/b/f"), 0o600).unwrap(), "chmod");
    step(vfs.copy(&p("/a"), &p("/c"), true).unwrap(), "copy");
    step(vfs.rename(&p("/c"), &p("/d/c")).unwrap(), "rename");
    step(vfs.remove(&p("/d"), true).unwrap(), "remove");

    let upload = vfs
        .begin_upload(&p("/up"), WriteOptions::default())
        .unwrap();
    vfs.stage_chunk(upload, 0, b"data").unwrap();
    assert_eq!(
        vfs.revision().unwrap(),
        expected.get(),
        "staging is not a change"
    );
    let committed = vfs
        .commit_upload(upload, &p("/up"), 4, WriteOptions::default())
        .unwrap();
    step(committed.revision, "commit_upload");

    // Reads change nothing.
    let before = dump(&db);
    vfs.read_file(&p("/a/b/f")).unwrap();
    vfs.read_range(&p("/a/b/f"), 1, 10).unwrap();
    vfs.stat(&p("/l"), true).unwrap();
    vfs.readlink(&p("/l")).unwrap();
    vfs.list(&p("/"), None, 10).unwrap();
    vfs.read_lines(&p("/up"), LineRequest::default()).unwrap();
    vfs.changes_since(0, 100).unwrap();
    vfs.glob(&glob_request("**")).unwrap();
    vfs.grep(&grep_request("x")).unwrap();
    assert_eq!(dump(&db), before);

    // The node and its directory are stamped with the revision.
    let rev = put(&vfs, "/a/b/new", b"n").revision;
    assert_eq!(vfs.stat(&p("/a/b/new"), true).unwrap().1.rev, rev);
    assert_eq!(vfs.stat(&p("/a/b"), true).unwrap().1.rev, rev);
}

#[test]
fn failed_ops_change_nothing() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/a/f", noise(C + 1, 1));
    put(&vfs, "/b/g", noise(10, 2));
    put(&vfs, "/file", b"file");
    vfs.mkdir(&p("/empty"), false, None).unwrap();
    vfs.symlink("/a", &p("/link")).unwrap();
    let before = dump(&db);
    let revision = vfs.revision().unwrap();
    let chunk_rows = chunks(&db);

    let failures: Vec<(&str, &str)> = vec![
        ("ENOTEMPTY", code(vfs.rename(&p("/a"), &p("/b")))),
        ("EINVAL", code(vfs.rename(&p("/a"), &p("/a/sub")))),
        ("EISDIR", code(vfs.rename(&p("/file"), &p("/empty")))),
        ("ENOTDIR", code(vfs.rename(&p("/empty"), &p("/file")))),
        ("ENOENT", code(vfs.rename(&p("/nope"), &p("/x")))),
        (
            "ENOTDIR",
            code(vfs.write(&p("/file/x/y"), b"data", WriteOptions::default())),
        ),
        (
            "EISDIR",
            code(vfs.write(&p("/a"), b"data", WriteOptions::default())),
        ),
        (
            "EISDIR",
            code(vfs.write(&p("/link"), b"data", WriteOptions::default())),
        ),
        ("ENOENT", code(vfs.write(&p("/q/r"), b"data", no_parents()))),
        ("ENOTEMPTY", code(vfs.remove(&p("/a"), false))),
        ("ENOENT", code(vfs.remove(&p("/nope"), true))),
        ("EBUSY", code(vfs.remove(&p("/"), true))),
        ("EEXIST", code(vfs.mkdir(&p("/a"), false, None))),
        ("ENOTDIR", code(vfs.mkdir(&p("/file/x/y"), true, None))),
        ("EISDIR", code(vfs.copy(&p("/a"), &p("/z"), false))),
        ("EINVAL", code(vfs.copy(&p("/a"), &p("/link/z"), true))),
        ("EEXIST", code(vfs.copy(&p("/a"), &p("/b"), true))),
        ("EEXIST", code(vfs.symlink("/x", &p("/file")))),
        ("ENOENT", code(vfs.chmod(&p("/nope"), 0o600))),
    ];
    for (want, got) in &failures {
        assert_eq!(got, want);
    }
    assert_eq!(vfs.revision().unwrap(), revision);
    assert_eq!(chunks(&db), chunk_rows);
    assert_eq!(dump(&db), before);
}

#[test]
fn failed_upload_commit_changes_nothing() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/target", b"old");
    let upload = vfs
        .begin_upload(&p("/target"), WriteOptions::default())
        .unwrap();
    vfs.stage_chunk(upload, 0, b"new content").unwrap();
    // The target became a directory while the upload was in flight.
    vfs.remove(&p("/target"), false).unwrap();
    vfs.mkdir(&p("/target"), false, None).unwrap();
    let before = dump(&db);
    assert_eq!(
        code(vfs.commit_upload(upload, &p("/target"), 11, WriteOptions::default())),
        "EISDIR"
    );
    assert_eq!(dump(&db), before);
    vfs.abort_upload(upload).unwrap();
    assert_eq!(chunks(&db), 0);
    assert_eq!(count(&db, "upload_chunks"), 0);
}

// ---------------------------------------------------------------------------
// Change log
// ---------------------------------------------------------------------------

fn change(revision: i64, path: &str, kind: ChangeKind) -> Change {
    Change {
        revision,
        path: path.to_string(),
        kind,
    }
}

#[test]
fn changes_since_reports_paths_and_revisions() {
    use ChangeKind::{Created, Deleted, Modified};
    let db = db();
    let vfs = vfs(&db);
    assert_eq!(vfs.changes_since(0, 100).unwrap(), Some(vec![]));
    put(&vfs, "/a/b/c.txt", b"1"); // 1
    put(&vfs, "/a/b/c.txt", b"2"); // 2
    vfs.append(&p("/a/b/c.txt"), b"3", WriteOptions::default())
        .unwrap(); // 3
    vfs.mkdir(&p("/d"), false, None).unwrap(); // 4
    vfs.rename(&p("/a/b/c.txt"), &p("/d/c.txt")).unwrap(); // 5
    vfs.copy(&p("/d/c.txt"), &p("/d/e.txt"), false).unwrap(); // 6
    vfs.symlink("/d", &p("/l")).unwrap(); // 7
    put(&vfs, "/l/e.txt", b"via link"); // 8
    vfs.chmod(&p("/d/e.txt"), 0o600).unwrap(); // 9
    vfs.remove(&p("/a"), true).unwrap(); // 10
    vfs.mkdir(&p("/x/y"), true, None).unwrap(); // 11

    let all = vec![
        change(1, "/a", Created),
        change(1, "/a/b", Created),
        change(1, "/a/b/c.txt", Created),
        change(2, "/a/b/c.txt", Modified),
        change(3, "/a/b/c.txt", Modified),
        change(4, "/d", Created),
        change(5, "/a/b/c.txt", Deleted),
        change(5, "/d/c.txt", Created),
        change(6, "/d/e.txt", Created),
        change(7, "/l", Created),
        change(8, "/d/e.txt", Modified),
        change(9, "/d/e.txt", Modified),
        change(10, "/a", Deleted),
        change(11, "/x", Created),
        change(11, "/x/y", Created),
    ];
    assert_eq!(vfs.changes_since(0, 100).unwrap().unwrap(), all);
    let since5: Vec<Change> = all.iter().filter(|c| c.revision > 5).cloned().collect();
    assert_eq!(vfs.changes_since(5, 100).unwrap().unwrap(), since5);
    assert_eq!(vfs.changes_since(0, 2).unwrap().unwrap(), all[..2]);
    assert_eq!(vfs.changes_since(11, 100).unwrap().unwrap(), vec![]);

    // A failed op logs nothing.
    assert_eq!(code(vfs.remove(&p("/d"), false)), "ENOTEMPTY");
    assert_eq!(vfs.changes_since(11, 100).unwrap().unwrap(), vec![]);
}

#[test]
fn changes_since_a_pruned_revision_is_none() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/early", b"1");
    // Jump ahead so the next change lands on a pruning revision.
    let prune_at: i64 = 66_560; // a multiple of 1024 above CHANGE_LOG_REVISIONS
    assert!(prune_at % 1024 == 0 && prune_at > stead_vfs::CHANGE_LOG_REVISIONS);
    db.execute(
        "UPDATE meta SET value = ? WHERE key = 'revision'",
        params![prune_at - 1],
    )
    .unwrap();
    let written = put(&vfs, "/late", b"2");
    assert_eq!(written.revision, prune_at);
    let floor = prune_at - stead_vfs::CHANGE_LOG_REVISIONS;
    assert_eq!(vfs.changes_since(0, 100).unwrap(), None);
    assert_eq!(vfs.changes_since(floor - 1, 100).unwrap(), None);
    assert_eq!(
        vfs.changes_since(floor, 100).unwrap(),
        Some(vec![change(prune_at, "/late", ChangeKind::Created)])
    );
}

// ---------------------------------------------------------------------------
// read_lines
// ---------------------------------------------------------------------------

/// `count` lines of 13 bytes each ("line 0000001\n"...): with 512 KiB chunks,
/// lines straddle chunk boundaries.
fn numbered_lines(count: usize) -> (String, Vec<String>) {
    let lines: Vec<String> = (1..=count).map(|i| format!("line {i:07}\n")).collect();
    (lines.concat(), lines)
}

/// The 1-based number of the line containing byte `offset`.
fn line_at(offset: usize) -> usize {
    offset / 13 + 1
}

#[test]
fn read_lines_offset_limit_and_continuation() {
    let db = db();
    let vfs = vfs(&db);
    let (text, lines) = numbered_lines(10);
    put(&vfs, "/f", &text);
    let got = vfs
        .read_lines(
            &p("/f"),
            LineRequest {
                offset: 3,
                limit: 4,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(got.content, lines[2..6].concat());
    assert_eq!((got.offset, got.lines), (3, 4));
    assert!(got.truncated);
    assert_eq!(got.next_offset, Some(7));
    assert_eq!(got.total_lines, None);
    assert_eq!(got.size, text.len() as u64);

    let rest = vfs
        .read_lines(
            &p("/f"),
            LineRequest {
                offset: 7,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(rest.content, lines[6..].concat());
    assert!(!rest.truncated);
    assert_eq!(rest.next_offset, None);
    assert_eq!(rest.total_lines, Some(10));

    // Past the end: nothing, but the total is known.
    let past = vfs
        .read_lines(
            &p("/f"),
            LineRequest {
                offset: 50,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!((past.content.as_str(), past.lines), ("", 0));
    assert_eq!(past.total_lines, Some(10));

    // Offset 0 reads from the first line.
    let zero = vfs
        .read_lines(
            &p("/f"),
            LineRequest {
                offset: 0,
                limit: 1,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(zero.content, lines[0]);

    // The byte cap stops at a line boundary.
    let capped = vfs
        .read_lines(
            &p("/f"),
            LineRequest {
                max_bytes: 13 * 3 + 5,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(capped.content, lines[..3].concat());
    assert_eq!(capped.next_offset, Some(4));
    assert!(capped.truncated);

    // Last line without a newline.
    put(&vfs, "/g", "a\nb");
    let got = vfs.read_lines(&p("/g"), LineRequest::default()).unwrap();
    assert_eq!(got.content, "a\nb");
    assert_eq!((got.lines, got.total_lines), (2, Some(2)));

    assert_eq!(
        code(vfs.read_lines(&p("/missing"), LineRequest::default())),
        "ENOENT"
    );
    vfs.mkdir(&p("/d"), false, None).unwrap();
    assert_eq!(
        code(vfs.read_lines(&p("/d"), LineRequest::default())),
        "EISDIR"
    );
}

#[test]
fn read_lines_with_line_numbers() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/f", "alpha\nbeta\ngamma\n");
    let got = vfs
        .read_lines(
            &p("/f"),
            LineRequest {
                offset: 2,
                line_numbers: true,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(got.content, "     2\tbeta\n     3\tgamma\n");
    assert_eq!(got.lines, 2);
}

#[test]
fn read_lines_overlong_line_gives_a_byte_offset() {
    let db = db();
    let vfs = vfs(&db);
    let text = format!("short\n{}\nafter\n", "x".repeat(1000));
    put(&vfs, "/f", &text);
    let got = vfs
        .read_lines(
            &p("/f"),
            LineRequest {
                offset: 2,
                max_bytes: 100,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(got.content, "x".repeat(100));
    assert!(got.truncated);
    assert_eq!(got.next_byte_offset, Some(6 + 100));
    let (_, rest) = vfs.read_range(&p("/f"), 106, 2000).unwrap();
    assert_eq!(rest, text.as_bytes()[106..]);
}

#[test]
fn read_lines_binary_and_lossy() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/bin", b"text\0more\nlines\n");
    let got = vfs.read_lines(&p("/bin"), LineRequest::default()).unwrap();
    assert!(got.binary);
    assert_eq!(got.content, "");
    assert_eq!(got.lines, 0);
    assert_eq!(got.size, 16);

    // A NUL beyond the sniffed prefix does not make a file binary.
    let mut late = "a\n".repeat(5000).into_bytes();
    late.push(0);
    put(&vfs, "/late-nul", &late);
    let got = vfs
        .read_lines(
            &p("/late-nul"),
            LineRequest {
                limit: 2,
                ..Default::default()
            },
        )
        .unwrap();
    assert!(!got.binary);
    assert_eq!(got.content, "a\na\n");

    put(&vfs, "/latin1", b"caf\xe9\n");
    let got = vfs
        .read_lines(&p("/latin1"), LineRequest::default())
        .unwrap();
    assert!(!got.binary);
    assert!(got.lossy);
    assert_eq!(got.content, "caf\u{fffd}\n");
    let got = vfs.read_lines(&p("/bin"), LineRequest::default()).unwrap();
    assert!(!got.lossy);
}

#[test]
fn read_lines_multi_chunk_with_lines_across_boundaries() {
    let db = db();
    let vfs = vfs(&db);
    let (text, lines) = numbered_lines(100_000); // 1.3 MB: three chunks
    assert!(text.len() > 2 * C);
    put(&vfs, "/big", &text);
    assert_eq!(chunk_ids(&db, &vfs, "/big").len(), 3);

    for boundary in [C, 2 * C] {
        let crossing = line_at(boundary);
        assert_ne!((crossing - 1) * 13, boundary, "line straddles the boundary");
        let got = vfs
            .read_lines(
                &p("/big"),
                LineRequest {
                    offset: crossing as u64 - 1,
                    limit: 3,
                    line_numbers: true,
                    ..Default::default()
                },
            )
            .unwrap();
        let want: String = (crossing - 1..crossing + 2)
            .map(|n| format!("{n:>6}\t{}", lines[n - 1]))
            .collect();
        assert_eq!(got.content, want);
        assert_eq!(got.next_offset, Some(crossing as u64 + 2));
    }

    // Paging through the whole file reproduces it exactly.
    let mut offset = 1;
    let mut content = String::new();
    let mut pages = 0;
    loop {
        let got = vfs
            .read_lines(
                &p("/big"),
                LineRequest {
                    offset,
                    limit: 7_000,
                    ..Default::default()
                },
            )
            .unwrap();
        pages += 1;
        assert_eq!(got.offset, offset);
        content.push_str(&got.content);
        match got.next_offset {
            Some(next) => {
                assert_eq!(next, offset + got.lines);
                offset = next;
            }
            None => {
                assert_eq!(got.total_lines, Some(100_000));
                break;
            }
        }
    }
    assert!(pages > 3);
    assert!(content == text, "pages concatenate to the file");

    // The last line of the file.
    let got = vfs
        .read_lines(
            &p("/big"),
            LineRequest {
                offset: 100_000,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(got.content, lines[99_999]);
    assert_eq!(got.total_lines, Some(100_000));
}

// ---------------------------------------------------------------------------
// glob
// ---------------------------------------------------------------------------

fn glob_request(pattern: &str) -> GlobRequest {
    GlobRequest {
        pattern: pattern.to_string(),
        base: VPath::root(),
        exclude: Vec::new(),
        after: None,
        limit: 1000,
    }
}

fn glob_paths(page: &GlobPage) -> Vec<&str> {
    page.matches.iter().map(|m| m.path.as_str()).collect()
}

fn glob_fixture(vfs: &Vfs<'_, stead_sql::SqliteDb>) {
    for path in [
        "/a.txt",
        "/b.rs",
        "/c.rs",
        "/docs/readme.md",
        "/docs/guide.md",
        "/node_modules/pkg/index.js",
        "/node_modules/pkg/lib.rs",
        "/src/main.rs",
        "/src/lib.rs",
        "/src/util/mod.rs",
        "/src/util/io.rs",
        "/src/util/x1.rs",
        "/src/util/x2.rs",
        "/src/util/xa.rs",
        "/src/util/deep/er/most.rs",
        "/target/debug/build.rs",
    ] {
        put(vfs, path, path.as_bytes());
    }
}

#[track_caller]
fn glob_all(vfs: &Vfs<'_, stead_sql::SqliteDb>, request: &GlobRequest) -> Vec<String> {
    let page = vfs.glob(request).unwrap();
    assert!(!page.truncated);
    assert_eq!(page.next_cursor, None);
    glob_paths(&page).into_iter().map(str::to_string).collect()
}

#[test]
fn glob_wildcards_classes_and_alternatives() {
    let db = db();
    let vfs = vfs(&db);
    glob_fixture(&vfs);
    let g = |pattern: &str| glob_all(&vfs, &glob_request(pattern));
    assert_eq!(g("*.rs"), ["/b.rs", "/c.rs"], "`*` stays in one name");
    assert_eq!(g("/*.rs"), ["/b.rs", "/c.rs"], "a leading / is the base");
    assert_eq!(g("?.rs"), ["/b.rs", "/c.rs"]);
    assert_eq!(g("?.*"), ["/a.txt", "/b.rs", "/c.rs"]);
    assert_eq!(
        g("src/util/x?.rs"),
        ["/src/util/x1.rs", "/src/util/x2.rs", "/src/util/xa.rs"]
    );
    assert_eq!(
        g("src/util/x[0-9].rs"),
        ["/src/util/x1.rs", "/src/util/x2.rs"]
    );
    assert_eq!(g("src/util/x[!0-9].rs"), ["/src/util/xa.rs"]);
    assert_eq!(g("src/{main,lib}.rs"), ["/src/lib.rs", "/src/main.rs"]);
    assert_eq!(
        g("{a.txt,docs/*.md}"),
        ["/a.txt", "/docs/guide.md", "/docs/readme.md"]
    );
    assert_eq!(g("src/*"), ["/src/lib.rs", "/src/main.rs", "/src/util"]);
    assert_eq!(g("src/main.rs"), ["/src/main.rs"]);
    assert!(g("src/nothing.rs").is_empty());
    assert!(g("missing/**").is_empty());
    assert!(g("a.txt/*").is_empty());
    assert!(g("*.go").is_empty());

    let page = vfs.glob(&glob_request("src/*")).unwrap();
    let util = &page.matches[2];
    assert_eq!(util.kind, Kind::Dir);
    let main = &page.matches[1];
    assert_eq!((main.kind, main.size, main.mtime), (Kind::File, 12, NOW));

    // Relative to another base.
    let request = GlobRequest {
        base: p("/src"),
        ..glob_request("*.rs")
    };
    assert_eq!(glob_all(&vfs, &request), ["/src/lib.rs", "/src/main.rs"]);
    let request = GlobRequest {
        base: p("/src"),
        ..glob_request("util/*.rs")
    };
    assert_eq!(glob_all(&vfs, &request).len(), 5);

    assert_eq!(code(vfs.glob(&glob_request("src/[a-"))), "EINVAL");
    let request = GlobRequest {
        base: p("/nope"),
        ..glob_request("*")
    };
    assert_eq!(code(vfs.glob(&request)), "ENOENT");
    let request = GlobRequest {
        base: p("/a.txt"),
        ..glob_request("*")
    };
    assert_eq!(code(vfs.glob(&request)), "ENOTDIR");
}

#[test]
fn glob_double_star_in_depth_first_order() {
    let db = db();
    let vfs = vfs(&db);
    glob_fixture(&vfs);
    let g = |pattern: &str| glob_all(&vfs, &glob_request(pattern));
    let all_rs = [
        "/b.rs",
        "/c.rs",
        "/node_modules/pkg/lib.rs",
        "/src/lib.rs",
        "/src/main.rs",
        "/src/util/deep/er/most.rs",
        "/src/util/io.rs",
        "/src/util/mod.rs",
        "/src/util/x1.rs",
        "/src/util/x2.rs",
        "/src/util/xa.rs",
        "/target/debug/build.rs",
    ];
    assert_eq!(g("**/*.rs"), all_rs);
    assert_eq!(
        g("src/**/*.rs"),
        all_rs[3..11]
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
    );
    assert_eq!(g("**/most.rs"), ["/src/util/deep/er/most.rs"]);
    assert_eq!(g("src/**/er"), ["/src/util/deep/er"]);
    assert_eq!(g("**/*.md"), ["/docs/guide.md", "/docs/readme.md"]);

    // `**` alone: every path, depth first, a directory before its children.
    let everything = g("**");
    assert_eq!(everything.len(), count(&db, "nodes") as usize - 1);
    assert_eq!(
        everything[..6],
        [
            "/a.txt",
            "/b.rs",
            "/c.rs",
            "/docs",
            "/docs/guide.md",
            "/docs/readme.md"
        ]
    );
    // Deterministic: the same answer twice.
    assert_eq!(g("**"), everything);
    // Depth-first name order is not plain string order: "/src/util" (a
    // directory) comes with its children before "/src/util.rs" would.
    put(&vfs, "/src/util.rs", b"u");
    let again = g("src/**");
    let dir = again.iter().position(|p| p == "/src/util").unwrap();
    let file = again.iter().position(|p| p == "/src/util.rs").unwrap();
    let child = again.iter().position(|p| p == "/src/util/io.rs").unwrap();
    assert!(dir < child && child < file, "{again:?}");
}

#[test]
fn glob_excludes() {
    let db = db();
    let vfs = vfs(&db);
    glob_fixture(&vfs);
    let g = |pattern: &str, exclude: &[&str]| {
        glob_all(
            &vfs,
            &GlobRequest {
                exclude: exclude.iter().map(|s| s.to_string()).collect(),
                ..glob_request(pattern)
            },
        )
    };
    // A bare name excludes a whole directory, wherever it is.
    let got = g("**/*.rs", &["node_modules", "target"]);
    assert!(got
        .iter()
        .all(|p| p.starts_with("/src/") || p.matches('/').count() == 1));
    assert_eq!(got.len(), 10);
    let got = g("**", &["util"]);
    assert!(got.iter().all(|p| !p.contains("/util")), "{got:?}");
    assert!(got.contains(&"/src/main.rs".to_string()));
    // A path pattern excludes that path only.
    let got = g("**/*.rs", &["src/util/deep"]);
    assert!(!got.contains(&"/src/util/deep/er/most.rs".to_string()));
    assert!(got.contains(&"/src/util/io.rs".to_string()));
    // A name pattern with wildcards excludes files too.
    let got = g("**", &["*.rs", "*.md"]);
    assert!(got
        .iter()
        .all(|p| !p.ends_with(".rs") && !p.ends_with(".md")));
    assert!(got.contains(&"/a.txt".to_string()));
    assert!(got.contains(&"/src/util/deep/er".to_string()));
    assert_eq!(
        code(vfs.glob(&GlobRequest {
            exclude: vec!["[".to_string()],
            ..glob_request("**")
        })),
        "EINVAL"
    );
}

/// Pages through a glob with `limit` per page; checks every page's shape.
fn glob_pages(
    vfs: &Vfs<'_, stead_sql::SqliteDb>,
    request: &GlobRequest,
    limit: usize,
) -> Vec<String> {
    let mut out = Vec::new();
    let mut after = None;
    for _ in 0..1000 {
        let page = vfs
            .glob(&GlobRequest {
                after: after.clone(),
                limit,
                ..request.clone()
            })
            .unwrap();
        assert!(page.matches.len() <= limit);
        out.extend(glob_paths(&page).into_iter().map(str::to_string));
        if !page.truncated {
            assert_eq!(page.next_cursor, None);
            return out;
        }
        assert_eq!(page.matches.len(), limit, "only a full page is truncated");
        let cursor = page.next_cursor.expect("a truncated page has a cursor");
        assert_eq!(Some(&cursor), out.last());
        after = Some(p(&cursor));
    }
    panic!("glob paging did not finish");
}

#[test]
fn glob_paging_concatenates_to_the_unpaged_result() {
    let db = db();
    let vfs = vfs(&db);
    glob_fixture(&vfs);
    for pattern in [
        "**",
        "**/*.rs",
        "src/**",
        "*",
        "src/util/*",
        "{docs,src}/**/*.md",
    ] {
        let request = glob_request(pattern);
        let all = glob_all(&vfs, &request);
        for limit in [1, 2, 3, 5, all.len().max(1), all.len() + 1] {
            assert_eq!(
                glob_pages(&vfs, &request, limit),
                all,
                "pattern {pattern}, pages of {limit}"
            );
        }
    }
    // With excludes and a base.
    let request = GlobRequest {
        base: p("/src"),
        exclude: vec!["deep".to_string()],
        ..glob_request("**")
    };
    let all = glob_all(&vfs, &request);
    assert_eq!(all.len(), 8);
    assert_eq!(glob_pages(&vfs, &request, 3), all);
    // An exactly full last page says it is not truncated.
    let page = vfs
        .glob(&GlobRequest {
            limit: 2,
            ..glob_request("*.rs")
        })
        .unwrap();
    assert!(!page.truncated);
    assert_eq!(page.matches.len(), 2);
}

#[test]
fn glob_exclude_applies_below_a_literal_prefix() {
    let db = db();
    let vfs = vfs(&db);
    glob_fixture(&vfs);
    let g = |pattern: &str| {
        glob_all(
            &vfs,
            &GlobRequest {
                exclude: vec!["util".to_string()],
                ..glob_request(pattern)
            },
        )
    };
    // The same files, whether or not the pattern names the directory.
    let wild: Vec<String> = g("*/util/*.rs");
    assert!(wild.is_empty(), "{wild:?}");
    let literal = g("src/util/*.rs");
    assert_eq!(
        literal, wild,
        "excluded /src/util is searched when named literally"
    );
}

#[test]
fn glob_through_a_symlinked_directory_prefix() {
    let db = db();
    let vfs = vfs(&db);
    glob_fixture(&vfs);
    vfs.symlink("/src", &p("/code")).unwrap();
    // The link works as a base, and matches keep the path as written...
    let request = GlobRequest {
        base: p("/code"),
        ..glob_request("*.rs")
    };
    assert_eq!(glob_all(&vfs, &request), ["/code/lib.rs", "/code/main.rs"]);
    // ...and as the pattern's first directory.
    let got = glob_all(&vfs, &glob_request("code/*.rs"));
    assert_eq!(got.len(), 2, "{got:?}");
}

#[test]
fn glob_pattern_with_dot_slash_prefix() {
    let db = db();
    let vfs = vfs(&db);
    glob_fixture(&vfs);
    assert_eq!(
        glob_all(&vfs, &glob_request("./src/*.rs")),
        glob_all(&vfs, &glob_request("src/*.rs"))
    );
    assert_eq!(glob_all(&vfs, &glob_request("./*.rs")), ["/b.rs", "/c.rs"]);
}

// ---------------------------------------------------------------------------
// grep
// ---------------------------------------------------------------------------

fn grep_request(pattern: &str) -> GrepRequest {
    GrepRequest {
        pattern: pattern.to_string(),
        regex: false,
        ignore_case: false,
        base: VPath::root(),
        include: Vec::new(),
        exclude: Vec::new(),
        before: 0,
        after: 0,
        mode: GrepMode::Content,
        cursor: None,
        limit: 1000,
    }
}

fn regex(pattern: &str) -> GrepRequest {
    GrepRequest {
        regex: true,
        ..grep_request(pattern)
    }
}

/// (path, line, text) of each match.
fn hits(page: &GrepPage) -> Vec<(String, u64, String)> {
    page.matches
        .as_ref()
        .expect("content mode")
        .iter()
        .map(|m| (m.path.clone(), m.line, m.text.clone()))
        .collect()
}

fn hit(path: &str, line: u64, text: &str) -> (String, u64, String) {
    (path.to_string(), line, text.to_string())
}

fn grep_fixture(vfs: &Vfs<'_, stead_sql::SqliteDb>) {
    put(
        vfs,
        "/src/a.rs",
        "fn main() {\n    let x = foo(1);\n    println!(\"{}\", x);\n}\n",
    );
    put(
        vfs,
        "/src/b.rs",
        "// Foo bar\nfn foo(n: i32) -> i32 {\n    n + 1\n}\n",
    );
    put(vfs, "/src/c.txt", "foo.bar\nfooXbar\n");
    put(vfs, "/docs/notes.md", "FOO in caps\nfoo in lower\n");
    put(vfs, "/bin/blob", b"foo\0binary foo\n");
    put(vfs, "/vendor/dep.rs", "fn foo() {}\n");
}

#[test]
fn grep_literal_vs_regex_and_ignore_case() {
    let db = db();
    let vfs = vfs(&db);
    grep_fixture(&vfs);

    let page = vfs.grep(&grep_request("foo.bar")).unwrap();
    assert_eq!(hits(&page), [hit("/src/c.txt", 1, "foo.bar")]);
    assert!(!page.truncated);
    assert_eq!(page.next_cursor, None);

    let page = vfs.grep(&regex("foo.bar")).unwrap();
    assert_eq!(
        hits(&page),
        [
            hit("/src/c.txt", 1, "foo.bar"),
            hit("/src/c.txt", 2, "fooXbar")
        ]
    );

    let page = vfs
        .grep(&GrepRequest {
            ignore_case: true,
            ..regex("foo.bar")
        })
        .unwrap();
    assert_eq!(
        hits(&page),
        [
            hit("/src/b.rs", 1, "// Foo bar"),
            hit("/src/c.txt", 1, "foo.bar"),
            hit("/src/c.txt", 2, "fooXbar"),
        ]
    );

    let page = vfs
        .grep(&GrepRequest {
            ignore_case: true,
            ..grep_request("foo in")
        })
        .unwrap();
    assert_eq!(
        hits(&page),
        [
            hit("/docs/notes.md", 1, "FOO in caps"),
            hit("/docs/notes.md", 2, "foo in lower"),
        ]
    );

    // Anchors work per line.
    let page = vfs.grep(&regex("^fn foo")).unwrap();
    assert_eq!(
        hits(&page),
        [
            hit("/src/b.rs", 2, "fn foo(n: i32) -> i32 {"),
            hit("/vendor/dep.rs", 1, "fn foo() {}"),
        ]
    );
    let page = vfs.grep(&regex(r"\)$")).unwrap();
    assert!(hits(&page).is_empty(), "no line ends in `)`");
    let page = vfs.grep(&regex(r"x\);$")).unwrap();
    assert_eq!(
        hits(&page),
        [hit("/src/a.rs", 3, "    println!(\"{}\", x);")]
    );

    // Regex metacharacters in a literal search are literal.
    let page = vfs.grep(&grep_request("(\"{}\"")).unwrap();
    assert_eq!(hits(&page).len(), 1);
    assert_eq!(code(vfs.grep(&regex("foo("))), "EINVAL");
    assert!(vfs.grep(&grep_request("foo(")).is_ok());
}

#[test]
fn grep_include_and_exclude() {
    let db = db();
    let vfs = vfs(&db);
    grep_fixture(&vfs);
    let files = |include: &[&str], exclude: &[&str]| {
        let page = vfs
            .grep(&GrepRequest {
                include: include.iter().map(|s| s.to_string()).collect(),
                exclude: exclude.iter().map(|s| s.to_string()).collect(),
                mode: GrepMode::Files,
                ..grep_request("foo")
            })
            .unwrap();
        page.files.unwrap()
    };
    assert_eq!(
        files(&[], &[]),
        [
            "/docs/notes.md",
            "/src/a.rs",
            "/src/b.rs",
            "/src/c.txt",
            "/vendor/dep.rs"
        ]
    );
    assert_eq!(
        files(&["*.rs"], &[]),
        ["/src/a.rs", "/src/b.rs", "/vendor/dep.rs"]
    );
    assert_eq!(files(&["*.rs"], &["vendor"]), ["/src/a.rs", "/src/b.rs"]);
    assert_eq!(
        files(&["src/*.txt", "*.md"], &[]),
        ["/docs/notes.md", "/src/c.txt"]
    );
    assert_eq!(files(&[], &["src", "docs"]), ["/vendor/dep.rs"]);
    assert_eq!(files(&[], &["src/b.rs"]).len(), 4);
    assert!(files(&["*.go"], &[]).is_empty());
}

#[test]
fn grep_context_lines() {
    let db = db();
    let vfs = vfs(&db);
    let text: String = (1..=12).map(|i| format!("l{i}\n")).collect();
    put(&vfs, "/f", &text);
    let page = vfs
        .grep(&GrepRequest {
            before: 2,
            after: 2,
            ..regex("^l5$")
        })
        .unwrap();
    let m = &page.matches.as_ref().unwrap()[0];
    assert_eq!((m.line, m.text.as_str()), (5, "l5"));
    assert_eq!(m.before, ["l3", "l4"]);
    assert_eq!(m.after, ["l6", "l7"]);

    // Adjacent matches do not repeat lines as context.
    let page = vfs
        .grep(&GrepRequest {
            before: 2,
            after: 1,
            ..regex("^l(5|6|9)$")
        })
        .unwrap();
    let ms = page.matches.unwrap();
    assert_eq!(ms.iter().map(|m| m.line).collect::<Vec<_>>(), [5, 6, 9]);
    assert_eq!(ms[0].before, ["l3", "l4"]);
    assert!(ms[0].after.is_empty());
    assert!(ms[1].before.is_empty());
    assert_eq!(ms[1].after, ["l7"]);
    assert_eq!(ms[2].before, ["l8"]);
    assert_eq!(ms[2].after, ["l10"]);

    // Context at the edges of the file.
    let page = vfs
        .grep(&GrepRequest {
            before: 3,
            after: 3,
            ..regex("^l(1|12)$")
        })
        .unwrap();
    let ms = page.matches.unwrap();
    assert!(ms[0].before.is_empty());
    assert_eq!(ms[0].after, ["l2", "l3", "l4"]);
    assert_eq!(ms[1].before, ["l9", "l10", "l11"]);
    assert!(ms[1].after.is_empty());
}

#[test]
fn grep_files_and_count_modes() {
    let db = db();
    let vfs = vfs(&db);
    grep_fixture(&vfs);
    let page = vfs
        .grep(&GrepRequest {
            mode: GrepMode::Files,
            ..grep_request("foo")
        })
        .unwrap();
    assert!(page.matches.is_none() && page.counts.is_none());
    assert_eq!(page.files.unwrap().len(), 5);
    assert_eq!(page.binary_files_skipped, 1);

    let page = vfs
        .grep(&GrepRequest {
            mode: GrepMode::Count,
            ..grep_request("foo")
        })
        .unwrap();
    assert!(page.matches.is_none() && page.files.is_none());
    let counts: Vec<(String, u64)> = page
        .counts
        .unwrap()
        .into_iter()
        .map(|c| (c.path, c.count))
        .collect();
    assert_eq!(
        counts,
        [
            ("/docs/notes.md".to_string(), 1),
            ("/src/a.rs".to_string(), 1),
            ("/src/b.rs".to_string(), 1),
            ("/src/c.txt".to_string(), 2),
            ("/vendor/dep.rs".to_string(), 1),
        ]
    );
    let page = vfs
        .grep(&GrepRequest {
            mode: GrepMode::Count,
            ignore_case: true,
            ..grep_request("foo")
        })
        .unwrap();
    let counts = page.counts.unwrap();
    assert_eq!(counts[0].count, 2);
    assert_eq!(counts[2].count, 2);
    assert_eq!(page.files_searched, 5);
}

#[test]
fn grep_skips_binary_files() {
    let db = db();
    let vfs = vfs(&db);
    grep_fixture(&vfs);
    let page = vfs.grep(&grep_request("binary")).unwrap();
    assert!(hits(&page).is_empty());
    assert_eq!(page.binary_files_skipped, 1);
    assert_eq!(page.files_searched, 5);
    // Also when named directly.
    let page = vfs
        .grep(&GrepRequest {
            base: p("/bin/blob"),
            ..grep_request("foo")
        })
        .unwrap();
    assert!(hits(&page).is_empty());
    assert_eq!(page.binary_files_skipped, 1);
}

#[test]
fn grep_a_single_file_and_resume_in_it() {
    let db = db();
    let vfs = vfs(&db);
    let text: String = (1..=30).map(|i| format!("row {i}\n")).collect();
    put(&vfs, "/f.txt", &text);
    let request = GrepRequest {
        base: p("/f.txt"),
        ..regex("^row [0-9]*5$")
    };
    let all = hits(&vfs.grep(&request).unwrap());
    assert_eq!(all.iter().map(|h| h.1).collect::<Vec<_>>(), [5, 15, 25]);
    let first = vfs
        .grep(&GrepRequest {
            limit: 2,
            ..request.clone()
        })
        .unwrap();
    assert!(first.truncated);
    let cursor = first.next_cursor.clone().unwrap();
    assert_eq!(cursor, "15:/f.txt");
    let rest = vfs
        .grep(&GrepRequest {
            cursor: Some(GrepCursor::parse(&cursor).unwrap()),
            limit: 2,
            ..request.clone()
        })
        .unwrap();
    assert_eq!(hits(&rest), all[2..]);
    assert!(!rest.truncated);
    assert_eq!(
        code(vfs.grep(&GrepRequest {
            base: p("/nope"),
            ..grep_request("x")
        })),
        "ENOENT"
    );
}

/// Collects a grep page by page with `limit`, following cursors.
fn grep_pages(
    vfs: &Vfs<'_, stead_sql::SqliteDb>,
    request: &GrepRequest,
    limit: usize,
) -> Vec<GrepPage> {
    let mut pages = Vec::new();
    let mut cursor = None;
    for _ in 0..10_000 {
        let page = vfs
            .grep(&GrepRequest {
                cursor: cursor.clone(),
                limit,
                ..request.clone()
            })
            .unwrap();
        let more = page.truncated;
        let next = page.next_cursor.clone();
        pages.push(page);
        if !more {
            assert_eq!(next, None);
            return pages;
        }
        cursor = Some(GrepCursor::parse(&next.expect("a truncated page has a cursor")).unwrap());
    }
    panic!("grep paging did not finish");
}

fn paging_fixture(vfs: &Vfs<'_, stead_sql::SqliteDb>) {
    // Files with 0..=6 hits each, some adjacent, in nested directories.
    for i in 0..9 {
        let text: String = (1..=20)
            .map(|line| {
                if line % (i + 2) == 0 {
                    format!("hit {i}/{line}\n")
                } else {
                    format!("miss {line}\n")
                }
            })
            .collect();
        let dir = ["/a", "/a/b", "/c", "/"][i % 4];
        put(vfs, &format!("{dir}/f{i}.txt"), text);
    }
    put(vfs, "/a/none.txt", "nothing here\n");
    put(vfs, "/a/bin.dat", b"hit\0hit\n");
}

#[test]
fn grep_content_paging_concatenates_without_duplicates() {
    let db = db();
    let vfs = vfs(&db);
    paging_fixture(&vfs);
    let request = grep_request("hit");
    let all = vfs.grep(&request).unwrap();
    assert!(!all.truncated);
    let all = hits(&all);
    assert!(all.len() > 30, "{}", all.len());
    for limit in [1, 2, 3, 4, 7, 10, all.len() - 1, all.len(), all.len() + 5] {
        let pages = grep_pages(&vfs, &request, limit);
        let mut got = Vec::new();
        for page in &pages {
            assert!(page.matches.as_ref().unwrap().len() <= limit);
            got.extend(hits(page));
        }
        let unique: HashSet<_> = got.iter().collect();
        assert_eq!(unique.len(), got.len(), "duplicates with pages of {limit}");
        assert_eq!(got, all, "pages of {limit}");
        assert_eq!(pages.iter().map(|p| p.binary_files_skipped).sum::<u64>(), 1);
    }
    // With context the matches are the same.
    let with_context = GrepRequest {
        before: 1,
        after: 1,
        ..request.clone()
    };
    let pages = grep_pages(&vfs, &with_context, 3);
    let got: Vec<_> = pages.iter().flat_map(hits).collect();
    assert_eq!(got, all);
}

#[test]
fn grep_files_and_count_paging() {
    let db = db();
    let vfs = vfs(&db);
    paging_fixture(&vfs);
    for mode in [GrepMode::Files, GrepMode::Count] {
        let request = GrepRequest {
            mode,
            ..grep_request("hit")
        };
        let all = vfs.grep(&request).unwrap();
        let key = |page: &GrepPage| -> Vec<String> {
            match mode {
                GrepMode::Files => page.files.clone().unwrap(),
                _ => page
                    .counts
                    .as_ref()
                    .unwrap()
                    .iter()
                    .map(|c| format!("{}={}", c.path, c.count))
                    .collect(),
            }
        };
        let want = key(&all);
        assert_eq!(want.len(), 9);
        for limit in [1, 2, 4, 8, 9, 10] {
            let pages = grep_pages(&vfs, &request, limit);
            let got: Vec<String> = pages.iter().flat_map(key).collect();
            assert!(pages.iter().all(|p| key(p).len() <= limit));
            assert_eq!(got, want, "{mode:?} pages of {limit}");
        }
    }
}

/// A file of `count` 13-byte lines where the lines at `marked` read "MATCH".
fn marked_lines(count: usize, marked: &[usize]) -> String {
    (1..=count)
        .map(|i| {
            if marked.contains(&i) {
                format!("MATCH {i:06}\n")
            } else {
                format!("line {i:07}\n")
            }
        })
        .collect()
}

#[test]
fn grep_multi_chunk_file_line_numbers() {
    let db = db();
    let vfs = vfs(&db);
    let first = line_at(C); // straddles the first chunk boundary
    let second = line_at(2 * C);
    let marked = [1, first - 1, first, first + 1, second, 100_000];
    let text = marked_lines(100_000, &marked);
    put(&vfs, "/big.log", &text);
    assert_eq!(chunk_ids(&db, &vfs, "/big.log").len(), 3);
    let page = vfs.grep(&grep_request("MATCH")).unwrap();
    let got: Vec<(u64, String)> = hits(&page).into_iter().map(|h| (h.1, h.2)).collect();
    let want: Vec<(u64, String)> = marked
        .iter()
        .map(|&i| (i as u64, format!("MATCH {i:06}")))
        .collect();
    assert_eq!(got, want);

    // Context from the previous chunk.
    let page = vfs
        .grep(&GrepRequest {
            before: 2,
            after: 1,
            ..grep_request(&format!("MATCH {second:06}"))
        })
        .unwrap();
    let m = &page.matches.unwrap()[0];
    assert_eq!(m.line, second as u64);
    assert_eq!(
        m.before,
        [
            format!("line {:07}", second - 2),
            format!("line {:07}", second - 1)
        ]
    );
    assert_eq!(m.after, [format!("line {:07}", second + 1)]);

    // After-context from the next chunk: line second-1 ends a piece.
    let page = vfs
        .grep(&GrepRequest {
            after: 2,
            ..grep_request(&format!("line {:07}", second - 1))
        })
        .unwrap();
    let m = &page.matches.unwrap()[0];
    assert_eq!(m.line, second as u64 - 1);
    assert_eq!(
        m.after,
        [
            format!("MATCH {second:06}"),
            format!("line {:07}", second + 1)
        ]
    );

    // Paging inside the big file.
    let pages = grep_pages(&vfs, &grep_request("MATCH"), 2);
    assert_eq!(pages.len(), 3);
    let paged: Vec<u64> = pages.iter().flat_map(hits).map(|h| h.1).collect();
    assert_eq!(paged, want.iter().map(|w| w.0).collect::<Vec<_>>());

    let page = vfs
        .grep(&GrepRequest {
            mode: GrepMode::Count,
            ..grep_request("MATCH")
        })
        .unwrap();
    assert_eq!(page.counts.unwrap()[0].count, marked.len() as u64);
}

#[test]
fn grep_before_context_keeps_blank_lines_across_chunks() {
    let db = db();
    let vfs = vfs(&db);
    // Chunk 0 ends with "ctx\n\n": its last line is blank. Line 4 starts chunk 1.
    let mut text = "f".repeat(C - 6);
    text.push('\n'); // line 1
    text.push_str("ctx\n"); // line 2
    text.push('\n'); // line 3, blank, the last of chunk 0
    assert_eq!(text.len(), C);
    text.push_str("MATCH\n"); // line 4
    put(&vfs, "/f", &text);
    let page = vfs
        .grep(&GrepRequest {
            before: 2,
            ..grep_request("MATCH")
        })
        .unwrap();
    let m = &page.matches.unwrap()[0];
    assert_eq!(m.line, 4);
    assert_eq!(m.before, ["ctx", ""]);
}

// ---------------------------------------------------------------------------
// Uploads
// ---------------------------------------------------------------------------

#[test]
fn upload_commit_produces_the_file() {
    let db = db();
    let vfs = vfs(&db);
    let path = p("/uploads/big.bin");
    let data = noise(2 * C + 1000, 90);
    let upload = vfs.begin_upload(&path, WriteOptions::default()).unwrap();
    for (idx, piece) in data.chunks(C).enumerate() {
        vfs.stage_chunk(upload, idx as i64, piece).unwrap();
    }
    assert_eq!(count(&db, "upload_chunks"), 3);
    assert_eq!(chunks(&db), 3);
    // Nothing is visible before the commit.
    assert_eq!(code(vfs.stat(&path, true)), "ENOENT");
    assert_eq!(code(vfs.stat(&p("/uploads"), true)), "ENOENT");
    assert_eq!(vfs.revision().unwrap(), 0);

    let written = vfs
        .commit_upload(upload, &path, data.len() as u64, WriteOptions::default())
        .unwrap();
    assert!(written.created);
    assert_eq!(written.size, data.len() as u64);
    assert_eq!(written.path, "/uploads/big.bin");
    assert_eq!(written.revision, 1);
    assert_eq!(vfs.read_file(&path).unwrap(), data);
    let (_, range) = vfs.read_range(&path, C as u64 - 10, 20).unwrap();
    assert_eq!(range, data[C - 10..C + 10]);
    assert_eq!(vfs.stat(&path, true).unwrap().1.size, data.len() as u64);
    assert_eq!(count(&db, "upload_chunks"), 0);
    assert_eq!(chunks(&db), 3);
    assert_eq!(
        vfs.changes_since(0, 10).unwrap().unwrap(),
        [
            change(1, "/uploads", ChangeKind::Created),
            change(1, "/uploads/big.bin", ChangeKind::Created),
        ]
    );

    // Two uploads get different ids; an empty upload makes an empty file.
    let a = vfs
        .begin_upload(&p("/e1"), WriteOptions::default())
        .unwrap();
    let b = vfs
        .begin_upload(&p("/e2"), WriteOptions::default())
        .unwrap();
    assert_ne!(a, b);
    vfs.commit_upload(a, &p("/e1"), 0, WriteOptions::default())
        .unwrap();
    assert_eq!(get(&vfs, "/e1"), b"");
    vfs.abort_upload(b).unwrap();
}

#[test]
fn upload_abort_leaves_nothing() {
    let db = db();
    let vfs = vfs(&db);
    let before = dump(&db);
    let upload = vfs
        .begin_upload(&p("/dir/file"), WriteOptions::default())
        .unwrap();
    vfs.stage_chunk(upload, 0, &noise(C, 91)).unwrap();
    vfs.stage_chunk(upload, 1, &noise(10, 92)).unwrap();
    assert_eq!(chunks(&db), 2);
    vfs.abort_upload(upload).unwrap();
    assert_eq!(chunks(&db), 0);
    assert_eq!(count(&db, "upload_chunks"), 0);
    assert_eq!(code(vfs.stat(&p("/dir/file"), true)), "ENOENT");
    assert_eq!(code(vfs.stat(&p("/dir"), true)), "ENOENT");
    assert_eq!(vfs.revision().unwrap(), 0);
    // Only the upload counter moved.
    let after = dump(&db);
    assert_eq!(after[1..], before[1..]);
}

#[test]
fn upload_abort_keeps_chunks_other_files_hold() {
    let db = db();
    let vfs = vfs(&db);
    let data = noise(C + 5, 93);
    put(&vfs, "/existing", &data);
    let upload = vfs
        .begin_upload(&p("/other"), WriteOptions::default())
        .unwrap();
    vfs.stage_chunk(upload, 0, &data[..C]).unwrap();
    vfs.stage_chunk(upload, 1, b"unique tail").unwrap();
    assert_eq!(chunks(&db), 3);
    vfs.abort_upload(upload).unwrap();
    assert_eq!(chunks(&db), 2);
    assert_eq!(get(&vfs, "/existing"), data);

    // And a staged chunk stays alive while the file holding it goes.
    let upload = vfs
        .begin_upload(&p("/other"), WriteOptions::default())
        .unwrap();
    vfs.stage_chunk(upload, 0, &data[..C]).unwrap();
    vfs.remove(&p("/existing"), false).unwrap();
    assert_eq!(chunks(&db), 1);
    vfs.commit_upload(upload, &p("/other"), C as u64, WriteOptions::default())
        .unwrap();
    assert_eq!(get(&vfs, "/other"), data[..C]);
}

#[test]
fn abort_stale_uploads_clears_every_staged_row() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/kept", b"kept");
    let a = vfs.begin_upload(&p("/a"), WriteOptions::default()).unwrap();
    let b = vfs.begin_upload(&p("/b"), WriteOptions::default()).unwrap();
    vfs.stage_chunk(a, 0, &noise(C, 94)).unwrap();
    vfs.stage_chunk(a, 1, b"a tail").unwrap();
    vfs.stage_chunk(b, 0, b"b only").unwrap();
    vfs.stage_chunk(b, 1, b"kept").unwrap(); // shares /kept's chunk
    assert_eq!(count(&db, "upload_chunks"), 4);
    assert_eq!(chunks(&db), 4);
    vfs.abort_stale_uploads().unwrap();
    assert_eq!(count(&db, "upload_chunks"), 0);
    assert_eq!(chunks(&db), 1);
    assert_eq!(get(&vfs, "/kept"), b"kept");
    assert_eq!(code(vfs.stat(&p("/a"), true)), "ENOENT");
    // Idempotent.
    vfs.abort_stale_uploads().unwrap();
    assert_eq!(chunks(&db), 1);
}

#[test]
fn upload_to_an_existing_file_replaces_it_atomically() {
    let db = db();
    let vfs = vfs(&db);
    let old = noise(2 * C, 95);
    put(&vfs, "/f", &old);
    let ino = vfs.stat(&p("/f"), true).unwrap().1.ino;
    let new = noise(C + 77, 96);
    let upload = vfs.begin_upload(&p("/f"), WriteOptions::default()).unwrap();
    vfs.stage_chunk(upload, 0, &new[..C]).unwrap();
    // Half-way: readers still see the old content, whole.
    assert_eq!(get(&vfs, "/f"), old);
    assert_eq!(vfs.stat(&p("/f"), true).unwrap().1.size, old.len() as u64);
    vfs.stage_chunk(upload, 1, &new[C..]).unwrap();
    assert_eq!(get(&vfs, "/f"), old);
    assert_eq!(chunks(&db), 4);

    let written = vfs
        .commit_upload(upload, &p("/f"), new.len() as u64, WriteOptions::default())
        .unwrap();
    assert!(!written.created);
    assert_eq!(get(&vfs, "/f"), new);
    assert_eq!(vfs.stat(&p("/f"), true).unwrap().1.ino, ino);
    assert_eq!(chunks(&db), 2, "the old content was collected");
    assert_eq!(
        vfs.changes_since(1, 10).unwrap().unwrap(),
        [change(2, "/f", ChangeKind::Modified)]
    );
}

#[test]
fn begin_upload_checks_the_path() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/file", b"x");
    vfs.mkdir(&p("/dir"), false, None).unwrap();
    assert_eq!(
        code(vfs.begin_upload(&p("/dir"), WriteOptions::default())),
        "EISDIR"
    );
    assert_eq!(
        code(vfs.begin_upload(&p("/file/x"), WriteOptions::default())),
        "ENOTDIR"
    );
    assert_eq!(
        code(vfs.begin_upload(&p("/missing/x"), no_parents())),
        "ENOENT"
    );
    vfs.begin_upload(&p("/missing/x"), WriteOptions::default())
        .unwrap();
    vfs.begin_upload(&p("/dir/x"), no_parents()).unwrap();
}

#[test]
fn commit_upload_enforces_the_file_size_limit() {
    let db = db();
    let vfs = vfs(&db).with_limits(Limits {
        max_file_bytes: 100,
        ..Limits::default()
    });
    let upload = vfs.begin_upload(&p("/f"), WriteOptions::default()).unwrap();
    vfs.stage_chunk(upload, 0, &[b'x'; 200]).unwrap();
    let before = dump(&db);
    assert_eq!(
        code(vfs.commit_upload(upload, &p("/f"), 200, WriteOptions::default())),
        "EFBIG"
    );
    assert_eq!(dump(&db), before);
}

#[test]
fn commit_upload_rejects_or_fixes_inconsistent_staging() {
    let db = db();
    let vfs = vfs(&db);
    // Either the commit fails, or the file it makes is consistent: its size
    // is its content's length, and ranges agree with the whole content.
    let check = |path: &str, pieces: &[&[u8]], size: u64| {
        let upload = vfs.begin_upload(&p(path), WriteOptions::default()).unwrap();
        for (idx, piece) in pieces.iter().enumerate() {
            vfs.stage_chunk(upload, idx as i64, piece).unwrap();
        }
        if vfs
            .commit_upload(upload, &p(path), size, WriteOptions::default())
            .is_err()
        {
            vfs.abort_upload(upload).unwrap();
            return;
        }
        let node = vfs.stat(&p(path), true).unwrap().1;
        let data = get(&vfs, path);
        assert_eq!(node.size, data.len() as u64, "{path}: stat size vs content");
        for offset in 0..data.len() {
            let (_, range) = vfs.read_range(&p(path), offset as u64, 100).unwrap();
            assert_eq!(range, data[offset..], "{path}: range from {offset}");
        }
    };
    // The caller miscounts the size.
    check("/miscounted", &[b"0123456789"], 4);
    // A short chunk before the last breaks the offset-to-chunk mapping.
    check("/short-middle", &[b"0123456789", b"abcdefghij"], 20);
}

// ---------------------------------------------------------------------------
// edit
// ---------------------------------------------------------------------------

#[test]
fn edit_apply_round_trips_through_the_vfs() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/src/lib.rs", "fn a() {}\nfn b() {}\nfn c() {}\n");
    let original = get(&vfs, "/src/lib.rs");
    let text = edit::as_text(&original).unwrap();
    let edits = [
        Replacement {
            old: "fn a() {}".to_string(),
            new: "fn alpha() {}".to_string(),
            replace_all: false,
        },
        Replacement {
            old: "fn c".to_string(),
            new: "pub fn c".to_string(),
            replace_all: false,
        },
    ];
    let edited = edit::apply(text, &edits, "/src/lib.rs").unwrap();
    assert_eq!(edited.replacements, 2);
    assert_eq!(edited.text, "fn alpha() {}\nfn b() {}\npub fn c() {}\n");
    assert!(edited.diff.contains("--- a/src/lib.rs"));
    assert!(edited.diff.contains("+fn alpha() {}"));
    assert!(edited.diff.contains("-fn c() {}"));
    put(&vfs, "/src/lib.rs", &edited.text);
    assert_eq!(get(&vfs, "/src/lib.rs"), edited.text.as_bytes());

    let ambiguous = [Replacement {
        old: "fn".to_string(),
        new: "func".to_string(),
        replace_all: false,
    }];
    let error = edit::apply(&edited.text, &ambiguous, "/src/lib.rs").unwrap_err();
    assert_eq!(error.code(), Errno::EditAmbiguous);
    assert_eq!(edit::as_text(b"\xff").unwrap_err().code(), Errno::Eilseq);
}

// ---------------------------------------------------------------------------
// More edge cases: chunk-aligned lines, very long lines, cursors, staging,
// link targets, Vfs::edit, usage
// ---------------------------------------------------------------------------

#[test]
fn lines_aligned_with_chunk_boundaries() {
    let db = db();
    let vfs = vfs(&db);
    // 16-byte lines: chunk boundaries fall exactly between lines.
    let per_chunk = C / 16;
    let text: String = (1..=per_chunk * 2 + 10)
        .map(|i| format!("row {i:010}\n"))
        .collect();
    put(&vfs, "/aligned", &text);
    let got = vfs
        .read_lines(
            &p("/aligned"),
            LineRequest {
                offset: per_chunk as u64,
                limit: 2,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(
        got.content,
        format!("row {per_chunk:010}\nrow {:010}\n", per_chunk + 1)
    );
    let page = vfs
        .grep(&GrepRequest {
            before: 1,
            after: 1,
            ..regex(&format!("^row 0*({}|{})$", per_chunk, 2 * per_chunk + 1))
        })
        .unwrap();
    let ms = page.matches.unwrap();
    assert_eq!(
        ms.iter().map(|m| m.line).collect::<Vec<_>>(),
        [per_chunk as u64, 2 * per_chunk as u64 + 1]
    );
    assert_eq!(ms[0].after, [format!("row {:010}", per_chunk + 1)]);
    assert_eq!(ms[1].before, [format!("row {:010}", 2 * per_chunk)]);
}

#[test]
fn grep_a_line_longer_than_a_chunk() {
    let db = db();
    let vfs = vfs(&db);
    let mut text = "first\n".to_string();
    text.push_str(&"z".repeat(C + C / 2));
    text.push_str("needle\nlast needle\n");
    put(&vfs, "/long", &text);
    let page = vfs.grep(&grep_request("needle")).unwrap();
    let ms = page.matches.unwrap();
    assert_eq!(ms.iter().map(|m| m.line).collect::<Vec<_>>(), [2, 3]);
    assert_eq!(
        ms[0].text.len(),
        stead_vfs::grep::MAX_LINE_BYTES,
        "long lines are cut"
    );
    assert_eq!(ms[1].text, "last needle");
    let got = vfs
        .read_lines(
            &p("/long"),
            LineRequest {
                offset: 3,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(got.content, "last needle\n");
    assert_eq!(got.total_lines, Some(3));
}

#[test]
fn grep_cursor_outside_the_base_is_rejected() {
    let db = db();
    let vfs = vfs(&db);
    grep_fixture(&vfs);
    let cursor = GrepCursor::parse("0:/docs/notes.md").unwrap();
    let result = vfs.grep(&GrepRequest {
        base: p("/src"),
        ignore_case: true,
        cursor: Some(cursor),
        limit: 1,
        ..grep_request("foo")
    });
    assert_eq!(code(result), "EINVAL");
}

#[test]
fn stage_chunk_failure_leaves_no_orphan_chunk() {
    let db = db();
    let vfs = vfs(&db);
    let upload = vfs.begin_upload(&p("/f"), WriteOptions::default()).unwrap();
    vfs.stage_chunk(upload, 0, b"first").unwrap();
    // Staging the same index again either replaces it or fails; either way
    // no chunk may be left that nothing references.
    let again = vfs.stage_chunk(upload, 0, b"second");
    let staged = count(&db, "upload_chunks");
    assert_eq!(staged, 1);
    if again.is_err() {
        assert_eq!(chunks(&db), 1);
    }
    vfs.abort_upload(upload).unwrap();
    assert_eq!(chunks(&db), 0);
    assert_eq!(count(&db, "upload_chunks"), 0);
}

#[test]
fn symlink_target_validation_and_root() {
    let db = db();
    let vfs = vfs(&db);
    assert_eq!(code(vfs.symlink("a\0b", &p("/l"))), "EINVAL");
    assert_eq!(code(vfs.symlink(&"x".repeat(4097), &p("/l"))), "EINVAL");
    vfs.symlink(&"x/".repeat(2048), &p("/long")).unwrap();
    assert_eq!(vfs.revision().unwrap(), 1);

    let (real, root) = vfs.stat(&VPath::root(), true).unwrap();
    assert!(real.is_root());
    assert!(root.is_dir());
    assert_eq!(code(vfs.readlink(&VPath::root())), "EINVAL");
    // Root's stamp follows its entries.
    assert_eq!(root.rev, 1);
    assert_eq!(root.mtime, NOW);
}

#[test]
fn vfs_edit_is_atomic_and_keeps_the_inode() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/real.txt", "one\ntwo\nthree\n");
    vfs.symlink("/real.txt", &p("/link")).unwrap();
    let ino = vfs.stat(&p("/real.txt"), true).unwrap().1.ino;
    let edits = [Replacement {
        old: "two".to_string(),
        new: "2".to_string(),
        replace_all: false,
    }];

    let before = dump(&db);
    let dry = vfs.edit(&p("/link"), &edits, true).unwrap();
    assert_eq!(dry.revision, None);
    assert_eq!(dry.size, 12);
    assert_eq!(dump(&db), before, "a dry run changes nothing");

    let bad = [
        edits[0].clone(),
        Replacement {
            old: "missing".to_string(),
            new: "x".to_string(),
            replace_all: false,
        },
    ];
    assert_eq!(code(vfs.edit(&p("/link"), &bad, false)), "EDIT_NO_MATCH");
    assert_eq!(dump(&db), before, "a failed edit changes nothing");

    let done = vfs.edit(&p("/link"), &edits, false).unwrap();
    assert_eq!(done.path, "/real.txt");
    assert_eq!(done.revision, Some(vfs.revision().unwrap()));
    assert_eq!(done.diff, dry.diff);
    assert_eq!(get(&vfs, "/real.txt"), b"one\n2\nthree\n");
    assert_eq!(vfs.stat(&p("/real.txt"), true).unwrap().1.ino, ino);
    assert_eq!(vfs.stat(&p("/real.txt"), true).unwrap().1.size, 12);

    put(&vfs, "/bin", b"\xff\xfe");
    assert_eq!(code(vfs.edit(&p("/bin"), &edits, false)), "EILSEQ");
}

#[test]
fn usage_counts_shared_chunks_once() {
    let db = db();
    let vfs = vfs(&db);
    let data = noise(C + 100, 99);
    put(&vfs, "/a/x", &data);
    vfs.copy(&p("/a/x"), &p("/a/y"), false).unwrap();
    vfs.symlink("/a/x", &p("/l")).unwrap();
    let usage = vfs.usage().unwrap();
    assert_eq!((usage.files, usage.directories, usage.symlinks), (2, 1, 1));
    assert_eq!(usage.bytes, 2 * data.len() as u64);
    assert_eq!(usage.stored_bytes, data.len() as u64);
    assert_eq!(usage.revision, 3);
}

#[test]
fn grep_paging_with_colons_in_paths() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/we:ird/f:1.txt", "hit\nmiss\nhit\nhit\n");
    put(&vfs, "/we:ird/g.txt", "hit\n");
    let request = grep_request("hit");
    let all = hits(&vfs.grep(&request).unwrap());
    assert_eq!(all.len(), 4);
    let pages = grep_pages(&vfs, &request, 1);
    assert_eq!(pages[0].next_cursor.as_deref(), Some("1:/we:ird/f:1.txt"));
    let got: Vec<_> = pages.iter().flat_map(hits).collect();
    assert_eq!(got, all);
}

#[test]
fn grep_start_anchor_does_not_depend_on_other_lines() {
    let db = db();
    let vfs = vfs(&db);
    // Each line is matched on its own, so \A behaves like ^ on a line.
    put(&vfs, "/one", "bar\nfoo\n");
    put(&vfs, "/two", "foo\nbar\nfoo\n");
    let page = vfs.grep(&regex(r"\Afoo")).unwrap();
    let got: Vec<(String, u64)> = hits(&page).into_iter().map(|h| (h.0, h.1)).collect();
    let one_line_2 = got.contains(&("/one".to_string(), 2));
    let two_line_3 = got.contains(&("/two".to_string(), 3));
    assert_eq!(
        one_line_2, two_line_3,
        "the same line \"foo\" after \"bar\" matched in one file but not the other: {got:?}"
    );
}

/// Found by the model test (`tests/model.rs`): `replace_all` of `\n` in a
/// file of about a chunk of short lines spent minutes computing a minimal
/// diff (every line changed); large edits now get a linear-time diff.
#[test]
fn edit_replacing_every_line_of_a_large_file_is_fast() {
    let db = db();
    let vfs = vfs(&db);
    let mut data = b"big\n".repeat(C / 4);
    data.truncate(C - 3);
    put(&vfs, "/big", &data);
    let started = std::time::Instant::now();
    let edits = [Replacement {
        old: "\n".into(),
        new: "a a".into(),
        replace_all: true,
    }];
    let out = vfs.edit(&p("/big"), &edits, false).unwrap();
    assert_eq!(out.replacements, C / 4 - 1);
    assert!(
        out.diff.starts_with("--- a/big\n+++ b/big\n@@ -1,"),
        "{}",
        &out.diff[..80]
    );
    assert_eq!(get(&vfs, "/big").len() as u64, out.size);
    assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());
}

/// `a{1000}{1000}` compiled to a million states under the old 16 MiB
/// bound, and one search over a 2 MB file then held the isolate for
/// minutes. A pattern past `MAX_REGEX_BYTES` is refused when given, with a
/// reason naming the bound; a large ordinary pattern still runs.
#[test]
fn grep_refuses_a_pattern_past_the_compiled_size_bound() {
    let db = db();
    let vfs = vfs(&db);
    grep_fixture(&vfs);
    let started = std::time::Instant::now();
    let err = vfs.grep(&regex("a{1000}{1000}")).unwrap_err();
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    match &err {
        VfsError::InvalidPattern { pattern, reason } => {
            assert_eq!(pattern, "a{1000}{1000}");
            assert_eq!(
                reason,
                "regular expression too large (compiled size over 2 MiB)"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(err.code(), Errno::Einval);
    let page = vfs.grep(&regex(r"\w{40}|foo.bar")).unwrap();
    assert_eq!(hits(&page).len(), 2);
}

/// `a{1000}{10}` is small enough to compile (10,000 states), but over one
/// 2 MB line of `a`s the fast engine gives up and the slow one took 87 s,
/// holding the agent (its next request, even `/health`, waited). The
/// search is measured before it runs and refused past the bound, naming
/// the file and the way out; the same pattern on short lines still works.
#[test]
fn grep_refuses_a_search_only_the_slow_engine_could_do() {
    let db = db();
    let vfs = vfs(&db);
    put(&vfs, "/big.txt", vec![b'a'; 2 << 20]);
    put(&vfs, "/short.txt", "a".repeat(10_000) + "\nb\n");
    let started = std::time::Instant::now();
    let err = vfs.grep(&regex("a{1000}{10}")).unwrap_err();
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    match &err {
        VfsError::PatternTooCostly { path, bytes, .. } => {
            assert_eq!(path, "/big.txt");
            assert_eq!(*bytes, 2 << 20);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(err.code(), Errno::Einval);
    assert!(err.to_string().contains("counted repetitions"), "{err}");
    let page = vfs
        .grep(&GrepRequest {
            base: p("/short.txt"),
            ..regex("a{1000}{10}")
        })
        .unwrap();
    assert_eq!(hits(&page).len(), 1);
}

/// A search of a large workspace for a rare pattern read every byte in one
/// request. A page reads at most `MAX_PAGE_SCAN_BYTES` of content, then
/// ends before the next file with a cursor, and the pages together find
/// every match once.
#[test]
fn a_grep_page_ends_after_reading_its_bound_of_bytes() {
    use stead_vfs::grep::MAX_PAGE_SCAN_BYTES;
    let db = db();
    let vfs = vfs(&db);
    let file = vec![b'x'; 8 << 20];
    let files = (MAX_PAGE_SCAN_BYTES / file.len() as u64) as usize + 2;
    for i in 0..files {
        let mut content = file.clone();
        content.extend_from_slice(format!("\nneedle {i}\n").as_bytes());
        put(&vfs, &format!("/d/f{i:03}"), content);
    }
    let pages = grep_pages(&vfs, &grep_request("needle"), 1000);
    let found: Vec<String> = pages
        .iter()
        .flat_map(|page| hits(page).into_iter().map(|(path, _, _)| path))
        .collect();
    let pages = pages.len();
    assert_eq!(pages, 2);
    let expected: Vec<String> = (0..files).map(|i| format!("/d/f{i:03}")).collect();
    assert_eq!(found, expected);
}

/// `**` over a large tree with few matches walked the whole workspace (up
/// to a million nodes) in one request. A page visits at most
/// `MAX_VISITS` entries, then ends truncated with a cursor at the last
/// entry visited; a page that ends at an excluded directory resumes after
/// it without entering it.
#[test]
fn a_glob_page_ends_after_visiting_its_bound_of_entries() {
    use stead_vfs::glob::MAX_VISITS;
    let db = db();
    let vfs = vfs(&db);
    vfs.mkdir(&p("/a"), false, None).unwrap();
    // `/a` and its files are the first MAX_VISITS - 1 visits, `/b` the last.
    for i in 0..MAX_VISITS - 2 {
        put(&vfs, &format!("/a/f{i:06}"), b"");
    }
    put(&vfs, "/b/x1.rs", b"");
    put(&vfs, "/c/x2.rs", b"");
    let request = GlobRequest {
        exclude: vec!["b".to_string()],
        ..glob_request("**/x*.rs")
    };
    let first = vfs.glob(&request).unwrap();
    assert!(first.matches.is_empty());
    assert!(first.truncated);
    assert_eq!(first.next_cursor.as_deref(), Some("/b"));
    let second = vfs
        .glob(&GlobRequest {
            after: Some(p("/b")),
            ..request
        })
        .unwrap();
    assert_eq!(glob_paths(&second), ["/c/x2.rs"]);
    assert!(!second.truncated);
}
