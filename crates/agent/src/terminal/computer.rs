//! The computer backend: a login shell on a real pseudo-terminal in the
//! agent's container (`stead_sync::terminal`), bridged through this
//! Durable Object so that every byte lands in the session's transcript.
//!
//! Opening a session brings the computer in step (as a command does: the
//! workspace pushed, the computer started if it does not run), starts the
//! shell there (`TERM=xterm-256color`, in the workspace's root) and opens
//! its stream: a WebSocket from this object through the `Computer` object
//! to the container. The stream is followed by a task the host runs
//! ([`Agent::take_followers`], [`Agent::follow_terminal`]): each piece of
//! output is appended to the transcript, with the container offset it
//! reached, in one step, then sent to the sockets attached. So the
//! transcript is exactly what the shell printed, and a stream reopened
//! after a restart of this object reads on from the container offset the
//! transcript holds (the container keeps the last MiB; what was dropped
//! from it meanwhile is marked in the transcript as lost). Keys and
//! resizes go the other way on the same stream, in order.
//!
//! The shell belongs to the computer, not to a client: a client that goes
//! leaves it running, and while it runs the computer counts as busy (its
//! idle release waits). What it writes comes back into the workspace by
//! live sync, as processes' writes do (`crate::processes::serve`: the
//! alarm ticks while a computer session runs), and once more when it
//! exits. When its stream breaks, the session's status on the computer
//! (a background request: it never starts a computer) says whether the
//! shell is still there; if it is, the next tick of the alarm (or the next
//! key) reopens the stream; if it is not (the computer was released,
//! stopped, or replaced), the session ends with `exit`, `code` null and the
//! reason, and its transcript stays readable.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap, HashSet};

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use stead_sql::Sql;
use stead_sync::terminal::{self as wire, Control, Event, TerminalSpec, TerminalStatus};
use stead_sync::ErrorCode;

use super::transcript::{Backend, State};
use crate::agent::Agent;
use crate::computer::detached;
use crate::computer::{ComputerError, Link};
use crate::error::ApiError;
use crate::host::{Host, Method, Transport, Wire, WireMessage, WireStream};

/// What the shell is told it runs in.
const TERM: &str = "xterm-256color";

/// What a computer session stores beside its transcript.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Remote {
    /// The container's id of the session.
    terminal: String,
    /// The container offset of the next output byte to take.
    read: u64,
}

/// The streams of the computer sessions this instance follows. Memory
/// only: an instance that restarts reopens them.
pub(crate) struct Wires<W> {
    /// The open ones, with the generation of the follower reading each.
    up: RefCell<HashMap<String, (u64, W)>>,
    /// Those being opened now.
    connecting: RefCell<HashSet<String>>,
    /// Opened streams the host has not taken yet.
    followers: RefCell<Vec<Follower>>,
    generation: Cell<u64>,
    /// Whether a computer session runs, once asked: only this instance
    /// starts and ends sessions, so it stays true until it does (asked
    /// after every write, see `crate::processes::serve`).
    running: Cell<Option<bool>>,
}

impl<W> Wires<W> {
    /// A session started or ended: ask the database again.
    pub(crate) fn forget_running(&self) {
        self.running.set(None);
    }
}

impl<W> Default for Wires<W> {
    fn default() -> Self {
        Wires {
            up: RefCell::default(),
            connecting: RefCell::default(),
            followers: RefCell::default(),
            generation: Cell::new(0),
            running: Cell::new(None),
        }
    }
}

/// A computer session's stream, for the host to follow with
/// [`Agent::follow_terminal`].
pub struct Follower {
    session: String,
    generation: u64,
    incoming: WireStream,
}

/// What following a stream comes to.
enum Followed {
    /// The session ended (its shell exited, or it was closed).
    Ended,
    /// The stream broke, for this reason.
    Broke(String),
}

fn to_json(remote: &Remote) -> Result<String, ApiError> {
    serde_json::to_string(remote).map_err(|e| ApiError::Internal(e.to_string()))
}

