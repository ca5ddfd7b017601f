//! The MCP methods: what each request of either revision answers.
//!
//! `tools/call` turns the call into its HTTP twin (`crate::catalog`) and
//! dispatches it through `crate::dispatch` with [`Entry::Mcp`], so who may
//! call what and what the audit log records are the HTTP API's own. A tool
//! that fails (a refusal, a quota, a bad argument, a file that is not
//! there, a failed computer: any `4xx`/`5xx` of the route) answers a result
//! with `isError: true` and the API's error object, which a model can read
//! and act on; invalid arguments are such results too, as the spec asks
//! ("Input validation errors" are tool execution errors). Only an unknown
//! tool, call parameters that are not a `CallToolRequest` (no name,
//! `arguments` not an object) and the server's own machinery are JSON-RPC
//! errors (server/tools, "Error Handling").

use serde_json::{json, Map, Value};
use stead_vfs::Errno;

use crate::agent::Agent;
use crate::auth::{Caller, Scope};
use crate::catalog::formats::mcp_tool;
use crate::catalog::schema::{drop_nulls, input_schema};
use crate::catalog::ModelTool;
use crate::error::ApiError;
use crate::host::{EventStream, Host};
use crate::mcp::gate;
use crate::mcp::jsonrpc::{
    RpcError, INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, RESOURCE_NOT_FOUND,
};
use crate::mcp::listen::Channel;
use crate::mcp::resources;
use crate::mcp::revision::{Revision, Version, SERVER_INFO_KEY};
use crate::mcp::session::{Session, Sessions};
use crate::policy::Access;
use crate::request::{Bytes, Entry, HookHeaders, Reply, Request};

/// How long a client may keep `tools/list` and `server/discover` answers
/// (2026-07-28 caching): the tools change only with a new deployment.
const TOOLS_TTL_MS: i64 = 60 * 60 * 1000;

/// What the server tells a model about itself.
pub const INSTRUCTIONS: &str = "This server is one agent's durable workspace: a filesystem that \
persists across conversations, a bash shell over it (with a Linux computer for anything else), \
background jobs, long-running processes, schedules and webhooks. Paths are absolute \
(`/src/main.rs`). Read a file before editing it; use `edit` for changes within a file and `write` \
for whole files. Long commands: `bash` with `detach: true`, then `job_output`. Servers and \
watchers: `process_start`, then `process_output`; `process_stop` ends them. Files are also \
resources (`file:///<path>`).";

/// Who is calling, in which revision.
pub(crate) struct Call<'a> {
    pub(crate) revision: Revision,
    pub(crate) agent: &'a str,
    pub(crate) caller: &'a Caller,
    /// The endpoint's own origin (a share link's URL starts with it).
    pub(crate) origin: &'a str,
    /// The 2025-11-25 session the request belongs to.
    pub(crate) session: Option<&'a Session>,
}

/// The server's name and version.
pub fn server_info() -> Value {
    json!({ "name": "stead", "version": env!("CARGO_PKG_VERSION") })
}

/// What the server offers, in both revisions.
pub fn capabilities() -> Value {
    json!({
        "tools": { "listChanged": false },
        "resources": { "subscribe": true, "listChanged": true },
    })
}

