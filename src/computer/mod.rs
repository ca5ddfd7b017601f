//! The computer backend: commands that need real Linux run in a container
//! holding a copy of the workspace.
//!
//! The workspace stays the source of truth. For each command the driver
//! ([`run`]) pushes what the container's copy lacks, runs the command while
//! passing its output on, pulls the content of what it changed and applies
//! every change in one transaction (conflicts kept side by side, see
//! `stead_vfs` sync), then acknowledges. The container may vanish at any
//! point: before the apply nothing in the workspace has changed, so a lost
//! command leaves it exactly as it was, and the next command finds a new
//! container instance and pushes it the whole workspace.
//!
//! Commands on one agent's computer run one at a time (the caller holds the
//! lock); the agent's other requests go on meanwhile, which is how a
//! conflict can arise at all.
//!
//! - [`link`]: HTTP to the agent's `Computer` Durable Object;
//! - [`host`]: that object, which owns the container and its secret;
//! - protocol types: `stead_sync`.

mod error;
pub mod host;
mod link;

use std::cell::Cell;
use std::collections::BTreeMap;

use base64::Engine;
use futures::StreamExt;
use serde::Serialize;
use serde_json::{json, Value};
use stead_sql::{params, Sql};
use stead_sync::{
    frame, Ack, ApplyReply, Change, ChunkRequest, ErrorCode, ExecEvent, ExecSpec, Exit,
    IgnoreRules, Push, Status, PROTOCOL,
};
use stead_vfs::{VPath, Vfs, VfsError};
use worker::Method;

pub use error::ComputerError;
pub use link::Link;

use crate::api::ApiError;

/// Chunk bytes per request, each way: bounded memory in the Durable Object.
const BATCH_BYTES: usize = 8 << 20;

/// Output kept per stream for the result (the sink sees all of it).
const MAX_OUTPUT: usize = 16 << 20;

/// Receives a command's output as it arrives.
pub trait OutputSink {
    fn stdout(&self, data: &[u8]);
    fn stderr(&self, data: &[u8]);
    /// The job the output belongs to, if the command runs as one (so that
    /// cancelling the job can stop the command).
    fn job(&self) -> Option<i64> {
        None
    }
}

/// A sink that keeps nothing (the result still carries the output).
pub struct Discard;

impl OutputSink for Discard {
    fn stdout(&self, _: &[u8]) {}
    fn stderr(&self, _: &[u8]) {}
}

/// A command for the computer.
pub struct Command {
    pub command: String,
    pub cwd: VPath,
    pub env: BTreeMap<String, String>,
    pub stdin: Vec<u8>,
    pub timeout_ms: u64,
}

/// Files and bytes moved one way.
#[derive(Debug, Default, Clone, Serialize)]
pub struct Transfer {
    /// Paths described (created, changed or deleted).
    pub files: u64,
    /// Content bytes (chunks) moved.
    pub bytes: u64,
    /// Bytes of path descriptions (JSON) moved.
    pub manifest_bytes: u64,
}

