//! Where MCP change notifications are sent: from the change log to each
//! open event stream, by the same call that notifies WebSocket subscribers
//! (`crate::subscriptions::notify_changes`, after every dispatched request
//! and every job).
//!
//! **Nothing lost or doubled.** A stream's [`Cursor`] is the position in
//! the change log it has been brought up to; each push reads the log from
//! there, sends what the stream's subscriptions ask for, and moves the
//! cursor, all in one synchronous step (the agent runs one event's
//! synchronous code at a time). Every notification carries the position
//! of the change it reports (an SSE `id` on a 2025-11-25 session stream,
//! `_meta["stead/cursor"]` in both revisions), so a client that lost its
//! stream reopens it from the last one it saw and gets everything after:
//! `Last-Event-ID` on the session's GET (2025-11-25), or the same key in
//! the `_meta` of a new `subscriptions/listen` (2026-07-28, which has no
//! SSE resumption of its own). When the log no longer reaches back that
//! far (it keeps 65,536 revisions), the stream is told everything may have
//! changed: `list_changed` and an update of each subscribed resource.

use std::collections::BTreeSet;

use serde_json::{json, Value};
use stead_sql::Sql;
use stead_vfs::{Change, ChangeKind, Vfs};

use crate::agent::Agent;
use crate::host::{EventStream, Host};
use crate::mcp::jsonrpc::notification;
use crate::mcp::listen::{Channel, Cursor, ListenState};
use crate::mcp::resources::{concerns, uri_of};
use crate::mcp::resume::Positions;
use crate::mcp::revision::{CURSOR_KEY, SUBSCRIPTION_ID_KEY};
use crate::mcp::sse;

/// Change log entries read at once.
const PAGE: usize = 10_000;

/// Sends every open stream the notifications its new changes call for.
pub fn notify_streams<H: Host>(agent: &Agent<H>) {
    let streams = agent.host.streams();
    if streams.is_empty() {
        return;
    }
    let vfs = Vfs::new(agent.db(), agent.now_ms());
    let Ok(revision) = vfs.revision() else {
        return;
    };
    let positions = Positions::new(agent.db(), agent.now_ms());
    for stream in streams {
        let mut state = stream.state();
        if agent.token_unexpired(&state.caller).is_err() {
            // Its token expired since it was opened (a revocation closed
            // its streams then: `close_token_streams`).
            stream.close();
            continue;
        }
        let before = state.cursor;
        if before == Cursor::after(revision) {
            continue;
        }
        if catch_up(&stream, &vfs, &mut state) {
            stream.save(&state);
            // One push behind, so the one in flight is sent again if this
            // stream turns out to have died (see `crate::mcp::resume`). A
            // position not kept costs only that resumption, not the stream.
            if let Channel::Listen { listener, .. } = &state.channel {
                let _ = positions.record(listener, before);
            }
        } else {
            stream.close();
        }
    }
}

/// Closes every stream (the agent was deleted).
pub fn close_streams<H: Host>(agent: &Agent<H>) {
    for stream in agent.host.streams() {
        stream.close();
    }
}

/// Closes the streams opened with token `id` (it was revoked).
pub fn close_token_streams<H: Host>(agent: &Agent<H>, id: &str) {
    for stream in agent.host.streams() {
        if stream.state().caller.token_id() == Some(id) {
            stream.close();
        }
    }
}

/// Sends `stream` the notifications for the changes after its cursor and
/// moves the cursor to the end of the log; `false` when the client has gone.
pub fn catch_up<S: Sql>(
    stream: &impl EventStream,
    vfs: &Vfs<'_, S>,
    state: &mut ListenState,
) -> bool {
    let start = state.cursor;
    let since = match start.index {
        Some(_) => start.revision - 1,
        None => start.revision,
    };
    let mut after = None;
    let mut told_list_changed = false;
    let (mut revision, mut index) = (i64::MIN, 0usize);
    loop {
        let page = match vfs.changes_page(since, after, PAGE) {
            Ok(Some(page)) => page,
            Ok(None) => return resync(stream, vfs, state),
            // Storage failed: try again with the next change.
            Err(_) => return true,
        };
        for change in &page.changes {
            if change.revision == revision {
                index += 1;
            } else {
                (revision, index) = (change.revision, 0);
            }
            let seen = start
                .index
                .is_some_and(|seen| revision == start.revision && index <= seen);
            if seen {
                continue;
            }
            let cursor = Cursor {
                revision,
                index: Some(index),
            };
            let messages = messages_for(state, change, &mut told_list_changed);
            if !send_all(stream, state, cursor, messages) {
                return false;
            }
            state.cursor = cursor;
        }
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    if let Ok(now) = vfs.revision() {
        state.cursor = Cursor::after(now);
    }
    true
}

/// The notifications one change calls for on a stream.
fn messages_for(
    state: &ListenState,
    change: &Change,
    told_list_changed: &mut bool,
) -> Vec<(String, Value)> {
    let mut messages = Vec::new();
    let uris: BTreeSet<String> = state
        .resources
        .iter()
        .filter_map(|watched| concerns(watched, &change.path))
        .collect();
    for uri in uris {
        messages.push((
            "notifications/resources/updated".to_string(),
            json!({ "uri": uri }),
        ));
    }
    let lists = !matches!(change.kind, ChangeKind::Modified);
    if state.list_changed && lists && !*told_list_changed {
        *told_list_changed = true;
        messages.push((
            "notifications/resources/list_changed".to_string(),
            json!({}),
        ));
    }
    messages
}

/// Sends `messages` at `cursor`; the last carries the SSE id, so a client
/// resuming after it gets none of them again, and one resuming before it
/// gets only the ones of that change again.
fn send_all(
    stream: &impl EventStream,
    state: &ListenState,
    cursor: Cursor,
    messages: Vec<(String, Value)>,
) -> bool {
    let count = messages.len();
    for (at, (method, mut params)) in messages.into_iter().enumerate() {
        let mut meta = json!({ CURSOR_KEY: cursor.to_string() });
        let id = match &state.channel {
            Channel::Session { .. } => (at + 1 == count).then(|| cursor.to_string()),
            Channel::Listen { subscription, .. } => {
                meta[SUBSCRIPTION_ID_KEY] = subscription.clone();
                None
            }
        };
        params["_meta"] = meta;
        if !stream.send(&sse::event(id.as_deref(), &notification(&method, params))) {
            return false;
        }
    }
    true
}

/// The log no longer reaches the stream's cursor: tell it everything it
/// follows may have changed, and go on from now.
fn resync<S: Sql>(stream: &impl EventStream, vfs: &Vfs<'_, S>, state: &mut ListenState) -> bool {
    let Ok(now) = vfs.revision() else {
        return true;
    };
    let cursor = Cursor::after(now);
    let mut messages: Vec<(String, Value)> = state
        .resources
        .iter()
        .map(|path| {
            (
                "notifications/resources/updated".to_string(),
                json!({ "uri": uri_of(path) }),
            )
        })
        .collect();
    if state.list_changed {
        messages.push((
            "notifications/resources/list_changed".to_string(),
            json!({}),
        ));
    }
    if !send_all(stream, state, cursor, messages) {
        return false;
    }
    state.cursor = cursor;
    true
}
