//! The per-agent Durable Object: glue between the runtime's events and the
//! agent's core ([`stead_agent::Agent`]).
//!
//! Each event becomes one call on the agent: a request is decoded into a
//! `stead_agent::Request` and its `Reply` encoded back; the alarm and
//! WebSocket events are passed on as they are. Everything the agent does is
//! in `crates/agent`. After each event, the computer terminals' streams the
//! agent opened meanwhile are followed by tasks of their own
//! ([`Workspace::follow_terminals`]), which is why the agent is shared.

use std::rc::Rc;

use futures::StreamExt;
use stead_agent::auth::{self, Caller};
use stead_agent::mcp::gate::Origins;
use stead_agent::mcp::http::{HttpMethod, McpBody, McpHeaders, McpReply, McpRequest};
use stead_agent::protocol::{PING, PONG};
use stead_agent::range::RangeHeaders;
use stead_agent::request;
use stead_agent::socket::Incoming;
use stead_agent::{
    Action, Agent, ApiError, Entry, HookHeaders, Reply, Request as AgentRequest, Route,
};
use stead_vfs::Vfs;
use worker::{
    durable_object, DurableObject, Env, Headers, Method, Request, Response, ResponseBody, Result,
    State, WebSocketPair,
};

use crate::body::RequestBody;
use crate::do_sql::DoSql;
use crate::platform::{performance_now, WorkerHost, WorkerSocket, WorkerStream};

/// The path prefix of a bare round trip to agent `{id}`'s object
/// (`POST /_bench/bare/{id}`, local development only): answered at once,
/// the floor the benchmark compares the ping with.
pub(crate) const BARE_ROUND_TRIP: &str = "/_bench/bare/";

#[durable_object]
pub struct Workspace {
    agent: Rc<Agent<WorkerHost>>,
}

impl DurableObject for Workspace {
    fn new(state: State, env: Env) -> Self {
        let db = DoSql::new(&state).expect("Durable Object storage has SQL");
        Workspace {
            agent: Rc::new(Agent::new(WorkerHost {
                state,
                store: crate::chunk_store::R2Store::from_env(&env).map(Rc::new),
                env,
                db,
                streams: Default::default(),
            })),
        }
    }

    async fn fetch(&self, req: Request) -> Result<Response> {
        // Only local development's Worker sends these (see `crate::fetch`).
        if req.path().starts_with(BARE_ROUND_TRIP) {
            return Response::empty();
        }
        // Only this Worker's egress loopback sends these (`crate::egress`).
        if req.path() == crate::egress::EGRESS_PATH {
            return crate::egress::send_on(&self.agent, req).await;
        }
        // A HEAD is served as its GET, then sent without the body.
        if req.method() == Method::Head {
            return without_body(self.serve(req).await?);
        }
        let response = self.serve(req).await;
        self.follow_terminals();
        response
    }

    async fn alarm(&self) -> Result<Response> {
        let ran = self.agent.alarm().await;
        self.follow_terminals();
        ran.map_err(|e| worker::Error::RustError(e.to_string()))?;
        Response::ok("ok")
    }

    async fn websocket_message(
        &self,
        ws: worker::WebSocket,
        message: worker::WebSocketIncomingMessage,
    ) -> Result<()> {
        let message = match message {
            worker::WebSocketIncomingMessage::String(text) => Incoming::Text(text),
            worker::WebSocketIncomingMessage::Binary(bytes) => Incoming::Binary(bytes),
        };
        self.agent.socket_message(&WorkerSocket(ws), message).await;
        self.follow_terminals();
        Ok(())
    }

    async fn websocket_close(
        &self,
        ws: worker::WebSocket,
        code: usize,
        _reason: String,
        _was_clean: bool,
    ) -> Result<()> {
        let code = u16::try_from(code).unwrap_or(1000);
        self.agent.socket_closed(&WorkerSocket(ws), code);
        Ok(())
    }

    async fn websocket_error(&self, _ws: worker::WebSocket, _error: worker::Error) -> Result<()> {
        Ok(())
    }
}

impl Workspace {
    /// Follows each computer terminal stream the agent opened, in a task
    /// of its own that lives as long as the stream.
    fn follow_terminals(&self) {
        for follower in self.agent.take_followers() {
            let agent = self.agent.clone();
            wasm_bindgen_futures::spawn_local(async move {
                agent.follow_terminal(follower).await;
            });
        }
    }

