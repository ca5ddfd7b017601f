//! Interactive terminals: `GET /agents/{id}/terminal` upgraded to a
//! WebSocket whose binary frames carry raw terminal bytes both ways and
//! whose text frames carry small JSON control messages.
//!
//! Client to agent: binary (keys, a paste), `{"type":"resize","cols","rows"}`,
//! `{"type":"attach","session","from"}`. Agent to client: binary (what the
//! session prints), `{"type":"ready","session","offset"}` (the offset the
//! binary that follows begins at), `{"type":"exit","code","reason"}` and
//! `{"type":"error","code","message"}`. A bad frame gets an `error` and
//! leaves the session as it was.
//!
//! A session is a row in SQLite with its transcript ([`transcript`]): every
//! byte is stored with its offset in the step that sends it, so reattaching
//! `from` the offset after the last byte received replays exactly what was
//! missed, whatever restarted meanwhile. The socket is a hibernatable one:
//! which session it shows lives in its attachment, and an idle terminal
//! costs nothing.
//!
//! The light backend ([`light`]) is a line terminal over the in-isolate
//! shell: a line editor ([`editor`]) and a shell whose state persists
//! between lines ([`stead_shell::session`]), both stored with the session.
//! The computer backend ([`computer`]) is a real pseudo-terminal on the
//! agent's computer, whose stream this object follows into the same
//! transcript. Browsers open the socket with a single-use ticket
//! ([`tickets`]).

pub mod computer;
pub mod editor;
mod light;
pub mod tickets;
pub mod transcript;

use std::cell::RefCell;
use std::collections::HashMap;

use serde::Deserialize;
use serde_json::{json, Value};

use crate::agent::Agent;
use crate::auth::Caller;
use crate::dispatch::Reply;
use crate::error::ApiError;
use crate::host::{Host, Socket};
use crate::outcome::Backend as ExecBackend;
use crate::policy;
use crate::protocol::{terminal_error_json, SocketState, TerminalSocket};
use transcript::{Backend, Session, State, Transcripts};

/// The largest binary frame a client may send (a paste): more is refused
/// with an `error` frame, and nothing of it is typed.
pub const MAX_INPUT: usize = 64 << 10;

/// The largest text (control) frame.
pub const MAX_CONTROL: usize = 4 << 10;

/// The largest terminal size taken, each way.
pub const MAX_COLS: u16 = 1000;
pub const MAX_ROWS: u16 = 1000;

/// The size of a terminal opened without one.
const DEFAULT_SIZE: (u16, u16) = (80, 24);

/// The largest binary frame sent at once (a long replay goes in several).
const MAX_FRAME: usize = 1 << 20;

/// The light terminals running a line, by session (see [`light`]).
pub(crate) type Busy = RefCell<HashMap<String, light::Running>>;

/// What the upgrade asks for, from its query string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Open {
    pub backend: Option<Backend>,
    pub size: Option<(u16, u16)>,
    pub session: Option<String>,
    pub from: Option<i64>,
}

impl Open {
    /// Reads `backend`, `cols`, `rows`, `session` and `from` (and skips
    /// `ticket`, which the dispatch took).
    pub fn from_query(query: &[(String, String)]) -> Result<Open, ApiError> {
        let mut open = Open {
            backend: None,
            size: None,
            session: None,
            from: None,
        };
        let (mut cols, mut rows) = (None, None);
        let number = |key: &str, value: &str| {
            value.parse::<i64>().map_err(|_| {
                ApiError::InvalidRequest(format!("{key}={value:?} is not a whole number"))
            })
        };
        for (key, value) in query {
            match key.as_str() {
                "backend" => {
                    open.backend = Some(Backend::from_name(value).ok_or_else(|| {
                        ApiError::InvalidRequest(format!(
                            "backend={value:?}: use \"light\" or \"computer\""
                        ))
                    })?)
                }
                "cols" => cols = Some(number(key, value)?),
                "rows" => rows = Some(number(key, value)?),
                "session" => open.session = Some(value.clone()),
                "from" => open.from = Some(number(key, value)?),
                tickets::QUERY_PARAM => {}
                other => {
                    return Err(ApiError::InvalidRequest(format!(
                        "unknown query parameter {other:?}: the terminal takes backend, cols, \
                         rows, session, from and ticket"
                    )))
                }
            }
        }
        if cols.is_some() || rows.is_some() {
            open.size = Some(size(
                cols.unwrap_or(i64::from(DEFAULT_SIZE.0)),
                rows.unwrap_or(i64::from(DEFAULT_SIZE.1)),
            )?);
        }
        if open.from.is_some() && open.session.is_none() {
            return Err(ApiError::InvalidRequest(
                "from= replays a session's transcript: name the session (session=)".into(),
            ));
        }
        Ok(open)
    }
}

