//! What a request asks for: URL routing into [`Route`] and [`Action`].
//!
//! The router is plain string matching over the percent-encoded path, so
//! the Worker can answer a wrong route before any Durable Object wakes, and
//! the agent can route the same request again without trusting the Worker's
//! reading. What each action needs and how it is recorded is
//! [`crate::policy`].

use crate::error::ApiError;

/// Largest JSON request body. Bigger files go through the streamed upload
/// route (`PUT /agents/{id}/files/{path}`).
pub const MAX_JSON_BODY: usize = 16 << 20;

/// What a request asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `GET /health`: the only route without a credential.
    Health,
    /// `POST /tokens`: mint an agent token (admin token only).
    MintToken,
    /// `POST /tokens/revoke`: revoke one, named by its agent and id (admin
    /// token only); the Worker hands it to that agent as
    /// [`Action::RevokeToken`].
    RevokeToken,
    /// `GET /tools?format=mcp|anthropic|openai|ai-sdk`: the tool
    /// definitions a model is given (any valid credential; an agent token
    /// sees the tools its scopes allow).
    Tools,
    /// `GET /agents?limit=<n>&cursor=<c>`: the deployment's agents, newest
    /// first (admin token only; the Worker answers from its index,
    /// [`crate::agent_index`]).
    Agents,
    /// `GET /ui` and `GET /ui/{file}`: the inspector's page, static files
    /// with no data in them (no credential; `crate::session`).
    Inspector,
    /// `/ui/session`: sign in (`POST` with a token), see who is signed in
    /// (`GET`), sign out (`DELETE`) (`crate::session`).
    Session(SessionStep),
    /// A route on one agent.
    Agent { id: String, action: Action },
}

/// What a request to `/ui/session` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionStep {
    SignIn,
    Show,
    SignOut,
}

/// A file tool: `POST /agents/{id}/{tool}` with a JSON body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tool {
    Read,
    Write,
    Append,
    Edit,
    ApplyPatch,
    Stat,
    Ls,
    Mkdir,
    Rm,
    Mv,
    Cp,
    Symlink,
    Readlink,
    Chmod,
    Glob,
    Grep,
    Changes,
}

impl Tool {
    /// Every tool, in the order the docs list them.
    pub const ALL: [Tool; 17] = [
        Tool::Read,
        Tool::Write,
        Tool::Append,
        Tool::Edit,
        Tool::ApplyPatch,
        Tool::Stat,
        Tool::Ls,
        Tool::Mkdir,
        Tool::Rm,
        Tool::Mv,
        Tool::Cp,
        Tool::Symlink,
        Tool::Readlink,
        Tool::Chmod,
        Tool::Glob,
        Tool::Grep,
        Tool::Changes,
    ];

    /// The route and audit name.
    pub fn name(self) -> &'static str {
        match self {
            Tool::Read => "read",
            Tool::Write => "write",
            Tool::Append => "append",
            Tool::Edit => "edit",
            Tool::ApplyPatch => "apply_patch",
            Tool::Stat => "stat",
            Tool::Ls => "ls",
            Tool::Mkdir => "mkdir",
            Tool::Rm => "rm",
            Tool::Mv => "mv",
            Tool::Cp => "cp",
            Tool::Symlink => "symlink",
            Tool::Readlink => "readlink",
            Tool::Chmod => "chmod",
            Tool::Glob => "glob",
            Tool::Grep => "grep",
            Tool::Changes => "changes",
        }
    }

    /// The tool called `name`.
    pub fn from_name(name: &str) -> Option<Tool> {
        Tool::ALL.into_iter().find(|tool| tool.name() == name)
    }

    /// Whether the tool can change the workspace.
    pub fn mutates(self) -> bool {
        match self {
            Tool::Read
            | Tool::Stat
            | Tool::Ls
            | Tool::Readlink
            | Tool::Glob
            | Tool::Grep
            | Tool::Changes => false,
            Tool::Write
            | Tool::Append
            | Tool::Edit
            | Tool::ApplyPatch
            | Tool::Mkdir
            | Tool::Rm
            | Tool::Mv
            | Tool::Cp
            | Tool::Symlink
            | Tool::Chmod => true,
        }
    }
}