impl<H: Host> Agent<H> {
    /// Answers request `method` (not `initialize`, nor `subscriptions/listen`,
    /// which the transport serves).
    pub(crate) async fn mcp_method(
        &self,
        call: &Call<'_>,
        method: &str,
        params: &Map<String, Value>,
    ) -> Result<Value, RpcError> {
        let result = match (method, call.revision) {
            ("ping", Revision::Sessions) => json!({}),
            ("server/discover", Revision::Stateless) => {
                json!({
                    "supportedVersions": Version::supported(),
                    "capabilities": capabilities(),
                    "instructions": INSTRUCTIONS,
                    "ttlMs": TOOLS_TTL_MS,
                    "cacheScope": "public",
                })
            }
            ("tools/list", _) => {
                if params.contains_key("cursor") && !params["cursor"].is_null() {
                    return Err(RpcError::invalid_params(
                        "Invalid cursor: the tool list has one page",
                    ));
                }
                let tools: Vec<Value> = ModelTool::visible(call.caller).map(mcp_tool).collect();
                cacheable(json!({ "tools": tools }), call.revision, TOOLS_TTL_MS)
            }
            ("tools/call", _) => self.call_tool(call, params).await?,
            ("resources/list", _) => {
                require_read(call.caller)?;
                let cursor = match params.get("cursor") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(cursor)) => Some(cursor.as_str()),
                    Some(_) => return Err(RpcError::invalid_params("Invalid cursor")),
                };
                let (list, next) = resources::list(&self.vfs(), cursor)
                    .map_err(|e| resource_error(&e, call.revision, None))?;
                let mut result = json!({ "resources": list });
                if let Some(next) = next {
                    result["nextCursor"] = json!(next);
                }
                cacheable(result, call.revision, 0)
            }
            ("resources/templates/list", _) => {
                require_read(call.caller)?;
                cacheable(
                    json!({ "resourceTemplates": resources::templates() }),
                    call.revision,
                    TOOLS_TTL_MS,
                )
            }
            ("resources/read", _) => {
                require_read(call.caller)?;
                let uri = uri_param(params)?;
                let path = resources::path_of(uri)
                    .map_err(|e| resource_error(&e, call.revision, Some(uri)))?;
                let contents = resources::read(&self.vfs(), &path)
                    .map_err(|e| resource_error(&e, call.revision, Some(uri)))?;
                cacheable(json!({ "contents": contents }), call.revision, 0)
            }
            ("resources/subscribe" | "resources/unsubscribe", Revision::Sessions) => {
                require_read(call.caller)?;
                let session = call
                    .session
                    .ok_or_else(|| RpcError::new(INVALID_REQUEST, "no session"))?;
                let uri = uri_param(params)?;
                let path = resources::path_of(uri)
                    .map_err(|e| resource_error(&e, call.revision, Some(uri)))?
                    .to_string();
                self.resubscribe(session, method == "resources/subscribe", path)?;
                json!({})
            }
            (other, revision) => {
                return Err(RpcError::new(
                    METHOD_NOT_FOUND,
                    format!(
                        "Method not found: {other} (protocol {})",
                        revision.version()
                    ),
                ))
            }
        };
        Ok(match call.revision {
            Revision::Sessions => result,
            Revision::Stateless => complete(result),
        })
    }

    /// `tools/call`: the tool's HTTP twin, dispatched.
    async fn call_tool(
        &self,
        call: &Call<'_>,
        params: &Map<String, Value>,
    ) -> Result<Value, RpcError> {
        let name = match params.get("name") {
            Some(Value::String(name)) => name,
            _ => {
                return Err(RpcError::invalid_params(
                    "Invalid params: name must be a tool's name",
                ))
            }
        };
        let tool = ModelTool::from_name(name)
            .ok_or_else(|| RpcError::invalid_params(format!("Unknown tool: {name}")))?;
        let arguments = match params.get("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(arguments)) => arguments.clone(),
            Some(_) => {
                return Err(RpcError::invalid_params(
                    "Invalid params: arguments must be an object",
                ))
            }
        };
        // Strict-mode clients (OpenAI's) send every property, `null` for
        // the ones they leave out: read those as left out.
        let schema = input_schema(tool);
        let mut value = Value::Object(arguments);
        drop_nulls(schema, &mut value);
        let arguments = match value {
            Value::Object(arguments) => arguments,
            _ => Map::new(),
        };
        let invocation = match tool.invocation(arguments) {
            Ok(invocation) => invocation,
            Err(error) => return Ok(tool_error(&error)),
        };
        let request = Request {
            entry: Entry::Mcp,
            agent: call.agent.to_string(),
            action: invocation.action,
            caller: call.caller.clone(),
            query: invocation.query,
            hook: HookHeaders::default(),
            range: Default::default(),
            upgrade: false,
            origin: call.origin.to_string(),
            body: Bytes(invocation.body),
        };
        // Dispatching from here makes dispatch (and what it calls) part of
        // this future; boxing it keeps the future's size bounded.
        match Box::pin(self.dispatch(request)).await {
            Ok(Reply::Json { body, .. }) => Ok(json!({
                "content": [{ "type": "text", "text": body.to_string() }],
                "structuredContent": body,
                "isError": false,
            })),
            Ok(Reply::File { .. } | Reply::Socket(_)) => Err(RpcError::new(
                INTERNAL_ERROR,
                format!("{name} does not answer in JSON"),
            )),
            Err(error) => Ok(tool_error(&error)),
        }
    }

    /// Adds or removes `path` among a session's subscriptions, in the
    /// database and on its open stream.
    fn resubscribe(&self, session: &Session, add: bool, path: String) -> Result<(), RpcError> {
        let sessions = Sessions::new(self.db(), self.now_ms());
        // The session was read from the database for this request.
        let mut list = session.subscriptions.clone();
        list.retain(|p| *p != path);
        if add {
            list.push(path);
        }
        sessions
            .subscribe(&session.id, &list)
            .map_err(|e| RpcError::new(INTERNAL_ERROR, e.public_message()))?;
        for stream in self.host.streams() {
            let mut state = stream.state();
            if state.channel
                == (Channel::Session {
                    id: session.id.clone(),
                })
            {
                state.resources = list.clone();
                stream.save(&state);
            }
        }
        Ok(())
    }
}

