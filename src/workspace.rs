//! The per-agent Durable Object: platform glue around the workspace.
//!
//! It owns the agent's SQLite database and turns requests into calls on
//! [`stead_vfs::Vfs`] and [`crate::api`]. The only logic of its own is what
//! needs the platform: streaming bodies in and out chunk by chunk, and the
//! agent's lifecycle (an agent exists once created; an unknown agent leaves no
//! storage behind).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use futures::StreamExt;
use serde_json::{json, Value};
use stead_scheduler::Jobs;
use stead_sql::{migrate, params, Sql, MIGRATIONS};
use stead_vfs::{VPath, Vfs, WriteOptions, CHUNK_SIZE};
use worker::{durable_object, DurableObject, Env, Headers, Request, Response, Result, State};

use crate::api::auth::{self, Caller, Scope};
use crate::api::exec::Plan;
use crate::api::settings::Quotas;
use crate::api::{self, audit, Action, ApiError, Route, MAX_JSON_BODY};
use crate::body::BodyReader;
use crate::computer;
use crate::do_sql::DoSql;

#[durable_object]
pub struct Workspace {
    state: State,
    env: Env,
    db: DoSql,
    /// Whether this instance has checked the schema (and migrated it).
    ready: Cell<bool>,
    /// Whether this instance has set the alarm since it started.
    armed: Cell<bool>,
    /// Held while a command runs on the computer: one at a time.
    computer_turn: futures::lock::Mutex<()>,
    /// The command running on the computer, so cancelling its job can
    /// stop it.
    computer_exec: RefCell<Option<RunningExec>>,
    /// The workspace's quotas, read once per instance (and after a change).
    quotas: Cell<Option<Quotas>>,
}

pub(crate) fn now_ms() -> i64 {
    js_sys::Date::now() as i64
}

/// A command running on the computer.
#[derive(Clone)]
struct RunningExec {
    /// Its job, if it runs as one.
    job: Option<i64>,
    exec: String,
    /// Set when its job is cancelled.
    cancelled: Rc<Cell<bool>>,
}

/// The isolate's clock. Workers advance it only across I/O, so within one
/// synchronous exec the shell's CPU and count limits, not wall time, are
/// what stop a runaway script.
struct JsClock;

impl stead_shell::Clock for JsClock {
    fn now_ms(&self) -> u64 {
        js_sys::Date::now() as u64
    }
}

/// A JSON response with `status`.
pub fn json_response(status: u16, body: &Value) -> Result<Response> {
    Ok(Response::from_json(body)?.with_status(status))
}

/// The response for a failed request.
pub fn error_response(error: &ApiError) -> Result<Response> {
    json_response(error.status(), &error.body())
}

impl DurableObject for Workspace {
    fn new(state: State, env: Env) -> Self {
        let db = DoSql::new(&state).expect("Durable Object storage has SQL");
        Workspace {
            state,
            env,
            db,
            ready: Cell::new(false),
            armed: Cell::new(false),
            computer_turn: futures::lock::Mutex::new(()),
            computer_exec: RefCell::new(None),
            quotas: Cell::new(None),
        }
    }

    async fn fetch(&self, req: Request) -> Result<Response> {
        let url = req.url()?;
        let caller = Caller::from_headers(
            req.headers().get(auth::ACTOR_HEADER)?.as_deref(),
            req.headers().get(auth::SCOPES_HEADER)?.as_deref(),
        );
        let outcome = match api::route(req.method().as_ref(), url.path()) {
            Ok(Route::Agent { id, action }) => self.handle(&id, action, req, &caller).await,
            Ok(Route::Health | Route::MintToken) => Err(ApiError::Internal(
                "this route is answered by the Worker".into(),
            )),
            Err(error) => Err(error),
        };
        outcome.or_else(|error| error_response(&error))
    }

    async fn alarm(&self) -> Result<Response> {
        crate::jobs::alarm(self).await
    }

