//! JSON-RPC 2.0 as MCP uses it: one message per HTTP request (a batch only
//! in a 2025-03-26 session, the one revision served that has them), request
//! ids that are strings or integers and never `null`, and the error codes
//! of both revisions.

use serde_json::{json, Map, Value};

/// Invalid JSON.
pub const PARSE_ERROR: i64 = -32700;
/// Not a valid request object (or a batch).
pub const INVALID_REQUEST: i64 = -32600;
/// No such method (or not in the revision spoken).
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Bad parameters: an unknown tool, a missing field, an unknown resource
/// (2026-07-28).
pub const INVALID_PARAMS: i64 = -32602;
/// The server failed.
pub const INTERNAL_ERROR: i64 = -32603;
/// 2025-11-25's "resource not found" (2026-07-28 uses [`INVALID_PARAMS`]).
pub const RESOURCE_NOT_FOUND: i64 = -32002;
/// 2026-07-28: HTTP headers disagree with the body, or are missing.
pub const HEADER_MISMATCH: i64 = -32020;
/// 2026-07-28: the protocol version asked for is not served.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// The refusal of a batch where none is served.
pub const NO_BATCHES: &str =
    "Invalid Request: batches are served only in a 2025-03-26 session; send one message per request";

/// A request id: a string or an integer.
pub type Id = Value;

/// A JSON-RPC error, with the HTTP status it is answered with.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
    pub status: u16,
    /// The `WWW-Authenticate` challenge of a refused credential (boxed:
    /// errors travel in `Result`s, kept small).
    pub challenge: Option<Box<str>>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
            status: 200,
            challenge: None,
        }
    }

    /// The same error, answered with HTTP `status`.
    pub fn status(mut self, status: u16) -> RpcError {
        self.status = status;
        self
    }

    pub fn data(mut self, data: Value) -> RpcError {
        self.data = Some(data);
        self
    }

    /// The same error, answered with `WWW-Authenticate: challenge`.
    pub fn challenge(mut self, challenge: String) -> RpcError {
        self.challenge = Some(challenge.into());
        self
    }

    pub fn invalid_request(message: impl Into<String>) -> RpcError {
        RpcError::new(INVALID_REQUEST, message).status(400)
    }

    pub fn invalid_params(message: impl Into<String>) -> RpcError {
        RpcError::new(INVALID_PARAMS, message)
    }

    /// The error response for request `id`; `None` when it could not be
    /// read (a parse error, an invalid request), which JSON-RPC 2.0 answers
    /// with `"id": null` (section 5, "Response object").
    pub fn to_response(&self, id: Option<&Id>) -> Value {
        let mut error = json!({ "code": self.code, "message": self.message });
        if let Some(data) = &self.data {
            error["data"] = data.clone();
        }
        json!({ "jsonrpc": "2.0", "id": id.cloned().unwrap_or(Value::Null), "error": error })
    }
}

/// A result response.
pub fn result_response(id: &Id, result: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "result": result })
}

/// A notification.
pub fn notification(method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "method": method, "params": params })
}

/// A message from the client.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    Request {
        id: Id,
        method: String,
        params: Map<String, Value>,
    },
    Notification {
        method: String,
    },
    /// A response to a request of ours (we send none, so it is only
    /// acknowledged).
    Response,
}

impl Message {
    /// The request's id, if it is one.
    pub fn id(&self) -> Option<&Id> {
        match self {
            Message::Request { id, .. } => Some(id),
            Message::Notification { .. } | Message::Response => None,
        }
    }
}

/// Parses one message. On failure, the error and the request's id when it
/// could be read.
pub fn parse(body: &[u8]) -> Result<Message, (Option<Id>, RpcError)> {
    message(read(body).map_err(|error| (None, error))?)
}

/// Reads a body as JSON (a message, or a batch of them).
pub fn read(body: &[u8]) -> Result<Value, RpcError> {
    serde_json::from_slice(body)
        .map_err(|e| RpcError::new(PARSE_ERROR, format!("Parse error: {e}")).status(400))
}

