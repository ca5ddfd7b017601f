//! The computer and the long-running processes on it.

use serde_json::json;

use super::{answer, Call, Handled};
use crate::agent::Agent;
use crate::computer;
use crate::error::ApiError;
use crate::host::Host;
use crate::request::{resource, Reply};
use crate::scheduling;

/// `GET /computer`: its state and live sync's.
pub(super) async fn computer<H: Host>(agent: &Agent<H>) -> Result<Handled, ApiError> {
    answer(json!({
        "computer": computer::state(&agent.computer()?).await?,
        "live_sync": computer::live::status(agent.db())?,
        "environment": agent.environment_json()?,
    }))
}

/// `POST /computer/environment`: save the environment now.
pub(super) async fn save_environment<H: Host>(agent: &Agent<H>) -> Result<Handled, ApiError> {
    answer(agent.save_environment().await?)
}

/// `DELETE /computer/environment`: drop it.
pub(super) fn drop_environment<H: Host>(agent: &Agent<H>) -> Result<Handled, ApiError> {
    answer(agent.drop_environment()?)
}

/// `POST /computer/stop`: release it now.
pub(super) async fn stop_computer<H: Host>(agent: &Agent<H>) -> Result<Handled, ApiError> {
    answer(json!({ "computer": agent.stop_computer().await? }))
}

/// `GET /processes`.
pub(super) fn list<H: Host>(agent: &Agent<H>) -> Result<Handled, ApiError> {
    answer(agent.list_processes()?)
}

/// `GET /processes/{id}`.
pub(super) fn show<H: Host>(agent: &Agent<H>, id: &str) -> Result<Handled, ApiError> {
    answer(json!({ "process": agent.process(id)?.to_json() }))
}

/// `GET /processes/{id}/output?from=`: its job's log.
pub(super) fn output<H: Host>(
    agent: &Agent<H>,
    call: &Call<'_>,
    id: &str,
) -> Result<Handled, ApiError> {
    let job = agent.process(id)?.job;
    answer(scheduling::job_output(agent.db(), job, call.query)?)
}

/// `POST /processes`: `201`, pointing at the new process.
pub(super) async fn start<H: Host>(
    agent: &Agent<H>,
    call: &mut Call<'_>,
) -> Result<Handled, ApiError> {
    let started = agent.start_process(&call.json()?).await?;
    let id = started["process"]["id"].as_str().unwrap_or_default();
    let location = resource(call.agent, &["processes", id]);
    Ok(Reply::made(true, started, location).into())
}

/// `POST /processes/{id}/signal`.
pub(super) async fn signal<H: Host>(
    agent: &Agent<H>,
    call: &mut Call<'_>,
    id: &str,
) -> Result<Handled, ApiError> {
    answer(agent.signal_process(id, &call.json()?).await?)
}

/// `DELETE /processes/{id}?grace_ms=`: stop it, or forget one that ended.
pub(super) async fn stop<H: Host>(
    agent: &Agent<H>,
    call: &Call<'_>,
    id: &str,
) -> Result<Handled, ApiError> {
    answer(agent.stop_process(id, call.query).await?)
}