/// Checks a terminal size.
fn size(cols: i64, rows: i64) -> Result<(u16, u16), ApiError> {
    let cols = crate::decode::within("cols", cols, 1, i64::from(MAX_COLS))?;
    let rows = crate::decode::within("rows", rows, 1, i64::from(MAX_ROWS))?;
    Ok((cols as u16, rows as u16))
}

/// A control message from the client.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
enum Control {
    Resize { cols: i64, rows: i64 },
    Attach { session: String, from: Option<i64> },
}

/// The exec scope a session's backend needs.
fn exec_backend(backend: Backend) -> ExecBackend {
    match backend {
        Backend::Light => ExecBackend::Shell,
        Backend::Computer => ExecBackend::Computer,
    }
}

fn send_json(socket: &impl Socket, message: &Value) {
    socket.send(&message.to_string());
}

impl<H: Host> Agent<H> {
    fn transcripts(&self) -> Transcripts<'_, H::Db> {
        Transcripts::new(self.db())
    }

    /// `GET /agents/{id}/terminal` (authorized, with a WebSocket upgrade):
    /// attaches to the session named, or starts one; the socket is then
    /// accepted with [`Agent::socket_accepted`].
    pub(crate) async fn open_terminal(
        &self,
        agent: &str,
        caller: &Caller,
        query: &[(String, String)],
        upgrade: bool,
    ) -> Result<Reply, ApiError> {
        let open = Open::from_query(query)?;
        if !upgrade {
            return Err(ApiError::UpgradeRequired);
        }
        let session = match &open.session {
            Some(id) => {
                let session = self.transcripts().get(id)?;
                if open
                    .backend
                    .is_some_and(|backend| backend != session.backend)
                {
                    return Err(ApiError::InvalidRequest(format!(
                        "session {id:?} runs on the {} backend",
                        session.backend.name()
                    )));
                }
                policy::require_exec(caller, exec_backend(session.backend))?;
                if let Some(from) = open.from {
                    // Checked before the upgrade, so a bad one is refused.
                    self.transcripts().read(id, from)?;
                }
                // The window attaching is the size from now on.
                if let Some(size) = open.size {
                    self.resize_session(&session, size).await?;
                }
                session.id
            }
            None => {
                let backend = open.backend.unwrap_or(Backend::Light);
                policy::require_exec(caller, exec_backend(backend))?;
                let size = open.size.unwrap_or(DEFAULT_SIZE);
                match backend {
                    Backend::Light => self.start_light(size)?,
                    Backend::Computer => self.start_computer(size).await?,
                }
            }
        };
        Ok(Reply::Socket(SocketState {
            agent: agent.to_string(),
            caller: caller.clone(),
            terminal: Some(TerminalSocket {
                session,
                replay_from: open.from,
            }),
            ..SocketState::default()
        }))
    }

    /// A socket was just accepted: a terminal's gets `ready` and its
    /// session's transcript from the offset it asked for at once (and
    /// `exit`, if the session has ended). Other sockets get nothing.
    pub fn socket_accepted(&self, socket: &H::Socket) {
        let Some(TerminalSocket {
            session,
            replay_from,
        }) = socket.state().and_then(|state| state.terminal)
        else {
            return;
        };
        if let Err(error) = self.replay(socket, &session, replay_from) {
            send_json(socket, &terminal_error_json(&error));
            socket.close(1011, "terminal unavailable");
        }
    }

    /// Sends `ready`, the transcript of `session` from `from`, and `exit` if
    /// it has ended (then closes the socket).
    fn replay(&self, socket: &H::Socket, session: &str, from: Option<i64>) -> Result<(), ApiError> {
        let transcripts = self.transcripts();
        let stored = transcripts.get(session)?;
        let (offset, bytes) = transcripts.read(session, from.unwrap_or(stored.kept_from))?;
        send_json(
            socket,
            &json!({ "type": "ready", "session": session, "offset": offset }),
        );
        for frame in bytes.chunks(MAX_FRAME) {
            socket.send_bytes(frame);
        }
        if stored.state == State::Ended {
            send_exit(socket, &stored);
        }
        Ok(())
    }

    /// A frame on a terminal socket.
    pub(crate) async fn terminal_message(
        &self,
        socket: &H::Socket,
        state: SocketState,
        attached: TerminalSocket,
        frame: crate::socket::Incoming,
    ) {
        if let Err(error) = self.token_holds(&state.caller) {
            return crate::subscriptions::end_socket(socket, &Value::Null, &error);
        }
        let served = match frame {
            crate::socket::Incoming::Binary(bytes) if bytes.len() > MAX_INPUT => {
                Err(ApiError::BodyTooLarge { limit: MAX_INPUT })
            }
            crate::socket::Incoming::Binary(bytes) => {
                self.terminal_input(&state.caller, &attached.session, &bytes)
                    .await
            }
            crate::socket::Incoming::Text(text) => {
                self.terminal_control(socket, state, &attached.session, &text)
                    .await
            }
        };
        if let Err(error) = served {
            send_json(socket, &terminal_error_json(&error));
        }
    }

    /// Keys typed into `session`.
    async fn terminal_input(
        &self,
        caller: &Caller,
        session: &str,
        bytes: &[u8],
    ) -> Result<(), ApiError> {
        let stored = self.transcripts().get(session)?;
        if stored.state == State::Ended {
            return Err(ApiError::TerminalEnded {
                id: session.to_string(),
            });
        }
        match stored.backend {
            Backend::Light => self.light_input(caller, &stored, bytes).await,
            Backend::Computer => self.computer_input(session, bytes).await,
        }
    }

    /// Session `session` is now `size`: stored, and told to its shell on
    /// the computer.
    async fn resize_session(&self, session: &Session, size: (u16, u16)) -> Result<(), ApiError> {
        self.transcripts().resize(&session.id, size)?;
        match (session.backend, session.state) {
            (Backend::Computer, State::Running) => self.computer_resize(&session.id, size).await,
            (Backend::Light, _) | (Backend::Computer, State::Ended) => Ok(()),
        }
    }

    /// A control frame.
    async fn terminal_control(
        &self,
        socket: &H::Socket,
        mut state: SocketState,
        session: &str,
        text: &str,
    ) -> Result<(), ApiError> {
        if text.len() > MAX_CONTROL {
            return Err(ApiError::BodyTooLarge { limit: MAX_CONTROL });
        }
        let control: Control = crate::decode::decode(text.as_bytes())?;
        match control {
            Control::Resize { cols, rows } => {
                let size = size(cols, rows)?;
                let stored = self.transcripts().get(session)?;
                self.resize_session(&stored, size).await
            }
            Control::Attach { session, from } => {
                let stored = self.transcripts().get(&session)?;
                policy::require_exec(&state.caller, exec_backend(stored.backend))?;
                if let Some(from) = from {
                    self.transcripts().read(&session, from)?;
                }
                state.terminal = Some(TerminalSocket {
                    session: session.clone(),
                    replay_from: from,
                });
                socket.save(&state);
                self.replay(socket, &session, from)
            }
        }
    }

    /// Sends `data` (printed by `session`, stored at `offset`) to every
    /// socket attached to it.
    fn broadcast(&self, session: &str, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        for socket in self.attached(session) {
            for frame in data.chunks(MAX_FRAME) {
                socket.send_bytes(frame);
            }
        }
    }

    /// The sockets attached to `session`.
    fn attached(&self, session: &str) -> Vec<H::Socket> {
        self.host
            .sockets()
            .into_iter()
            .filter(|socket| {
                socket
                    .state()
                    .and_then(|state| state.terminal)
                    .is_some_and(|terminal| terminal.session == session)
            })
            .collect()
    }

    /// Appends `data` to `session`'s transcript and sends it to the sockets
    /// attached, in one step.
    fn print(&self, session: &str, data: &[u8]) -> Result<(), ApiError> {
        if data.is_empty() {
            return Ok(());
        }
        self.transcripts().append(session, data, self.now_ms())?;
        self.broadcast(session, data);
        Ok(())
    }

    /// Ends `session` with `code` and `reason`: its sockets get `exit` and
    /// are closed; its transcript stays.
    fn end_terminal(&self, session: &str, code: Option<i64>, reason: &str) -> Result<(), ApiError> {
        self.transcripts()
            .end(session, code, reason, self.now_ms())?;
        self.wires.forget_running();
        let stored = self.transcripts().get(session)?;
        for socket in self.attached(session) {
            send_exit(&socket, &stored);
        }
        Ok(())
    }

    /// `GET /agents/{id}/terminals`.
    pub(crate) fn list_terminals(&self) -> Result<Value, ApiError> {
        let sessions = self.transcripts().list()?;
        let listed: Vec<Value> = sessions
            .iter()
            .map(|session| session.to_json(self.attached(&session.id).len()))
            .collect();
        Ok(json!({ "terminals": listed }))
    }

    /// `DELETE /agents/{id}/terminals/{session}`: ends the session (its
    /// sockets get `exit` with the reason `closed`) and forgets it with its
    /// transcript.
    pub(crate) async fn delete_terminal(
        &self,
        caller: &Caller,
        id: &str,
    ) -> Result<Value, ApiError> {
        let stored = self.transcripts().get(id)?;
        policy::require_exec(caller, exec_backend(stored.backend))?;
        match (stored.state, stored.backend) {
            (State::Running, Backend::Light) => {
                self.terminals.borrow_mut().remove(id);
                self.end_terminal(id, None, "closed")?;
            }
            (State::Running, Backend::Computer) => self.close_computer(id).await?,
            (State::Ended, _) => {}
        }
        self.transcripts().delete(id)?;
        Ok(json!({ "deleted": id }))
    }
}

