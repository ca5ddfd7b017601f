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
use stead_vfs::{Change, ChangeKind, Kind, Limits, VPath, Vfs, WriteOptions, CHUNK_SIZE};

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
    let lines = vfs.read_lines(&p("/empty"), LineRequest::default()).unwrap();
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
        .append(&p("/logs/today/app.log"), b"first\n", WriteOptions::default())
        .unwrap();
    assert!(written.created);
    assert_eq!(written.size, 6);
    assert_eq!(written.path, "/logs/today/app.log");
    assert_eq!(get(&vfs, "/logs/today/app.log"), b"first\n");
    assert!(vfs.stat(&p("/logs/today"), true).unwrap().1.is_dir());

    let written = vfs
        .append(&p("/logs/today/app.log"), b"second\n", WriteOptions::default())
        .unwrap();
    assert!(!written.created);
    assert_eq!(written.size, 13);
    assert_eq!(get(&vfs, "/logs/today/app.log"), b"first\nsecond\n");

    // Appending nothing to a new file makes an empty file.
    let written = vfs
        .append(&p("/e"), b"", WriteOptions::default())
        .unwrap();
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
    let written = vfs.append(&p("/f"), &more, WriteOptions::default()).unwrap();
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
    let vfs = vfs(&db).with_limits(Limits { max_file_bytes: 10 });
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
        put(&vfs, &format!("{path}/file"), noise(C / 2 + depth, depth as u64 + 41));
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
    assert_eq!(code(vfs.copy(&p("/file"), &p("/no/dir/x"), false)), "ENOENT");
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
    assert_eq!(vfs.stat(&p("/dangling"), false).unwrap().1.kind, Kind::Symlink);
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
    vfs.symlink("../../../../../../secret", &p("/a/b/up")).unwrap();
    vfs.symlink("/etc/passwd", &p("/a/abs")).unwrap();
    vfs.symlink("../../../../..", &p("/a/b/root")).unwrap();

    assert_eq!(vfs.readlink(&p("/a/b/up")).unwrap(), "../../../../../../secret");
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
    assert_eq!(VPath::parse("/a/../../secret").unwrap_err().code(), "EACCES");
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
    let entry = vfs
        .list(&p("/dir"), Some("9"), 1)
        .unwrap()
        .pop()
        .unwrap();
    assert_eq!(entry.name, "A");
    assert_eq!((entry.node.kind, entry.node.size), (Kind::File, 1));
    assert!(vfs.list(&p("/dir"), None, 0).unwrap().is_empty());
    assert_eq!(code(vfs.list(&p("/dir/a"), None, 10)), "ENOTDIR");
    assert_eq!(code(vfs.list(&p("/nope"), None, 10)), "ENOENT");
}