/// Which front a request to a port came in on (`crate::front`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Front {
    /// `/agents/{id}/ports/{port}/...` on the API's origin: for API
    /// clients with a token; answered sandboxed (see `crate::ports`).
    Api,
    /// The port's own origin, `{port}-{agent label}.{PORTS_HOST}`.
    Port,
}

/// What a request asks of an agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// `GET /agents/{id}`: revision and usage.
    Info,
    /// `PUT /agents/{id}`: create the agent (idempotent).
    Create,
    /// `DELETE /agents/{id}`: delete the agent and its whole workspace.
    Delete,
    /// `POST /agents/{id}/ping`: reaches the agent and does nothing.
    Ping,
    /// `POST /agents/{id}/{tool}`: a file tool with a JSON body.
    Tool(Tool),
    /// `POST /agents/{id}/exec`: a command line, in the light shell or on
    /// the computer.
    Exec,
    /// `GET /agents/{id}/files/{path}`: stream a file out.
    Download(String),
    /// `PUT /agents/{id}/files/{path}`: stream a file in.
    Upload(String),
    /// `GET /agents/{id}/jobs`: the newest jobs.
    Jobs,
    /// `GET /agents/{id}/jobs/{job}`: one job.
    Job(i64),
    /// `GET /agents/{id}/jobs/{job}/output?from=<offset>`: a job's output.
    JobOutput(i64),
    /// `POST /agents/{id}/jobs/{job}/cancel`.
    JobCancel(i64),
    /// `GET /agents/{id}/schedules`.
    Schedules,
    /// `POST /agents/{id}/schedules`: create (id from the body or generated).
    ScheduleCreate,
    /// `PUT /agents/{id}/schedules/{name}`: create or replace.
    SchedulePut(String),
    /// `GET /agents/{id}/schedules/{name}`: the schedule and its runs.
    Schedule(String),
    /// `DELETE /agents/{id}/schedules/{name}`.
    ScheduleDelete(String),
    /// `GET /agents/{id}/hooks`.
    Hooks,
    /// `PUT /agents/{id}/hooks/{name}`: create or replace.
    HookPut(String),
    /// `GET /agents/{id}/hooks/{name}`.
    Hook(String),
    /// `DELETE /agents/{id}/hooks/{name}`.
    HookDelete(String),
    /// `POST /agents/{id}/hooks/{name}`: a third party calls the hook; it
    /// authenticates with the hook's secret, not a bearer token.
    HookCall(String),
    /// `GET /agents/{id}/ws`: a WebSocket (hibernatable).
    Socket,
    /// `POST|GET|DELETE /agents/{id}/mcp`: the MCP server (Streamable
    /// HTTP), served by `crate::mcp`.
    Mcp,
    /// `GET /agents/{id}/audit?after=<id>&limit=<n>`: the audit log.
    Audit,
    /// `GET /agents/{id}/settings`: quotas and computer settings.
    Settings,
    /// `PUT /agents/{id}/settings`: change them.
    SettingsPut,
    /// `POST /agents/{id}/tokens/revoke`: revoke a token before it expires.
    RevokeToken,
    /// `GET /agents/{id}/tokens`: the tokens minted for the agent that
    /// have not expired (see `crate::minted`).
    Tokens,
    /// `POST /agents/{id}/tokens/minted`: the Worker records a token it
    /// mints, before handing it out.
    TokenMinted,
    /// `GET /agents/{id}/checkpoints?before=<id>&limit=<n>`: newest first.
    Checkpoints,
    /// `POST /agents/{id}/checkpoints`: pin the workspace as it is.
    CheckpointCreate,
    /// `GET /agents/{id}/checkpoints/{id|name}`.
    Checkpoint(String),
    /// `DELETE /agents/{id}/checkpoints/{id|name}`.
    CheckpointDelete(String),
    /// `POST /agents/{id}/diff`: what differs between two points.
    Diff,
    /// `POST /agents/{id}/restore`: put a checkpoint (or some of its paths)
    /// back.
    Restore,
    /// `POST /agents/{id}/undo`: take back the last operation that changed
    /// files.
    Undo,
    /// `POST /agents/{id}/fork`: copy a checkpoint into a new agent.
    Fork,
    /// `POST /agents/{id}/fork/import`: one page of a fork stream, sent by
    /// the agent forking into this one.
    ForkImport,
    /// `GET /agents/{id}/computer`: the computer's state.
    Computer,
    /// `POST /agents/{id}/computer/stop`: release the computer now.
    ComputerStop,
    /// `POST /agents/{id}/computer/environment`: save the computer's
    /// durable environment now.
    EnvironmentSave,
    /// `DELETE /agents/{id}/computer/environment`: drop it.
    EnvironmentDrop,
    /// `GET /agents/{id}/processes`: every process.
    Processes,
    /// `POST /agents/{id}/processes`: start a long-running process.
    ProcessStart,
    /// `GET /agents/{id}/processes/{pid}`.
    Process(String),
    /// `GET /agents/{id}/processes/{pid}/output?from=<offset>`: its output
    /// (its job's log).
    ProcessOutput(String),
    /// `POST /agents/{id}/processes/{pid}/signal`.
    ProcessSignal(String),
    /// `DELETE /agents/{id}/processes/{pid}?grace_ms=<ms>`: stop it (or
    /// forget one that ended).
    ProcessStop(String),
    /// Any method on `/agents/{id}/ports/{port}{path}`: forwarded to that
    /// port on the computer. `path` is the rest of the URL path as it came
    /// (percent-encoded), empty or starting with `/`.
    /// `front` says which origin it came in on: on the port's own, the
    /// whole URL path is the dev server's.
    Port {
        port: u16,
        path: String,
        front: Front,
    },
    /// `POST /agents/{id}/ports/{port}/share`: a share link to the port.
    ShareCreate(u16),
    /// `POST /agents/{id}/transfer/{step}`: a step of a push or pull by
    /// content hash (`crate::transfer`).
    Transfer(crate::transfer::Step),
    /// `GET /agents/{id}/shares`: the share links not yet expired.
    Shares,
    /// `DELETE /agents/{id}/shares/{share}`: revoke one.
    ShareRevoke(String),
    /// `GET /agents/{id}/terminal?backend=&cols=&rows=&session=&from=`: an
    /// interactive terminal over a WebSocket (`crate::terminal`).
    Terminal,
    /// `GET /agents/{id}/terminals`: the terminal sessions.
    Terminals,
    /// `DELETE /agents/{id}/terminals/{session}`: end one and forget it.
    TerminalDelete(String),
    /// `GET /agents/{id}/verify?after=<chunk>&limit=<n>`: one page of the
    /// walk over the chunks kept only in the object store, naming those
    /// missing there (`crate::tiering`).
    Verify,
    /// `POST /agents/{id}/tickets {"purpose":"terminal"}`: a single-use
    /// ticket that opens one terminal upgrade (`crate::terminal::tickets`).
    TicketCreate,
}

