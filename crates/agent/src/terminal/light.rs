//! The light backend: a line terminal over the in-isolate shell, with no
//! container.
//!
//! A session stores its line editor ([`Editor`]) and its shell
//! ([`stead_shell::session::Session`]: variables, functions, aliases,
//! options, traps, cwd) as JSON in its row, so both survive reconnects and
//! restarts of the Durable Object. Keys are fed to the editor; a submitted
//! line runs in the shell as an exec does (an automatic checkpoint before
//! it, so `undo` takes it back; recorded in the audit log as
//! `terminal.line`), its output, stdout and stderr together, printed with
//! each `\n` as `\r\n` (what a terminal's `onlcr` does), then the prompt,
//! which shows the cwd. A line that meets content kept in the object
//! store runs again once it is back, from the shell state before it.
//!
//! The shell runs a line to its end in one step, except the time its
//! `sleep`s stand for, which is waited afterwards: while it is waited the
//! line is [`Running`], Ctrl-C cuts the wait short (`^C`, status 130) and
//! other keys wait their turn, as a terminal's type-ahead does.

use std::rc::Rc;

use futures::channel::oneshot;
use serde::{Deserialize, Serialize};
use serde_json::json;
use stead_shell::content::ContentWait;
use stead_shell::session::Session as Shell;
use stead_shell::Limits;
use stead_sql::Sql;
use stead_vfs::{Before, Operation, Scope, VfsError};

use super::editor::{Editor, Event};
use super::transcript::{Backend, Session};
use crate::agent::{Agent, HostClock};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::host::Host;
use crate::shell_net::Fetched;

/// Ctrl-C.
const INTERRUPT: u8 = 0x03;

/// The status of a line cut short by Ctrl-C (128 + SIGINT), as in bash.
const INTERRUPTED: i32 = 130;

/// The wall time a line may stand for. Within a line only its `sleep`s
/// move the shell's clock (the isolate's stands still while it computes,
/// which the CPU and count limits bound), and a terminal's user waits out
/// a `sleep 100` or cuts it short with Ctrl-C, as in bash: an hour, not
/// an exec's 30 s.
const LINE_WALL_MS: u64 = 60 * 60_000;

/// The most a session's shell state may take in storage (a row holds at
/// most 2 MB): a line that leaves more (a huge variable) keeps the state
/// from before it, and says so.
const MAX_SHELL_STATE: usize = 1 << 20;

/// Why one run of a line did not count.
enum LineStop {
    /// It met these chunks kept in the object store.
    Content(Vec<i64>),
    Failed(ApiError),
}

impl From<VfsError> for LineStop {
    fn from(error: VfsError) -> Self {
        LineStop::Failed(error.into())
    }
}

impl From<stead_sql::SqlError> for LineStop {
    fn from(error: stead_sql::SqlError) -> Self {
        LineStop::Failed(error.into())
    }
}

/// What a light session stores.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Stored {
    shell: Shell,
    editor: Editor,
    /// A line is waiting out its sleeps: set before the wait, cleared
    /// after it. Found set with no line [`Running`], the wait was cut off
    /// by a restart: the prompt it owed is shown before the next keys.
    #[serde(default)]
    waiting: bool,
    /// The lines of a command that goes on (an open `if`, a quote), while
    /// the rest is typed after the `> ` prompt.
    #[serde(default)]
    continued: String,
}

/// A light session whose line is waiting out its `sleep`.
pub(crate) struct Running {
    /// Rung by Ctrl-C.
    interrupt: Option<oneshot::Sender<()>>,
    /// Keys typed meanwhile, fed once the line is done.
    typed: Vec<u8>,
}

impl Running {
    /// Keys typed while the line waits: Ctrl-C cuts the wait short and
    /// drops what was typed before it (as a terminal flushes its input on
    /// an interrupt); other keys wait their turn, up to
    /// [`super::MAX_INPUT`].
    fn type_ahead(&mut self, bytes: &[u8]) -> Result<(), ApiError> {
        match bytes.iter().rposition(|b| *b == INTERRUPT) {
            Some(at) => {
                if let Some(ring) = self.interrupt.take() {
                    let _ = ring.send(());
                }
                self.typed = bytes[at + 1..].to_vec();
            }
            None if self.typed.len() + bytes.len() > super::MAX_INPUT => {
                return Err(ApiError::BodyTooLarge {
                    limit: super::MAX_INPUT,
                })
            }
            None => self.typed.extend_from_slice(bytes),
        }
        Ok(())
    }
}

