//! The environment's routes and hooks on the agent: a computer is given
//! its environment before its first command (restored, or built by the
//! setup script), and it is saved at release and on request, shown and
//! dropped.

use std::cell::Cell;
use std::collections::BTreeMap;

use serde_json::{json, Value};
use stead_sync::owner::{ComputerState, Lifecycle, Provision};
use stead_vfs::VPath;

use super::setup::{self, Fingerprint, SETUP_PATH};
use super::{store, EnvState, SaveReason, Why};
use crate::agent::Agent;
use crate::computer::{self, Discard, Pushed, Ran};
use crate::error::ApiError;
use crate::host::Host;
use crate::outcome::{ExecOutcome, ExecStatus, OutputEncoding};
use crate::settings;

/// How long the setup script may run.
const SETUP_TIMEOUT_MS: u64 = 30 * 60 * 1000;

/// The most of a failed setup's output the record keeps (its end).
const MAX_LOG: usize = 64 * 1024;

/// How long before a computer's idle release its environment is saved (at
/// most half its idle timeout): time for the pack and the transfer.
const SAVE_MARGIN_MS: u64 = 60_000;

/// How soon a save before an idle release is tried again when a command
/// held the computer.
const BUSY_RETRY_MS: i64 = 5_000;

/// When to save before an idle release at `deadline`, given the idle
/// timeout.
fn save_time(deadline: i64, idle_ms: u64) -> i64 {
    let margin = SAVE_MARGIN_MS.min(idle_ms / 2);
    deadline.saturating_sub(i64::try_from(margin).unwrap_or(i64::MAX))
}

impl<H: Host> Agent<H> {
    /// What `GET /agents/{id}/computer` shows of the environment: its
    /// record, with its age and the content bytes its store holds (`null`
    /// when there is none).
    pub(crate) fn environment_json(&self) -> Result<Value, ApiError> {
        let Some(record) = store::record(self.db())? else {
            return Ok(Value::Null);
        };
        let mut shown = serde_json::to_value(&record).expect("serializes");
        shown["stored_bytes"] = json!(store::stored_bytes(self.db())?);
        shown["age_ms"] = json!(record.saved_ms.map(|at| self.now_ms() - at));
        Ok(shown)
    }

    /// `POST /agents/{id}/computer/environment`: saves the running
    /// computer's environment now (never starts one to do it).
    pub(crate) async fn save_environment(&self) -> Result<Value, ApiError> {
        let _turn = self.computer_turn.lock().await;
        let transport = self.computer()?;
        if computer::state(&transport).await?.state != Lifecycle::Running {
            return Err(ApiError::InvalidRequest(
                "no computer runs: the environment is saved from a running one".into(),
            ));
        }
        self.save_on(&transport, SaveReason::Request).await?;
        Ok(json!({ "environment": self.environment_json()? }))
    }

    /// Saves the environment of the computer `state` describes before it
    /// is released, when it runs. A failure is kept in the record and
    /// does not keep the computer from being released.
    pub(crate) async fn save_before_release(
        &self,
        transport: &H::Computer,
        state: &ComputerState,
    ) -> Result<(), ApiError> {
        if state.state == Lifecycle::Running {
            let _ = self.save_on(transport, SaveReason::Release).await;
        }
        Ok(())
    }

    async fn save_on(&self, transport: &H::Computer, reason: SaveReason) -> Result<(), ApiError> {
        let limit = settings::computer(self.db())?.environment_limit();
        // Saved for the setup the computer was given, if it is the one
        // known (it is, unless the agent's record was dropped meanwhile).
        let setup = match store::prepared(self.db())? {
            Some(prepared) => prepared.from,
            None => setup::fingerprint(&self.vfs())?,
        };
        let why = Why { reason, setup };
        super::save(self.db(), transport, limit, why, self.now_ms()).await?;
        Ok(())
    }

    /// Gives the computer `pushed` reached its environment, unless it has
    /// it for the workspace's setup fingerprint already: on a fresh one the
    /// snapshot is restored when it was built from that fingerprint; else,
    /// with a setup script, the script runs and its result is saved. A
    /// restore or setup that fails leaves the computer without the
    /// environment (a warning, or a failed state with the log), and
    /// commands run on. Answers the computer brought in step again when the
    /// script ran (it may have changed workspace files).
    pub(crate) async fn prepare_environment(
        &self,
        transport: &H::Computer,
        pushed: &Pushed,
    ) -> Result<Option<Pushed>, ApiError> {
        let current = setup::fingerprint(&self.vfs())?;
        let prepared = store::prepared(self.db())?;
        if prepared.is_some_and(|p| p.instance == pushed.instance && p.from == current) {
            return Ok(None);
        }
        let fits = store::record(self.db())?.is_some_and(|record| {
            record.state == EnvState::Ready
                && record.built_from.is_some_and(|from| from.setup == current)
        });
        if pushed.fresh && fits {
            let restored = super::restore(self.db(), transport, &pushed.instance).await;
            if restored.is_ok() || current.is_none() {
                store::set_prepared(self.db(), &pushed.instance, current.as_ref())?;
                return Ok(None);
            }
        }
        store::set_prepared(self.db(), &pushed.instance, current.as_ref())?;
        let Some(current) = current else {
            return Ok(None);
        };
        self.run_setup(transport, pushed, current).await?;
        let again =
            computer::bring_in_step(self.db(), || self.vfs(), self.host.chunk_store(), transport)
                .await?;
        Ok(Some(again))
    }

