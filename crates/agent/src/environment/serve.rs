//! The environment's routes and hooks on the agent: saved at release and on
//! request, restored when a fresh computer comes up, shown and dropped.

use serde_json::{json, Value};
use stead_sync::host::{ComputerState, Lifecycle};

use super::{store, SaveReason};
use crate::agent::Agent;
use crate::computer;
use crate::error::ApiError;
use crate::host::Host;
use crate::settings;

impl<H: Host> Agent<H> {
    /// What `GET /agents/{id}/computer` shows of the environment: its
    /// record, with the content bytes its store holds (`null` when none
    /// was ever saved).
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
        super::save(self.db(), transport, limit, reason, self.now_ms()).await?;
        Ok(())
    }

    /// Puts the environment on a computer new to the workspace (`instance`),
    /// before its first command. A restore that fails leaves that computer
    /// fresh and a warning in the record: commands run without it.
    pub(crate) async fn restore_environment(&self, transport: &H::Computer, instance: &str) {
        let _ = super::restore(self.db(), transport, instance).await;
    }

    /// `DELETE /agents/{id}/computer/environment`: drops the snapshot (a
    /// running computer keeps what it has until it is released).
    pub(crate) fn drop_environment(&self) -> Result<Value, ApiError> {
        store::drop_all(self.db())?;
        Ok(json!({ "environment": Value::Null }))
    }
}
