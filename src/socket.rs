//! WebSockets on the Durable Object, with the hibernation API.
//!
//! Sockets are accepted with `state.acceptWebSocket`, so an idle client
//! costs nothing: the runtime may evict the object from memory and wake it
//! (a fresh instance) for the next message. Nothing about a socket is kept
//! in memory: its subscriptions are its attachment (`SocketState`), which
//! the runtime stores with the socket. The message schema is in
//! `crate::api::socket`.
//!
//! **No piece lost or doubled.** Output pieces have fixed byte offsets.
//! Subscribing sends the stored backlog from the asked offset to the current
//! end and records the subscription in the same synchronous step; a piece
//! appended later is pushed live by `crate::jobs::JobSink`, also
//! synchronously with its append. The object runs one event's synchronous
//! code at a time, so every piece is either in the backlog or pushed live,
//! never both and never neither. A client that drops resubscribes from the
//! end of the last piece it got.

use serde_json::{json, Value};
use stead_scheduler::{Job, Jobs, Piece};
use stead_vfs::Vfs;
use worker::{Request, Response, WebSocket, WebSocketIncomingMessage, WebSocketPair};

use crate::api::auth::{self, Caller, Scope};
use crate::api::jobs as japi;
use crate::api::socket::{self as schema, ClientMessage, SocketState};
use crate::api::{self, audit, ApiError};
use crate::computer;
use crate::workspace::{now_ms, Workspace};

/// Largest backlog page read at once.
const BACKLOG_PAGE: usize = 256 << 10;
/// Most change events sent in one catch-up.
const MAX_CHANGES: usize = 100_000;
/// The keepalive the runtime answers on the agent's behalf (exactly this
/// text; a ping with an `id` reaches the agent and is answered there).
pub const PING: &str = r#"{"type":"ping"}"#;
pub const PONG: &str = r#"{"type":"pong"}"#;

/// Accepts `GET /agents/{id}/ws` as a hibernatable WebSocket.
pub fn accept(
    ws: &Workspace,
    agent: &str,
    req: &Request,
    caller: &Caller,
) -> Result<Response, ApiError> {
    let upgrade = req.headers().get("upgrade")?.unwrap_or_default();
    if !upgrade.eq_ignore_ascii_case("websocket") {
        return Err(ApiError::UpgradeRequired);
    }
    let pair = WebSocketPair::new()?;
    // A bare keepalive ping is answered by the runtime itself, without
    // waking the agent.
    let pong = worker::worker_sys::WebSocketRequestResponsePair::new(PING, PONG)?;
    ws.state().set_websocket_auto_response(&pong);
    ws.state().accept_web_socket(&pair.server);
    save(
        &pair.server,
        &SocketState {
            agent: agent.to_string(),
            caller: caller.clone(),
            ..SocketState::default()
        },
    );
    Ok(Response::from_websocket(pair.client)?)
}

fn state_of(socket: &WebSocket) -> SocketState {
    socket
        .deserialize_attachment::<SocketState>()
        .ok()
        .flatten()
        .unwrap_or_default()
}

fn save(socket: &WebSocket, state: &SocketState) {
    if let Err(error) = socket.serialize_attachment(state) {
        worker::console_error!("socket attachment not saved: {error}");
    }
}

fn send(socket: &WebSocket, message: &Value) {
    // A socket closing under us is not an error of the agent's.
    let _ = socket.send_with_str(message.to_string());
}

/// Pushes freshly appended pieces of `job` to the sockets that want them.
pub fn broadcast_output(ws: &Workspace, job: i64, pieces: &[Piece]) {
    if pieces.is_empty() {
        return;
    }
    let sockets = ws.state().get_websockets();
    if sockets.is_empty() {
        return;
    }
    let messages: Vec<String> = pieces
        .iter()
        .map(|p| japi::piece_json(job, p).to_string())
        .collect();
    for socket in sockets {
        if state_of(&socket).wants_job(job) {
            for message in &messages {
                let _ = socket.send_with_str(message);
            }
        }
    }
}