    /// Runs the setup script on the computer and saves what it built, or
    /// marks the environment failed with the script's output.
    async fn run_setup(
        &self,
        transport: &H::Computer,
        pushed: &Pushed,
        from: Fingerprint,
    ) -> Result<(), ApiError> {
        store::mark(self.db(), EnvState::Building, None)?;
        let outcome = self.run_setup_script(transport, pushed).await?;
        if outcome.status == ExecStatus::Exited && outcome.exit_code == Some(0) {
            let limit = settings::computer(self.db())?.environment_limit();
            let why = Why {
                reason: SaveReason::Setup,
                setup: Some(from),
            };
            let _ = super::save(self.db(), transport, limit, why, self.now_ms()).await;
            return Ok(());
        }
        let mut log = outcome.stdout.bytes;
        log.extend_from_slice(&outcome.stderr.bytes);
        let start = log.len().saturating_sub(MAX_LOG);
        let ended = match (outcome.status, outcome.exit_code) {
            (ExecStatus::Exited, Some(code)) => format!("exited with code {code}"),
            (status, _) => format!(
                "ended {}",
                serde_json::to_value(status).expect("serializes")
            ),
        };
        let note = outcome
            .message
            .map(|m| format!(" ({m})"))
            .unwrap_or_default();
        let mut text = format!("{SETUP_PATH} {ended}{note}\n");
        text.push_str(&String::from_utf8_lossy(&log[start..]));
        store::mark(self.db(), EnvState::Failed, Some(&text))?;
        Ok(())
    }

    async fn run_setup_script(
        &self,
        transport: &H::Computer,
        pushed: &Pushed,
    ) -> Result<ExecOutcome, ApiError> {
        let id = self.exec_id()?;
        let cancelled = Cell::new(false);
        let before_apply = self.checkpoint_before_apply("environment", "setup script");
        let exec = computer::Exec {
            id: &id,
            command: computer::Command {
                command: format!("bash {SETUP_PATH}"),
                cwd: VPath::root(),
                env: BTreeMap::new(),
                stdin: Vec::new(),
                timeout_ms: SETUP_TIMEOUT_MS,
            },
            handling: computer::Handling {
                encoding: OutputEncoding::Utf8,
                cancelled: &cancelled,
                before_apply: &before_apply,
                until: None,
                on_detached: &|_| Ok(()),
            },
        };
        let ran = computer::run(
            &self.host,
            || self.vfs(),
            transport,
            pushed.clone(),
            &exec,
            &Discard,
        )
        .await?;
        match ran {
            Ran::Finished(outcome) => Ok(outcome),
            Ran::Suspended(_) => Err(ApiError::Internal(
                "the setup script was left running".into(),
            )),
        }
    }

    /// Notes a use of the computer: its idle release is due the idle
    /// timeout from now, so its environment is to be saved shortly before
    /// (the alarm does it, see [`Agent::save_before_idle_release`]).
    pub(crate) fn note_computer_use(&self) -> Result<(), ApiError> {
        let idle = settings::computer(self.db())?
            .idle_ms
            .unwrap_or(stead_sync::owner::DEFAULT_IDLE_MS);
        let deadline = self
            .now_ms()
            .saturating_add(i64::try_from(idle).unwrap_or(i64::MAX));
        store::set_save_due(self.db(), Some(save_time(deadline, idle)))?;
        Ok(())
    }

    /// The alarm's part: once the save before an idle release is due,
    /// asks the computer's owner when the release really is (the
    /// deployment's default idle timeout, or a use since, may move it).
    /// Close enough, the environment is saved (the pack does not count as
    /// use, so the release still comes); later, the save waits for it; a
    /// computer that is gone, or the local program that is never
    /// released, needs none.
    pub(crate) async fn save_before_idle_release(&self) -> Result<(), ApiError> {
        let Some(due) = store::save_due(self.db())? else {
            return Ok(());
        };
        if due > self.now_ms() {
            return Ok(());
        }
        let _turn = self.computer_turn.lock().await;
        let transport = self.computer()?;
        // A computer that cannot say is not saved from (nor retried: the
        // next use notes a new time).
        let state = computer::state(&transport).await.ok();
        let running = state.as_ref().and_then(|state| match state {
            ComputerState {
                state: Lifecycle::Running,
                provision: Provision::Container,
                idle_deadline_ms: Some(deadline),
                ..
            } => Some((*deadline, state.idle_ms)),
            _ => None,
        });
        let (deadline, idle_ms) = match running {
            Some(running) => running,
            None => {
                store::set_save_due(self.db(), None)?;
                return Ok(());
            }
        };
        let at = save_time(deadline, idle_ms);
        if at > self.now_ms() {
            store::set_save_due(self.db(), Some(at))?;
            return Ok(());
        }
        store::set_save_due(self.db(), None)?;
        match self.save_on(&transport, SaveReason::Release).await {
            // A command still runs (which keeps the computer up): again
            // shortly.
            Err(ApiError::Computer(error)) if error.is_busy() => {
                store::set_save_due(self.db(), Some(self.now_ms() + BUSY_RETRY_MS))?;
            }
            _ => {}
        }
        Ok(())
    }

    /// `DELETE /agents/{id}/computer/environment`: drops the snapshot (a
    /// running computer keeps what it has until it is released).
    pub(crate) fn drop_environment(&self) -> Result<Value, ApiError> {
        store::drop_all(self.db())?;
        Ok(json!({ "environment": Value::Null }))
    }
}