    /// Serves a request the Worker forwarded.
    async fn serve(&self, req: Request) -> Result<Response> {
        let started = performance_now();
        let (agent, action) = match route(&req, &self.agent.host().env) {
            Ok(routed) => routed,
            Err(error) => return error_response(&error),
        };
        if action == Action::Mcp {
            return match self.mcp_request(req, agent) {
                Ok(request) => respond_mcp(self.agent.mcp(request).await),
                Err(error) => error_response(&error),
            };
        }
        let request = match self.request(req, agent, action) {
            Ok(decoded) => decoded,
            Err(error) => return error_response(&error),
        };
        // Local development answers with where the time went
        // (`Server-Timing`); a deployment measures nothing.
        let (outcome, breakdown) = match crate::platform::local_development(&self.agent.host().env)
        {
            true => {
                let (outcome, breakdown) = self.agent.dispatch_timed(request).await;
                (outcome, Some(breakdown))
            }
            false => (self.agent.dispatch(request).await, None),
        };
        let response = match outcome {
            Ok(reply) => self.respond(reply),
            Err(error) => error_response(&error),
        };
        match breakdown {
            Some(breakdown) => {
                // `glue`: decoding the request and encoding the answer
                // here; `agent`: all the object spent on it.
                let total = performance_now() - started;
                let spent: f64 = breakdown.stages.iter().map(|stage| stage.ms).sum();
                let timing = format!(
                    "{}, glue;dur={:.3}, agent;dur={total:.3}",
                    breakdown.server_timing(),
                    (total - spent).max(0.0),
                );
                with_server_timing(response?, &timing)
            }
            None => response,
        }
    }

    /// Decodes a request the Worker forwarded (or, for a port, the
    /// admission the `Computer` object asks: see `crate::port_route`).
    fn request(
        &self,
        req: Request,
        agent: String,
        action: Action,
    ) -> std::result::Result<AgentRequest<RequestBody>, ApiError> {
        let url = req
            .url()
            .map_err(|e| ApiError::Internal(format!("request url: {e}")))?;
        let header = |name: &str| req.headers().get(name).ok().flatten();
        let caller = caller_of(&header);
        let upgrade = header("upgrade").is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
        let origin = url.origin().ascii_serialization();
        // A HEAD comes here as itself (its GET is served without the body),
        // and RFC 9110 defines range handling for GET only.
        let range = match req.method() {
            Method::Get => RangeHeaders {
                range: header("range"),
                if_range: header("if-range"),
            },
            _ => RangeHeaders::default(),
        };
        Ok(AgentRequest {
            entry: Entry::Http,
            agent,
            action,
            caller,
            query: url
                .query_pairs()
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
            hook: HookHeaders {
                secret: header(request::HOOK_SECRET_HEADER),
                timestamp: header(request::HOOK_TIMESTAMP_HEADER),
                signature: header(request::HOOK_SIGNATURE_HEADER),
                idempotency_key: header(request::IDEMPOTENCY_KEY_HEADER),
            },
            range,
            upgrade,
            origin,
            body: RequestBody::new(req)?,
        })
    }

    /// Decodes a request to the MCP endpoint.
    fn mcp_request(
        &self,
        req: Request,
        agent: String,
    ) -> std::result::Result<McpRequest<RequestBody>, ApiError> {
        let url = req
            .url()
            .map_err(|e| ApiError::Internal(format!("request url: {e}")))?;
        let header = |name: &str| req.headers().get(name).ok().flatten();
        let method = match req.method() {
            Method::Get => HttpMethod::Get,
            Method::Delete => HttpMethod::Delete,
            _ => HttpMethod::Post,
        };
        let origins = mcp_origins(&self.agent.host().env, &url);
        Ok(McpRequest {
            agent,
            caller: caller_of(&header),
            method,
            headers: McpHeaders::read(header),
            origins,
            body: RequestBody::new(req)?,
        })
    }

    /// Encodes the agent's reply.
    fn respond(&self, reply: Reply) -> Result<Response> {
        match reply {
            Reply::Json {
                status,
                body,
                headers,
            } => with_headers(json_response(status, &body)?, &headers),
            Reply::File {
                path,
                status,
                headers,
                length,
                slices,
            } => {
                let db = self.agent.host().db.clone();
                let store = self.agent.host().store.clone();
                // A chunk in the object store is read from there, verified,
                // and left there.
                let body = futures::stream::iter(slices).then(move |slice| {
                    let (db, store, path) = (db.clone(), store.clone(), path.clone());
                    async move {
                        let vfs = Vfs::new(&db, 0);
                        let bytes = match store {
                            Some(store) => {
                                let id = slice.id;
                                stead_vfs::tier::read_chunk(&vfs, &*store, id, path.as_str()).await
                            }
                            None => vfs.chunk(slice.id, &path),
                        };
                        let bytes = bytes.map_err(|e| worker::Error::RustError(e.to_string()))?;
                        slice.of(bytes).map_err(worker::Error::RustError)
                    }
                });
                // A stream of a known length, so the runtime sends the
                // Content-Length rather than chunks.
                let fixed: worker::worker_sys::FixedLengthStream =
                    worker::FixedLengthStream::wrap(body, length).into();
                let response = Response::from_body(ResponseBody::Stream(fixed.readable()))?;
                with_headers(response.with_status(status), &headers)
            }
            Reply::Socket(state) => {
                let pair = WebSocketPair::new()?;
                let host = self.agent.host();
                // A bare keepalive ping is answered by the runtime itself,
                // without waking the agent.
                let pong = worker::worker_sys::WebSocketRequestResponsePair::new(PING, PONG)?;
                host.state.set_websocket_auto_response(&pong);
                host.state.accept_web_socket(&pair.server);
                let socket = WorkerSocket(pair.server);
                stead_agent::Socket::save(&socket, &state);
                // A terminal's output starts at once, before any frame of
                // the client's.
                self.agent.socket_accepted(&socket);
                Response::from_websocket(pair.client)
            }
        }
    }
}

