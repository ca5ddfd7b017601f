//! The Streamable HTTP transport of `/agents/{id}/mcp`, serving both
//! revisions from one endpoint, chosen by what the client sends.
//!
//! - A POST of `initialize` starts a session in the version negotiated
//!   (2025-11-25, 2025-06-18 or 2025-03-26); a request with
//!   `Mcp-Session-Id` (or `MCP-Protocol-Version` naming a session version)
//!   belongs to one; GET opens the session's notification stream and DELETE
//!   ends the session. (2025-11-25 basic/transports, "Session
//!   Management".) A 2025-03-26 session also takes JSON-RPC batches.
//! - A POST with `MCP-Protocol-Version: 2026-07-28` is served statelessly:
//!   its `_meta` must carry the protocol version and client capabilities,
//!   and `Mcp-Method` / `Mcp-Name` must match the body, else `400` with
//!   `-32602` or `-32020` (2026-07-28 basic/index "_meta",
//!   basic/transports/streamable-http "Server Validation").
//! - Any other version asked for is `400` with `-32022` and the versions
//!   served; a request that is neither (no session, no version) is `400`
//!   without a modern error, so a client speaking both falls back to
//!   `initialize` (2026-07-28 "Backward Compatibility").
//!
//! Answers are `application/json` unless the client accepts only
//! `text/event-stream` (then one SSE event); notifications and responses
//! get `202`. Origins, CORS and refused credentials are answered as
//! `crate::mcp::gate` says; the caller is checked before any method (its
//! token may have been revoked since the Worker checked it).

use serde_json::{json, Map, Value};

use crate::agent::Agent;
use crate::auth::{Caller, Scope};
use crate::error::ApiError;
use crate::host::{EventStream, Host};
use crate::mcp::gate::{self, Origins};
use crate::mcp::jsonrpc::{
    self, Id, Message, RpcError, HEADER_MISMATCH, INVALID_REQUEST, METHOD_NOT_FOUND,
    UNSUPPORTED_PROTOCOL_VERSION,
};
use crate::mcp::listen::{Channel, Cursor, ListenState, Listener};
use crate::mcp::notify::catch_up;
/// The endpoint's answers, as the glue and the tests name them.
pub use crate::mcp::reply::{McpBody, McpReply};
use crate::mcp::resume::Positions;
use crate::mcp::revision::{
    Revision, Version, CLIENT_CAPABILITIES_KEY, CURSOR_KEY, PROTOCOL_VERSION_KEY,
};
use crate::mcp::server::{capabilities, server_info, Call, INSTRUCTIONS};
use crate::mcp::session::{Session, Sessions};
use crate::mcp::sse;
use crate::policy::Access;
use crate::request::{read_body, Body};
use crate::route::{Action, MAX_JSON_BODY};

/// The HTTP method of a request to the endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpMethod {
    Get,
    Post,
    Delete,
}

/// The headers the transport reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpHeaders {
    pub accept: Option<String>,
    pub content_type: Option<String>,
    pub protocol_version: Option<String>,
    pub session_id: Option<String>,
    pub mcp_method: Option<String>,
    pub mcp_name: Option<String>,
    pub last_event_id: Option<String>,
    pub origin: Option<String>,
}

impl McpHeaders {
    /// Reads them with `header` (a case-insensitive lookup by name).
    pub fn read(header: impl Fn(&str) -> Option<String>) -> McpHeaders {
        McpHeaders {
            accept: header("accept"),
            content_type: header("content-type"),
            protocol_version: header("mcp-protocol-version"),
            session_id: header("mcp-session-id"),
            mcp_method: header("mcp-method"),
            mcp_name: header("mcp-name"),
            last_event_id: header("last-event-id"),
            origin: header("origin"),
        }
    }
}

