//! The process routes and the alarm's watch over live processes, on the
//! agent (see the parent module for what a process is).

use std::collections::BTreeMap;

use base64::Engine;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use stead_scheduler::jobs::{Outcome, Stream};
use stead_scheduler::{Backend, JobState, Jobs, NewJob, SchedError};
use stead_sql::Sql;
use stead_sync::owner::{ComputerState, Lifecycle};
use stead_sync::process::{signal_number, Poll, Polled, ProcessState, Restart, SIGNALS};
use stead_sync::ExecEvent;
use stead_vfs::VPath;

use super::record::{self, Process, State};
use super::{comes_back, is_gone, lose, Loss};
use crate::agent::Agent;
use crate::computer::{self, detached, live, ComputerError};
use crate::decode::{decode_value, within};
use crate::error::ApiError;
use crate::host::Host;
use crate::joblog::JobSink;
use crate::{exec, subscriptions};

/// Between two polls of the computer while processes run.
pub const TICK_MS: i64 = 500;
/// At most this long after an edit, while a process runs, the alarm
/// pushes it (rather than at the next tick): edits within it go together.
const EDIT_PUSH_MS: i64 = 100;
/// Most ports one process may declare.
const MAX_PORTS: usize = 16;
/// The port of the computer's own program, which no process may take.
const PROGRAM_PORT: u16 = 8080;
/// Most polls one tick makes to catch up with a process's output.
const CATCH_UP_POLLS: usize = 8;
/// Most live reports one tick applies (each at most `live::BATCH` changes).
const LIVE_REPORTS_PER_TICK: usize = 8;

/// `POST /agents/{id}/processes` (its field docs are the tool's schema).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProcessRequest {
    /// The command line, in bash syntax, run on the computer.
    command: String,
    /// Working directory (default `/`).
    cwd: Option<String>,
    /// Environment variables for the process.
    #[serde(default)]
    env: BTreeMap<String, String>,
    /// The ports it listens on (1-65535, not 8080), reachable at
    /// `/agents/{agent}/ports/{port}/`.
    #[serde(default)]
    #[schemars(length(max = MAX_PORTS), inner(range(min = 1)))]
    ports: Vec<u16>,
    /// Whether it is started again when it exits (default `never`).
    #[serde(default)]
    restart: Restart,
    /// Keep the computer from being released when idle while it runs (one
    /// that declares a port does anyway).
    #[serde(default)]
    keep_awake: bool,
}

/// `POST /agents/{id}/processes/{pid}/signal`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SignalBody {
    /// The signal's name, with or without `SIG` (`TERM`, `HUP`, `INT`, ...).
    signal: String,
}

/// Checks a process request, before anything starts.
fn check(request: &ProcessRequest) -> Result<(), ApiError> {
    if request.command.trim().is_empty() {
        return Err(ApiError::InvalidRequest("command must not be empty".into()));
    }
    if request.ports.len() > MAX_PORTS {
        return Err(ApiError::InvalidRequest(format!(
            "a process declares at most {MAX_PORTS} ports"
        )));
    }
    let mut seen = Vec::new();
    for &port in &request.ports {
        within("ports[]", port, 1, u16::MAX)?;
        if port == PROGRAM_PORT {
            return Err(ApiError::InvalidRequest(format!(
                "port {PROGRAM_PORT} is the computer's own program"
            )));
        }
        if seen.contains(&port) {
            return Err(ApiError::InvalidRequest(format!(
                "port {port} is listed twice"
            )));
        }
        seen.push(port);
    }
    for (key, value) in &request.env {
        if key.is_empty() || key.contains(['=', '\0']) || value.contains('\0') {
            return Err(ApiError::InvalidRequest(format!(
                "bad environment variable {key:?}"
            )));
        }
    }
    Ok(())
}

