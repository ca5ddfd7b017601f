//! `stead-bench checkpoint`: the costs of time travel, measured on the VFS
//! itself over real SQLite (a database file in WAL mode), against baselines
//! taken in the same run. HTTP-level figures come with the routes.
//!
//! 1. A checkpoint of a 10,000-file / ~200 MiB workspace against a plain
//!    listing of the whole tree (`walk`, one statement per 400 entries, the
//!    floor of anything that looks at every path) and against 100 ms.
//! 2. A diff of two checkpoints ten files apart, in workspaces of 1,000 and
//!    10,000 files: the larger must cost no more (the change log names the
//!    ten paths), and under 20 ms.
//! 3. A fork: exporting that checkpoint and importing it into an empty
//!    database, in MiB/s of distinct content, against reading the same
//!    files from the source.

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use serde_json::json;
use stead_sql::{migrate, params, Sql, SqliteDb, MIGRATIONS};
use stead_vfs::{
    CheckpointId, DiffOptions, ExportCursor, ImportProgress, NewCheckpoint, Node, Point, VPath,
    Vfs, WriteOptions,
};
use tempfile::TempDir;

use crate::gen::{Noise, Rng};
use crate::report::{Aim, Report, Row, Unit};
use crate::stats::{best_of, mib_per_sec, millis, timed, MIB};

/// Runs of each metadata measure (cheap, and noisy on a shared machine).
const RUNS: usize = 10;
/// Runs of each measure that moves the whole content.
const CONTENT_RUNS: usize = 2;
/// One file in a hundred is large (several chunks).
const LARGE_EVERY: usize = 100;
const LARGE_BYTES: usize = 1 << 20;
/// Files per directory.
const PER_DIR: usize = 100;
/// Pages of the fork stream, as a Durable Object would send them.
const PAGE_BYTES: usize = 8 << 20;
const NOW: i64 = 1_700_000_000_000;

/// Sizes of one run.
#[derive(Clone, Copy)]
pub struct Sizes {
    pub files: usize,
    pub bytes: u64,
    /// The smaller workspace the diff is also measured in.
    pub small_files: usize,
}

impl Sizes {
    pub const FULL: Sizes = Sizes {
        files: 10_000,
        bytes: 200 * MIB,
        small_files: 1_000,
    };
    pub const QUICK: Sizes = Sizes {
        files: 1_000,
        bytes: 20 * MIB,
        small_files: 100,
    };
}

/// A workspace database in a temporary folder.
struct Workspace {
    db: SqliteDb,
    _dir: TempDir,
    files: Vec<VPath>,
    bytes: u64,
}

fn open_db(dir: &Path) -> SqliteDb {
    let db = SqliteDb::open(&dir.join("workspace.sqlite")).expect("open database");
    // WAL without a sync per commit: the Durable Object's storage does not
    // make a request wait for a disk flush either.
    db.query("PRAGMA journal_mode = WAL", params![])
        .expect("WAL");
    db.execute("PRAGMA synchronous = NORMAL", params![])
        .expect("synchronous");
    migrate(&db, MIGRATIONS).expect("migrate");
    db
}

/// `files` files of ~`bytes` in all, `PER_DIR` to a directory, one in
/// `LARGE_EVERY` of 1 MiB; every file's bytes differ (seeded noise).
fn workspace(files: usize, bytes: u64) -> Workspace {
    let dir = tempfile::tempdir().expect("temporary folder");
    let db = open_db(dir.path());
    let large = files / LARGE_EVERY;
    let small_total = bytes.saturating_sub((large * LARGE_BYTES) as u64);
    let small_mean = (small_total / (files - large).max(1) as u64).max(1) as usize;
    let mut rng = Rng::new(42);
    let vfs = Vfs::new(&db, NOW);
    let mut paths = Vec::with_capacity(files);
    let mut total = 0u64;
    for i in 0..files {
        let size = if i % LARGE_EVERY == LARGE_EVERY - 1 {
            LARGE_BYTES
        } else {
            rng.between(1, 2 * small_mean - 1)
        };
        let mut data = Vec::with_capacity(size);
        Noise::new(i as u64 + 1, size as u64)
            .read_to_end(&mut data)
            .expect("noise");
        let path = VPath::parse(&format!("/ws/d{:03}/f{i:05}.bin", i / PER_DIR)).expect("path");
        vfs.write(&path, &data, WriteOptions::default())
            .expect("write");
        total += size as u64;
        paths.push(path);
    }
    Workspace {
        db,
        _dir: dir,
        files: paths,
        bytes: total,
    }
}

fn take(vfs: &Vfs<'_, SqliteDb>) -> CheckpointId {
    vfs.create_checkpoint(NewCheckpoint {
        actor: "bench",
        name: None,
        note: None,
    })
    .expect("checkpoint")
    .id
}

