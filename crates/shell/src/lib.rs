//! A bash interpreter and the common Unix utilities, in plain Rust, over the
//! agent's workspace filesystem.
//!
//! No processes and no threads: a command line is parsed, expanded and run
//! as function calls inside the isolate, next to the files. Every exec
//! starts with fresh shell state (variables, functions) while the filesystem
//! persists; every write goes straight to the workspace, so it is durable the
//! moment the command returns. Runaway scripts end with a named limit
//! ([`LimitKind`]) instead of exhausting the platform's CPU budget.

pub mod fs;
pub mod io;
pub mod limits;
pub mod utils;

pub use fs::Fs;
pub use io::Output;
pub use limits::{Budget, Clock, LimitKind, Limits};