impl<H: Host> Agent<H> {
    /// Starts a process on the computer (pushing the workspace first) and
    /// records it; answers with its record.
    pub(crate) async fn start_process(&self, body: &Value) -> Result<Value, ApiError> {
        let request: ProcessRequest = decode_value(body)?;
        check(&request)?;
        let cwd = VPath::parse(request.cwd.as_deref().unwrap_or("/"))?;
        exec::check_computer_cwd(&self.vfs(), &cwd)?;
        let transport = self.computer()?;
        let _turn = self.computer_turn.lock().await;
        if let Some(other) = detached::first(self.db())? {
            return Err(ComputerError::held_by_job(other.job).into());
        }
        let pushed = self.bring_in_step(&transport).await?;
        let now = self.now_ms();
        let mut process = Process {
            id: format!("p-{}", self.host.random_hex(12)?),
            command: request.command,
            cwd: cwd.to_string(),
            env: request.env,
            ports: request.ports,
            restart: request.restart,
            keep_awake: request.keep_awake,
            state: State::Starting,
            instance: Some(pushed.instance.clone()),
            pid: None,
            exit_code: None,
            signal: None,
            restarts: 0,
            base_restarts: 0,
            stopped: false,
            error: None,
            job: 0,
            offset: 0,
            created_ms: now,
            started_ms: Some(now),
            ended_ms: None,
        };
        let started = computer::processes::start(&transport, &process.spec()).await?;
        process.state = State::Running;
        process.pid = started.pid;
        let recorded = self.db().transaction(|| {
            let jobs = Jobs::new(self.db());
            let new = NewJob {
                source: format!("process:{}", process.id),
                backend: Backend::Computer,
                request: process.to_json(),
            };
            let job = jobs.create(&new, now)?;
            jobs.claim(job.id, now)?;
            process.job = job.id;
            self.save_process(&process)?;
            Ok::<_, SchedError>(())
        });
        if let Err(error) = recorded {
            // Untracked, it must not run on.
            let _ = computer::processes::stop(&transport, &process.id, Some(0)).await;
            return Err(error.into());
        }
        self.arm().await?;
        Ok(json!({ "process": process.to_json() }))
    }

    /// `GET /agents/{id}/processes`.
    pub(crate) fn list_processes(&self) -> Result<Value, ApiError> {
        let all: Vec<Value> = record::all(self.db())?
            .iter()
            .map(Process::to_json)
            .collect();
        Ok(json!({ "processes": all }))
    }

    /// Process `id`'s record.
    pub(crate) fn process(&self, id: &str) -> Result<Process, ApiError> {
        record::get(self.db(), id)?.ok_or_else(|| ApiError::ProcessNotFound { id: id.to_string() })
    }

    /// `POST /agents/{id}/processes/{pid}/signal`.
    pub(crate) async fn signal_process(&self, id: &str, body: &Value) -> Result<Value, ApiError> {
        let SignalBody { signal } = decode_value(body)?;
        if signal_number(&signal).is_none() {
            let known: Vec<&str> = SIGNALS.iter().map(|(name, _)| *name).collect();
            return Err(ApiError::InvalidRequest(format!(
                "unknown signal {signal:?}: one of {}",
                known.join(" ")
            )));
        }
        let process = self.process(id)?;
        if process.state != State::Running {
            return Err(ApiError::ProcessNotRunning {
                id: id.to_string(),
                state: process.state,
            });
        }
        computer::processes::signal(&self.computer()?, id, &signal).await?;
        Ok(json!({ "process": process.to_json(), "signal": signal }))
    }