/// A request to the MCP endpoint.
pub struct McpRequest<B> {
    /// The agent's id, as the route named it.
    pub agent: String,
    pub caller: Caller,
    pub method: HttpMethod,
    pub headers: McpHeaders,
    /// The origins that may call (those of `MCP_ALLOWED_ORIGINS`), and the
    /// endpoint's own.
    pub origins: Origins,
    pub body: B,
}

/// What the client accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Accepts {
    json: bool,
    events: bool,
}

impl Accepts {
    /// From an `Accept` header; none means anything.
    fn of(header: Option<&str>) -> Accepts {
        let Some(header) = header else {
            return Accepts {
                json: true,
                events: true,
            };
        };
        let mut accepts = Accepts {
            json: false,
            events: false,
        };
        for range in header.split(',') {
            let mut parts = range.split(';');
            let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            let refused = parts.any(|p| {
                let p = p.trim();
                p.strip_prefix("q=")
                    .and_then(|q| q.parse::<f32>().ok())
                    .is_some_and(|q| q == 0.0)
            });
            if refused {
                continue;
            }
            match media.as_str() {
                "*/*" => {
                    accepts.json = true;
                    accepts.events = true;
                }
                "application/json" | "application/*" => accepts.json = true,
                "text/event-stream" | "text/*" => accepts.events = true,
                _ => {}
            }
        }
        accepts
    }
}

/// The headers of a streamed answer.
fn stream_headers<S>(reply: McpReply<S>) -> McpReply<S> {
    reply
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .header("x-accel-buffering", "no")
}

/// The `Mcp-Name` value of a request: base64 between `=?base64?` and `?=`,
/// else the text itself.
fn decode_header_value(value: &str) -> Option<String> {
    use base64::Engine;
    match value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    {
        Some(encoded) => base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok()),
        None => Some(value.to_string()),
    }
}

impl<H: Host> Agent<H> {
    /// Serves one HTTP request to the MCP endpoint, with the CORS headers
    /// of an allowed page's origin.
    pub async fn mcp<B: Body>(&self, mut request: McpRequest<B>) -> McpReply<H::Stream> {
        let origin = request.headers.origin.clone();
        let reply = self.mcp_serve(&mut request).await;
        request.origins.cors(reply, origin.as_deref())
    }

    async fn mcp_serve<B: Body>(&self, request: &mut McpRequest<B>) -> McpReply<H::Stream> {
        if let Some(refused) = request.origins.refusal(request.headers.origin.as_deref()) {
            return refused;
        }
        if let Err(error) = self.admit(&request.agent, &request.caller, Action::Mcp.policy().access)
        {
            // Checking can fail for other reasons (storage): only a refusal
            // is answered as one.
            if !matches!(error.status(), 401 | 403) {
                return McpReply::api(&error);
            }
            // The request's id, from its body if it has one.
            let body = match request.method {
                HttpMethod::Post => read_body(&mut request.body, gate::ID_PROBE_BYTES)
                    .await
                    .unwrap_or_default(),
                HttpMethod::Get | HttpMethod::Delete => Vec::new(),
            };
            return gate::refused(&error, gate::presented(&request.caller), &body);
        }
        if let Err(error) = self.open(Some(&request.agent), false) {
            return McpReply::api(&error);
        }
        match request.method {
            HttpMethod::Post => self.mcp_post(request).await,
            HttpMethod::Get => self.mcp_get(request),
            HttpMethod::Delete => self.mcp_delete(request),
        }
    }

