//! Long-running processes: started beside commands, supervised by their
//! restart policy, signalled and stopped; their output in logs read by
//! offset (see [`crate::outlog`]).
//!
//! A process runs as a command does (`bash -lc`, confined the same way, in
//! its own process group, with the clean environment), but nothing waits
//! for it: a supervising task pumps its output into its log, records how
//! each run ended and starts it again when its policy says so, after a
//! back-off that doubles from [`BACKOFF_START`] to [`BACKOFF_MAX`] (and
//! starts over once a run lasted [`STEADY_RUN`]), so a process that crashes
//! at once does not spin. A stop sends SIGTERM to its group and SIGKILL
//! after the grace period; a stopped process never starts again. Ended
//! processes are remembered (at most [`MAX_ENDED`]) so their last output
//! can still be read.

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use stead_sync::process::{
    signal_number, PollReply, Polled, ProcessSpec, ProcessState, ProcessStatus, SIGNALS,
};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::error::ApiError;
use crate::exec::{self, kill_group, read_some, GRACE, PIECE};
use crate::outlog::{self, OutputLog, Stream};
use crate::state::Container;

/// The first wait before a restart.
const BACKOFF_START: Duration = Duration::from_millis(200);
/// The longest wait before a restart.
const BACKOFF_MAX: Duration = Duration::from_secs(10);
/// A run this long resets the back-off.
const STEADY_RUN: Duration = Duration::from_secs(10);
/// Ended processes remembered per container.
const MAX_ENDED: usize = 32;
/// Most output bytes per process in one poll answer.
const POLL_BYTES: usize = 256 << 10;

/// The processes of one container.
#[derive(Default)]
pub struct Processes {
    map: Mutex<BTreeMap<String, Arc<Process>>>,
}

/// One process: what it was started with, its log, where it is.
pub struct Process {
    spec: ProcessSpec,
    log: Arc<OutputLog>,
    life: Mutex<Life>,
    /// Bumped at every change of `life`, so waiters wake.
    changed: watch::Sender<u64>,
}

struct Life {
    state: ProcessState,
    pid: Option<u32>,
    exit_code: Option<i32>,
    signal: Option<i32>,
    restarts: u32,
    /// The grace of a stop asked for; set once.
    stop: Option<Duration>,
    error: Option<String>,
    /// When it ended for good (for forgetting the oldest).
    ended: Option<Instant>,
}

impl Processes {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Arc<Process>>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The process `id`.
    pub fn get(&self, id: &str) -> Result<Arc<Process>, ApiError> {
        self.lock()
            .get(id)
            .cloned()
            .ok_or_else(|| ApiError::UnknownProcess(id.to_string()))
    }

    /// Every process, by id.
    pub fn all(&self) -> Vec<Arc<Process>> {
        self.lock().values().cloned().collect()
    }

    /// Whether a process that keeps the computer awake (it declared a port
    /// or asked to) has not ended.
    pub fn busy(&self) -> bool {
        self.lock().values().any(|process| {
            (process.spec.keep_awake || !process.spec.ports.is_empty())
                && !process.status().state.is_final()
        })
    }

    /// Asks every process to stop (the program is shutting down).
    pub fn stop_all(&self) {
        for process in self.all() {
            process.stop(Duration::from_millis(stead_sync::process::DEFAULT_GRACE_MS));
        }
    }
}

/// Checks `spec` and starts the process on `container`.
pub fn start(container: &Arc<Container>, spec: ProcessSpec) -> Result<ProcessStatus, ApiError> {
    if spec.id.is_empty() || spec.id.len() > 256 {
        return Err(ApiError::InvalidRequest(
            "the process id must be 1 to 256 bytes".into(),
        ));
    }
    if spec.command.trim().is_empty() {
        return Err(ApiError::InvalidRequest("the command is empty".into()));
    }
    if container.is_stopping() {
        return Err(ApiError::ShuttingDown);
    }
    let cwd = exec::checked_cwd(container, &spec.cwd)?;
    exec::check_env(&spec.env)?;
    let process = {
        let mut map = container.processes.lock();
        if map.contains_key(&spec.id) {
            return Err(ApiError::ProcessExists(spec.id));
        }
        forget_oldest_ended(&mut map);
        let dir = outlog::dir_for(&container.logs, "process", &spec.id);
        let log = OutputLog::create(dir).map_err(|e| ApiError::io("creating the output log", e))?;
        let (changed, _) = watch::channel(0);
        let process = Arc::new(Process {
            spec,
            log: Arc::new(log),
            life: Mutex::new(Life {
                state: ProcessState::Starting,
                pid: None,
                exit_code: None,
                signal: None,
                restarts: 0,
                stop: None,
                error: None,
                ended: None,
            }),
            changed,
        });
        map.insert(process.spec.id.clone(), process.clone());
        process
    };
    // The first run starts here, so a command that cannot start fails the
    // request rather than the process later.
    let child = match spawn(container, &process, &cwd) {
        Ok(child) => child,
        Err(error) => {
            container.processes.lock().remove(&process.spec.id);
            return Err(ApiError::io("starting bash", error));
        }
    };
    let pid = child.id();
    process.update(|life| {
        life.state = ProcessState::Running;
        life.pid = pid;
    });
    tokio::spawn(supervise(container.clone(), process.clone(), cwd, child));
    Ok(process.status())
}