/// Keys being fed to a light session with no line running: who types
/// them, what the session stores, the output its terminal is owed and the
/// keys not fed yet (typed ahead while a line waited, they follow).
struct Feed<'a> {
    caller: &'a Caller,
    id: &'a str,
    stored: Stored,
    out: Vec<u8>,
    rest: Vec<u8>,
}

impl Feed<'_> {
    /// Begins a line at the prompt.
    fn prompt(&mut self) {
        self.out
            .extend(self.stored.editor.begin(&prompt(&self.stored.shell)));
    }
}

/// What follows an event of a light session's editor.
enum AfterEvent {
    /// A line begins at the prompt.
    Prompt,
    /// The editor goes on from where the event left it (a completion, or
    /// the `> ` line of a command that goes on).
    Editing,
    /// The session is over: its shell exited, or it was closed while a
    /// line waited.
    Closed,
}

/// The prompt of a command's next line (bash's `PS2`).
const CONTINUED: &str = "> ";

/// The prompt: the cwd, as bash's `\w$ ` shows it.
fn prompt(shell: &Shell) -> String {
    format!("{}$ ", shell.cwd)
}

/// `\n` as `\r\n`, as a terminal's output processing does.
fn onlcr(output: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(output.len() + output.len() / 16);
    for &byte in output {
        if byte == b'\n' {
            out.push(b'\r');
        }
        out.push(byte);
    }
    out
}

impl<H: Host> Agent<H> {
    /// Starts a light session of `size` and prints its first prompt;
    /// returns its id.
    pub(super) fn start_light(&self, size: (u16, u16)) -> Result<String, ApiError> {
        let id = self.host.random_hex(16)?;
        let mut stored = Stored::default();
        let greeting = stored.editor.begin(&prompt(&stored.shell));
        let text = serde_json::to_string(&stored).map_err(|e| ApiError::Internal(e.to_string()))?;
        let now = self.now_ms();
        self.db().transaction(|| {
            self.transcripts()
                .create(&id, Backend::Light, size, Some(&text), now)?;
            self.transcripts().append(&id, &greeting, now)?;
            Ok::<_, ApiError>(())
        })?;
        Ok(id)
    }

    /// Keys typed into light session `session`.
    pub(super) async fn light_input(
        &self,
        caller: &Caller,
        session: &Session,
        bytes: &[u8],
    ) -> Result<(), ApiError> {
        if let Some(running) = self.terminals.borrow_mut().get_mut(&session.id) {
            return running.type_ahead(bytes);
        }
        let id = &session.id;
        let text = self.transcripts().shell(id)?.unwrap_or_default();
        let stored: Stored = serde_json::from_str(&text)
            .map_err(|e| ApiError::Internal(format!("terminal {id}: {e}")))?;
        let mut feed = Feed {
            caller,
            id,
            stored,
            out: Vec::new(),
            rest: bytes.to_vec(),
        };
        if std::mem::take(&mut feed.stored.waiting) {
            feed.prompt();
        }
        loop {
            let (event, took) = feed.stored.editor.feed(&feed.rest, &mut feed.out);
            feed.rest.drain(..took);
            let Some(event) = event else {
                self.save_light(id, &feed.stored)?;
                return self.print(id, &feed.out);
            };
            match self.light_event(&mut feed, event).await? {
                AfterEvent::Prompt => feed.prompt(),
                AfterEvent::Editing => {}
                AfterEvent::Closed => return Ok(()),
            }
        }
    }

