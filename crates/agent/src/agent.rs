//! [`Agent`]: one agent's state in memory, over its database and its host.
//!
//! A Durable Object instance holds one `Agent`. Almost everything lives in
//! the database; what lives here is only what one instance may forget:
//! whether it has checked the schema and set the alarm since it started,
//! the cached quotas, and the command running on the computer (so that
//! cancelling its job can reach it). An instance that restarts loses these
//! and rebuilds them on its first event.

use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::rc::Rc;

use serde_json::Value;
use stead_scheduler::{Jobs, SchedError};
use stead_sql::{migrate, params, Sql, MIGRATIONS};
use stead_vfs::{Before, Operation, Scope, Vfs};

use crate::checkpoints::{self, AutoCheckpoints};
use crate::computer::detached::{self, DetachedJob};
use crate::computer::{self, ComputerError, OutputSink, Ran};
use crate::error::ApiError;
use crate::exec::{self, Run};
use crate::host::{Host, Transport};
use crate::outcome::{ExecOutcome, OutputEncoding, Transfer};
use crate::processes;
use crate::settings::{self, Quotas};

/// One agent, on its host.
pub struct Agent<H: Host> {
    pub(crate) host: H,
    /// Whether this instance has checked the schema (and migrated it).
    ready: Cell<bool>,
    /// Whether this instance has set the alarm since it started.
    pub(crate) armed: Cell<bool>,
    /// Held while a command runs on the computer (one at a time), and
    /// while anything else pushes to it.
    pub(crate) computer_turn: futures::lock::Mutex<()>,
    /// The command running on the computer, so cancelling its job can stop
    /// it.
    running: RefCell<Option<RunningExec>>,
    /// The workspace's quotas, read once per instance (and after a change).
    quotas: Cell<Option<Quotas>>,
    /// Whether this instance has seen the agent with no fork import under
    /// way: an import only ever starts on storage that held no agent, so
    /// from then on until the agent is wiped none can be (see
    /// `crate::fork`), and a request need not ask again.
    pub(crate) not_forking: Cell<bool>,
    /// Whether the first page of a fork is being read into storage this
    /// instance just created for it: until the page is in, that storage
    /// holds no staging, and a request arriving meanwhile must be told a
    /// fork is under way, not shown an empty agent.
    pub(crate) first_fork_page: Cell<bool>,
    /// Tokens this instance found not revoked. Only this instance revokes
    /// this agent's tokens (`RevokeToken`, which drops its token from
    /// here), so one checked once need not be looked up per request.
    /// Bounded: past [`MAX_UNREVOKED`] it starts over.
    pub(crate) unrevoked: RefCell<HashSet<String>>,
    /// Its checkpoint settings, likewise (asked before every write).
    checkpoint_settings: Cell<Option<settings::CheckpointSettings>>,
    /// The newest revision live sync pushed to the computer while its
    /// processes run (see `crate::processes::serve`); 0 for none yet.
    pub(crate) live_pushed: Cell<i64>,
    /// When this instance last set the alarm to fire (`None`: not set by
    /// it, or cleared), so an edit can bring the alarm forward without
    /// pushing it back (see `crate::processes::serve`).
    pub(crate) alarm_at: Cell<Option<i64>>,
    /// Whether this instance found no process running since the last thing
    /// that could start one (a process record saved, the alarm, a fresh
    /// computer brought in step): a write then need not ask before
    /// bringing the live push forward (see `crate::processes::serve`).
    pub(crate) processes_idle: Cell<bool>,
    /// Whether something withdrew access to a port since the `Computer`
    /// object was last told to forget its grants (`crate::port_grants`):
    /// told before the event's answer leaves.
    port_grants_withdrawn: Cell<bool>,
    /// The light terminals whose line is still running (waiting out its
    /// `sleep`), with the keys typed meanwhile (see `crate::terminal`).
    pub(crate) terminals: crate::terminal::Busy,
    /// The computer terminals' streams this instance holds (see
    /// `crate::terminal::computer`).
    pub(crate) wires: crate::terminal::computer::Wires<<H::Computer as Transport>::Wire>,
}

