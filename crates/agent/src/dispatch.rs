//! Where a request is authorized, carried out and audited: the one entry
//! for every way in.
//!
//! An HTTP request, a tool call over a WebSocket and a hook call all become
//! a [`Request`] and go through [`Agent::dispatch`]: the caller is checked
//! against the action's [`Policy`] (and, for a token, against the agent's
//! revocations), the action runs, and if its policy says it can change
//! something, the outcome is recorded in the audit log. Nothing else in the
//! crate authorizes or audits, so an entry point added later cannot forget
//! to.

use serde_json::{json, Value};
use stead_scheduler::{Credential, Hook, Hooks, Jobs, SchedError, Schedules};
use stead_sql::Sql;
use stead_vfs::{Before, Node, Operation, Scope, VPath, VfsError, WriteOptions, CHUNK_SIZE};

use crate::agent::Agent;
use crate::auth::{self, Caller};
use crate::breakdown::{Breakdown, Stage, Stopwatch};
use crate::computer::{self, detached, Discard};
use crate::decode::decode;
use crate::error::ApiError;
use crate::host::Host;
use crate::policy::{self, Access, Audit, Policy};
use crate::protocol::SocketState;
use crate::route::{Action, MAX_JSON_BODY};
use crate::scheduling;
use crate::transfer::{self, Step};
use crate::{audit, checkpoints, ports, settings, shares, tools};

/// The headers of a hook call.
pub const HOOK_SECRET_HEADER: &str = "x-hook-secret";
pub const HOOK_TIMESTAMP_HEADER: &str = "x-stead-timestamp";
pub const HOOK_SIGNATURE_HEADER: &str = "x-stead-signature";
pub const IDEMPOTENCY_KEY_HEADER: &str = "idempotency-key";

/// A request body, read in pieces (HTTP bodies stream; a socket call's
/// arguments are already in memory).
#[allow(async_fn_in_trait)]
pub trait Body {
    /// The length the sender declared, if it did.
    fn declared_len(&self) -> Option<usize>;
    /// Appends up to about `max` bytes to `buffer`; returns how many were
    /// appended, 0 at the end.
    async fn read_into(&mut self, buffer: &mut Vec<u8>, max: usize) -> Result<usize, ApiError>;
}

/// A body held in memory.
pub struct Bytes(pub Vec<u8>);

impl Body for Bytes {
    fn declared_len(&self) -> Option<usize> {
        Some(self.0.len())
    }

    async fn read_into(&mut self, buffer: &mut Vec<u8>, max: usize) -> Result<usize, ApiError> {
        let take = self.0.len().min(max);
        buffer.extend(self.0.drain(..take));
        Ok(take)
    }
}

/// Reads a whole body of at most `limit` bytes.
pub async fn read_body(body: &mut impl Body, limit: usize) -> Result<Vec<u8>, ApiError> {
    let declared = body.declared_len();
    if declared.is_some_and(|len| len > limit) {
        return Err(ApiError::BodyTooLarge { limit });
    }
    let mut out = Vec::new();
    loop {
        let room = (limit + 1).saturating_sub(out.len()).max(1);
        let read = body.read_into(&mut out, room).await?;
        if out.len() > limit {
            return Err(ApiError::BodyTooLarge { limit });
        }
        // A body of a declared length ends there: HTTP framing holds it to
        // it, so waiting for the end of the stream would only cost a turn.
        if read == 0 || declared == Some(out.len()) {
            return Ok(out);
        }
    }
}

/// Where a request came in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// An HTTP request.
    Http,
    /// A `call` message on a WebSocket.
    Socket,
    /// A `tools/call` of the MCP server (`crate::mcp`).
    Mcp,
}

impl Entry {
    /// The source a job queued from here records.
    fn job_source(self) -> &'static str {
        match self {
            Entry::Http => "api",
            Entry::Socket => "socket",
            Entry::Mcp => "mcp",
        }
    }
}

/// The headers a hook call authenticates with (see
/// `stead_scheduler::hooks`).
#[derive(Debug, Clone, Default)]
pub struct HookHeaders {
    /// `x-hook-secret`.
    pub secret: Option<String>,
    /// `x-stead-timestamp` and `x-stead-signature`, of a signed call.
    pub timestamp: Option<String>,
    pub signature: Option<String>,
    /// `Idempotency-Key`.
    pub idempotency_key: Option<String>,
}

/// A request to the agent, from any entry point.
pub struct Request<B> {
    pub entry: Entry,
    /// The agent's id, as the route named it.
    pub agent: String,
    pub action: Action,
    pub caller: Caller,
    /// Decoded query parameters, in order.
    pub query: Vec<(String, String)>,
    /// What a hook call presents.
    pub hook: HookHeaders,
    /// Whether the request asks for a WebSocket upgrade.
    pub upgrade: bool,
    /// The scheme and host the request came to (`https://stead.example`),
    /// for answers that hand out links; empty when there is none (a
    /// socket call).
    pub origin: String,
    pub body: B,
}

