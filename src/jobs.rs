//! Jobs, schedules and hooks on the Durable Object: the platform glue
//! around `stead-scheduler` and `crate::api::jobs`.
//!
//! **The alarm drives everything.** A detached exec, a hook call and a
//! schedule's run all become a job row in state `queued`; the agent's one
//! alarm is then set to the earliest moment anything is due (now, for a
//! queued job) by [`arm`], after every change and on the first event of
//! every instance (so a restart re-arms it). The alarm handler runs queued
//! jobs and due schedule runs until none is left, then re-arms. Running jobs
//! from the alarm rather than from the request that queued them means a job
//! never depends on a connection, and a crash is recovered by the platform's
//! own alarm retry: a job found `running` when an instance starts was cut
//! off, so it is marked `failed` with that reason (never silently re-run: it
//! may have half-applied its writes), and a schedule run cut off the same
//! way is recorded `interrupted` and retried if its schedule allows.
//!
//! Output reaches the job log through [`JobSink`], which appends each piece
//! as the backend hands it over and pushes it to subscribed WebSockets in
//! the same synchronous step, so a subscriber never misses or doubles a
//! piece (see `crate::socket`).

use serde_json::{json, Value};
use stead_scheduler::{
    jobs::Stream, signing, Hooks, Job, JobState, Jobs, RunOutcome, RunTicket, SchedError, Schedules,
};
use stead_sql::{params, Sql};
use wasm_bindgen::JsValue;
use worker::{Fetch, Headers, Method, Request, RequestInit, Response, ScheduledTime};

use crate::api::auth::{self, Caller};
use crate::api::{self, jobs as japi, Action, ApiError, MAX_JSON_BODY};
use crate::computer::OutputSink;
use crate::random::random_hex;
use crate::socket;
use crate::workspace::{json_response, now_ms, read_body, Workspace};

/// Most runs one alarm carries out before re-arming for the rest.
const MAX_RUNS_PER_ALARM: usize = 50;
/// The header a hook caller puts its secret in.
pub const HOOK_SECRET_HEADER: &str = "x-hook-secret";

/// Appends a job's output to its log and pushes it to subscribers.
pub struct JobSink<'a> {
    ws: &'a Workspace,
    job: i64,
}

impl JobSink<'_> {
    fn push(&self, stream: Stream, data: &[u8]) {
        match self.ws.jobs().append(self.job, stream, data, now_ms()) {
            Ok(pieces) => socket::broadcast_output(self.ws, self.job, &pieces),
            Err(error) => worker::console_error!("job {}: output lost: {error}", self.job),
        }
    }
}

impl OutputSink for JobSink<'_> {
    fn stdout(&self, data: &[u8]) {
        self.push(Stream::Stdout, data);
    }

    fn stderr(&self, data: &[u8]) {
        self.push(Stream::Stderr, data);
    }

    fn job(&self) -> Option<i64> {
        Some(self.job)
    }
}

/// Records the agent's id so the alarm, which carries no request, knows it.
pub fn remember_agent<S: Sql>(db: &S, agent: &str) -> Result<(), ApiError> {
    db.execute(
        "INSERT INTO agent_name (one, name) VALUES (1, ?) \
         ON CONFLICT (one) DO UPDATE SET name = excluded.name",
        params![agent],
    )
    .map_err(SchedError::from)?;
    Ok(())
}

fn agent_of<S: Sql>(db: &S) -> Result<String, ApiError> {
    let row = db
        .query_row("SELECT name FROM agent_name WHERE one = 1", params![])
        .map_err(SchedError::from)?;
    Ok(row
        .and_then(|r| r.text(0).ok().map(str::to_string))
        .unwrap_or_default())
}

/// Work cut off by a restart: called once per instance, before anything
/// runs. Running jobs fail with the reason; interrupted schedule runs are
/// recorded and retried where allowed.
pub fn recover<S: Sql>(db: &S) -> Result<(), ApiError> {
    let now = now_ms();
    Jobs::new(db).fail_interrupted(now)?;
    Schedules::new(db).interrupt_running(now)?;
    Ok(())
}

/// Sets the alarm to the earliest due time (now if a job is queued), or
/// clears it when nothing is due.
pub async fn arm(ws: &Workspace) -> Result<(), ApiError> {
    let db = ws.db();
    let queued = Jobs::new(db).has_queued()?.then(now_ms);
    let due = Schedules::new(db).next_wake()?;
    let storage = ws.state().storage();
    match [queued, due].into_iter().flatten().min() {
        Some(at) => {
            let date = js_sys::Date::new(&JsValue::from_f64(at as f64));
            storage.set_alarm(ScheduledTime::new(date)).await?;
        }
        None => storage.delete_alarm().await?,
    }
    Ok(())
}

/// Queues a job for `request` and arms the alarm to run it.
pub async fn start_job(ws: &Workspace, source: &str, request: Value) -> Result<Job, ApiError> {
    let job = japi::create_job(ws.db(), source, request, now_ms())?;
    arm(ws).await?;
    Ok(job)
}