impl Action {
    /// Whether a share link (rather than a bearer credential) may let the
    /// request in: only on the port's own origin, so its cookie never
    /// lands on the API's.
    pub fn takes_share_link(&self) -> bool {
        matches!(
            self,
            Action::Port {
                front: Front::Port,
                ..
            }
        )
    }

    /// Whether a terminal ticket (rather than a bearer credential) may let
    /// the request in: a browser cannot set `Authorization` on a WebSocket.
    pub fn takes_ticket(&self) -> bool {
        matches!(self, Action::Terminal)
    }

    /// Whether the action works on an agent that does not exist yet.
    pub fn creates(&self) -> bool {
        matches!(self, Action::Create | Action::ForkImport)
    }
}

/// Checks an agent id: 1-64 characters of `[A-Za-z0-9._-]`.
pub fn valid_agent_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// A request as it came, for the errors of one that fits no route.
#[derive(Clone, Copy)]
struct Asked<'a> {
    method: &'a str,
    path: &'a str,
}

impl Asked<'_> {
    fn no_route(self) -> ApiError {
        ApiError::NoRoute {
            method: self.method.to_string(),
            path: self.path.to_string(),
        }
    }

    /// Refuses the method; [`route`] fills in the methods the path takes.
    fn not_allowed(self) -> ApiError {
        ApiError::MethodNotAllowed {
            method: self.method.to_string(),
            path: self.path.to_string(),
            allow: Vec::new(),
        }
    }
}

/// Routes `method` on the percent-encoded URL `path`.
pub fn route(method: &str, path: &str) -> Result<Route, ApiError> {
    route_asked(method, path).map_err(|error| match error {
        ApiError::MethodNotAllowed { method, path, .. } => {
            let allow = METHODS
                .into_iter()
                .filter(|other| route_asked(other, &path).is_ok())
                .collect();
            ApiError::MethodNotAllowed {
                method,
                path,
                allow,
            }
        }
        other => other,
    })
}