/// What the agent answers.
#[derive(Debug)]
pub enum Reply {
    /// A JSON answer; `location` is the URL path of the resource a request
    /// created (a `201`) or of the job it queued (a `202`): the glue sends
    /// it as `Location`.
    Json {
        status: u16,
        body: Value,
        location: Option<String>,
    },
    /// A file to stream out, one chunk at a time
    /// (`Vfs::chunk(id, &path)` for each of `chunks`).
    File {
        path: VPath,
        node: Node,
        chunks: Vec<i64>,
    },
    /// Accept the WebSocket, with this attachment.
    Socket(SocketState),
    /// Forward the request, as it came, to a port on the computer (see
    /// `crate::ports`).
    Forward(ports::Forward),
}

impl Reply {
    fn ok(body: Value) -> Reply {
        Reply::Json {
            status: 200,
            body,
            location: None,
        }
    }

    /// The answer of a request that made a resource: `201 Created` with
    /// its location, or `200` for one that replaced it (a `PUT` of one
    /// that exists).
    fn made(created: bool, body: Value, location: String) -> Reply {
        match created {
            true => Reply::Json {
                status: 201,
                body,
                location: Some(location),
            },
            false => Reply::ok(body),
        }
    }

    /// The answer of a request that queued job `job`: `202 Accepted`,
    /// pointing at the job.
    fn queued(agent: &str, job: &stead_scheduler::Job) -> Reply {
        Reply::Json {
            status: 202,
            body: json!({ "job": scheduling::job_json(job) }),
            location: Some(resource(agent, &["jobs", &job.id.to_string()])),
        }
    }

    /// The answer for a failure.
    pub fn error(error: &ApiError) -> Reply {
        Reply::Json {
            status: error.status(),
            body: error.body(),
            location: None,
        }
    }
}

impl<H: Host> Agent<H> {
    /// Serves a request from any entry point: authorize, carry out, audit.
    pub async fn dispatch<B: Body>(&self, request: Request<B>) -> Result<Reply, ApiError> {
        let mut stopwatch = Stopwatch::idle(&self.host);
        self.serve(request, &mut stopwatch).await
    }

    /// [`Self::dispatch`], measuring where the time and SQL statements go
    /// (what local development answers in `Server-Timing`).
    pub async fn dispatch_timed<B: Body>(
        &self,
        request: Request<B>,
    ) -> (Result<Reply, ApiError>, Breakdown) {
        let mut stopwatch = Stopwatch::start(&self.host);
        let outcome = self.serve(request, &mut stopwatch).await;
        (outcome, stopwatch.finish())
    }

    async fn serve<B: Body>(
        &self,
        mut request: Request<B>,
        stopwatch: &mut Stopwatch<'_, H>,
    ) -> Result<Reply, ApiError> {
        let policy: Policy = request.action.policy();
        let mut note = audit::Note {
            target: audit::route_target(&request.agent, &request.action),
            detail: None,
        };
        // A refusal is recorded like any other outcome: who tried what.
        let outcome = match self
            .redeem_ticket(&mut request)
            .and_then(|()| self.authorize(&request, policy))
        {
            Ok(()) => self.perform(&mut request, &mut note, stopwatch).await,
            Err(refused) => Err(refused),
        };
        stopwatch.lap(Stage::Operation);
        // Only an action that can change something is recorded, and only
        // such an action can have moved the workspace: one that cannot pays
        // for neither the audit entry nor the live push.
        let revision = match policy.audit {
            Audit::Record(name) => self.audit(&request.caller, name, &note, &outcome),
            Audit::ReadOnly => None,
        };
        stopwatch.lap(Stage::Audit);
        if outcome.is_ok() {
            // Costs nothing with no socket or stream listening.
            crate::subscriptions::notify_changes(self);
            stopwatch.lap(Stage::Notify);
            if let Some(revision) = revision {
                // Best effort: the next tick pushes the edit anyway.
                let _ = self.hasten_live_push(revision).await;
            }
            stopwatch.lap(Stage::LiveSync);
        }
        outcome
    }

    /// A terminal upgrade that came with a ticket instead of a bearer
    /// credential is the ticket's minter's, once (`crate::terminal::tickets`).
    fn redeem_ticket<B>(&self, request: &mut Request<B>) -> Result<(), ApiError> {
        if !request.action.takes_ticket() || request.caller != Caller::Anonymous {
            return Ok(());
        }
        let Some(ticket) = crate::terminal::tickets::presented(&request.query) else {
            return Ok(());
        };
        self.open(Some(&request.agent), false)?;
        request.caller = crate::terminal::tickets::redeem(self.db(), ticket, self.now_ms())?;
        Ok(())
    }