    /// `DELETE /agents/{id}/processes/{pid}`: stops a live process
    /// (SIGTERM, then SIGKILL after `grace_ms`) and keeps its record; the
    /// record of one that ended is removed.
    pub(crate) async fn stop_process(
        &self,
        id: &str,
        query: &[(String, String)],
    ) -> Result<Value, ApiError> {
        let mut grace = None;
        for (key, value) in query {
            match key.as_str() {
                "grace_ms" => {
                    let ms = value.parse::<u64>().map_err(|_| {
                        ApiError::InvalidRequest(format!("grace_ms={value:?} is not a number"))
                    })?;
                    grace = Some(within(
                        "grace_ms",
                        ms,
                        0,
                        stead_sync::process::MAX_GRACE_MS,
                    )?);
                }
                other => {
                    return Err(ApiError::InvalidRequest(format!(
                        "unknown query parameter {other:?}"
                    )))
                }
            }
        }
        let mut process = self.process(id)?;
        let now = self.now_ms();
        match process.state {
            State::Starting | State::Running => {
                match computer::processes::stop(&self.computer()?, id, grace).await {
                    Ok(_) => {
                        // Its last output and how it ended.
                        self.watch_processes().await?;
                        process = self.process(id)?;
                    }
                    Err(error) => match is_gone(&error) {
                        Some(loss) => lose(&mut process, loss, now),
                        None if unknown_process(&error) => lose(&mut process, Loss::Died, now),
                        None => return Err(error.into()),
                    },
                }
            }
            State::Lost if comes_back(&process) => {}
            State::Exited | State::Failed | State::Lost => {
                record::remove(self.db(), id)?;
                return Ok(json!({ "deleted": id }));
            }
        }
        process.stopped = true;
        if !process.state.is_live() {
            process.ended_ms.get_or_insert(now);
            if process.state == State::Lost {
                process.state = State::Exited;
            }
        }
        self.save_process(&process)?;
        self.close_ended()?;
        Ok(json!({ "process": self.process(id)?.to_json() }))
    }

    /// `POST /agents/{id}/computer/stop`: releases the computer, and with
    /// it its processes, which are `lost` from this moment: a stop holds
    /// until the next command or process start, which brings a computer up
    /// and starts again those whose policy says so. Marking them here, with
    /// the computer held, is what keeps a tick from taking the released
    /// computer's silence for a death and bringing one straight back (or
    /// from pushing an edit to it, which would start one). The one local
    /// program is never stopped from the Worker: there nothing is lost.
    pub(crate) async fn stop_computer(&self) -> Result<ComputerState, ApiError> {
        let _turn = self.computer_turn.lock().await;
        let transport = self.computer()?;
        let before = computer::state(&transport).await?;
        self.save_before_release(&transport, &before).await?;
        let state = computer::stop(&transport).await?;
        if state.state == Lifecycle::Stopped {
            let now = self.now_ms();
            for mut process in record::all(self.db())? {
                if process.state.is_live() {
                    lose(&mut process, Loss::Released, now);
                    self.save_process(&process)?;
                }
            }
            self.close_ended()?;
        }
        Ok(state)
    }

    /// The alarm's tick over live processes: their states and new output
    /// from the computer, in one background request (and a few more while
    /// one has more output than an answer holds). Processes whose computer
    /// went away are lost; if it died, those that come back are started on
    /// a new one at once.
    pub(crate) async fn watch_processes(&self) -> Result<(), ApiError> {
        let mut died = false;
        for _ in 0..CATCH_UP_POLLS {
            let live: Vec<Process> = record::all(self.db())?
                .into_iter()
                .filter(|p| p.state.is_live())
                .collect();
            if live.is_empty() {
                break;
            }
            let transport = self.computer()?;
            let from = live.iter().map(|p| (p.id.clone(), p.offset)).collect();
            let reply = match computer::processes::poll(&transport, &Poll { from }).await {
                Ok(reply) => reply,
                Err(error) => {
                    if let Some(loss) = is_gone(&error) {
                        for mut process in live {
                            lose(&mut process, loss, self.now_ms());
                            self.save_process(&process)?;
                        }
                        died |= loss == Loss::Died;
                    }
                    // Anything else may pass: the next tick asks again.
                    break;
                }
            };
            let mut behind = false;
            for mut process in live {
                let polled = reply.processes.iter().find(|p| p.status.id == process.id);
                match polled {
                    Some(polled) if process.instance.as_deref() == Some(&reply.instance) => {
                        self.take_poll(&mut process, polled);
                        behind |=
                            process.state.is_live() && polled.next < polled.status.output_bytes;
                    }
                    _ => {
                        lose(&mut process, Loss::Died, self.now_ms());
                        died = true;
                    }
                }
                self.save_process(&process)?;
            }
            if !behind {
                break;
            }
        }
        self.close_ended()?;
        self.pull_edits().await?;
        self.push_edits().await?;
        let revive = record::all(self.db())?
            .iter()
            .any(|p| p.state == State::Lost && comes_back(p));
        if died && revive {
            // Not by anyone's choice: bring a computer up for them now,
            // unless a command holds it (it brings one up itself).
            if let Some(_turn) = self.computer_turn.try_lock() {
                if detached::first(self.db())?.is_none() {
                    self.bring_in_step(&self.computer()?).await?;
                }
            }
        }
        Ok(())
    }

