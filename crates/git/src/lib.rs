//! git in plain Rust: the repository's own on-disk format and the
//! everyday commands, over any [`Files`].
#![deny(unreachable_pub)]

pub mod cmd;
pub mod config;
pub mod diff;
pub mod error;
pub mod files;
pub mod ignore;
pub mod index;
pub mod merge;
pub mod objects;
pub mod odb;
mod pack;
pub mod packfile;
pub mod refs;
pub mod repo;
pub mod transport;
pub mod worktree;

pub use error::{Error, Result};
pub use files::{Entry, FileError, Files, Kind, Meta};
pub use repo::Repo;