    /// Answers one event of a light session's editor.
    async fn light_event(&self, feed: &mut Feed<'_>, event: Event) -> Result<AfterEvent, ApiError> {
        match event {
            Event::Submit(line) => self.light_submit(feed, line).await,
            Event::Interrupt => {
                feed.stored.continued.clear();
                feed.stored.shell.status = INTERRUPTED;
                Ok(AfterEvent::Prompt)
            }
            Event::End if !feed.stored.continued.is_empty() => {
                // Ctrl-D inside a command that goes on ends the command,
                // not the shell: bash reports it unfinished.
                feed.out.extend_from_slice(b"\r\n");
                let text = std::mem::take(&mut feed.stored.continued);
                self.light_line(feed, &text).await?;
                Ok(AfterEvent::Prompt)
            }
            Event::End => {
                // As bash does on Ctrl-D: says so, and exits (its EXIT
                // trap runs) with the last status.
                feed.out.extend_from_slice(b"exit\r\n");
                let (ran, _) = self.light_line(feed, "exit").await?;
                self.exit_light(feed, ran.status)
            }
            Event::Complete { word, command } => {
                let vfs = self.vfs();
                let clock = HostClock::new(&self.host);
                let matches = feed.stored.shell.complete(&vfs, &clock, &word, command);
                feed.stored.editor.complete(&word, &matches, &mut feed.out);
                Ok(AfterEvent::Editing)
            }
        }
    }

    /// A submitted line: run, joined to the lines before it of a command
    /// that goes on, or kept to wait for the rest of its command.
    async fn light_submit(
        &self,
        feed: &mut Feed<'_>,
        line: String,
    ) -> Result<AfterEvent, ApiError> {
        let line = match std::mem::take(&mut feed.stored.continued) {
            continued if continued.is_empty() => line,
            continued => format!("{continued}\n{line}"),
        };
        if line.trim().is_empty() {
            return Ok(AfterEvent::Prompt);
        }
        if stead_shell::session::incomplete(&line) {
            feed.stored.continued = line;
            feed.out.extend(feed.stored.editor.begin(CONTINUED));
            return Ok(AfterEvent::Editing);
        }
        let before = feed.stored.shell.clone();
        let (ran, owed_ms) = self.light_line(feed, &line).await?;
        if feed.stored.shell.state.len() > MAX_SHELL_STATE {
            let warning = format!(
                "stead: the shell's state after this line ({} bytes) is over {} \
                 bytes and was not kept: unset large variables\r\n",
                feed.stored.shell.state.len(),
                MAX_SHELL_STATE
            );
            feed.out.extend(warning.into_bytes());
            feed.stored.shell = Shell {
                status: ran.status,
                ..before
            };
        }
        if ran.ended {
            feed.out.extend_from_slice(b"exit\r\n");
            return self.exit_light(feed, ran.status);
        }
        if owed_ms > 0 {
            return self.wait_out_sleeps(feed, owed_ms).await;
        }
        Ok(AfterEvent::Prompt)
    }

    /// Runs `line` in the session's shell (see [`Self::run_light_line`]) and
    /// puts its output in what the terminal is owed.
    async fn light_line(
        &self,
        feed: &mut Feed<'_>,
        line: &str,
    ) -> Result<(stead_shell::session::Line, u64), ApiError> {
        let size = self.transcripts().get(feed.id)?;
        let (ran, owed_ms) = self
            .run_light_line(feed.caller, feed.id, &mut feed.stored.shell, line, &size)
            .await?;
        feed.out.extend(onlcr(&ran.output));
        Ok((ran, owed_ms))
    }

    /// Ends the session, its shell having exited with `status`.
    fn exit_light(&self, feed: &Feed<'_>, status: i32) -> Result<AfterEvent, ApiError> {
        self.print(feed.id, &feed.out)?;
        self.end_terminal(feed.id, Some(i64::from(status)), "exited")?;
        Ok(AfterEvent::Closed)
    }

    /// Waits out the `owed_ms` a line's `sleep`s stand for, its output
    /// printed first and the session stored as waiting meanwhile; the keys
    /// typed meanwhile are fed next.
    async fn wait_out_sleeps(
        &self,
        feed: &mut Feed<'_>,
        owed_ms: u64,
    ) -> Result<AfterEvent, ApiError> {
        feed.stored.waiting = true;
        self.save_light(feed.id, &feed.stored)?;
        feed.stored.waiting = false;
        self.print(feed.id, &std::mem::take(&mut feed.out))?;
        let Some((interrupted, typed)) = self.wait_line(feed.id, owed_ms).await else {
            // Closed meanwhile.
            return Ok(AfterEvent::Closed);
        };
        if interrupted {
            feed.out.extend_from_slice(b"^C\r\n");
            feed.stored.shell.status = INTERRUPTED;
        }
        feed.rest.extend(typed);
        Ok(AfterEvent::Prompt)
    }