/// Why a session whose shell the computer no longer has ended.
fn lost_reason(error: &ComputerError) -> String {
    match error {
        ComputerError::Refused {
            code: ErrorCode::UnknownProcess,
            ..
        } => "the computer restarted: the shell is gone".into(),
        ComputerError::Refused {
            code: ErrorCode::Released,
            ..
        } => "the computer was released".into(),
        ComputerError::Refused {
            code: ErrorCode::Gone,
            ..
        } => "the computer stopped".into(),
        other => format!("the computer was lost: {other}"),
    }
}

impl<H: Host> Agent<H> {
    /// The streams opened since the last call, for the host to follow
    /// (each with [`Agent::follow_terminal`], beside its other work).
    pub fn take_followers(&self) -> Vec<Follower> {
        std::mem::take(&mut self.wires.followers.borrow_mut())
    }

    /// Follows a session's stream until it ends or breaks (see the module
    /// docs).
    pub async fn follow_terminal(&self, follower: Follower) {
        let Follower {
            session,
            generation,
            mut incoming,
        } = follower;
        let followed = loop {
            let message = match incoming.next().await {
                Some(Ok(message)) => message,
                Some(Err(reason)) => break Followed::Broke(reason),
                None => break Followed::Broke("the terminal's stream closed".into()),
            };
            match self.take_message(&session, message).await {
                Ok(None) => {}
                Ok(Some(followed)) => break followed,
                Err(error) => break Followed::Broke(error.to_string()),
            }
        };
        self.drop_wire(&session, Some(generation));
        if let Followed::Broke(reason) = followed {
            // Whatever this finds is kept in the session; nothing else to tell.
            let _ = self.check_remote(&session, &reason).await;
        }
    }

    /// Closes and forgets session `id`'s stream (only the one of
    /// `generation`, if given: a newer one stays).
    fn drop_wire(&self, id: &str, generation: Option<u64>) {
        let wire = {
            let mut up = self.wires.up.borrow_mut();
            match up.get(id) {
                Some((g, _)) if generation.is_none_or(|generation| *g == generation) => {
                    up.remove(id)
                }
                _ => None,
            }
        };
        if let Some((_, wire)) = wire {
            wire.close();
        }
    }

    /// Starts a computer session of `size`; returns its id.
    pub(super) async fn start_computer(&self, size: (u16, u16)) -> Result<String, ApiError> {
        let transport = self.computer()?;
        {
            let _turn = self.computer_turn.lock().await;
            if let Some(other) = detached::first(self.db())? {
                // The computer's copy cannot be pushed while a job's
                // command runs there.
                return Err(ComputerError::held_by_job(other.job).into());
            }
            self.bring_in_step(&transport).await?;
        }
        let spec = TerminalSpec {
            cols: u32::from(size.0),
            rows: u32::from(size.1),
            cwd: "/".into(),
            env: BTreeMap::from([("TERM".to_string(), TERM.to_string())]),
        };
        let link = Link::new(&transport);
        let status: TerminalStatus = link
            .json("terminal", Method::Post, wire::TERMINALS_PATH, Some(&spec))
            .await?;
        let remote = Remote {
            terminal: status.id,
            read: 0,
        };
        let id = self.host.random_hex(16)?;
        let created = self.transcripts().create(
            &id,
            Backend::Computer,
            size,
            Some(&to_json(&remote)?),
            self.now_ms(),
        );
        self.wires.forget_running();
        if let Err(error) = created {
            // Refused here (too many sessions): the shell goes too.
            let _ = close_remote(&transport, &remote).await;
            return Err(error);
        }
        self.connect_terminal(&id).await?;
        // The alarm ticks while it runs (live sync, and its stream kept).
        self.arm().await?;
        Ok(id)
    }

    /// What session `id` stores of its shell on the computer.
    fn remote(&self, id: &str) -> Result<Remote, ApiError> {
        let text = self.transcripts().shell(id)?.ok_or_else(|| {
            ApiError::Internal(format!("terminal {id} has no shell on the computer"))
        })?;
        serde_json::from_str(&text).map_err(|e| ApiError::Internal(format!("terminal {id}: {e}")))
    }

