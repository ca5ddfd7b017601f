//! Schedules and hooks: setting them up, and a third party's call of a
//! hook.

use serde_json::json;
use stead_scheduler::{Credential, Hook, Hooks, Jobs, Schedules};
use stead_sql::Sql;

use super::{answer, Call, Handled};
use crate::agent::Agent;
use crate::error::ApiError;
use crate::host::Host;
use crate::request::{read_body, resource, Body, Reply};
use crate::route::MAX_JSON_BODY;
use crate::{policy, scheduling};

/// `GET /schedules`.
pub(super) fn list<H: Host>(agent: &Agent<H>) -> Result<Handled, ApiError> {
    answer(scheduling::list_schedules(agent.db(), agent.now_ms())?)
}

/// `GET /schedules/{id}`.
pub(super) fn show<H: Host>(agent: &Agent<H>, id: &str) -> Result<Handled, ApiError> {
    answer(scheduling::get_schedule(agent.db(), id, agent.now_ms())?)
}

/// `POST /schedules` (`path_id` `None`) and `PUT /schedules/{id}`: the
/// command it binds needs the scope running it now would, and its webhook
/// a target the agent may call.
pub(super) async fn put<H: Host>(
    agent: &Agent<H>,
    call: &mut Call<'_>,
    path_id: Option<&str>,
) -> Result<Handled, ApiError> {
    let body = call.json()?;
    policy::require_exec_of(call.caller, &body, &agent.vfs())?;
    if let Some(url) = scheduling::webhook_url(&body) {
        agent.check_webhook_target(&url).await?;
    }
    let generated_id = format!("s-{}", agent.host.random_hex(12)?);
    let (answer, made) = scheduling::put_schedule(
        agent.db(),
        path_id,
        &body,
        &generated_id,
        &agent.host.random_hex(48)?,
        agent.now_ms(),
        agent.quotas().max_schedules as i64,
    )?;
    agent.arm().await?;
    let location = resource(call.agent, &["schedules", &made.id]);
    Ok(Reply::made(made.created, answer, location).into())
}

/// `DELETE /schedules/{id}`.
pub(super) async fn delete<H: Host>(agent: &Agent<H>, id: &str) -> Result<Handled, ApiError> {
    Schedules::new(agent.db()).delete(id)?;
    agent.arm().await?;
    answer(json!({ "deleted": id }))
}

/// `GET /hooks`.
pub(super) fn hooks<H: Host>(agent: &Agent<H>) -> Result<Handled, ApiError> {
    answer(json!({ "hooks": Hooks::new(agent.db()).list()? }))
}

/// `GET /hooks/{name}`.
pub(super) fn hook<H: Host>(agent: &Agent<H>, name: &str) -> Result<Handled, ApiError> {
    answer(json!({ "hook": Hooks::new(agent.db()).get(name)? }))
}

/// `PUT /hooks/{name}`: as a schedule, its command needs the scope running
/// it now would.
pub(super) fn put_hook<H: Host>(
    agent: &Agent<H>,
    call: &mut Call<'_>,
    name: &str,
) -> Result<Handled, ApiError> {
    let body = call.json()?;
    policy::require_exec_of(call.caller, &body, &agent.vfs())?;
    let secret = agent.host.random_hex(48)?;
    let (answer, created) = scheduling::put_hook(agent.db(), name, &body, &secret, agent.now_ms())?;
    let location = resource(call.agent, &["hooks", name]);
    Ok(Reply::made(created, answer, location).into())
}

/// `DELETE /hooks/{name}`.
pub(super) fn delete_hook<H: Host>(agent: &Agent<H>, name: &str) -> Result<Handled, ApiError> {
    Hooks::new(agent.db()).delete(name)?;
    answer(json!({ "deleted": name }))
}

/// `POST /hooks/{name}`, a third party's call: a caller with the secret
/// proves itself before its body is read, a signed call with its body.
pub(super) async fn call_hook<H: Host>(
    agent: &Agent<H>,
    call: &Call<'_>,
    name: &str,
    body: &mut impl Body,
) -> Result<Handled, ApiError> {
    let hooks = Hooks::new(agent.db());
    let by_secret = match &call.hook.secret {
        Some(secret) => {
            Some(hooks.authenticate(name, Credential::Secret(secret), agent.now_ms())?)
        }
        None => None,
    };
    let payload = read_body(body, MAX_JSON_BODY).await?;
    let hook = match by_secret {
        Some(hook) => hook,
        None => {
            let credential = match (&call.hook.timestamp, &call.hook.signature) {
                (Some(timestamp), Some(signature)) => Credential::Signed {
                    timestamp,
                    signature,
                    body: &payload,
                },
                _ => Credential::None,
            };
            hooks.authenticate(name, credential, agent.now_ms())?
        }
    };
    let key = call.hook.idempotency_key.as_deref();
    run_hook(agent, call.agent, &hook, key, &payload).await
}

/// Starts an authenticated hook call's job, unless a call with the same
/// idempotency key did within the hook's window: then it answers with that
/// call's job and runs nothing.
async fn run_hook<H: Host>(
    agent: &Agent<H>,
    agent_id: &str,
    hook: &Hook,
    idempotency_key: Option<&str>,
    payload: &[u8],
) -> Result<Handled, ApiError> {
    let (db, now_ms) = (agent.db(), agent.now_ms());
    let hooks = Hooks::new(db);
    let key = idempotency_key.map(|key| format!("key:{key}"));
    if let Some(key) = &key {
        if let Some(job) = hooks.delivered(&hook.name, key, now_ms)? {
            let job = job.map(|id| Jobs::new(db).get(id)).transpose()?;
            let job = job.as_ref().map(scheduling::job_json);
            return answer(json!({ "job": job, "replayed": true }));
        }
    }
    let request = scheduling::hook_request(hook, payload);
    let source = format!("hook:{}", hook.name);
    // Queued and remembered in one step, so a second call with the same
    // key meets the record.
    let job = db.transaction(|| {
        let job = scheduling::create_job(db, &source, request, now_ms)?;
        if let Some(key) = &key {
            hooks.remember(&hook.name, key, Some(job.id), now_ms)?;
        }
        Ok::<_, ApiError>(job)
    })?;
    agent.arm().await?;
    Ok(Reply::queued(agent_id, &job).into())
}
