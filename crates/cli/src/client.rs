//! The API client: blocking HTTP (ureq) and the agent's WebSocket
//! (tungstenite), with every error answer turned into a [`CliError`] that
//! says how to fix it.

use std::io::Read;
use std::time::Duration;

use serde_json::Value;

use crate::error::{CliError, Failure, Result};

/// A connection to one deployment with one token.
pub struct Api {
    base: String,
    token: String,
    http: ureq::Agent,
}

/// An answer read whole: status, headers and the JSON body.
pub struct Answer {
    pub status: u16,
    pub location: Option<String>,
    pub body: Value,
}

impl Api {
    pub fn new(base: &str, token: &str) -> Api {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_connect(Some(Duration::from_secs(15)))
            .build();
        Api {
            base: base.trim_end_matches('/').to_string(),
            token: token.to_string(),
            http: config.into(),
        }
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    pub fn token(&self) -> &str {
        &self.token
    }

    fn unreachable(&self, error: ureq::Error) -> CliError {
        CliError::new(
            Failure::Network,
            format!(
                "cannot reach {} ({error}); check the URL (--url, STEAD_URL or `stead login`) and that the server runs",
                self.base
            ),
        )
    }

    /// Sends `method path` (path with its query, already encoded) with
    /// extra `headers` and a body, and returns the raw response, whatever
    /// its status.
    pub fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: ureq::SendBody<'_>,
    ) -> Result<ureq::http::Response<ureq::Body>> {
        let mut request = ureq::http::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base))
            .header("authorization", format!("Bearer {}", self.token));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request.body(body).map_err(|e| {
            CliError::new(Failure::Invalid, format!("cannot build the request: {e}"))
        })?;
        self.http.run(request).map_err(|e| self.unreachable(e))
    }

    /// Sends a JSON request (or none) and reads the JSON answer; an error
    /// status becomes a [`CliError`].
    pub fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Answer> {
        let text;
        let response = match body {
            Some(value) => {
                text = value.to_string();
                let reader: &mut dyn Read = &mut text.as_bytes();
                self.send(
                    method,
                    path,
                    &[("content-type", "application/json")],
                    ureq::SendBody::from_reader(reader),
                )?
            }
            None => self.send(method, path, &[], ureq::SendBody::none())?,
        };
        let status = response.status().as_u16();
        let location = response
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let bytes = read_body(response)?;
        if !(200..300).contains(&status) {
            return Err(error_of(status, &bytes));
        }
        let body = match bytes.is_empty() {
            true => Value::Null,
            false => serde_json::from_slice(&bytes).map_err(|e| {
                CliError::new(
                    Failure::Server,
                    format!("the server answered {status} with a body that is not JSON ({e}); is the URL a stead deployment?"),
                )
            })?,
        };
        Ok(Answer {
            status,
            location,
            body,
        })
    }

    /// `call` for the JSON body alone.
    pub fn json(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value> {
        Ok(self.call(method, path, body)?.body)
    }

    /// A file tool of `agent`.
    pub fn tool(&self, agent: &str, tool: &str, body: &Value) -> Result<Value> {
        self.json("POST", &format!("{}/{tool}", agent_path(agent)), Some(body))
    }

    /// Opens the agent's WebSocket.
    pub fn socket(&self, agent: &str) -> Result<Socket> {
        let ws = self.connect(&format!("{}/ws", agent_path(agent)), SOCKET_IDLE)?;
        Ok(Socket { ws })
    }

    /// Opens a WebSocket at `path` (with its query, already encoded),
    /// whose reads return after `idle` without a frame.
    pub fn connect(&self, path: &str, idle: Duration) -> Result<WebSocket> {
        use tungstenite::client::IntoClientRequest;
        let url = match self.base.strip_prefix("https://") {
            Some(host) => format!("wss://{host}"),
            None => format!("ws://{}", self.base.trim_start_matches("http://")),
        };
        let mut request = format!("{url}{path}")
            .into_client_request()
            .map_err(|e| CliError::new(Failure::Config, format!("bad URL {url}: {e}")))?;
        let value = format!("Bearer {}", self.token)
            .parse()
            .map_err(|_| CliError::new(Failure::Config, "the token is not a valid header value"))?;
        request.headers_mut().insert("authorization", value);
        match tungstenite::connect(request) {
            Ok((ws, _)) => {
                // A read that waits this long returns, so a connection that
                // went silent is noticed (see `Received::Idle`).
                let tcp = match ws.get_ref() {
                    tungstenite::stream::MaybeTlsStream::Plain(tcp) => Some(tcp),
                    tungstenite::stream::MaybeTlsStream::Rustls(tls) => Some(tls.get_ref()),
                    _ => None,
                };
                if let Some(tcp) = tcp {
                    let _ = tcp.set_read_timeout(Some(idle));
                    let _ = tcp.set_nodelay(true);
                }
                Ok(ws)
            }
            Err(tungstenite::Error::Http(response)) => {
                let status = response.status().as_u16();
                let body = response.body().clone().unwrap_or_default();
                Err(error_of(status, &body))
            }
            Err(e) => Err(CliError::new(
                Failure::Network,
                format!("cannot open the WebSocket at {url} ({e}); check the URL and that the server runs"),
            )),
        }
    }
}