    /// Opens session `id`'s stream, reading on from the container offset
    /// its transcript holds, unless this instance holds one or is opening
    /// one. A stream that cannot be opened is looked into
    /// ([`Agent::check_remote`]).
    pub(super) async fn connect_terminal(&self, id: &str) -> Result<(), ApiError> {
        if self.wires.up.borrow().contains_key(id) || self.wires.connecting.borrow().contains(id) {
            return Ok(());
        }
        let remote = self.remote(id)?;
        let transport = self.computer()?;
        self.wires.connecting.borrow_mut().insert(id.to_string());
        let opened = transport
            .connect(&wire::attach_path(&remote.terminal, remote.read))
            .await;
        self.wires.connecting.borrow_mut().remove(id);
        match opened {
            Ok((wire, incoming)) => {
                let generation = self.wires.generation.get() + 1;
                self.wires.generation.set(generation);
                self.wires
                    .up
                    .borrow_mut()
                    .insert(id.to_string(), (generation, wire));
                self.wires.followers.borrow_mut().push(Follower {
                    session: id.to_string(),
                    generation,
                    incoming,
                });
                Ok(())
            }
            Err(reason) => self.check_remote(id, &reason).await,
        }
    }

    /// Session `id`'s stream broke (or would not open) for `reason`: asks
    /// the computer whether its shell is still there. If not, the session
    /// ends, `exit` with the reason; if it is, it stays as it is, to be
    /// reopened.
    async fn check_remote(&self, id: &str, reason: &str) -> Result<(), ApiError> {
        if self.transcripts().get(id)?.state == State::Ended {
            return Ok(());
        }
        let remote = self.remote(id)?;
        let transport = self.computer()?;
        let status = Link::new(&transport)
            .json::<TerminalStatus>(
                "terminal",
                Method::Get,
                &wire::status_path(&remote.terminal),
                None::<&()>,
            )
            .await;
        match status {
            Ok(_) => Ok(()),
            Err(error) => {
                let why = format!("{} ({reason})", lost_reason(&error));
                self.end_terminal(id, None, &why)
            }
        }
    }

    /// One message on session `id`'s stream; `Some` once following it is
    /// over.
    async fn take_message(
        &self,
        id: &str,
        message: WireMessage,
    ) -> Result<Option<Followed>, ApiError> {
        match message {
            WireMessage::Binary(bytes) => self.take_output(id, &bytes),
            WireMessage::Text(text) => match serde_json::from_str::<Event>(&text) {
                Ok(Event::Attached { from } | Event::Skipped { to: from, .. }) => {
                    self.skip_to(id, from)
                }
                Ok(Event::Exit { code, signal }) => {
                    self.remote_exited(id, code.or(signal.map(|s| 128 + s)))
                        .await?;
                    Ok(Some(Followed::Ended))
                }
                // A control frame refused there: it was checked here first,
                // so this is only the two sides disagreeing on a size.
                Ok(Event::Error { .. }) => Ok(None),
                Err(e) => Err(ApiError::Computer(ComputerError::Malformed {
                    step: "terminal",
                    reason: format!("{e}: {text}"),
                })),
            },
        }
    }

    /// Output from the shell: into the transcript with the offset it
    /// reaches, then to the sockets attached.
    fn take_output(&self, id: &str, bytes: &[u8]) -> Result<Option<Followed>, ApiError> {
        if self.transcripts().get(id)?.state == State::Ended {
            return Ok(Some(Followed::Ended));
        }
        let now = self.now_ms();
        self.db().transaction(|| {
            let mut remote = self.remote(id)?;
            remote.read += bytes.len() as u64;
            self.transcripts().save_shell(id, &to_json(&remote)?, now)?;
            self.transcripts().append(id, bytes, now)?;
            Ok::<_, ApiError>(())
        })?;
        self.broadcast(id, bytes);
        Ok(None)
    }

