//! The agent's side of the chunk tier (`stead_vfs::tier`): the alarm's
//! bounded round of moving and collecting, when the alarm must next fire
//! for it, the fetch-and-retry around synchronous reads, and the `verify`
//! walk. A deployment without an object store keeps every chunk inline and
//! none of this does anything.

use serde_json::{json, Value};
use stead_vfs::tier::{NamesTiered, Tier};

use crate::agent::Agent;
use crate::error::ApiError;
use crate::host::Host;

/// Tiered chunks a `verify` page checks, by default and at most.
const VERIFY_PAGE: usize = 256;
const MAX_VERIFY_PAGE: usize = 4096;

impl NamesTiered for ApiError {
    fn tiered_chunks(&self) -> Option<&[i64]> {
        match self {
            ApiError::Fs(error) => error.tiered_chunks(),
            _ => None,
        }
    }
}

impl<H: Host> Agent<H> {
    /// The alarm's round: confirms and starts moves, then collects bucket
    /// copies no longer needed, each in bounded batches. A store failure
    /// ends the round; the next alarm resumes.
    pub(crate) async fn tend_tier(&self) -> Result<(), ApiError> {
        let Some(store) = self.host.chunk_store() else {
            return Ok(());
        };
        // What an earlier agent of this name left to release.
        self.release_markers().await?;
        let name = self.name()?;
        let vfs = self.vfs();
        let tier = Tier::new(&vfs, store, &name).with_policy(self.host.tier_policy());
        tier.move_some().await?;
        tier.collect_garbage().await?;
        Ok(())
    }

    /// After a change: arms the alarm for the tier when its next work is
    /// due before the alarm fires (new chunks turn cold, copies to collect).
    pub(crate) async fn hasten_tier(&self) -> Result<(), ApiError> {
        let Some(due) = self.tier_due()? else {
            return Ok(());
        };
        if self.alarm_at.get().is_some_and(|at| at <= due) {
            return Ok(());
        }
        self.arm().await
    }

    /// When the alarm must next fire for the tier, if ever.
    pub(crate) fn tier_due(&self) -> Result<Option<i64>, ApiError> {
        if self.host.chunk_store().is_none() {
            return Ok(None);
        }
        let policy = self.host.tier_policy();
        let release = crate::tier_release::due(self.db(), policy.grace_ms)?;
        Ok(self
            .vfs()
            .tier_due(&policy)?
            .into_iter()
            .chain(release)
            .min())
    }

    /// Runs the synchronous `op`; when it meets chunks in the tier, brings
    /// them back (verified) and runs it again. Without an object store the
    /// answer is `op`'s.
    pub(crate) async fn fetched<T>(
        &self,
        mut op: impl FnMut() -> Result<T, ApiError>,
    ) -> Result<T, ApiError> {
        // The common case costs nothing more than `op`.
        let first = op();
        let tiered = first.as_ref().err().and_then(NamesTiered::tiered_chunks);
        let (Some(chunks), Some(store)) = (tiered.map(<[i64]>::to_vec), self.host.chunk_store())
        else {
            return first;
        };
        let name = self.name()?;
        let vfs = self.vfs();
        let tier = Tier::new(&vfs, store, &name);
        tier.bring_back(&chunks).await?;
        tier.fetched(op).await
    }

    /// `GET /verify?after=&limit=`: one page of the walk over the chunks
    /// kept only in the object store, naming those missing there.
    pub(crate) async fn verify_tier(&self, query: &[(String, String)]) -> Result<Value, ApiError> {
        let (mut after, mut limit) = (0i64, VERIFY_PAGE);
        for (key, value) in query {
            let number = || {
                value
                    .parse::<i64>()
                    .ok()
                    .filter(|n| *n >= 0)
                    .ok_or_else(|| {
                        ApiError::InvalidRequest(format!("{key}={value:?}: use a whole number"))
                    })
            };
            match key.as_str() {
                "after" => after = number()?,
                "limit" => limit = (number()? as usize).clamp(1, MAX_VERIFY_PAGE),
                other => {
                    return Err(ApiError::InvalidRequest(format!(
                        "unknown parameter {other:?} (verify takes after and limit)"
                    )))
                }
            }
        }
        let vfs = self.vfs();
        let usage = vfs.tier_usage()?;
        let Some(store) = self.host.chunk_store() else {
            return Ok(json!({ "store": false, "usage": usage, "checked": 0,
                "missing": [], "unmarked": [], "next": null }));
        };
        let name = self.name()?;
        let tier = Tier::new(&vfs, store, &name).with_policy(self.host.tier_policy());
        let page = tier.verify(after, limit).await?;
        let mut body =
            serde_json::to_value(&page).map_err(|e| ApiError::Internal(e.to_string()))?;
        body["store"] = json!(true);
        body["usage"] = json!(usage);
        Ok(body)
    }
}