/// Rewrites ten files spread over the workspace, as a small edit would.
fn change_ten(vfs: &Vfs<'_, SqliteDb>, files: &[VPath], round: u64) {
    for k in 0..10 {
        let path = &files[(k * files.len() / 10 + 7) % files.len()];
        let text = format!("edited in round {round}\n");
        vfs.write(path, text.as_bytes(), WriteOptions::default())
            .expect("edit");
    }
}

/// Adds one row per baseline for the same figure.
fn compare(
    report: &mut Report,
    section: &str,
    measure: &str,
    (figure, unit): (f64, Unit),
    baselines: &[(f64, &str, Option<Aim>)],
) {
    for &(baseline, label, aim) in baselines {
        report.rows.push(Row {
            section: section.to_string(),
            measure: measure.to_string(),
            figure: Ok(figure),
            unit,
            baseline: Ok(baseline),
            baseline_label: label.to_string(),
            aim,
        });
    }
}

/// Best time of a diff of two checkpoints ten files apart; also checks it
/// finds exactly those ten.
fn diff_time(space: &Workspace, report: &mut Report) -> Duration {
    let vfs = Vfs::new(&space.db, NOW);
    let a = take(&vfs);
    change_ten(&vfs, &space.files, 1);
    let b = take(&vfs);
    let (best, found) = best_of(RUNS, |_| {
        timed(|| {
            vfs.diff(
                Point::Checkpoint(a),
                Point::Checkpoint(b),
                &DiffOptions::default(),
            )
            .expect("diff")
        })
    });
    if found.entries.len() != 10 {
        report.warn(format!(
            "diff of {} files found {} changes, not 10",
            space.files.len(),
            found.entries.len()
        ));
    }
    best
}

/// The nodes of `files`, to read them in batches.
fn nodes(vfs: &Vfs<'_, SqliteDb>, files: &[VPath]) -> Vec<Node> {
    files
        .iter()
        .map(|path| vfs.stat(path, true).expect("stat").1)
        .collect()
}

/// Reads every file's content through the VFS, as a download would;
/// returns the bytes read.
fn read_all(vfs: &Vfs<'_, SqliteDb>, nodes: &[Node]) -> u64 {
    let mut total = 0u64;
    for batch in nodes.chunks(256) {
        for data in vfs.read_files(batch).expect("read") {
            total += data.len() as u64;
        }
    }
    total
}

/// Whether every file reads the same in both workspaces.
fn same_content(a: &Vfs<'_, SqliteDb>, b: &Vfs<'_, SqliteDb>, files: &[VPath]) -> bool {
    files.chunks(256).all(|batch| {
        let read = |vfs| vfs_read(vfs, batch);
        read(a) == read(b)
    })
}

fn vfs_read(vfs: &Vfs<'_, SqliteDb>, files: &[VPath]) -> Vec<Vec<u8>> {
    vfs.read_files(&nodes(vfs, files)).expect("read")
}

/// The floor of any import: writing the same files into a fresh database
/// with the write tool's code path (reading them is not timed).
fn write_floor(from: &Vfs<'_, SqliteDb>, files: &[VPath]) -> (Duration, u64) {
    let dir = tempfile::tempdir().expect("temporary folder");
    let target = open_db(dir.path());
    let to = Vfs::new(&target, NOW);
    let mut elapsed = Duration::ZERO;
    let mut bytes = 0u64;
    for batch in files.chunks(256) {
        let contents = vfs_read(from, batch);
        let (took, ()) = timed(|| {
            for (path, data) in batch.iter().zip(&contents) {
                to.write(path, data, WriteOptions::default())
                    .expect("write");
            }
        });
        elapsed += took;
        bytes += contents.iter().map(|data| data.len() as u64).sum::<u64>();
    }
    (elapsed, bytes)
}

/// Exports checkpoint `id` of `from` into a fresh database; returns the
/// time, the distinct chunk bytes sent and the target.
fn fork(from: &Vfs<'_, SqliteDb>, id: CheckpointId) -> (Duration, u64, TempDir) {
    let dir = tempfile::tempdir().expect("temporary folder");
    let target = open_db(dir.path());
    let to = Vfs::new(&target, NOW);
    let mut sent = 0u64;
    let (elapsed, ()) = timed(|| {
        let mut cursor = ExportCursor::Start;
        loop {
            let page = from.export_page(id, &cursor, PAGE_BYTES).expect("export");
            sent += page.chunk_bytes;
            let progress = to.import_page(&page.frames).expect("import");
            match (page.next, progress) {
                (Some(next), ImportProgress::Staged(_)) => cursor = next,
                (None, ImportProgress::Finished { .. }) => break,
                (next, progress) => panic!("export at {next:?}, import {progress:?}"),
            }
        }
    });
    drop(target);
    (elapsed, sent, dir)
}