/// Reads one message from `value` (a batch is refused: only a 2025-03-26
/// session takes one, element by element). On failure, the error and the
/// request's id when it could be read.
pub fn message(value: Value) -> Result<Message, (Option<Id>, RpcError)> {
    let object = match value {
        Value::Object(object) => object,
        Value::Array(_) => return Err((None, RpcError::invalid_request(NO_BATCHES))),
        _ => {
            return Err((
                None,
                RpcError::invalid_request("Invalid Request: a message is a JSON object"),
            ))
        }
    };
    let id = object.get("id").cloned();
    let readable_id = id.clone().filter(valid_id);
    let fail = |message: &str| {
        Err((
            readable_id.clone(),
            RpcError::invalid_request(format!("Invalid Request: {message}")),
        ))
    };
    if object.get("jsonrpc") != Some(&json!("2.0")) {
        return fail("jsonrpc must be \"2.0\"");
    }
    match (object.get("method"), &id) {
        (Some(Value::String(method)), None) => Ok(Message::Notification {
            method: method.clone(),
        }),
        (Some(Value::String(method)), Some(id)) => {
            if !valid_id(id) {
                return fail(&format!(
                    "id must be a string or an integer, got {}",
                    kind_of(id)
                ));
            }
            let params = match object.get("params") {
                None => Map::new(),
                Some(Value::Object(params)) => params.clone(),
                Some(_) => {
                    return Err((
                        Some(id.clone()),
                        RpcError::invalid_params("Invalid params: params must be an object")
                            .status(400),
                    ))
                }
            };
            Ok(Message::Request {
                id: id.clone(),
                method: method.clone(),
                params,
            })
        }
        (Some(_), _) => fail("method must be a string"),
        (None, Some(_)) if object.contains_key("result") || object.contains_key("error") => {
            Ok(Message::Response)
        }
        (None, _) => fail("a request needs a method"),
    }
}

/// The id of the request in `body`, if it is one that parses, whatever else
/// is wrong with it.
pub fn id_of(body: &[u8]) -> Option<Id> {
    serde_json::from_slice::<Value>(body)
        .ok()?
        .get("id")
        .filter(|id| valid_id(id))
        .cloned()
}

/// What a JSON value is, for a message naming what was sent.
fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(number) if number.is_f64() => "a fractional number",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn valid_id(id: &Value) -> bool {
    match id {
        Value::String(_) => true,
        Value::Number(number) => number.is_i64() || number.is_u64(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of(body: &str) -> (Option<Id>, i64) {
        let (id, error) = parse(body.as_bytes()).unwrap_err();
        (id, error.code)
    }

    #[test]
    fn messages_are_told_apart() {
        assert_eq!(
            parse(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#).unwrap(),
            Message::Request {
                id: json!(1),
                method: "tools/list".into(),
                params: Map::new()
            }
        );
        assert_eq!(
            parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap(),
            Message::Notification {
                method: "notifications/initialized".into()
            }
        );
        assert_eq!(
            parse(br#"{"jsonrpc":"2.0","id":"a","result":{}}"#).unwrap(),
            Message::Response
        );
    }

    #[test]
    fn malformed_messages_get_the_json_rpc_errors() {
        assert_eq!(error_of("{nope"), (None, PARSE_ERROR));
        assert_eq!(error_of("[]"), (None, INVALID_REQUEST));
        assert_eq!(
            error_of(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#),
            (None, INVALID_REQUEST)
        );
        assert_eq!(error_of("7"), (None, INVALID_REQUEST));
        assert_eq!(
            error_of(r#"{"id":3,"method":"ping"}"#),
            (Some(json!(3)), INVALID_REQUEST)
        );
        assert_eq!(
            error_of(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#),
            (None, INVALID_REQUEST)
        );
        assert_eq!(
            error_of(r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#),
            (None, INVALID_REQUEST)
        );
        assert_eq!(
            error_of(r#"{"jsonrpc":"2.0","id":4,"method":7}"#),
            (Some(json!(4)), INVALID_REQUEST)
        );
        assert_eq!(
            error_of(r#"{"jsonrpc":"2.0","id":5,"method":"tools/list","params":[1]}"#),
            (Some(json!(5)), INVALID_PARAMS)
        );
        let (_, error) = parse(b"{nope").unwrap_err();
        assert_eq!(error.status, 400);
        assert_eq!(
            error.to_response(None),
            json!({ "jsonrpc": "2.0", "id": null, "error": { "code": -32700, "message": error.message } })
        );
    }

    #[test]
    fn a_bad_id_is_named_in_the_message() {
        for (id, kind) in [
            ("null", "null"),
            ("{}", "an object"),
            ("[1]", "an array"),
            ("1.5", "a fractional number"),
            ("true", "a boolean"),
        ] {
            let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
            let (read, error) = parse(body.as_bytes()).unwrap_err();
            assert_eq!(read, None);
            assert_eq!(
                error.message,
                format!("Invalid Request: id must be a string or an integer, got {kind}")
            );
            assert_eq!(error.to_response(read.as_ref())["id"], Value::Null);
        }
    }
}
