//! Push and pull of whole trees by content hash
//! (`POST /agents/{id}/transfer/{step}`), what `stead push` and `stead
//! pull` speak.
//!
//! The same terms as the computer's sync ([`stead_sync`]): a tree is a list
//! of [`Change`]s (path, entry, mtime) naming content by the hashes of its
//! 512 KiB chunks, which the workspace already stores, so only content the
//! other side lacks ever crosses:
//!
//! - `manifest {path}`: every entry below a directory, with its chunk
//!   hashes, and the revision it was read at.
//! - `missing {hashes}`: those of the hashes the workspace lacks.
//! - `chunks` (binary body of [`stead_sync::frame`]d chunks): stages them
//!   under a new staging id, counted against the quotas at once.
//! - `apply {base, changes, staging}`: applies the changes in one
//!   transaction (after an automatic checkpoint of the paths, so `undo`
//!   takes a push back), as [`stead_vfs::Vfs::apply_sync`] does for the
//!   computer: a path the workspace changed after `base` keeps its version
//!   and the pushed one goes beside it as a conflict. Then the staging ids
//!   are released. A change whose content is not all held fails the whole
//!   apply (`409 CONTENT_MISSING`): the client sends what `missing` names
//!   again, so a push broken off anywhere leaves nothing half-applied and
//!   the next one finishes it.
//! - `fetch {hashes}`: the chunks (base64), for a pull.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use stead_sql::Sql;
use stead_sync::{chunk_hashes, frame, Change, ChunkHash, IgnoreRules};
use stead_vfs::{UploadId, VPath, Vfs, VfsError};

use crate::decode::decode_value;
use crate::error::ApiError;

/// Largest body of one `chunks` request, framing included.
pub const MAX_CHUNKS_BODY: usize = 16 << 20;

/// Most hashes one `missing` request may name.
pub const MAX_HASHES: usize = 10_000;
/// Most chunks one `fetch` answers (about 16 MiB of base64).
pub const MAX_FETCH: usize = 24;

/// The steps of a transfer, one route each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Step {
    Manifest,
    Missing,
    Chunks,
    Apply,
    Fetch,
}

impl Step {
    /// The step named `name` in the URL.
    pub fn from_name(name: &str) -> Option<Step> {
        Some(match name {
            "manifest" => Step::Manifest,
            "missing" => Step::Missing,
            "chunks" => Step::Chunks,
            "apply" => Step::Apply,
            "fetch" => Step::Fetch,
            _ => return None,
        })
    }
}

/// `manifest`'s body.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ManifestReq {
    /// The directory whose tree is listed.
    path: String,
}

/// `missing`'s and `fetch`'s body.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct HashesReq {
    /// Chunk hashes, 64 hex digits each.
    hashes: Vec<String>,
}

/// `apply`'s body.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ApplyReq {
    /// The revision of the manifest the changes were computed against.
    base: i64,
    changes: Vec<Change>,
    /// The staging ids `chunks` answered.
    #[serde(default)]
    staging: Vec<i64>,
}

/// `POST .../transfer/manifest`.
pub fn manifest<S: Sql>(vfs: &Vfs<'_, S>, body: &Value) -> Result<Value, ApiError> {
    let req: ManifestReq = decode_value(body)?;
    let root = VPath::parse(&req.path)?;
    let revision = vfs.revision()?;
    let entries = vfs.sync_manifest_under(&root, &IgnoreRules::default())?;
    Ok(json!({ "revision": revision, "entries": entries }))
}

fn hashes(req: &HashesReq, most: usize) -> Result<Vec<ChunkHash>, ApiError> {
    if req.hashes.len() > most {
        return Err(ApiError::InvalidRequest(format!(
            "hashes must hold at most {most} hashes (got {}); send them in several requests",
            req.hashes.len()
        )));
    }
    req.hashes
        .iter()
        .map(|text| {
            ChunkHash::from_hex(text).ok_or_else(|| {
                ApiError::InvalidRequest(format!("{text:?} is not a chunk hash (64 hex digits)"))
            })
        })
        .collect()
}

/// `POST .../transfer/missing`.
pub fn missing<S: Sql>(vfs: &Vfs<'_, S>, body: &Value) -> Result<Value, ApiError> {
    let req: HashesReq = decode_value(body)?;
    let missing = vfs.missing_chunks(&hashes(&req, MAX_HASHES)?)?;
    Ok(json!({ "missing": missing }))
}

/// `POST .../transfer/chunks`: stages every framed chunk of `body`, all in
/// one transaction (one commit per request, not per chunk). A body that is
/// not whole frames, or a chunk whose bytes do not hash to its hash, is
/// refused before anything is staged; a quota refusal midway rolls the
/// whole request back, so nothing stays.
pub fn stage<S: Sql>(db: &S, vfs: &Vfs<'_, S>, body: &[u8]) -> Result<Value, ApiError> {
    let chunks = frame::decode_all(body)
        .map_err(|e| ApiError::InvalidRequest(format!("{e}: send the chunks' bytes again")))?;
    db.transaction(|| {
        let staging = vfs.begin_staging()?;
        for (idx, (_, data)) in chunks.iter().enumerate() {
            vfs.stage_chunk(staging, idx as i64, data)?;
        }
        Ok(json!({ "staging": staging.number(), "chunks": chunks.len() }))
    })
}

/// The decoded `apply` request, and the paths its checkpoint pins.
pub struct Apply {
    base: i64,
    changes: Vec<Change>,
    staging: Vec<UploadId>,
}

impl Apply {
    pub fn decode(body: &Value) -> Result<Apply, ApiError> {
        let req: ApplyReq = decode_value(body)?;
        Ok(Apply {
            base: req.base,
            changes: req.changes,
            staging: req.staging.into_iter().map(UploadId::from_number).collect(),
        })
    }

