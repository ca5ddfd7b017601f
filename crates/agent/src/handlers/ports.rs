//! Requests to the ports the computer's processes serve, and share links
//! to them.

use super::{answer, Call, Handled};
use crate::agent::Agent;
use crate::error::ApiError;
use crate::host::Host;
use crate::request::Reply;
use crate::route::Front;
use crate::{ports, shares};

/// Any method on `/ports/{port}{path}`: checked here, forwarded by the
/// glue as it came.
pub(super) fn forward<H: Host>(
    agent: &Agent<H>,
    call: &Call<'_>,
    port: u16,
    front: Front,
) -> Result<Handled, ApiError> {
    let capability = call
        .query
        .iter()
        .find(|(key, _)| key == shares::QUERY_PARAM)
        .map(|(_, value)| value.as_str());
    let secure = call.origin.starts_with("https:");
    let forward = ports::admit(
        agent.db(),
        call.caller,
        (call.agent, port, front),
        capability,
        (agent.now_ms(), secure),
    )?;
    Ok(Reply::Forward(forward).into())
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
    answer(shares::revoke(agent.db(), id, agent.now_ms())?)
}
