//! Requests to the ports the computer's processes serve, and share links
//! to them.

use serde_json::json;

use super::{answer, Call, Handled};
use crate::agent::Agent;
use crate::error::ApiError;
use crate::host::Host;
use crate::request::Reply;
use crate::{ports, shares};

/// Any method on `/ports/{port}{path}`, as the `Computer` object asks it
/// before it keeps a grant (`crate::port_grants`): `200` when the caller
/// may reach the port now. The request itself goes from the Worker to
/// that object, never through here.
pub(super) fn admit<H: Host>(
    agent: &Agent<H>,
    call: &Call<'_>,
    port: u16,
) -> Result<Handled, ApiError> {
    ports::admit(agent.db(), call.caller, port, agent.now_ms())?;
    answer(json!({ "port": port, "admitted": true }))
}

/// `POST /ports/{port}/share`: `201`. A share link has no route of its own
/// to point at (it is listed with the others, and its URL is in the
/// answer).
pub(super) fn share<H: Host>(
    agent: &Agent<H>,
    call: &mut Call<'_>,
    port: u16,
) -> Result<Handled, ApiError> {
    let key = agent.host.share_key().ok_or(ApiError::NotConfigured)?;
    let ports_host = agent.host.ports_host().ok_or(ApiError::NoPortsHost)?;
    let id = agent.host.random_hex(16)?;
    let created = shares::create(
        agent.db(),
        (call.agent, port),
        &call.json()?,
        (&key, call.origin, &ports_host),
        id,
        agent.now_ms(),
    )?;
    Ok(Reply::Json {
        status: 201,
        body: created,
        headers: Vec::new(),
    }
    .into())
}

/// `GET /shares`: those not yet expired.
pub(super) fn shares<H: Host>(agent: &Agent<H>) -> Result<Handled, ApiError> {
    answer(shares::list(agent.db(), agent.now_ms() / 1000)?)
}

/// `DELETE /shares/{id}`.
pub(super) fn revoke<H: Host>(agent: &Agent<H>, id: &str) -> Result<Handled, ApiError> {
    let revoked = shares::revoke(agent.db(), id, agent.now_ms())?;
    agent.withdraw_port_grants();
    answer(revoked)
}
