//! Interactive terminals (`crate::terminal`) and the tickets that open
//! one from a browser.

use super::{answer, Call, Handled};
use crate::agent::Agent;
use crate::decode::decode_value;
use crate::error::ApiError;
use crate::host::Host;
use crate::policy::Access;
use crate::request::Reply;
use crate::terminal::tickets;

/// `GET /terminal`: a WebSocket upgrade (the terminal checks its
/// backend's exec scope).
pub(super) async fn open<H: Host>(agent: &Agent<H>, call: &Call<'_>) -> Result<Handled, ApiError> {
    let reply = agent
        .open_terminal(call.agent, call.caller, call.query, call.upgrade)
        .await?;
    Ok(reply.into())
}

/// `GET /terminals`.
pub(super) fn list<H: Host>(agent: &Agent<H>) -> Result<Handled, ApiError> {
    answer(agent.list_terminals()?)
}

/// `DELETE /terminals/{id}`: end it and forget it.
pub(super) async fn delete<H: Host>(
    agent: &Agent<H>,
    call: &Call<'_>,
    id: &str,
) -> Result<Handled, ApiError> {
    answer(agent.delete_terminal(call.caller, id).await?)
}

/// `POST /tickets`: `201`, a single-use ticket for one terminal upgrade,
/// carrying its minter's scopes (either exec scope: the terminal checks
/// its backend's).
pub(super) fn ticket<H: Host>(agent: &Agent<H>, call: &mut Call<'_>) -> Result<Handled, ApiError> {
    Access::Exec.admits(call.caller)?;
    let ticket: tickets::TicketRequest = decode_value(&call.json()?)?;
    let minted = tickets::mint(
        agent.db(),
        &ticket,
        call.caller,
        &agent.host.random_hex(48)?,
        agent.now_ms(),
    )?;
    Ok(Reply::Json {
        status: 201,
        body: minted,
        headers: Vec::new(),
    }
    .into())
}