/// The methods a route may take, in the order `Allow` lists them.
const METHODS: [&str; 5] = ["GET", "HEAD", "POST", "PUT", "DELETE"];

fn route_asked(method: &str, path: &str) -> Result<Route, ApiError> {
    let asked = Asked { method, path };
    let (no_route, not_allowed) = (|| asked.no_route(), || asked.not_allowed());
    // HEAD is GET without the body (RFC 9110, 9.3.2): it takes GET's
    // route, and the glue answers with GET's status and headers only.
    let method = match method {
        "HEAD" => "GET",
        other => other,
    };
    match (method, path) {
        ("GET", "/health") => return Ok(Route::Health),
        ("POST", "/tokens") => return Ok(Route::MintToken),
        ("POST", "/tokens/revoke") => return Ok(Route::RevokeToken),
        ("GET", "/tools") => return Ok(Route::Tools),
        ("GET", "/agents") => return Ok(Route::Agents),
        ("POST", "/ui/session") => return Ok(Route::Session(SessionStep::SignIn)),
        ("GET", "/ui/session") => return Ok(Route::Session(SessionStep::Show)),
        ("DELETE", "/ui/session") => return Ok(Route::Session(SessionStep::SignOut)),
        (_, "/health" | "/tokens" | "/tokens/revoke" | "/tools" | "/agents" | "/ui/session") => {
            return Err(not_allowed())
        }
        ("GET", ui) if ui == "/ui" || ui.starts_with("/ui/") => return Ok(Route::Inspector),
        (_, ui) if ui == "/ui" || ui.starts_with("/ui/") => return Err(not_allowed()),
        _ => {}
    }
    let rest = path.strip_prefix("/agents/").ok_or_else(no_route)?;
    let (id, rest) = rest.split_once('/').unwrap_or((rest, ""));
    let id = percent_decode(id)?;
    if !valid_agent_id(&id) {
        return Err(ApiError::InvalidAgentId { id });
    }
    let action = route_action(asked, method, rest)?;
    Ok(Route::Agent { id, action })
}

/// Routes `method` on `rest`, the path after `/agents/{id}/`: the agent's
/// own endpoints here, each collection of its things in a function of its
/// own, and what is left is a file tool.
fn route_action(asked: Asked<'_>, method: &str, rest: &str) -> Result<Action, ApiError> {
    let (no_route, not_allowed) = (|| asked.no_route(), || asked.not_allowed());
    let action = match (method, rest) {
        ("GET", "") => Action::Info,
        ("PUT", "") => Action::Create,
        ("DELETE", "") => Action::Delete,
        (_, "") => return Err(not_allowed()),
        ("POST", "ping") => Action::Ping,
        ("POST", "exec") => Action::Exec,
        (_, "ping" | "exec") => return Err(not_allowed()),
        ("GET", "ws") => Action::Socket,
        ("POST" | "GET" | "DELETE", "mcp") => Action::Mcp,
        ("GET", "audit") => Action::Audit,
        ("GET", "settings") => Action::Settings,
        ("PUT", "settings") => Action::SettingsPut,
        ("POST", "tokens/revoke") => Action::RevokeToken,
        ("GET", "tokens") => Action::Tokens,
        ("POST", "tokens/minted") => Action::TokenMinted,
        ("POST", "diff") => Action::Diff,
        ("POST", step) if step.starts_with("transfer/") => {
            crate::transfer::Step::from_name(&step["transfer/".len()..])
                .map(Action::Transfer)
                .ok_or_else(no_route)?
        }
        (_, step) if step.starts_with("transfer/") => return Err(not_allowed()),
        ("POST", "restore") => Action::Restore,
        ("POST", "undo") => Action::Undo,
        ("POST", "fork") => Action::Fork,
        ("POST", "fork/import") => Action::ForkImport,
        ("GET", "computer") => Action::Computer,
        ("POST", "computer/stop") => Action::ComputerStop,
        ("POST", "computer/environment") => Action::EnvironmentSave,
        ("DELETE", "computer/environment") => Action::EnvironmentDrop,
        ("GET", "terminal") => Action::Terminal,
        ("GET", "terminals") => Action::Terminals,
        ("POST", "tickets") => Action::TicketCreate,
        ("GET", "verify") => Action::Verify,
        (
            _,
            "ws"
            | "mcp"
            | "audit"
            | "settings"
            | "tokens/revoke"
            | "diff"
            | "restore"
            | "undo"
            | "fork"
            | "fork/import"
            | "computer"
            | "computer/stop"
            | "computer/environment"
            | "terminal"
            | "terminals"
            | "tickets"
            | "verify",
        ) => return Err(not_allowed()),
        (method, rest) if rest.starts_with("terminals/") => route_deletable(
            asked,
            method,
            &rest["terminals/".len()..],
            Action::TerminalDelete,
        )?,
        (method, rest) if in_collection(rest, "jobs") => route_jobs(asked, method, rest)?,
        (method, rest) if in_collection(rest, "checkpoints") => {
            route_checkpoints(asked, method, rest)?
        }
        (method, rest) if rest.starts_with("ports/") => route_ports(method, rest)?,
        ("GET", "shares") => Action::Shares,
        (_, "shares") => return Err(not_allowed()),
        (method, rest) if rest.starts_with("shares/") => {
            route_deletable(asked, method, &rest["shares/".len()..], Action::ShareRevoke)?
        }
        (method, rest) if in_collection(rest, "processes") => route_processes(asked, method, rest)?,
        (method, rest) if in_collection(rest, "schedules") || in_collection(rest, "hooks") => {
            route_named(asked, method, rest)?
        }
        (method, file) if in_collection(file, "files") => route_files(asked, method, file)?,
        (method, tool) => match Tool::from_name(tool) {
            Some(tool) if method == "POST" => Action::Tool(tool),
            Some(_) => return Err(not_allowed()),
            None => return Err(no_route()),
        },
    };
    Ok(action)
}

