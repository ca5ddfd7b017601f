//! Where the recorded conformance corpus lives, for every test that reads it.
//!
//! The corpus is shared material outside the repository: `../shared/corpus`
//! relative to the repository root, or the folder `CONFORMANCE_CORPUS`
//! names. A test that needs it must fail when it is missing (a moved corpus
//! must not turn the suites into silent passes), so these functions panic
//! with the path they looked at.
//!
//! This file is compiled into the integration tests (`tests/common`) and,
//! through `#[path]`, into the crate's own unit tests, so both find the
//! corpus the same way.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The corpus folder; panics when it does not exist.
pub(crate) fn root() -> PathBuf {
    let dir = match std::env::var_os("CONFORMANCE_CORPUS") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        // crates/shell -> the repository root -> its sibling `shared`.
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus"),
    };
    assert!(
        dir.is_dir(),
        "conformance corpus not found at {} (set CONFORMANCE_CORPUS to its folder)",
        dir.display()
    );
    dir
}

/// A subfolder of the corpus (`bash-spec`, `comparison`, `jq`, `sed`);
/// panics when it does not exist.
pub(crate) fn folder(name: &str) -> PathBuf {
    let dir = root().join(name);
    assert!(
        dir.is_dir(),
        "conformance corpus folder {} is missing",
        dir.display()
    );
    dir
}

/// The files of a corpus subfolder whose names end with `suffix`, sorted;
/// panics when there are none.
pub(crate) fn files(name: &str, suffix: &str) -> Vec<PathBuf> {
    let dir = folder(name);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no *{suffix} files in {}", dir.display());
    paths
}

/// The text of a corpus file; panics when it cannot be read.
pub(crate) fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}
