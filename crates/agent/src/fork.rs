//! Fork: a checkpoint of this agent becomes a new agent, across Durable
//! Objects.
//!
//! The source ([`Agent::fork_out`]) reads the checkpoint as a stream of
//! bounded pages (entries, then each distinct chunk once; never a whole
//! file in memory) and sends each to the target's `fork/import` route
//! through the host (a chunk kept in the object store goes as a reference:
//! the target adopts it, putting its own marker beside the bucket's object,
//! so a fork of a tiered workspace copies metadata, not content, see
//! `stead_vfs::tier`); the target ([`Agent::fork_in`]) stages every page and
//! becomes a workspace only when the last one is in. Until then every
//! other request to the target is refused (`409 AGENT_FORKING`), and a
//! target whose source falls silent for `FORK_STALL_MS` drops what it
//! staged on its next alarm, so a broken-off fork leaves nothing usable
//! and nothing behind. A fork that is asked again after breaking off
//! resumes where the target's staging stopped. The source only reads its
//! own workspace: it keeps serving writes meanwhile, and they are not part
//! of the fork (the checkpoint pins what is copied).
//!
//! A fork makes a new agent: a target that exists (and is not this fork's
//! copy under way) is refused (`409 AGENT_EXISTS`), an empty one too, and
//! so is one that existed and was deleted (`409 AGENT_EXISTED`, see
//! `crate::tombstone`). So an import's target is always storage the import
//! itself created, and dropping a broken-off import (wiping that storage)
//! removes nothing else: no other agent's files, hooks, schedules or
//! settings. Only the deployment's admin token forks (see
//! `crate::policy`): an agent token names one agent, and a fork creates
//! another. The
//! checkpoint forked from travels: the new agent's first checkpoint pins
//! the copied tree, under the source checkpoint's name, noting where it
//! came from ([`ForkOrigin`]). The source's other checkpoints do not: they
//! are its history, not the fork's.

use serde_json::{json, Value};
use stead_sql::Sql;
use stead_vfs::tier::{Tier, FORK_HOLDER};
use stead_vfs::{CheckpointId, ExportCursor, ImportProgress, NewCheckpoint, Operation, Scope};

use crate::agent::Agent;
use crate::checkpoints::{self, AutoCheckpoints, ForkRequest, FORK_PAGE_BYTES};
use crate::error::ApiError;
use crate::host::Host;
use crate::route::percent_encode;

/// The target route a source sends its pages to.
pub const IMPORT_PATH: &str = "/fork/import";

/// The checkpoint a fork copies, as the target records it: sent in the
/// query of every page (`from`, `checkpoint`, `name`), it becomes the new
/// agent's first checkpoint when the last page is in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForkOrigin {
    /// The source agent.
    pub agent: String,
    /// The checkpoint's id there.
    pub checkpoint: i64,
    /// Its name there, which the copy takes.
    pub name: Option<String>,
}

impl ForkOrigin {
    /// The query string a page carries it in.
    fn query(&self) -> String {
        let mut query = format!(
            "from={}&checkpoint={}",
            percent_encode(&self.agent),
            self.checkpoint
        );
        if let Some(name) = &self.name {
            query.push_str(&format!("&name={}", percent_encode(name)));
        }
        query
    }

    /// The origin a page's query names, if it names one.
    pub fn from_query(query: &[(String, String)]) -> Option<ForkOrigin> {
        let value = |key: &str| query.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
        Some(ForkOrigin {
            agent: value("from")?,
            checkpoint: value("checkpoint")?.parse().ok()?,
            name: value("name"),
        })
    }

    /// The note of the copy's checkpoint.
    fn note(&self) -> String {
        format!(
            "forked from agent {:?}, checkpoint {}",
            self.agent, self.checkpoint
        )
    }
}

impl<H: Host> Agent<H> {
    /// The source side: streams the checkpoint to the new agent.
    pub(crate) async fn fork_out(
        &self,
        agent: &str,
        actor: &str,
        request: ForkRequest,
    ) -> Result<Value, ApiError> {
        let checkpoint = match request.checkpoint {
            Some(id) => id,
            None => self.fork_checkpoint(actor)?,
        };
        let origin = ForkOrigin {
            agent: agent.to_string(),
            checkpoint: checkpoint.0,
            name: self.vfs().checkpoint(checkpoint)?.name,
        };
        let page_path = format!("{IMPORT_PATH}?{}", origin.query());
        // A target that already staged part of this fork resumes it.
        let (status, probe) = self
            .host
            .call_agent(&request.to, &format!("{IMPORT_PATH}?status"), Vec::new())
            .await
            .map_err(|reason| ApiError::ForkFailed { reason })?;
        let mut cursor = match status {
            200 => checkpoints::resume_point(&probe).unwrap_or(ExportCursor::Start),
            _ => return Err(target_refused(&request.to, status, &probe)),
        };
        let (mut pages, mut bytes, mut shared) = (0u64, 0u64, 0u64);
        loop {
            // Chunks kept in the object store are shared, not sent.
            let page = self
                .fetched(|| {
                    Ok(self
                        .vfs()
                        .export_page(checkpoint, &cursor, FORK_PAGE_BYTES)?)
                })
                .await?;
            bytes += page.chunk_bytes;
            shared += page.shared_bytes;
            pages += 1;
            let (status, answer) = self
                .host
                .call_agent(&request.to, &page_path, page.frames)
                .await
                .map_err(|reason| ApiError::ForkFailed { reason })?;
            if status != 200 {
                return Err(target_refused(&request.to, status, &answer));
            }
            match page.next {
                Some(next) => cursor = next,
                None => {
                    return Ok(json!({
                        "fork": {
                            "to": request.to,
                            "checkpoint": checkpoint,
                            "pages": pages,
                            "bytes": bytes,
                            "shared_bytes": shared,
                            "import": answer["import"],
                        }
                    }))
                }
            }
        }
    }