/// How many unrevoked tokens an instance remembers (see
/// [`Agent::unrevoked`]).
pub(crate) const MAX_UNREVOKED: usize = 1024;

/// A command running on the computer.
#[derive(Clone)]
struct RunningExec {
    /// Its job, if it runs as one.
    job: Option<i64>,
    exec: String,
    /// Set when its job is cancelled.
    cancelled: Rc<Cell<bool>>,
}

/// The isolate's clock, for the light shell. Workers advance it only across
/// I/O, so within one synchronous exec the shell's CPU and count limits,
/// not wall time, are what stop a runaway script. It cannot block either:
/// the time `sleep` stands for (`owed`) is waited once the exec is done,
/// before its output is given, so `sleep 2` takes two seconds as in bash.
pub(crate) struct HostClock<'h, H: Host> {
    host: &'h H,
    pub(crate) owed_ms: Cell<u64>,
}

impl<'h, H: Host> HostClock<'h, H> {
    pub(crate) fn new(host: &'h H) -> Self {
        HostClock {
            host,
            owed_ms: Cell::new(0),
        }
    }
}

impl<H: Host> stead_shell::Clock for HostClock<'_, H> {
    fn now_ms(&self) -> u64 {
        self.host.now_ms().max(0) as u64
    }

    /// Cannot block: the exec's clock moves instead, and the time is owed.
    fn sleep_ms(&self, ms: u64) -> bool {
        self.owed_ms.set(self.owed_ms.get().saturating_add(ms));
        false
    }
}

impl<H: Host> Agent<H> {
    pub fn new(host: H) -> Self {
        Agent {
            host,
            ready: Cell::new(false),
            armed: Cell::new(false),
            computer_turn: futures::lock::Mutex::new(()),
            live_pushed: Cell::new(0),
            alarm_at: Cell::new(None),
            processes_idle: Cell::new(false),
            port_grants_withdrawn: Cell::new(false),
            running: RefCell::new(None),
            quotas: Cell::new(None),
            not_forking: Cell::new(false),
            first_fork_page: Cell::new(false),
            unrevoked: RefCell::default(),
            checkpoint_settings: Cell::new(None),
            terminals: Default::default(),
            wires: Default::default(),
        }
    }

    /// The platform the agent runs on.
    pub fn host(&self) -> &H {
        &self.host
    }

    pub(crate) fn db(&self) -> &H::Db {
        self.host.db()
    }

    pub(crate) fn now_ms(&self) -> i64 {
        self.host.now_ms()
    }

    /// The workspace's quotas (read once per instance and after a change).
    pub(crate) fn quotas(&self) -> Quotas {
        if let Some(quotas) = self.quotas.get() {
            return quotas;
        }
        let quotas = settings::quotas(self.db()).unwrap_or_default();
        self.quotas.set(Some(quotas));
        quotas
    }

    /// Forgets the cached settings (they changed).
    pub(crate) fn settings_changed(&self) {
        self.quotas.set(None);
        self.checkpoint_settings.set(None);
    }

