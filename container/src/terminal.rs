//! Terminal sessions: an interactive login shell on a real pseudo-terminal,
//! the container's half of the terminal's computer backend.
//!
//! A session runs `bash -l` on the slave side of a fresh pty, started the
//! way commands are ([`crate::confine`]: as the unprivileged user, seeing
//! the workspace as `/`, with the clean environment of [`crate::exec`]
//! plus `TERM=xterm-256color`), as the leader of its own session with the
//! pty as its controlling terminal, so job control, Ctrl-C and window
//! size changes behave as in any terminal emulator. The session belongs to
//! the program, not to a client: a client that goes away leaves the shell
//! running, and any number of clients may attach, one after another or at
//! once. What the shell writes goes to a bounded in-memory ring
//! ([`RING_BYTES`]) addressed by byte offsets from the session's start;
//! the durable transcript is the agent's job, so a reader that fell more
//! than the ring behind is told where the kept output starts.
//!
//! # Wire
//!
//! - `POST /v1/terminals` with `{"cols","rows","cwd","env"}` (all optional:
//!   80x24 in `/`) starts a session: `201` with its [`TerminalStatus`].
//!   Sizes are 1 to [`MAX_SIDE`]; at most [`MAX_TERMINALS`] sessions live
//!   per container (`409 BUSY` beyond).
//! - `GET /v1/terminals/{id}`: its [`TerminalStatus`] (`first` and `end`
//!   are the offsets of the kept output, `exit` is set once the shell
//!   ended).
//! - `GET /v1/terminals/{id}/attach?from=N` upgrades to a WebSocket, the
//!   session's ONE ordered stream: what a client sends is applied in the
//!   order sent, keys and resizes alike.
//!   - client binary frame: raw bytes typed into the terminal;
//!   - client text frame: JSON control, `{"type":"resize","cols","rows"}`;
//!     a bad control frame is answered with
//!     `{"type":"error","error":{"code","message"}}` and the stream goes on;
//!   - server text `{"type":"attached","from":F}` first: output follows
//!     from offset `F`, which is `N` (default 0) or, if that was dropped
//!     from the ring, the first kept offset;
//!   - server binary frames: output bytes, contiguous from `F`;
//!   - server text `{"type":"skipped","from","to"}`: a slow reader fell
//!     behind the ring, bytes `from..to` are gone;
//!   - server text `{"type":"exit","code","signal"}` after the last output,
//!     then the socket closes.
//!
//!   An `N` beyond the output's end is refused before the upgrade
//!   (`400 INVALID_REQUEST`), as is an unknown session (`404`).
//! - `DELETE /v1/terminals/{id}` closes the session: SIGHUP to every
//!   process of the shell's session, SIGKILL to what is left after
//!   [`HANGUP_GRACE`]; answered with the final status once the shell is
//!   gone. Shutting the program down closes every session the same way.

use std::collections::{BTreeMap, VecDeque};
use std::fs::File;
use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::process::Stdio;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rustix::pty::{grantpt, openpt, ptsname, unlockpt, OpenptFlags};
use rustix::termios::{tcsetwinsize, Winsize};
use tokio::io::unix::AsyncFd;
use tokio::sync::watch;

use crate::confine::Shell;
use crate::disk::random_hex;
use crate::error::ApiError;
use crate::exec;
use crate::state::Container;

/// Output kept per session for readers that resume.
pub const RING_BYTES: usize = 1 << 20;
/// Sessions that may live at once in one container.
pub const MAX_TERMINALS: usize = 16;
/// The largest number of columns or rows a terminal may have.
pub const MAX_SIDE: u32 = 1000;
/// Between SIGHUP and SIGKILL when closing a session.
pub const HANGUP_GRACE: Duration = Duration::from_secs(1);
/// Most bytes read from the pty at once.
const READ_PIECE: usize = 64 * 1024;
/// How long output is still read after the shell exited: a background job
/// may hold the terminal open forever.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(200);

pub use stead_sync::terminal::{Control, ExitInfo, TerminalSpec, TerminalStatus};

/// A checked terminal size.
pub fn checked_size(cols: u32, rows: u32) -> Result<Winsize, ApiError> {
    let range = 1..=MAX_SIDE;
    if !range.contains(&cols) || !range.contains(&rows) {
        return Err(ApiError::InvalidRequest(format!(
            "a terminal is 1 to {MAX_SIDE} columns and rows, not {cols}x{rows}"
        )));
    }
    Ok(Winsize {
        ws_col: cols as u16,
        ws_row: rows as u16,
        ws_xpixel: 0,
        ws_ypixel: 0,
    })
}