    async fn mcp_post<B: Body>(&self, request: &mut McpRequest<B>) -> McpReply<H::Stream> {
        let accepts = match post_accepts(&request.headers) {
            Ok(accepts) => accepts,
            Err(reply) => return reply,
        };
        let message = match read_posted(request).await {
            Ok(Posted::One(message)) => message,
            Ok(Posted::Batch(batch)) => return self.mcp_batch(request, batch, accepts).await,
            Err(reply) => return reply,
        };
        let revision = match self.revision_of(&request.headers, &message) {
            Ok(revision) => revision,
            Err(error) => return McpReply::error(&error, message.id()),
        };
        match message {
            Message::Request { id, method, params } => {
                self.mcp_request(request, revision, accepts, (id, method, params))
                    .await
            }
            Message::Notification { .. } => {
                // A notification of a session that has ended is refused as
                // its requests would be.
                if revision == Revision::Sessions && request.headers.session_id.is_some() {
                    if let Err(reply) = self.session_of(request) {
                        return reply;
                    }
                }
                McpReply::new(202, McpBody::Empty)
            }
            Message::Response => match revision {
                // 2025-11-25 lets a client answer our requests (we send
                // none): accepted and ignored.
                Revision::Sessions => McpReply::new(202, McpBody::Empty),
                Revision::Stateless => McpReply::error(
                    &RpcError::invalid_request(
                        "Invalid Request: clients send no responses in 2026-07-28",
                    ),
                    None,
                ),
            },
        }
    }

    /// A POSTed request (not a notification or a response), in the
    /// revision it speaks.
    async fn mcp_request<B>(
        &self,
        request: &McpRequest<B>,
        revision: Revision,
        accepts: Accepts,
        (id, method, params): (Id, String, Map<String, Value>),
    ) -> McpReply<H::Stream> {
        let session = match revision {
            Revision::Sessions if method == "initialize" => {
                return self.mcp_initialize(request, &id, &params, accepts)
            }
            Revision::Sessions => match self.session_of(request) {
                Ok(session) => Some(session),
                Err(reply) => return reply,
            },
            Revision::Stateless => {
                if let Err(error) = check_stateless(&request.headers, &method, &params) {
                    return McpReply::error(&error, Some(&id));
                }
                if method == "subscriptions/listen" {
                    return self.mcp_listen(request, &id, &params, accepts);
                }
                None
            }
        };
        let call = Call {
            revision,
            agent: &request.agent,
            caller: &request.caller,
            origin: request.origins.own(),
            session: session.as_ref(),
        };
        let answer = self.mcp_method(&call, &method, &params).await;
        answered(revision, accepts, &id, answer)
    }

    /// A JSON-RPC batch in a session: served element by element when the
    /// session speaks 2025-03-26, which requires it ("MUST support
    /// receiving JSON-RPC batches"); refused in a later one. The answer is
    /// the array of the requests' responses (`202` when it held only
    /// notifications and responses); `initialize` may not be in one.
    async fn mcp_batch<B>(
        &self,
        request: &McpRequest<B>,
        batch: Vec<Value>,
        accepts: Accepts,
    ) -> McpReply<H::Stream> {
        let session = match self.session_of(request) {
            Ok(session) => session,
            Err(reply) => return reply,
        };
        let refused = match batch.is_empty() {
            _ if !session.protocol.takes_batches() => Some(jsonrpc::NO_BATCHES),
            true => Some("Invalid Request: an empty batch"),
            false => None,
        };
        if let Some(message) = refused {
            return McpReply::error(&RpcError::invalid_request(message), None);
        }
        let call = Call {
            revision: Revision::Sessions,
            agent: &request.agent,
            caller: &request.caller,
            origin: request.origins.own(),
            session: Some(&session),
        };
        let mut responses = Vec::new();
        for item in batch {
            match jsonrpc::message(item) {
                Ok(Message::Request { id, method, .. }) if method == "initialize" => {
                    let error = RpcError::invalid_request(
                        "Invalid Request: initialize may not be part of a batch",
                    );
                    responses.push(error.to_response(Some(&id)));
                }
                Ok(Message::Request { id, method, params }) => {
                    responses.push(match self.mcp_method(&call, &method, &params).await {
                        Ok(result) => jsonrpc::result_response(&id, result),
                        Err(error) => error.to_response(Some(&id)),
                    });
                }
                Ok(Message::Notification { .. } | Message::Response) => {}
                Err((id, error)) => responses.push(error.to_response(id.as_ref())),
            }
        }
        if responses.is_empty() {
            return McpReply::new(202, McpBody::Empty);
        }
        if accepts.json {
            McpReply::new(200, McpBody::Json(Value::Array(responses)))
        } else {
            let events = responses.iter().map(|r| sse::event(None, r)).collect();
            stream_headers(McpReply::new(200, McpBody::Events(events)))
        }
    }

