//! The shell's parser alone, at parser speed: `commands_used` and
//! `unsupported_commands` on arbitrary scripts (the routing `auto` does
//! before anything runs, so before any exec limit applies). Every grammar
//! recursion, brace expansion and here-document is parsed here, so this
//! target is where a parse that recurses too deeply, expands too much or
//! takes too long shows up; the driver holds each run to [`TARGET`]'s
//! bounds (brace expansion may make up to 100,000 words as it parses).

use crate::{Bounds, Target};

pub const TARGET: Target = Target {
    name: "syntax",
    about: "commands_used/unsupported_commands (the shell parser) on arbitrary scripts: no panic, both parse or both fail, unsupported is a subset of used, within heap and time bounds",
    run,
    seeds: super::shell::seeds,
    tokens: super::shell::TOKENS,
    bounds: Some(Bounds {
        heap_bytes: 32 << 20,
        run_ms: 2_000,
    }),
};

pub fn run(data: &[u8]) {
    super::shell::check_routing(&super::text(data));
}