/// Runs `command` on the agent's computer; see the module docs.
pub async fn run<'db, S: Sql>(
    db: &'db S,
    vfs: impl Fn() -> Vfs<'db, S>,
    link: &Link,
    id: &str,
    cancelled: &Cell<bool>,
    command: Command,
    sink: &dyn OutputSink,
) -> Result<Value, ApiError> {
    let (mut sent, mut received) = (Transfer::default(), Transfer::default());
    let base = connect_and_push(db, &vfs, link, &mut sent).await?;

    let spec = ExecSpec {
        id: id.to_string(),
        command: command.command,
        cwd: command.cwd.to_string(),
        env: command.env,
        stdin: base64::engine::general_purpose::STANDARD.encode(&command.stdin),
        timeout_ms: command.timeout_ms,
    };
    let mut output = Output::default();
    if cancelled.get() {
        // Cancelled while the workspace was being pushed: never start it.
        let revision = vfs().revision()?;
        return Ok(output.into_result("cancelled", None, revision, [sent, received]));
    }
    let exit = match stream_exec(link, &spec, cancelled, sink, &mut output).await {
        Ok(exit) => exit,
        Err(reason) => {
            // The container (or the way to it) died mid-command. Nothing was
            // applied; forget the instance so the next command starts over,
            // and never replay this one.
            forget(db)?;
            let revision = vfs().revision()?;
            let mut result = output.into_result("lost", None, revision, [sent, received]);
            result["message"] = json!(format!(
                "the computer was lost during the command; the workspace is unchanged: {reason}"
            ));
            return Ok(result);
        }
    };

    received.files = exit.changes.len() as u64;
    received.manifest_bytes = serde_json::to_vec(&exit.changes).map_or(0, |v| v.len() as u64);
    let outcome = pull_and_apply(db, &vfs, link, id, base, &exit.changes, &mut received).await?;
    // Until acknowledged, the container keeps reporting these changes; a
    // failed acknowledgement only costs a harmless repeat next time.
    let _ = link
        .bytes(
            "ack",
            Method::Post,
            "/v1/sync/ack",
            Some((
                link::to_json(&Ack {
                    exec: id.to_string(),
                }),
                "application/json",
            )),
        )
        .await;

    let status = if exit.timed_out {
        "timed_out"
    } else if exit.cancelled {
        "cancelled"
    } else {
        "exited"
    };
    let code = exit.code.unwrap_or_else(|| 128 + exit.signal.unwrap_or(0));
    let mut result = output.into_result(status, Some(code), outcome.revision, [sent, received]);
    if let Some(signal) = exit.signal {
        result["signal"] = json!(signal);
    }
    result["changed"] = json!(outcome.applied);
    result["conflicts"] = json!(outcome.conflicts);
    if !outcome.rejected.is_empty() {
        result["rejected"] = json!(outcome.rejected);
    }
    if !exit.skipped.is_empty() {
        result["skipped"] = json!(exit.skipped);
    }
    Ok(result)
}

/// Finds which container instance answers and brings its copy in step. A
/// container that restarted between the two (its push is refused as stale)
/// is asked again once.
async fn connect_and_push<'db, S: Sql>(
    db: &'db S,
    vfs: &impl Fn() -> Vfs<'db, S>,
    link: &Link,
    sent: &mut Transfer,
) -> Result<i64, ApiError> {
    let mut attempts = 0;
    loop {
        let status: Status = link.json("status", Method::Get, "/v1/status", None).await?;
        if status.protocol != PROTOCOL {
            return Err(ComputerError::Protocol {
                found: status.protocol,
                expected: PROTOCOL,
            }
            .into());
        }
        match push(db, vfs, link, &status.instance, sent).await {
            Err(ApiError::Computer(ComputerError::Refused {
                code: ErrorCode::StaleInstance,
                ..
            })) if attempts == 0 => attempts += 1,
            other => return other,
        }
    }
}

/// Asks the computer to stop exec `id` (its whole process group); the
/// command then ends `cancelled` and its changes come back as usual.
pub async fn cancel(link: &Link, id: &str) -> Result<(), ComputerError> {
    link.bytes(
        "cancel",
        Method::Post,
        &format!("/v1/exec/{id}/cancel"),
        None,
    )
    .await
    .map(drop)
}

/// What the container's copy was last known to hold.
struct Synced {
    instance: String,
    acked: i64,
}

fn load(db: &impl Sql) -> Result<Option<Synced>, ApiError> {
    let row = db.query_row(
        "SELECT instance, acked FROM computer WHERE id = 1",
        params![],
    )?;
    row.map(|row| {
        Ok(Synced {
            instance: row.text(0)?.to_string(),
            acked: row.int(1)?,
        })
    })
    .transpose()
}

fn save(db: &impl Sql, instance: &str, acked: i64) -> Result<(), ApiError> {
    db.execute(
        "INSERT INTO computer (id, instance, acked) VALUES (1, ?, ?) \
         ON CONFLICT (id) DO UPDATE SET instance = excluded.instance, acked = excluded.acked",
        params![instance, acked],
    )?;
    Ok(())
}

fn forget(db: &impl Sql) -> Result<(), ApiError> {
    db.execute("DELETE FROM computer", params![])?;
    Ok(())
}

