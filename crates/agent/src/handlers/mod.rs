//! What each action does, one module per area: the agent itself, its
//! settings and tokens ([`admin`]), files ([`files`]), commands
//! ([`exec`]), jobs ([`jobs`]), schedules and hooks ([`schedules`]),
//! checkpoints and forks ([`checkpoints`]), the computer and its processes
//! ([`processes`]), ports and share links ([`ports`]), terminals
//! ([`terminal`]).
//!
//! `crate::dispatch` has authorized the caller, opened the agent and read
//! the body as the action's policy says (`crate::policy::Input`) before a
//! handler runs, and it records the outcome after: a handler only carries
//! the action out and says what it answers. [`handle`] is the one place an
//! action meets its handler; it matches every action without a wildcard,
//! so a new action does not compile until it has one.

mod admin;
mod agent;
mod checkpoints;
mod exec;
mod files;
mod jobs;
mod ports;
mod processes;
mod schedules;
mod terminal;

use serde_json::Value;

use crate::agent::Agent;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::host::Host;
use crate::range::RangeHeaders;
use crate::request::{Body, Entry, HookHeaders, Reply};
use crate::route::Action;

/// What a handler knows of the request besides its action and its body.
pub(crate) struct Call<'r> {
    pub(crate) entry: Entry,
    /// The agent's id, as the route named it.
    pub(crate) agent: &'r str,
    pub(crate) caller: &'r Caller,
    pub(crate) query: &'r [(String, String)],
    pub(crate) hook: &'r HookHeaders,
    pub(crate) range: &'r RangeHeaders,
    pub(crate) upgrade: bool,
    pub(crate) origin: &'r str,
    /// Whether opening the agent for this request created it.
    pub(crate) created: bool,
    /// The JSON body, parsed once (`null` for an action that takes none);
    /// a handler takes it with [`Call::json`].
    pub(crate) json: Result<Value, ApiError>,
}

impl Call<'_> {
    /// Takes the parsed JSON body, or the reason it did not parse: a
    /// handler asks for it where its typed decode would have failed, so a
    /// malformed body is reported after the checks that come first.
    pub(crate) fn json(&mut self) -> Result<Value, ApiError> {
        std::mem::replace(&mut self.json, Ok(Value::Null))
    }
}

/// What a handler answers, and what the audit entry says besides who,
/// what and how it ended (`crate::audit::Note::detail`).
pub(crate) struct Handled {
    pub(crate) reply: Reply,
    pub(crate) detail: Option<Value>,
}

impl From<Reply> for Handled {
    fn from(reply: Reply) -> Handled {
        Handled {
            reply,
            detail: None,
        }
    }
}

/// A `200` JSON answer, with nothing more for the audit log.
fn answer(body: Value) -> Result<Handled, ApiError> {
    Ok(Reply::ok(body).into())
}

/// Carries out `action`, authorized and admitted; `body` is the request's
/// body for the handlers that read it themselves.
pub(crate) async fn handle<H: Host, B: Body>(
    agent: &Agent<H>,
    action: &Action,
    mut call: Call<'_>,
    body: &mut B,
) -> Result<Handled, ApiError> {
    let call = &mut call;
    match action {
        Action::Create => agent::create(agent, call),
        Action::Info => agent::info(agent, call),
        Action::Delete => agent::delete(agent, call).await,
        Action::Ping => agent::ping(call),
        Action::Socket => agent::socket(call),
        Action::Mcp => agent::mcp(),
        Action::Settings => admin::settings(agent),
        Action::SettingsPut => admin::put_settings(agent, call),
        Action::Audit => admin::audit(agent, call),
        Action::RevokeToken => admin::revoke_token(agent, call),
        Action::Tokens => admin::tokens(agent),
        Action::TokenMinted => admin::token_minted(agent, call),
        Action::Tool(tool) => files::tool(agent, call, *tool).await,
        Action::Download(path) => files::download(agent, call, path),
        Action::Upload(path) => files::upload(agent, call, path, body).await,
        Action::Transfer(step) => files::transfer(agent, call, *step, body).await,
        Action::Exec => exec::exec(agent, call).await,
        Action::Jobs => jobs::list(agent, call),
        Action::Job(id) => jobs::show(agent, *id),
        Action::JobOutput(id) => jobs::output(agent, call, *id),
        Action::JobCancel(id) => jobs::cancel(agent, call, *id).await,
        Action::Schedules => schedules::list(agent),
        Action::Schedule(id) => schedules::show(agent, id),
        Action::ScheduleCreate => schedules::put(agent, call, None).await,
        Action::SchedulePut(id) => schedules::put(agent, call, Some(id)).await,
        Action::ScheduleDelete(id) => schedules::delete(agent, id).await,
        Action::Hooks => schedules::hooks(agent),
        Action::Hook(name) => schedules::hook(agent, name),
        Action::HookPut(name) => schedules::put_hook(agent, call, name),
        Action::HookDelete(name) => schedules::delete_hook(agent, name),
        Action::HookCall(name) => schedules::call_hook(agent, call, name, body).await,
        Action::Checkpoints => checkpoints::list(agent, call),
        Action::CheckpointCreate => checkpoints::create(agent, call),
        Action::Checkpoint(key) => checkpoints::show(agent, key),
        Action::CheckpointDelete(key) => checkpoints::delete(agent, key),
        Action::Diff => checkpoints::diff(agent, call),
        Action::Restore => checkpoints::restore(agent, call),
        Action::Undo => checkpoints::undo(agent, call),
        Action::Fork => checkpoints::fork(agent, call).await,
        Action::ForkImport => checkpoints::fork_import(agent, call, body).await,
        Action::Computer => processes::computer(agent).await,
        Action::ComputerStop => processes::stop_computer(agent).await,
        Action::EnvironmentSave => processes::save_environment(agent).await,
        Action::EnvironmentDrop => processes::drop_environment(agent),
        Action::Processes => processes::list(agent),
        Action::Process(id) => processes::show(agent, id),
        Action::ProcessOutput(id) => processes::output(agent, call, id),
        Action::ProcessStart => processes::start(agent, call).await,
        Action::ProcessSignal(id) => processes::signal(agent, call, id).await,
        Action::ProcessStop(id) => processes::stop(agent, call, id).await,
        Action::Port { port, .. } => ports::admit(agent, call, *port),
        Action::ShareCreate(port) => ports::share(agent, call, *port),
        Action::Shares => ports::shares(agent),
        Action::ShareRevoke(id) => ports::revoke(agent, id),
        Action::Terminal => terminal::open(agent, call).await,
        Action::Terminals => terminal::list(agent),
        Action::TerminalDelete(id) => terminal::delete(agent, call, id).await,
        Action::TicketCreate => terminal::ticket(agent, call),
        Action::Verify => answer(agent.verify_tier(call.query).await?),
    }
}