/// Runs the claimed job `job` to its end and tells subscribers.
async fn run_job(ws: &Workspace, agent: &str, job: Job) -> Result<Job, ApiError> {
    let sink = JobSink { ws, job: job.id };
    let body = job.request.to_string();
    let result = ws.exec(agent, body.as_bytes(), &sink).await;
    let outcome = japi::outcome_of(&result);
    let job = ws.jobs().finish(job.id, &outcome, now_ms())?;
    socket::broadcast_job_end(ws, &job);
    socket::notify_changes(ws);
    Ok(job)
}

/// The alarm: run every queued job and every due schedule run, then re-arm.
pub async fn alarm(ws: &Workspace) -> worker::Result<Response> {
    match ws.open("", false) {
        Ok(_) => {}
        // The agent was deleted: nothing to run, nothing to re-arm.
        Err(ApiError::AgentNotFound { .. }) => return Response::ok("no agent"),
        Err(error) => return Err(worker::Error::RustError(error.to_string())),
    }
    let outcome = drain(ws).await;
    // Re-arm whatever happened, so a failure is retried and nothing stalls.
    let armed = arm(ws).await;
    outcome
        .and(armed)
        .map_err(|e| worker::Error::RustError(e.to_string()))?;
    Response::ok("ok")
}

async fn drain(ws: &Workspace) -> Result<(), ApiError> {
    let agent = agent_of(ws.db())?;
    for _ in 0..MAX_RUNS_PER_ALARM {
        if let Some(job) = Jobs::new(ws.db()).claim_next(now_ms())? {
            run_job(ws, &agent, job).await?;
            continue;
        }
        let Some(ticket) = Schedules::new(ws.db()).take_due(now_ms())? else {
            return Ok(());
        };
        let outcome = match ticket.schedule.action.as_str() {
            "webhook" => call_webhook(&ticket).await,
            _ => run_scheduled_exec(ws, &agent, &ticket).await?,
        };
        match Schedules::new(ws.db()).finish_run(&ticket, &outcome, now_ms()) {
            // Deleted while it ran: nothing left to record.
            Ok(_) | Err(SchedError::ScheduleNotFound { .. }) => {}
            Err(error) => return Err(error.into()),
        }
    }
    Ok(())
}

/// A schedule's exec run: a job, recorded in the ledger before it starts.
async fn run_scheduled_exec(
    ws: &Workspace,
    agent: &str,
    ticket: &RunTicket,
) -> Result<RunOutcome, ApiError> {
    let request = ticket.schedule.exec.clone().unwrap_or(Value::Null);
    let source = format!("schedule:{}", ticket.schedule.id);
    let job = match japi::create_job(ws.db(), &source, request, now_ms()) {
        Ok(job) => job,
        Err(error) => {
            return Ok(RunOutcome {
                ok: false,
                error: Some(error.to_string()),
                ..RunOutcome::default()
            })
        }
    };
    let schedules = Schedules::new(ws.db());
    schedules.set_job(ticket, job.id)?;
    let Some(job) = Jobs::new(ws.db()).claim(job.id, now_ms())? else {
        return Ok(RunOutcome {
            ok: false,
            job_id: Some(job.id),
            error: Some("the job was cancelled before it started".into()),
            ..RunOutcome::default()
        });
    };
    let job = run_job(ws, agent, job).await?;
    let error = match (job.state, &job.error, job.exit_code) {
        (JobState::Succeeded, _, _) => None,
        (_, Some(error), _) => Some(error.clone()),
        (state, None, Some(code)) => Some(format!("job {state} with exit code {code}")),
        (state, None, None) => Some(format!("job {state}")),
    };
    Ok(RunOutcome {
        ok: job.state == JobState::Succeeded,
        job_id: Some(job.id),
        status: None,
        error,
    })
}

/// A schedule's webhook call: a signed POST; 2xx is success.
async fn call_webhook(ticket: &RunTicket) -> RunOutcome {
    let failed = |error: String, status: Option<i64>| RunOutcome {
        ok: false,
        status,
        error: Some(error),
        ..RunOutcome::default()
    };
    let (Some(url), Some(secret)) = (&ticket.schedule.url, &ticket.schedule.secret) else {
        return failed("the schedule has no webhook url".into(), None);
    };
    let body = ticket.webhook_body();
    let timestamp = now_ms();
    let sent = async {
        let headers = Headers::new();
        headers.set("content-type", "application/json")?;
        headers.set("x-stead-timestamp", &timestamp.to_string())?;
        headers.set(
            "x-stead-signature",
            &signing::signature(secret, timestamp, body.as_bytes()),
        )?;
        headers.set("x-stead-schedule", &ticket.schedule.id)?;
        let mut init = RequestInit::new();
        init.with_method(Method::Post)
            .with_headers(headers)
            .with_body(Some(JsValue::from_str(&body)));
        let request = Request::new_with_init(url, &init)?;
        Fetch::Request(request).send().await
    }
    .await;
    match sent {
        Ok(response) => {
            let status = i64::from(response.status_code());
            if (200..300).contains(&status) {
                RunOutcome {
                    ok: true,
                    status: Some(status),
                    ..RunOutcome::default()
                }
            } else {
                failed(format!("the webhook answered {status}"), Some(status))
            }
        }
        Err(error) => failed(format!("the webhook call failed: {error}"), None),
    }
}