fn forget_oldest_ended(map: &mut BTreeMap<String, Arc<Process>>) {
    loop {
        let ended: Vec<(Instant, String)> = map
            .values()
            .filter_map(|p| p.lock().ended.map(|at| (at, p.spec.id.clone())))
            .collect();
        if ended.len() < MAX_ENDED {
            return;
        }
        let oldest = ended.into_iter().min().expect("not empty").1;
        map.remove(&oldest);
    }
}

fn spawn(
    container: &Container,
    process: &Process,
    cwd: &str,
) -> std::io::Result<tokio::process::Child> {
    let mut command = exec::command(container, cwd, &process.spec.command, &process.spec.env)?;
    command.stdin(std::process::Stdio::null());
    command.spawn()
}

impl Process {
    fn lock(&self) -> MutexGuard<'_, Life> {
        self.life.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn update(&self, change: impl FnOnce(&mut Life)) {
        change(&mut self.lock());
        self.changed.send_modify(|n| *n += 1);
    }

    /// Where it is now.
    pub fn status(&self) -> ProcessStatus {
        let life = self.lock();
        ProcessStatus {
            id: self.spec.id.clone(),
            state: life.state,
            pid: life.pid,
            exit_code: life.exit_code,
            signal: life.signal,
            restarts: life.restarts,
            stopped: life.stop.is_some(),
            error: life.error.clone(),
            output_bytes: self.log.end(),
        }
    }

    /// Its status and its output from `from` (a bounded amount).
    pub fn poll(&self, from: Option<u64>) -> Result<Polled, ApiError> {
        let status = self.status();
        let Some(from) = from else {
            let next = status.output_bytes;
            return Ok(Polled {
                status,
                output: Vec::new(),
                next,
            });
        };
        self.log
            .release_below(from)
            .map_err(|e| ApiError::io("releasing read output", e))?;
        let batch = self
            .log
            .read(from, POLL_BYTES)
            .map_err(|e| ApiError::io("reading an output log", e))?
            .map_err(|beyond| ApiError::InvalidRequest(beyond.to_string()))?;
        Ok(Polled {
            status,
            output: batch.events,
            next: batch.next,
        })
    }

    /// Sends signal `name` to its process group.
    pub fn signal(&self, name: &str) -> Result<ProcessStatus, ApiError> {
        let number = signal_number(name).ok_or_else(|| {
            let known: Vec<&str> = SIGNALS.iter().map(|(name, _)| *name).collect();
            ApiError::InvalidRequest(format!(
                "unknown signal {name:?}: one of {}",
                known.join(" ")
            ))
        })?;
        let pid = self.lock().pid;
        match self.status().state {
            ProcessState::Running => kill_group(pid, number),
            state => {
                return Err(ApiError::InvalidRequest(format!(
                    "process {} is not running (it is {state:?})",
                    self.spec.id
                )))
            }
        }
        Ok(self.status())
    }

    /// Asks it to stop: SIGTERM now, SIGKILL after `grace`; it is never
    /// started again.
    pub fn stop(&self, grace: Duration) {
        self.update(|life| {
            life.stop.get_or_insert(grace);
        });
    }

    /// Waits until it has ended for good.
    pub async fn ended(&self) -> ProcessStatus {
        let mut changed = self.changed.subscribe();
        loop {
            let status = self.status();
            if status.state.is_final() {
                return status;
            }
            if changed.changed().await.is_err() {
                return self.status();
            }
        }
    }

    fn stop_asked(&self) -> Option<Duration> {
        self.lock().stop
    }
}

/// The polled answer for `container`: every process, with output from the
/// offsets asked.
pub fn poll(
    container: &Container,
    instance: String,
    from: &BTreeMap<String, u64>,
) -> Result<PollReply, ApiError> {
    let mut processes = Vec::new();
    for process in container.processes.all() {
        processes.push(process.poll(from.get(&process.spec.id).copied())?);
    }
    Ok(PollReply {
        instance,
        processes,
    })
}