    /// The paths the apply touches, for its automatic checkpoint.
    pub fn paths(&self) -> Result<Vec<VPath>, ApiError> {
        self.changes
            .iter()
            .map(|c| VPath::parse(&c.path).map_err(ApiError::from))
            .collect()
    }

    /// Refuses an apply whose content is not all here, before anything
    /// (its checkpoint included) is done.
    pub fn check_content<S: Sql>(&self, vfs: &Vfs<'_, S>) -> Result<(), ApiError> {
        let wanted: Vec<ChunkHash> = chunk_hashes(&self.changes).collect();
        match vfs.missing_chunks(&wanted)?.len() {
            0 => Ok(()),
            chunks => Err(ApiError::ContentMissing { chunks }),
        }
    }

    /// Applies the changes in one transaction, then releases the staging.
    pub fn run<S: Sql>(self, vfs: &Vfs<'_, S>) -> Result<Value, VfsError> {
        let outcome = vfs.apply_sync(self.base, &self.changes);
        for staging in self.staging {
            vfs.abort_upload(staging)?;
        }
        let outcome = outcome?;
        Ok(serde_json::to_value(outcome).expect("an outcome serializes"))
    }
}

/// `POST .../transfer/fetch`: the chunks, in the order asked, base64 in
/// JSON (`{"chunks": [{"hash", "data"}]}`).
pub fn fetch<S: Sql>(vfs: &Vfs<'_, S>, body: &Value) -> Result<Value, ApiError> {
    use base64::Engine;
    let req: HashesReq = decode_value(body)?;
    let mut out = Vec::new();
    for hash in hashes(&req, MAX_FETCH)? {
        let data = vfs.chunk_by_hash(&hash)?.ok_or_else(|| {
            ApiError::InvalidRequest(format!(
                "no chunk {hash} here: ask the manifest again, the tree changed"
            ))
        })?;
        let data = base64::engine::general_purpose::STANDARD.encode(data);
        out.push(json!({ "hash": hash.to_string(), "data": data }));
    }
    Ok(json!({ "chunks": out }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use stead_sql::{migrate, SqliteDb, MIGRATIONS};

    fn db() -> SqliteDb {
        let db = SqliteDb::memory().unwrap();
        migrate(&db, MIGRATIONS).unwrap();
        db
    }

    fn file_change(path: &str, data: &[u8]) -> Value {
        let chunks: Vec<String> = stead_sync::hash_content(data)
            .iter()
            .map(ToString::to_string)
            .collect();
        json!({ "path": path, "entry": { "type": "file", "mode": 0o644, "size": data.len(), "chunks": chunks }, "mtime_ms": 5000 })
    }

    #[test]
    fn staged_chunks_apply_and_come_back_through_manifest_and_fetch() {
        let db = db();
        let vfs = Vfs::new(&db, 1_000);
        let data = vec![3u8; stead_sync::CHUNK_SIZE + 10];
        let hashes: Vec<String> = stead_sync::hash_content(&data)
            .iter()
            .map(ToString::to_string)
            .collect();
        let missing = missing(&vfs, &json!({ "hashes": hashes })).unwrap();
        assert_eq!(missing["missing"].as_array().unwrap().len(), 2);

        // An apply before the content is here changes nothing.
        let changes = json!([
            { "path": "/app", "entry": { "type": "dir", "mode": 0o755 } },
            file_change("/app/big.bin", &data),
        ]);
        let early = Apply::decode(&json!({ "base": 0, "changes": changes })).unwrap();
        assert!(matches!(
            early.check_content(&vfs),
            Err(ApiError::ContentMissing { chunks: 2 })
        ));

        let mut framed = Vec::new();
        for piece in data.chunks(stead_sync::CHUNK_SIZE) {
            frame::encode(&mut framed, piece);
        }
        let staged = stage(&db, &vfs, &framed).unwrap();
        let staging = staged["staging"].as_i64().unwrap();
        let apply =
            Apply::decode(&json!({ "base": 0, "changes": changes, "staging": [staging] })).unwrap();
        apply.check_content(&vfs).unwrap();
        let applied = apply.run(&vfs).unwrap();
        assert_eq!(applied["applied"], json!(["/app", "/app/big.bin"]));

        let listed = manifest(&vfs, &json!({ "path": "/app" })).unwrap();
        let entries = listed["entries"].as_array().unwrap();
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0]["entry"]["chunks"], json!(hashes));
        assert_eq!(entries[0]["mtime_ms"], 5000);
        let fetched = fetch(&vfs, &json!({ "hashes": hashes })).unwrap();
        use base64::Engine;
        let back: Vec<u8> = fetched["chunks"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|c| {
                base64::engine::general_purpose::STANDARD
                    .decode(c["data"].as_str().unwrap())
                    .unwrap()
            })
            .collect();
        assert_eq!(back, data);
    }

    #[test]
    fn a_chunk_whose_bytes_do_not_match_its_hash_stages_nothing() {
        let db = db();
        let vfs = Vfs::new(&db, 1_000);
        let mut framed = Vec::new();
        frame::encode(&mut framed, b"good");
        frame::encode(&mut framed, b"evil");
        // Corrupt the second chunk's bytes after its hash was written.
        let end = framed.len();
        framed[end - 1] = b'!';
        let refused = stage(&db, &vfs, &framed).unwrap_err();
        assert!(
            refused.to_string().contains("does not match its hash"),
            "{refused}"
        );
        let hash = stead_sync::hash_chunk(b"good").to_string();
        let missing = missing(&vfs, &json!({ "hashes": [hash] })).unwrap();
        assert_eq!(missing["missing"].as_array().unwrap().len(), 1);
    }
}