/// Tells the sockets following `job` that it ended, and drops their
/// subscription to it.
pub fn broadcast_job_end(ws: &Workspace, job: &Job) {
    let message = japi::job_end_json(job);
    for socket in ws.state().get_websockets() {
        let mut state = state_of(&socket);
        if state.wants_job(job.id) {
            send(&socket, &message);
            if let Some(at) = state.jobs.iter().position(|j| *j == job.id) {
                state.jobs.remove(at);
                save(&socket, &state);
            }
        }
    }
}

/// Sends each change-subscribed socket the changes it has not seen.
pub fn notify_changes(ws: &Workspace) {
    let sockets = ws.state().get_websockets();
    if sockets.is_empty() {
        return;
    }
    let vfs = Vfs::new(ws.db(), now_ms());
    let Ok(revision) = vfs.revision() else {
        return;
    };
    for socket in sockets {
        let mut state = state_of(&socket);
        match state.changes {
            Some(seen) if seen < revision => {
                state.changes = send_changes(&socket, &vfs, seen, &serde_json::Value::Null);
                save(&socket, &state);
            }
            _ => {}
        }
    }
}

/// Sends changes after `since`; the revision now seen, or `None` (and an
/// error message) when they were pruned.
fn send_changes(
    socket: &WebSocket,
    vfs: &Vfs<'_, crate::do_sql::DoSql>,
    since: i64,
    id: &Value,
) -> Option<i64> {
    let revision = vfs.revision().ok()?;
    match vfs.changes_since(since, MAX_CHANGES) {
        Ok(Some(changes)) => {
            for change in &changes {
                send(socket, &schema::change_json(change));
            }
            Some(revision.max(changes.last().map_or(since, |c| c.revision)))
        }
        Ok(None) => {
            send(
                socket,
                &schema::error_json(id, &ApiError::ChangesPruned { since }),
            );
            None
        }
        Err(error) => {
            send(socket, &schema::error_json(id, &error.into()));
            None
        }
    }
}

/// A message from a client.
pub async fn message(ws: &Workspace, socket: WebSocket, message: WebSocketIncomingMessage) {
    let text = match message {
        WebSocketIncomingMessage::String(text) => text,
        WebSocketIncomingMessage::Binary(_) => {
            let error = ApiError::InvalidRequest("send JSON text messages, not binary".into());
            return send(&socket, &schema::error_json(&Value::Null, &error));
        }
    };
    let request = match schema::parse(&text) {
        Ok(request) => request,
        Err((id, error)) => return send(&socket, &schema::error_json(&id, &error)),
    };
    let id = request.id().clone();
    let state = state_of(&socket);
    if let Err(error) = ws.open(&state.agent, false) {
        send(&socket, &schema::error_json(&id, &error));
        let _ = socket.close(Some(4404), Some("agent not found"));
        return;
    }
    if let Err(error) = serve(ws, &socket, state, request).await {
        send(&socket, &schema::error_json(&id, &error));
    }
}

