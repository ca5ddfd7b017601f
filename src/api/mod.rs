//! The HTTP API, as plain Rust: routing, authentication, tool dispatch and
//! errors. Nothing here touches JavaScript, so all of it is tested on the
//! host; `crate::workspace` and `crate::lib` only move bytes between these
//! functions and the platform.

pub mod audit;
pub mod auth;
mod error;
pub mod exec;
pub mod jobs;
pub mod settings;
pub mod socket;
pub mod tools;

pub use error::ApiError;

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
    /// A route on one agent.
    Agent { id: String, action: Action },
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
    Tool(&'static str),
    /// `POST /agents/{id}/exec`: a command line in the light shell.
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
    /// `PUT /agents/{id}/hooks/{name}`: create or replace (API token).
    HookPut(String),
    /// `GET /agents/{id}/hooks/{name}`.
    Hook(String),
    /// `DELETE /agents/{id}/hooks/{name}`.
    HookDelete(String),
    /// `POST /agents/{id}/hooks/{name}`: a third party calls the hook; it
    /// authenticates with the hook's secret, not the API token.
    HookCall(String),
    /// `GET /agents/{id}/ws`: a WebSocket (hibernatable).
    Socket,
    /// `GET /agents/{id}/audit?after=<id>&limit=<n>`: the audit log.
    Audit,
    /// `GET /agents/{id}/settings`: the quotas.
    Settings,
    /// `PUT /agents/{id}/settings`: set the quotas.
    SettingsPut,
    /// `POST /agents/{id}/tokens/revoke`: revoke a token before it expires.
    RevokeToken,
}

impl Action {
    /// Whether the request body is JSON (and so bounded by [`MAX_JSON_BODY`]).
    pub fn takes_json(&self) -> bool {
        matches!(
            self,
            Action::Tool(_)
                | Action::Exec
                | Action::ScheduleCreate
                | Action::SchedulePut(_)
                | Action::HookPut(_)
                | Action::HookCall(_)
                | Action::SettingsPut
                | Action::RevokeToken
        )
    }

    /// Whether the Worker lets the request through without the API token:
    /// a hook call carries the hook's own secret, which the agent checks.
    pub fn public(&self) -> bool {
        matches!(self, Action::HookCall(_))
    }

    /// Whether the action works on an agent that does not exist yet.
    pub fn creates(&self) -> bool {
        matches!(self, Action::Create)
    }
}

/// Checks an agent id: 1-64 characters of `[A-Za-z0-9._-]`.
pub fn valid_agent_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Routes `method` on the percent-encoded URL `path`.
pub fn route(method: &str, path: &str) -> Result<Route, ApiError> {
    let no_route = || ApiError::NoRoute {
        method: method.to_string(),
        path: path.to_string(),
    };
    let not_allowed = || ApiError::MethodNotAllowed {
        method: method.to_string(),
        path: path.to_string(),
    };
    match (method, path) {
        ("GET", "/health") => return Ok(Route::Health),
        ("POST", "/tokens") => return Ok(Route::MintToken),
        (_, "/health" | "/tokens") => return Err(not_allowed()),
        _ => {}
    }
    let rest = path.strip_prefix("/agents/").ok_or_else(no_route)?;
    let (id, rest) = rest.split_once('/').unwrap_or((rest, ""));
    let id = percent_decode(id)?;
    if !valid_agent_id(&id) {
        return Err(ApiError::InvalidAgentId { id });
    }
    let action = match (method, rest) {
        ("GET", "") => Action::Info,
        ("PUT", "") => Action::Create,
        ("DELETE", "") => Action::Delete,
        (_, "") => return Err(not_allowed()),
        ("POST", "ping") => Action::Ping,
        ("POST", "exec") => Action::Exec,
        (_, "ping" | "exec") => return Err(not_allowed()),
        ("GET", "ws") => Action::Socket,
        ("GET", "audit") => Action::Audit,
        ("GET", "settings") => Action::Settings,
        ("PUT", "settings") => Action::SettingsPut,
        ("POST", "tokens/revoke") => Action::RevokeToken,
        (_, "ws" | "audit" | "settings" | "tokens/revoke") => return Err(not_allowed()),
        (method, rest) if rest == "jobs" || rest.starts_with("jobs/") => {
            jobs::route_jobs(method, rest).ok_or_else(|| {
                if jobs::known_jobs_path(rest) {
                    not_allowed()
                } else {
                    no_route()
                }
            })?
        }
        (method, rest)
            if ["schedules", "hooks"]
                .iter()
                .any(|p| rest == *p || rest.starts_with(&format!("{p}/"))) =>
        {
            let (collection, name) = rest.split_once('/').unwrap_or((rest, ""));
            let name = percent_decode(name)?;
            jobs::route_named(method, collection, name).ok_or_else(not_allowed)?
        }
        (method, file) if file == "files" || file.starts_with("files/") => {
            let file = format!(
                "/{}",
                percent_decode(file.trim_start_matches("files").trim_start_matches('/'))?
            );
            match method {
                "GET" => Action::Download(file),
                "PUT" => Action::Upload(file),
                _ => return Err(not_allowed()),
            }
        }
        (method, tool) => match tools::TOOLS.iter().find(|t| **t == tool) {
            Some(tool) if method == "POST" => Action::Tool(tool),
            Some(_) => return Err(not_allowed()),
            None => return Err(no_route()),
        },
    };
    Ok(Route::Agent { id, action })
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
mod tests;