    async fn websocket_message(
        &self,
        ws: worker::WebSocket,
        message: worker::WebSocketIncomingMessage,
    ) -> Result<()> {
        crate::socket::message(self, ws, message).await;
        Ok(())
    }

    async fn websocket_close(
        &self,
        ws: worker::WebSocket,
        code: usize,
        _reason: String,
        _was_clean: bool,
    ) -> Result<()> {
        crate::socket::closed(ws, code);
        Ok(())
    }

    async fn websocket_error(&self, _ws: worker::WebSocket, _error: worker::Error) -> Result<()> {
        Ok(())
    }
}

impl Workspace {
    /// Checks the caller's token is not revoked, runs the action, and
    /// records it in the audit log if it changes anything.
    async fn handle(
        &self,
        id: &str,
        action: Action,
        req: Request,
        caller: &Caller,
    ) -> Result<Response, ApiError> {
        if let Some(token) = caller.token_id() {
            // An agent not created yet has no revocations to check.
            if (self.ready.get() || self.open(id, false).is_ok())
                && auth::is_revoked(&self.db, token)?
            {
                return Err(ApiError::TokenRevoked);
            }
        }
        let audited = audit::action_name(&action);
        let mut target = audit::route_target(&action);
        let outcome = self.dispatch(id, action, req, caller, &mut target).await;
        if let Some(name) = audited {
            self.audit(caller, name, target.as_deref(), &outcome);
        }
        outcome
    }

    /// Records a call that could change something in the audit log (unless
    /// the agent is gone). The call has happened: failing to record it must
    /// not fail it.
    pub(crate) fn audit<T>(
        &self,
        caller: &Caller,
        action: &str,
        target: Option<&str>,
        outcome: &Result<T, ApiError>,
    ) {
        if !self.ready.get() {
            return;
        }
        let result = match outcome {
            Ok(_) => "ok",
            Err(error) => error.code(),
        };
        let revision = self.vfs().revision().ok();
        let _ = audit::record(
            &self.db,
            now_ms(),
            &caller.actor,
            action,
            target,
            result,
            revision,
        );
    }

    async fn dispatch(
        &self,
        id: &str,
        action: Action,
        mut req: Request,
        caller: &Caller,
        target: &mut Option<String>,
    ) -> Result<Response, ApiError> {
        let created = match self.open(id, action.creates()) {
            // A hook caller learns nothing about which agents exist.
            Err(ApiError::AgentNotFound { .. }) if action.public() => {
                return Err(stead_scheduler::SchedError::HookRefused.into())
            }
            opened => opened?,
        };
        if !self.armed.replace(true) {
            crate::jobs::remember_agent(&self.db, id)?;
            crate::jobs::arm(self).await?;
        }
        let vfs = self.vfs();
        let body = match action {
            Action::Create => {
                return Ok(json_response(
                    if created { 201 } else { 200 },
                    &json!({ "agent": id, "created": created, "revision": vfs.revision()? }),
                )?)
            }
            Action::Info => {
                let usage = vfs.usage()?;
                json!({ "agent": id, "usage": usage, "database_bytes": self.db.database_size() })
            }
            Action::Delete => {
                self.state.storage().delete_all().await?;
                self.state.storage().delete_alarm().await?;
                crate::socket::close_all(self);
                self.ready.set(false);
                self.armed.set(false);
                json!({ "agent": id, "deleted": true })
            }
            Action::Ping => json!({ "agent": id }),
            Action::Tool(tool) => {
                let body = read_body(&mut req, MAX_JSON_BODY).await?;
                *target = audit::target_of(&body);
                api::tools::call(&vfs, tool, &body)?
            }
            Action::Exec => {
                let body = read_body(&mut req, MAX_JSON_BODY).await?;
                *target = audit::target_of(&body);
                if api::exec::needs_computer(&body) {
                    caller.require(Scope::ExecComputer)?;
                }
                match crate::jobs::exec_or_detach(self, "api", body).await? {
                    Ok(job) => {
                        let job = json!({ "job": api::jobs::job_json(&job) });
                        return Ok(json_response(202, &job)?);
                    }
                    Err(body) => self.exec(id, &body, &computer::Discard).await?,
                }
            }
            Action::Socket => return crate::socket::accept(self, id, &req, caller),
            Action::Audit => {
                let (after, limit) = audit_page(&req.url()?)?;
                let entries = audit::list(&self.db, after, limit)?;
                json!({ "entries": entries })
            }
            Action::Settings => api::settings::get(&self.db)?,
            Action::SettingsPut => {
                let body = read_body(&mut req, MAX_JSON_BODY).await?;
                let settings = api::settings::put(&self.db, &body)?;
                self.quotas.set(None);
                settings
            }
            Action::RevokeToken => {
                let body = read_body(&mut req, MAX_JSON_BODY).await?;
                let request: auth::RevokeRequest = api::tools::decode(&body)?;
                *target = Some(request.id.clone());
                let now_s = now_ms() / 1000;
                // Kept for the longest lifetime a token can have.
                let exp = now_s + auth::MAX_TTL_SECONDS;
                auth::revoke(&self.db, &request.id, exp, now_s)?;
                json!({ "revoked": request.id })
            }
            action @ (Action::Jobs
            | Action::Job(_)
            | Action::JobOutput(_)
            | Action::JobCancel(_)
            | Action::Schedules
            | Action::ScheduleCreate
            | Action::SchedulePut(_)
            | Action::Schedule(_)
            | Action::ScheduleDelete(_)
            | Action::Hooks
            | Action::HookPut(_)
            | Action::Hook(_)
            | Action::HookDelete(_)
            | Action::HookCall(_)) => {
                return crate::jobs::handle(self, id, action, &mut req, caller).await
            }
            Action::Download(path) => return self.download(&VPath::parse(&path)?),
            Action::Upload(path) => {
                let options = upload_options(&req.url()?)?;
                self.upload(&VPath::parse(&path)?, options, &mut req)
                    .await?
            }
        };
        crate::socket::notify_changes(self);
        Ok(json_response(200, &body)?)
    }