/// Sends `exit` for an ended session and closes the socket.
fn send_exit(socket: &impl Socket, session: &Session) {
    send_json(
        socket,
        &json!({ "type": "exit", "code": session.exit_code, "reason": session.exit_reason }),
    );
    socket.close(1000, "the session ended");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_upgrade_query_is_read_and_checked() {
        let open = Open::from_query(&query(&[
            ("backend", "light"),
            ("cols", "120"),
            ("rows", "40"),
            ("ticket", "stt_x"),
        ]))
        .unwrap();
        assert_eq!(open.backend, Some(Backend::Light));
        assert_eq!(open.size, Some((120, 40)));
        let open = Open::from_query(&query(&[("session", "s1"), ("from", "42")])).unwrap();
        assert_eq!((open.session.as_deref(), open.from), (Some("s1"), Some(42)));
        for bad in [
            &[("cols", "0")][..],
            &[("cols", "100000")],
            &[("rows", "-1")],
            &[("cols", "wide")],
            &[("backend", "vm")],
            &[("from", "3")],
            &[("colour", "yes")],
        ] {
            let error = Open::from_query(&query(bad)).unwrap_err();
            assert_eq!(error.status(), 400, "{bad:?}: {error}");
        }
    }

    #[test]
    fn control_frames_are_strict() {
        let resize: Control =
            crate::decode::decode(br#"{"type":"resize","cols":100,"rows":30}"#).unwrap();
        assert_eq!(
            resize,
            Control::Resize {
                cols: 100,
                rows: 30
            }
        );
        let attach: Control =
            crate::decode::decode(br#"{"type":"attach","session":"a","from":7}"#).unwrap();
        assert_eq!(
            attach,
            Control::Attach {
                session: "a".into(),
                from: Some(7)
            }
        );
        for bad in [
            &br#"{"type":"resize","cols":1}"#[..],
            br#"{"type":"jump"}"#,
            br#"{"type":"resize","cols":1,"rows":1,"x":1}"#,
            b"{nope",
        ] {
            assert!(crate::decode::decode::<Control>(bad).is_err());
        }
        assert!(size(0, 10).is_err() && size(100_000, 10).is_err() && size(10, 0).is_err());
        assert_eq!(size(1000, 1000).unwrap(), (1000, 1000));
    }
}
