//! Running one command and logging what it does.
//!
//! A command runs as `bash -lc <command>` in its own process group, with a
//! clean environment (never the program's own, which held the secret), so a
//! timeout, a cancel or a vanished client can stop the whole tree it
//! started with one signal. Output goes piece by piece to the exec's
//! [`OutputLog`], which the exec stream follows (and a reattach reads from
//! any offset); the log's last event carries the exit status and the scan
//! of what the command changed.
//!
//! If the client of a command that is not detached goes away mid-stream,
//! the command is killed and no report is made: its changes stay on disk,
//! unacknowledged, and the next command's scan reports them. A detached
//! command keeps running without a client, and its report waits in the log.
//! If the scan itself fails, the log ends with an `error` event instead of
//! `exit`, never silently.
//!
//! Who runs the command and what it can see is [`crate::confine`]'s
//! business; a stop (timeout, cancel, the client gone, or the program's own
//! shutdown) is a [`StopSignal`] that ends the whole process group.

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use stead_sync::{ErrorCode, ErrorDetail, ExecEvent, ExecSpec, Exit};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Child;
use tokio::sync::{oneshot, Notify};
use tokio::time::Instant;

use crate::confine::Shell;
use crate::error::ApiError;
use crate::outlog::{self, OutputLog, Stream};
use crate::paths;
use crate::state::{Container, ContainerState, Running};
use crate::trust::Trust;

/// Largest output piece per event.
pub const PIECE: usize = 64 * 1024;
/// How long to keep reading pipes after the command exited: background
/// children may hold them open forever.
pub const GRACE: Duration = Duration::from_millis(200);
/// Between SIGTERM and SIGKILL when stopping a command.
const KILL_AFTER: Duration = Duration::from_secs(2);
/// The `PATH` commands get.
pub const PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Why a command was stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    TimedOut,
    Cancelled,
    /// The program is shutting down.
    Shutdown,
    /// The client of a command that is not detached went away: killed at
    /// once, and no report is made.
    Abandoned,
}

/// Asks a running command to stop, once, for a reason.
#[derive(Default)]
pub struct StopSignal {
    reason: std::sync::Mutex<Option<Stop>>,
    asked: Notify,
}

impl StopSignal {
    /// `POST /v1/exec/{id}/cancel`.
    pub fn cancel(&self) {
        self.ask(Stop::Cancelled);
    }

    /// The program got SIGTERM.
    pub fn shutdown(&self) {
        self.ask(Stop::Shutdown);
    }

    /// The client went away.
    pub fn abandon(&self) {
        self.ask(Stop::Abandoned);
    }

    fn ask(&self, why: Stop) {
        let mut reason = self.reason.lock().unwrap_or_else(|p| p.into_inner());
        if reason.is_none() {
            *reason = Some(why);
            self.asked.notify_one();
        }
    }

    /// Resolves with the reason once asked.
    async fn asked(&self) -> Stop {
        loop {
            if let Some(why) = *self.reason.lock().unwrap_or_else(|p| p.into_inner()) {
                return why;
            }
            self.asked.notified().await;
        }
    }
}

/// A checked request, ready to run.
pub struct Prepared {
    pub id: String,
    command: String,
    /// A workspace path (the command sees the workspace as `/`).
    cwd: String,
    env: BTreeMap<String, String>,
    stdin: Vec<u8>,
    timeout: Duration,
    pub detach: bool,
}

/// Checks a spec against the workspace at `container` (nothing starts yet).
pub fn prepare(container: &Container, spec: ExecSpec) -> Result<Prepared, ApiError> {
    if spec.id.is_empty() || spec.id.len() > 256 {
        return Err(ApiError::InvalidRequest(
            "the exec id must be 1 to 256 bytes".into(),
        ));
    }
    let cwd = checked_cwd(container, &spec.cwd)?;
    check_env(&spec.env)?;
    let stdin = BASE64
        .decode(spec.stdin.as_bytes())
        .map_err(|e| ApiError::InvalidRequest(format!("stdin is not base64: {e}")))?;
    Ok(Prepared {
        id: spec.id,
        command: spec.command,
        cwd,
        env: spec.env,
        stdin,
        timeout: Duration::from_millis(spec.timeout_ms),
        detach: spec.detach,
    })
}

