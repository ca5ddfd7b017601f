//! The durable environment: what the agent's computer installed outside
//! the synced tree (the dependency trees the sync ignores, such as
//! `.venv/` and `node_modules/`, and the commands' per-user directory
//! `/var/tmp/home`), kept as a content-addressed snapshot in the agent's
//! SQLite and put back on the next fresh computer before its first
//! command (protocol: `stead_sync::environment`).
//!
//! - [`save`]: packs the computer's environment and keeps it, fetching
//!   only the chunks the snapshot store lacks. Over the size limit, or
//!   with a chunk that changed on the way, nothing is kept anew and the
//!   snapshot saved before stays.
//! - [`restore`]: sends the snapshot to a fresh computer, which writes it
//!   whole or not at all. Every chunk is checked against its hash before it
//!   leaves: a missing or damaged one means a fresh environment and a
//!   warning (in [`store::Record::warning`]), never a half-restored one.
//! - [`store`]: the record, manifest and content in SQLite;
//! - `serve`: the routes and the hooks at release and at a cold start.

mod serve;
pub mod setup;
pub mod store;

use stead_sql::{Sql, SqlError};
use stead_sync::environment::{
    EnvChunkRequest, PackReply, PackRequest, Restore, RestoreReply, CHUNKS_PATH, PACK_PATH,
    RESTORE_PATH,
};
use stead_sync::{frame, ChunkHash, Status, CHUNK_SIZE};
use thiserror::Error;

use crate::computer::{link, ComputerError, Link};
use crate::host::{Method, Transport};
pub use setup::Fingerprint;
pub use store::{BuiltFrom, EnvState, Record, SaveReason};

/// The snapshot's size limit when the agent's settings name none.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;

/// Chunks per request each way: bounded memory in the Durable Object.
const BATCH_CHUNKS: usize = (8 << 20) / CHUNK_SIZE;

/// Why a save or restore did not happen.
#[derive(Debug, Error)]
pub enum EnvError {
    #[error("the environment holds {bytes} bytes, over its limit of {limit} (raise it with PUT /agents/{{id}}/settings {{\"computer\":{{\"environment_max_bytes\":...}}}}, or remove what is not needed)")]
    TooLarge { bytes: u64, limit: u64 },
    #[error("the snapshot is damaged: {0}")]
    Damaged(String),
    #[error("the snapshot's record does not decode: {0}")]
    Decode(String),
    #[error(transparent)]
    Computer(#[from] ComputerError),
    #[error(transparent)]
    Sql(#[from] SqlError),
}

/// Packs the environment of the computer `transport` reaches (which must
/// run) and makes it the snapshot. On failure the snapshot saved before
/// stays, and the record says why (a failed state when there is none).
pub async fn save<S: Sql, T: Transport>(
    db: &S,
    transport: &T,
    limit: u64,
    why: Why,
    now_ms: i64,
) -> Result<Record, EnvError> {
    let before = store::record(db)?;
    store::mark(db, EnvState::Building, None)?;
    match pack_and_keep(db, &Link::new(transport), limit, why, now_ms).await {
        Ok(()) => Ok(store::record(db)?.expect("just saved")),
        Err(error) => {
            let message = error.to_string();
            match before.filter(|record| record.state == EnvState::Ready) {
                Some(_) => {
                    store::mark(db, EnvState::Ready, None)?;
                    store::warn(db, Some(&format!("the last save failed: {message}")))?;
                }
                None => store::mark(db, EnvState::Failed, Some(&message))?,
            }
            Err(error)
        }
    }
}

/// Why a save is made, and for which setup (see [`BuiltFrom`]).
pub struct Why {
    pub reason: SaveReason,
    pub setup: Option<Fingerprint>,
}

async fn pack_and_keep<S: Sql, T: Transport>(
    db: &S,
    link: &Link<'_, T>,
    limit: u64,
    why: Why,
    now_ms: i64,
) -> Result<(), EnvError> {
    let status: Status = link
        .json("status", Method::Get, "/v1/status", None::<&()>)
        .await?;
    let request = PackRequest { limit_bytes: limit };
    let reply: PackReply = link
        .json("pack", Method::Post, PACK_PATH, Some(&request))
        .await?;
    let (pack, entries, bytes) = match reply {
        PackReply::TooLarge { bytes, limit } => return Err(EnvError::TooLarge { bytes, limit }),
        PackReply::Packed {
            pack,
            entries,
            bytes,
            ..
        } => (pack, entries, bytes),
    };
    let hashes: Vec<ChunkHash> = entries
        .iter()
        .flat_map(|e| e.chunks().iter().copied())
        .collect();
    let missing = store::missing(db, &hashes)?;
    for batch in missing.chunks(BATCH_CHUNKS) {
        let request = EnvChunkRequest {
            pack: pack.clone(),
            chunks: batch.to_vec(),
        };
        let body = link
            .bytes(
                "environment chunks",
                Method::Post,
                CHUNKS_PATH,
                Some(link::json(&request)),
            )
            .await?;
        let chunks = frame::decode_all(&body).map_err(|e| EnvError::Damaged(e.to_string()))?;
        for (hash, data) in chunks {
            if !store::put_chunk(db, &hash, &data)? {
                return Err(EnvError::Damaged(format!("chunk {hash} arrived damaged")));
            }
        }
    }
    if let Some(hash) = store::missing(db, &hashes)?.first() {
        return Err(EnvError::Damaged(format!(
            "the computer did not send {hash}"
        )));
    }
    let from = BuiltFrom {
        reason: why.reason,
        instance: status.instance,
        setup: why.setup,
    };
    store::commit(db, &entries, bytes, &from, now_ms)
}

/// Puts the snapshot on the fresh computer `instance` (nothing to do
/// without one). Whatever goes wrong, the computer is left fresh and the
/// record's warning says why; the error is returned for the caller to go
/// on without the environment.
pub async fn restore<S: Sql, T: Transport>(
    db: &S,
    transport: &T,
    instance: &str,
) -> Result<Option<RestoreReply>, EnvError> {
    if store::record(db)?.is_none_or(|record| record.state != EnvState::Ready) {
        return Ok(None);
    }
    let restored = send(db, &Link::new(transport), instance).await;
    let warning = match &restored {
        Ok(_) => None,
        Err(error) => Some(format!(
            "the environment was not restored (the computer started fresh): {error}"
        )),
    };
    store::warn(db, warning.as_deref())?;
    restored.map(Some)
}

async fn send<S: Sql, T: Transport>(
    db: &S,
    link: &Link<'_, T>,
    instance: &str,
) -> Result<RestoreReply, EnvError> {
    let request = Restore {
        instance: instance.to_string(),
        entries: store::entries(db)?,
    };
    for _ in 0..2 {
        let reply: RestoreReply = link
            .json("restore", Method::Post, RESTORE_PATH, Some(&request))
            .await?;
        let needed = match reply {
            RestoreReply::Restored { .. } => return Ok(reply),
            RestoreReply::Need { chunks } => chunks,
        };
        for batch in needed.chunks(BATCH_CHUNKS) {
            let mut frames = Vec::new();
            for hash in batch {
                let data = store::chunk(db, hash)?.ok_or_else(|| {
                    EnvError::Damaged(format!("chunk {hash} is missing or damaged"))
                })?;
                frame::encode(&mut frames, &data);
            }
            link.bytes(
                "restore chunks",
                Method::Post,
                "/v1/sync/chunks",
                Some(link::frames(frames)),
            )
            .await?;
        }
    }
    Err(EnvError::Damaged(
        "the computer still lacked content after it was sent".into(),
    ))
}