    /// Which revision a POST speaks.
    fn revision_of(&self, headers: &McpHeaders, message: &Message) -> Result<Revision, RpcError> {
        if let Message::Request { method, .. } = message {
            if method == "initialize" {
                return Ok(Revision::Sessions);
            }
        }
        match headers.protocol_version.as_deref() {
            Some(version) => Version::parse(version)
                .map(Version::revision)
                .ok_or_else(|| unsupported(version)),
            None if headers.session_id.is_some() => Ok(Revision::Sessions),
            None => {
                let declares_modern = match message {
                    Message::Request { params, .. } => params
                        .get("_meta")
                        .and_then(|meta| meta.get(PROTOCOL_VERSION_KEY))
                        .is_some(),
                    Message::Notification { .. } | Message::Response => false,
                };
                if declares_modern {
                    Err(RpcError::new(
                        HEADER_MISMATCH,
                        "Header mismatch: the MCP-Protocol-Version header is required",
                    )
                    .status(400))
                } else {
                    // Neither a session nor a version: a 2025-11-25 client
                    // that has not initialized (answered in session_of).
                    Ok(Revision::Sessions)
                }
            }
        }
    }

    /// The 2025-11-25 session a request belongs to, or the answer refusing
    /// it.
    fn session_of<B>(&self, request: &McpRequest<B>) -> Result<Session, McpReply<H::Stream>> {
        let Some(id) = request.headers.session_id.as_deref() else {
            let error = RpcError::invalid_request(
                "Bad Request: no Mcp-Session-Id; send initialize first (2025-11-25) or \
                 MCP-Protocol-Version: 2026-07-28 with _meta (stateless)",
            );
            return Err(McpReply::error(&error, None));
        };
        let sessions = Sessions::new(self.db(), self.now_ms());
        let session = sessions
            .find(id, &request.caller.actor())
            .map_err(|e| McpReply::api(&e))?;
        let Some(session) = session else {
            let error =
                RpcError::new(INVALID_REQUEST, "Session not found; initialize again").status(404);
            return Err(McpReply::error(&error, None));
        };
        // Without the header the session's version holds: a 2025-03-26
        // client never sends it, and the spec's fallback ("assume
        // 2025-03-26") is for a server with no other way to know.
        if let Some(version) = request.headers.protocol_version.as_deref() {
            if Version::parse(version) != Some(session.protocol) {
                let error = RpcError::invalid_request(format!(
                    "Bad Request: MCP-Protocol-Version {version} is not the session's {}",
                    session.protocol.as_str()
                ));
                return Err(McpReply::error(&error, None));
            }
        }
        Ok(session)
    }

    /// `initialize`: a new 2025-11-25 session.
    fn mcp_initialize<B>(
        &self,
        request: &McpRequest<B>,
        id: &Id,
        params: &Map<String, Value>,
        accepts: Accepts,
    ) -> McpReply<H::Stream> {
        let version = Version::negotiate(params.get("protocolVersion").and_then(Value::as_str));
        let client = params.get("clientInfo").cloned().unwrap_or(Value::Null);
        let session_id = match self.host.random_hex(32) {
            Ok(session_id) => session_id,
            Err(error) => return McpReply::api(&error.into()),
        };
        let sessions = Sessions::new(self.db(), self.now_ms());
        if let Err(error) = sessions.create(&session_id, &request.caller.actor(), version, &client)
        {
            return McpReply::api(&error);
        }
        let result = json!({
            "protocolVersion": version.as_str(),
            "capabilities": capabilities(),
            "serverInfo": server_info(),
            "instructions": INSTRUCTIONS,
        });
        respond(accepts, jsonrpc::result_response(id, result)).header("mcp-session-id", session_id)
    }

