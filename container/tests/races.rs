//! A command racing the program: while pushes and scans run, a process
//! swaps a workspace directory for a symlink to a directory outside the
//! workspace, over and over. The program is root; nothing outside the
//! workspace may change and nothing outside may be reported as the
//! workspace's.

mod common;

use std::collections::BTreeSet;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use serde_json::json;
use stead_sync::live::LiveReport;
use stead_sync::{hash_content, ApplyReply, Change, Entry};

/// What the outside directory holds: a program the pushes name (as
/// `/usr/bin/python3` would be) and a root-only file nothing in the
/// workspace names (as `/etc/shadow` would be).
const PROGRAM: &[u8] = b"#!/bin/sh\necho the system's own program\n";
const SECRET_FILE: &[u8] = b"root:$6$only-root-may-read-this\n";

/// How long the race runs.
const RACE: Duration = Duration::from_secs(4);

/// Everything about a path that must not change.
#[derive(Debug, PartialEq, Eq)]
struct Fixed {
    content: Option<Vec<u8>>,
    mode: u32,
    uid: u32,
    gid: u32,
    ino: u64,
}

fn fixed(path: &Path) -> Fixed {
    let meta = std::fs::symlink_metadata(path).unwrap();
    Fixed {
        content: meta.is_file().then(|| std::fs::read(path).unwrap()),
        mode: meta.mode(),
        uid: meta.uid(),
        gid: meta.gid(),
        ino: meta.ino(),
    }
}

/// The outside directory and its files, as they must stay.
fn outside_state(outside: &Path) -> (BTreeSet<String>, Vec<Fixed>) {
    let names = std::fs::read_dir(outside)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let paths = [
        outside.to_path_buf(),
        outside.join("python3"),
        outside.join("shadow"),
    ];
    (names, paths.iter().map(|p| fixed(p)).collect())
}

fn c_path(path: &Path) -> CString {
    CString::new(path.as_os_str().as_bytes()).unwrap()
}

/// Swaps `a` and `b` atomically (what a racing agent would do).
fn exchange(a: &Path, b: &Path) -> bool {
    let (a, b) = (c_path(a), c_path(b));
    // SAFETY: two NUL-terminated paths; no memory is handed over.
    unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        ) == 0
    }
}

