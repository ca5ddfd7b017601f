//! `stead-bench git`: `git status` in the light shell (stead's exec over
//! the VFS on SQLite, as the Durable Object runs it) on a clean 10,000-file
//! repository and on one with a file changed, against the machine's real
//! `git status` on the same files on disk, in the same run. A cold computer
//! start (about 1.1 s here, see the computer benchmark) is what the light
//! shell saves on top. A clone row (`git_clone.rs`) follows.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::json;
use stead_shell::{exec, Clock, ExecRequest, Limits};
use stead_sql::{migrate, params, Sql, SqliteDb, MIGRATIONS};
use stead_vfs::{VPath, Vfs, WriteOptions};
use tempfile::TempDir;

use crate::report::{Aim, Report, Row, Unit};

#[path = "git_clone.rs"]
mod clone;
use crate::stats::{best_of, millis, timed};

const RUNS: usize = 5;
const PER_DIR: usize = 100;

/// Sizes of one run.
#[derive(Clone, Copy)]
pub struct Sizes {
    pub files: usize,
    /// Files of the repository the clone row clones.
    pub clone_files: usize,
}

impl Sizes {
    pub const FULL: Sizes = Sizes {
        files: 10_000,
        clone_files: 5_000,
    };
    pub const QUICK: Sizes = Sizes {
        files: 1_000,
        clone_files: 500,
    };
}

struct WallClock;

impl Clock for WallClock {
    fn now_ms(&self) -> u64 {
        now_ms() as u64
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

fn path_of(i: usize) -> String {
    format!("src/d{:03}/file{i:05}.txt", i / PER_DIR)
}

fn content(i: usize) -> String {
    format!("file {i}\n{}\n", "some text in a source file ".repeat(4))
}

/// An exec of `command` at `/` with the default limits.
fn request(command: &str) -> ExecRequest {
    ExecRequest {
        command: command.to_string(),
        cwd: VPath::root(),
        env: BTreeMap::new(),
        stdin: Vec::new(),
        limits: Limits::default(),
    }
}

/// Runs `command` in the light shell at `/`, as an exec does.
fn light(db: &SqliteDb, command: &str) -> (Duration, String) {
    let vfs = Vfs::new(db, now_ms());
    let (elapsed, r) = timed(|| exec(&vfs, &WallClock, request(command)));
    assert_eq!(
        r.exit_code,
        0,
        "{command}: {}",
        String::from_utf8_lossy(&r.stderr)
    );
    (elapsed, String::from_utf8_lossy(&r.stdout).into_owned())
}

fn real(dir: &Path, args: &[&str]) -> (Duration, String) {
    let (elapsed, out) = timed(|| {
        Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "bench")
            .env("GIT_AUTHOR_EMAIL", "bench@example.invalid")
            .env("GIT_COMMITTER_NAME", "bench")
            .env("GIT_COMMITTER_EMAIL", "bench@example.invalid")
            .output()
            .expect("git runs")
    });
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (elapsed, String::from_utf8_lossy(&out.stdout).into_owned())
}

pub fn run(sizes: Sizes, report: &mut Report) {
    let dir = TempDir::new().expect("temp dir");
    let db = SqliteDb::open(&dir.path().join("workspace.sqlite")).expect("open database");
    // As the checkpoint benchmark: WAL, no flush per commit (the Durable
    // Object's storage does not make a request wait for one either).
    db.query("PRAGMA journal_mode = WAL", params![])
        .expect("WAL");
    db.execute("PRAGMA synchronous = NORMAL", params![])
        .expect("synchronous");
    migrate(&db, MIGRATIONS).expect("migrate");
    let disk = dir.path().join("repo");
    {
        let vfs = Vfs::new(&db, now_ms() - 10_000);
        let options = WriteOptions {
            mode: None,
            create_parents: true,
        };
        for i in 0..sizes.files {
            let path = path_of(i);
            vfs.write(
                &VPath::parse(&format!("/{path}")).unwrap(),
                content(i).as_bytes(),
                options,
            )
            .expect("write");
            let file = disk.join(&path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, content(i)).unwrap();
        }
    }
    std::thread::sleep(Duration::from_millis(5));
    light(&db, "git init -q && git add -A && git commit -qm base");
    real(&disk, &["init", "-q"]);
    real(&disk, &["add", "-A"]);
    real(&disk, &["commit", "-qm", "base"]);
    // One status each to settle the index (git refreshes it too).
    std::thread::sleep(Duration::from_millis(5));
    light(&db, "git status --porcelain");
    real(&disk, &["status", "--porcelain"]);
    let section = format!("git status, {} files", sizes.files);
    let measure = |report: &mut Report, what: &str, expected_lines: usize| {
        let (ours, out) = best_of(RUNS, |_| light(&db, "git status --porcelain"));
        assert_eq!(out.lines().count(), expected_lines, "{out}");
        let (theirs, out) = best_of(RUNS, |_| real(&disk, &["status", "--porcelain"]));
        assert_eq!(out.lines().count(), expected_lines, "{out}");
        report.rows.push(Row {
            section: section.clone(),
            measure: format!("light shell `git status` ({what})"),
            figure: Ok(millis(ours)),
            unit: Unit::Millis,
            baseline: Ok(millis(theirs)),
            baseline_label: "real git status".to_string(),
            aim: Some(Aim::AtMost(3.0)),
        });
    };
    measure(report, "clean", 0);
    // One file changed on both sides.
    let changed = path_of(sizes.files / 2);
    light(&db, &format!("echo changed >> {changed}"));
    std::fs::write(
        disk.join(&changed),
        format!("{}changed\n", content(sizes.files / 2)),
    )
    .unwrap();
    measure(report, "one file changed", 1);
    clone::run(sizes.clone_files, report);
    report.details =
        json!({ "files": sizes.files, "clone_files": sizes.clone_files, "runs": RUNS });
}