    /// GET: a 2025-11-25 session's notification stream, resuming after
    /// `Last-Event-ID` when given. A session has one stream at a time: a
    /// new one replaces the old, so no event goes to two.
    fn mcp_get<B>(&self, request: &McpRequest<B>) -> McpReply<H::Stream> {
        if request.headers.protocol_version.as_deref() == Some(Revision::Stateless.version()) {
            let error = RpcError::invalid_request(
                "Method Not Allowed: 2026-07-28 has no GET stream; use subscriptions/listen",
            )
            .status(405);
            return McpReply::error(&error, None).header("allow", "POST, OPTIONS");
        }
        if !Accepts::of(request.headers.accept.as_deref()).events {
            let error =
                RpcError::invalid_request("Not Acceptable: accept text/event-stream").status(406);
            return McpReply::error(&error, None);
        }
        if let Err(error) = Access::Scope(Scope::Read).admits(&request.caller) {
            let refusal = gate::refusal(&error, gate::presented(&request.caller));
            return McpReply::error(&refusal, None);
        }
        let session = match self.session_of(request) {
            Ok(session) => session,
            Err(reply) => return reply,
        };
        let channel = Channel::Session {
            id: session.id.clone(),
        };
        for stream in self.host.streams() {
            if stream.state().channel == channel {
                stream.close();
            }
        }
        let start = match request.headers.last_event_id.as_deref() {
            Some(id) => match Cursor::parse(id) {
                Some(cursor) => cursor,
                None => {
                    let error = RpcError::invalid_request(format!(
                        "Bad Request: Last-Event-ID {id:?} is not an event id of this server"
                    ));
                    return McpReply::error(&error, None);
                }
            },
            None => match self.vfs().revision() {
                Ok(revision) => Cursor::after(revision),
                Err(error) => return McpReply::api(&error.into()),
            },
        };
        let state = ListenState {
            channel,
            resources: session.subscriptions,
            list_changed: true,
            cursor: start,
            caller: request.caller.clone(),
        };
        self.open_listening(state)
    }

    /// `subscriptions/listen` (2026-07-28): acknowledges what it will send,
    /// then keeps the answer open as a stream of those notifications.
    fn mcp_listen<B>(
        &self,
        request: &McpRequest<B>,
        id: &Id,
        params: &Map<String, Value>,
        accepts: Accepts,
    ) -> McpReply<H::Stream> {
        if !accepts.events {
            let error = RpcError::invalid_request(
                "Not Acceptable: subscriptions/listen answers with text/event-stream",
            )
            .status(406);
            return McpReply::error(&error, Some(id));
        }
        let Filter {
            paths,
            uris,
            list_changed,
        } = match Filter::read(params, &request.caller) {
            Ok(filter) => filter,
            Err(error) => return McpReply::error(&error, Some(id)),
        };
        let listener = Listener::new(request.caller.actor(), &paths, list_changed);
        let positions = Positions::new(self.db(), self.now_ms());
        let start = match self.listen_start(params, &positions, &listener) {
            Ok(start) => start,
            Err(Ok(error)) => return McpReply::error(&error, Some(id)),
            Err(Err(error)) => return McpReply::api(&error),
        };
        // Only what this server can send is acknowledged (tools and prompts
        // do not change while it runs).
        let mut honored = Map::new();
        if list_changed {
            honored.insert("resourcesListChanged".into(), json!(true));
        }
        if !uris.is_empty() {
            honored.insert("resourceSubscriptions".into(), Value::Array(uris));
        }
        let acknowledged = jsonrpc::notification(
            "notifications/subscriptions/acknowledged",
            json!({
                "_meta": { crate::mcp::revision::SUBSCRIPTION_ID_KEY: id },
                "notifications": honored,
            }),
        );
        let state = ListenState {
            channel: Channel::Listen {
                subscription: id.clone(),
                listener: listener.clone(),
            },
            resources: paths,
            list_changed,
            cursor: start,
            caller: request.caller.clone(),
        };
        let reply = self.open_listening(state.clone());
        if let McpBody::Stream(stream) = &reply.body {
            // The acknowledgement goes first; then any backlog.
            stream.send(&sse::event(None, &acknowledged));
            let mut state = state;
            if catch_up(stream, &self.vfs(), &mut state) {
                stream.save(&state);
            }
            // Kept before the backlog, which may yet be lost in flight (see
            // `crate::mcp::resume`); a position not kept costs only that.
            let _ = positions.record(&listener, start);
        }
        reply
    }