/// Runs `process` until it ends for good: each run's output into its log,
/// restarts by its policy.
async fn supervise(
    container: Arc<Container>,
    process: Arc<Process>,
    cwd: String,
    first: tokio::process::Child,
) {
    let mut child = Some(first);
    let mut backoff = BACKOFF_START;
    loop {
        let run = match child.take() {
            Some(run) => run,
            None => match spawn(&container, &process, &cwd) {
                Ok(run) => run,
                Err(error) => {
                    process.update(|life| {
                        life.state = ProcessState::Failed;
                        life.error = Some(format!("starting bash: {error}"));
                        life.ended = Some(Instant::now());
                    });
                    return;
                }
            },
        };
        let started = Instant::now();
        let pid = run.id();
        process.update(|life| {
            life.state = ProcessState::Running;
            life.pid = pid;
        });
        let status = pump(&process, run).await;
        let (code, signal) = (status.code(), status.signal());
        let stopped = process.stop_asked().is_some();
        let again = !stopped && process.spec.restart.restarts(code) && !container.is_stopping();
        process.update(|life| {
            life.exit_code = code;
            life.signal = signal;
            if again {
                life.state = ProcessState::Starting;
                life.restarts += 1;
            } else {
                life.state = if stopped || code == Some(0) {
                    ProcessState::Exited
                } else {
                    ProcessState::Failed
                };
                life.ended = Some(Instant::now());
            }
        });
        if !again {
            return;
        }
        if started.elapsed() >= STEADY_RUN {
            backoff = BACKOFF_START;
        }
        // Wait out the back-off, unless a stop comes first.
        let mut changed = process.changed.subscribe();
        let wake = Instant::now() + backoff;
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(wake) => break,
                moved = changed.changed() => if moved.is_err() { break },
            }
            if process.stop_asked().is_some() {
                process.update(|life| {
                    life.state = ProcessState::Exited;
                    life.ended = Some(Instant::now());
                });
                return;
            }
        }
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
}

/// Pumps one run's output into the log until it exits (and its pipes are
/// drained, or [`GRACE`] passes), carrying out a stop asked meanwhile.
async fn pump(process: &Process, mut run: tokio::process::Child) -> ExitStatus {
    let pgid = run.id();
    let mut stdout = run.stdout.take();
    let mut stderr = run.stderr.take();
    let (mut out_buf, mut err_buf) = (vec![0u8; PIECE], vec![0u8; PIECE]);
    let mut changed = process.changed.subscribe();
    let far = Instant::now() + Duration::from_secs(365 * 24 * 3600);
    let mut kill_at: Option<Instant> = None;
    let mut stop_reading: Option<Instant> = None;
    let mut status: Option<ExitStatus> = None;
    let keep = |stream, data: &[u8]| {
        if let Err(error) = process.log.append(stream, data) {
            eprintln!("stead-computer: writing a process log: {error}");
        }
    };
    // A stop asked before this run started.
    if let Some(grace) = process.stop_asked() {
        kill_group(pgid, libc::SIGTERM);
        kill_at = Some(Instant::now() + grace);
    }
    loop {
        if status.is_some() && stdout.is_none() && stderr.is_none() {
            break;
        }
        tokio::select! {
            read = read_some(&mut stdout, &mut out_buf) => {
                if let Some(n) = read { keep(Stream::Stdout, &out_buf[..n]); }
            }
            read = read_some(&mut stderr, &mut err_buf) => {
                if let Some(n) = read { keep(Stream::Stderr, &err_buf[..n]); }
            }
            waited = run.wait(), if status.is_none() => {
                status = Some(waited.unwrap_or_else(|_| ExitStatus::from_raw(0x7f00)));
                stop_reading = Some(Instant::now() + GRACE);
            }
            moved = changed.changed(), if kill_at.is_none() => {
                if moved.is_ok() {
                    if let Some(grace) = process.stop_asked() {
                        kill_group(pgid, libc::SIGTERM);
                        kill_at = Some(Instant::now() + grace);
                    }
                }
            }
            _ = tokio::time::sleep_until(kill_at.unwrap_or(far)), if kill_at.is_some() && status.is_none() => {
                kill_group(pgid, libc::SIGKILL);
                kill_at = Some(far);
            }
            _ = tokio::time::sleep_until(stop_reading.unwrap_or(far)), if stop_reading.is_some() => break,
        }
    }
    if process.stop_asked().is_some() {
        // What the group left behind goes with it.
        kill_group(pgid, libc::SIGKILL);
    }
    status.expect("the loop ends after the wait")
}
