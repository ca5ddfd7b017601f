//! The agent as a whole: making it, showing it, deleting it, reaching it,
//! and the socket it holds.

use serde_json::json;

use super::{answer, Call, Handled};
use crate::agent::Agent;
use crate::computer;
use crate::error::ApiError;
use crate::host::Host;
use crate::protocol::SocketState;
use crate::request::{resource, Reply};

/// `PUT /agents/{id}`: `201` for an agent this call made, `200` for one
/// that was there.
pub(super) fn create<H: Host>(agent: &Agent<H>, call: &Call<'_>) -> Result<Handled, ApiError> {
    let body = json!({
        "agent": call.agent,
        "created": call.created,
        "revision": agent.vfs().revision()?,
    });
    Ok(Reply::made(call.created, body, resource(call.agent, &[])).into())
}

/// `GET /agents/{id}`.
pub(super) fn info<H: Host>(agent: &Agent<H>, call: &Call<'_>) -> Result<Handled, ApiError> {
    answer(json!({
        "agent": call.agent,
        "usage": agent.vfs().usage()?,
        "database_bytes": agent.host.database_size(),
    }))
}

/// `DELETE /agents/{id}`: the workspace, its computer, its sockets and its
/// alarm go; a tombstone stays (see `crate::tombstone`), and the alarm
/// releases its markers in the object store (`crate::tier_release`).
pub(super) async fn delete<H: Host>(
    agent: &Agent<H>,
    call: &Call<'_>,
) -> Result<Handled, ApiError> {
    // The agent's computer goes with it (if it has one running).
    if let Ok(transport) = agent.computer() {
        let _ = computer::stop(&transport).await;
    }
    crate::subscriptions::close_all(agent);
    agent.wipe_storage().await?;
    crate::tombstone::lay(agent.db(), agent.now_ms())?;
    agent.release_deleted().await?;
    agent.closed();
    answer(json!({ "agent": call.agent, "deleted": true }))
}

/// `POST /agents/{id}/ping`: reaches the agent and does nothing.
pub(super) fn ping(call: &Call<'_>) -> Result<Handled, ApiError> {
    answer(json!({ "agent": call.agent }))
}

/// `GET /agents/{id}/ws`: the glue accepts the WebSocket with this
/// attachment.
pub(super) fn socket(call: &Call<'_>) -> Result<Handled, ApiError> {
    if !call.upgrade {
        return Err(ApiError::UpgradeRequired);
    }
    Ok(Reply::Socket(SocketState {
        agent: call.agent.to_string(),
        caller: call.caller.clone(),
        ..SocketState::default()
    })
    .into())
}

/// The MCP endpoint is served by `Agent::mcp` (`crate::mcp`), whose tool
/// calls come back here as their HTTP twins: it never reaches a handler.
pub(super) fn mcp() -> Result<Handled, ApiError> {
    Err(ApiError::Internal(
        "the MCP endpoint is served by Agent::mcp, not dispatched".into(),
    ))
}