async fn serve(
    ws: &Workspace,
    socket: &WebSocket,
    mut state: SocketState,
    request: ClientMessage,
) -> Result<(), ApiError> {
    let id = request.id().clone();
    match request {
        ClientMessage::Ping { .. } => send(socket, &schema::reply_json(&id, "pong", json!({}))),
        ClientMessage::SubscribeJob { job, from, .. } => {
            let jobs = Jobs::new(ws.db());
            let record = jobs.get(job)?;
            let mut at = from.unwrap_or(record.kept_from);
            // Check the offset before answering, so a bad one is an error.
            jobs.output(job, at, 0)?;
            send(
                socket,
                &schema::reply_json(&id, "subscribed", json!({ "job": job, "from": at })),
            );
            loop {
                let page = jobs.output(job, at, BACKLOG_PAGE)?;
                for piece in &page.pieces {
                    send(socket, &japi::piece_json(job, piece));
                }
                if page.done {
                    send(socket, &japi::job_end_json(&page.job));
                    break;
                }
                if page.next == page.job.output_bytes {
                    if !state.jobs.contains(&job) {
                        state.jobs.push(job);
                        save(socket, &state);
                    }
                    break;
                }
                at = page.next;
            }
        }
        ClientMessage::UnsubscribeJob { job, .. } => {
            state.jobs.retain(|j| *j != job);
            save(socket, &state);
            send(
                socket,
                &schema::reply_json(&id, "unsubscribed", json!({ "job": job })),
            );
        }
        ClientMessage::SubscribeJobs { .. } => {
            state.all_jobs = true;
            save(socket, &state);
            send(
                socket,
                &schema::reply_json(&id, "subscribed", json!({ "jobs": "all" })),
            );
        }
        ClientMessage::SubscribeChanges { since, .. } => {
            let vfs = Vfs::new(ws.db(), now_ms());
            let since = match since {
                Some(since) => since,
                None => vfs.revision()?,
            };
            if vfs.changes_since(since, 0)?.is_none() {
                return Err(ApiError::ChangesPruned { since });
            }
            send(
                socket,
                &schema::reply_json(&id, "subscribed", json!({ "changes": since })),
            );
            state.changes = send_changes(socket, &vfs, since, &id);
            save(socket, &state);
        }
        ClientMessage::UnsubscribeChanges { .. } => {
            state.changes = None;
            save(socket, &state);
            send(
                socket,
                &schema::reply_json(&id, "unsubscribed", json!({ "changes": true })),
            );
        }
        ClientMessage::Call { tool, args, .. } => {
            let result = call(ws, &state.agent, &state.caller, &tool, args).await;
            notify_changes(ws);
            let result = result?;
            send(
                socket,
                &schema::reply_json(&id, "result", json!({ "result": result })),
            );
        }
    }
    Ok(())
}

/// A tool call over the socket: a file tool, or `exec` (`detach` allowed),
/// with the scopes of whoever opened the socket, audited like the same call
/// over HTTP.
async fn call(
    ws: &Workspace,
    agent: &str,
    caller: &Caller,
    tool: &str,
    args: Value,
) -> Result<Value, ApiError> {
    if !crate::jobs::socket_tool(tool) {
        return Err(ApiError::InvalidRequest(format!(
            "unknown tool {tool:?}; use exec or one of {}",
            api::tools::TOOLS.join(", ")
        )));
    }
    let body = serde_json::to_vec(&args).map_err(|e| ApiError::Internal(e.to_string()))?;
    if let Some(token) = caller.token_id() {
        if auth::is_revoked(ws.db(), token)? {
            return Err(ApiError::TokenRevoked);
        }
    }
    let (scope, name) = if tool == "exec" {
        if api::exec::needs_computer(&body) {
            caller.require(Scope::ExecComputer)?;
        }
        (Scope::ExecShell, "exec")
    } else {
        (auth::tool_scope(tool), tool)
    };
    caller.require(scope)?;
    let result = if tool == "exec" {
        match crate::jobs::exec_or_detach(ws, "socket", body.clone()).await? {
            Ok(job) => Ok(json!({ "job": japi::job_json(&job) })),
            Err(body) => ws.exec(agent, &body, &computer::Discard).await,
        }
    } else {
        api::tools::call(&ws.vfs(), tool, &body)
    };
    if scope != Scope::Read {
        ws.audit(caller, name, audit::target_of(&body).as_deref(), &result);
    }
    result
}

/// The client closed: close our side too (with a code we may send).
pub fn closed(socket: WebSocket, code: usize) {
    let code = match code {
        1000 | 1001 | 3000..=4999 => code as u16,
        _ => 1000,
    };
    let _ = socket.close(Some(code), Some("closed"));
}

/// Closes every socket (the agent was deleted).
pub fn close_all(ws: &Workspace) {
    for socket in ws.state().get_websockets() {
        let _ = socket.close(Some(4404), Some("agent deleted"));
    }
}
