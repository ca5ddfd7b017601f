//! The WebSocket protocol: its messages, as plain data (the agent answers
//! them in `crate::socket`).
//!
//! `GET /agents/{id}/ws` opens a hibernatable WebSocket: while nothing is
//! sent the agent may be evicted from memory and the socket costs nothing,
//! so everything a socket has subscribed to lives in its attachment
//! ([`SocketState`], kept by the runtime across hibernation), not in the
//! object's memory.
//!
//! Every message is a JSON object with a `type`. A client may put an `id`
//! (any JSON value) on a request; the answer carries it back.
//!
//! Client to agent:
//! - `{"type":"subscribe_job","job":N,"from":OFFSET}`: the job's output from
//!   byte offset `from` (default: the oldest kept), then live output, then
//!   `job_end`. A client that lost its connection resubscribes from the
//!   `offset + len(data)` of the last piece it received and gets each byte
//!   once.
//! - `{"type":"unsubscribe_job","job":N}`
//! - `{"type":"subscribe_jobs"}`: live output of every job from now on.
//! - `{"type":"subscribe_changes","since":REV}`: workspace changes after
//!   revision `since` (default: the current one), then live.
//! - `{"type":"unsubscribe_changes"}`
//! - `{"type":"call","tool":"write","args":{...}}`: a file tool, `exec`
//!   (`detach` allowed), or `checkpoint`, `diff`, `restore`, `undo` (their
//!   HTTP routes' bodies), answered by `result` or `error`.
//! - `{"type":"ping"}`: answered by `pong`.
//!
//! Agent to client: `subscribed`, `unsubscribed`, `result` (`result`),
//! `pong`, `output` (`job`, `offset`, `stream`, `data`, `at_ms`), `job_end`
//! (`job`, `state`, `exit_code`, `error`, `next`), `change` (`revision`,
//! `path`, `kind`), and `error` (`error: {code, message}`). A bad message
//! gets an `error` and the socket stays open.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use stead_vfs::Change;

use crate::auth::Caller;
use crate::error::ApiError;

/// The keepalive the platform may answer on the agent's behalf (exactly
/// this text; a ping with an `id` reaches the agent and is answered there).
pub const PING: &str = r#"{"type":"ping"}"#;
pub const PONG: &str = r#"{"type":"pong"}"#;

/// Largest message accepted.
pub const MAX_MESSAGE: usize = 1 << 20;

/// What a socket has subscribed to; stored as its attachment.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SocketState {
    /// The agent the socket belongs to.
    pub agent: String,
    /// Who opened it: tool calls over the socket need that caller's scopes.
    #[serde(default)]
    pub caller: Caller,
    /// Jobs whose live output it receives.
    #[serde(default)]
    pub jobs: Vec<i64>,
    /// Whether it receives every job's live output.
    #[serde(default)]
    pub all_jobs: bool,
    /// The revision up to which it has been sent changes, when subscribed.
    #[serde(default)]
    pub changes: Option<i64>,
    /// The terminal session it is attached to, if it is a terminal's
    /// (`GET /agents/{id}/terminal`, whose protocol is `crate::terminal`'s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminal: Option<TerminalSocket>,
}

/// A terminal socket's attachment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TerminalSocket {
    pub session: String,
    /// The offset its transcript was replayed from when it was accepted
    /// (`None`: the first kept).
    #[serde(default)]
    pub replay_from: Option<i64>,
}

impl SocketState {
    /// Whether output of `job` goes to this socket.
    pub fn wants_job(&self, job: i64) -> bool {
        self.all_jobs || self.jobs.contains(&job)
    }
}

/// A request from the client.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ClientMessage {
    SubscribeJob {
        #[serde(default)]
        id: Value,
        job: i64,
        from: Option<i64>,
    },
    UnsubscribeJob {
        #[serde(default)]
        id: Value,
        job: i64,
    },
    SubscribeJobs {
        #[serde(default)]
        id: Value,
    },
    SubscribeChanges {
        #[serde(default)]
        id: Value,
        since: Option<i64>,
    },
    UnsubscribeChanges {
        #[serde(default)]
        id: Value,
    },
    Call {
        #[serde(default)]
        id: Value,
        tool: String,
        #[serde(default)]
        args: Value,
    },
    Ping {
        #[serde(default)]
        id: Value,
    },
}

impl ClientMessage {
    /// The request id, `null` when the client gave none.
    pub fn id(&self) -> &Value {
        match self {
            ClientMessage::SubscribeJob { id, .. }
            | ClientMessage::UnsubscribeJob { id, .. }
            | ClientMessage::SubscribeJobs { id }
            | ClientMessage::SubscribeChanges { id, .. }
            | ClientMessage::UnsubscribeChanges { id }
            | ClientMessage::Call { id, .. }
            | ClientMessage::Ping { id } => id,
        }
    }
}

