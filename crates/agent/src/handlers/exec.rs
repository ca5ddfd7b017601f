//! `POST /exec`: a command, run now or queued as a job.

use serde_json::Value;

use super::{Call, Handled};
use crate::agent::Agent;
use crate::computer::Discard;
use crate::error::ApiError;
use crate::host::Host;
use crate::outcome::Backend;
use crate::policy::{self, Access};
use crate::request::Reply;
use crate::{exec, scheduling};

/// Checks the caller may run the command where it would run, then runs
/// it now, or queues it as a job with `detach`.
pub(super) async fn exec<H: Host>(
    agent: &Agent<H>,
    call: &mut Call<'_>,
) -> Result<Handled, ApiError> {
    let source = call.entry.job_source();
    let mut body = admitted(agent, call.caller, call.json())?;
    if scheduling::split_detach(&mut body)? {
        let job = agent.start_job(source, body).await?;
        return Ok(Reply::queued(call.agent, &job).into());
    }
    let outcome = agent
        .exec_to_end(&call.caller.actor(), &body, &Discard)
        .await?;
    // A command on the computer may have brought up a new one and started
    // processes on it again: the alarm watches them. (The light shell
    // starts nothing the alarm follows.)
    if outcome.backend != Backend::Shell {
        agent.arm().await?;
    }
    Ok(Reply::ok(outcome.to_json()).into())
}

/// The body of a command `caller` may run where it would run. A body that
/// does not decode runs nowhere (the exec says why); still, only a caller
/// who may run commands learns why.
fn admitted<H: Host>(
    agent: &Agent<H>,
    caller: &crate::auth::Caller,
    body: Result<Value, ApiError>,
) -> Result<Value, ApiError> {
    let destination = body
        .as_ref()
        .ok()
        .and_then(|body| exec::destination(body, &agent.vfs()));
    match destination {
        Some(destination) => policy::require_exec(caller, destination)?,
        None => Access::Exec.admits(caller)?,
    }
    body
}