/// The output kept: the last [`RING_BYTES`] bytes, ending at `end`.
#[derive(Default)]
struct Ring {
    bytes: VecDeque<u8>,
    end: u64,
}

impl Ring {
    fn first(&self) -> u64 {
        self.end - self.bytes.len() as u64
    }

    fn push(&mut self, data: &[u8]) {
        self.bytes.extend(data);
        let over = self.bytes.len().saturating_sub(RING_BYTES);
        self.bytes.drain(..over);
        self.end += data.len() as u64;
    }

    /// Up to `max` bytes from `from` (at least the first kept offset).
    fn read(&self, from: u64, max: usize) -> Vec<u8> {
        let skip = (from - self.first()) as usize;
        self.bytes.iter().skip(skip).take(max).copied().collect()
    }
}

/// What readers wait on: the ring and, at the end, the exit.
struct Output {
    ring: Ring,
    exit: Option<ExitInfo>,
}

/// A piece of what a reader is owed.
pub enum Piece {
    /// Bytes from the reader's offset on.
    Bytes(Vec<u8>),
    /// The reader fell behind: `from..to` is gone.
    Skipped { from: u64, to: u64 },
    /// All output was read and the shell ended.
    Exit(ExitInfo),
}

/// One session.
pub struct Terminal {
    pub id: String,
    pid: Option<u32>,
    master: AsyncFd<OwnedFd>,
    size: Mutex<Winsize>,
    output: Mutex<Output>,
    /// Bumped whenever output grows or the shell ends.
    changed: watch::Sender<u64>,
    /// Writers take turns, so each frame reaches the shell whole and in
    /// the order frames were received.
    input: tokio::sync::Mutex<()>,
}

impl Terminal {
    fn lock(&self) -> MutexGuard<'_, Output> {
        self.output.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn status(&self) -> TerminalStatus {
        let size = *self.size.lock().unwrap_or_else(|p| p.into_inner());
        let output = self.lock();
        TerminalStatus {
            id: self.id.clone(),
            pid: self.pid,
            cols: size.ws_col,
            rows: size.ws_row,
            first: output.ring.first(),
            end: output.ring.end,
            exit: output.exit,
        }
    }

    /// Where a reader asking for `from` starts.
    pub fn start_at(&self, from: u64) -> Result<u64, ApiError> {
        let output = self.lock();
        if from > output.ring.end {
            return Err(ApiError::InvalidRequest(format!(
                "offset {from} is beyond the end of the output ({})",
                output.ring.end
            )));
        }
        Ok(from.max(output.ring.first()))
    }

    /// A receiver that wakes when there is more to read.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// What a reader at `at` is owed now, if anything.
    pub fn next_piece(&self, at: u64) -> Option<Piece> {
        let output = self.lock();
        let first = output.ring.first();
        if at < first {
            return Some(Piece::Skipped {
                from: at,
                to: first,
            });
        }
        if at < output.ring.end {
            return Some(Piece::Bytes(output.ring.read(at, READ_PIECE)));
        }
        output.exit.map(Piece::Exit)
    }

    /// Types `data` into the terminal.
    pub async fn write(&self, mut data: &[u8]) -> io::Result<()> {
        let _turn = self.input.lock().await;
        while !data.is_empty() {
            let mut ready = self.master.writable().await?;
            match ready.try_io(|fd| rustix::io::write(fd.get_ref(), data).map_err(io::Error::from))
            {
                Ok(Ok(n)) => data = &data[n..],
                Ok(Err(error)) => return Err(error),
                Err(_would_block) => continue,
            }
        }
        Ok(())
    }

    /// Sets the window size (the shell's foreground job gets SIGWINCH).
    pub fn resize(&self, cols: u32, rows: u32) -> Result<(), ApiError> {
        let size = checked_size(cols, rows)?;
        tcsetwinsize(self.master.get_ref(), size)
            .map_err(|e| ApiError::io("resizing the terminal", e.into()))?;
        *self.size.lock().unwrap_or_else(|p| p.into_inner()) = size;
        Ok(())
    }

    /// Ends the shell and everything in its session: SIGHUP, then SIGKILL
    /// after [`HANGUP_GRACE`]; returns once the shell is gone.
    pub async fn close(&self) -> ExitInfo {
        let mut changed = self.subscribe();
        if let Some(exit) = self.lock().exit {
            return exit;
        }
        if let Some(pid) = self.pid {
            signal_session(pid, libc::SIGHUP);
        }
        let ended = async {
            loop {
                if let Some(exit) = self.lock().exit {
                    return exit;
                }
                if changed.changed().await.is_err() {
                    return ExitInfo {
                        code: None,
                        signal: None,
                    };
                }
            }
        };
        tokio::pin!(ended);
        tokio::select! {
            exit = &mut ended => return exit,
            _ = tokio::time::sleep(HANGUP_GRACE) => {}
        }
        if let Some(pid) = self.pid {
            signal_session(pid, libc::SIGKILL);
        }
        ended.await
    }

