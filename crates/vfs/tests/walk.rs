//! The tree walk on real SQLite: one statement per page of entries, in
//! depth-first name order, against a walk made of one listing per
//! directory (what it replaced), across page boundaries, resumes, skipped
//! directories and depth limits.

mod common;

use common::*;
use stead_vfs::{Flow, Kind, VPath, Vfs};

type Db = stead_sql::SqliteDb;

/// A tree larger than a walk's page (400 entries), with names whose order
/// as components differs from their order as strings (`a` < `a-b` < `a.b`,
/// but `a/x` comes before `a-b`), and a symlink to a directory.
fn fixture(vfs: &Vfs<'_, Db>) {
    for dir in ["a", "a-b", "a.b", "z"] {
        for i in 0..150 {
            put(vfs, &format!("/t/{dir}/f{i:03}"), b"x");
        }
    }
    put(vfs, "/t/a/x/deep/er/most", b"x");
    put(vfs, "/t/a-b/x", b"x");
    vfs.symlink("/t/a", &p("/t/link")).unwrap();
}

/// The reference: each directory listed, recursively, in name order.
fn by_listing(vfs: &Vfs<'_, Db>, dir: &VPath, max_depth: usize, out: &mut Vec<String>) {
    if max_depth == 0 {
        return;
    }
    for entry in vfs.list(dir, None, usize::MAX >> 1).unwrap() {
        let path = dir.join(&entry.name);
        out.push(path.to_string());
        if entry.node.kind == Kind::Dir {
            by_listing(vfs, &path, max_depth - 1, out);
        }
    }
}

fn walked(vfs: &Vfs<'_, Db>, after: Option<&str>, max_depth: usize) -> Vec<String> {
    let mut out = Vec::new();
    let after = after.map(p);
    vfs.walk_to_depth(&p("/t"), after.as_ref(), max_depth, |visit| {
        out.push(visit.path.to_string());
        Ok(Flow::Continue)
    })
    .unwrap();
    out
}

#[test]
fn a_walk_visits_what_listing_each_directory_does_in_the_same_order() {
    let db = db();
    let vfs = vfs(&db);
    fixture(&vfs);
    for depth in [1, 2, 3, usize::MAX] {
        let mut expected = Vec::new();
        by_listing(&vfs, &p("/t"), depth, &mut expected);
        assert_eq!(walked(&vfs, None, depth), expected, "depth {depth}");
    }
    let mut all = Vec::new();
    by_listing(&vfs, &p("/t"), usize::MAX, &mut all);
    assert!(all.len() > 600, "{} entries span pages", all.len());
    let at = all.iter().position(|path| path == "/t/a/x").unwrap();
    assert_eq!(all[at + 1], "/t/a/x/deep", "a directory's children first");
    // Resuming strictly after any path gives the rest, even after a path
    // that no longer exists.
    for at in [0, 1, 149, 150, 151, 399, 400, 401, all.len() - 1] {
        assert_eq!(walked(&vfs, Some(&all[at]), usize::MAX), all[at + 1..]);
    }
    assert_eq!(walked(&vfs, Some("/t/a/f0005"), usize::MAX), all[2..]);
}

#[test]
fn a_skipped_directory_is_not_entered_even_across_pages() {
    let db = db();
    let vfs = vfs(&db);
    fixture(&vfs);
    let mut seen = Vec::new();
    vfs.walk(&p("/t"), None, |visit| {
        seen.push(visit.path.to_string());
        Ok(match visit.path.as_str() {
            "/t/a" | "/t/a.b" => Flow::SkipChildren,
            "/t/z/f100" => Flow::Stop,
            _ => Flow::Continue,
        })
    })
    .unwrap();
    assert!(!seen.iter().any(|path| path.starts_with("/t/a/")));
    assert!(!seen.iter().any(|path| path.starts_with("/t/a.b/")));
    assert_eq!(
        seen.iter().filter(|p| p.starts_with("/t/a-b/")).count(),
        151
    );
    assert_eq!(seen.last().map(String::as_str), Some("/t/z/f100"));
    assert!(
        seen.contains(&"/t/link".to_string()),
        "a symlink is visited"
    );
    assert!(!seen.iter().any(|path| path.starts_with("/t/link/")));
}

#[test]
fn a_subtree_comes_whole_or_not_at_all() {
    let db = db();
    let vfs = vfs(&db);
    fixture(&vfs);
    let mut expected = Vec::new();
    by_listing(&vfs, &p("/t"), usize::MAX, &mut expected);
    let entries = vfs
        .subtree_entries(&p("/t"), usize::MAX, 10_000)
        .unwrap()
        .expect("within the limit");
    let paths: Vec<String> = entries
        .iter()
        .map(|d| format!("/t/{}", d.relative))
        .collect();
    assert_eq!(paths, expected);
    let (_, a) = vfs.stat(&p("/t/a"), false).unwrap();
    let first = &entries[0];
    assert_eq!(
        (first.relative.as_str(), first.parent),
        ("a", vfs.stat(&p("/t"), false).unwrap().1.ino)
    );
    assert_eq!(entries[1].parent, a.ino);
    assert_eq!(entries[1].entry.name, "f000");
    assert!(vfs
        .subtree_entries(&p("/t"), usize::MAX, 500)
        .unwrap()
        .is_none());
    let shallow = vfs.subtree_entries(&p("/t"), 1, 10).unwrap().unwrap();
    assert_eq!(shallow.len(), 5);
}