    /// The stream goes on from container offset `from`: bytes before it
    /// that were never taken are gone (the container keeps only its last
    /// MiB), which the transcript says.
    fn skip_to(&self, id: &str, from: u64) -> Result<Option<Followed>, ApiError> {
        let mut remote = self.remote(id)?;
        if from <= remote.read {
            return Ok(None);
        }
        let lost = from - remote.read;
        remote.read = from;
        let note = format!(
            "\r\n[stead: {lost} bytes of output were lost while nothing read the terminal]\r\n"
        );
        let now = self.now_ms();
        self.db().transaction(|| {
            self.transcripts().save_shell(id, &to_json(&remote)?, now)?;
            self.transcripts().append(id, note.as_bytes(), now)?;
            Ok::<_, ApiError>(())
        })?;
        self.broadcast(id, note.as_bytes());
        Ok(None)
    }

    /// The shell exited with `code`: the session ends, the computer
    /// forgets it, and what it wrote last comes into the workspace.
    async fn remote_exited(&self, id: &str, code: Option<i32>) -> Result<(), ApiError> {
        let remote = self.remote(id)?;
        self.end_terminal(id, code.map(i64::from), "exited")?;
        let transport = self.computer()?;
        let _ = close_remote(&transport, &remote).await;
        self.pull_reports().await
    }

    /// Keys typed into computer session `id`.
    pub(super) async fn computer_input(&self, id: &str, bytes: &[u8]) -> Result<(), ApiError> {
        self.send_to_shell(id, WireMessage::Binary(bytes.to_vec()))
            .await
    }

    /// The window of computer session `id` is now `size`.
    pub(super) async fn computer_resize(&self, id: &str, size: (u16, u16)) -> Result<(), ApiError> {
        let control = Control::Resize {
            cols: u32::from(size.0),
            rows: u32::from(size.1),
        };
        let text =
            serde_json::to_string(&control).map_err(|e| ApiError::Internal(e.to_string()))?;
        self.send_to_shell(id, WireMessage::Text(text)).await
    }

    /// Sends `message` on session `id`'s stream, opening it first if this
    /// instance holds none.
    async fn send_to_shell(&self, id: &str, message: WireMessage) -> Result<(), ApiError> {
        if !self.wires.up.borrow().contains_key(id) {
            self.connect_terminal(id).await?;
        }
        let sent = match self.wires.up.borrow().get(id) {
            Some((_, wire)) => wire.send(message),
            None => Err("the terminal's stream is not open".into()),
        };
        sent.map_err(|reason| match self.transcripts().get(id) {
            Ok(session) if session.state == State::Ended => {
                ApiError::TerminalEnded { id: id.to_string() }
            }
            _ => ApiError::Computer(ComputerError::Unreachable {
                step: "terminal",
                reason,
            }),
        })
    }

    /// Closes computer session `id` (running): its stream, and its shell
    /// on the computer (SIGHUP, then SIGKILL).
    pub(super) async fn close_computer(&self, id: &str) -> Result<(), ApiError> {
        let remote = self.remote(id)?;
        self.end_terminal(id, None, "closed")?;
        self.drop_wire(id, None);
        let transport = self.computer()?;
        // Best effort: a computer that is gone has no shell to close.
        let _ = close_remote(&transport, &remote).await;
        Ok(())
    }

    /// The alarm's tick over computer sessions: reopens the streams this
    /// instance does not hold (it restarted, or a stream broke), which
    /// also finds out which shells are gone.
    pub(crate) async fn tend_terminals(&self) -> Result<(), ApiError> {
        for session in self.transcripts().list()? {
            if session.backend == Backend::Computer && session.state == State::Running {
                self.connect_terminal(&session.id).await?;
            }
        }
        Ok(())
    }

    /// Whether a computer session runs (the alarm then ticks, for live
    /// sync and to keep its stream open).
    pub(crate) fn computer_terminal_running(&self) -> Result<bool, ApiError> {
        if let Some(running) = self.wires.running.get() {
            return Ok(running);
        }
        let running = self.transcripts().any_running(Backend::Computer)?;
        self.wires.running.set(Some(running));
        Ok(running)
    }
}

/// Asks the computer to close the shell of `remote` (best effort).
async fn close_remote<T: Transport>(transport: &T, remote: &Remote) -> Result<(), ComputerError> {
    Link::new(transport)
        .bytes(
            "terminal close",
            Method::Delete,
            &wire::status_path(&remote.terminal),
            None,
        )
        .await
        .map(drop)
}