    /// A view of the workspace with its quotas, at the current time.
    pub fn vfs(&self) -> Vfs<'_, H::Db> {
        Vfs::new(self.db(), self.now_ms()).with_limits(self.quotas().limits())
    }

    /// The agent's jobs, with the workspace's bound on kept output.
    pub(crate) fn jobs(&self) -> Jobs<'_, H::Db> {
        Jobs::with_limits(self.db(), self.quotas().job_limits())
    }

    /// Whether the agent's schema has been checked by this instance.
    pub(crate) fn is_open(&self) -> bool {
        self.ready.get()
    }

    /// Makes sure the agent's schema is current and, given its `name`,
    /// records it for the alarm (which carries no request). Returns whether
    /// this call created the agent; fails for an unknown agent unless
    /// `create`.
    pub(crate) fn open(&self, name: Option<&str>, create: bool) -> Result<bool, ApiError> {
        if self.ready.get() {
            return Ok(false);
        }
        let exists = self
            .db()
            .query_row(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'",
                params![],
            )?
            .is_some();
        if !exists && !create {
            return Err(ApiError::AgentNotFound {
                id: name.unwrap_or_default().to_string(),
            });
        }
        migrate(self.db(), MIGRATIONS).map_err(|e| ApiError::Internal(e.to_string()))?;
        if let Some(name) = name {
            remember_name(self.db(), name)?;
        }
        // No upload survives a restart of this object: drop what they staged.
        self.vfs().abort_stale_uploads()?;
        // Nor does a job or schedule run: record them as cut off.
        crate::scheduling::recover(self.db(), self.now_ms())?;
        self.ready.set(true);
        Ok(!exists)
    }

    /// Forgets everything this instance knew (the agent was deleted).
    pub(crate) fn closed(&self) {
        self.ready.set(false);
        self.armed.set(false);
        self.not_forking.set(false);
        self.unrevoked.borrow_mut().clear();
        self.settings_changed();
    }

    /// The agent's name, as recorded when it was first opened.
    pub(crate) fn name(&self) -> Result<String, ApiError> {
        let row = self
            .db()
            .query_row("SELECT name FROM agent_name WHERE one = 1", params![])
            .map_err(SchedError::from)?;
        match row {
            Some(row) => Ok(row.text(0)?.to_string()),
            None => Err(ApiError::Internal(
                "the agent's name was never recorded".into(),
            )),
        }
    }

    /// Runs an exec request on the backend it asks for, passing output to
    /// `sink` as it comes (the light shell's all at once, at the end).
    /// `until`: for a job, when to stop following a computer command and
    /// leave it running (see [`computer::Handling::until`]); `None` runs
    /// it to its end.
    pub(crate) async fn exec(
        &self,
        actor: &str,
        body: &Value,
        sink: &dyn OutputSink,
        until: Option<i64>,
    ) -> Result<Ran, ApiError> {
        let plan = exec::plan(body, &self.vfs())?
            .with_git_env(|| Ok(crate::settings::git(self.db())?.env()))?;
        match plan.run {
            Run::Shell(request) => {
                exec::check_cwd(&self.vfs(), &request.cwd)?;
                let (outcome, owed_ms) = self.run_shell_exec(actor, request, plan.encoding).await?;
                if owed_ms > 0 {
                    self.host.sleep(owed_ms).await;
                }
                for (stream, write) in [
                    (
                        &outcome.stdout,
                        &(|d: &[u8]| sink.stdout(d)) as &dyn Fn(&[u8]),
                    ),
                    (&outcome.stderr, &|d: &[u8]| sink.stderr(d)),
                ] {
                    if !stream.bytes.is_empty() {
                        write(&stream.bytes);
                    }
                }
                Ok(Ran::Finished(outcome))
            }
            Run::Computer(command) => {
                exec::check_computer_cwd(&self.vfs(), &command.cwd)?;
                let transport = self.computer()?;
                let _turn = self.computer_turn.lock().await;
                if let Some(other) = detached::first(self.db())? {
                    // A job's command runs on between alarms: the computer
                    // runs one command at a time.
                    return Err(ComputerError::held_by_job(other.job).into());
                }
                // Noted as running before the push (a cold start takes
                // seconds), so a cancel meanwhile sets its flag and the
                // command never starts.
                let id = self.exec_id()?;
                let cancelled = self.begin_running(sink.job(), &id);
                let note = command.command.clone();
                let before_apply = self.checkpoint_before_apply(actor, &note);
                let on_detached = |started: &computer::Detached| match sink.job() {
                    Some(job) => Ok(detached::started(self.db(), job, started)?),
                    None => Ok(()),
                };
                let exec = computer::Exec {
                    id: &id,
                    command,
                    handling: computer::Handling {
                        encoding: plan.encoding,
                        cancelled: &cancelled,
                        before_apply: &before_apply,
                        until,
                        on_detached: &on_detached,
                    },
                };
                let ran = self.plan_and_run(&transport, &exec, sink).await;
                self.running.replace(None);
                ran
            }
        }
    }

    /// Brings the computer in step and runs `exec` there. Refused as
    /// planned for a container that was gone (it died after the push and
    /// its owner sent the exec, or the setup script's, to a replacement),
    /// the command never started: it is planned again once the same way,
    /// so the replacement gets what any new computer gets (its environment
    /// restored or set up, the processes that come back started), and what
    /// both pushes sent is counted. A second refusal is
    /// [`ComputerError::KeptChanging`].
    async fn plan_and_run(
        &self,
        transport: &H::Computer,
        exec: &computer::Exec<'_>,
        sink: &dyn OutputSink,
    ) -> Result<Ran, ApiError> {
        let mut sent = Transfer::default();
        let mut replanned = false;
        loop {
            let ran = match self.bring_in_step(transport).await {
                Ok(mut pushed) => {
                    pushed.sent += &sent;
                    sent = pushed.sent.clone();
                    computer::run(&self.host, || self.vfs(), transport, pushed, exec, sink)
                        .await
                        .map_err(ApiError::from)
                }
                Err(error) => Err(error),
            };
            match ran {
                Err(ApiError::Computer(ComputerError::StaleInstance { planned })) => {
                    if replanned {
                        return Err(ComputerError::KeptChanging { planned }.into());
                    }
                    replanned = true;
                }
                ran => return ran,
            }
        }
    }

    /// Runs an exec request to its end.
    pub(crate) async fn exec_to_end(
        &self,
        actor: &str,
        body: &Value,
        sink: &dyn OutputSink,
    ) -> Result<ExecOutcome, ApiError> {
        match self.exec(actor, body, sink, None).await? {
            Ran::Finished(outcome) => Ok(outcome),
            Ran::Suspended(_) => Err(ApiError::Internal(
                "a command followed to its end was left running".into(),
            )),
        }
    }

    /// Brings the computer's copy of the workspace in step, starting the
    /// computer if it does not run. On a computer new to the workspace the
    /// processes of an earlier one are lost, and those whose policy says so
    /// start again there (see `crate::processes`).
    pub(crate) async fn bring_in_step(
        &self,
        transport: &H::Computer,
    ) -> Result<computer::Pushed, ApiError> {
        let pushed =
            computer::bring_in_step(self.db(), || self.vfs(), self.host.chunk_store(), transport)
                .await?;
        let prepared = self.prepare_environment(transport, &pushed).await?;
        self.note_computer_use()?;
        self.arm().await?;
        if pushed.fresh {
            self.processes_idle.set(false);
            processes::revive(self.db(), self.now_ms(), transport, &pushed).await?;
        }
        // The setup script ran on it: in step again, still new to the
        // workspace for whoever asks.
        Ok(match prepared {
            Some(again) => computer::Pushed {
                fresh: pushed.fresh,
                ..again
            },
            None => pushed,
        })
    }

    /// Picks job `job`'s detached command back up (see
    /// [`computer::resume`]), following it until it ends or `until`.
    pub(crate) async fn resume_computer(
        &self,
        job: &DetachedJob,
        offset: u64,
        cancel_requested: bool,
        sink: &dyn OutputSink,
        until: i64,
    ) -> Result<Ran, ApiError> {
        let transport = self.computer()?;
        let _turn = self.computer_turn.lock().await;
        let cancelled = self.begin_running(Some(job.job), &job.detached.exec);
        cancelled.set(cancel_requested);
        let actor = format!("job:{}", job.job);
        let before_apply = self.checkpoint_before_apply(&actor, "computer job");
        let handling = computer::Handling {
            encoding: OutputEncoding::Utf8,
            cancelled: &cancelled,
            before_apply: &before_apply,
            until: Some(until),
            on_detached: &|_| Ok(()),
        };
        let detached = computer::Detached {
            offset,
            ..job.detached.clone()
        };
        let ran = computer::resume(
            &self.host,
            || self.vfs(),
            &transport,
            detached,
            handling,
            sink,
        )
        .await;
        self.running.replace(None);
        Ok(ran?)
    }

    /// Notes the command running on the computer (so cancelling its job can
    /// reach it); returns its cancel flag.
    fn begin_running(&self, job: Option<i64>, exec: &str) -> Rc<Cell<bool>> {
        let cancelled = Rc::new(Cell::new(false));
        self.running.replace(Some(RunningExec {
            job,
            exec: exec.to_string(),
            cancelled: cancelled.clone(),
        }));
        cancelled
    }

    /// Takes the automatic checkpoint of a computer command's apply: the
    /// command's changes follow in the same synchronous step, so the
    /// checkpoint is settled as it is taken.
    pub(crate) fn checkpoint_before_apply<'s>(
        &'s self,
        actor: &'s str,
        note: &'s str,
    ) -> impl Fn() -> Result<Option<i64>, stead_vfs::VfsError> + 's {
        move || {
            let vfs = self.vfs();
            let before = Before {
                actor,
                operation: &Operation::Computer,
                note: Some(note),
                scope: Scope::Whole,
            };
            checkpoints::around(self, &vfs, before, Ok::<_, stead_vfs::VfsError>)
        }
    }

    /// A new exec id: time-ordered (the container refuses ids at or below
    /// the highest it has forgotten), then random.
    pub(crate) fn exec_id(&self) -> Result<String, ApiError> {
        Ok(format!(
            "{:013}{}",
            self.now_ms().max(0),
            self.host.random_hex(19)?
        ))
    }

    /// The transport to this agent's computer, with its settings.
    pub fn computer(&self) -> Result<H::Computer, ApiError> {
        let mut settings = settings::computer(self.db())?;
        settings.egress = crate::egress_gate::Plan::for_settings(self.db(), &settings)?;
        Ok(self.host.computer(&self.name()?, settings)?)
    }

    /// Notes that access to a port may have been withdrawn (a revocation,
    /// a process serving ports that ended): the `Computer` object forgets
    /// its grants at the end of this event ([`Self::tell_port_grants`]).
    pub(crate) fn withdraw_port_grants(&self) {
        self.port_grants_withdrawn.set(true);
    }

    /// Tells the `Computer` object to forget its grants, if anything was
    /// withdrawn during this event. Best effort: one that cannot be told
    /// lets its grants lapse within `crate::port_grants::LEASE_MS`.
    pub(crate) async fn tell_port_grants(&self) {
        if !self.port_grants_withdrawn.replace(false) {
            return;
        }
        if let Ok(transport) = self.computer() {
            let _ = crate::computer::forget_port_grants(&transport).await;
        }
    }

    /// Stops job `job`'s command if it is running on the computer (being
    /// followed now, or detached between alarms).
    pub(crate) async fn cancel_computer_job(&self, job: i64) -> Result<(), ApiError> {
        let running = self.running.borrow().clone();
        let exec = match running.filter(|r| r.job == Some(job)) {
            Some(running) => {
                // Whatever stage the command is at, the flag stops it:
                // before it starts, it never does; once it runs, the cancel
                // below (or the driver, if the exec request is still on its
                // way) ends it.
                running.cancelled.set(true);
                running.exec
            }
            None => match detached::of_job(self.db(), job)? {
                // The next alarm reads it on to its (cancelled) end.
                Some(waiting) => waiting.detached.exec,
                None => return Ok(()),
            },
        };
        let transport = self.computer()?;
        match computer::cancel(&transport, &exec).await {
            Err(computer::ComputerError::Refused {
                code: stead_sync::ErrorCode::UnknownExec,
                ..
            }) => Ok(()),
            other => Ok(other?),
        }
    }
}

impl<H: Host> AutoCheckpoints for Agent<H> {
    /// Read once per instance and after a change.
    fn checkpoint_settings(&self) -> Result<settings::CheckpointSettings, ApiError> {
        if let Some(settings) = self.checkpoint_settings.get() {
            return Ok(settings);
        }
        let settings = settings::checkpoints(self.db())?;
        self.checkpoint_settings.set(Some(settings));
        Ok(settings)
    }
}

/// Records the agent's name so the alarm, which carries no request, knows
/// it.
fn remember_name<S: Sql>(db: &S, name: &str) -> Result<(), ApiError> {
    db.execute(
        "INSERT INTO agent_name (one, name) VALUES (1, ?) \
         ON CONFLICT (one) DO UPDATE SET name = excluded.name",
        params![name],
    )
    .map_err(SchedError::from)?;
    Ok(())
}
