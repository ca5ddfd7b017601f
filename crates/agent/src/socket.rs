//! Where a WebSocket message is answered: subscriptions, pings, and tool
//! calls, which go through the same dispatch as HTTP.

use serde_json::{json, Value};
use stead_scheduler::Jobs;
use stead_vfs::Vfs;

use crate::agent::Agent;
use crate::error::ApiError;
use crate::host::{Host, Socket};
use crate::protocol::{error_json, parse, reply_json, ClientMessage, SocketState};
use crate::request::{Bytes, Entry, HookHeaders, Reply, Request};
use crate::route::{Action, Tool};
use crate::subscriptions::{send_backlog, send_changes};

/// A message as the platform delivers it.
pub enum Incoming {
    Text(String),
    Binary(Vec<u8>),
}

impl<H: Host> Agent<H> {
    /// A message from a client: answered on the socket, never failing the
    /// socket itself.
    pub async fn socket_message(&self, socket: &H::Socket, message: Incoming) {
        let state = socket.state().unwrap_or_default();
        if let Some(terminal) = state.terminal.clone() {
            if let Err(error) = self.open(Some(&state.agent), false) {
                socket.close(4404, error.code());
                return;
            }
            return self
                .terminal_message(socket, state, terminal, message)
                .await;
        }
        let text = match message {
            Incoming::Text(text) => text,
            Incoming::Binary(_) => {
                let error = ApiError::InvalidRequest("send JSON text messages, not binary".into());
                return send(socket, &error_json(&Value::Null, &error));
            }
        };
        let request = match parse(&text) {
            Ok(request) => request,
            Err((id, error)) => return send(socket, &error_json(&id, &error)),
        };
        let id = request.id().clone();
        if let Err(error) = self.open(Some(&state.agent), false) {
            send(socket, &error_json(&id, &error));
            socket.close(4404, "agent not found");
            return;
        }
        // The token that opened the socket may have expired or been
        // revoked since: then the socket ends here, whatever was asked.
        if let Err(error) = self.token_holds(&state.caller) {
            return crate::subscriptions::end_socket(socket, &id, &error);
        }
        if let Err(error) = self.serve_socket(socket, state, request).await {
            send(socket, &error_json(&id, &error));
        }
    }

    /// The client closed: close our side too (with a code we may send).
    pub fn socket_closed(&self, socket: &H::Socket, code: u16) {
        let code = match code {
            1000 | 1001 | 3000..=4999 => code,
            _ => 1000,
        };
        socket.close(code, "closed");
    }

    async fn serve_socket(
        &self,
        socket: &H::Socket,
        mut state: SocketState,
        request: ClientMessage,
    ) -> Result<(), ApiError> {
        let id = request.id().clone();
        match request {
            ClientMessage::Ping { .. } => send(socket, &reply_json(&id, "pong", json!({}))),
            ClientMessage::SubscribeJob { job, from, .. } => {
                let jobs = Jobs::new(self.db());
                let from = match from {
                    Some(from) => from,
                    None => jobs.get(job)?.kept_from,
                };
                // Check the offset before answering, so a bad one is an error.
                jobs.output(job, from, 0)?;
                let fields = json!({ "job": job, "from": from });
                send(socket, &reply_json(&id, "subscribed", fields));
                send_backlog(self, socket, &mut state, job, from)?;
            }
            ClientMessage::UnsubscribeJob { job, .. } => {
                state.jobs.retain(|j| *j != job);
                socket.save(&state);
                send(
                    socket,
                    &reply_json(&id, "unsubscribed", json!({ "job": job })),
                );
            }
            ClientMessage::SubscribeJobs { .. } => {
                state.all_jobs = true;
                socket.save(&state);
                send(
                    socket,
                    &reply_json(&id, "subscribed", json!({ "jobs": "all" })),
                );
            }
            ClientMessage::SubscribeChanges { since, .. } => {
                let vfs = Vfs::new(self.db(), self.now_ms());
                let since = match since {
                    Some(since) => since,
                    None => vfs.revision()?,
                };
                if vfs.changes_since(since, 0)?.is_none() {
                    return Err(ApiError::ChangesPruned { since });
                }
                send(
                    socket,
                    &reply_json(&id, "subscribed", json!({ "changes": since })),
                );
                state.changes = send_changes(socket, &vfs, since, &id);
                socket.save(&state);
            }
            ClientMessage::UnsubscribeChanges { .. } => {
                state.changes = None;
                socket.save(&state);
                send(
                    socket,
                    &reply_json(&id, "unsubscribed", json!({ "changes": true })),
                );
            }
            ClientMessage::Call { tool, args, .. } => {
                let result = self.socket_call(&state, &tool, args).await?;
                send(
                    socket,
                    &reply_json(&id, "result", json!({ "result": result })),
                );
            }
        }
        Ok(())
    }

    /// A tool call over the socket: a file tool, or `exec` (`detach`
    /// allowed), dispatched like the same call over HTTP with the scopes of
    /// whoever opened the socket.
    async fn socket_call(
        &self,
        state: &SocketState,
        tool: &str,
        args: Value,
    ) -> Result<Value, ApiError> {
        let action = match tool {
            "exec" => Action::Exec,
            "checkpoint" => Action::CheckpointCreate,
            "diff" => Action::Diff,
            "restore" => Action::Restore,
            "undo" => Action::Undo,
            name => Action::Tool(Tool::from_name(name).ok_or_else(|| {
                let names: Vec<&str> = Tool::ALL.iter().map(|t| t.name()).collect();
                ApiError::InvalidRequest(format!(
                    "unknown tool {name:?}; use exec, checkpoint, diff, restore, undo or one of {}",
                    names.join(", ")
                ))
            })?),
        };
        let body = serde_json::to_vec(&args).map_err(|e| ApiError::Internal(e.to_string()))?;
        let request = Request {
            entry: Entry::Socket,
            agent: state.agent.clone(),
            action,
            caller: state.caller.clone(),
            query: Vec::new(),
            hook: HookHeaders::default(),
            range: Default::default(),
            origin: String::new(),
            upgrade: false,
            body: Bytes(body),
        };
        match self.dispatch(request).await? {
            Reply::Json { body, .. } => Ok(body),
            Reply::File { .. } | Reply::Socket(_) => Err(ApiError::Internal(format!(
                "{tool} does not answer in JSON"
            ))),
        }
    }
}

fn send(socket: &impl Socket, message: &Value) {
    socket.send(&message.to_string());
}
