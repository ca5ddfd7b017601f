//! The messages of the protocol.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A BLAKE3 hash naming one chunk of content; hex on the wire.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ChunkHash(pub [u8; 32]);

impl ChunkHash {
    /// Parses 64 hex digits.
    pub fn from_hex(text: &str) -> Option<Self> {
        let bytes = text.as_bytes();
        if bytes.len() != 64 {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, pair) in bytes.chunks(2).enumerate() {
            let digit = |b: u8| (b as char).to_digit(16);
            out[i] = (digit(pair[0])? * 16 + digit(pair[1])?) as u8;
        }
        Some(ChunkHash(out))
    }
}

impl fmt::Display for ChunkHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl fmt::Debug for ChunkHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ChunkHash({self})")
    }
}

impl Serialize for ChunkHash {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ChunkHash {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        ChunkHash::from_hex(&text)
            .ok_or_else(|| serde::de::Error::custom("a chunk hash is 64 hex digits"))
    }
}

/// What is at a path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum Entry {
    /// A regular file: its permission bits, size and content chunks.
    File {
        mode: u32,
        size: u64,
        chunks: Vec<ChunkHash>,
    },
    /// A directory and its permission bits.
    Dir { mode: u32 },
    /// A symbolic link and its target, as written.
    Symlink { target: String },
}

/// One path's new state: `entry` is `None` when the path is gone.
///
/// Paths are absolute within the workspace (`/src/main.rs`); on the
/// container's disk they sit under its workspace root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Change {
    pub path: String,
    pub entry: Option<Entry>,
    /// A file's modification time, in ms since the Unix epoch: the
    /// sender's, given to the receiver's copy when it writes the file, so
    /// build tools see the same times on both sides. Only for files, and
    /// not a change by itself (a file whose content and mode are the same
    /// is not reported for its time alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtime_ms: Option<i64>,
}

/// Every chunk hash the files among `changes` hold, in order.
pub fn chunk_hashes(changes: &[Change]) -> impl Iterator<Item = ChunkHash> + '_ {
    changes
        .iter()
        .filter_map(|c| match &c.entry {
            Some(Entry::File { chunks, .. }) => Some(chunks.iter().copied()),
            _ => None,
        })
        .flatten()
}

/// `GET /v1/status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    pub protocol: u32,
    /// Random per start of the container program (a new one has an empty disk).
    pub instance: String,
    /// The exec id running now, if any.
    pub running: Option<String>,
    /// What the program is: its version and a hash of its executable
    /// (absent from peers that predate it).
    #[serde(default)]
    pub build: Option<String>,
    /// A process that declared a port (or asked to keep the computer
    /// awake) is running, or a terminal session's shell is: that is activity, as a running exec is, so the
    /// computer is not released as idle. Absent (false) from peers that
    /// predate processes.
    #[serde(default)]
    pub busy: bool,
}

/// `POST /v1/sync/apply`: bring the container's disk in step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Push {
    /// The instance this push was planned for; another instance refuses it
    /// (its disk is not the one the changes were computed against).
    pub instance: String,
    /// `changes` list the whole workspace: remove whatever else is on disk
    /// (except ignored paths).
    pub full: bool,
    pub changes: Vec<Change>,
    /// The workspace's ignore rules (see [`crate::IgnoreRules`]), as text.
    pub ignore: String,
}

/// The answer to a [`Push`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum ApplyReply {
    /// The disk now matches; `written` files took new content.
    Applied { written: u64 },
    /// Send these chunks (`POST /v1/sync/chunks`), then push again.
    Need { chunks: Vec<ChunkHash> },
}

/// The query parameter of `POST /v1/exec` naming the container instance
/// the exec was planned for (the one its workspace was pushed to): the
/// program refuses an exec for another instance with `STALE_INSTANCE`, so a
/// command never runs on a replacement's disk that was never pushed. It is
/// a query parameter, not an [`ExecSpec`] field, because a program that
/// predates it refuses unknown body fields (and would refuse every exec
/// during a rollout) but ignores a query it does not read.
pub const EXEC_INSTANCE_PARAM: &str = "instance";

/// `POST /v1/exec`: run a command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecSpec {
    /// Unique per command; a second request with the same id is refused.
    pub id: String,
    /// Run by `bash -lc`.
    pub command: String,
    /// Working directory, a workspace path.
    pub cwd: String,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Standard input, base64.
    #[serde(default)]
    pub stdin: String,
    /// Kill the command's process group after this long.
    pub timeout_ms: u64,
    /// Keep running when the client goes away: the output stays in the
    /// container's log, readable from any offset
    /// (`GET /v1/exec/{id}/output?from=N`), and the exit event with the
    /// report comes at the end of it. Without it, a client that goes away
    /// kills the command and no report is made. Sent only when set, so a
    /// peer that predates it reads the spec as before.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub detach: bool,
}

/// One line of the `POST /v1/exec` response stream.
///
/// The stream always ends with `exit` or `error`; a stream that ends
/// without either was cut (the container or the way to it died).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum ExecEvent {
    /// Bytes the command wrote to standard output (base64).
    Stdout { data: String },
    /// Bytes the command wrote to standard error (base64).
    Stderr { data: String },
    /// Output the container no longer holds from the offset asked (it keeps
    /// at most a bounded amount nobody has read): the offset moves on by
    /// `bytes`. Only in a read from an offset, never in a stream that
    /// started at 0 and kept up.
    Dropped { bytes: u64 },
    /// The command ended; the last event.
    Exit(Exit),
    /// The command ended but the container could not say what it changed
    /// (the scan failed); the last event. Nothing is reported for this
    /// exec: its changes stay on disk, unacknowledged, and the next
    /// command's scan reports them. Protocol 1 peers that predate it read
    /// it as a garbled stream, which is handled as a lost command.
    Error(ErrorDetail),
}

