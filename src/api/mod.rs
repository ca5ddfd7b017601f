//! The HTTP API, as plain Rust: routing, authentication, tool dispatch and
//! errors. Nothing here touches JavaScript, so all of it is tested on the
//! host; `crate::workspace` and `crate::lib` only move bytes between these
//! functions and the platform.

mod error;
pub mod exec;
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
}

impl Action {
    /// Whether the request body is JSON (and so bounded by [`MAX_JSON_BODY`]).
    pub fn takes_json(&self) -> bool {
        matches!(self, Action::Tool(_) | Action::Exec)
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
    if path == "/health" {
        return if method == "GET" {
            Ok(Route::Health)
        } else {
            Err(not_allowed())
        };
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
            let hex = text.get(i + 1..i + 3).ok_or_else(invalid)?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| invalid())?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| invalid())
}

/// Checks an `Authorization` header against the configured token, in
/// constant time with respect to the token's contents.
pub fn authorize(header: Option<&str>, token: Option<&str>) -> Result<(), ApiError> {
    let token = token
        .filter(|t| !t.is_empty())
        .ok_or(ApiError::NotConfigured)?;
    let presented = header
        .and_then(|h| h.strip_prefix("Bearer "))
        .ok_or(ApiError::Unauthorized)?;
    if constant_time_eq(presented.as_bytes(), token.as_bytes()) {
        Ok(())
    } else {
        Err(ApiError::Unauthorized)
    }
}

/// Compares without an early exit, so timing does not reveal how much of a
/// guess was right. (The length is not secret.)
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests;