/// Parses a text message; on failure, the request id (if one could be
/// read) and the error to send back.
pub fn parse(text: &str) -> Result<ClientMessage, (Value, ApiError)> {
    if text.len() > MAX_MESSAGE {
        return Err((Value::Null, ApiError::BodyTooLarge { limit: MAX_MESSAGE }));
    }
    let value: Value = serde_json::from_str(text).map_err(|e| (Value::Null, e.into()))?;
    let id = value.get("id").cloned().unwrap_or(Value::Null);
    if !value.is_object() {
        return Err((
            id,
            ApiError::InvalidRequest("a message must be a JSON object with a type".into()),
        ));
    }
    serde_json::from_value(value).map_err(|e| (id, ApiError::InvalidRequest(e.to_string())))
}

/// The `error` message for a failed request.
pub fn error_json(id: &Value, error: &ApiError) -> Value {
    let mut message = json!({ "type": "error", "error": error.body()["error"] });
    if !id.is_null() {
        message["id"] = id.clone();
    }
    message
}

/// The `error` frame of a terminal socket (`crate::terminal`), whose
/// protocol puts the code and message at the top.
pub fn terminal_error_json(error: &ApiError) -> Value {
    json!({ "type": "error", "code": error.code(), "message": error.public_message() })
}

/// A reply of `kind` to request `id`, with extra fields.
pub fn reply_json(id: &Value, kind: &str, fields: Value) -> Value {
    let mut message = json!({ "type": kind });
    if !id.is_null() {
        message["id"] = id.clone();
    }
    if let (Some(out), Value::Object(extra)) = (message.as_object_mut(), fields) {
        out.extend(extra);
    }
    message
}

/// A workspace change event.
pub fn change_json(change: &Change) -> Value {
    json!({
        "type": "change",
        "revision": change.revision,
        "path": change.path,
        "kind": change.kind,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_request_type() {
        assert_eq!(
            parse(r#"{"type":"subscribe_job","job":3,"from":10,"id":"a"}"#).unwrap(),
            ClientMessage::SubscribeJob {
                id: json!("a"),
                job: 3,
                from: Some(10)
            }
        );
        assert_eq!(
            parse(r#"{"type":"call","id":7,"tool":"read","args":{"path":"/a"}}"#).unwrap(),
            ClientMessage::Call {
                id: json!(7),
                tool: "read".into(),
                args: json!({ "path": "/a" })
            }
        );
        for text in [
            r#"{"type":"unsubscribe_job","job":1}"#,
            r#"{"type":"subscribe_jobs"}"#,
            r#"{"type":"subscribe_changes","since":0}"#,
            r#"{"type":"subscribe_changes"}"#,
            r#"{"type":"unsubscribe_changes"}"#,
            r#"{"type":"ping"}"#,
        ] {
            assert!(parse(text).is_ok(), "{text}");
        }
    }

    #[test]
    fn bad_messages_get_an_error_with_the_request_id() {
        let (id, error) = parse("{nope").unwrap_err();
        assert_eq!((id, error.code()), (Value::Null, "MALFORMED_JSON"));
        let (id, error) = parse(r#"{"type":"fly","id":"x"}"#).unwrap_err();
        assert_eq!((id.clone(), error.code()), (json!("x"), "INVALID_REQUEST"));
        let message = error_json(&id, &error);
        assert_eq!(message["type"], "error");
        assert_eq!(message["id"], "x");
        assert_eq!(message["error"]["code"], "INVALID_REQUEST");
        assert!(message["error"]["message"]
            .as_str()
            .unwrap()
            .contains("fly"));
        let (_, error) = parse(r#"{"type":"subscribe_job","job":"one"}"#).unwrap_err();
        assert_eq!(error.code(), "INVALID_REQUEST");
        let (_, error) = parse(r#"{"type":"ping","extra":1}"#).unwrap_err();
        assert_eq!(error.code(), "INVALID_REQUEST");
        let (_, error) = parse("[1,2]").unwrap_err();
        assert_eq!(error.code(), "INVALID_REQUEST");
    }

    #[test]
    fn socket_state_round_trips_and_filters_jobs() {
        let state = SocketState {
            agent: "a".into(),
            caller: Caller::from_headers(Some("token:t"), Some("read"), Some("1700000000")),
            jobs: vec![4],
            all_jobs: false,
            changes: Some(9),
            terminal: None,
        };
        let back: SocketState =
            serde_json::from_value(serde_json::to_value(&state).unwrap()).unwrap();
        assert_eq!(back, state);
        assert!(state.wants_job(4) && !state.wants_job(5));
        let all = SocketState {
            all_jobs: true,
            ..SocketState::default()
        };
        assert!(all.wants_job(5));
    }

    #[test]
    fn replies_carry_the_request_id() {
        let reply = reply_json(&json!(3), "subscribed", json!({ "job": 1 }));
        assert_eq!(reply, json!({ "type": "subscribed", "id": 3, "job": 1 }));
        assert_eq!(
            reply_json(&Value::Null, "pong", json!({})),
            json!({ "type": "pong" })
        );
    }
}