/// A command that started: its log, and the signal that stops it.
pub struct Started {
    pub log: Arc<OutputLog>,
    pub stop: Arc<StopSignal>,
}

/// Workspace path `cwd`, checked: a directory a command can enter (in
/// the workspace, not the system's).
pub fn checked_cwd(container: &Container, cwd: &str) -> Result<String, ApiError> {
    paths::check(cwd)?;
    container.layout.resolve_dir(&container.workspace, cwd)?;
    Ok(cwd.to_string())
}

/// Checks the variables a request adds to a command's environment.
pub fn check_env(env: &BTreeMap<String, String>) -> Result<(), ApiError> {
    for (key, value) in env {
        if key.is_empty() || key.contains(['=', '\0']) || value.contains('\0') {
            return Err(ApiError::InvalidRequest(format!(
                "bad environment variable {key:?}"
            )));
        }
    }
    Ok(())
}

/// `bash -lc script` in `cwd`, confined as the container's commands are,
/// in its own process group, with the clean environment plus `env`, and
/// its output piped.
pub fn command(
    container: &Container,
    cwd: &str,
    script: &str,
    env: &BTreeMap<String, String>,
) -> std::io::Result<tokio::process::Command> {
    let mut command = confined(container, cwd, Shell::Script(script), env)?;
    command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    Ok(command)
}

/// `shell` in `cwd`, confined as the container's commands are, with the
/// clean environment plus `env`; its standard streams and process group
/// are the caller's to set.
pub fn confined(
    container: &Container,
    cwd: &str,
    shell: Shell,
    env: &BTreeMap<String, String>,
) -> std::io::Result<tokio::process::Command> {
    let mut command =
        container
            .confinement
            .command(&container.workspace, &container.scratch, cwd, shell)?;
    // As in the light shell: home is the workspace's root, and `pwd` says
    // the cwd as it was asked for (bash keeps an inherited PWD that names
    // its directory, so a symlinked cwd is not resolved). What programs
    // keep per user goes to the computer's own user directory instead (see
    // `state::USER_DIR`): XDG's directories (pip's cache among them), user
    // installs (`pip install` as the user, `npm install -g`, both into its
    // `.local`, on `PATH`), npm's cache and git's global configuration.
    // Debian's marker that refuses pip outside a venv guards the system's
    // packages, which a user install (commands never run as root) leaves
    // alone. Python writes its output as it goes, not when a buffer fills,
    // so a log shows a dev server's banner when it is printed. The
    // platform's CA, once it is there, is trusted (`crate::trust`). The
    // request's `env` may set any of these.
    let user = crate::state::USER_DIR;
    command
        .env_clear()
        .env("PATH", format!("{user}/.local/bin:{PATH}"))
        .env("HOME", "/")
        .env("LANG", "C.UTF-8")
        .env("PWD", cwd)
        .env("WORKSPACE", "/")
        .env("PYTHONUNBUFFERED", "1")
        .env("XDG_CACHE_HOME", format!("{user}/.cache"))
        .env("XDG_CONFIG_HOME", format!("{user}/.config"))
        .env("XDG_DATA_HOME", format!("{user}/.local/share"))
        .env("XDG_STATE_HOME", format!("{user}/.local/state"))
        .env("PYTHONUSERBASE", format!("{user}/.local"))
        .env("PIP_BREAK_SYSTEM_PACKAGES", "1")
        .env("NPM_CONFIG_PREFIX", format!("{user}/.local"))
        .env("NPM_CONFIG_CACHE", format!("{user}/.npm"))
        .env("GIT_CONFIG_GLOBAL", format!("{user}/.gitconfig"))
        .envs(container.trust.iter().flat_map(Trust::command_env))
        .envs(env);
    Ok(command)
}

