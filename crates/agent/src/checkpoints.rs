//! Time travel as the API shows it: checkpoints, diff, restore, undo, the
//! automatic checkpoints taken before every operation that changes files,
//! and fork into a new agent.
//!
//! The storage is `stead_vfs`'s (a checkpoint pins metadata, never
//! content; see `crates/vfs/CHECKPOINTS.md`). Here: request decoding, the
//! workspace's checkpoint settings, which operation is checkpointed how,
//! and the fork's two halves, which run in two agents' Durable Objects:
//! the source streams a checkpoint page by page to the target, which
//! stages it and becomes usable only when the last page is in. A target
//! that stops hearing from its source for [`FORK_STALL_MS`] throws the
//! staged copy away (its alarm does), so a fork that breaks off leaves
//! nothing behind; the source's own workspace is only read.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use stead_sql::{params, Sql};
use stead_vfs::{
    Before, Checkpoint, CheckpointId, DiffOptions, ExportCursor, ImportProgress, NewCheckpoint,
    Point, Retention, TextOptions, VPath, Vfs, VfsError,
};

use crate::checkpoint_git;
use crate::decode::{decode_value, within, Cursor};
use crate::error::ApiError;
use crate::settings::CheckpointSettings;

/// How long a fork's target waits for the next page before it gives up.
pub const FORK_STALL_MS: i64 = 30_000;

/// Bytes of fork stream per page (a page holds whole frames, so it may be a
/// frame over).
pub const FORK_PAGE_BYTES: usize = 4 << 20;

/// Largest page a target takes.
pub const MAX_FORK_PAGE: usize = FORK_PAGE_BYTES + stead_vfs::MAX_FORK_FRAME + 64;

/// Most checkpoints one list page holds.
pub(crate) const MAX_LIST: usize = 200;

/// Most diff entries one page holds.
pub(crate) const MAX_DIFF_PAGE: usize = 10_000;
/// The largest file a diff reads for its text diff: both sides are read
/// whole into memory, and a patch is sent only up to 256 KiB anyway.
pub(crate) const MAX_TEXT_FILE_BYTES: u64 = 4 << 20;

const DIFF_CURSOR: &str = "diff1";

/// A checkpoint named by id (digits) or name.
fn find<S: Sql>(vfs: &Vfs<'_, S>, key: &str) -> Result<Checkpoint, ApiError> {
    Ok(match key.parse::<i64>() {
        Ok(id) => vfs.checkpoint(CheckpointId(id))?,
        Err(_) => vfs.checkpoint_named(key)?,
    })
}

/// A checkpoint as a request names it: its id, or its name.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
enum CheckpointRef {
    Id(i64),
    Name(String),
}

impl CheckpointRef {
    fn resolve<S: Sql>(&self, vfs: &Vfs<'_, S>) -> Result<Checkpoint, ApiError> {
        match self {
            CheckpointRef::Id(id) => Ok(vfs.checkpoint(CheckpointId(*id))?),
            CheckpointRef::Name(name) => find(vfs, name),
        }
    }
}

/// A point of a diff as a request names it: a checkpoint id (a number),
/// `"now"`, `"rev:<N>"`, or a checkpoint's name.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
enum PointRef {
    Id(i64),
    Text(String),
}

impl PointRef {
    fn resolve<S: Sql>(&self, vfs: &Vfs<'_, S>) -> Result<Point, ApiError> {
        Ok(match self {
            PointRef::Id(id) => Point::Checkpoint(CheckpointId(*id)),
            PointRef::Text(text) if text == "now" => Point::Now,
            PointRef::Text(text) => match text.strip_prefix("rev:") {
                Some(revision) => Point::Revision(revision.parse().map_err(|_| {
                    ApiError::InvalidRequest(format!("{text:?}: a revision is rev:<number>"))
                })?),
                None => Point::Checkpoint(find(vfs, text)?.id),
            },
        })
    }
}

/// `POST /checkpoints`'s body.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateReq {
    /// A name to find the checkpoint by later (unique in the workspace).
    name: Option<String>,
    /// A note saying what the checkpoint is for.
    note: Option<String>,
}