    /// The agent's database.
    pub(crate) fn db(&self) -> &DoSql {
        &self.db
    }

    /// The workspace's quotas (read once per instance and after a change).
    pub(crate) fn quotas(&self) -> Quotas {
        if let Some(quotas) = self.quotas.get() {
            return quotas;
        }
        let quotas = api::settings::quotas(&self.db).unwrap_or_default();
        self.quotas.set(Some(quotas));
        quotas
    }

    /// A view of the workspace with its quotas, at the current time.
    pub(crate) fn vfs(&self) -> Vfs<'_, DoSql> {
        Vfs::new(&self.db, now_ms()).with_limits(self.quotas().limits())
    }

    /// The agent's jobs, with the workspace's bound on kept output.
    pub(crate) fn jobs(&self) -> Jobs<'_, DoSql> {
        Jobs::with_limits(&self.db, self.quotas().job_limits())
    }

    /// The object's state (storage, alarm, WebSockets).
    pub(crate) fn state(&self) -> &State {
        &self.state
    }

    /// Runs an exec request on the backend it asks for, passing output to
    /// `sink` as it comes (the light shell's all at once, at the end).
    pub async fn exec(
        &self,
        agent: &str,
        body: &[u8],
        sink: &dyn computer::OutputSink,
    ) -> Result<Value, ApiError> {
        match api::exec::plan(body)? {
            Plan::Shell(request) => {
                let result = api::exec::run_shell(&self.vfs(), &JsClock, request)?;
                for (key, write) in [
                    ("stdout", &(|d: &[u8]| sink.stdout(d)) as &dyn Fn(&[u8])),
                    ("stderr", &|d: &[u8]| sink.stderr(d)),
                ] {
                    if let Some(text) = result[key].as_str().filter(|t| !t.is_empty()) {
                        write(text.as_bytes());
                    }
                }
                Ok(result)
            }
            Plan::Computer(command) => {
                api::exec::check_cwd(&self.vfs(), &command.cwd)?;
                let internet = api::settings::computer(&self.db)?.internet;
                let link = computer::Link::new(&self.env, agent, internet)?;
                let _turn = self.computer_turn.lock().await;
                let running = RunningExec {
                    job: sink.job(),
                    exec: crate::random::random_hex(32)?,
                    cancelled: Rc::new(Cell::new(false)),
                };
                let (exec, cancelled) = (running.exec.clone(), running.cancelled.clone());
                self.computer_exec.replace(Some(running));
                let result = computer::run(
                    &self.db,
                    || self.vfs(),
                    &link,
                    &exec,
                    &cancelled,
                    command,
                    sink,
                )
                .await;
                self.computer_exec.replace(None);
                result
            }
        }
    }

    /// Stops job `job`'s command if it is running on the computer.
    pub(crate) async fn cancel_computer_job(&self, agent: &str, job: i64) -> Result<(), ApiError> {
        let running = self.computer_exec.borrow().clone();
        let Some(running) = running.filter(|r| r.job == Some(job)) else {
            return Ok(());
        };
        // Whatever stage the command is at, the flag stops it: before it
        // starts, it never does; once it runs, the cancel below (or the
        // driver, if the exec request is still on its way) ends it.
        running.cancelled.set(true);
        let internet = api::settings::computer(&self.db)?.internet;
        let link = computer::Link::new(&self.env, agent, internet)?;
        match computer::cancel(&link, &running.exec).await {
            Err(computer::ComputerError::Refused {
                code: stead_sync::ErrorCode::UnknownExec,
                ..
            }) => Ok(()),
            other => Ok(other?),
        }
    }

    /// Makes sure the agent's schema is current. Returns whether this call
    /// created the agent; fails for an unknown agent unless `create`.
    pub(crate) fn open(&self, id: &str, create: bool) -> Result<bool, ApiError> {
        if self.ready.get() {
            return Ok(false);
        }
        let exists = self
            .db
            .query_row(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'",
                params![],
            )
            .map_err(|e| ApiError::Internal(e.to_string()))?
            .is_some();
        if !exists && !create {
            return Err(ApiError::AgentNotFound { id: id.to_string() });
        }
        migrate(&self.db, MIGRATIONS).map_err(|e| ApiError::Internal(e.to_string()))?;
        // No upload survives a restart of this object: drop what they staged.
        self.vfs().abort_stale_uploads()?;
        // Nor does a job or schedule run: record them as cut off.
        crate::jobs::recover(&self.db)?;
        self.ready.set(true);
        Ok(!exists)
    }

    /// Streams a file out, one chunk at a time.
    fn download(&self, path: &VPath) -> Result<Response, ApiError> {
        let (node, chunks) = self.vfs().file_chunks(path)?;
        let db = self.db.clone();
        let path = path.clone();
        let body = futures::stream::iter(chunks).map(move |id| {
            Vfs::new(&db, 0)
                .chunk(id, &path)
                .map_err(|e| worker::Error::RustError(e.to_string()))
        });
        let headers = Headers::new();
        headers.set("content-type", "application/octet-stream")?;
        headers.set("x-file-size", &node.size.to_string())?;
        headers.set("x-file-mode", &format!("{:04o}", node.mode))?;
        headers.set("x-revision", &node.rev.to_string())?;
        Ok(Response::from_stream(body)?.with_headers(headers))
    }

    /// Streams a request body into the file at `path`: chunks are staged as
    /// they arrive and the file changes only when the last one is in.
    async fn upload(
        &self,
        path: &VPath,
        options: WriteOptions,
        req: &mut Request,
    ) -> Result<Value, ApiError> {
        let vfs = self.vfs();
        let limit = vfs.limits().max_file_bytes;
        let upload = vfs.begin_upload(path, options)?;
        let staged = async {
            let mut buffer: Vec<u8> = Vec::with_capacity(CHUNK_SIZE);
            let (mut idx, mut total) = (0i64, 0u64);
            if let Some(mut reader) = BodyReader::new(req)? {
                loop {
                    let room = CHUNK_SIZE - buffer.len();
                    let read = reader.read_into(&mut buffer, room).await?;
                    if read == 0 {
                        break;
                    }
                    total += read as u64;
                    if total > limit {
                        return Err(stead_vfs::VfsError::FileTooLarge {
                            path: path.to_string(),
                            size: total,
                            limit,
                        }
                        .into());
                    }
                    // A default reader's piece may overrun the chunk: split.
                    while buffer.len() >= CHUNK_SIZE {
                        let rest = buffer.split_off(CHUNK_SIZE);
                        vfs.stage_chunk(upload, idx, &buffer)?;
                        buffer = rest;
                        idx += 1;
                    }
                }
            }
            if !buffer.is_empty() {
                vfs.stage_chunk(upload, idx, &buffer)?;
            }
            Ok::<u64, ApiError>(total)
        }
        .await;
        let committed =
            staged.and_then(|total| Ok(self.vfs().commit_upload(upload, path, total, options)?));
        match committed {
            Ok(written) => {
                serde_json::to_value(written).map_err(|e| ApiError::Internal(e.to_string()))
            }
            Err(error) => {
                vfs.abort_upload(upload)?;
                Err(error)
            }
        }
    }
}

