//! A blocking client of an agent's terminal (`GET /agents/{id}/terminal`):
//! binary frames are the terminal's bytes, text frames JSON control
//! messages. It keeps the offset of the next byte it expects (from `ready`
//! on), as a real client must to reattach.

use std::time::{Duration, Instant};

use serde_json::Value;
use tungstenite::Message;

/// One frame from the agent.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    Bytes(Vec<u8>),
    Json(Value),
    Close(u16),
}

/// A connected terminal.
pub struct Terminal {
    ws: tungstenite::WebSocket<std::net::TcpStream>,
    /// The session, from the last `ready`.
    pub session: String,
    /// The offset after the last byte received.
    pub offset: i64,
    /// Every byte received since the last `ready` (or [`Terminal::clear`]).
    pub received: Vec<u8>,
    /// Text frames received, in order (`ready` included).
    pub messages: Vec<Value>,
    /// The close code, once the agent closed the socket.
    pub closed: Option<u16>,
}

impl Terminal {
    /// Opens `/agents/{agent}/terminal?{query}` on `base` with the bearer
    /// `token` and waits for `ready`; the error names a refusal (`HTTP
    /// <status>: <body>`).
    pub fn open(
        base: &str,
        agent: &str,
        query: &str,
        token: Option<&str>,
    ) -> Result<Terminal, String> {
        let ws = crate::upgrade(base, &format!("/agents/{agent}/terminal?{query}"), token)?;
        let mut terminal = Terminal {
            ws,
            session: String::new(),
            offset: 0,
            received: Vec::new(),
            messages: Vec::new(),
            closed: None,
        };
        terminal.wait_ready(Duration::from_secs(30))?;
        Ok(terminal)
    }

    /// Reads until a `ready` (taking its session and offset).
    pub fn wait_ready(&mut self, timeout: Duration) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next(left) {
                Some(Frame::Json(message)) if message["type"] == "ready" => return Ok(()),
                Some(Frame::Close(code)) => return Err(format!("closed ({code}) before ready")),
                Some(_) => continue,
                None => return Err("no ready in time".into()),
            }
        }
    }

    /// Sends keys.
    pub fn keys(&mut self, bytes: &[u8]) {
        self.ws
            .send(Message::binary(bytes.to_vec()))
            .expect("terminal send");
    }

    /// Sends a control message.
    pub fn control(&mut self, message: &Value) {
        self.text(&message.to_string());
    }

    /// Sends a raw text frame.
    pub fn text(&mut self, text: &str) {
        self.ws.send(Message::text(text)).expect("terminal send");
    }

    /// The next frame, or `None` after `timeout`. Bytes extend
    /// [`Terminal::received`] and move the offset; `ready` resets them.
    pub fn next(&mut self, timeout: Duration) -> Option<Frame> {
        if self.closed.is_some() {
            return None;
        }
        self.ws
            .get_mut()
            .set_read_timeout(Some(timeout.max(Duration::from_millis(1))))
            .expect("read timeout");
        loop {
            let frame = match self.ws.read() {
                Ok(Message::Binary(bytes)) => Frame::Bytes(bytes.to_vec()),
                Ok(Message::Text(text)) => Frame::Json(
                    serde_json::from_str(&text)
                        .unwrap_or_else(|e| panic!("a text frame that is not JSON ({e}): {text}")),
                ),
                Ok(Message::Close(frame)) => {
                    Frame::Close(frame.map_or(1005, |f| u16::from(f.code)))
                }
                Ok(_) => continue,
                Err(tungstenite::Error::Io(e))
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return None
                }
                Err(tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed) => {
                    Frame::Close(1006)
                }
                Err(e) => panic!("terminal read failed: {e}"),
            };
            match &frame {
                Frame::Bytes(bytes) => {
                    self.received.extend_from_slice(bytes);
                    self.offset += bytes.len() as i64;
                }
                Frame::Json(message) => {
                    if message["type"] == "ready" {
                        self.session = message["session"].as_str().unwrap_or_default().into();
                        self.offset = message["offset"].as_i64().unwrap_or_default();
                        self.received.clear();
                    }
                    self.messages.push(message.clone());
                }
                Frame::Close(code) => self.closed = Some(*code),
            }
            return Some(frame);
        }
    }

    /// Reads until what was received since [`Terminal::clear`] contains
    /// `text`; panics after `timeout` with what came.
    pub fn expect(&mut self, text: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let screen = String::from_utf8_lossy(&self.received).into_owned();
            if screen.contains(text) {
                return screen;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || self.closed.is_some() {
                panic!(
                    "{text:?} never came (closed: {:?}); received: {screen:?}",
                    self.closed
                );
            }
            self.next(left);
        }
    }

    /// Reads until a text frame of `kind` comes; returns it.
    pub fn expect_message(&mut self, kind: &str, timeout: Duration) -> Value {
        let seen = self.messages.len();
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(found) = self.messages[seen..].iter().find(|m| m["type"] == kind) {
                return found.clone();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || self.closed.is_some() {
                panic!(
                    "no {kind:?} message (closed: {:?}); messages: {:?}; received: {:?}",
                    self.closed,
                    &self.messages[seen..],
                    String::from_utf8_lossy(&self.received)
                );
            }
            self.next(left);
        }
    }

    /// Forgets what was received so far (the offset stays).
    pub fn clear(&mut self) {
        self.received.clear();
    }

    /// Drops the connection without a close handshake.
    pub fn drop_connection(self) {
        let _ = self.ws.get_ref().shutdown(std::net::Shutdown::Both);
    }

    /// Closes cleanly.
    pub fn close(mut self) {
        let _ = self.ws.close(None);
        let _ = self.ws.flush();
    }
}
