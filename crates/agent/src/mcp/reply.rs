//! What the MCP endpoint answers over HTTP: a status, headers and a body
//! (JSON, a finished event stream, or one the agent keeps open). Below
//! both `crate::mcp::gate` (origins, refusals) and `crate::mcp::http` (the
//! transport), which build them.

use serde_json::Value;

use crate::error::ApiError;
use crate::mcp::jsonrpc::{Id, RpcError};

/// The answer's body.
pub enum McpBody<S> {
    Empty,
    Json(Value),
    /// A complete `text/event-stream` body.
    Events(String),
    /// An event stream the agent keeps open.
    Stream(S),
}

/// The answer.
pub struct McpReply<S> {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: McpBody<S>,
}

impl<S> McpReply<S> {
    pub(crate) fn new(status: u16, body: McpBody<S>) -> Self {
        McpReply {
            status,
            headers: Vec::new(),
            body,
        }
    }

    pub(crate) fn header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    /// A JSON-RPC error as the whole answer (with its challenge, if any).
    pub(crate) fn error(error: &RpcError, id: Option<&Id>) -> Self {
        let reply = McpReply::new(error.status, McpBody::Json(error.to_response(id)));
        match &error.challenge {
            Some(challenge) => reply.header("www-authenticate", challenge.as_ref()),
            None => reply,
        }
    }

    /// An API error (an unknown agent, a failure of storage) as the API
    /// answers it.
    pub(crate) fn api(error: &ApiError) -> Self {
        McpReply::new(error.status(), McpBody::Json(error.body()))
    }
}
