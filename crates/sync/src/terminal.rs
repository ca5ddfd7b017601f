//! Terminal sessions on the computer: a login shell on a real pty, whose
//! output the agent's side reads over a WebSocket (the container's half is
//! `container/src/terminal.rs`, whose docs describe the whole wire).
//!
//! - `POST` [`TERMINALS_PATH`] with a [`TerminalSpec`] → `201` with its
//!   [`TerminalStatus`];
//! - `GET` [`status_path`] → [`TerminalStatus`]; `DELETE` there closes it;
//! - `GET` [`attach_path`] upgrades to the session's stream: binary frames
//!   are bytes both ways, the client's text frames [`Control`], the
//!   server's [`Event`]s.
//!
//! Reading a session (its status, its stream) is a background request
//! (`crate::owner::is_background`): it never starts a computer, so finding
//! out that a shell is gone cannot bring up a new machine.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Where sessions are started.
pub const TERMINALS_PATH: &str = "/v1/terminals";

/// The prefix of one session's routes.
pub const SESSION_PREFIX: &str = "/v1/terminals/";

/// Session `id`'s status (GET) and its closing (DELETE).
pub fn status_path(id: &str) -> String {
    format!("{SESSION_PREFIX}{id}")
}

/// Session `id`'s stream, with output from offset `from`.
pub fn attach_path(id: &str, from: u64) -> String {
    format!("{SESSION_PREFIX}{id}/attach?from={from}")
}

/// `POST /v1/terminals`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TerminalSpec {
    #[serde(default = "default_cols")]
    pub cols: u32,
    #[serde(default = "default_rows")]
    pub rows: u32,
    /// A workspace path.
    #[serde(default = "default_cwd")]
    pub cwd: String,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

fn default_cols() -> u32 {
    80
}

fn default_rows() -> u32 {
    24
}

fn default_cwd() -> String {
    "/".into()
}

/// How the shell ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExitInfo {
    pub code: Option<i32>,
    pub signal: Option<i32>,
}

/// Where a session is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TerminalStatus {
    pub id: String,
    pub pid: Option<u32>,
    pub cols: u16,
    pub rows: u16,
    /// The first output offset still kept.
    pub first: u64,
    /// The output's end offset.
    pub end: u64,
    pub exit: Option<ExitInfo>,
}

/// A control frame the client sends on the stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Control {
    Resize { cols: u32, rows: u32 },
}

/// A text frame the server sends on the stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// First: output follows from `from` (the offset asked for, or the
    /// first one still kept).
    Attached { from: u64 },
    /// The reader fell behind the container's ring: `from..to` is gone.
    Skipped { from: u64, to: u64 },
    /// After the last output: the shell ended; the socket closes.
    Exit {
        code: Option<i32>,
        signal: Option<i32>,
    },
    /// A control frame was refused; the stream goes on.
    Error { error: crate::ErrorDetail },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_read_as_the_container_writes_them() {
        let read = |text: &str| serde_json::from_str::<Event>(text).unwrap();
        assert_eq!(
            read(r#"{"type":"attached","from":3}"#),
            Event::Attached { from: 3 }
        );
        assert_eq!(
            read(r#"{"type":"exit","code":null,"signal":9}"#),
            Event::Exit {
                code: None,
                signal: Some(9)
            }
        );
        assert!(matches!(
            read(r#"{"type":"error","error":{"code":"INVALID_REQUEST","message":"m"}}"#),
            Event::Error { .. }
        ));
        assert_eq!(attach_path("t1", 5), "/v1/terminals/t1/attach?from=5");
    }
}
