//! What an open MCP event stream follows, as plain data (kept by the
//! platform with the stream, like a WebSocket's attachment; see
//! `crate::host::EventStream`), and the change-log positions its events
//! carry.
//!
//! An event stream is an HTTP response the agent keeps writing to: the GET
//! stream of a 2025-11-25 session, or the answer to a 2026-07-28
//! `subscriptions/listen`. Its notifications are derived from the change
//! log, so where a stream is is a position in that log ([`Cursor`]), and a
//! client that lost its stream resumes from the last position it saw with
//! nothing lost: the log still holds everything after it.

use serde_json::{json, Value};

use crate::auth::Caller;

/// A position in the change log: everything up to revision `revision` has
/// been considered, or, with `index`, everything before and the changes of
/// `revision` up to and including its `index`th (from 0; one revision can
/// log many paths).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    pub revision: i64,
    pub index: Option<usize>,
}

impl Cursor {
    /// Just after every change of `revision`.
    pub fn after(revision: i64) -> Cursor {
        Cursor {
            revision,
            index: None,
        }
    }

    /// Reads a cursor as [`Cursor::to_string`] writes it: `R` or `R.N`.
    pub fn parse(text: &str) -> Option<Cursor> {
        let (revision, index) = match text.split_once('.') {
            Some((revision, index)) => (revision, Some(index.parse().ok()?)),
            None => (text, None),
        };
        let revision: i64 = revision.parse().ok().filter(|r| *r >= 0)?;
        Some(Cursor { revision, index })
    }
}

impl std::fmt::Display for Cursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.index {
            Some(index) => write!(f, "{}.{index}", self.revision),
            None => write!(f, "{}", self.revision),
        }
    }
}

/// Which kind of stream, with what its events must carry.
#[derive(Debug, Clone, PartialEq)]
pub enum Channel {
    /// The GET stream of a 2025-11-25 session: events carry SSE ids (the
    /// cursor) for `Last-Event-ID` resumption.
    Session { id: String },
    /// A 2026-07-28 `subscriptions/listen` answer: each notification
    /// carries the listen request's id as its subscription id (and no SSE
    /// id: that revision has no resumption by `Last-Event-ID`); where it is
    /// is kept for its listener (`crate::mcp::resume`).
    Listen {
        subscription: Value,
        listener: Listener,
    },
}

/// What a stream follows.
#[derive(Debug, Clone, PartialEq)]
pub struct ListenState {
    pub channel: Channel,
    /// Workspace paths whose changes it is told of (`notifications/resources/updated`);
    /// a directory stands for everything below it.
    pub resources: Vec<String>,
    /// Whether it is told when files appear or go
    /// (`notifications/resources/list_changed`).
    pub list_changed: bool,
    /// Where in the change log it is.
    pub cursor: Cursor,
    /// Who opened it: nothing more is pushed once that caller's token has
    /// expired or been revoked (the stream is closed).
    pub caller: Caller,
}

/// Who follows what: the key of the position `crate::mcp::resume` keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listener {
    pub actor: String,
    /// The filter as canonical JSON.
    pub filter: String,
}

impl Listener {
    /// The listener `actor` following `resources` (workspace paths) and, if
    /// `list_changed`, the list of files: the same filter in any order is
    /// the same listener.
    pub fn new(actor: String, resources: &[String], list_changed: bool) -> Listener {
        let mut resources = resources.to_vec();
        resources.sort();
        resources.dedup();
        let filter = json!({ "list_changed": list_changed, "resources": resources }).to_string();
        Listener { actor, filter }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip() {
        for text in ["0", "17", "17.0", "17.42"] {
            assert_eq!(Cursor::parse(text).unwrap().to_string(), text);
        }
        for bad in ["", "-1", "x", "1.x", "1.-2", "1.2.3"] {
            assert_eq!(Cursor::parse(bad), None, "{bad}");
        }
    }
}