    fn save_light(&self, id: &str, stored: &Stored) -> Result<(), ApiError> {
        let text = serde_json::to_string(stored).map_err(|e| ApiError::Internal(e.to_string()))?;
        self.transcripts().save_shell(id, &text, self.now_ms())
    }

    /// Runs `line` in `shell`: what it did and the milliseconds its
    /// `sleep`s owe. A run that meets content kept in the object store is
    /// rolled back, the shell's state with it, and run again once the
    /// content is back (as an exec is, see `crate::shell_net`).
    async fn run_light_line(
        &self,
        caller: &Caller,
        id: &str,
        shell: &mut Shell,
        line: &str,
        session: &Session,
    ) -> Result<(stead_shell::session::Line, u64), ApiError> {
        let content = Rc::new(ContentWait::default());
        let mut fetched = Fetched::default();
        let (ran, owed_ms) = loop {
            let mut attempt = shell.clone();
            match self.run_light_once(caller, &mut attempt, line, session, &content) {
                Ok(ran) => {
                    *shell = attempt;
                    break ran;
                }
                Err(LineStop::Content(chunks)) => {
                    self.bring_back_for_exec(&chunks, &mut fetched).await?
                }
                Err(LineStop::Failed(error)) => return Err(error),
            }
        };
        let actor = caller.actor();
        let note = crate::audit::Note {
            target: Some(line.chars().take(200).collect()),
            detail: Some(json!({ "session": id, "exit_code": ran.status })),
        };
        // The line has run: failing to record it must not fail it.
        let _ = crate::audit::record(
            self.db(),
            self.now_ms(),
            &actor,
            "terminal.line",
            &note,
            "ok",
        );
        crate::subscriptions::notify_changes(self);
        Ok((ran, owed_ms))
    }

    /// One run of `line`, in one transaction, noting in `content` what it
    /// met in the object store (then it is rolled back).
    fn run_light_once(
        &self,
        caller: &Caller,
        shell: &mut Shell,
        line: &str,
        session: &Session,
        content: &Rc<ContentWait>,
    ) -> Result<(stead_shell::session::Line, u64), LineStop> {
        let vfs = self.vfs();
        let clock = HostClock::new(&self.host);
        let env = [
            ("COLUMNS", session.cols.to_string()),
            ("LINES", session.rows.to_string()),
        ];
        let actor = caller.actor();
        let before = Before {
            actor: &actor,
            operation: &Operation::Exec,
            note: Some(line),
            scope: Scope::Whole,
        };
        let ran = crate::checkpoints::around(self, &vfs, before, |_| {
            let limits = Limits {
                max_wall_ms: LINE_WALL_MS,
                ..Limits::default()
            };
            self.db().transaction(|| {
                let ran = stead_shell::content::with_wait(content, || {
                    shell.run(&vfs, &clock, line, &env, limits)
                });
                match content.waiting() {
                    true => Err(LineStop::Content(content.take())),
                    false => Ok(ran),
                }
            })
        })?;
        Ok((ran, clock.owed_ms.get()))
    }

    /// Waits out `owed_ms` of a line's sleeps, unless Ctrl-C comes first:
    /// whether it did, and the keys typed meanwhile; `None` if the session
    /// was closed meanwhile.
    async fn wait_line(&self, id: &str, owed_ms: u64) -> Option<(bool, Vec<u8>)> {
        let (ring, rung) = oneshot::channel();
        self.terminals.borrow_mut().insert(
            id.to_string(),
            Running {
                interrupt: Some(ring),
                typed: Vec::new(),
            },
        );
        let sleep = std::pin::pin!(self.host.sleep(owed_ms));
        let interrupted = match futures::future::select(sleep, rung).await {
            futures::future::Either::Left(_) => false,
            futures::future::Either::Right((rung, _)) => rung.is_ok(),
        };
        let running = self.terminals.borrow_mut().remove(id)?;
        Some((interrupted, running.typed))
    }
}
