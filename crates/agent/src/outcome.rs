//! The one answer of an exec, from either backend: how it ended, its
//! output, and for the computer what moved and changed.

use base64::Engine;
use serde::{Deserialize, Serialize, Serializer};
use stead_shell::LimitKind;
use stead_vfs::{Conflict, Rejected};

pub use stead_scheduler::Backend;

/// How the answer carries stdout and stderr.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum OutputEncoding {
    /// Text, with invalid UTF-8 replaced (U+FFFD).
    #[default]
    Utf8,
    /// Base64 of the exact bytes (binary output: `gzip -c`, `tar c`).
    Base64,
}

/// Files and bytes moved one way between the workspace and the computer.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transfer {
    /// Paths described (created, changed or deleted).
    pub files: u64,
    /// Content bytes (chunks) moved.
    pub bytes: u64,
    /// Bytes of path descriptions (JSON) moved.
    pub manifest_bytes: u64,
}

impl std::ops::AddAssign<&Transfer> for Transfer {
    fn add_assign(&mut self, more: &Transfer) {
        self.files += more.files;
        self.bytes += more.bytes;
        self.manifest_bytes += more.manifest_bytes;
    }
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecStatus {
    /// It ran to its end (whatever its exit code).
    Exited,
    /// Stopped for running past its time.
    TimedOut,
    /// A light-shell limit other than time ended it (`limit` names it).
    LimitReached,
    /// Its job was cancelled.
    Cancelled,
    /// The computer was stopped (shut down) during it; its output and its
    /// changes so far came back.
    Stopped,
    /// The computer vanished during it; the workspace is unchanged.
    Lost,
}

/// What a command on the computer moved and changed.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ComputerReport {
    pub sync: SyncReport,
    /// Paths the command changed, applied to the workspace.
    pub changed: Vec<String>,
    /// Paths both sides changed (the workspace's version kept).
    pub conflicts: Vec<Conflict>,
    /// Changes the workspace refused, and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rejected: Vec<Rejected>,
    /// Paths the container did not report (device files, sockets, ...).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<stead_sync::Skipped>,
}

/// Files and bytes moved each way.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SyncReport {
    pub sent: Transfer,
    pub received: Transfer,
}

/// Output of one stream, as the answer carries it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captured {
    pub bytes: Vec<u8>,
    pub encoding: OutputEncoding,
}

impl Captured {
    pub fn new(bytes: Vec<u8>, encoding: OutputEncoding) -> Self {
        Captured { bytes, encoding }
    }
}

impl Serialize for Captured {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.encoding {
            OutputEncoding::Utf8 => serializer.serialize_str(&String::from_utf8_lossy(&self.bytes)),
            OutputEncoding::Base64 => serializer
                .serialize_str(&base64::engine::general_purpose::STANDARD.encode(&self.bytes)),
        }
    }
}

/// The answer of an exec, from either backend.
#[derive(Debug, Clone, Serialize)]
pub struct ExecOutcome {
    pub backend: Backend,
    pub status: ExecStatus,
    /// `null` when the command never finished (lost, cancelled unstarted).
    pub exit_code: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    pub stdout: Captured,
    pub stderr: Captured,
    /// Present when not the default (`base64`).
    #[serde(skip_serializing_if = "is_utf8")]
    pub output_encoding: OutputEncoding,
    /// Output hit its cap.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// The light-shell limit that ended it.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "limit_name")]
    pub limit: Option<LimitKind>,
    /// The workspace revision afterwards.
    pub revision: i64,
    /// The automatic checkpoint taken before it changed files (undo goes
    /// back to it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// What the computer moved and changed.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub computer: Option<ComputerReport>,
}

impl ExecOutcome {
    /// How the job that ran it ends: its exit code, whether it timed out,
    /// and the error that explains a failure other than an exit code.
    pub fn job_outcome(&self) -> stead_scheduler::jobs::Outcome {
        let error = match (self.status, self.limit) {
            (ExecStatus::Lost, _) => Some(
                self.message
                    .clone()
                    .unwrap_or_else(|| "the computer was lost during the command".into()),
            ),
            (_, Some(limit)) => Some(format!("limit reached: {}", limit.name())),
            _ => None,
        };
        stead_scheduler::jobs::Outcome {
            exit_code: self.exit_code.map(i64::from),
            timed_out: self.status == ExecStatus::TimedOut,
            error,
            backend: Some(self.backend),
        }
    }

    /// The JSON answer.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("exec outcomes serialize")
    }
}

fn is_utf8(encoding: &OutputEncoding) -> bool {
    *encoding == OutputEncoding::Utf8
}

fn limit_name<S: Serializer>(limit: &Option<LimitKind>, serializer: S) -> Result<S::Ok, S::Error> {
    match limit {
        Some(limit) => serializer.serialize_str(limit.name()),
        None => serializer.serialize_none(),
    }
}