pub fn run(sizes: Sizes, report: &mut Report) {
    eprintln!(
        "checkpoint: building {} files, {} MiB",
        sizes.files,
        sizes.bytes / MIB
    );
    let space = workspace(sizes.files, sizes.bytes);
    let vfs = Vfs::new(&space.db, NOW);
    let section = format!(
        "checkpoint of {} files / {:.0} MiB in {} directories (VFS on SQLite, WAL), best of {RUNS}",
        sizes.files,
        space.bytes as f64 / MIB as f64,
        sizes.files.div_ceil(PER_DIR) + 1
    );

    eprintln!("checkpoint: listing and checkpoints");
    let (listing, visited) = best_of(RUNS, |_| {
        timed(|| {
            let mut visited = 0usize;
            vfs.walk(&VPath::root(), None, |_| {
                visited += 1;
                Ok(stead_vfs::Flow::Continue)
            })
            .expect("walk");
            visited
        })
    });
    let (checkpoint, ()) = best_of(RUNS, |_| {
        let (elapsed, id) = timed(|| take(&vfs));
        vfs.delete_checkpoint(id).expect("delete");
        (elapsed, ())
    });
    if visited != sizes.files + sizes.files.div_ceil(PER_DIR) + 1 {
        report.warn(format!("the listing visited {visited} paths"));
    }
    let listing_label = format!("listing of {visited} paths");
    compare(
        report,
        &section,
        "checkpoint",
        (millis(checkpoint), Unit::Millis),
        &[
            (millis(listing), &listing_label, Some(Aim::AtMost(2.0))),
            (100.0, "aim", Some(Aim::AtMost(1.0))),
        ],
    );

    eprintln!(
        "checkpoint: diffs at {} and {} files",
        sizes.small_files, sizes.files
    );
    let small = workspace(
        sizes.small_files,
        sizes.bytes * sizes.small_files as u64 / sizes.files as u64,
    );
    let small_diff = diff_time(&small, report);
    let large_diff = diff_time(&space, report);
    let diff_section = "diff of two checkpoints 10 files apart (and restoring them), best of 10";
    compare(
        report,
        diff_section,
        &format!("diff at {} files", sizes.files),
        (millis(large_diff), Unit::Millis),
        &[
            (
                millis(small_diff),
                &format!("at {} files", sizes.small_files),
                Some(Aim::AtMost(1.5)),
            ),
            (20.0, "aim", Some(Aim::AtMost(1.0))),
        ],
    );
    // Putting those ten files back, for scale: restore the checkpoint
    // before the edit, then (untimed) the one after it, and again.
    let newest = vfs.checkpoints(None, 2).expect("list");
    let (after_edit, before_edit) = (newest[0].id, newest[1].id);
    let (restore, restored) = best_of(RUNS, |_| {
        let timed_restore = timed(|| vfs.restore(before_edit, None).expect("restore"));
        vfs.restore(after_edit, None).expect("restore");
        timed_restore
    });
    if restored.changes.len() != 10 {
        report.warn(format!(
            "the restore put back {} paths, not 10",
            restored.changes.len()
        ));
    }
    compare(
        report,
        diff_section,
        &format!("restore of them at {} files", sizes.files),
        (millis(restore), Unit::Millis),
        &[(millis(large_diff), "the diff", None)],
    );

    eprintln!("checkpoint: fork of {} MiB", space.bytes / MIB);
    let id = take(&vfs);
    let source_nodes = nodes(&vfs, &space.files);
    let (read, read_bytes) = best_of(CONTENT_RUNS, |_| timed(|| read_all(&vfs, &source_nodes)));
    let (forked, (sent, target_dir)) = best_of(CONTENT_RUNS, |_| {
        let (elapsed, sent, target_dir) = fork(&vfs, id);
        (elapsed, (sent, target_dir))
    });
    let target = SqliteDb::open(&target_dir.path().join("workspace.sqlite")).expect("reopen");
    if !same_content(&vfs, &Vfs::new(&target, NOW), &space.files) {
        report.warn("the fork reads back other bytes than the source".into());
    }
    let (written, written_bytes) = best_of(CONTENT_RUNS, |_| write_floor(&vfs, &space.files));
    let fork_section = format!(
        "fork: export + import of {:.0} MiB of distinct content, {} MiB pages, best of 2",
        sent as f64 / MIB as f64,
        PAGE_BYTES / (1 << 20)
    );
    compare(
        report,
        &fork_section,
        "export + import",
        (mib_per_sec(sent, forked), Unit::MibPerSec),
        &[
            (
                mib_per_sec(read_bytes, read),
                "reading the files",
                Some(Aim::AtLeast(0.33)),
            ),
            (
                mib_per_sec(written_bytes, written),
                "writing the files",
                Some(Aim::AtLeast(0.75)),
            ),
        ],
    );
    report.setup["checkpoint"] = json!({
        "files": sizes.files,
        "bytes": space.bytes,
        "small_files": sizes.small_files,
        "runs": RUNS,
        "content_runs": CONTENT_RUNS,
        "page_bytes": PAGE_BYTES,
        "sqlite": "file, journal_mode=WAL, synchronous=NORMAL",
        "listing_ms": millis(listing),
        "checkpoint_ms": millis(checkpoint),
        "fork_seconds": forked.as_secs_f64(),
    });
}