/// Claims the container for `prepared` and starts it; its events go to the
/// returned log, ending with `exit` (or `error`).
pub fn start(container: Arc<Container>, prepared: Prepared) -> Result<Started, ApiError> {
    let stop = Arc::new(StopSignal::default());
    let log = {
        let mut state = container.lock();
        if container.is_stopping() {
            return Err(ApiError::ShuttingDown);
        }
        if state.seen.contains(&prepared.id) {
            return Err(ApiError::AlreadyStarted(prepared.id));
        }
        if let Some(running) = &state.running {
            return Err(ApiError::Busy(running.id.clone()));
        }
        let dir = outlog::dir_for(&container.logs, "exec", &prepared.id);
        let log = Arc::new(
            OutputLog::create(dir).map_err(|e| ApiError::io("creating the output log", e))?,
        );
        state.seen.insert(&prepared.id);
        state.running = Some(Running {
            id: prepared.id.clone(),
            stop: stop.clone(),
        });
        // Logs of commands that left no report (abandoned, or their scan
        // failed) have been read or never will be.
        let ContainerState { logs, pending, .. } = &mut *state;
        logs.retain(|id, _| pending.contains_key(id));
        logs.insert(prepared.id.clone(), log.clone());
        log
    };
    let guard = RunningGuard {
        container: container.clone(),
        id: prepared.id.clone(),
    };

    let mut command = command(&container, &prepared.cwd, &prepared.command, &prepared.env)
        .map_err(|e| ApiError::io("preparing the command", e))?;
    command.stdin(Stdio::piped());
    let child = command
        .spawn()
        .map_err(|e| ApiError::io("starting bash", e))?;

    tokio::spawn(drive(
        container,
        child,
        prepared,
        log.clone(),
        stop.clone(),
        guard,
    ));
    Ok(Started { log, stop })
}

/// Clears `running` however the driving task ends (even by panic).
struct RunningGuard {
    container: Arc<Container>,
    id: String,
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        let mut state = self.container.lock();
        if state.running.as_ref().is_some_and(|r| r.id == self.id) {
            state.running = None;
        }
    }
}

/// Sends a signal to the whole process group `pgid`.
pub fn kill_group(pgid: Option<u32>, signal: i32) {
    if let Some(pgid) = pgid {
        // SAFETY: kill(2) with a negative pid signals a process group; it
        // has no memory-safety preconditions.
        unsafe {
            libc::kill(-(pgid as i32), signal);
        }
    }
}

/// Keeps a piece of output; a log that cannot be written loses the piece,
/// but the command goes on (and the failure is logged).
fn keep(log: &OutputLog, stream: Stream, data: &[u8]) {
    if let Err(error) = log.append(stream, data) {
        eprintln!("stead-computer: writing an output log: {error}");
    }
}

