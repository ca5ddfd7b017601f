//! The snapshot in the agent's SQLite (`migrations/0019_environment.sql`):
//! its record, its manifest and its content, kept apart from the
//! workspace's tables so that nothing of it is a workspace file, a change,
//! a checkpoint's or a quota's.
//!
//! A save stages content first ([`put_chunk`]) and replaces the manifest in
//! one transaction ([`commit`]), which then drops the content no entry
//! names any more: until that commit the snapshot kept before is whole, so
//! a save that fails midway leaves it as it was.

use serde::{Deserialize, Serialize};
use stead_sql::{params, Sql};

use super::setup::Fingerprint;
use super::EnvError;
use stead_sync::environment::{EnvEntry, EnvKind};
use stead_sync::{hash_chunk, ChunkHash};

/// Where the environment is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EnvState {
    /// A snapshot is kept and is restored on the next fresh computer.
    Ready,
    /// A save is under way.
    Building,
    /// The last save failed: [`Record::log`] says why; no snapshot is kept.
    Failed,
}

impl EnvState {
    fn as_str(self) -> &'static str {
        match self {
            EnvState::Ready => "ready",
            EnvState::Building => "building",
            EnvState::Failed => "failed",
        }
    }

    fn parse(text: &str) -> Result<EnvState, EnvError> {
        match text {
            "ready" => Ok(EnvState::Ready),
            "building" => Ok(EnvState::Building),
            "failed" => Ok(EnvState::Failed),
            other => Err(EnvError::Decode(format!("environment state {other:?}"))),
        }
    }
}

/// What a snapshot was built from: why and from which computer it was
/// saved, and the setup script's fingerprint (see [`super::setup`]) the
/// computer was set up for (`None`: there was no setup script).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuiltFrom {
    pub reason: SaveReason,
    /// The computer instance it was packed on.
    pub instance: String,
    pub setup: Option<Fingerprint>,
}

/// Why a snapshot was saved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SaveReason {
    /// The computer was released (stopped, or idle).
    Release,
    /// Asked for (`POST /agents/{id}/computer/environment`).
    Request,
    /// The setup script just built it.
    Setup,
}

/// The computer instance last given its environment, and the fingerprint
/// it was given it for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    pub instance: String,
    pub from: Option<Fingerprint>,
}

/// Which computer was last given its environment, if any.
pub fn prepared(db: &impl Sql) -> Result<Option<Prepared>, EnvError> {
    let Some(row) = db.query_row(
        "SELECT instance, setup FROM environment_prepared",
        params![],
    )?
    else {
        return Ok(None);
    };
    Ok(Some(Prepared {
        instance: row.text(0)?.to_string(),
        from: decode(row.opt_text(1)?)?,
    }))
}

/// A JSON column's value (`None` for NULL).
fn decode<T: serde::de::DeserializeOwned>(text: Option<&str>) -> Result<Option<T>, EnvError> {
    text.map(serde_json::from_str)
        .transpose()
        .map_err(|e| EnvError::Decode(e.to_string()))
}

/// Notes that computer `instance` was given its environment for `from`.
pub fn set_prepared(
    db: &impl Sql,
    instance: &str,
    from: Option<&Fingerprint>,
) -> Result<(), EnvError> {
    let from = from.map(|f| serde_json::to_string(f).expect("serializes"));
    db.execute(
        "INSERT INTO environment_prepared (one, instance, setup) VALUES (1, ?, ?) \
         ON CONFLICT (one) DO UPDATE SET instance = excluded.instance, setup = excluded.setup",
        params![instance, from.as_deref()],
    )?;
    Ok(())
}

/// The environment's record, as `GET /agents/{id}/computer` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub state: EnvState,
    pub built_from: Option<BuiltFrom>,
    /// When the snapshot was saved (ms since the epoch).
    pub saved_ms: Option<i64>,
    /// Content bytes and entries of the snapshot.
    pub bytes: u64,
    pub files: u64,
    /// Why the last save failed.
    pub log: Option<String>,
    /// The last save or restore that did not happen, and why (the
    /// computer then went on without the environment).
    pub warning: Option<String>,
}

/// The record, if any environment was ever saved or tried.
pub fn record(db: &impl Sql) -> Result<Option<Record>, EnvError> {
    let Some(row) = db.query_row(
        "SELECT state, built_from, saved_ms, bytes, files, log, warning FROM environment",
        params![],
    )?
    else {
        return Ok(None);
    };
    Ok(Some(Record {
        state: EnvState::parse(row.text(0)?)?,
        built_from: decode(row.opt_text(1)?)?,
        saved_ms: row.opt_int(2)?,
        bytes: row.int(3)? as u64,
        files: row.int(4)? as u64,
        log: row.opt_text(5)?.map(str::to_string),
        warning: row.opt_text(6)?.map(str::to_string),
    }))
}

/// Marks the environment `state` (keeping the snapshot's description), with
/// `log` for a failure.
pub fn mark(db: &impl Sql, state: EnvState, log: Option<&str>) -> Result<(), EnvError> {
    db.execute(
        "INSERT INTO environment (one, state, log) VALUES (1, ?, ?) \
         ON CONFLICT (one) DO UPDATE SET state = excluded.state, log = excluded.log",
        params![state.as_str(), log],
    )?;
    Ok(())
}

/// Notes a save or restore that did not happen (`None` clears it).
pub fn warn(db: &impl Sql, warning: Option<&str>) -> Result<(), EnvError> {
    db.execute(
        "INSERT INTO environment (one, state, warning) VALUES (1, 'failed', ?) \
         ON CONFLICT (one) DO UPDATE SET warning = excluded.warning",
        params![warning],
    )?;
    Ok(())
}