/// How a command ended and what it changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exit {
    /// The exit code, or `None` when a signal ended it.
    pub code: Option<i32>,
    pub signal: Option<i32>,
    /// Killed for running past its timeout.
    pub timed_out: bool,
    /// Killed by `POST /v1/exec/{id}/cancel`.
    pub cancelled: bool,
    /// Killed because the container program was told to stop (SIGTERM,
    /// as the platform does before it removes a container). The changes
    /// are reported as usual and the program waits a little for their
    /// acknowledgement before it exits, but the next command will find a
    /// new instance. Absent (false) from peers that predate it.
    #[serde(default)]
    pub shutdown: bool,
    /// What differs on disk from what the container last acknowledged.
    pub changes: Vec<Change>,
    /// Paths left out of `changes`, and why (device files, sockets, ...).
    pub skipped: Vec<Skipped>,
}

/// A path the container will not report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    pub path: String,
    pub reason: String,
}

/// `POST /v1/chunks`: the chunks of reported changes the workspace lacks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChunkRequest {
    pub exec: String,
    pub chunks: Vec<ChunkHash>,
}

/// The query of `GET /v1/exec/{id}/output`: the output offset to read from
/// (standard output and error in one offset space, as the agent's job log
/// counts bytes). Reading from `from` tells the container that every byte
/// before it arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputQuery {
    pub from: u64,
}

/// `POST /v1/sync/ack`: the workspace holds what `exec` reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ack {
    pub exec: String,
}

/// An error answer from the container: `{"error":{"code","message"}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorDetail {
    pub code: ErrorCode,
    pub message: String,
}

/// Why the container refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    /// Missing or wrong secret.
    Unauthorized,
    /// Malformed request.
    InvalidRequest,
    /// A push planned for another instance of the container.
    StaleInstance,
    /// The exec id was seen before: it is never run twice.
    AlreadyStarted,
    /// Another command is running.
    Busy,
    /// No such exec (or its report was acknowledged and dropped).
    UnknownExec,
    /// No such process on this container instance.
    UnknownProcess,
    /// A requested chunk is no longer on disk as reported.
    ChunkGone,
    /// A path that escapes the workspace or is otherwise unusable.
    BadPath,
    /// The container's own filesystem failed.
    Io,
    /// The container program is stopping (after SIGTERM): it finishes
    /// what runs and takes acknowledgements, but starts nothing new.
    ShuttingDown,
    /// No container can be started for this workspace (answered by the
    /// Worker's side, not by the program).
    Unavailable,
    /// The computer was released on purpose (idle, or on request), and a
    /// background request does not start it (answered by the Worker's
    /// side).
    Released,
    /// No container runs (it died, or never ran), and a background request
    /// does not start one (answered by the Worker's side).
    Gone,
    /// The container died after a command was sent to it and before it
    /// answered: the command may or may not have run, and it is not sent
    /// to another container (answered by the Worker's side).
    ComputerLost,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_travel_as_hex() {
        let hash = crate::hash_chunk(b"abc");
        let text = serde_json::to_string(&hash).unwrap();
        assert_eq!(text.len(), 66);
        assert_eq!(serde_json::from_str::<ChunkHash>(&text).unwrap(), hash);
        assert!(serde_json::from_str::<ChunkHash>("\"zz\"").is_err());
        assert!(ChunkHash::from_hex(&"g".repeat(64)).is_none());
    }

    #[test]
    fn entries_are_tagged() {
        let change = Change {
            path: "/a".into(),
            entry: Some(Entry::Symlink { target: "b".into() }),
            mtime_ms: None,
        };
        let text = serde_json::to_string(&change).unwrap();
        assert_eq!(
            text,
            r#"{"path":"/a","entry":{"type":"symlink","target":"b"}}"#
        );
        assert_eq!(serde_json::from_str::<Change>(&text).unwrap(), change);
        let file = Change {
            path: "/f".into(),
            entry: Some(Entry::File {
                mode: 0o644,
                size: 0,
                chunks: vec![],
            }),
            mtime_ms: Some(1_500_000_000_123),
        };
        let text = serde_json::to_string(&file).unwrap();
        assert!(text.ends_with(r#""mtime_ms":1500000000123}"#), "{text}");
        assert_eq!(serde_json::from_str::<Change>(&text).unwrap(), file);
        let reply = serde_json::to_string(&ApplyReply::Need { chunks: vec![] }).unwrap();
        assert_eq!(reply, r#"{"status":"need","chunks":[]}"#);
    }

    #[test]
    fn exec_events_old_and_new() {
        let error = ExecEvent::Error(ErrorDetail {
            code: ErrorCode::Io,
            message: "scan failed".into(),
        });
        let text = serde_json::to_string(&error).unwrap();
        assert_eq!(
            text,
            r#"{"type":"error","code":"IO","message":"scan failed"}"#
        );
        assert_eq!(serde_json::from_str::<ExecEvent>(&text).unwrap(), error);
        // An exit event from a peer without `shutdown` still parses.
        let old = r#"{"type":"exit","code":0,"signal":null,"timed_out":false,"cancelled":false,"changes":[],"skipped":[]}"#;
        let ExecEvent::Exit(exit) = serde_json::from_str(old).unwrap() else {
            panic!("not an exit event");
        };
        assert!(!exit.shutdown);
    }
}
