//! Live sync back from the computer: while processes run there, what they
//! write (build output, logs, lock files) comes back to the workspace
//! without waiting for a command to end.
//!
//! It is the exec round's steps 5 and 6 (see the crate docs) on a report
//! of its own: the workspace side asks for a scan whenever it watches its
//! processes, pulls the content it lacks and applies the changes under the
//! usual conflict rule, then acknowledges. Three differences make it fit
//! for running every few hundred milliseconds while files are being
//! written:
//!
//! - **Bounded.** A scan reports at most [`LiveScan::limit`] changes, in
//!   path order, and says whether more differ ([`LiveReport::more`]); the
//!   workspace side applies one report before it asks for the next, so a
//!   process that writes thousands of files never has them all in the
//!   Durable Object's memory at once. What a report leaves out stays
//!   unacknowledged on the container, and the next scan finds it.
//! - **Moving files are left for later.** A file that changed again after
//!   the scan is not served ([`CHUNKS_PATH`] leaves its chunks out of the
//!   answer instead of failing the whole pull); the workspace side applies
//!   everything else and names the paths it left out in its [`LiveAck`],
//!   so the container keeps them as differing and the next scan reports
//!   their newer state. A log that is appended to all the time still
//!   comes back, a little behind.
//! - **Background.** These requests are the `Computer` object's background
//!   ones (see [`crate::owner::is_background`]): watching a process's files
//!   never starts a container nor keeps one from being released when idle.
//!
//! The container refuses a scan while a command runs ([`crate::ErrorCode::Busy`]):
//! the command's own report at its end covers the same files.

use serde::{Deserialize, Serialize};

use crate::Change;

/// Every live-sync route starts with this: the `Computer` object treats
/// them as background requests.
pub const PREFIX: &str = "/v1/live/";

/// `POST` [`LiveScan`] → [`LiveReport`].
pub const SCAN_PATH: &str = "/v1/live/scan";

/// `POST` [`crate::ChunkRequest`] (its `exec` the report's id) → framed
/// chunks of the report, leaving out those whose file moved since the scan.
pub const CHUNKS_PATH: &str = "/v1/live/chunks";

/// `POST` [`LiveAck`].
pub const ACK_PATH: &str = "/v1/live/ack";

/// Most changes one live report may be asked to hold.
pub const MAX_LIMIT: usize = 10_000;

/// `POST /v1/live/scan`: scan the workspace now and keep the result as
/// report `id` (an id never used before on this container: the workspace
/// side makes them like exec ids).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LiveScan {
    pub id: String,
    /// Most changes to report (1 to [`MAX_LIMIT`]).
    pub limit: usize,
}

/// What a live scan found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LiveReport {
    /// The container instance that scanned (another than the one the
    /// workspace pushed to means that copy is gone).
    pub instance: String,
    /// The first changes in path order, at most the limit asked for.
    /// Empty: the disk is as acknowledged, and no report was kept.
    pub changes: Vec<Change>,
    /// More paths differ than were reported.
    pub more: bool,
}

/// `POST /v1/live/ack`: the workspace holds what report `report` said,
/// except at `left_out` (paths it did not apply: their files moved before
/// their content could be read). The container keeps those as they were
/// before the report, so they are reported again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LiveAck {
    pub report: String,
    #[serde(default)]
    pub left_out: Vec<String>,
}