/// `after` and `limit` of an audit page, from the query string.
fn audit_page(url: &worker::Url) -> Result<(i64, i64), ApiError> {
    let (mut after, mut limit) = (0, audit::PAGE);
    for (key, value) in url.query_pairs() {
        let number = value
            .parse::<i64>()
            .map_err(|_| ApiError::InvalidRequest(format!("{key}={value:?} is not a number")))?;
        match key.as_ref() {
            "after" => after = number,
            "limit" => limit = number,
            other => {
                return Err(ApiError::InvalidRequest(format!(
                    "unknown query parameter {other:?}"
                )))
            }
        }
    }
    Ok((after, limit))
}

/// Upload options from the query string: `mode=755`, `parents=false`.
fn upload_options(url: &worker::Url) -> Result<WriteOptions, ApiError> {
    let mut options = WriteOptions::default();
    for (key, value) in url.query_pairs() {
        match key.as_ref() {
            "mode" => {
                let bits = u32::from_str_radix(&value, 8)
                    .ok()
                    .filter(|bits| *bits <= 0o7777)
                    .ok_or_else(|| {
                        ApiError::InvalidRequest(format!("mode {value:?} is not octal"))
                    })?;
                options.mode = Some(bits);
            }
            "parents" => {
                options.create_parents = value.parse().map_err(|_| {
                    ApiError::InvalidRequest(format!("parents={value:?}: use true or false"))
                })?
            }
            other => {
                return Err(ApiError::InvalidRequest(format!(
                    "unknown query parameter {other:?}"
                )))
            }
        }
    }
    Ok(options)
}

/// Reads a request body of at most `limit` bytes.
pub(crate) async fn read_body(req: &mut Request, limit: usize) -> Result<Vec<u8>, ApiError> {
    let declared = req
        .headers()
        .get("content-length")?
        .and_then(|v| v.parse::<usize>().ok());
    match declared {
        Some(len) if len > limit => return Err(ApiError::BodyTooLarge { limit }),
        // A declared length within the limit: read it in one go, which
        // costs one await instead of one per piece.
        Some(_) => return Ok(req.bytes().await?),
        None => {}
    }
    let mut body = Vec::new();
    let Ok(mut stream) = req.stream() else {
        return Ok(body);
    };
    while let Some(piece) = stream.next().await {
        let piece = piece?;
        if body.len() + piece.len() > limit {
            return Err(ApiError::BodyTooLarge { limit });
        }
        body.extend_from_slice(&piece);
    }
    Ok(body)
}

impl From<wasm_bindgen::JsValue> for ApiError {
    fn from(error: wasm_bindgen::JsValue) -> Self {
        ApiError::Internal(format!("{error:?}"))
    }
}

impl From<worker::Error> for ApiError {
    fn from(error: worker::Error) -> Self {
        ApiError::Internal(error.to_string())
    }
}