    fn keep(&self, data: &[u8]) {
        self.lock().ring.push(data);
        self.changed.send_modify(|n| *n += 1);
    }

    fn ended(&self, exit: ExitInfo) {
        self.lock().exit = Some(exit);
        self.changed.send_modify(|n| *n += 1);
    }

    /// Reads some output; `None` once the terminal's other side is closed
    /// by everything (Linux reports that as EIO).
    async fn read_some(&self, buf: &mut [u8]) -> Option<usize> {
        loop {
            let mut ready = self.master.readable().await.ok()?;
            match ready
                .try_io(|fd| rustix::io::read(fd.get_ref(), &mut *buf).map_err(io::Error::from))
            {
                Ok(Ok(0)) | Ok(Err(_)) => return None,
                Ok(Ok(n)) => return Some(n),
                Err(_would_block) => continue,
            }
        }
    }
}

/// Sends `signal` to every process in the session `sid` leads (found in
/// `/proc`: job control gives each job its own process group, so the
/// shell's group alone would miss them).
fn signal_session(sid: u32, signal: i32) {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        if session_of(&stat) == Some(sid) {
            // SAFETY: kill(2) has no memory-safety preconditions.
            unsafe {
                libc::kill(pid, signal);
            }
        }
    }
}

/// The session id in a `/proc/<pid>/stat` line (the command name, in
/// parentheses, may itself hold spaces and parentheses).
fn session_of(stat: &str) -> Option<u32> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    // state, ppid, pgrp, session
    after_name.split_whitespace().nth(3)?.parse().ok()
}

/// The sessions of one container.
#[derive(Default)]
pub struct Terminals {
    map: Mutex<BTreeMap<String, Arc<Terminal>>>,
}

impl Terminals {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Arc<Terminal>>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn get(&self, id: &str) -> Result<Arc<Terminal>, ApiError> {
        self.lock()
            .get(id)
            .cloned()
            .ok_or_else(|| ApiError::UnknownTerminal(id.to_string()))
    }

    /// Whether a shell still runs: an open session is use of the computer,
    /// as a running command is, so it is not released as idle.
    pub fn any_live(&self) -> bool {
        self.lock()
            .values()
            .any(|terminal| terminal.lock().exit.is_none())
    }

    /// Forgets session `id` (after it was closed).
    pub fn remove(&self, id: &str) {
        self.lock().remove(id);
    }

    /// Closes every session (the program is shutting down).
    pub fn close_all(&self) {
        for terminal in self.lock().values() {
            let terminal = terminal.clone();
            tokio::spawn(async move { terminal.close().await });
        }
    }
}

/// Checks `spec` and starts a session on `container`.
pub fn start(container: &Arc<Container>, spec: TerminalSpec) -> Result<Arc<Terminal>, ApiError> {
    let size = checked_size(spec.cols, spec.rows)?;
    if container.is_stopping() {
        return Err(ApiError::ShuttingDown);
    }
    let cwd = exec::checked_cwd(container, &spec.cwd)?;
    exec::check_env(&spec.env)?;
    let mut map = container.terminals.lock();
    // Sessions whose shell ended and that nobody closed make room.
    map.retain(|_, terminal| terminal.lock().exit.is_none());
    if map.len() >= MAX_TERMINALS {
        return Err(ApiError::TooManyTerminals(MAX_TERMINALS));
    }
    let id = format!(
        "t{}",
        random_hex(8).map_err(|e| ApiError::io("naming a terminal", e))?
    );
    let (master, slave) = open_pty(size).map_err(|e| ApiError::io("opening a terminal", e))?;
    // SAFETY: the `AsyncFd` owns the descriptor: it stays open, the same
    // one, until the `AsyncFd` is dropped.
    let master = unsafe { AsyncFd::register(master) }
        .map_err(|e| ApiError::io("watching a terminal", e.into()))?;
    // What a terminal emulator says it is; the request may say otherwise.
    let mut env = spec.env;
    env.entry("TERM".into())
        .or_insert_with(|| "xterm-256color".into());
    let mut command = exec::confined(container, &cwd, Shell::Login, &env)
        .map_err(|e| ApiError::io("preparing the shell", e))?;
    // As a login does, the terminal is given to its user.
    let stdio = (|| {
        container.confinement.own_file(&slave)?;
        let stdio = || slave.try_clone().map(Stdio::from);
        Ok::<_, io::Error>((stdio()?, stdio()?, stdio()?))
    })()
    .map_err(|e| ApiError::io("opening a terminal", e))?;
    command.stdin(stdio.0).stdout(stdio.1).stderr(stdio.2);
    // SAFETY: setsid and the TIOCSCTTY ioctl are plain system calls, safe
    // in the child of a fork; the shell leads a new session whose
    // controlling terminal is its standard input, the pty.
    unsafe {
        command.pre_exec(|| {
            rustix::process::setsid()?;
            rustix::process::ioctl_tiocsctty(BorrowedFd::borrow_raw(0))?;
            Ok(())
        });
    }
    let child = command
        .spawn()
        .map_err(|e| ApiError::io("starting the shell", e))?;
    // Only the shell holds the other side now, so reads end when it and
    // what it started are gone.
    drop(command);
    drop(slave);
    let (changed, _) = watch::channel(0);
    let terminal = Arc::new(Terminal {
        id: id.clone(),
        pid: child.id(),
        master,
        size: Mutex::new(size),
        output: Mutex::new(Output {
            ring: Ring::default(),
            exit: None,
        }),
        changed,
        input: tokio::sync::Mutex::new(()),
    });
    map.insert(id, terminal.clone());
    tokio::spawn(pump(terminal.clone(), child));
    Ok(terminal)
}