    /// Checks the caller may perform the action: it holds the access the
    /// policy asks for, and its token (if any) is not revoked.
    fn authorize<B>(&self, request: &Request<B>, policy: Policy) -> Result<(), ApiError> {
        self.admit(&request.agent, &request.caller, policy.access)
    }

    /// Checks `caller` may act on agent `agent` with `access`: it holds the
    /// access, and its token (if any) is not revoked. (The MCP endpoint
    /// checks its callers here too, before any of its methods.)
    pub(crate) fn admit(
        &self,
        agent: &str,
        caller: &Caller,
        access: Access,
    ) -> Result<(), ApiError> {
        access.lets_in(caller)?;
        self.credential_holds(agent, caller)
    }

    /// Checks that `caller` may make agent `agent` by `action`, if it does
    /// not exist yet. Only the deployment's admin token creates an agent:
    /// an agent token's `admin` acts on its agent once it exists (a `PUT`
    /// of it answers it as it is). And a fork makes a new agent, never one
    /// under a deleted agent's id (see `crate::tombstone`).
    fn may_create(&self, agent: &str, action: &Action, caller: &Caller) -> Result<(), ApiError> {
        match self.open(Some(agent), false) {
            Err(ApiError::AgentNotFound { .. }) => {}
            opened => return opened.map(|_| ()),
        }
        Access::DeploymentAdmin.admits(caller)?;
        if *action == Action::ForkImport && crate::tombstone::deleted_at(self.db())?.is_some() {
            return Err(ApiError::AgentExisted {
                id: agent.to_string(),
            });
        }
        Ok(())
    }

    /// Checks that `caller`'s token, if any, has neither expired nor been
    /// revoked. Asked for every request, and again for every message and
    /// every push on what a request opened (a WebSocket, an MCP stream),
    /// which outlives the Worker's check of that request.
    fn credential_holds(&self, agent: &str, caller: &Caller) -> Result<(), ApiError> {
        if caller.token_id().is_some() {
            match self.open(Some(agent), false) {
                Ok(_) => {}
                // An agent not created yet has no revocations to check (and
                // the action then fails as it must, unless it creates the
                // agent): only the expiry is.
                Err(ApiError::AgentNotFound { .. }) => {
                    return caller.check_expiry(self.now_ms().div_euclid(1000))
                }
                Err(error) => return Err(error),
            }
        }
        self.token_holds(caller)
    }

    /// [`Self::credential_holds`] on an agent already open: what a message
    /// on a socket asks before it is served.
    pub(crate) fn token_holds(&self, caller: &Caller) -> Result<(), ApiError> {
        self.token_unexpired(caller)?;
        let Some(token) = caller.token_id() else {
            return Ok(());
        };
        if self.unrevoked.borrow().contains(token) {
            return Ok(());
        }
        match auth::standing(self.db(), token)? {
            auth::Standing::Revoked => return Err(ApiError::TokenRevoked),
            auth::Standing::Recorded | auth::Standing::Unrecorded => {}
            // A token this agent's ledger never recorded, on an agent made
            // again after a deletion, was minted for the agent before: it
            // must not open this one's files.
            auth::Standing::Predecessors => {
                let deleted_ms = crate::tombstone::deleted_at(self.db())?.unwrap_or_default();
                return Err(ApiError::TokenPredatesAgent { deleted_ms });
            }
        }
        let mut unrevoked = self.unrevoked.borrow_mut();
        if unrevoked.len() >= crate::agent::MAX_UNREVOKED {
            unrevoked.clear();
        }
        unrevoked.insert(token.to_string());
        Ok(())
    }

    /// Refuses a token past its expiry: what a push to a socket or a stream
    /// asks before it goes out. (A revocation closes them at once, so a
    /// push need not look the token up.)
    pub(crate) fn token_unexpired(&self, caller: &Caller) -> Result<(), ApiError> {
        caller.check_expiry(self.now_ms().div_euclid(1000))
    }

    /// Records a call that could change something in the audit log (unless
    /// the agent is gone). The call has happened: failing to record it must
    /// not fail it. Returns the workspace's revision it recorded (`None`
    /// for a deleted agent, or a revision that could not be read).
    fn audit<T>(
        &self,
        caller: &Caller,
        action: &str,
        note: &audit::Note,
        outcome: &Result<T, ApiError>,
    ) -> Option<i64> {
        if !self.is_open() {
            return None;
        }
        let result = match outcome {
            Ok(_) => "ok",
            Err(error) => error.code(),
        };
        audit::record(
            self.db(),
            self.now_ms(),
            &caller.actor(),
            action,
            note,
            result,
        )
        .ok()
        .flatten()
    }