    /// Where a listener starts: the cursor sent back, else where this
    /// listener left off, else now. A bad cursor is the client's error
    /// (`Ok`), storage failing the server's (`Err`).
    fn listen_start(
        &self,
        params: &Map<String, Value>,
        positions: &Positions<'_, H::Db>,
        listener: &Listener,
    ) -> Result<Cursor, Result<RpcError, ApiError>> {
        let resume = params
            .get("_meta")
            .and_then(|meta| meta.get(CURSOR_KEY))
            .and_then(Value::as_str);
        if let Some(text) = resume {
            return Cursor::parse(text).ok_or_else(|| {
                Ok(RpcError::invalid_params(format!(
                    "Invalid params: _meta {CURSOR_KEY} {text:?} is not a position of this server"
                ))
                .status(400))
            });
        }
        match positions.find(listener).map_err(Err)? {
            Some(cursor) => Ok(cursor),
            None => Ok(Cursor::after(
                self.vfs().revision().map_err(|e| Err(e.into()))?,
            )),
        }
    }

    /// Opens a stream following `state`, after sending what the change log
    /// holds past its cursor.
    fn open_listening(&self, state: ListenState) -> McpReply<H::Stream> {
        let is_session = matches!(state.channel, Channel::Session { .. });
        let stream = self.host.open_stream(state.clone());
        if is_session {
            let mut state = state;
            if catch_up(&stream, &self.vfs(), &mut state) {
                stream.save(&state);
            }
        }
        stream_headers(McpReply::new(200, McpBody::Stream(stream)))
    }

    /// DELETE: ends a 2025-11-25 session (and its stream).
    fn mcp_delete<B>(&self, request: &McpRequest<B>) -> McpReply<H::Stream> {
        let Some(id) = request.headers.session_id.as_deref() else {
            let error = RpcError::invalid_request(
                "Method Not Allowed: DELETE ends a session; send its Mcp-Session-Id",
            )
            .status(405);
            return McpReply::error(&error, None).header("allow", gate::ALLOWED_METHODS);
        };
        let sessions = Sessions::new(self.db(), self.now_ms());
        match sessions.delete(id, &request.caller.actor()) {
            Ok(true) => {
                let channel = Channel::Session { id: id.to_string() };
                for stream in self.host.streams() {
                    if stream.state().channel == channel {
                        stream.close();
                    }
                }
                McpReply::new(204, McpBody::Empty)
            }
            Ok(false) => {
                let error = RpcError::new(INVALID_REQUEST, "Session not found").status(404);
                McpReply::error(&error, None)
            }
            Err(error) => McpReply::api(&error),
        }
    }
}