/// The origins that may call the MCP endpoint (comma-separated), for
/// browser-based clients.
const ALLOWED_ORIGINS_VAR: &str = "MCP_ALLOWED_ORIGINS";

/// The origins that may call the MCP endpoint at `url`: those the variable
/// lists, beside the endpoint's own (which links are built on; see
/// `Origins`). Read by the Worker for preflights and refusals, and by the
/// agent's object for everything else.
pub(crate) fn mcp_origins(env: &Env, url: &worker::Url) -> Origins {
    let listed = env.var(ALLOWED_ORIGINS_VAR).ok().map(|v| v.to_string());
    Origins::new(url.origin().ascii_serialization(), listed.as_deref())
}

/// Routes a request by its host, method and path (`stead_agent::front`):
/// the Worker and the agent's object route alike.
pub(crate) fn route_on_front(
    env: &Env,
    method: &Method,
    url: &worker::Url,
) -> std::result::Result<Route, ApiError> {
    let ports_host = env
        .var(stead_agent::front::PORTS_HOST_VAR)
        .ok()
        .map(|host| host.to_string());
    stead_agent::front::route(
        method.as_ref(),
        url.host_str().unwrap_or_default(),
        url.path(),
        ports_host.as_deref(),
    )
}

/// The agent and action a request the Worker forwarded is for.
fn route(req: &Request, env: &Env) -> std::result::Result<(String, Action), ApiError> {
    let url = req
        .url()
        .map_err(|e| ApiError::Internal(format!("request url: {e}")))?;
    match route_on_front(env, &req.method(), &url)? {
        Route::Agent { id, action } => Ok((id, action)),
        Route::Health
        | Route::MintToken
        | Route::RevokeToken
        | Route::Tools
        | Route::Agents
        | Route::Inspector
        | Route::Session(_) => Err(ApiError::Internal(
            "this route is answered by the Worker".into(),
        )),
    }
}

/// The caller, from the headers the Worker set.
fn caller_of(header: &impl Fn(&str) -> Option<String>) -> Caller {
    Caller::from_headers(
        header(auth::ACTOR_HEADER).as_deref(),
        header(auth::SCOPES_HEADER).as_deref(),
        header(auth::EXPIRES_HEADER).as_deref(),
    )
}

/// Encodes the MCP endpoint's reply; an event stream's body is the channel
/// the agent keeps writing to.
pub(crate) fn respond_mcp(reply: McpReply<WorkerStream>) -> Result<Response> {
    let McpReply {
        status,
        headers: extra,
        body,
    } = reply;
    let headers = Headers::new();
    for (name, value) in &extra {
        headers.set(name, value)?;
    }
    let response = match body {
        McpBody::Empty => Response::empty()?,
        McpBody::Json(json) => {
            headers.set("content-type", "application/json")?;
            Response::from_bytes(json.to_string().into_bytes())?
        }
        McpBody::Events(text) => Response::from_bytes(text.into_bytes())?,
        McpBody::Stream(stream) => match stream.body() {
            Some(body) => Response::from_stream(body.map(Ok::<Vec<u8>, worker::Error>))?,
            None => Response::error("the event stream was already answered", 500)?,
        },
    };
    Ok(response.with_status(status).with_headers(headers))
}

/// The answer to a HEAD: the GET's status and headers, without its body
/// (a file's `content-length` stays its size).
fn without_body(response: Response) -> Result<Response> {
    Ok(Response::empty()?
        .with_status(response.status_code())
        .with_headers(response.headers().clone()))
}

/// A JSON response with `status`.
pub(crate) fn json_response(status: u16, body: &serde_json::Value) -> Result<Response> {
    Ok(Response::from_json(body)?.with_status(status))
}

/// The response for a failed request; a failure of the agent's own is
/// logged whole (its answer names only what failed).
pub(crate) fn error_response(error: &ApiError) -> Result<Response> {
    if error.status() >= 500 {
        worker::console_error!("{error}");
    }
    with_headers(
        json_response(error.status(), &error.body())?,
        &error.headers(),
    )
}

/// `response` with `headers` set.
fn with_headers(mut response: Response, headers: &[(&str, String)]) -> Result<Response> {
    for (name, value) in headers {
        response.headers_mut().set(name, value)?;
    }
    Ok(response)
}

/// `response` with `timing` added to its `Server-Timing` (a WebSocket's
/// upgrade is passed on as it is). Its headers are copied: a response from
/// another fetch has immutable ones.
pub(crate) fn with_server_timing(response: Response, timing: &str) -> Result<Response> {
    if response.status_code() == 101 {
        return Ok(response);
    }
    let headers = Headers::new();
    for (name, value) in response.headers().entries() {
        headers.append(&name, &value)?;
    }
    headers.append("server-timing", timing)?;
    Ok(response.with_headers(headers))
}