/// Reads a whole response body.
pub fn read_body(response: ureq::http::Response<ureq::Body>) -> Result<Vec<u8>> {
    response
        .into_body()
        .with_config()
        .limit(1 << 30)
        .read_to_vec()
        .map_err(|e| {
            CliError::new(
                Failure::Network,
                format!(
                    "the connection broke while reading the answer ({e}); run the command again"
                ),
            )
        })
}

/// The [`CliError`] of an error answer: the server's own message, its code
/// and status, and a hint for the failures a user can fix.
pub fn error_of(status: u16, body: &[u8]) -> CliError {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let error = parsed.as_ref().and_then(|v| v.get("error"));
    let code = error
        .and_then(|e| e.get("code"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let message = error
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| {
            let text = String::from_utf8_lossy(body);
            let text = text.trim();
            match text.is_empty() {
                true => "no message".to_string(),
                false => text.chars().take(200).collect(),
            }
        });
    let hint = match (status, code.as_str()) {
        (401, _) => "; check the token (--token, STEAD_TOKEN or `stead login`)",
        (_, "AGENT_NOT_FOUND") => {
            "; create it with `stead agents create ID`, or pick another with --agent or `stead use ID`"
        }
        _ => "",
    };
    let failure = Failure::of_status(status, &code);
    let code = match code.is_empty() {
        true => String::new(),
        false => format!("{code}, "),
    };
    CliError::new(failure, format!("{message} ({code}HTTP {status}){hint}"))
}

/// `/agents/{id}` with the id encoded.
pub fn agent_path(agent: &str) -> String {
    format!("/agents/{}", encode_component(agent))
}

/// Percent-encodes everything but RFC 3986's unreserved characters: one
/// path segment or query value.
pub fn encode_component(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(byte as char)
            }
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// A workspace path as the file routes take it: absolute, each segment
/// encoded, the slashes kept.
pub fn encode_path(path: &str) -> String {
    let absolute = workspace_path(path);
    absolute
        .split('/')
        .map(encode_component)
        .collect::<Vec<_>>()
        .join("/")
}

/// A path as the workspace names it: absolute (relative paths are taken
/// from `/`, as the file tools take them).
pub fn workspace_path(path: &str) -> String {
    match path.starts_with('/') {
        true => path.to_string(),
        false => format!("/{path}"),
    }
}

/// A WebSocket to the deployment.
pub type WebSocket =
    tungstenite::WebSocket<tungstenite::stream::MaybeTlsStream<std::net::TcpStream>>;

/// The agent's WebSocket.
pub struct Socket {
    ws: WebSocket,
}

/// How long a socket read waits before it reports [`Received::Idle`].
pub const SOCKET_IDLE: Duration = Duration::from_secs(20);

/// What reading the socket gave.
pub enum Received {
    Message(Value),
    /// Nothing arrived for [`SOCKET_IDLE`].
    Idle,
    /// The connection ended or broke.
    Closed(String),
}

impl Socket {
    pub fn send(&mut self, message: &Value) -> Result<()> {
        self.ws
            .send(tungstenite::Message::text(message.to_string()))
            .map_err(|e| CliError::new(Failure::Network, format!("WebSocket send: {e}")))
    }

    /// The next JSON message (control frames are answered and skipped).
    pub fn recv(&mut self) -> Received {
        loop {
            match self.ws.read() {
                Ok(tungstenite::Message::Text(text)) => match serde_json::from_str(&text) {
                    Ok(value) => return Received::Message(value),
                    Err(e) => return Received::Closed(format!("a message that is not JSON: {e}")),
                },
                Ok(tungstenite::Message::Close(frame)) => {
                    return Received::Closed(match frame {
                        Some(frame) => format!("closed by the server ({})", frame.code),
                        None => "closed by the server".to_string(),
                    })
                }
                Ok(_) => continue,
                Err(tungstenite::Error::Io(e))
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return Received::Idle
                }
                Err(e) => return Received::Closed(e.to_string()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_answers_become_one_line_with_their_kind_and_a_hint() {
        let body = br#"{"error":{"code":"AGENT_NOT_FOUND","message":"no agent \"x\""}}"#;
        let error = error_of(404, body);
        assert_eq!(error.failure, Failure::NotFound);
        assert!(error
            .message
            .starts_with(r#"no agent "x" (AGENT_NOT_FOUND, HTTP 404); create it"#));
        let quota = error_of(507, br#"{"error":{"code":"ENOSPC","message":"full"}}"#);
        assert_eq!(quota.failure, Failure::Quota);
        let token = error_of(401, br#"{"error":{"code":"UNAUTHORIZED","message":"no"}}"#);
        assert!(token
            .message
            .ends_with("check the token (--token, STEAD_TOKEN or `stead login`)"));
        // A body that is not the API's still says what came back.
        let html = error_of(502, b"<html>bad gateway</html>");
        assert_eq!(html.failure, Failure::Server);
        assert_eq!(html.message, "<html>bad gateway</html> (HTTP 502)");
        assert!(!html.message.contains('\n'));
    }

    #[test]
    fn paths_are_encoded_per_segment_and_made_absolute() {
        assert_eq!(encode_path("src/my file#1.rs"), "/src/my%20file%231.rs");
        assert_eq!(encode_path("/a/ü"), "/a/%C3%BC");
        assert_eq!(agent_path("a.b_c-1"), "/agents/a.b_c-1");
    }
}