/// The HTTP routes of jobs, schedules and hooks.
pub async fn handle(
    ws: &Workspace,
    agent: &str,
    action: Action,
    req: &mut Request,
    caller: &Caller,
) -> Result<Response, ApiError> {
    let db = ws.db();
    let query: Vec<(String, String)> = req
        .url()?
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let (status, body) = match action {
        Action::Jobs => (200, japi::list_jobs(db, &query)?),
        Action::Job(id) => (200, japi::job_json(&Jobs::new(db).get(id)?)),
        Action::JobOutput(id) => (200, japi::job_output(db, id, &query)?),
        Action::JobCancel(id) => {
            let job = japi::cancel_job(db, id, now_ms())?;
            if job.state.is_final() {
                socket::broadcast_job_end(ws, &job);
            } else {
                // Running: on the computer, stop the command itself.
                ws.cancel_computer_job(agent, id).await?;
            }
            (200, japi::job_json(&job))
        }
        Action::Schedules => (200, japi::list_schedules(db)?),
        Action::Schedule(id) => (200, japi::get_schedule(db, &id)?),
        Action::ScheduleCreate | Action::SchedulePut(_) => {
            let body = read_body(req, MAX_JSON_BODY).await?;
            auth::require_exec_of(caller, &body)?;
            let path_id = match &action {
                Action::SchedulePut(id) => Some(id.as_str()),
                _ => None,
            };
            let generated_id = format!("s-{}", random_hex(12)?);
            let answer = japi::put_schedule(
                db,
                path_id,
                &body,
                &generated_id,
                &random_hex(48)?,
                now_ms(),
                ws.quotas().max_schedules as i64,
            )?;
            arm(ws).await?;
            (if path_id.is_some() { 200 } else { 201 }, answer)
        }
        Action::ScheduleDelete(id) => {
            Schedules::new(db).delete(&id)?;
            arm(ws).await?;
            (200, json!({ "deleted": id }))
        }
        Action::Hooks => (200, json!({ "hooks": Hooks::new(db).list()? })),
        Action::Hook(name) => (200, json!({ "hook": Hooks::new(db).get(&name)? })),
        Action::HookPut(name) => {
            let body = read_body(req, MAX_JSON_BODY).await?;
            auth::require_exec_of(caller, &body)?;
            (
                200,
                japi::put_hook(db, &name, &body, &random_hex(48)?, now_ms())?,
            )
        }
        Action::HookDelete(name) => {
            Hooks::new(db).delete(&name)?;
            (200, json!({ "deleted": name }))
        }
        Action::HookCall(name) => {
            let presented = req.headers().get(HOOK_SECRET_HEADER)?.unwrap_or_default();
            let hook = Hooks::new(db).authenticate(&name, &presented, now_ms())?;
            let body = read_body(req, MAX_JSON_BODY).await?;
            let request = japi::hook_request(&hook, &body);
            let job = start_job(ws, &format!("hook:{name}"), request).await?;
            (202, json!({ "job": japi::job_json(&job) }))
        }
        other => {
            return Err(ApiError::Internal(format!(
                "{other:?} is not a jobs route (agent {agent})"
            )))
        }
    };
    Ok(json_response(status, &body)?)
}

/// `exec` with `detach`: `Ok(job)` when it was queued as a job (answer at
/// once), else `Err(body)`: the body to run in place, `detach` taken out.
pub async fn exec_or_detach(
    ws: &Workspace,
    source: &str,
    body: Vec<u8>,
) -> Result<Result<Job, Vec<u8>>, ApiError> {
    match japi::split_detach(&body)? {
        Some((true, request)) => Ok(Ok(start_job(ws, source, request).await?)),
        Some((false, request)) => Ok(Err(request.to_string().into_bytes())),
        None => Ok(Err(body)),
    }
}

/// Whether `tool` is callable over the socket.
pub fn socket_tool(tool: &str) -> bool {
    tool == "exec" || api::tools::TOOLS.contains(&tool)
}

#[cfg(test)]
mod tests {
    use super::*;
    use stead_sql::{migrate, SqliteDb, MIGRATIONS};

    #[test]
    fn the_agent_name_is_remembered_for_the_alarm() {
        let db = SqliteDb::memory().unwrap();
        migrate(&db, MIGRATIONS).unwrap();
        assert_eq!(agent_of(&db).unwrap(), "");
        remember_agent(&db, "alice").unwrap();
        remember_agent(&db, "alice").unwrap();
        assert_eq!(agent_of(&db).unwrap(), "alice");
    }

    #[test]
    fn only_exec_and_file_tools_are_socket_tools() {
        assert!(socket_tool("exec") && socket_tool("write") && socket_tool("grep"));
        assert!(!socket_tool("delete_agent") && !socket_tool(""));
    }
}
