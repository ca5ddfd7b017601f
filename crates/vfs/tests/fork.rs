//! Forks: a checkpoint streamed from one workspace database into another,
//! byte-exact, in bounded frames, resumable, and leaving nothing behind when
//! it breaks off or is refused.

mod common;

use common::*;
use serde_json::json;
use stead_sql::SqliteDb;
use stead_vfs::{
    CheckpointId, ExportCursor, ImportProgress, Limits, Operation, Scope, Vfs, CHUNK_SIZE,
};

/// The stream's frame layout, as the module documents it.
const HEADER: u8 = 1;
const ENTRIES: u8 = 2;
const CHUNK: u8 = 3;
const END: u8 = 5;

fn frame(out: &mut Vec<u8>, tag: u8, payload: &[u8]) {
    out.push(tag);
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(payload);
}

/// The (tag, payload length) of each frame of a page.
fn frames(page: &[u8]) -> Vec<(u8, usize)> {
    let mut out = Vec::new();
    let mut rest = page;
    while !rest.is_empty() {
        let len = u32::from_le_bytes(rest[1..5].try_into().unwrap()) as usize;
        out.push((rest[0], len));
        rest = &rest[5 + len..];
    }
    out
}

/// A source workspace with shared content, every kind of node and a
/// non-default root mode.
fn source(db: &SqliteDb) -> CheckpointId {
    let vfs = vfs(db);
    let big = noise(3 * CHUNK_SIZE + 17, 9);
    put(&vfs, "/repo/big.bin", &big);
    put(&vfs, "/repo/copy.bin", &big);
    for i in 0..40 {
        put(
            &vfs,
            &format!("/repo/src/f{i:02}.rs"),
            format!("// file {i}\n"),
        );
    }
    put(&vfs, "/empty", "");
    vfs.mkdir(&p("/private"), false, Some(0o700)).unwrap();
    vfs.symlink("repo/src", &p("/src")).unwrap();
    vfs.chmod(&p("/repo/src/f00.rs"), 0o755).unwrap();
    vfs.chmod(&stead_vfs::VPath::root(), 0o750).unwrap();
    checkpoint(&vfs)
}

/// Copies checkpoint `id` of `from` into `to`, `page_bytes` a page, calling
/// `between` after each page; returns the pages.
fn fork(
    from: &Vfs<'_, SqliteDb>,
    id: CheckpointId,
    to: &Vfs<'_, SqliteDb>,
    page_bytes: usize,
    mut between: impl FnMut(usize),
) -> Vec<Vec<u8>> {
    let mut pages = Vec::new();
    let mut cursor = ExportCursor::Start;
    loop {
        let page = from.export_page(id, &cursor, page_bytes).unwrap();
        let progress = to.import_page(&page.frames).unwrap();
        pages.push(page.frames);
        between(pages.len());
        match (page.next, progress) {
            (Some(next), ImportProgress::Staged(status)) => {
                assert_eq!(status.resume, next, "the target records where to resume");
                cursor = next;
            }
            (None, ImportProgress::Finished { .. }) => return pages,
            (next, progress) => panic!("export at {next:?} but import {progress:?}"),
        }
    }
}