/// `POST /checkpoints`.
pub fn create<S: Sql>(vfs: &Vfs<'_, S>, actor: &str, body: &Value) -> Result<Value, ApiError> {
    let req: CreateReq = decode_value(body)?;
    let checkpoint = vfs.create_checkpoint(NewCheckpoint {
        actor,
        name: req.name.as_deref(),
        note: req.note.as_deref(),
    })?;
    Ok(json!({ "checkpoint": with_git(vfs, &checkpoint) }))
}

/// `GET /checkpoints?before=<id>&limit=<n>`.
pub fn list<S: Sql>(vfs: &Vfs<'_, S>, query: &[(String, String)]) -> Result<Value, ApiError> {
    let (mut before, mut limit) = (None, 50);
    for (key, value) in query {
        let number: i64 = value
            .parse()
            .map_err(|_| ApiError::InvalidRequest(format!("{key}={value:?} is not a number")))?;
        match key.as_str() {
            "before" => before = Some(CheckpointId(number)),
            "limit" => limit = within("limit", number, 1, MAX_LIST as i64)? as usize,
            other => {
                return Err(ApiError::InvalidRequest(format!(
                    "unknown query parameter {other:?}"
                )))
            }
        }
    }
    let checkpoints = vfs.checkpoints(before, limit)?;
    let next = (checkpoints.len() == limit)
        .then(|| checkpoints.last().map(|c| c.id))
        .flatten();
    let shown: Vec<Value> = checkpoints.iter().map(|c| with_git(vfs, c)).collect();
    Ok(json!({ "checkpoints": shown, "next_before": next }))
}

/// `GET /checkpoints/{id|name}`, with the workspace's usage beside it.
pub fn show<S: Sql>(vfs: &Vfs<'_, S>, key: &str) -> Result<Value, ApiError> {
    Ok(json!({ "checkpoint": with_git(vfs, &find(vfs, key)?) }))
}

/// A checkpoint as the API shows it: with the commit each repository it
/// pinned was at (`crate::checkpoint_git`).
fn with_git<S: Sql>(vfs: &Vfs<'_, S>, checkpoint: &Checkpoint) -> Value {
    let mut value = json!(checkpoint);
    checkpoint_git::annotate(vfs, &mut value);
    value
}

/// `DELETE /checkpoints/{id|name}`.
pub fn delete<S: Sql>(vfs: &Vfs<'_, S>, key: &str) -> Result<Value, ApiError> {
    let checkpoint = find(vfs, key)?;
    vfs.delete_checkpoint(checkpoint.id)?;
    Ok(json!({ "deleted": checkpoint.id }))
}

/// `POST /diff`'s body.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct DiffReq {
    /// Where to compare from: a checkpoint's id or name, `"now"`, or
    /// `"rev:<N>"` (a workspace revision).
    from: PointRef,
    /// Where to compare to, named as `from` is (default `"now"`).
    #[serde(default = "now")]
    to: PointRef,
    /// Compare only these paths (and their subtrees).
    #[serde(default)]
    paths: Vec<String>,
    /// Include unified text diffs of changed text files.
    #[serde(default)]
    text: bool,
    /// A file larger than this gets no text diff (default 1 MiB, at most
    /// 4 MiB).
    #[schemars(range(min = 1, max = MAX_TEXT_FILE_BYTES))]
    max_text_file_bytes: Option<u64>,
    /// The `next_cursor` of the previous page.
    cursor: Option<String>,
    /// Entries a page holds at most (default 1000).
    #[schemars(range(min = 1, max = MAX_DIFF_PAGE))]
    limit: Option<usize>,
    /// Merge the two trees whole instead of reading the change log (same
    /// answer, slower).
    #[serde(default)]
    full_scan: bool,
}

fn now() -> PointRef {
    PointRef::Text("now".into())
}

