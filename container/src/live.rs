//! Live scans: what running processes changed, reported while they run
//! (see `stead_sync::live` for the round and why it is bounded).
//!
//! A live report is kept and acknowledged like an exec's (its id is one
//! the workspace side made, in the same space as exec ids), so serving its
//! chunks and moving the baseline are the exec's code. Only the scan
//! itself is here: refused while a command runs (whose own report will
//! cover the same paths), cut to the asked limit, and not kept at all when
//! nothing differs.

use stead_sync::live::{LiveReport, LiveScan, MAX_LIMIT};

use crate::error::ApiError;
use crate::state::Container;

/// Scans now; see the module docs.
pub fn scan(container: &Container, request: LiveScan) -> Result<LiveReport, ApiError> {
    if request.id.is_empty() || request.id.len() > 256 {
        return Err(ApiError::InvalidRequest(
            "the report id must be 1 to 256 bytes".into(),
        ));
    }
    if !(1..=MAX_LIMIT).contains(&request.limit) {
        return Err(ApiError::InvalidRequest(format!(
            "limit must be 1 to {MAX_LIMIT}"
        )));
    }
    let mut locked = container.lock();
    let state = &mut *locked;
    if container.is_stopping() {
        return Err(ApiError::ShuttingDown);
    }
    if let Some(running) = &state.running {
        return Err(ApiError::Busy(running.id.clone()));
    }
    if state.pending.contains_key(&request.id)
        || state.acked.contains(&request.id)
        || state.seen.contains(&request.id)
    {
        return Err(ApiError::AlreadyStarted(request.id));
    }
    let mut report = container
        .scan(state)
        .map_err(|e| ApiError::io("scanning the workspace", e))?;
    let more = report.truncate(request.limit);
    let changes = report.changes.clone();
    if !changes.is_empty() {
        state.keep_report(&request.id, report);
    }
    Ok(LiveReport {
        instance: state.instance.clone(),
        changes,
        more,
    })
}