/// Whether `rest` is collection `name` or a path under it.
fn in_collection(rest: &str, name: &str) -> bool {
    rest.strip_prefix(name)
        .is_some_and(|after| after.is_empty() || after.starts_with('/'))
}

/// Routes `method` on `{id}` (still percent-encoded) of a collection whose
/// members can only be deleted, with action `delete`: terminals and
/// shares.
fn route_deletable(
    asked: Asked<'_>,
    method: &str,
    id: &str,
    delete: fn(String) -> Action,
) -> Result<Action, ApiError> {
    let id = percent_decode(id)?;
    match method {
        "DELETE" if !id.is_empty() && !id.contains('/') => Ok(delete(id)),
        "DELETE" => Err(asked.no_route()),
        _ => Err(asked.not_allowed()),
    }
}

/// Routes `method` on `jobs`, `jobs/{id}`, `jobs/{id}/output` and
/// `jobs/{id}/cancel`. A job's id is a number: a path with any other is
/// no route at all, one another method would take is refused.
fn route_jobs(asked: Asked<'_>, method: &str, rest: &str) -> Result<Action, ApiError> {
    let parts: Vec<&str> = rest.split('/').collect();
    let id = parts.get(1).and_then(|id| id.parse::<i64>().ok());
    match (method, parts.as_slice(), id) {
        ("GET", ["jobs"], _) => Ok(Action::Jobs),
        ("GET", ["jobs", _], Some(id)) => Ok(Action::Job(id)),
        ("GET", ["jobs", _, "output"], Some(id)) => Ok(Action::JobOutput(id)),
        ("POST", ["jobs", _, "cancel"], Some(id)) => Ok(Action::JobCancel(id)),
        (_, ["jobs"], _) | (_, ["jobs", _] | ["jobs", _, "output" | "cancel"], Some(_)) => {
            Err(asked.not_allowed())
        }
        _ => Err(asked.no_route()),
    }
}

/// Routes `method` on `checkpoints` and `checkpoints/{name}`.
fn route_checkpoints(asked: Asked<'_>, method: &str, rest: &str) -> Result<Action, ApiError> {
    let name = percent_decode(
        rest.trim_start_matches("checkpoints")
            .trim_start_matches('/'),
    )?;
    match (method, name.is_empty()) {
        ("GET", true) => Ok(Action::Checkpoints),
        ("POST", true) => Ok(Action::CheckpointCreate),
        ("GET", false) => Ok(Action::Checkpoint(name)),
        ("DELETE", false) => Ok(Action::CheckpointDelete(name)),
        _ => Err(asked.not_allowed()),
    }
}