/// `POST /diff`.
pub fn diff<S: Sql>(vfs: &Vfs<'_, S>, body: &Value) -> Result<Value, ApiError> {
    let req: DiffReq = decode_value(body)?;
    let within_paths = req
        .paths
        .iter()
        .map(|p| VPath::parse(p))
        .collect::<Result<Vec<_>, _>>()?;
    let max_file_bytes = match req.max_text_file_bytes {
        Some(bytes) => within("max_text_file_bytes", bytes, 1, MAX_TEXT_FILE_BYTES)?,
        None => TextOptions::default().max_file_bytes,
    };
    let text = req.text.then(|| TextOptions {
        max_file_bytes,
        ..TextOptions::default()
    });
    let options = DiffOptions {
        within: within_paths,
        after: req
            .cursor
            .as_deref()
            .map(|c| Cursor::decode(DIFF_CURSOR, c))
            .transpose()?,
        limit: within("limit", req.limit.unwrap_or(1000), 1, MAX_DIFF_PAGE)?,
        text,
        full_scan: req.full_scan,
    };
    let diff = vfs.diff(req.from.resolve(vfs)?, req.to.resolve(vfs)?, &options)?;
    let next = diff
        .next_after
        .as_deref()
        .map(|after| Cursor::encode(DIFF_CURSOR, after));
    let mut answer = serde_json::to_value(&diff).map_err(|e| ApiError::Internal(e.to_string()))?;
    if let Some(object) = answer.as_object_mut() {
        object.remove("next_after");
        object.insert("next_cursor".into(), json!(next));
    }
    for (side, point) in [("from", diff.from), ("to", diff.to)] {
        if let Some(object) = answer[side].as_object_mut() {
            object.insert(
                "git".into(),
                checkpoint_git::at_point(vfs, point.checkpoint),
            );
        }
    }
    Ok(answer)
}

/// `POST /restore`'s body.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RestoreReq {
    /// The checkpoint to restore: its id or its name.
    checkpoint: CheckpointRef,
    /// Restore only these paths (and their subtrees); all when absent.
    paths: Option<Vec<String>>,
}

/// What a restore asks for, decoded.
pub struct RestoreRequest {
    pub checkpoint: CheckpointId,
    pub paths: Option<Vec<VPath>>,
}

