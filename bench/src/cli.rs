//! `stead-bench cli`: `stead push` of a tree of 5,000 files / 50 MB (quick:
//! 500 / 5 MB), run as a user runs it (the release binary, against the
//! Worker), against the same files as one streamed tar upload in the same
//! run; then the warm re-push of the unchanged tree, against its aims
//! (under 1 s, and under 1% of the tree's bytes on the wire).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use stead_harness::repo_root;

use crate::agent::Agent;
use crate::gen::Rng;
use crate::report::{Aim, Report, Row, Unit};
use crate::stats::{millis, timed};

/// Sizes of one run.
#[derive(Clone, Copy)]
pub struct Sizes {
    pub files: usize,
    pub bytes: usize,
}

impl Sizes {
    pub const FULL: Sizes = Sizes {
        files: 5_000,
        bytes: 50_000_000,
    };
    pub const QUICK: Sizes = Sizes {
        files: 500,
        bytes: 5_000_000,
    };
}

/// Files per directory of the generated tree.
const PER_DIR: usize = 100;

/// The `stead` binary: `STEAD_BIN`, else the workspace's release build
/// (built now when it is missing).
fn binary() -> PathBuf {
    if let Some(path) = std::env::var_os("STEAD_BIN") {
        return PathBuf::from(path);
    }
    let path = repo_root().join("target/release/stead");
    if !path.exists() {
        eprintln!("cli: building the stead binary (release)");
        let status = Command::new("cargo")
            .args(["build", "--release", "-p", "stead-cli"])
            .current_dir(repo_root())
            .status()
            .expect("run cargo");
        assert!(status.success(), "building stead failed");
    }
    path
}

/// A tree of `sizes.files` files of pseudo-random bytes, `sizes.bytes` in all.
fn write_tree(root: &Path, sizes: Sizes) {
    let mut rng = Rng::new(22);
    let each = sizes.bytes / sizes.files;
    for i in 0..sizes.files {
        let dir = root.join(format!("d{:03}", i / PER_DIR));
        std::fs::create_dir_all(&dir).unwrap();
        let data: Vec<u8> = (0..each).map(|_| rng.next_u64() as u8).collect();
        std::fs::write(dir.join(format!("f{i:05}.bin")), data).unwrap();
    }
}

/// Runs `stead --json push` and answers its elapsed time and summary.
fn push(bin: &Path, base: &str, token: &str, agent: &str, dir: &Path) -> (Duration, Value) {
    let (elapsed, out) = timed(|| {
        Command::new(bin)
            .args(["--json", "-a", agent, "push"])
            .arg(dir)
            .arg("/bench")
            .env("STEAD_URL", base)
            .env("STEAD_TOKEN", token)
            .env("STEAD_CONFIG_DIR", dir.join("..").join("config"))
            .output()
            .expect("run stead")
    });
    assert!(
        out.status.success(),
        "stead push failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = serde_json::from_slice(&out.stdout).expect("a JSON summary");
    (elapsed, summary)
}

pub fn run(agent: &Agent, base: &str, token: &str, sizes: Sizes, report: &mut Report) {
    let bin = binary();
    let scratch = tempfile::tempdir().unwrap();
    let tree = scratch.path().join("tree");
    write_tree(&tree, sizes);
    let tar = scratch.path().join("tree.tar");
    let status = Command::new("tar")
        .arg("cf")
        .arg(&tar)
        .arg("-C")
        .arg(&tree)
        .arg(".")
        .status()
        .expect("run tar");
    assert!(status.success());
    let tar_len = std::fs::metadata(&tar).unwrap().len();

    eprintln!("cli: one streamed tar upload");
    let file = std::fs::File::open(&tar).unwrap();
    let (tar_time, ()) = timed(|| agent.upload_sized("/bench.tar", tar_len, file));
    eprintln!("cli: cold push");
    let (cold, _) = push(&bin, base, token, agent.id(), &tree);
    eprintln!("cli: warm re-push");
    let (warm, summary) = push(&bin, base, token, agent.id(), &tree);
    let sent = summary["bytes_sent"].as_f64().unwrap_or(f64::NAN);

    let section = format!(
        "cli: stead push of {} files / {} MB",
        sizes.files,
        sizes.bytes / 1_000_000
    );
    let row = |measure: &str, figure: f64, unit, baseline: f64, label: &str, aim| Row {
        section: section.clone(),
        measure: measure.into(),
        figure: Ok(figure),
        unit,
        baseline: Ok(baseline),
        baseline_label: label.into(),
        aim,
    };
    report.rows.extend([
        row(
            "cold push",
            millis(cold),
            Unit::Millis,
            millis(tar_time),
            "one streamed tar upload",
            None,
        ),
        row(
            "warm re-push (unchanged)",
            millis(warm),
            Unit::Millis,
            1000.0,
            "aim: 1 s",
            Some(Aim::AtMost(1.0)),
        ),
        row(
            "warm re-push: file content sent",
            sent,
            Unit::Bytes,
            sizes.bytes as f64 / 100.0,
            "aim: 1% of the tree",
            Some(Aim::AtMost(1.0)),
        ),
    ]);
}
