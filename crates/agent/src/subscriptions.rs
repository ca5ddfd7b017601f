//! Where job output and change events are sent: what each WebSocket has
//! subscribed to, and the pushes that follow.
//!
//! Nothing about a socket is kept in memory: its subscriptions are its
//! attachment ([`SocketState`]), which the platform stores with the socket,
//! so a hibernated agent wakes knowing who wants what.
//!
//! **No piece lost or doubled.** Output pieces have fixed byte offsets.
//! Subscribing sends the stored backlog from the asked offset to the current
//! end and records the subscription in the same synchronous step; a piece
//! appended later is pushed live by `crate::runner::JobSink`, also
//! synchronously with its append. The agent runs one event's synchronous
//! code at a time, so every piece is either in the backlog or pushed live,
//! never both and never neither. The same holds for change events, which
//! are sent page by page until the subscriber has every change up to the
//! current revision.

use serde_json::Value;
use stead_scheduler::{Job, Jobs, Piece};
use stead_sql::Sql;
use stead_vfs::Vfs;

use crate::agent::Agent;
use crate::error::ApiError;
use crate::host::{Host, Socket};
use crate::protocol::{self as schema, SocketState};
use crate::scheduling;

/// Largest backlog page of job output read at once.
const BACKLOG_PAGE: usize = 256 << 10;
/// Change events read from the log at once.
pub(crate) const CHANGES_PAGE: usize = 10_000;

fn state_of(socket: &impl Socket) -> SocketState {
    socket.state().unwrap_or_default()
}

fn send(socket: &impl Socket, message: &Value) {
    socket.send(&message.to_string());
}

/// Pushes freshly appended pieces of `job` to the sockets that want them.
pub fn broadcast_output<H: Host>(agent: &Agent<H>, job: i64, pieces: &[Piece]) {
    if pieces.is_empty() {
        return;
    }
    let sockets = open_sockets(agent);
    if sockets.is_empty() {
        return;
    }
    let messages: Vec<String> = pieces
        .iter()
        .map(|p| scheduling::piece_json(job, p).to_string())
        .collect();
    for socket in sockets {
        if state_of(&socket).wants_job(job) {
            for message in &messages {
                socket.send(message);
            }
        }
    }
}

/// Tells the sockets following `job` that it ended, and drops their
/// subscription to it.
pub fn broadcast_job_end<H: Host>(agent: &Agent<H>, job: &Job) {
    let message = scheduling::job_end_json(job);
    for socket in open_sockets(agent) {
        let mut state = state_of(&socket);
        if state.wants_job(job.id) {
            send(&socket, &message);
            if let Some(at) = state.jobs.iter().position(|j| *j == job.id) {
                state.jobs.remove(at);
                socket.save(&state);
            }
        }
    }
}

/// Sends each change-subscribed socket the changes it has not seen, and
/// each MCP event stream the notifications they call for.
pub fn notify_changes<H: Host>(agent: &Agent<H>) {
    crate::mcp::notify::notify_streams(agent);
    let sockets = open_sockets(agent);
    if sockets.is_empty() {
        return;
    }
    let vfs = Vfs::new(agent.db(), agent.now_ms());
    let Ok(revision) = vfs.revision() else {
        return;
    };
    for socket in sockets {
        let mut state = state_of(&socket);
        match state.changes {
            Some(seen) if seen < revision => {
                state.changes = send_changes(&socket, &vfs, seen, &Value::Null);
                socket.save(&state);
            }
            _ => {}
        }
    }
}

/// Sends every change after `since`, page by page; returns the revision
/// now seen, or `None` (after an error message) when they were pruned or
/// could not be read.
pub(crate) fn send_changes<S: Sql>(
    socket: &impl Socket,
    vfs: &Vfs<'_, S>,
    since: i64,
    id: &Value,
) -> Option<i64> {
    let mut after = None;
    loop {
        match vfs.changes_page(since, after, CHANGES_PAGE) {
            Ok(Some(page)) => {
                for change in &page.changes {
                    send(socket, &schema::change_json(change));
                }
                match page.next {
                    Some(next) => after = Some(next),
                    // Caught up: every revision up to now is seen (the last
                    // ones may have left no change rows).
                    None => return vfs.revision().ok(),
                }
            }
            Ok(None) => {
                send(
                    socket,
                    &schema::error_json(id, &ApiError::ChangesPruned { since }),
                );
                return None;
            }
            Err(error) => {
                send(socket, &schema::error_json(id, &error.into()));
                return None;
            }
        }
    }
}

/// Sends the stored output of `job` from `from` to its current end, then
/// records the subscription, or ends it with `job_end` if the job is done.
pub(crate) fn send_backlog<H: Host>(
    agent: &Agent<H>,
    socket: &H::Socket,
    state: &mut SocketState,
    job: i64,
    from: i64,
) -> Result<(), ApiError> {
    let jobs = Jobs::new(agent.db());
    let mut at = from;
    loop {
        let page = jobs.output(job, at, BACKLOG_PAGE)?;
        for piece in &page.pieces {
            send(socket, &scheduling::piece_json(job, piece));
        }
        if page.done {
            send(socket, &scheduling::job_end_json(&page.job));
            return Ok(());
        }
        if page.next == page.job.output_bytes {
            if !state.jobs.contains(&job) {
                state.jobs.push(job);
                socket.save(state);
            }
            return Ok(());
        }
        at = page.next;
    }
}

/// The close code for a socket whose token expired or was revoked (the
/// 4000s mirror HTTP statuses, as 4404 does for a deleted agent).
const CREDENTIAL_GONE: u16 = 4401;

/// The agent's sockets whose opener's token has not expired; the others
/// are told why and closed. Everything pushed goes through here, so nothing
/// reaches a socket after its token expired (a revoked token's sockets were
/// closed when it was revoked: [`close_token`]).
fn open_sockets<H: Host>(agent: &Agent<H>) -> Vec<H::Socket> {
    let mut open = Vec::new();
    for socket in agent.host.sockets() {
        match agent.token_unexpired(&state_of(&socket).caller) {
            Ok(()) => open.push(socket),
            Err(error) => end_socket(&socket, &Value::Null, &error),
        }
    }
    open
}

/// Tells `socket` its credential no longer holds (`error`, in answer to
/// message `id` if one was asked) and closes it.
pub(crate) fn end_socket(socket: &impl Socket, id: &Value, error: &ApiError) {
    let message = match state_of(socket).terminal {
        Some(_) => schema::terminal_error_json(error),
        None => schema::error_json(id, error),
    };
    send(socket, &message);
    socket.close(CREDENTIAL_GONE, error.code());
}

/// Closes the sockets and event streams opened with token `id` (it was
/// revoked).
pub fn close_token<H: Host>(agent: &Agent<H>, id: &str) {
    crate::mcp::notify::close_token_streams(agent, id);
    for socket in agent.host.sockets() {
        if state_of(&socket).caller.token_id() == Some(id) {
            end_socket(&socket, &Value::Null, &ApiError::TokenRevoked);
        }
    }
}

/// Closes every socket and event stream (the agent was deleted).
pub fn close_all<H: Host>(agent: &Agent<H>) {
    crate::mcp::notify::close_streams(agent);
    for socket in agent.host.sockets() {
        socket.close(4404, "agent deleted");
    }
}