/// Decodes `POST /restore`.
pub fn restore_request<S: Sql>(vfs: &Vfs<'_, S>, body: &Value) -> Result<RestoreRequest, ApiError> {
    let req: RestoreReq = decode_value(body)?;
    let checkpoint = req.checkpoint.resolve(vfs)?.id;
    let paths = req
        .paths
        .map(|paths| paths.iter().map(|p| VPath::parse(p)).collect())
        .transpose()?;
    Ok(RestoreRequest { checkpoint, paths })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ForkReq {
    /// The new agent.
    to: String,
    /// The checkpoint to fork (default: the workspace as it is now).
    checkpoint: Option<CheckpointRef>,
}

/// What a fork asks for, decoded.
pub struct ForkRequest {
    pub to: String,
    pub checkpoint: Option<CheckpointId>,
}

/// Decodes `POST /fork`.
pub fn fork_request<S: Sql>(
    vfs: &Vfs<'_, S>,
    agent: &str,
    body: &Value,
) -> Result<ForkRequest, ApiError> {
    let req: ForkReq = decode_value(body)?;
    if !crate::route::valid_agent_id(&req.to) {
        return Err(ApiError::InvalidAgentId { id: req.to });
    }
    if req.to == agent {
        return Err(ApiError::InvalidRequest(
            "an agent cannot fork into itself".into(),
        ));
    }
    let checkpoint = req
        .checkpoint
        .map(|c| c.resolve(vfs).map(|c| c.id))
        .transpose()?;
    Ok(ForkRequest {
        to: req.to,
        checkpoint,
    })
}

/// The paths a file tool's request names, which its automatic checkpoint
/// pins (both ends of a move or copy; every file a patch touches).
pub fn tool_paths(value: &Value) -> Vec<VPath> {
    if let Some(patch) = value.get("patch").and_then(Value::as_str) {
        let base = value.get("base").and_then(Value::as_str).unwrap_or("/");
        let Ok(base) = VPath::parse(base) else {
            return Vec::new();
        };
        let Ok(parsed) = stead_patch::parse(patch) else {
            return Vec::new();
        };
        return parsed
            .files
            .iter()
            .flat_map(|file| {
                let moved = match file {
                    stead_patch::FilePatch::Update { move_to, .. } => move_to.as_deref(),
                    _ => None,
                };
                std::iter::once(file.path()).chain(moved)
            })
            .filter_map(|path| VPath::parse_from(path, &base).ok())
            .collect();
    }
    ["path", "from", "to"]
        .iter()
        .filter_map(|key| value.get(*key)?.as_str())
        .filter_map(|path| VPath::parse(path).ok())
        .collect()
}

/// Where [`around`] learns whether the workspace takes automatic
/// checkpoints and how many it keeps: the agent, which caches its
/// settings. (A trait, so that this module needs nothing of the agent.)
pub trait AutoCheckpoints {
    /// The workspace's checkpoint settings.
    fn checkpoint_settings(&self) -> Result<CheckpointSettings, ApiError>;
}

/// Runs `body` between the automatic checkpoint taken before `operation`
/// (if the workspace takes them) and its settling: the checkpoint is kept,
/// and the retention policy applied, when `body` succeeds, and dropped
/// when it fails (if it was taken for this operation), so a failed call
/// changes nothing, checkpoints included. `body` is given the checkpoint's
/// id, to answer with.
pub fn around<S: Sql, T, E: From<VfsError>>(
    agent: &impl AutoCheckpoints,
    vfs: &Vfs<'_, S>,
    operation: Before<'_>,
    body: impl FnOnce(Option<i64>) -> Result<T, E>,
) -> Result<T, E> {
    let Some(taken) = before(agent, vfs, operation)? else {
        return body(None);
    };
    let outcome = body(Some(taken.id.0));
    match &outcome {
        // Retention applies as a checkpoint is added (see
        // `stead_vfs::Retention`): a reused one added nothing.
        Ok(_) if taken.fresh => {
            vfs.prune_checkpoints(&taken.retention)?;
        }
        Ok(_) => {}
        Err(_) if taken.fresh => {
            vfs.delete_checkpoint(taken.id)?;
        }
        Err(_) => {}
    }
    outcome
}

/// An automatic checkpoint taken before an operation, not yet settled.
struct Taken {
    id: CheckpointId,
    /// Taken for this operation, not an existing one reused.
    fresh: bool,
    retention: Retention,
}

/// Keeps every automatic checkpoint: the policy applies once the operation
/// has succeeded.
const KEEP_ALL: Retention = Retention {
    keep_last: u32::MAX,
    keep_within_ms: i64::MAX,
    max_automatic: u32::MAX,
};

/// Takes the automatic checkpoint before `operation`, if the workspace
/// takes them.
fn before<S: Sql>(
    agent: &impl AutoCheckpoints,
    vfs: &Vfs<'_, S>,
    operation: Before<'_>,
) -> Result<Option<Taken>, VfsError> {
    let settings = match agent.checkpoint_settings() {
        Ok(settings) => settings,
        Err(ApiError::Fs(error)) => return Err(error),
        Err(other) => return Err(VfsError::Corrupt(other.to_string())),
    };
    if !settings.automatic {
        return Ok(None);
    }
    // A note is bounded; a long command is cut at a character boundary.
    let note = operation.note.map(|note| {
        let mut end = note.len().min(stead_vfs::MAX_CHECKPOINT_NOTE);
        while !note.is_char_boundary(end) {
            end -= 1;
        }
        &note[..end]
    });
    let taken = vfs.take_auto_checkpoint(Before { note, ..operation }, &KEEP_ALL)?;
    Ok(Some(Taken {
        id: taken.id,
        fresh: !taken.reused,
        retention: settings.retention,
    }))
}

/// A fork target's record of when its last page arrived.
pub fn note_import_page<S: Sql>(db: &S, now_ms: i64) -> Result<(), ApiError> {
    db.execute(
        "INSERT INTO settings (key, value) VALUES ('fork_import_ms', ?) \
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        params![now_ms.to_string().as_str()],
    )?;
    Ok(())
}

/// When a fork target gives up on its import, if one is in progress.
pub fn import_deadline<S: Sql>(db: &S, vfs: &Vfs<'_, S>) -> Result<Option<i64>, ApiError> {
    if vfs.import_status()?.is_none() {
        return Ok(None);
    }
    let row = db.query_row(
        "SELECT value FROM settings WHERE key = 'fork_import_ms'",
        params![],
    )?;
    let last = match row {
        Some(row) => row.text(0)?.parse::<i64>().unwrap_or(0),
        None => 0,
    };
    Ok(Some(last + FORK_STALL_MS))
}

/// The answer of a finished import page, or where the import stands.
pub fn progress_json(progress: &ImportProgress) -> Value {
    serde_json::to_value(progress).unwrap_or(Value::Null)
}

/// Where a source resumes an import the target already staged part of:
/// its answer to a status probe, if any.
pub fn resume_point(answer: &Value) -> Option<ExportCursor> {
    let token = answer.get("import")?.get("resume")?.as_str()?;
    ExportCursor::from_token(token).ok()
}