/// The workspace's ignore rules: `/.steadignore`, or the defaults.
fn ignore_rules<S: Sql>(vfs: &Vfs<'_, S>) -> Result<String, ApiError> {
    match vfs.read_file(&VPath::parse(stead_sync::ignore::IGNORE_FILE)?) {
        Ok(bytes) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
        Err(VfsError::NotFound { .. }) => Ok(stead_sync::ignore::DEFAULT_RULES.to_string()),
        Err(error) => Err(error.into()),
    }
}

/// Brings the container's copy in step with the workspace; returns the
/// revision it now holds.
async fn push<'db, S: Sql>(
    db: &'db S,
    vfs: &impl Fn() -> Vfs<'db, S>,
    link: &Link,
    instance: &str,
    sent: &mut Transfer,
) -> Result<i64, ApiError> {
    let view = vfs();
    let ignore = ignore_rules(&view)?;
    let rules = IgnoreRules::parse(&ignore);
    let base = view.revision()?;
    let known = load(db)?.filter(|synced| synced.instance == instance);
    let since = match &known {
        Some(synced) => view.sync_changes_since(synced.acked, &rules)?,
        None => None,
    };
    let (full, changes) = match since {
        Some(changes) => (false, changes),
        None => (true, view.sync_manifest(&rules)?),
    };
    if !full && changes.is_empty() {
        return Ok(base);
    }
    sent.files += changes.len() as u64;
    let body = link::to_json(&Push {
        instance: instance.to_string(),
        full,
        changes,
        ignore,
    });
    for _ in 0..2 {
        sent.manifest_bytes += body.len() as u64;
        let reply: ApplyReply = link
            .json("push", Method::Post, "/v1/sync/apply", Some(body.clone()))
            .await?;
        let needed = match reply {
            ApplyReply::Applied { .. } => {
                save(db, instance, base)?;
                return Ok(base);
            }
            ApplyReply::Need { chunks } => chunks,
        };
        let mut batch = Vec::new();
        for hash in needed {
            let data = vfs()
                .chunk_by_hash(&hash)?
                .ok_or_else(|| ComputerError::Malformed {
                    step: "push",
                    reason: format!("asked for chunk {hash}, which the workspace does not hold"),
                })?;
            sent.bytes += data.len() as u64;
            frame::encode(&mut batch, &data);
            if batch.len() >= BATCH_BYTES {
                send_chunks(link, std::mem::take(&mut batch)).await?;
            }
        }
        if !batch.is_empty() {
            send_chunks(link, batch).await?;
        }
    }
    Err(ComputerError::Malformed {
        step: "push",
        reason: "still missing content after it was sent".into(),
    }
    .into())
}

async fn send_chunks(link: &Link, frames: Vec<u8>) -> Result<(), ComputerError> {
    link.bytes(
        "push",
        Method::Post,
        "/v1/sync/chunks",
        Some((frames, "application/octet-stream")),
    )
    .await
    .map(drop)
}

/// Output collected for the result, up to [`MAX_OUTPUT`] per stream.
#[derive(Default)]
struct Output {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    truncated: bool,
}

impl Output {
    fn keep(buffer: &mut Vec<u8>, data: &[u8], truncated: &mut bool) {
        let room = MAX_OUTPUT.saturating_sub(buffer.len());
        *truncated |= data.len() > room;
        buffer.extend_from_slice(&data[..data.len().min(room)]);
    }

    /// The exec result: output, how the command ended (`exit_code` null
    /// when it never finished), the workspace revision and what was synced.
    fn into_result(
        self,
        status: &str,
        exit_code: Option<i32>,
        revision: i64,
        [sent, received]: [Transfer; 2],
    ) -> Value {
        let mut out = json!({
            "backend": "computer",
            "status": status,
            "exit_code": exit_code,
            "stdout": String::from_utf8_lossy(&self.stdout),
            "stderr": String::from_utf8_lossy(&self.stderr),
            "revision": revision,
            "sync": { "sent": sent, "received": received },
        });
        if self.truncated {
            out["truncated"] = json!(true);
        }
        out
    }
}