async fn drive(
    container: Arc<Container>,
    mut child: Child,
    prepared: Prepared,
    log: Arc<OutputLog>,
    stop: Arc<StopSignal>,
    guard: RunningGuard,
) {
    let pgid = child.id();
    if let Some(mut stdin) = child.stdin.take() {
        let data = prepared.stdin;
        tokio::spawn(async move {
            let _ = stdin.write_all(&data).await;
        });
    }
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let mut out_buf = vec![0u8; PIECE];
    let mut err_buf = vec![0u8; PIECE];

    // Stopping runs apart from the output loop, so a client that reads
    // slowly (holding the loop in a send) cannot delay a timeout or cancel.
    let (exited, exited_rx) = oneshot::channel::<()>();
    let stopper = tokio::spawn(stop_when_due(pgid, prepared.timeout, stop, exited_rx));

    let far = Instant::now() + Duration::from_secs(365 * 24 * 3600);
    let mut stop_reading: Option<Instant> = None;
    let mut status: Option<ExitStatus> = None;
    loop {
        if status.is_some() && stdout.is_none() && stderr.is_none() {
            break;
        }
        tokio::select! {
            read = read_some(&mut stdout, &mut out_buf) => {
                if let Some(n) = read {
                    keep(&log, Stream::Stdout, &out_buf[..n]);
                }
            }
            read = read_some(&mut stderr, &mut err_buf) => {
                if let Some(n) = read {
                    keep(&log, Stream::Stderr, &err_buf[..n]);
                }
            }
            waited = child.wait(), if status.is_none() => {
                status = Some(waited.unwrap_or_else(|_| ExitStatus::from_raw(0x7f00)));
                stop_reading = Some(Instant::now() + GRACE);
            }
            _ = tokio::time::sleep_until(stop_reading.unwrap_or(far)), if stop_reading.is_some() => break,
        }
    }
    let _ = exited.send(());
    let stopped = stopper.await.ok().flatten();
    if stopped.is_some() {
        // Stragglers that ignored SIGTERM go too.
        kill_group(pgid, libc::SIGKILL);
    }
    if stopped == Some(Stop::Abandoned) {
        // Nobody wants the report: the changes stay on disk for the next
        // command's scan.
        let _ = child.wait().await;
        return;
    }
    let status = status.expect("the loop ends after the wait");

    let scanned = tokio::task::spawn_blocking(move || {
        let mut locked = container.lock();
        let state = &mut *locked;
        let report = container.scan(state);
        if let Ok(report) = &report {
            state.keep_report(&prepared.id, report.clone());
        }
        // Free the container before the exit event goes out, so the client
        // may start the next command as soon as it reads it.
        state.running = None;
        drop(locked);
        drop(guard);
        report
    })
    .await;
    let report = match scanned {
        Ok(Ok(report)) => report,
        Ok(Err(e)) => return scan_failed(&log, format!("scanning the workspace: {e}")),
        Err(e) => return scan_failed(&log, format!("the scan task failed: {e}")),
    };
    let exit = Exit {
        code: status.code(),
        signal: status.signal(),
        timed_out: stopped == Some(Stop::TimedOut),
        cancelled: stopped == Some(Stop::Cancelled),
        shutdown: stopped == Some(Stop::Shutdown),
        changes: report.changes,
        skipped: report.skipped,
    };
    finish(&log, &ExecEvent::Exit(exit));
}

fn finish(log: &OutputLog, last: &ExecEvent) {
    if let Err(error) = log.finish(last) {
        eprintln!("stead-computer: writing an output log's last event: {error}");
    }
}

/// Ends the log with an `error` event: the command ran, but what it
/// changed could not be found out.
fn scan_failed(log: &OutputLog, message: String) {
    eprintln!("stead-computer: {message}");
    let error = ExecEvent::Error(ErrorDetail {
        code: ErrorCode::Io,
        message,
    });
    finish(log, &error);
}

/// Waits for the timeout or a stop, then stops the group: SIGTERM, and
/// SIGKILL if it has not exited [`KILL_AFTER`] later. Returns `None` when
/// the command exited first (`exited` fired or was dropped).
async fn stop_when_due(
    pgid: Option<u32>,
    timeout: Duration,
    stop: Arc<StopSignal>,
    mut exited: oneshot::Receiver<()>,
) -> Option<Stop> {
    let why = tokio::select! {
        _ = tokio::time::sleep(timeout) => Stop::TimedOut,
        why = stop.asked() => why,
        _ = &mut exited => return None,
    };
    if why == Stop::Abandoned {
        kill_group(pgid, libc::SIGKILL);
        return Some(why);
    }
    kill_group(pgid, libc::SIGTERM);
    tokio::select! {
        _ = tokio::time::sleep(KILL_AFTER) => kill_group(pgid, libc::SIGKILL),
        _ = &mut exited => {}
    }
    Some(why)
}

/// Reads the next piece from `pipe`; `None` (and the pipe closed) at its
/// end. A closed pipe never resolves, so `select!` skips it.
pub async fn read_some<R: tokio::io::AsyncRead + Unpin>(
    pipe: &mut Option<R>,
    buf: &mut [u8],
) -> Option<usize> {
    let Some(reader) = pipe.as_mut() else {
        return std::future::pending().await;
    };
    match reader.read(buf).await {
        Ok(n) if n > 0 => Some(n),
        _ => {
            *pipe = None;
            None
        }
    }
}