    /// Live sync back from the computer: while a process runs there, what
    /// it wrote comes into the workspace, one bounded report at a time (a
    /// few per tick while more wait). Skipped while a command holds the
    /// computer (its own report at its end covers the same files). A pull
    /// that fails is noted and tried again at the next tick.
    async fn pull_edits(&self) -> Result<(), ApiError> {
        if !self.any_running()? {
            return Ok(());
        }
        self.pull_reports().await
    }

    /// The reports of one tick's live sync back (see
    /// [`Agent::pull_edits`]), whatever runs: also once more when a
    /// computer terminal's shell exits.
    pub(crate) async fn pull_reports(&self) -> Result<(), ApiError> {
        let Some(_turn) = self.computer_turn.try_lock() else {
            return Ok(());
        };
        if detached::first(self.db())?.is_some() {
            return Ok(());
        }
        let transport = self.computer()?;
        for _ in 0..LIVE_REPORTS_PER_TICK {
            let id = self.exec_id()?;
            match live::pull(self.db(), || self.vfs(), &transport, &id).await {
                Ok(Some(round)) => {
                    if round.reported > 0 {
                        live::record(self.db(), &round, self.now_ms())?;
                    }
                    if !round.more {
                        break;
                    }
                }
                Ok(None) => break,
                // The computer going away is the poll's to find out.
                Err(error) if is_gone(&error).is_some() => break,
                Err(error) => {
                    live::record_error(self.db(), &error.to_string(), self.now_ms())?;
                    break;
                }
            }
        }
        Ok(())
    }

    /// After a request that may have changed the workspace (to
    /// `revision`): if it did and a process runs, the alarm fires within [`EDIT_PUSH_MS`] to push the
    /// edit, unless it fires sooner anyway. Brought forward, never put off,
    /// so a stream of edits is pushed every [`EDIT_PUSH_MS`], not never.
    pub(crate) async fn hasten_live_push(&self, revision: i64) -> Result<(), ApiError> {
        let soon = self.now_ms() + EDIT_PUSH_MS;
        if self.alarm_at.get().is_some_and(|at| at <= soon)
            || revision <= self.live_pushed.get()
            || self.none_running()?
        {
            return Ok(());
        }
        self.host.set_alarm(Some(soon)).await?;
        self.alarm_at.set(Some(soon));
        Ok(())
    }

    /// Whether something runs on the computer that live sync follows: a
    /// process, or a terminal session's shell.
    fn any_running(&self) -> Result<bool, ApiError> {
        Ok(record::any_running(self.db())? || self.computer_terminal_running()?)
    }

    /// Saves `process` (new or changed): it may run now, so the instance
    /// no longer knows that none does; and one serving ports that no
    /// longer runs closes them (`crate::port_grants`).
    fn save_process(&self, process: &record::Process) -> Result<(), stead_sql::SqlError> {
        self.processes_idle.set(false);
        if !process.ports.is_empty() && (process.stopped || !process.state.is_live()) {
            self.withdraw_port_grants();
        }
        record::save(self.db(), process)
    }

    /// Whether no process runs, asking only when this instance does not
    /// know (see [`Agent::processes_idle`]).
    fn none_running(&self) -> Result<bool, ApiError> {
        if !self.processes_idle.get() {
            self.processes_idle.set(!self.any_running()?);
        }
        Ok(self.processes_idle.get())
    }

