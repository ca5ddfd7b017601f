//! Jobs: the list, one job, its output, and cancelling it.

use serde_json::json;
use stead_scheduler::{Jobs, SchedError};

use super::{answer, Call, Handled};
use crate::agent::Agent;
use crate::computer::detached;
use crate::error::ApiError;
use crate::host::Host;
use crate::{policy, scheduling};

/// `GET /jobs`.
pub(super) fn list<H: Host>(agent: &Agent<H>, call: &Call<'_>) -> Result<Handled, ApiError> {
    answer(scheduling::list_jobs(agent.db(), call.query)?)
}

/// `GET /jobs/{id}`: with, for a command running detached on the
/// computer, which alarm follows it now (see `crate::runner`).
pub(super) fn show<H: Host>(agent: &Agent<H>, id: i64) -> Result<Handled, ApiError> {
    let db = agent.db();
    let mut job = scheduling::job_json(&Jobs::new(db).get(id)?);
    if let Some(running) = detached::of_job(db, id).map_err(SchedError::from)? {
        job["computer"] = json!({
            "exec": running.detached.exec,
            "alarms": running.slices,
        });
    }
    answer(json!({ "job": job }))
}

/// `GET /jobs/{id}/output?from=`.
pub(super) fn output<H: Host>(
    agent: &Agent<H>,
    call: &Call<'_>,
    id: i64,
) -> Result<Handled, ApiError> {
    answer(scheduling::job_output(agent.db(), id, call.query)?)
}

/// `POST /jobs/{id}/cancel`: stopping a command needs the scope running it
/// did; one running on the computer is stopped there.
pub(super) async fn cancel<H: Host>(
    agent: &Agent<H>,
    call: &Call<'_>,
    id: i64,
) -> Result<Handled, ApiError> {
    let db = agent.db();
    policy::require_exec(call.caller, Jobs::new(db).get(id)?.backend)?;
    let job = scheduling::cancel_job(db, id, agent.now_ms())?;
    if job.state.is_final() {
        crate::subscriptions::broadcast_job_end(agent, &job);
    } else {
        agent.cancel_computer_job(id).await?;
    }
    answer(json!({ "job": scheduling::job_json(&job) }))
}