/// Keeps swapping workspace directory `/d` with `/link`, a symlink to
/// `outside`, until `stop`; puts either back when a push removed it.
fn swapper(root: PathBuf, outside: PathBuf, stop: Arc<AtomicBool>, swaps: Arc<AtomicU64>) {
    let (d, link) = (root.join("d"), root.join("link"));
    while !stop.load(Ordering::Relaxed) {
        if exchange(&d, &link) {
            swaps.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        if std::fs::symlink_metadata(&d).is_err() && std::fs::symlink_metadata(&link).is_err() {
            let _ = std::fs::create_dir(&d);
        }
        for name in [&d, &link] {
            if std::fs::symlink_metadata(name).is_err() {
                let _ = std::os::unix::fs::symlink(&outside, name);
            }
        }
    }
}

/// Pushes `changes`, sending the chunks asked for; any answer is fine (a
/// push the race made fail is refused, which is what it should be).
fn push(client: &Client, full: bool, changes: &[Change], contents: &[&[u8]]) {
    let answer = client.push(full, changes);
    if answer.status != 200 {
        return;
    }
    if let Ok(ApplyReply::Need { chunks }) = serde_json::from_slice(&answer.body) {
        let pieces: Vec<&[u8]> = contents
            .iter()
            .copied()
            .filter(|c| chunks.iter().any(|h| hash_content(c).contains(h)))
            .collect();
        client.upload(&pieces).expect(200);
        client.push(full, changes);
    }
}

#[test]
fn a_directory_swapped_for_a_symlink_never_leads_the_program_outside() {
    let computer = Computer::start();
    let client = computer.client();
    let outside_dir = tempfile::tempdir().unwrap();
    let outside = outside_dir.path().to_path_buf();
    std::fs::write(outside.join("python3"), PROGRAM).unwrap();
    std::fs::write(outside.join("shadow"), SECRET_FILE).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        outside.join("python3"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    std::fs::set_permissions(
        outside.join("shadow"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let before = outside_state(&outside);

    client.sync(
        true,
        &[
            dir("/", 0o755),
            dir("/d", 0o755),
            file("/d/python3", 0o644, b"v0"),
        ],
        &[b"v0"],
    );
    std::os::unix::fs::symlink(&outside, client.disk("/link")).unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicU64::new(0));
    let racer = {
        let (root, outside) = (client.root.clone(), outside.clone());
        let (stop, swaps) = (stop.clone(), swaps.clone());
        std::thread::spawn(move || swapper(root, outside, stop, swaps))
    };

    let outside_hashes = [hash_content(PROGRAM), hash_content(SECRET_FILE)];
    let started = Instant::now();
    let mut round = 0u64;
    let mut reported = 0usize;
    while started.elapsed() < RACE {
        round += 1;
        let content = format!("workspace version {round}\n").into_bytes();
        // Content and mode (written through a temporary file and a
        // rename), then the same content with a set-id mode (set in
        // place), a new file and the directory's mode.
        let changes = [
            dir("/d", 0o750),
            file("/d/python3", 0o6755, &content),
            file(&format!("/d/new-{round}"), 0o6755, &content),
        ];
        push(&client, false, &changes, &[&content]);
        let again = [dir("/d", 0o700), file("/d/python3", 0o4755, &content)];
        push(&client, false, &again, &[]);
        if round % 5 == 0 {
            // A full push removes what it does not list, the link too.
            let full = [
                dir("/", 0o755),
                dir("/d", 0o755),
                file("/d/python3", 0o644, &content),
            ];
            push(&client, true, &full, &[&content]);
        }

        // The read direction: nothing outside is reported as the
        // workspace's, by path or by content.
        let id = format!("scan-{round}");
        let answer = client.post("/v1/live/scan", &json!({ "id": id, "limit": 1000 }));
        if answer.status == 200 {
            let report: LiveReport = serde_json::from_slice(&answer.body).unwrap();
            for change in &report.changes {
                assert!(
                    !change.path.ends_with("/shadow"),
                    "an outside file was reported: {change:?}"
                );
                if let Some(Entry::File { chunks, .. }) = &change.entry {
                    assert!(
                        !outside_hashes.contains(chunks),
                        "outside content was reported at {}",
                        change.path
                    );
                }
            }
            reported += report.changes.len();
            if !report.changes.is_empty() {
                client
                    .post("/v1/live/ack", &json!({ "report": id, "left_out": [] }))
                    .expect(200);
            }
        }
        assert_eq!(
            outside_state(&outside),
            before,
            "the outside directory changed in round {round}"
        );
    }
    stop.store(true, Ordering::Relaxed);
    racer.join().unwrap();

    assert_eq!(outside_state(&outside), before);
    // The race really ran: the directory was swapped many times while the
    // program worked, and scans saw the workspace change.
    let swaps = swaps.load(Ordering::Relaxed);
    assert!(swaps > 100, "only {swaps} swaps");
    assert!(round > 10, "only {round} rounds");
    assert!(reported > 0, "no scan reported anything");
    // The program still serves, and the workspace is its own again.
    let _ = std::fs::remove_file(client.disk("/link"));
    if std::fs::symlink_metadata(client.disk("/d")).is_ok_and(|m| !m.is_dir()) {
        std::fs::remove_file(client.disk("/d")).unwrap();
    }
    let content = b"after the race\n";
    client.sync(
        false,
        &[dir("/d", 0o755), file("/d/python3", 0o755, content)],
        &[content],
    );
    assert_eq!(std::fs::read(client.disk("/d/python3")).unwrap(), content);
    assert_eq!(mode_of(&client.disk("/d/python3")), 0o755);
}

/// The other way to put someone else's file on a workspace path: a hard
/// link (where the kernel lets a user link a file it does not own). The
/// program neither reads it nor changes it in place; a push replaces the
/// name.
#[test]
fn a_hard_link_to_a_file_the_commands_user_does_not_own_is_not_the_workspaces() {
    if !running_as_root() {
        // Commands then run as the program's own user: no file is
        // someone else's.
        return;
    }
    let computer = Computer::start();
    let client = computer.client();
    client.sync(true, &[dir("/", 0o755)], &[]);
    // Beside the workspace, on the same file system; root's, as the
    // system's files are.
    let outside = computer.dir.path().join("shadow");
    std::fs::write(&outside, SECRET_FILE).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::hard_link(&outside, client.disk("/h")).unwrap();
    let before = fixed(&outside);

    let answer = client.post("/v1/live/scan", &json!({ "id": "s", "limit": 100 }));
    let report: LiveReport = serde_json::from_slice(&answer.expect(200).body).unwrap();
    assert!(
        report.changes.iter().all(|c| c.path != "/h"),
        "{:?}",
        report.changes
    );

    // Its content, with a set-id mode: written anew, the link replaced.
    client.sync(false, &[file("/h", 0o6755, SECRET_FILE)], &[SECRET_FILE]);
    assert_eq!(fixed(&outside), before);
    let written = std::fs::symlink_metadata(client.disk("/h")).unwrap();
    assert_ne!(written.ino(), before.ino);
    assert_eq!(written.uid(), NOBODY);
    assert_eq!(mode_of(&client.disk("/h")), 0o6755);

    // Linked again over the pushed file: a mode-only push is not done in
    // place on the outside file.
    std::fs::remove_file(client.disk("/h")).unwrap();
    std::fs::hard_link(&outside, client.disk("/h")).unwrap();
    let _ = client.push(false, &[file("/h", 0o4755, SECRET_FILE)]);
    assert_eq!(fixed(&outside), before);
}