#[test]
fn a_fork_reads_back_byte_exact_in_bounded_frames() {
    let (source_db, target_db) = (db(), db());
    let id = source(&source_db);
    let from = vfs(&source_db);
    let to = vfs(&target_db);
    let page_bytes = 200 * 1024;
    let pages = fork(&from, id, &to, page_bytes, |_| {});

    let snapshot = from.snapshot(id).unwrap();
    assert_eq!(tree(&to, "/"), snapshot_tree(&snapshot, "/"));
    let paths = ["/", "/private", "/repo/src/f00.rs", "/repo/src/f01.rs"];
    assert_eq!(modes(&to, &paths), [0o750, 0o700, 0o755, 0o644]);
    assert_eq!(to.readlink(&p("/src")).unwrap(), "repo/src");
    assert_eq!(to.import_status().unwrap(), None, "the fork is usable");
    assert_eq!(to.revision().unwrap(), 1);
    let usage = to.usage().unwrap();
    assert_eq!(usage.stored_bytes, from.usage().unwrap().stored_bytes);
    assert_eq!((usage.files, usage.directories, usage.symlinks), (43, 3, 1));
    for table in [
        "import",
        "import_entries",
        "import_file_chunks",
        "import_chunks",
    ] {
        assert_eq!(count(&target_db, table), 0, "{table} left over");
    }
    // The change log says everything is new, so container sync sends it all.
    let logged: Vec<String> = to
        .changes_since(0, 100)
        .unwrap()
        .unwrap()
        .into_iter()
        .map(|c| c.path)
        .collect();
    assert_eq!(logged, ["/empty", "/private", "/repo", "/src"]);

    // Shared content crosses once; no page runs past its size by more than
    // one chunk frame; no frame past the limit.
    let all: Vec<(u8, usize)> = pages.iter().flat_map(|page| frames(page)).collect();
    let chunk_frames = all.iter().filter(|(tag, _)| *tag == CHUNK).count() as i64;
    assert_eq!(chunk_frames, chunks(&source_db));
    assert!(pages.len() >= 5, "{} pages", pages.len());
    for page in &pages {
        assert!(page.len() <= page_bytes + CHUNK_SIZE + 64, "{}", page.len());
    }
    assert!(all.iter().all(|(_, len)| *len <= stead_vfs::MAX_FORK_FRAME));
    assert_eq!(all.first().map(|f| f.0), Some(HEADER));
    assert_eq!(all.last().map(|f| f.0), Some(END));
}

#[test]
fn the_source_keeps_working_while_it_is_copied() {
    let (source_db, target_db) = (db(), db());
    let id = source(&source_db);
    let from = vfs(&source_db);
    let expected = snapshot_tree(&from.snapshot(id).unwrap(), "/");
    let to = vfs(&target_db);
    fork(&from, id, &to, 64 * 1024, |page| {
        put(&from, "/repo/big.bin", format!("rewritten {page}"));
        from.remove(&p("/repo/copy.bin"), false).ok();
        put(&from, &format!("/new/{page}"), "x");
    });
    assert_eq!(tree(&to, "/"), expected);
    assert_eq!(get(&from, "/new/1"), b"x");
}

#[test]
fn a_broken_fork_is_invisible_and_leaves_nothing_when_aborted() {
    let (source_db, target_db) = (db(), db());
    let id = source(&source_db);
    let from = vfs(&source_db);
    let to = vfs(&target_db);
    let fresh = dump(&db());
    let mut cursor = ExportCursor::Start;
    for _ in 0..4 {
        let page = from.export_page(id, &cursor, 128 * 1024).unwrap();
        to.import_page(&page.frames).unwrap();
        cursor = page.next.unwrap();
    }
    // Staged, not visible.
    assert!(to
        .list(&stead_vfs::VPath::root(), None, 10)
        .unwrap()
        .is_empty());
    let status = to.import_status().unwrap().unwrap();
    assert!(status.received_entries > 0 && status.received_chunks > 0);
    assert!(
        to.usage().unwrap().stored_bytes > 0,
        "staged content counts"
    );
    assert!(to.abort_import().unwrap());
    assert_eq!(dump(&target_db), fresh, "nothing left behind");
    assert!(!to.abort_import().unwrap());
    // The source lost nothing either.
    assert_eq!(
        tree(&from, "/"),
        snapshot_tree(&from.snapshot(id).unwrap(), "/")
    );
}

#[test]
fn an_import_resumes_where_it_broke_and_replays_harmlessly() {
    let (source_db, target_db) = (db(), db());
    let id = source(&source_db);
    let from = vfs(&source_db);
    let mut cursor = ExportCursor::Start;
    let mut last = Vec::new();
    {
        let to = vfs(&target_db);
        for _ in 0..3 {
            let page = from.export_page(id, &cursor, 100 * 1024).unwrap();
            to.import_page(&page.frames).unwrap();
            cursor = page.next.unwrap();
            last = page.frames;
        }
    }
    // A restart: a new view of the same database asks where to go on.
    let to = vfs(&target_db);
    to.import_page(&last).unwrap();
    let resume = to.import_status().unwrap().unwrap().resume;
    assert_eq!(resume, cursor);
    let token = resume.token();
    let mut cursor = ExportCursor::from_token(&token).unwrap();
    loop {
        let page = from.export_page(id, &cursor, 100 * 1024).unwrap();
        let progress = to.import_page(&page.frames).unwrap();
        match page.next {
            Some(next) => cursor = next,
            None => {
                assert!(matches!(progress, ImportProgress::Finished { .. }));
                break;
            }
        }
    }
    assert_eq!(
        tree(&to, "/"),
        snapshot_tree(&from.snapshot(id).unwrap(), "/")
    );
    assert_eq!(code(ExportCursor::from_token("{nope")), "EINVAL");
}