/// Routes `method` on `ports/{port}{path}`: `POST ports/{port}/share`
/// mints a share link, anything else goes to the port.
fn route_ports(method: &str, rest: &str) -> Result<Action, ApiError> {
    let after = &rest["ports/".len()..];
    let (number, path) = match after.find('/') {
        Some(slash) => (&after[..slash], &after[slash..]),
        None => (after, ""),
    };
    let port = number
        .parse::<u16>()
        .ok()
        .filter(|port| *port > 0 && number.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| ApiError::InvalidRequest(format!("{number:?} is not a port (1-65535)")))?;
    Ok(match (method, path) {
        ("POST", "/share") => Action::ShareCreate(port),
        _ => Action::Port {
            port,
            path: path.to_string(),
            front: Front::Api,
        },
    })
}

/// Routes `method` on `processes`, `processes/{pid}` and
/// `processes/{pid}/{signal|output}`; one of those paths that another
/// method would take is refused.
fn route_processes(asked: Asked<'_>, method: &str, rest: &str) -> Result<Action, ApiError> {
    let parts: Vec<&str> = rest.split('/').collect();
    let id = |raw: &str| percent_decode(raw);
    match (method, parts.as_slice()) {
        ("GET", ["processes"]) => Ok(Action::Processes),
        ("POST", ["processes"]) => Ok(Action::ProcessStart),
        ("GET", ["processes", pid]) if !pid.is_empty() => id(pid).map(Action::Process),
        ("DELETE", ["processes", pid]) if !pid.is_empty() => id(pid).map(Action::ProcessStop),
        ("GET", ["processes", pid, "output"]) => id(pid).map(Action::ProcessOutput),
        ("POST", ["processes", pid, "signal"]) => id(pid).map(Action::ProcessSignal),
        (_, ["processes"] | ["processes", _] | ["processes", _, "signal" | "output"]) => {
            Err(asked.not_allowed())
        }
        _ => Err(asked.no_route()),
    }
}

/// Routes `method` on `schedules[/name]` and `hooks[/name]`.
fn route_named(asked: Asked<'_>, method: &str, rest: &str) -> Result<Action, ApiError> {
    let (collection, name) = rest.split_once('/').unwrap_or((rest, ""));
    let name = percent_decode(name)?;
    let whole = name.is_empty();
    Ok(match (collection, method, whole) {
        ("schedules", "GET", true) => Action::Schedules,
        ("schedules", "POST", true) => Action::ScheduleCreate,
        ("schedules", "GET", false) => Action::Schedule(name),
        ("schedules", "PUT", false) => Action::SchedulePut(name),
        ("schedules", "DELETE", false) => Action::ScheduleDelete(name),
        ("hooks", "GET", true) => Action::Hooks,
        ("hooks", "GET", false) => Action::Hook(name),
        ("hooks", "PUT", false) => Action::HookPut(name),
        ("hooks", "DELETE", false) => Action::HookDelete(name),
        ("hooks", "POST", false) => Action::HookCall(name),
        _ => return Err(asked.not_allowed()),
    })
}

/// Routes `method` on `files/{path}`: a workspace file's bytes, down or
/// up.
fn route_files(asked: Asked<'_>, method: &str, rest: &str) -> Result<Action, ApiError> {
    let file = format!(
        "/{}",
        percent_decode(rest.trim_start_matches("files").trim_start_matches('/'))?
    );
    match method {
        "GET" => Ok(Action::Download(file)),
        "PUT" => Ok(Action::Upload(file)),
        _ => Err(asked.not_allowed()),
    }
}

/// Encodes a path segment for a URL: every byte but the unreserved ones
/// (`A-Z a-z 0-9 - . _ ~`) as `%XX`; [`percent_decode`] reads it back.
pub fn percent_encode(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for byte in segment.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Decodes `%XX` escapes; the result must be UTF-8.
pub fn percent_decode(text: &str) -> Result<String, ApiError> {
    let invalid = || ApiError::InvalidRequest(format!("bad percent-encoding in {text:?}"));
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            // from_str_radix alone would take a sign (`%+1`).
            let hex = text
                .get(i + 1..i + 3)
                .filter(|hex| hex.bytes().all(|b| b.is_ascii_hexdigit()))
                .ok_or_else(invalid)?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| invalid())?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| invalid())
}

#[cfg(test)]
#[path = "route_tests.rs"]
mod tests;
