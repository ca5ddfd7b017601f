//! Jobs, schedules and hooks as the API shows them: request decoding, the
//! JSON answers, and the checks a stored request must pass. The records
//! themselves are `stead_scheduler`'s; running them is `crate::runner`'s.

use serde::Deserialize;
use serde_json::{json, Value};
use stead_scheduler::{
    jobs::Outcome, Hook, HookOptions, Hooks, Job, Jobs, NewJob, OutputPage, Piece, SchedError,
    ScheduleRequest, Schedules,
};
use stead_sql::Sql;

use crate::decode::within;
use crate::error::ApiError;
use crate::outcome::{Backend, ExecOutcome};

/// Most jobs one list answer holds.
const MAX_LIST: usize = 200;
/// Bytes of output one page holds by default (and at most).
pub(crate) const OUTPUT_PAGE: usize = 1 << 20;
/// Ledger rows shown with a schedule.
const RUNS_SHOWN: usize = 50;

/// Takes the `detach` flag out of an exec body, since the exec decoder
/// refuses fields it does not know: whether the body asks to run detached
/// (`false` when it does not say, or is no object; its errors stay the
/// exec route's own).
pub fn split_detach(body: &mut Value) -> Result<bool, ApiError> {
    let Some(object) = body.as_object_mut() else {
        return Ok(false);
    };
    match object.remove("detach") {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(detach)) => Ok(detach),
        Some(other) => Err(ApiError::InvalidRequest(format!(
            "detach must be true or false, not {other}"
        ))),
    }
}

/// Where an exec request will run, as the exec route decides it (`auto`
/// resolved, over the workspace in `db` as it is at `now_ms`); an error if
/// the exec route would refuse the request.
pub fn backend_of<S: Sql>(db: &S, request: &Value, now_ms: i64) -> Result<Backend, ApiError> {
    Ok(crate::exec::plan(request, &stead_vfs::Vfs::new(db, now_ms))?.ran())
}

/// Queues a job that runs `request`.
pub fn create_job<S: Sql>(
    db: &S,
    source: &str,
    request: Value,
    now_ms: i64,
) -> Result<Job, ApiError> {
    let new = NewJob {
        source: source.to_string(),
        backend: backend_of(db, &request, now_ms)?,
        request,
    };
    Ok(Jobs::new(db).create(&new, now_ms)?)
}

/// How an exec's outcome, or its failure to run, ends a job.
pub fn outcome_of(result: &Result<ExecOutcome, ApiError>) -> Outcome {
    match result {
        Ok(outcome) => outcome.job_outcome(),
        Err(error) => Outcome {
            exit_code: None,
            timed_out: false,
            error: Some(format!("{}: {error}", error.code())),
            backend: None,
        },
    }
}

/// A job as the API shows it.
pub fn job_json(job: &Job) -> Value {
    let mut value = serde_json::to_value(job).unwrap_or(Value::Null);
    if let Some(request) = job.request.as_object() {
        value["request"] = Value::Object(request.clone());
    }
    value
}

/// One piece of output as the API and the socket show it.
pub fn piece_json(job: i64, piece: &Piece) -> Value {
    json!({
        "type": "output",
        "job": job,
        "offset": piece.offset,
        "stream": piece.stream,
        "data": String::from_utf8_lossy(&piece.data),
        "at_ms": piece.at_ms,
    })
}

/// The message that tells a subscriber a job ended.
pub fn job_end_json(job: &Job) -> Value {
    json!({
        "type": "job_end",
        "job": job.id,
        "state": job.state,
        "exit_code": job.exit_code,
        "error": job.error,
        "next": job.output_bytes,
    })
}

/// A page of output.
pub fn page_json(page: &OutputPage) -> Value {
    let output: Vec<Value> = page
        .pieces
        .iter()
        .map(|p| {
            json!({
                "offset": p.offset,
                "stream": p.stream,
                "data": String::from_utf8_lossy(&p.data),
                "at_ms": p.at_ms,
            })
        })
        .collect();
    json!({
        "job": page.job.id,
        "state": page.job.state,
        "from": page.from,
        "next": page.next,
        "done": page.done,
        "output": output,
    })
}

