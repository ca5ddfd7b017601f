//! What can go wrong, as one line and a documented exit code.
//!
//! Every failure the CLI reports is a [`CliError`]: a [`Failure`] kind,
//! which fixes the exit code (README, "Quick start with the CLI"), and a
//! message that says what to do about it. `exec` and `logs -f` exit with
//! the command's own status instead; these codes are for the CLI's own
//! failures.

use std::fmt;

/// The kinds of failure, each with its own exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The operation ran but did not succeed (a job that ended without an
    /// exit code, such as a cancelled one).
    Failed,
    /// Missing configuration: no URL, token or agent.
    Config,
    /// The agent, file, job or checkpoint does not exist (404, 410).
    NotFound,
    /// The token was refused (401) or may not do this (403).
    Auth,
    /// The request conflicts with the current state (409): an `edit` whose
    /// file moved on, an agent that exists.
    Conflict,
    /// A quota or size limit would be exceeded (413, 507, `*QUOTA*`).
    Quota,
    /// The server could not be reached, or the connection broke.
    Network,
    /// The server failed (5xx) or answered something unexpected.
    Server,
    /// The server refused the request as invalid (400, 422).
    Invalid,
    /// A local file or folder could not be read or written.
    Local,
}

impl Failure {
    /// The process exit code. 2 is clap's for usage errors.
    pub fn exit_code(self) -> i32 {
        match self {
            Failure::Failed => 1,
            Failure::Config => 3,
            Failure::NotFound => 4,
            Failure::Auth => 5,
            Failure::Conflict => 6,
            Failure::Quota => 7,
            Failure::Network => 8,
            Failure::Server => 9,
            Failure::Invalid => 10,
            Failure::Local => 11,
        }
    }

    /// The kind of an HTTP error answer with `status` and error `code`.
    pub fn of_status(status: u16, code: &str) -> Failure {
        if code.contains("QUOTA") {
            return Failure::Quota;
        }
        match status {
            400 | 422 => Failure::Invalid,
            401 | 403 => Failure::Auth,
            404 | 410 => Failure::NotFound,
            409 | 412 => Failure::Conflict,
            413 | 507 => Failure::Quota,
            _ => Failure::Server,
        }
    }
}

/// A failure with the one line that explains it.
#[derive(Debug)]
pub struct CliError {
    pub failure: Failure,
    pub message: String,
}

impl CliError {
    pub fn new(failure: Failure, message: impl Into<String>) -> CliError {
        CliError {
            failure,
            message: message.into(),
        }
    }

    /// A local I/O failure on `path`.
    pub fn local(path: &std::path::Path, error: std::io::Error) -> CliError {
        CliError::new(Failure::Local, format!("{}: {error}", path.display()))
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

pub type Result<T> = std::result::Result<T, CliError>;
