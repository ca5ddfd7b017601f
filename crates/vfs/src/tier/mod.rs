//! Where the bytes live: chunks in an object store by hash, the tree and
//! manifests in SQLite.
//!
//! A Durable Object's SQLite holds 10 GB; the workspace's content may be
//! larger. So a chunk's bytes may leave the database for an object store
//! (one R2 bucket shared by every agent, keyed by the chunk's BLAKE3 hash),
//! while its row stays: the manifests (`file_chunks`, `checkpoint_chunks`,
//! ...) keep naming chunk ids, and the reference rules of
//! [`crate::content`] are unchanged.
//!
//! # The rule that keeps every tool correct
//! The VFS is synchronous over [`Sql`]; an object-store read is not. So:
//! - **What stays inline.** A chunk smaller than [`TierPolicy::min_bytes`]
//!   (every file under that size: source trees, notes, configuration)
//!   never moves, and a chunk written or brought back less than
//!   [`TierPolicy::hot_ms`] ago stays too. The shell, grep and the file
//!   tools read those exactly as before.
//! - **The move runs in the background** ([`Tier::move_some`], from the
//!   alarm, in bounded batches), through three states per chunk
//!   ([`TierState`]): *inline*; *moving* (the bytes are still inline and
//!   the bucket may hold a copy); *tiered* (only the bucket holds them, the
//!   row's `data` is empty). A chunk becomes tiered only after a grace
//!   period in *moving*, when a read of the bucket's copy, verified against
//!   the hash, and this agent's reference marker are both found: a move cut
//!   at any point resumes, and a bucket copy deleted meanwhile by another
//!   agent's collection is put again from the inline bytes.
//! - **A synchronous read of a tiered chunk is an error, never bytes**:
//!   every read of [`crate::content`] checks the bytes against the row's
//!   size and answers [`VfsError::Tiered`] naming the chunks to fetch. The
//!   async layer brings them back inline ([`Tier::bring_back`], each
//!   verified against its hash) and asks again ([`Tier::fetched`]); a
//!   streamed download reads them from the bucket without bringing them
//!   back ([`Tier::read_chunk`]). A brought-back chunk is hot again and
//!   moves out again once cold.
//!
//! # References across agents, and collection
//! The bucket is shared, so one agent may not delete an object another
//! still names. Each agent that relies on an object keeps a marker object
//! beside it ([`marker_key`]): `refs/<hash>/<agent>`. When this agent's last
//! reference to a chunk that may be in the bucket goes (the row is
//! collected, or brought back inline), its hash is queued in
//! `tier_garbage`; after [`TierPolicy::grace_ms`] (so a download that listed
//! the chunk still finds it) [`Tier::collect_garbage`] deletes this agent's
//! marker, lists the markers left and deletes the object when none is.
//! A fork copies metadata: the new agent [`Tier::adopt`]s a tiered chunk by
//! putting its own marker (the source's marker still stands, so the object
//! cannot go meanwhile) and recording the row as tiered, with no bytes.
//!
//! Why that is safe against another agent's collection racing a move: a
//! collection deletes the object only right after listing no marker, so
//! the delete follows the list by one request. A move puts its marker
//! before the object and confirms the object a whole grace period later;
//! a collection that listed before that marker deleted the object long
//! before the confirmation, which then finds it missing and puts it again.
//! Maintenance ([`Tier::move_some`], [`Tier::collect_garbage`]) runs from
//! one alarm at a time, never concurrently with itself.
//!
//! The object store is reached only through [`ObjectStore`]; objects are
//! whole chunks (the unit every read verifies), so the trait has no range
//! reads: a byte range of a file is a range of chunks.

#[cfg(feature = "fake-store")]
pub mod fake;
mod fetch;
mod gc;
mod moving;
mod verify;

use stead_sql::{params, Sql};

use crate::error::{Result, VfsError};
use crate::Vfs;

pub use fetch::{chunk_by_hash, fetch_verified, read_chunk, read_file, NamesTiered, FORK_HOLDER};
pub use gc::{release_marker, Collected};
pub use moving::Moved;
pub use verify::{MissingChunk, VerifyPage};

/// An object store (on Workers, an R2 bucket binding). Every method names
/// one object by its full key. The futures are not `Send`: a Durable
/// Object runs on one thread.
#[allow(async_fn_in_trait)]
pub trait ObjectStore {
    /// Stores `bytes` under `key`, replacing what was there.
    async fn put(&self, key: &str, bytes: &[u8]) -> Result<(), StoreError>;
    /// The object under `key`, or `None` when there is none.
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError>;
    /// The size of the object under `key`, or `None` when there is none.
    async fn head(&self, key: &str) -> Result<Option<u64>, StoreError>;
    /// Deletes the object under `key`; deleting a missing one is no error.
    async fn delete(&self, key: &str) -> Result<(), StoreError>;
    /// Up to `limit` keys that start with `prefix`, in key order.
    async fn list(&self, prefix: &str, limit: usize) -> Result<Vec<String>, StoreError>;
}

/// What the object store did wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The store could not be reached or refused the request.
    #[error("{op:?} {key}: {reason}")]
    Failed {
        op: StoreOp,
        key: String,
        reason: String,
    },
    /// A chunk the workspace names is not in the store.
    #[error("chunk {key} is missing from the object store")]
    Missing { key: String },
    /// The store answered bytes that are not the chunk the key names.
    #[error("chunk {key} read from the object store does not match its hash")]
    Mismatch { key: String },
}

/// An operation of [`ObjectStore`], named in its errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreOp {
    Put,
    Get,
    Head,
    Delete,
    List,
}

/// Where a chunk's bytes are (the `chunks.tier` column).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TierState {
    /// In the row's `data` only.
    Inline,
    /// In the row's `data`, and maybe in the bucket: a move has begun.
    Moving,
    /// In the bucket only; `data` is empty.
    Tiered,
}