fn query_int(query: &[(String, String)], key: &str) -> Result<Option<i64>, ApiError> {
    query
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| {
            v.parse::<i64>()
                .map_err(|_| ApiError::InvalidRequest(format!("{key}={v:?} is not an integer")))
        })
        .transpose()
}

fn only_keys(query: &[(String, String)], allowed: &[&str]) -> Result<(), ApiError> {
    match query.iter().find(|(k, _)| !allowed.contains(&k.as_str())) {
        Some((k, _)) => Err(ApiError::InvalidRequest(format!(
            "unknown query parameter {k:?}"
        ))),
        None => Ok(()),
    }
}

/// `GET .../jobs?before=<id>&limit=<n>`.
pub fn list_jobs<S: Sql>(db: &S, query: &[(String, String)]) -> Result<Value, ApiError> {
    only_keys(query, &["before", "limit"])?;
    let limit = within(
        "limit",
        query_int(query, "limit")?.unwrap_or(50),
        1,
        MAX_LIST as i64,
    )? as usize;
    let jobs = Jobs::new(db).list(query_int(query, "before")?, limit)?;
    let next = (jobs.len() == limit).then(|| jobs.last().map(|j| j.id));
    Ok(json!({
        "jobs": jobs.iter().map(job_json).collect::<Vec<_>>(),
        "next_before": next.flatten(),
    }))
}

/// `GET .../jobs/{id}/output?from=<offset>&limit=<bytes>`.
pub fn job_output<S: Sql>(db: &S, id: i64, query: &[(String, String)]) -> Result<Value, ApiError> {
    only_keys(query, &["from", "limit"])?;
    let limit = within(
        "limit",
        query_int(query, "limit")?.unwrap_or(OUTPUT_PAGE as i64),
        1,
        OUTPUT_PAGE as i64,
    )? as usize;
    let jobs = Jobs::new(db);
    let from = match query_int(query, "from")? {
        Some(from) => from,
        None => jobs.get(id)?.kept_from,
    };
    Ok(page_json(&jobs.output(id, from, limit)?))
}

/// `POST .../jobs/{id}/cancel`.
pub fn cancel_job<S: Sql>(db: &S, id: i64, now_ms: i64) -> Result<Job, ApiError> {
    Ok(Jobs::new(db).cancel(id, now_ms)?)
}

/// What a `PUT` or `POST` of a schedule made.
#[derive(Debug)]
pub struct Made {
    /// The schedule's id.
    pub id: String,
    /// No schedule had that id before: it was created, not replaced.
    pub created: bool,
}

/// Whether a lookup found its record (`false` for its not-found error).
fn found<T>(lookup: Result<T, SchedError>) -> Result<bool, ApiError> {
    match lookup {
        Ok(_) => Ok(true),
        Err(SchedError::ScheduleNotFound { .. } | SchedError::HookNotFound { .. }) => Ok(false),
        Err(other) => Err(other.into()),
    }
}

/// `PUT .../schedules/{id}` and `POST .../schedules`: `id` from the path,
/// else from the body, else `generated_id`. The answer shows the webhook
/// secret, the only time it is shown.
pub fn put_schedule<S: Sql>(
    db: &S,
    path_id: Option<&str>,
    body: &Value,
    generated_id: &str,
    generated_secret: &str,
    now_ms: i64,
    max_schedules: i64,
) -> Result<(Value, Made), ApiError> {
    let req: ScheduleRequest = crate::decode::decode_value(body)?;
    let id = match (path_id, req.id.as_deref()) {
        (Some(path), Some(body)) if path != body => {
            return Err(ApiError::InvalidRequest(format!(
                "id {body:?} in the body differs from {path:?} in the path"
            )))
        }
        (Some(path), _) => path.to_string(),
        (None, Some(body)) => body.to_string(),
        (None, None) => generated_id.to_string(),
    };
    if let Some(exec) = &req.exec {
        check_exec_request(db, exec, now_ms)?;
    }
    let existed = found(Schedules::new(db).get(&id))?;
    let (schedule, secret) =
        Schedules::with_limit(db, max_schedules).put(&id, &req, generated_secret, now_ms)?;
    let mut answer = json!({ "schedule": schedule });
    if let Some(secret) = secret {
        answer["webhook_secret"] = json!(secret);
    }
    Ok((
        answer,
        Made {
            id,
            created: !existed,
        },
    ))
}

