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
            match bytes.iter().rposition(|b| *b == INTERRUPT) {
                // Ctrl-C drops what was typed before it (as a terminal
                // flushes its input on an interrupt).
                Some(at) => {
                    if let Some(ring) = running.interrupt.take() {
                        let _ = ring.send(());
                    }
                    running.typed = bytes[at + 1..].to_vec();
                }
                None if running.typed.len() + bytes.len() > super::MAX_INPUT => {
                    return Err(ApiError::BodyTooLarge {
                        limit: super::MAX_INPUT,
                    })
                }
                None => running.typed.extend_from_slice(bytes),
            }
            return Ok(());
        }
        let id = &session.id;
        let text = self.transcripts().shell(id)?.unwrap_or_default();
        let mut stored: Stored = serde_json::from_str(&text)
            .map_err(|e| ApiError::Internal(format!("terminal {id}: {e}")))?;
        let mut rest = bytes.to_vec();
        let mut out = Vec::new();
        if std::mem::take(&mut stored.waiting) {
            out.extend(stored.editor.begin(&prompt(&stored.shell)));
        }
        loop {
            let (event, took) = stored.editor.feed(&rest, &mut out);
            rest.drain(..took);
            let Some(event) = event else {
                self.save_light(id, &stored)?;
                return self.print(id, &out);
            };
            match event {
                Event::Submit(line) => {
                    let line = match std::mem::take(&mut stored.continued) {
                        continued if continued.is_empty() => line,
                        continued => format!("{continued}\n{line}"),
                    };
                    if line.trim().is_empty() {
                        out.extend(stored.editor.begin(&prompt(&stored.shell)));
                        continue;
                    }
                    if stead_shell::session::incomplete(&line) {
                        stored.continued = line;
                        out.extend(stored.editor.begin(CONTINUED));
                        continue;
                    }
                    let size = self.transcripts().get(id)?;
                    let before = stored.shell.clone();
                    let (ran, owed_ms) = self
                        .run_light_line(caller, id, &mut stored.shell, &line, &size)
                        .await?;
                    out.extend(onlcr(&ran.output));
                    if stored.shell.state.len() > MAX_SHELL_STATE {
                        let warning = format!(
                            "stead: the shell's state after this line ({} bytes) is over {} \
                             bytes and was not kept: unset large variables\r\n",
                            stored.shell.state.len(),
                            MAX_SHELL_STATE
                        );
                        out.extend(warning.into_bytes());
                        stored.shell = Shell {
                            status: ran.status,
                            ..before
                        };
                    }
                    if ran.ended {
                        out.extend_from_slice(b"exit\r\n");
                        self.print(id, &out)?;
                        return self.end_terminal(id, Some(i64::from(ran.status)), "exited");
                    }
                    if owed_ms > 0 {
                        stored.waiting = true;
                        self.save_light(id, &stored)?;
                        stored.waiting = false;
                        self.print(id, &std::mem::take(&mut out))?;
                        let Some((interrupted, typed)) = self.wait_line(id, owed_ms).await else {
                            // Closed meanwhile.
                            return Ok(());
                        };
                        if interrupted {
                            out.extend_from_slice(b"^C\r\n");
                            stored.shell.status = INTERRUPTED;
                        }
                        rest.extend(typed);
                    }
                }
                Event::Interrupt => {
                    stored.continued.clear();
                    stored.shell.status = INTERRUPTED;
                }
                Event::End if !stored.continued.is_empty() => {
                    // Ctrl-D inside a command that goes on ends the command,
                    // not the shell: bash reports it unfinished.
                    out.extend_from_slice(b"\r\n");
                    let text = std::mem::take(&mut stored.continued);
                    let size = self.transcripts().get(id)?;
                    let (ran, _) = self
                        .run_light_line(caller, id, &mut stored.shell, &text, &size)
                        .await?;
                    out.extend(onlcr(&ran.output));
                }
                Event::End => {
                    // As bash does on Ctrl-D: says so, and exits (its EXIT
                    // trap runs) with the last status.
                    out.extend_from_slice(b"exit\r\n");
                    let size = self.transcripts().get(id)?;
                    let (ran, _) = self
                        .run_light_line(caller, id, &mut stored.shell, "exit", &size)
                        .await?;
                    out.extend(onlcr(&ran.output));
                    self.print(id, &out)?;
                    return self.end_terminal(id, Some(i64::from(ran.status)), "exited");
                }
                Event::Complete { word, command } => {
                    let vfs = self.vfs();
                    let clock = HostClock::new(&self.host);
                    let matches = stored.shell.complete(&vfs, &clock, &word, command);
                    stored.editor.complete(&word, &matches, &mut out);
                    continue;
                }
            }
            out.extend(stored.editor.begin(&prompt(&stored.shell)));
        }
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