#[test]
fn bad_streams_and_targets_are_refused_and_change_nothing() {
    let (source_db, target_db) = (db(), db());
    let id = source(&source_db);
    let from = vfs(&source_db);
    let first = from
        .export_page(id, &ExportCursor::Start, 64 * 1024)
        .unwrap();

    // Not a fork target: it holds files, or checkpoints.
    let busy = db();
    put(&vfs(&busy), "/mine", "x");
    let before = dump(&busy);
    assert_eq!(code(vfs(&busy).import_page(&first.frames)), "EEXIST");
    assert_eq!(dump(&busy), before);
    let with_checkpoint = db();
    checkpoint(&vfs(&with_checkpoint));
    assert_eq!(
        code(vfs(&with_checkpoint).import_page(&first.frames)),
        "EEXIST"
    );

    // Frames before a header, cut short, of an unknown kind, too long.
    let to = vfs(&target_db);
    let before = dump(&target_db);
    let mut entries_only = Vec::new();
    frame(&mut entries_only, ENTRIES, b"[]");
    assert_eq!(code(to.import_page(&entries_only)), "ENOENT");
    assert_eq!(
        code(to.import_page(&first.frames[..first.frames.len() - 1])),
        "EINVAL"
    );
    assert_eq!(code(to.import_page(&[9, 0, 0, 0, 0])), "EINVAL");
    assert_eq!(code(to.import_page(&[CHUNK, 255, 255, 255, 255])), "EINVAL");
    let mut header = Vec::new();
    frame(&mut header, HEADER, br#"{"format": 2, "revision": 1}"#);
    assert_eq!(code(to.import_page(&header)), "EINVAL");
    assert_eq!(dump(&target_db), before);

    // Quotas are checked from the header, before any byte arrives.
    let small = Vfs::new(&target_db, NOW).with_limits(Limits {
        max_stored_bytes: CHUNK_SIZE as u64,
        ..Limits::default()
    });
    assert_eq!(code(small.import_page(&first.frames)), "ENOSPC");
    let few = Vfs::new(&target_db, NOW).with_limits(Limits {
        max_nodes: 10,
        ..Limits::default()
    });
    assert_eq!(code(few.import_page(&first.frames)), "ENOSPC");
    assert_eq!(dump(&target_db), before);

    // A chunk that does not match its hash spoils only its page.
    to.import_page(&first.frames).unwrap();
    let staged = dump(&target_db);
    let mut corrupt = Vec::new();
    let data = b"hello".to_vec();
    let mut payload = blake3::hash(&data).as_bytes().to_vec();
    payload.extend_from_slice(b"jello");
    frame(&mut corrupt, CHUNK, &payload);
    assert_eq!(code(to.import_page(&corrupt)), "EINVAL");
    assert_eq!(dump(&target_db), staged);
    // Ending before the content arrived is refused; aborting cleans up.
    let mut end = Vec::new();
    let declared = to.import_status().unwrap().unwrap().entries;
    frame(
        &mut end,
        END,
        json!({"entries": declared, "chunks": 0, "bytes": 0})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(code(to.import_page(&end)), "EINVAL");
    assert!(to
        .list(&stead_vfs::VPath::root(), None, 10)
        .unwrap()
        .is_empty());
    to.abort_import().unwrap();

    // Exporting what cannot be forked.
    let partial = auto(
        &from,
        Operation::Tool("write".into()),
        Scope::Paths(&[p("/empty")]),
    );
    assert_eq!(
        code(from.export_page(partial.id, &ExportCursor::Start, 1024)),
        "EINVAL"
    );
    assert_eq!(
        code(from.export_page(CheckpointId(99), &ExportCursor::Start, 1024)),
        "ENOENT"
    );
}

/// A stream written by hand: a header, then `entries`, then the end.
fn hand_made(entries: serde_json::Value, chunks: &[&[u8]]) -> Vec<u8> {
    let count = entries.as_array().unwrap().len();
    let mut out = Vec::new();
    let header = json!({"format": 1, "revision": 5, "root_mode": 0o755, "root_mtime": 0,
        "entries": count, "chunks": chunks.len(), "bytes": 0});
    frame(&mut out, HEADER, header.to_string().as_bytes());
    frame(&mut out, ENTRIES, entries.to_string().as_bytes());
    for data in chunks {
        let mut payload = blake3::hash(data).as_bytes().to_vec();
        payload.extend_from_slice(data);
        frame(&mut out, CHUNK, &payload);
    }
    let end = json!({"entries": count, "chunks": chunks.len(), "bytes": 0});
    frame(&mut out, END, end.to_string().as_bytes());
    out
}

#[test]
fn a_stream_that_is_not_a_tree_is_refused() {
    let hash = blake3::hash(b"abc").to_hex().to_string();
    let file = |ino: i64, parent: i64, name: &str| {
        json!({"ino": ino, "parent": parent, "name": name, "type": "file", "mode": 0o644,
               "size": 3, "mtime": 0, "chunks": [hash]})
    };
    let dir = |ino: i64, parent: i64, name: &str| {
        json!({"ino": ino, "parent": parent, "name": name, "type": "dir", "mode": 0o755,
               "size": 0, "mtime": 0})
    };
    let cases = [
        ("no parent", json!([file(2, 7, "a")])),
        (
            "parent is a file",
            json!([file(2, 1, "a"), file(3, 2, "b")]),
        ),
        ("a cycle", json!([dir(2, 3, "a"), dir(3, 2, "b")])),
        ("a bad name", json!([file(2, 1, "a/b")])),
        ("dot-dot", json!([file(2, 1, "..")])),
        ("the root", json!([file(1, 1, "a")])),
        (
            "a size its chunks do not hold",
            json!([{"ino": 2, "parent": 1, "name": "a", "type": "file", "mode": 0o644,
                    "size": 4, "mtime": 0, "chunks": [hash]}]),
        ),
        (
            "a directory with content",
            json!([{"ino": 2, "parent": 1, "name": "a", "type": "dir", "mode": 0o755,
                    "size": 3, "mtime": 0}]),
        ),
    ];
    for (what, entries) in cases {
        let target = db();
        let before = dump(&target);
        let error = vfs(&target)
            .import_page(&hand_made(entries, &[b"abc"]))
            .unwrap_err();
        assert_eq!(error.code().as_str(), "EINVAL", "{what}: {error}");
        assert_eq!(dump(&target), before, "{what}");
    }
    // The same stream, well formed, is taken.
    let target = db();
    let progress = vfs(&target)
        .import_page(&hand_made(
            json!([dir(2, 1, "d"), file(3, 2, "a")]),
            &[b"abc"],
        ))
        .unwrap();
    assert!(matches!(
        progress,
        ImportProgress::Finished { entries: 2, .. }
    ));
    assert_eq!(get(&vfs(&target), "/d/a"), b"abc");
}

#[test]
fn content_past_the_quota_is_refused_as_it_arrives() {
    // The header understates the content; the chunks themselves are counted.
    let big = noise(CHUNK_SIZE, 3);
    let stream = hand_made(
        json!([{"ino": 2, "parent": 1, "name": "big", "type": "file", "mode": 0o644,
                "size": CHUNK_SIZE, "mtime": 0,
                "chunks": [blake3::hash(&big).to_hex().to_string()]}]),
        &[&big],
    );
    let target = db();
    let before = dump(&target);
    let small = Vfs::new(&target, NOW).with_limits(Limits {
        max_stored_bytes: CHUNK_SIZE as u64 - 1,
        ..Limits::default()
    });
    let error = small.import_page(&stream).unwrap_err();
    assert_eq!(error.code().as_str(), "ENOSPC", "{error}");
    assert_eq!(dump(&target), before);
    // With room, the same stream is a workspace.
    vfs(&target).import_page(&stream).unwrap();
    assert_eq!(get(&vfs(&target), "/big"), big);
}