/// A tool's failure as the model sees it: a result with `isError` whose
/// text is the API's error object (its code and message), for every error
/// of the dispatched route, a refusal or a failure of the workspace alike
/// (a `5xx` too: the model can retry or work round it, where a JSON-RPC
/// error would reach it as a bare "an error occurred"). JSON-RPC errors
/// are kept for the MCP machinery itself.
fn tool_error(error: &ApiError) -> Value {
    let body = error.body();
    json!({
        "content": [{ "type": "text", "text": body.to_string() }],
        "structuredContent": body,
        "isError": true,
    })
}

/// Resources need the `read` scope, as the `read` tool does.
fn require_read(caller: &Caller) -> Result<(), RpcError> {
    Access::Scope(Scope::Read)
        .admits(caller)
        .map_err(|e| gate::refusal(&e, gate::presented(caller)))
}

/// A resource request's failure: "not found" in each revision's code
/// (-32002 in 2025-11-25, -32602 in 2026-07-28), other request errors as
/// invalid params, failures of the server as internal errors.
fn resource_error(error: &ApiError, revision: Revision, uri: Option<&str>) -> RpcError {
    let mut data = error.body();
    if let Some(uri) = uri {
        data["uri"] = json!(uri);
    }
    let code = match error {
        ApiError::Fs(fs) if fs.code() == Errno::Enoent => match revision {
            Revision::Sessions => RESOURCE_NOT_FOUND,
            Revision::Stateless => INVALID_PARAMS,
        },
        _ if error.status() >= 500 => INTERNAL_ERROR,
        // A file the caller may not read (`EACCES`): a refusal of the
        // request, not of its credential.
        _ if matches!(error.status(), 401 | 403) => {
            return RpcError::new(INVALID_REQUEST, error.public_message())
                .data(data)
                .status(error.status())
        }
        _ => INVALID_PARAMS,
    };
    let message = match error {
        ApiError::Fs(fs) if fs.code() == Errno::Enoent => "Resource not found".to_string(),
        _ => error.public_message(),
    };
    RpcError::new(code, message).data(data)
}

fn uri_param(params: &Map<String, Value>) -> Result<&str, RpcError> {
    params
        .get("uri")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("Invalid params: uri must be a string"))
}

/// A 2026-07-28 result: `resultType` and the server's identity.
fn complete(mut result: Value) -> Value {
    result["resultType"] = json!("complete");
    result["_meta"] = json!({ SERVER_INFO_KEY: server_info() });
    result
}

/// Adds 2026-07-28 caching hints: private, since what a caller sees
/// depends on its credential (scopes, or the agent's files).
fn cacheable(mut result: Value, revision: Revision, ttl_ms: i64) -> Value {
    if revision == Revision::Stateless {
        result["ttlMs"] = json!(ttl_ms);
        result["cacheScope"] = json!("private");
    }
    result
}