/// Runs the command, passing output on; `Err` (a reason) when the stream
/// broke before the exit event.
async fn stream_exec(
    link: &Link,
    spec: &ExecSpec,
    cancelled: &Cell<bool>,
    sink: &dyn OutputSink,
    output: &mut Output,
) -> Result<Exit, String> {
    let mut stream = link
        .stream("exec", "/v1/exec", link::to_json(spec))
        .await
        .map_err(|e| e.to_string())?;
    if cancelled.get() {
        // Cancelled while the request was on its way: the command runs now,
        // so it can be stopped (it reports `cancelled`).
        let _ = cancel(link, &spec.id).await;
    }
    let mut pending: Vec<u8> = Vec::new();
    let b64 = base64::engine::general_purpose::STANDARD;
    while let Some(piece) = stream.next().await {
        pending.extend_from_slice(&piece.map_err(|e| e.to_string())?);
        while let Some(end) = pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            let event: ExecEvent = serde_json::from_slice(&line)
                .map_err(|e| format!("bad event from the computer: {e}"))?;
            match event {
                ExecEvent::Stdout { data } => {
                    let data = b64.decode(data).map_err(|e| e.to_string())?;
                    sink.stdout(&data);
                    Output::keep(&mut output.stdout, &data, &mut output.truncated);
                }
                ExecEvent::Stderr { data } => {
                    let data = b64.decode(data).map_err(|e| e.to_string())?;
                    sink.stderr(&data);
                    Output::keep(&mut output.stderr, &data, &mut output.truncated);
                }
                ExecEvent::Exit(exit) => return Ok(exit),
                // The command ended but its changes could not be scanned:
                // they stay on the container's disk, unreported, so this
                // command's outcome is unknown, as when the stream breaks.
                ExecEvent::Error(error) => {
                    return Err(format!(
                        "the computer could not report the command's changes ({:?}): {}",
                        error.code, error.message
                    ))
                }
            }
        }
    }
    Err("the output stream ended before the command did".into())
}

/// Fetches the content the workspace lacks, then applies every change in
/// one transaction.
async fn pull_and_apply<'db, S: Sql>(
    db: &'db S,
    vfs: &impl Fn() -> Vfs<'db, S>,
    link: &Link,
    exec: &str,
    base: i64,
    changes: &[Change],
    received: &mut Transfer,
) -> Result<stead_vfs::SyncOutcome, ApiError> {
    let hashes: Vec<_> = stead_sync::chunk_hashes(changes).collect();
    let view = vfs();
    let missing = view.missing_chunks(&hashes)?;
    let staging = view.begin_staging()?;
    let staged = async {
        let mut idx = 0;
        for batch in missing.chunks(BATCH_BYTES / stead_sync::CHUNK_SIZE) {
            let request = ChunkRequest {
                exec: exec.to_string(),
                chunks: batch.to_vec(),
            };
            let body = link
                .bytes(
                    "pull",
                    Method::Post,
                    "/v1/chunks",
                    Some((link::to_json(&request), "application/json")),
                )
                .await?;
            let view = vfs();
            for (_, data) in frame::decode_all(&body).map_err(|e| ComputerError::Malformed {
                step: "pull",
                reason: e.to_string(),
            })? {
                received.bytes += data.len() as u64;
                view.stage_chunk(staging, idx, &data)?;
                idx += 1;
            }
        }
        // Synchronous from here: nothing else runs between reading the
        // revision and applying, so "unchanged since base" is exact.
        let view = vfs();
        let before = view.revision()?;
        let outcome = view.apply_sync(base, changes)?;
        Ok::<_, ApiError>((before, outcome))
    }
    .await;
    vfs().abort_upload(staging)?;
    let (before, outcome) = staged?;
    if let Some(synced) = load(db)? {
        // The container now holds `base` plus its own changes. If the
        // workspace changed nothing else meanwhile, that is exactly the new
        // revision; otherwise the next push sends everything since `base`
        // (what the container already holds costs no content).
        let acked = if before == base && outcome.conflicts.is_empty() {
            outcome.revision
        } else {
            base
        };
        save(db, &synced.instance, acked)?;
    }
    Ok(outcome)
}