/// The webhook URL of a schedule request body, if it has one.
pub fn webhook_url(body: &Value) -> Option<String> {
    body.get("webhook")?
        .get("url")?
        .as_str()
        .map(str::to_string)
}

/// An exec request stored for later must be one the exec route accepts
/// (less `detach`, which a stored request does not take: it always runs as
/// a job).
fn check_exec_request<S: Sql>(db: &S, exec: &Value, now_ms: i64) -> Result<(), ApiError> {
    backend_of(db, exec, now_ms)
        .map(drop)
        .map_err(|e| ApiError::InvalidRequest(format!("exec: {e}")))
}

/// `GET .../schedules/{id}`: the schedule and its newest runs. (Finished
/// one-shot schedules past their retention are removed first, as they are
/// for the list.)
pub fn get_schedule<S: Sql>(db: &S, id: &str, now_ms: i64) -> Result<Value, ApiError> {
    let schedules = Schedules::new(db);
    schedules.prune_done(now_ms)?;
    let schedule = schedules.get(id)?;
    let runs = schedules.runs(id, RUNS_SHOWN)?;
    Ok(json!({ "schedule": schedule, "runs": runs }))
}

/// `GET .../schedules`: finished one-shot schedules are listed (`state:
/// done`) until their retention ends, then removed.
pub fn list_schedules<S: Sql>(db: &S, now_ms: i64) -> Result<Value, ApiError> {
    let schedules = Schedules::new(db);
    schedules.prune_done(now_ms)?;
    Ok(json!({ "schedules": schedules.list()? }))
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct HookReq {
    /// The command a call of the hook runs as a job (an exec request); the
    /// call's body arrives on its stdin.
    exec: Value,
    /// The secret callers must send in `x-hook-secret`, 16 bytes or more;
    /// generated when absent. Shown once, in the answer.
    secret: Option<String>,
    /// Calls are signed with the secret instead of carrying it.
    #[serde(default)]
    signed: bool,
    replay_window_ms: Option<i64>,
}

/// `PUT .../hooks/{name}`: the answer shows the secret, the only time it
/// is shown; and whether the hook is new (rather than replaced).
pub fn put_hook<S: Sql>(
    db: &S,
    name: &str,
    body: &Value,
    generated_secret: &str,
    now_ms: i64,
) -> Result<(Value, bool), ApiError> {
    let req: HookReq = crate::decode::decode_value(body)?;
    check_exec_request(db, &req.exec, now_ms)?;
    let secret = req.secret.unwrap_or_else(|| generated_secret.to_string());
    let options = HookOptions {
        signed: req.signed,
        replay_window_ms: req
            .replay_window_ms
            .unwrap_or(HookOptions::default().replay_window_ms),
    };
    let existed = found(Hooks::new(db).get(name))?;
    let hook = Hooks::new(db).put(name, &secret, &req.exec, options, now_ms)?;
    Ok((json!({ "hook": hook, "secret": secret }), !existed))
}

/// The exec request a hook call runs: the hook's, with the call's body on
/// stdin.
pub fn hook_request(hook: &Hook, body: &[u8]) -> Value {
    let mut request = hook.exec.clone();
    request["stdin"] = json!(String::from_utf8_lossy(body));
    request
}

/// Work cut off by a restart: called once per instance, before anything
/// runs. Running jobs fail with the reason, except those whose work goes on
/// on the computer: a detached command (a later alarm picks it up) and a
/// process's log;
/// interrupted schedule runs are recorded and retried where allowed.
pub fn recover<S: Sql>(db: &S, now_ms: i64) -> Result<(), ApiError> {
    let mut going_on = crate::computer::detached::jobs(db).map_err(SchedError::from)?;
    going_on.extend(crate::processes::record::open_jobs(db).map_err(SchedError::from)?);
    Jobs::new(db).fail_interrupted(now_ms, &going_on)?;
    Schedules::new(db).interrupt_running(now_ms)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::{Captured, ExecStatus, OutputEncoding};
    use stead_scheduler::schedules::DEFAULT_MAX_SCHEDULES;
    use stead_shell::LimitKind;
    use stead_sql::{migrate, SqliteDb, MIGRATIONS};

    fn db() -> SqliteDb {
        let db = SqliteDb::memory().unwrap();
        migrate(&db, MIGRATIONS).unwrap();
        db
    }

    fn q(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// A JSON body, parsed.
    fn v(bytes: &[u8]) -> Value {
        serde_json::from_slice(bytes).unwrap()
    }

    #[test]
    fn detach_is_taken_out_and_checked() {
        let mut body = json!({ "command": "ls", "detach": true });
        assert!(split_detach(&mut body).unwrap());
        assert_eq!(body, json!({ "command": "ls" }));
        let mut body = json!({ "command": "ls", "detach": false });
        assert!(!split_detach(&mut body).unwrap());
        assert_eq!(body, json!({ "command": "ls" }));
        let mut body = json!({ "command": "ls" });
        assert!(!split_detach(&mut body).unwrap());
        let mut body = json!(["not an object"]);
        assert!(
            !split_detach(&mut body).unwrap(),
            "left to the exec decoder"
        );
        let mut body = json!({ "command": "ls", "detach": "yes" });
        assert_eq!(
            split_detach(&mut body).unwrap_err().code(),
            "INVALID_REQUEST"
        );
    }

    fn outcome(backend: Backend, status: ExecStatus, exit_code: Option<i32>) -> ExecOutcome {
        ExecOutcome {
            backend,
            status,
            exit_code,
            signal: None,
            stdout: Captured::default(),
            stderr: Captured::default(),
            output_encoding: OutputEncoding::Utf8,
            truncated: false,
            limit: None,
            revision: 0,
            checkpoint: None,
            message: None,
            computer: None,
        }
    }

    #[test]
    fn outcomes_follow_the_exec_answer() {
        let ok = outcome_of(&Ok(outcome(Backend::Shell, ExecStatus::Exited, Some(0))));
        assert_eq!(
            (ok.exit_code, ok.timed_out, ok.error),
            (Some(0), false, None)
        );
        let slow = outcome_of(&Ok(ExecOutcome {
            limit: Some(LimitKind::WallTime),
            ..outcome(Backend::Shell, ExecStatus::TimedOut, Some(124))
        }));
        assert!(slow.timed_out);
        assert_eq!(slow.error.as_deref(), Some("limit reached: max_wall_ms"));
        let slow = outcome_of(&Ok(outcome(
            Backend::Computer,
            ExecStatus::TimedOut,
            Some(137),
        )));
        assert!(slow.timed_out);
        assert_eq!(slow.backend, Some(Backend::Computer));
        let lost = outcome_of(&Ok(ExecOutcome {
            message: Some("gone".into()),
            ..outcome(Backend::Computer, ExecStatus::Lost, None)
        }));
        assert_eq!(
            (lost.exit_code, lost.error.as_deref()),
            (None, Some("gone"))
        );
        let failed = outcome_of(&Err(ApiError::InvalidRequest("bad".into())));
        assert_eq!(failed.exit_code, None);
        assert!(failed.error.unwrap().starts_with("INVALID_REQUEST"));
    }

    #[test]
    fn jobs_list_output_and_cancel() {
        let db = db();
        let job = create_job(&db, "api", json!({ "command": "echo hi" }), 10).unwrap();
        assert_eq!(job.backend, Backend::Shell);
        let jobs = Jobs::new(&db);
        jobs.claim(job.id, 11).unwrap();
        jobs.append(job.id, stead_scheduler::Stream::Stdout, b"hi\n", 12)
            .unwrap();
        let page = job_output(&db, job.id, &q(&[("from", "1")])).unwrap();
        assert_eq!(page["output"][0]["data"], "i\n");
        assert_eq!(
            (page["next"].clone(), page["done"].clone()),
            (json!(3), json!(false))
        );
        assert_eq!(
            job_output(&db, job.id, &q(&[("from", "x")]))
                .unwrap_err()
                .code(),
            "INVALID_REQUEST"
        );
        assert_eq!(
            job_output(&db, job.id, &q(&[("since", "1")]))
                .unwrap_err()
                .code(),
            "INVALID_REQUEST"
        );
        assert_eq!(job_output(&db, 99, &q(&[])).unwrap_err().status(), 404);
        let listed = list_jobs(&db, &q(&[])).unwrap();
        assert_eq!(listed["jobs"][0]["command"], "echo hi");
        assert_eq!(
            listed["jobs"][0]["request"],
            json!({ "command": "echo hi" })
        );
        assert!(cancel_job(&db, job.id, 13).unwrap().cancel_requested);
        assert!(create_job(&db, "api", json!({ "cmd": "x" }), 1).is_err());
    }

    #[test]
    fn schedules_take_ids_from_path_body_or_generator() {
        let db = db();
        let body = &v(br#"{"delay_ms":1000,"exec":{"command":"echo"}}"#);
        let (made, what) = put_schedule(
            &db,
            None,
            body,
            "gen-1",
            "secret-0123456789ab",
            0,
            DEFAULT_MAX_SCHEDULES,
        )
        .unwrap();
        assert_eq!(made["schedule"]["id"], "gen-1");
        assert_eq!((what.id.as_str(), what.created), ("gen-1", true));
        assert!(made.get("webhook_secret").is_none());
        let named = &v(br#"{"id":"n","delay_ms":1000,"exec":{"command":"echo"}}"#);
        assert_eq!(
            put_schedule(
                &db,
                None,
                named,
                "gen-2",
                "secret-0123456789ab",
                0,
                DEFAULT_MAX_SCHEDULES
            )
            .unwrap()
            .0["schedule"]["id"],
            "n"
        );
        let error = put_schedule(
            &db,
            Some("p"),
            named,
            "g",
            "secret-0123456789ab",
            0,
            DEFAULT_MAX_SCHEDULES,
        )
        .unwrap_err();
        assert_eq!(error.code(), "INVALID_REQUEST");
        let bad_exec = &v(br#"{"delay_ms":1,"exec":{"command":"x","colour":"red"}}"#);
        assert_eq!(
            put_schedule(
                &db,
                Some("p"),
                bad_exec,
                "g",
                "secret-0123456789ab",
                0,
                DEFAULT_MAX_SCHEDULES
            )
            .unwrap_err()
            .code(),
            "INVALID_REQUEST"
        );
        let hook = &v(br#"{"delay_ms":1,"webhook":{"url":"https://example.com"}}"#);
        let put = || {
            put_schedule(
                &db,
                Some("w"),
                hook,
                "g",
                "secret-0123456789ab",
                0,
                DEFAULT_MAX_SCHEDULES,
            )
            .unwrap()
        };
        let (made, what) = put();
        assert_eq!(made["webhook_secret"], "secret-0123456789ab");
        assert!(what.created, "a new id is created");
        assert!(!put().1.created, "the same id again is replaced");
        assert!(!get_schedule(&db, "w", 0)
            .unwrap()
            .to_string()
            .contains("secret-0123"));
        assert_eq!(
            list_schedules(&db, 0).unwrap()["schedules"]
                .as_array()
                .unwrap()
                .len(),
            3
        );
        assert_eq!(
            get_schedule(&db, "zz", 0).unwrap_err().code(),
            "SCHEDULE_NOT_FOUND"
        );
        let cron = &v(br#"{"cron":"61 * * * *","exec":{"command":"x"}}"#);
        assert_eq!(
            put_schedule(
                &db,
                Some("c"),
                cron,
                "g",
                "secret-0123456789ab",
                0,
                DEFAULT_MAX_SCHEDULES
            )
            .unwrap_err()
            .code(),
            "INVALID_CRON"
        );
    }

    #[test]
    fn hooks_show_their_secret_once_and_feed_the_body_to_stdin() {
        let db = db();
        let (made, created) = put_hook(
            &db,
            "gh",
            &v(br#"{"exec":{"command":"cat"}}"#),
            "generated-secret-123",
            5,
        )
        .unwrap();
        assert_eq!(made["secret"], "generated-secret-123");
        assert!(created);
        let hook = Hooks::new(&db)
            .authenticate(
                "gh",
                stead_scheduler::Credential::Secret("generated-secret-123"),
                6,
            )
            .unwrap();
        assert_eq!(
            hook_request(&hook, b"{\"a\":1}"),
            json!({ "command": "cat", "stdin": "{\"a\":1}" })
        );
        let error = put_hook(
            &db,
            "gh",
            &v(br#"{"exec":{"command":"cat"},"x":1}"#),
            "s",
            5,
        )
        .unwrap_err();
        assert_eq!(error.code(), "INVALID_REQUEST");
    }
}