/// A new pty of `size`: its master side (non-blocking) and its slave.
fn open_pty(size: Winsize) -> io::Result<(OwnedFd, File)> {
    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC)?;
    grantpt(&master)?;
    unlockpt(&master)?;
    let name = ptsname(&master, Vec::new())?;
    let slave = rustix::fs::open(
        name.as_c_str(),
        rustix::fs::OFlags::RDWR | rustix::fs::OFlags::NOCTTY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )?;
    tcsetwinsize(&slave, size)?;
    rustix::io::ioctl_fionbio(&master, true)?;
    Ok((master, File::from(slave)))
}

/// Moves output into the ring until the shell ended and the terminal is
/// drained, then records the exit.
async fn pump(terminal: Arc<Terminal>, mut child: tokio::process::Child) {
    let mut buf = vec![0u8; READ_PIECE];
    let mut status = None;
    let mut open = true;
    while open {
        tokio::select! {
            read = terminal.read_some(&mut buf) => match read {
                Some(n) => terminal.keep(&buf[..n]),
                None => open = false,
            },
            waited = child.wait(), if status.is_none() => {
                status = Some(waited);
                break;
            }
        }
    }
    // After the shell exited, what it wrote last is still read; a job it
    // left holding the terminal does not keep the session from ending.
    let deadline = tokio::time::Instant::now() + DRAIN_AFTER_EXIT;
    while open {
        tokio::select! {
            read = terminal.read_some(&mut buf) => match read {
                Some(n) => terminal.keep(&buf[..n]),
                None => open = false,
            },
            _ = tokio::time::sleep_until(deadline) => open = false,
        }
    }
    let status = match status {
        Some(status) => status,
        None => child.wait().await,
    };
    use std::os::unix::process::ExitStatusExt;
    terminal.ended(match status {
        Ok(status) => ExitInfo {
            code: status.code(),
            signal: status.signal(),
        },
        Err(_) => ExitInfo {
            code: None,
            signal: None,
        },
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_keeps_the_last_bytes_at_their_offsets() {
        let mut ring = Ring::default();
        ring.push(b"hello ");
        ring.push(&vec![b'x'; RING_BYTES]);
        assert_eq!(ring.end, 6 + RING_BYTES as u64);
        assert_eq!(ring.first(), 6);
        assert_eq!(ring.read(6, 3), b"xxx");
        ring.push(b"end");
        assert_eq!(ring.first(), 9);
        assert_eq!(ring.read(ring.end - 3, 10), b"end");
    }

    #[test]
    fn the_session_is_read_past_the_command_name() {
        let stat = "42 (a) b (c) S 1 40 41 0 -1";
        assert_eq!(session_of(stat), Some(41));
        assert_eq!(session_of("garbage"), None);
    }

    #[test]
    fn sizes_are_checked() {
        assert!(checked_size(0, 24).is_err());
        assert!(checked_size(80, 0).is_err());
        assert!(checked_size(MAX_SIDE + 1, 24).is_err());
        let size = checked_size(132, 43).unwrap();
        assert_eq!((size.ws_col, size.ws_row), (132, 43));
    }
}