    /// The checkpoint a fork copies when none is named: the workspace as
    /// it is now (an existing whole checkpoint of this revision, or a new
    /// automatic one, taken whatever the workspace's automatic setting).
    fn fork_checkpoint(&self, actor: &str) -> Result<CheckpointId, ApiError> {
        let retention = self.checkpoint_settings()?.retention;
        let taken = self.vfs().take_auto_checkpoint(
            stead_vfs::Before {
                actor,
                operation: &Operation::Fork,
                note: None,
                scope: Scope::Whole,
            },
            &retention,
        )?;
        Ok(taken.id)
    }

    /// The target side: one page of the stream, or (`?status`) where the
    /// staging stands. The last page makes the workspace and, in the same
    /// transaction, its first checkpoint: the one forked from (`origin`).
    pub(crate) async fn fork_in(
        &self,
        status_only: bool,
        page: &[u8],
        origin: Option<&ForkOrigin>,
    ) -> Result<Value, ApiError> {
        let vfs = self.vfs();
        if status_only {
            return Ok(json!({ "import": vfs.import_status()? }));
        }
        // Chunks the source shares through the object store are adopted
        // (this agent's marker on the object, a tiered row), not copied.
        let adopted = self.adopt_shared(page).await;
        let imported = adopted.and_then(|_| self.import_fork_page(page, origin));
        vfs.release_chunks(FORK_HOLDER)?;
        let progress = imported?;
        checkpoints::note_import_page(self.db(), self.now_ms())?;
        Ok(json!({ "import": checkpoints::progress_json(&progress) }))
    }

    /// Adopts the chunks a fork's page shares through the object store.
    async fn adopt_shared(&self, page: &[u8]) -> Result<u64, ApiError> {
        let vfs = self.vfs();
        match self.host.chunk_store() {
            Some(store) => {
                let name = self.name()?;
                Ok(Tier::new(&vfs, store, &name).adopt_shared(page).await?)
            }
            // Without an object store nothing is tiered, nothing shared:
            // a page naming shared chunks is refused by the import.
            None => Ok(0),
        }
    }

    /// Stages one page; the last makes the workspace and its first
    /// checkpoint, in the same transaction.
    fn import_fork_page(
        &self,
        page: &[u8],
        origin: Option<&ForkOrigin>,
    ) -> Result<ImportProgress, ApiError> {
        let vfs = self.vfs();
        self.db().transaction(|| {
            let progress = vfs.import_page(page)?;
            if let (ImportProgress::Finished { .. }, Some(origin)) = (&progress, origin) {
                let note = origin.note();
                vfs.create_checkpoint(NewCheckpoint {
                    actor: "fork",
                    name: origin.name.as_deref(),
                    note: Some(&note),
                })?;
            }
            Ok::<_, ApiError>(progress)
        })
    }

    /// Whether this agent is a fork still being copied (and so unusable).
    pub(crate) fn forking(&self) -> Result<bool, ApiError> {
        if self.first_fork_page.get() {
            return Ok(true);
        }
        if self.not_forking.get() {
            return Ok(false);
        }
        let forking = self.vfs().import_status()?.is_some();
        self.not_forking.set(!forking);
        Ok(forking)
    }

    /// Drops a fork whose source fell silent: the agent never existed.
    /// Returns whether it did. Wiping the whole storage removes only what
    /// the import made: an import starts only on storage that never held
    /// an agent (see the module docs), and every request but the import's
    /// own pages and a delete is refused while it runs, so nothing else can
    /// have been added. It leaves no tombstone: no agent existed, and the
    /// fork may be asked again.
    pub(crate) async fn drop_stalled_fork(&self) -> Result<bool, ApiError> {
        match checkpoints::import_deadline(self.db(), &self.vfs())? {
            Some(deadline) if deadline <= self.now_ms() => {
                self.vfs().abort_import()?;
                self.wipe_storage().await?;
                self.release_deleted().await?;
                self.closed();
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

/// The error for a target `to` that refused a page: one that already
/// exists (or holds another fork's copy) is the caller's mistake; anything
/// else is a failed fork.
fn target_refused(to: &str, status: u16, answer: &Value) -> ApiError {
    let message = answer["error"]["message"]
        .as_str()
        .unwrap_or("no reason given");
    match answer["error"]["code"].as_str() {
        Some("AGENT_EXISTS" | "EEXIST" | "AGENT_FORKING") => {
            ApiError::AgentExists { id: to.to_string() }
        }
        Some("AGENT_EXISTED") => ApiError::AgentExisted { id: to.to_string() },
        _ => ApiError::ForkFailed {
            reason: format!("the new agent refused the copy ({status}): {message}"),
        },
    }
}