    /// Carries out an authorized request.
    async fn perform<B: Body>(
        &self,
        request: &mut Request<B>,
        note: &mut audit::Note,
        stopwatch: &mut Stopwatch<'_, H>,
    ) -> Result<Reply, ApiError> {
        let agent = request.agent.clone();
        if request.action.creates() {
            self.may_create(&agent, &request.action, &request.caller)?;
        }
        let created = match self.open(Some(&agent), request.action.creates()) {
            // A hook caller learns nothing about which agents exist.
            Err(ApiError::AgentNotFound { .. }) if request.action.public() => {
                return Err(SchedError::HookRefused.into())
            }
            opened => opened?,
        };
        if !self.armed.replace(true) {
            self.arm().await?;
        }
        // A fork still being copied answers nothing but its copy (and a
        // delete, which drops it).
        if !matches!(request.action, Action::ForkImport | Action::Delete) && self.forking()? {
            return Err(ApiError::Forking);
        }
        stopwatch.lap(Stage::Admission);
        // A hook caller with the secret proves itself before its body is
        // read; a signed call is checked with its body.
        let hook = match (&request.action, &request.hook.secret) {
            (Action::HookCall(name), Some(secret)) => Some(Hooks::new(self.db()).authenticate(
                name,
                Credential::Secret(secret),
                self.now_ms(),
            )?),
            _ => None,
        };
        // A JSON body is parsed once: the audit's target comes from it, and
        // a file tool decodes its request from it.
        let (json_body, parsed) = if request.action.takes_json() {
            let body = read_body(&mut request.body, MAX_JSON_BODY).await?;
            let parsed = crate::decode::parse(&body);
            if let Ok(value) = &parsed {
                note.target = note.target.take().or_else(|| audit::target_of(value));
            }
            (body, parsed)
        } else {
            (Vec::new(), Ok(Value::Null))
        };
        let db = self.db();
        let answer = match &request.action {
            Action::Create => {
                let body = json!({
                    "agent": agent, "created": created, "revision": self.vfs().revision()?,
                });
                return Ok(Reply::made(created, body, resource(&agent, &[])));
            }
            Action::Info => json!({
                "agent": agent,
                "usage": self.vfs().usage()?,
                "database_bytes": self.host.database_size(),
            }),
            Action::Delete => {
                // The agent's computer goes with it (if it has one running).
                if let Ok(transport) = self.computer() {
                    let _ = computer::stop(&transport).await;
                }
                crate::subscriptions::close_all(self);
                self.host.wipe().await?;
                crate::tombstone::lay(db, self.now_ms())?;
                self.host.set_alarm(None).await?;
                self.alarm_at.set(None);
                self.closed();
                json!({ "agent": agent, "deleted": true })
            }
            Action::Ping => json!({ "agent": agent }),
            Action::Tool(tool) => {
                let vfs = self.vfs();
                let body = parsed?;
                if tool.mutates() && tools::dry_run(&body) {
                    note.detail = Some(json!({ "dry_run": true }));
                }
                match tools::writes(*tool, &body) {
                    true => {
                        let before = Before {
                            actor: &request.caller.actor(),
                            operation: &Operation::Tool(tool.name().to_string()),
                            note: None,
                            scope: Scope::Paths(&checkpoints::tool_paths(&body)),
                        };
                        checkpoints::around(self, &vfs, before, |_| {
                            tools::call(&vfs, *tool, &body)
                        })?
                    }
                    false => tools::call(&vfs, *tool, &body)?,
                }
            }
            Action::Exec => {
                let source = request.entry.job_source();
                return self
                    .exec_request(&agent, &request.caller, source, json_body)
                    .await;
            }
            Action::Mcp => {
                return Err(ApiError::Internal(
                    "the MCP endpoint is served by Agent::mcp, not dispatched".into(),
                ))
            }
            Action::Socket => {
                if !request.upgrade {
                    return Err(ApiError::UpgradeRequired);
                }
                return Ok(Reply::Socket(SocketState {
                    agent,
                    caller: request.caller.clone(),
                    ..SocketState::default()
                }));
            }
            Action::Terminal => {
                return self.open_terminal(&agent, &request.caller, &request.query, request.upgrade)
            }
            Action::Terminals => self.list_terminals()?,
            Action::TerminalDelete(id) => self.delete_terminal(&request.caller, id)?,
            Action::TicketCreate => {
                // Either exec scope: the terminal checks its backend's.
                Access::Exec.admits(&request.caller)?;
                let ticket: crate::terminal::tickets::TicketRequest = decode(&json_body)?;
                let minted = crate::terminal::tickets::mint(
                    db,
                    &ticket,
                    &request.caller,
                    &self.host.random_hex(48)?,
                    self.now_ms(),
                )?;
                return Ok(Reply::Json {
                    status: 201,
                    body: minted,
                    location: None,
                });
            }
            Action::Audit => audit::list(db, audit::Page::from_query(&request.query)?)?,
            Action::Settings => settings::get(db)?,
            Action::SettingsPut => {
                let (settings, changed) =
                    settings::put(db, &json_body, self.host.local_development())?;
                note.detail = Some(json!({ "changed": changed }));
                self.settings_changed();
                settings
            }
            Action::RevokeToken => {
                let revoke: auth::RevokeRequest = decode(&json_body)?;
                revoke.check_agent(&agent)?;
                note.target = Some(revoke.id.clone());
                let now_s = self.now_ms() / 1000;
                // Kept for the longest lifetime a token can have.
                auth::revoke(db, &revoke.id, now_s + auth::MAX_TTL_SECONDS, now_s)?;
                self.unrevoked.borrow_mut().remove(&revoke.id);
                // What the token opened ends now, not at its next message.
                crate::subscriptions::close_token(self, &revoke.id);
                json!({ "revoked": revoke.id, "agent": agent })
            }
            Action::Tokens => serde_json::to_value(crate::minted::list(db, self.now_ms() / 1000)?)
                .map_err(|e| ApiError::Internal(e.to_string()))?,
            Action::TokenMinted => {
                let token: crate::minted::Minted = decode(&json_body)?;
                note.target = Some(token.id.clone());
                crate::minted::record(db, &token, self.now_ms() / 1000)?;
                json!({ "recorded": token.id, "agent": agent })
            }
            Action::Jobs => scheduling::list_jobs(db, &request.query)?,
            Action::Job(id) => {
                let mut job = scheduling::job_json(&Jobs::new(db).get(*id)?);
                // A command running detached on the computer: which alarm
                // follows it now (see `crate::runner`).
                if let Some(running) = detached::of_job(db, *id).map_err(SchedError::from)? {
                    job["computer"] = json!({
                        "exec": running.detached.exec,
                        "alarms": running.slices,
                    });
                }
                json!({ "job": job })
            }
            Action::JobOutput(id) => scheduling::job_output(db, *id, &request.query)?,
            Action::JobCancel(id) => {
                // Stopping a command needs the scope running it did.
                policy::require_exec(&request.caller, Jobs::new(db).get(*id)?.backend)?;
                let job = scheduling::cancel_job(db, *id, self.now_ms())?;
                if job.state.is_final() {
                    crate::subscriptions::broadcast_job_end(self, &job);
                } else {
                    // Running: on the computer, stop the command itself.
                    self.cancel_computer_job(*id).await?;
                }
                json!({ "job": scheduling::job_json(&job) })
            }
            Action::Schedules => scheduling::list_schedules(db, self.now_ms())?,
            Action::Schedule(id) => scheduling::get_schedule(db, id, self.now_ms())?,
            Action::ScheduleCreate | Action::SchedulePut(_) => {
                policy::require_exec_of(&request.caller, &json_body, &self.vfs())?;
                if let Some(url) = scheduling::webhook_url(&json_body) {
                    self.check_webhook_target(&url).await?;
                }
                let path_id = match &request.action {
                    Action::SchedulePut(id) => Some(id.as_str()),
                    _ => None,
                };
                let generated_id = format!("s-{}", self.host.random_hex(12)?);
                let (answer, made) = scheduling::put_schedule(
                    db,
                    path_id,
                    &json_body,
                    &generated_id,
                    &self.host.random_hex(48)?,
                    self.now_ms(),
                    self.quotas().max_schedules as i64,
                )?;
                self.arm().await?;
                let id = made.id.clone();
                return Ok(Reply::made(
                    made.created,
                    answer,
                    resource(&agent, &["schedules", &id]),
                ));
            }
            Action::ScheduleDelete(id) => {
                Schedules::new(db).delete(id)?;
                self.arm().await?;
                json!({ "deleted": id })
            }
            Action::Hooks => json!({ "hooks": Hooks::new(db).list()? }),
            Action::Hook(name) => json!({ "hook": Hooks::new(db).get(name)? }),
            Action::HookPut(name) => {
                policy::require_exec_of(&request.caller, &json_body, &self.vfs())?;
                let secret = self.host.random_hex(48)?;
                let (answer, created) =
                    scheduling::put_hook(db, name, &json_body, &secret, self.now_ms())?;
                return Ok(Reply::made(
                    created,
                    answer,
                    resource(&agent, &["hooks", name]),
                ));
            }
            Action::HookDelete(name) => {
                Hooks::new(db).delete(name)?;
                json!({ "deleted": name })
            }
            Action::HookCall(name) => {
                let hooks = Hooks::new(db);
                let hook = match hook {
                    Some(hook) => hook,
                    None => {
                        let credential = match (&request.hook.timestamp, &request.hook.signature) {
                            (Some(timestamp), Some(signature)) => Credential::Signed {
                                timestamp,
                                signature,
                                body: &json_body,
                            },
                            _ => Credential::None,
                        };
                        hooks.authenticate(name, credential, self.now_ms())?
                    }
                };
                return self
                    .run_hook(
                        &agent,
                        &hook,
                        request.hook.idempotency_key.as_deref(),
                        &json_body,
                    )
                    .await;
            }
            Action::Checkpoints => checkpoints::list(&self.vfs(), &request.query)?,
            Action::CheckpointCreate => {
                let created =
                    checkpoints::create(&self.vfs(), &request.caller.actor(), &json_body)?;
                let id = created["checkpoint"]["id"].to_string();
                return Ok(Reply::made(
                    true,
                    created,
                    resource(&agent, &["checkpoints", &id]),
                ));
            }
            Action::Checkpoint(key) => checkpoints::show(&self.vfs(), key)?,
            Action::CheckpointDelete(key) => checkpoints::delete(&self.vfs(), key)?,
            Action::Diff => checkpoints::diff(&self.vfs(), &json_body)?,
            Action::Restore => {
                let vfs = self.vfs();
                let restore = checkpoints::restore_request(&vfs, &json_body)?;
                let scope = match &restore.paths {
                    Some(paths) => Scope::Paths(paths),
                    None => Scope::Whole,
                };
                let before = Before {
                    actor: &request.caller.actor(),
                    operation: &Operation::Restore,
                    note: None,
                    scope,
                };
                let (restored, before) = checkpoints::around(self, &vfs, before, |id| {
                    let restored = vfs.restore(restore.checkpoint, restore.paths.as_deref())?;
                    Ok::<_, VfsError>((restored, id))
                })?;
                json!({ "restored": restored, "checkpoint": before })
            }
            Action::Undo => {
                let vfs = self.vfs();
                let before = Before {
                    actor: &request.caller.actor(),
                    operation: &Operation::Undo,
                    note: None,
                    scope: Scope::Whole,
                };
                let (undone, before) = checkpoints::around(self, &vfs, before, |id| {
                    Ok::<_, VfsError>((vfs.undo()?, id))
                })?;
                json!({ "undone": undone, "checkpoint": before })
            }
            Action::Fork => {
                let fork = checkpoints::fork_request(&self.vfs(), &agent, &json_body)?;
                note.target = Some(fork.to.clone());
                let to = fork.to.clone();
                let forked = self.fork_out(&agent, &request.caller.actor(), fork).await?;
                // A fork makes a new agent.
                return Ok(Reply::made(true, forked, resource(&to, &[])));
            }
            Action::ForkImport => {
                // A fork makes a new agent: one that exists, and is not this
                // fork's copy under way, is not overwritten (nor merged into).
                // Asked of storage, not the cache: a request that came in
                // while the first page's body was read saw no copy yet and
                // cached "not forking", which would refuse every later page.
                self.not_forking.set(false);
                if !created && !self.forking()? {
                    return Err(ApiError::AgentExists { id: agent });
                }
                let status_only = request.query.iter().any(|(key, _)| key == "status");
                let origin = crate::fork::ForkOrigin::from_query(&request.query);
                let page = match status_only {
                    true => Vec::new(),
                    false => read_body(&mut request.body, checkpoints::MAX_FORK_PAGE).await?,
                };
                let imported = self.fork_in(status_only, &page, origin.as_ref());
                // The copy may bring the source's revocations.
                self.unrevoked.borrow_mut().clear();
                if created && (status_only || imported.is_err()) {
                    // Asking, or a fork that never began, leaves nothing.
                    self.host.wipe().await?;
                    self.closed();
                } else {
                    // A page may move the import deadline (or end it).
                    self.arm().await?;
                }
                imported?
            }
            Action::Computer => json!({
                "computer": computer::state(&self.computer()?).await?,
                "live_sync": computer::live::status(self.db())?,
            }),
            Action::ComputerStop => json!({ "computer": self.stop_computer().await? }),
            Action::Processes => self.list_processes()?,
            Action::Process(id) => json!({ "process": self.process(id)?.to_json() }),
            Action::ProcessOutput(id) => {
                scheduling::job_output(db, self.process(id)?.job, &request.query)?
            }
            Action::ProcessStart => {
                let started = self.start_process(&json_body).await?;
                let id = started["process"]["id"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                return Ok(Reply::made(
                    true,
                    started,
                    resource(&agent, &["processes", &id]),
                ));
            }
            Action::ProcessSignal(id) => self.signal_process(id, &json_body).await?,
            Action::Port { port, front, .. } => {
                let capability = request
                    .query
                    .iter()
                    .find(|(key, _)| key == shares::QUERY_PARAM)
                    .map(|(_, value)| value.as_str());
                let secure = request.origin.starts_with("https:");
                let forward = ports::admit(
                    db,
                    &request.caller,
                    (&agent, *port, *front),
                    capability,
                    (self.now_ms(), secure),
                )?;
                return Ok(Reply::Forward(forward));
            }
            Action::ShareCreate(port) => {
                let key = self.host.share_key().ok_or(ApiError::NotConfigured)?;
                let ports_host = self.host.ports_host().ok_or(ApiError::NoPortsHost)?;
                let id = self.host.random_hex(16)?;
                let created = shares::create(
                    db,
                    (&agent, *port),
                    &json_body,
                    (&key, &request.origin, &ports_host),
                    id,
                    self.now_ms(),
                )?;
                // A share link has no route of its own to point at (it is
                // listed with the others, and its URL is in the answer).
                return Ok(Reply::Json {
                    status: 201,
                    body: created,
                    location: None,
                });
            }
            Action::Shares => shares::list(db, self.now_ms() / 1000)?,
            Action::ShareRevoke(id) => shares::revoke(db, id, self.now_ms())?,
            Action::ProcessStop(id) => self.stop_process(id, &request.query).await?,
            Action::Download(path) => {
                let path = VPath::parse(path)?;
                let (node, chunks) = self.vfs().file_chunks(&path).map_err(|error| {
                    match error {
                        // A directory has no bytes: say where its listing is.
                        stead_vfs::VfsError::IsADirectory { path } => {
                            ApiError::DownloadOfDirectory { path }
                        }
                        other => other.into(),
                    }
                })?;
                return Ok(Reply::File { path, node, chunks });
            }
            Action::Transfer(step) => {
                let vfs = self.vfs();
                match step {
                    Step::Manifest => transfer::manifest(&vfs, &json_body)?,
                    Step::Missing => transfer::missing(&vfs, &json_body)?,
                    Step::Fetch => transfer::fetch(&vfs, &json_body)?,
                    Step::Chunks => {
                        let body = read_body(&mut request.body, transfer::MAX_CHUNKS_BODY).await?;
                        transfer::stage(db, &vfs, &body)?
                    }
                    Step::Apply => {
                        let apply = transfer::Apply::decode(&json_body)?;
                        apply.check_content(&vfs)?;
                        let paths = apply.paths()?;
                        // A push can be undone like any write.
                        let before = Before {
                            actor: &request.caller.actor(),
                            operation: &Operation::Tool("push".into()),
                            note: None,
                            scope: Scope::Paths(&paths),
                        };
                        let (applied, before) = checkpoints::around(self, &vfs, before, |id| {
                            Ok::<_, ApiError>((apply.run(&vfs)?, id))
                        })?;
                        json!({ "applied": applied, "checkpoint": before })
                    }
                }
            }
            Action::Upload(path) => {
                let options = upload_options(&request.query)?;
                let path = VPath::parse(path)?;
                let written = self.upload(&path, options, &mut request.body).await?;
                let segments: Vec<&str> = std::iter::once("files")
                    .chain(path.as_str().split('/').filter(|s| !s.is_empty()))
                    .collect();
                let created = written.created;
                let body =
                    serde_json::to_value(written).map_err(|e| ApiError::Internal(e.to_string()))?;
                return Ok(Reply::made(created, body, resource(&agent, &segments)));
            }
        };
        Ok(Reply::ok(answer))
    }

    /// `exec`: checks the caller may run the command where it would run,
    /// then runs it now, or queues it as a job with `detach`.
    pub(crate) async fn exec_request(
        &self,
        agent: &str,
        caller: &Caller,
        source: &str,
        body: Vec<u8>,
    ) -> Result<Reply, ApiError> {
        let destination = crate::exec::destination(&body, &self.vfs());
        match destination {
            Some(destination) => policy::require_exec(caller, destination)?,
            // A body that does not decode runs nowhere (the exec says why);
            // still, only a caller who may run commands learns why.
            None => Access::Exec.admits(caller)?,
        }
        let body = match scheduling::split_detach(&body)? {
            Some((true, request)) => {
                let job = self.start_job(source, request).await?;
                return Ok(Reply::queued(agent, &job));
            }
            Some((false, request)) => request.to_string().into_bytes(),
            None => body,
        };
        let outcome = self.exec_to_end(&caller.actor(), &body, &Discard).await?;
        // A command on the computer may have brought up a new one and
        // started processes on it again: the alarm watches them. (The light
        // shell starts nothing the alarm follows.)
        if destination != Some(stead_scheduler::Backend::Shell) {
            self.arm().await?;
        }
        Ok(Reply::ok(outcome.to_json()))
    }

    /// Starts an authenticated hook call's job, unless a call with the
    /// same idempotency key did within the hook's window: then it answers
    /// with that call's job and runs nothing.
    async fn run_hook(
        &self,
        agent: &str,
        hook: &Hook,
        idempotency_key: Option<&str>,
        body: &[u8],
    ) -> Result<Reply, ApiError> {
        let hooks = Hooks::new(self.db());
        let key = idempotency_key.map(|key| format!("key:{key}"));
        if let Some(key) = &key {
            if let Some(job) = hooks.delivered(&hook.name, key, self.now_ms())? {
                let job = job.map(|id| Jobs::new(self.db()).get(id)).transpose()?;
                return Ok(Reply::ok(
                    json!({ "job": job.as_ref().map(scheduling::job_json), "replayed": true }),
                ));
            }
        }
        let request = scheduling::hook_request(hook, body);
        let source = format!("hook:{}", hook.name);
        // Queued and remembered in one step, so a second call with the same
        // key meets the record.
        let job = self.db().transaction(|| {
            let job = scheduling::create_job(self.db(), &source, request, self.now_ms())?;
            if let Some(key) = &key {
                hooks.remember(&hook.name, key, Some(job.id), self.now_ms())?;
            }
            Ok::<_, ApiError>(job)
        })?;
        self.arm().await?;
        Ok(Reply::queued(agent, &job))
    }

    /// Streams a request body into the file at `path`: chunks are staged as
    /// they arrive and the file changes only when the last one is in.
    async fn upload(
        &self,
        path: &VPath,
        options: WriteOptions,
        body: &mut impl Body,
    ) -> Result<stead_vfs::Written, ApiError> {
        let vfs = self.vfs();
        let limit = vfs.limits().max_file_bytes;
        let upload = vfs.begin_upload(path, options)?;
        let staged = async {
            let mut buffer: Vec<u8> = Vec::with_capacity(CHUNK_SIZE);
            let (mut idx, mut total) = (0i64, 0u64);
            loop {
                let room = CHUNK_SIZE - buffer.len();
                let read = body.read_into(&mut buffer, room).await?;
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
                // A piece may overrun the chunk: split.
                while buffer.len() >= CHUNK_SIZE {
                    let rest = buffer.split_off(CHUNK_SIZE);
                    self.vfs().stage_chunk(upload, idx, &buffer)?;
                    buffer = rest;
                    idx += 1;
                }
            }
            if !buffer.is_empty() {
                self.vfs().stage_chunk(upload, idx, &buffer)?;
            }
            Ok::<u64, ApiError>(total)
        }
        .await;
        let committed =
            staged.and_then(|total| Ok(self.vfs().commit_upload(upload, path, total, options)?));
        match committed {
            Ok(written) => Ok(written),
            Err(error) => {
                self.vfs().abort_upload(upload)?;
                Err(error)
            }
        }
    }
}

/// The headers a file's download carries (a `HEAD` of it too): its type
/// (bytes), length, mode and revision, and validators: an `ETag` that
/// changes whenever the file does (its inode and the revision of its last
/// change) and `Last-Modified` (its mtime).
pub fn file_headers(node: &Node) -> Vec<(&'static str, String)> {
    vec![
        ("content-type", "application/octet-stream".into()),
        ("content-length", node.size.to_string()),
        ("etag", format!("\"{}-{}\"", node.ino, node.rev)),
        ("last-modified", http_date(node.mtime)),
        ("x-file-size", node.size.to_string()),
        ("x-file-mode", format!("{:04o}", node.mode)),
        ("x-revision", node.rev.to_string()),
    ]
}

/// `ms` (since the Unix epoch) as an HTTP date (RFC 9110, 5.6.7:
/// `Sun, 06 Nov 1994 08:49:37 GMT`).
pub fn http_date(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .format("%a, %d %b %Y %H:%M:%S GMT")
        .to_string()
}

/// The URL path of a resource of agent `agent`: `/agents/{agent}/{segments}`,
/// each segment percent-encoded.
fn resource(agent: &str, segments: &[&str]) -> String {
    let mut path = format!("/agents/{}", crate::route::percent_encode(agent));
    for segment in segments {
        path.push('/');
        path.push_str(&crate::route::percent_encode(segment));
    }
    path
}

/// Upload options from the query string: `mode=755`, `parents=false`.
fn upload_options(query: &[(String, String)]) -> Result<WriteOptions, ApiError> {
    let mut options = WriteOptions::default();
    for (key, value) in query {
        match key.as_str() {
            "mode" => {
                options.mode = Some(crate::tools::parse_octal_mode(value)?);
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
