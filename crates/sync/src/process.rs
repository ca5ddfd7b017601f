//! Long-running processes on the computer: the messages of their routes.
//!
//! A process is a command that is meant to keep running (a dev server, a
//! watcher). Unlike an exec it has no report: what it writes on disk comes
//! back through the workspace side's live sync, and it may run beside
//! commands. The container supervises it: restarts it by its policy when
//! it exits, keeps its output in a log read by offset (as an exec's), and
//! stops it on request (SIGTERM to its process group, SIGKILL after a
//! grace period).
//!
//! - `POST /v1/processes` with a [`ProcessSpec`] → [`ProcessStatus`] (201);
//! - `GET /v1/processes` → [`ProcessList`];
//! - `POST /v1/processes/poll` with a [`Poll`] → [`PollReply`]: every
//!   process's status and its output from the offsets given, in one round
//!   trip (reading from an offset releases the output before it);
//! - `POST /v1/processes/{id}/signal` with a [`SignalRequest`] →
//!   [`ProcessStatus`];
//! - `POST /v1/processes/{id}/stop` with a [`StopRequest`] →
//!   [`ProcessStatus`] once it has ended.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::ExecEvent;

/// When the container starts a process again after it exits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum Restart {
    /// Never: its exit is final.
    #[default]
    Never,
    /// When it exits with a non-zero code or is killed by a signal.
    OnFailure,
    /// Whenever it exits.
    Always,
}

impl Restart {
    /// Whether a process that ended this way starts again (a stop on
    /// request never restarts it).
    pub fn restarts(self, code: Option<i32>) -> bool {
        match self {
            Restart::Never => false,
            Restart::OnFailure => code != Some(0),
            Restart::Always => true,
        }
    }
}

/// `POST /v1/processes`: start a process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessSpec {
    /// Unique on this container instance.
    pub id: String,
    /// Run by `bash -lc`.
    pub command: String,
    /// Working directory, a workspace path.
    pub cwd: String,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub restart: Restart,
    /// Ports it serves on. While a process that declared one runs, the
    /// container counts as busy (see [`crate::Status::busy`]).
    #[serde(default)]
    pub ports: Vec<u16>,
    /// Counts as busy without a port too.
    #[serde(default)]
    pub keep_awake: bool,
}

/// Where a process is in its life, as the container sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProcessState {
    /// About to start (first, or again by its restart policy).
    Starting,
    Running,
    /// Ended with code 0, or stopped on request.
    Exited,
    /// Ended with another code or a signal, or could not start, and does
    /// not start again.
    Failed,
}

impl ProcessState {
    /// Whether it has ended for good.
    pub fn is_final(self) -> bool {
        matches!(self, ProcessState::Exited | ProcessState::Failed)
    }
}

/// A process as the container reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessStatus {
    pub id: String,
    pub state: ProcessState,
    /// The pid of its current run (its process group's id).
    pub pid: Option<u32>,
    /// How its last run ended.
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// How many times its policy started it again.
    pub restarts: u32,
    /// Stopped on request.
    pub stopped: bool,
    /// Why it could not start, if it could not.
    pub error: Option<String>,
    /// The offset one past the last output byte it wrote.
    pub output_bytes: u64,
}

/// `GET /v1/processes`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessList {
    pub processes: Vec<ProcessStatus>,
}

/// `POST /v1/processes/poll`: the offsets to read each process's output
/// from (a process left out is reported without output).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Poll {
    pub from: BTreeMap<String, u64>,
}

/// One process in a [`PollReply`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Polled {
    pub status: ProcessStatus,
    /// Its output from the offset asked, at most a bounded amount (read on
    /// from `next`); `Dropped` when the container no longer held some.
    pub output: Vec<ExecEvent>,
    pub next: u64,
}

/// The answer to a [`Poll`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PollReply {
    /// The container instance answering (another one than the processes
    /// were started on means they are gone).
    pub instance: String,
    pub processes: Vec<Polled>,
}

/// `POST /v1/processes/{id}/signal`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignalRequest {
    /// A name from [`SIGNALS`], with or without `SIG`.
    pub signal: String,
}

/// `POST /v1/processes/{id}/stop`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StopRequest {
    /// Between SIGTERM and SIGKILL (default [`DEFAULT_GRACE_MS`]).
    #[serde(default)]
    pub grace_ms: Option<u64>,
}

/// Between SIGTERM and SIGKILL when a process is stopped.
pub const DEFAULT_GRACE_MS: u64 = 5_000;
/// The longest grace a stop may ask for.
pub const MAX_GRACE_MS: u64 = 60_000;

/// The signals a process may be sent, by name, with their Linux numbers.
pub const SIGNALS: &[(&str, i32)] = &[
    ("HUP", 1),
    ("INT", 2),
    ("QUIT", 3),
    ("ABRT", 6),
    ("KILL", 9),
    ("USR1", 10),
    ("SEGV", 11),
    ("USR2", 12),
    ("PIPE", 13),
    ("ALRM", 14),
    ("TERM", 15),
    ("CONT", 18),
    ("STOP", 19),
    ("TSTP", 20),
    ("WINCH", 28),
];

/// The number of signal `name` (`TERM`, `SIGTERM`, any case), if it is one
/// of [`SIGNALS`].
pub fn signal_number(name: &str) -> Option<i32> {
    let upper = name.to_ascii_uppercase();
    let bare = upper.strip_prefix("SIG").unwrap_or(&upper);
    SIGNALS
        .iter()
        .find(|(known, _)| *known == bare)
        .map(|&(_, number)| number)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signal_names_and_policies() {
        assert_eq!(signal_number("TERM"), Some(15));
        assert_eq!(signal_number("sigusr1"), Some(10));
        assert_eq!(signal_number("SIGBOGUS"), None);
        assert_eq!(signal_number(""), None);
        assert!(!Restart::Never.restarts(Some(1)));
        assert!(Restart::OnFailure.restarts(Some(1)) && Restart::OnFailure.restarts(None));
        assert!(!Restart::OnFailure.restarts(Some(0)));
        assert!(Restart::Always.restarts(Some(0)));
        let spec: ProcessSpec = serde_json::from_str(
            r#"{"id":"p","command":"x","cwd":"/","restart":"on-failure","ports":[8000]}"#,
        )
        .unwrap();
        assert_eq!((spec.restart, spec.ports), (Restart::OnFailure, vec![8000]));
    }
}