    /// Live sync toward the computer: while a process runs there, the
    /// agent's edits (file API, light shell, `apply_patch`, a restore)
    /// reach its copy at the next tick, so a dev server's hot reload sees
    /// them. Only what changed since the last push is sent, and nothing
    /// when the workspace has not moved; a command that holds the computer
    /// pushes for itself.
    async fn push_edits(&self) -> Result<(), ApiError> {
        if !self.any_running()? || self.vfs().revision()? <= self.live_pushed.get() {
            return Ok(());
        }
        let Some(_turn) = self.computer_turn.try_lock() else {
            return Ok(());
        };
        if detached::first(self.db())?.is_some() {
            return Ok(());
        }
        // A push that fails (the computer going away) is tried again at
        // the next tick, which also finds out what became of the computer.
        if let Ok(pushed) = self.bring_in_step(&self.computer()?).await {
            self.live_pushed.set(pushed.base);
        }
        Ok(())
    }

    /// Takes one poll's answer for `process`: its output into its log, its
    /// state. A process the computer says has ended stays live here until
    /// all its output is in.
    fn take_poll(&self, process: &mut Process, polled: &Polled) {
        let sink = JobSink::new(self, process.job);
        let b64 = base64::engine::general_purpose::STANDARD;
        for event in &polled.output {
            match event {
                ExecEvent::Stdout { data } => {
                    if let Ok(data) = b64.decode(data) {
                        sink.push(Stream::Stdout, &data);
                    }
                }
                ExecEvent::Stderr { data } => {
                    if let Ok(data) = b64.decode(data) {
                        sink.push(Stream::Stderr, &data);
                    }
                }
                // Gone unread: the offset below moves past them.
                ExecEvent::Dropped { .. } | ExecEvent::Exit(_) | ExecEvent::Error(_) => {}
            }
        }
        process.offset = polled.next;
        let status = &polled.status;
        process.pid = status.pid;
        process.exit_code = status.exit_code;
        process.signal = status.signal;
        process.restarts = process.base_restarts + status.restarts;
        process.stopped |= status.stopped;
        process.error = status.error.clone();
        let caught_up = polled.next >= status.output_bytes;
        process.state = match status.state {
            ProcessState::Starting => State::Starting,
            ProcessState::Running => State::Running,
            ProcessState::Exited if caught_up => State::Exited,
            ProcessState::Failed if caught_up => State::Failed,
            ProcessState::Exited | ProcessState::Failed => process.state,
        };
        if !process.state.is_live() {
            process.ended_ms = Some(self.now_ms());
        }
    }

    /// Ends the jobs of processes that have ended for good (their logs are
    /// complete) and tells subscribers.
    fn close_ended(&self) -> Result<(), ApiError> {
        for process in record::all(self.db())? {
            let ended = match process.state {
                State::Exited | State::Failed => true,
                State::Lost => !comes_back(&process),
                State::Starting | State::Running => false,
            };
            if !ended {
                continue;
            }
            let jobs = self.jobs();
            match jobs.get(process.job) {
                Ok(job) if job.state == JobState::Running => {}
                _ => continue,
            }
            if process.stopped {
                // Stopped on request: the job ends cancelled.
                jobs.cancel(process.job, self.now_ms())?;
            }
            let outcome = Outcome {
                exit_code: process
                    .exit_code
                    .or(process.signal.map(|s| 128 + s))
                    .map(i64::from),
                timed_out: false,
                error: match process.state {
                    State::Lost | State::Failed => process.error.clone(),
                    _ => None,
                },
                backend: Some(Backend::Computer),
            };
            let job = jobs.finish(process.job, &outcome, self.now_ms())?;
            subscriptions::broadcast_job_end(self, &job);
        }
        Ok(())
    }

    /// Whether any process runs (the alarm then ticks), or waits to come
    /// back on a computer that died.
    pub(crate) fn processes_to_watch(&self) -> Result<bool, ApiError> {
        Ok(record::all(self.db())?.iter().any(|p| p.state.is_live())
            || self.computer_terminal_running()?)
    }
}

fn unknown_process(error: &ComputerError) -> bool {
    matches!(
        error,
        ComputerError::Refused {
            code: stead_sync::ErrorCode::UnknownProcess,
            ..
        }
    )
}