/// Those of `hashes` the snapshot store lacks, sorted and deduplicated.
pub fn missing(db: &impl Sql, hashes: &[ChunkHash]) -> Result<Vec<ChunkHash>, EnvError> {
    let mut wanted = hashes.to_vec();
    wanted.sort();
    wanted.dedup();
    let mut out = Vec::new();
    for hash in wanted {
        let hex = hash.to_string();
        if db
            .query_row(
                "SELECT 1 FROM environment_chunks WHERE hash = ?",
                params![hex.as_str()],
            )?
            .is_none()
        {
            out.push(hash);
        }
    }
    Ok(out)
}

/// Stores a chunk the computer sent, after checking it is the one `hash`
/// names (a damaged one is refused: `false`).
pub fn put_chunk(db: &impl Sql, hash: &ChunkHash, data: &[u8]) -> Result<bool, EnvError> {
    if hash_chunk(data) != *hash {
        return Ok(false);
    }
    db.execute(
        "INSERT INTO environment_chunks (hash, size, data) VALUES (?, ?, ?) \
         ON CONFLICT (hash) DO NOTHING",
        params![hash.to_string().as_str(), data.len() as i64, data],
    )?;
    Ok(true)
}

/// The bytes of chunk `hash`, checked: `None` if it is missing or damaged.
pub fn chunk(db: &impl Sql, hash: &ChunkHash) -> Result<Option<Vec<u8>>, EnvError> {
    let Some(mut row) = db.query_row(
        "SELECT data FROM environment_chunks WHERE hash = ?",
        params![hash.to_string().as_str()],
    )?
    else {
        return Ok(None);
    };
    let data = row.take_blob(0)?;
    Ok((hash_chunk(&data) == *hash).then_some(data))
}

/// Makes `entries` the snapshot, in one transaction, and drops the content
/// nothing names any more.
pub fn commit(
    db: &impl Sql,
    entries: &[EnvEntry],
    bytes: u64,
    built_from: &BuiltFrom,
    now_ms: i64,
) -> Result<(), EnvError> {
    let from = serde_json::to_string(built_from).expect("serializes");
    db.transaction(|| {
        db.execute("DELETE FROM environment_entries", params![])?;
        for (seq, entry) in entries.iter().enumerate() {
            let kind = serde_json::to_string(&entry.kind).expect("serializes");
            db.execute(
                "INSERT INTO environment_entries (seq, path, entry) VALUES (?, ?, ?)",
                params![seq as i64, entry.path.as_str(), kind.as_str()],
            )?;
        }
        db.execute(
            "INSERT INTO environment (one, state, built_from, saved_ms, bytes, files, log, warning) \
             VALUES (1, 'ready', ?, ?, ?, ?, NULL, NULL) \
             ON CONFLICT (one) DO UPDATE SET state = 'ready', built_from = excluded.built_from, \
             saved_ms = excluded.saved_ms, bytes = excluded.bytes, files = excluded.files, \
             log = NULL, warning = NULL",
            params![from.as_str(), now_ms, bytes as i64, entries.len() as i64],
        )?;
        collect(db)
    })
}

/// The snapshot's manifest, in order.
pub fn entries(db: &impl Sql) -> Result<Vec<EnvEntry>, EnvError> {
    db.query(
        "SELECT path, entry FROM environment_entries ORDER BY seq",
        params![],
    )?
    .iter()
    .map(|row| {
        let kind: EnvKind =
            serde_json::from_str(row.text(1)?).map_err(|e| EnvError::Decode(e.to_string()))?;
        Ok(EnvEntry {
            path: row.text(0)?.to_string(),
            kind,
        })
    })
    .collect()
}

/// Drops the snapshot and its content; the record says it is gone.
pub fn drop_all(db: &impl Sql) -> Result<(), EnvError> {
    db.transaction(|| {
        db.execute("DELETE FROM environment_entries", params![])?;
        db.execute("DELETE FROM environment", params![])?;
        collect(db)
    })
}

/// Deletes the content no manifest entry names (what a failed save
/// staged, what the previous snapshot alone held).
fn collect(db: &impl Sql) -> Result<(), EnvError> {
    db.execute(
        "DELETE FROM environment_chunks WHERE hash NOT IN \
         (SELECT j.value FROM environment_entries e, json_each(e.entry, '$.chunks') j)",
        params![],
    )?;
    Ok(())
}

/// Content bytes the snapshot store holds (each chunk once).
pub fn stored_bytes(db: &impl Sql) -> Result<u64, EnvError> {
    Ok(db
        .query_row(
            "SELECT COALESCE(SUM(size), 0) FROM environment_chunks",
            params![],
        )?
        .map(|row| row.int(0))
        .transpose()?
        .unwrap_or(0) as u64)
}

/// When the running computer's environment is next to be saved before its
/// idle release, if at all.
pub fn save_due(db: &impl Sql) -> Result<Option<i64>, EnvError> {
    Ok(db
        .query_row("SELECT at FROM environment_save_due", params![])?
        .map(|row| row.int(0))
        .transpose()?)
}

/// Sets (or, with `None`, clears) [`save_due`].
pub fn set_save_due(db: &impl Sql, at: Option<i64>) -> Result<(), EnvError> {
    match at {
        Some(at) => db.execute(
            "INSERT INTO environment_save_due (one, at) VALUES (1, ?) \
             ON CONFLICT (one) DO UPDATE SET at = excluded.at",
            params![at],
        )?,
        None => db.execute("DELETE FROM environment_save_due", params![])?,
    }
    Ok(())
}