impl TierState {
    pub(crate) fn code(self) -> i64 {
        match self {
            TierState::Inline => 0,
            TierState::Moving => 1,
            TierState::Tiered => 2,
        }
    }

    pub(crate) fn from_code(code: i64) -> Result<TierState> {
        match code {
            0 => Ok(TierState::Inline),
            1 => Ok(TierState::Moving),
            2 => Ok(TierState::Tiered),
            other => Err(VfsError::Corrupt(format!("chunk tier {other}"))),
        }
    }
}

/// When chunks move and bucket copies go (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TierPolicy {
    /// Chunks smaller than this stay inline for good.
    pub min_bytes: u64,
    /// A chunk written or brought back this recently stays inline.
    pub hot_ms: i64,
    /// How long a moving chunk waits before it is confirmed, and a bucket
    /// copy no longer needed before its marker (and object) go.
    pub grace_ms: i64,
    /// Chunks moved, confirmed or collected per call, each.
    pub batch: usize,
    /// Most bytes one light-shell exec may bring back from the store (see
    /// `stead_shell::content`): as much as the shell may hold in memory.
    pub exec_bytes: u64,
}

impl Default for TierPolicy {
    fn default() -> Self {
        TierPolicy {
            // Half a chunk: a file under 256 KiB never leaves SQLite.
            min_bytes: crate::CHUNK_SIZE as u64 / 2,
            hot_ms: 10 * 60 * 1000,
            grace_ms: 10 * 60 * 1000,
            batch: 64,
            exec_bytes: 64 << 20,
        }
    }
}

/// The key of the chunk with `hash` in the object store.
pub fn chunk_key(hash: &[u8]) -> String {
    format!("chunks/{}", hex(hash))
}

/// The key of `agent`'s marker on the chunk with `hash`.
pub fn marker_key(hash: &[u8], agent: &str) -> String {
    format!("{}{agent}", marker_prefix(hash))
}

/// The prefix under which every agent's marker on `hash` lies.
fn marker_prefix(hash: &[u8]) -> String {
    format!("refs/{}/", hex(hash))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The tier of one agent's workspace: its view, the shared store, and the
/// agent's name (which its markers carry).
pub struct Tier<'a, 'db, S: Sql, O: ObjectStore> {
    vfs: &'a Vfs<'db, S>,
    store: &'a O,
    agent: &'a str,
    policy: TierPolicy,
}

impl<'a, 'db, S: Sql, O: ObjectStore> Tier<'a, 'db, S, O> {
    pub fn new(vfs: &'a Vfs<'db, S>, store: &'a O, agent: &'a str) -> Self {
        Tier {
            vfs,
            store,
            agent,
            policy: TierPolicy::default(),
        }
    }

    pub fn with_policy(mut self, policy: TierPolicy) -> Self {
        self.policy = policy;
        self
    }

    fn db(&self) -> &'db S {
        self.vfs.db
    }

    fn now(&self) -> i64 {
        self.vfs.now_ms
    }

    fn marker(&self, hash: &[u8]) -> String {
        marker_key(hash, self.agent)
    }
}

impl<S: Sql> Vfs<'_, S> {
    /// Queues the bucket copy of `hash` for collection: this workspace no
    /// longer relies on it (see [`Tier::collect_garbage`]).
    pub(crate) fn forget_in_tier(&self, hash: &[u8]) -> Result<()> {
        self.db.execute(
            "INSERT INTO tier_garbage (hash, since_ms) VALUES (?, ?) \
             ON CONFLICT (hash) DO UPDATE SET since_ms = excluded.since_ms",
            params![hash, self.now_ms],
        )?;
        Ok(())
    }

    /// When the tier next has work under `policy` (a chunk turning cold, a
    /// move to confirm, a bucket copy to collect), or `None`.
    pub fn tier_due(&self, policy: &TierPolicy) -> Result<Option<i64>> {
        let row = self.db.query_row(
            "SELECT MIN(at) FROM ( \
             SELECT MIN(used_ms) + ? AS at FROM chunks WHERE tier = 0 AND size >= ? \
             UNION ALL SELECT MIN(moved_ms) + ? FROM chunks WHERE tier = 1 \
             UNION ALL SELECT MIN(since_ms) + ? FROM tier_garbage)",
            params![
                policy.hot_ms,
                policy.min_bytes as i64,
                policy.grace_ms,
                policy.grace_ms
            ],
        )?;
        Ok(row.map(|row| row.opt_int(0)).transpose()?.flatten())
    }

    /// How many chunks are in each [`TierState`], and their bytes.
    pub fn tier_usage(&self) -> Result<TierUsage> {
        let rows = self.db.query(
            "SELECT tier, COUNT(*), COALESCE(SUM(size), 0) FROM chunks GROUP BY tier",
            params![],
        )?;
        let mut usage = TierUsage::default();
        for row in rows {
            let counted = (row.int(1)? as u64, row.int(2)? as u64);
            let slot = match TierState::from_code(row.int(0)?)? {
                TierState::Inline => &mut usage.inline,
                TierState::Moving => &mut usage.moving,
                TierState::Tiered => &mut usage.tiered,
            };
            *slot = counted;
        }
        usage.garbage = self
            .db
            .query_row("SELECT COUNT(*) FROM tier_garbage", params![])?
            .map_or(Ok(0), |row| row.int(0))? as u64;
        Ok(usage)
    }
}

/// Chunks (count, bytes) in each state, and bucket copies awaiting
/// collection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct TierUsage {
    pub inline: (u64, u64),
    pub moving: (u64, u64),
    pub tiered: (u64, u64),
    pub garbage: u64,
}
