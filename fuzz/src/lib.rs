//! Fuzz targets for the parts of stead that read untrusted input: workspace
//! paths, shell scripts, edit requests, patches, the computer sync protocol,
//! and the HTTP API's JSON bodies.
//!
//! Why a home-grown driver instead of only cargo-fuzz: libFuzzer needs a
//! nightly toolchain and sanitizer support, and CI machines here have stable
//! Rust and nothing beyond crates.io. So every target is a plain
//! `fn(&[u8])` that panics when an invariant breaks, and `src/main.rs` drives
//! them on stable with seeded, deterministic mutation of a hand-written seed
//! corpus plus random bytes. The same functions can be handed to libFuzzer
//! unchanged if a nightly machine is available.
//!
//! A target must never hang or panic on any input; each one also checks
//! properties that would catch silent misbehaviour (a parsed path that is
//! not normal, a decoded frame that does not re-encode to the same bytes, a
//! failed API call that changed the database).

pub mod mutate;
pub mod targets;

/// One fuzz target: its name, the function under test, and its seed corpus.
pub struct Target {
    pub name: &'static str,
    /// What the target checks, for `--list` and the README.
    pub about: &'static str,
    pub run: fn(&[u8]),
    pub seeds: fn() -> Vec<Vec<u8>>,
    /// Token dictionary the mutator splices in (keywords, delimiters).
    pub tokens: &'static [&'static str],
    /// What one run may cost, for a target whose code under test runs
    /// inside limits (the light shell); the driver measures every run
    /// against it and reports a run past it as a limit overrun.
    pub bounds: Option<Bounds>,
}

/// The most one run may hold and take.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// Heap bytes held at once above what was held when the run started.
    pub heap_bytes: usize,
    /// Wall-clock milliseconds.
    pub run_ms: u64,
}

/// Every target, in the order `all` runs them.
pub const TARGETS: &[Target] = &[
    targets::path::TARGET,
    targets::shell::TARGET,
    targets::syntax::TARGET,
    targets::edit::TARGET,
    targets::patch::TARGET,
    targets::frame::TARGET,
    targets::wire::TARGET,
    targets::api::TARGET,
];

/// The target called `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every seed passes its target (so `cargo test` smoke-tests the
    /// targets), and the names are unique, as the driver's CLI needs.
    #[test]
    fn seeds_pass_their_targets() {
        for (i, t) in TARGETS.iter().enumerate() {
            assert!(TARGETS[..i].iter().all(|other| other.name != t.name));
            assert_eq!(target(t.name).map(|found| found.name), Some(t.name));
            let seeds = (t.seeds)();
            assert!(!seeds.is_empty(), "{} has no seeds", t.name);
            for seed in seeds {
                (t.run)(&seed);
            }
        }
    }
}