/// The 2026-07-28 checks of a request's `_meta` and headers.
fn check_stateless(
    headers: &McpHeaders,
    method: &str,
    params: &Map<String, Value>,
) -> Result<(), RpcError> {
    let header_version = headers.protocol_version.as_deref().unwrap_or_default();
    let meta = params.get("_meta").and_then(Value::as_object);
    let version = meta
        .and_then(|m| m.get(PROTOCOL_VERSION_KEY))
        .and_then(Value::as_str);
    let capabilities = meta.and_then(|m| m.get(CLIENT_CAPABILITIES_KEY));
    let (Some(version), Some(Value::Object(_))) = (version, capabilities) else {
        return Err(RpcError::invalid_params(format!(
            "Invalid params: _meta must carry {PROTOCOL_VERSION_KEY} and {CLIENT_CAPABILITIES_KEY}"
        ))
        .status(400));
    };
    if version != header_version {
        return Err(mismatch(format!(
            "MCP-Protocol-Version header {header_version} does not match _meta {version}"
        )));
    }
    match headers.mcp_method.as_deref() {
        Some(header) if header == method => {}
        Some(header) => {
            return Err(mismatch(format!(
                "Mcp-Method header {header:?} does not match body method {method:?}"
            )))
        }
        None => return Err(mismatch("the Mcp-Method header is required".into())),
    }
    let name_source = match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        _ => None,
    };
    if let Some(field) = name_source {
        let body = params
            .get(field)
            .and_then(Value::as_str)
            .unwrap_or_default();
        match headers.mcp_name.as_deref().map(decode_header_value) {
            Some(Some(header)) if header == body => {}
            Some(_) => {
                return Err(mismatch(format!(
                    "Mcp-Name header does not match body {field} {body:?}"
                )))
            }
            None => {
                return Err(mismatch(format!(
                    "the Mcp-Name header is required for {method}"
                )))
            }
        }
    }
    Ok(())
}

/// The refusal of a message over `limit` bytes (also sent by the Worker,
/// which refuses a declared length over it before the body travels on).
pub fn too_large(limit: usize) -> RpcError {
    RpcError::invalid_request(format!(
        "Invalid Request: the message exceeds {limit} bytes"
    ))
    .status(413)
}

fn mismatch(message: String) -> RpcError {
    RpcError::new(HEADER_MISMATCH, format!("Header mismatch: {message}")).status(400)
}

