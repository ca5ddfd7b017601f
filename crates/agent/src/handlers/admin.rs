//! The agent's settings, audit log and tokens.

use serde_json::json;

use super::{answer, Call, Handled};
use crate::agent::Agent;
use crate::auth;
use crate::decode::decode_value;
use crate::error::ApiError;
use crate::host::Host;
use crate::request::Reply;
use crate::{audit, minted, settings};

/// `GET /settings`.
pub(super) fn settings<H: Host>(agent: &Agent<H>) -> Result<Handled, ApiError> {
    answer(settings::get(agent.db())?)
}

/// `PUT /settings`: the audit entry says what changed.
pub(super) fn put_settings<H: Host>(
    agent: &Agent<H>,
    call: &mut Call<'_>,
) -> Result<Handled, ApiError> {
    let body = call.json()?;
    let (settings, changed) = settings::put(
        agent.db(),
        &body,
        agent.host.local_development(),
        agent.now_ms(),
    )?;
    agent.settings_changed();
    Ok(Handled {
        reply: Reply::ok(settings),
        detail: Some(json!({ "changed": changed })),
    })
}

/// `GET /audit`.
pub(super) fn audit<H: Host>(agent: &Agent<H>, call: &Call<'_>) -> Result<Handled, ApiError> {
    answer(audit::list(
        agent.db(),
        audit::Page::from_query(call.query)?,
    )?)
}

/// `POST /tokens/revoke`: refused from now on, and what the token opened
/// (sockets, streams) ends now rather than at its next message.
pub(super) fn revoke_token<H: Host>(
    agent: &Agent<H>,
    call: &mut Call<'_>,
) -> Result<Handled, ApiError> {
    let revoke: auth::RevokeRequest = decode_value(&call.json()?)?;
    revoke.check_agent(call.agent)?;
    let now_s = agent.now_ms() / 1000;
    // Kept for the longest lifetime a token can have.
    auth::revoke(agent.db(), &revoke.id, now_s + auth::MAX_TTL_SECONDS, now_s)?;
    agent.unrevoked.borrow_mut().remove(&revoke.id);
    agent.withdraw_port_grants();
    crate::subscriptions::close_token(agent, &revoke.id);
    answer(json!({ "revoked": revoke.id, "agent": call.agent }))
}

/// `GET /tokens`: those not yet expired.
pub(super) fn tokens<H: Host>(agent: &Agent<H>) -> Result<Handled, ApiError> {
    let listed = minted::list(agent.db(), agent.now_ms() / 1000)?;
    answer(serde_json::to_value(listed).map_err(|e| ApiError::Internal(e.to_string()))?)
}

/// `POST /tokens/minted`: the Worker records a token before handing it out.
pub(super) fn token_minted<H: Host>(
    agent: &Agent<H>,
    call: &mut Call<'_>,
) -> Result<Handled, ApiError> {
    let token: minted::Minted = decode_value(&call.json()?)?;
    minted::record(agent.db(), &token, agent.now_ms() / 1000)?;
    answer(json!({ "recorded": token.id, "agent": call.agent }))
}