fn unsupported(version: &str) -> RpcError {
    RpcError::new(UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version")
        .data(json!({ "supported": Version::supported(), "requested": version }))
        .status(400)
}

/// What `subscriptions/listen` asks for.
struct Filter {
    /// The workspace paths of the resources subscribed to, and their URIs.
    paths: Vec<String>,
    uris: Vec<Value>,
    list_changed: bool,
}

impl Filter {
    /// Reads `params.notifications`; resources need the read scope.
    fn read(params: &Map<String, Value>, caller: &Caller) -> Result<Filter, RpcError> {
        let Some(Value::Object(filter)) = params.get("notifications") else {
            return Err(RpcError::invalid_params(
                "Invalid params: notifications must be an object",
            )
            .status(400));
        };
        let subscribed = filter
            .get("resourceSubscriptions")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let list_changed = filter.get("resourcesListChanged") == Some(&json!(true));
        if !subscribed.is_empty() || list_changed {
            if let Err(error) = Access::Scope(Scope::Read).admits(caller) {
                return Err(gate::refusal(&error, gate::presented(caller)));
            }
        }
        let mut paths = Vec::new();
        for uri in subscribed {
            let path = uri
                .as_str()
                .ok_or_else(|| ApiError::InvalidRequest("a resource URI is a string".into()))
                .and_then(crate::mcp::resources::path_of)
                .map_err(|error| {
                    RpcError::invalid_params(format!(
                        "Invalid params: resourceSubscriptions: {}",
                        error.public_message()
                    ))
                    .status(400)
                })?;
            paths.push(path.to_string());
        }
        Ok(Filter {
            paths,
            uris: subscribed.to_vec(),
            list_changed,
        })
    }
}

/// What a POST carries: one message, or a batch sent in a session.
enum Posted {
    One(Message),
    Batch(Vec<Value>),
}

/// What a POST's client accepts, once its content type and `Accept` allow
/// an answer at all.
fn post_accepts<S>(headers: &McpHeaders) -> Result<Accepts, McpReply<S>> {
    let is_json = headers.content_type.as_deref().is_some_and(|t| {
        t.split(';')
            .next()
            .unwrap_or("")
            .trim()
            .eq_ignore_ascii_case("application/json")
    });
    if !is_json {
        let error = RpcError::invalid_request(
            "Unsupported Media Type: send the JSON-RPC message as Content-Type: application/json",
        )
        .status(415);
        return Err(McpReply::error(&error, None));
    }
    let accepts = Accepts::of(headers.accept.as_deref());
    if !accepts.json && !accepts.events {
        let error = RpcError::invalid_request(
            "Not Acceptable: accept application/json or text/event-stream",
        )
        .status(406);
        return Err(McpReply::error(&error, None));
    }
    Ok(accepts)
}

/// Reads and parses a POST's body (bounded).
async fn read_posted<B: Body, S>(request: &mut McpRequest<B>) -> Result<Posted, McpReply<S>> {
    let body = match read_body(&mut request.body, MAX_JSON_BODY).await {
        Ok(body) => body,
        Err(ApiError::BodyTooLarge { limit }) => {
            return Err(McpReply::error(&too_large(limit), None))
        }
        Err(error) => return Err(McpReply::api(&error)),
    };
    let value = jsonrpc::read(&body).map_err(|error| McpReply::error(&error, None))?;
    match value {
        Value::Array(batch) if request.headers.session_id.is_some() => Ok(Posted::Batch(batch)),
        value => jsonrpc::message(value)
            .map(Posted::One)
            .map_err(|(id, error)| McpReply::error(&error, id.as_ref())),
    }
}

/// The answer to a request, as its revision sends it.
fn answered<S>(
    revision: Revision,
    accepts: Accepts,
    id: &Id,
    answer: Result<Value, RpcError>,
) -> McpReply<S> {
    match answer {
        Ok(result) => respond(accepts, jsonrpc::result_response(id, result)),
        Err(error) => {
            // 2026-07-28 answers an unknown method with 404; 2025-11-25
            // reserves 404 for an ended session.
            let error = match (revision, error.code) {
                (Revision::Stateless, METHOD_NOT_FOUND) => error.status(404),
                _ => error,
            };
            if error.status == 200 {
                respond(accepts, error.to_response(Some(id)))
            } else {
                McpReply::error(&error, Some(id))
            }
        }
    }
}

/// A JSON-RPC response in the form the client accepts.
fn respond<S>(accepts: Accepts, message: Value) -> McpReply<S> {
    if accepts.json {
        McpReply::new(200, McpBody::Json(message))
    } else {
        stream_headers(McpReply::new(
            200,
            McpBody::Events(sse::event(None, &message)),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_headers_are_read_as_media_ranges() {
        let of = |h| Accepts::of(Some(h));
        assert_eq!(
            of("application/json, text/event-stream"),
            Accepts {
                json: true,
                events: true
            }
        );
        assert_eq!(
            of("text/event-stream"),
            Accepts {
                json: false,
                events: true
            }
        );
        assert_eq!(
            of("*/*"),
            Accepts {
                json: true,
                events: true
            }
        );
        assert_eq!(
            of("application/json;q=0, text/*"),
            Accepts {
                json: false,
                events: true
            }
        );
        assert_eq!(
            of("text/html"),
            Accepts {
                json: false,
                events: false
            }
        );
        assert_eq!(
            Accepts::of(None),
            Accepts {
                json: true,
                events: true
            }
        );
    }

    #[test]
    fn header_values_decode_the_base64_sentinel() {
        assert_eq!(decode_header_value("read").as_deref(), Some("read"));
        assert_eq!(
            decode_header_value("=?base64?SGVsbG8sIOS4lueVjA==?=").as_deref(),
            Some("Hello, 世界")
        );
        assert_eq!(decode_header_value("=?base64?!!?="), None);
    }
}
