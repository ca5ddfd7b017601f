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
//! - [`link`]: the protocol's calls and error rules over the host's
//!   [`Transport`] (on Workers: HTTP to the agent's `Computer` Durable
//!   Object, which owns the container and its secret);
//! - protocol types: `stead_sync`.

pub mod error;
pub mod link;

use std::cell::Cell;
use std::collections::BTreeMap;

use base64::Engine;
use futures::StreamExt;
use stead_sql::{params, Sql};
use stead_sync::host::ComputerState;
use stead_sync::{
    frame, Ack, ApplyReply, Change, ChunkRequest, ErrorCode, ExecEvent, ExecSpec, Exit,
    IgnoreRules, Push, Status, PROTOCOL,
};
use stead_vfs::{VPath, Vfs, VfsError};

pub use error::ComputerError;
pub use link::Link;

use crate::host::{Method, Transport};
use crate::outcome::{
    Backend, Captured, ComputerReport, ExecOutcome, ExecStatus, OutputEncoding, Transfer,
};

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

/// An exec on the computer, as the driver runs it.
pub struct Exec<'a> {
    /// The exec id: the container runs each id at most once.
    pub id: &'a str,
    pub command: Command,
    pub encoding: OutputEncoding,
    /// Set when the exec's job is cancelled, at any stage.
    pub cancelled: &'a Cell<bool>,
    /// Takes the automatic checkpoint just before the command's changes are
    /// applied (only when there are some); returns its id.
    pub before_apply: &'a dyn Fn() -> Result<Option<i64>, VfsError>,
}

/// Runs an exec on the agent's computer; see the module docs. `vfs` gives a
/// view of the workspace at the current time (the run spans many awaits).
pub async fn run<'db, S: Sql, T: Transport>(
    db: &'db S,
    vfs: impl Fn() -> Vfs<'db, S>,
    transport: &T,
    exec: Exec<'_>,
    sink: &dyn OutputSink,
) -> Result<ExecOutcome, ComputerError> {
    let link = Link::new(transport);
    let mut report = ComputerReport::default();
    let base = connect_and_push(db, &vfs, &link, &mut report.sync.sent).await?;

    let spec = ExecSpec {
        id: exec.id.to_string(),
        command: exec.command.command,
        cwd: exec.command.cwd.to_string(),
        env: exec.command.env,
        stdin: base64::engine::general_purpose::STANDARD.encode(&exec.command.stdin),
        timeout_ms: exec.command.timeout_ms,
    };
    let mut output = Output::new(exec.encoding);
    if exec.cancelled.get() {
        // Cancelled while the workspace was being pushed: never start it.
        let revision = vfs().revision()?;
        return Ok(output.into_outcome(ExecStatus::Cancelled, None, None, revision, report));
    }
    let exit = match stream_exec(&link, &spec, exec.cancelled, sink, &mut output).await {
        Ok(exit) => exit,
        Err(broken) => {
            // Nothing was applied, and the command is never replayed. A
            // container that died (or the way to it) is forgotten, so the
            // next command starts over with the whole workspace; one that
            // is alive but could not report keeps its copy, and its next
            // scan reports what this command changed.
            if broken.computer_lost {
                forget(db)?;
            }
            let revision = vfs().revision()?;
            let mut outcome = output.into_outcome(ExecStatus::Lost, None, None, revision, report);
            outcome.message = Some(format!(
                "the command's outcome is unknown; the workspace is unchanged: {}",
                broken.reason
            ));
            return Ok(outcome);
        }
    };

    let received = &mut report.sync.received;
    received.files = exit.changes.len() as u64;
    received.manifest_bytes = serde_json::to_vec(&exit.changes).map_or(0, |v| v.len() as u64);
    let applied = pull_and_apply(
        db,
        &vfs,
        &link,
        (exec.id, exec.before_apply),
        base,
        &exit.changes,
        received,
    )
    .await?;
    // Until acknowledged, the container keeps reporting these changes; a
    // failed acknowledgement only costs a harmless repeat next time.
    let ack = Ack {
        exec: exec.id.to_string(),
    };
    let _ = link
        .bytes("ack", Method::Post, "/v1/sync/ack", Some(link::json(&ack)))
        .await;

    let status = if exit.timed_out {
        ExecStatus::TimedOut
    } else if exit.cancelled {
        ExecStatus::Cancelled
    } else if exit.shutdown {
        ExecStatus::Stopped
    } else {
        ExecStatus::Exited
    };
    let code = exit.code.unwrap_or_else(|| 128 + exit.signal.unwrap_or(0));
    let (applied, checkpoint) = applied;
    report.changed = applied.applied;
    report.conflicts = applied.conflicts;
    report.rejected = applied.rejected;
    report.skipped = exit.skipped;
    let mut outcome =
        output.into_outcome(status, Some(code), exit.signal, applied.revision, report);
    outcome.checkpoint = checkpoint;
    Ok(outcome)
}

/// Finds which container instance answers and brings its copy in step. A
/// container that restarted between the two (its push is refused as stale)
/// is asked again once.
async fn connect_and_push<'db, S: Sql, T: Transport>(
    db: &'db S,
    vfs: &impl Fn() -> Vfs<'db, S>,
    link: &Link<'_, T>,
    sent: &mut Transfer,
) -> Result<i64, ComputerError> {
    let mut attempts = 0;
    loop {
        let status: Status = link
            .json("status", Method::Get, "/v1/status", None::<&()>)
            .await?;
        if status.protocol != PROTOCOL {
            return Err(ComputerError::Protocol {
                found: status.protocol,
                expected: PROTOCOL,
            });
        }
        match push(db, vfs, link, &status.instance, sent).await {
            Err(ComputerError::Refused {
                code: ErrorCode::StaleInstance,
                ..
            }) if attempts == 0 => attempts += 1,
            other => return other,
        }
    }
}

/// Asks the computer to stop exec `id` (its whole process group); the
/// command then ends `cancelled` and its changes come back as usual.
pub async fn cancel<T: Transport>(transport: &T, id: &str) -> Result<(), ComputerError> {
    cancel_exec(&Link::new(transport), id).await
}

async fn cancel_exec<T: Transport>(link: &Link<'_, T>, id: &str) -> Result<(), ComputerError> {
    link.bytes(
        "cancel",
        Method::Post,
        &format!("/v1/exec/{id}/cancel"),
        None,
    )
    .await
    .map(drop)
}

/// The computer's state as its owner reports it (stopped, starting,
/// running; its instance, times and idle deadline).
pub async fn state<T: Transport>(transport: &T) -> Result<ComputerState, ComputerError> {
    Link::new(transport)
        .json(
            "state",
            Method::Get,
            stead_sync::host::STATE_PATH,
            None::<&()>,
        )
        .await
}

/// Releases the computer now (a command running on it is lost); its state
/// afterwards.
pub async fn stop<T: Transport>(transport: &T) -> Result<ComputerState, ComputerError> {
    Link::new(transport)
        .json(
            "stop",
            Method::Post,
            stead_sync::host::STOP_PATH,
            None::<&()>,
        )
        .await
}

/// What the container's copy was last known to hold.
struct Synced {
    instance: String,
    acked: i64,
}

fn load(db: &impl Sql) -> Result<Option<Synced>, VfsError> {
    let row = db.query_row(
        "SELECT instance, acked FROM computer WHERE id = 1",
        params![],
    )?;
    let synced = row
        .map(|row| {
            Ok::<_, stead_sql::SqlError>(Synced {
                instance: row.text(0)?.to_string(),
                acked: row.int(1)?,
            })
        })
        .transpose()?;
    Ok(synced)
}

fn save(db: &impl Sql, instance: &str, acked: i64) -> Result<(), VfsError> {
    db.execute(
        "INSERT INTO computer (id, instance, acked) VALUES (1, ?, ?) \
         ON CONFLICT (id) DO UPDATE SET instance = excluded.instance, acked = excluded.acked",
        params![instance, acked],
    )?;
    Ok(())
}

fn forget(db: &impl Sql) -> Result<(), VfsError> {
    db.execute("DELETE FROM computer", params![])?;
    Ok(())
}

/// The workspace's ignore rules: `/.steadignore`, or the defaults.
fn ignore_rules<S: Sql>(vfs: &Vfs<'_, S>) -> Result<String, VfsError> {
    match vfs.read_file(&VPath::parse(stead_sync::ignore::IGNORE_FILE)?) {
        Ok(bytes) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
        Err(VfsError::NotFound { .. }) => Ok(stead_sync::ignore::DEFAULT_RULES.to_string()),
        Err(error) => Err(error),
    }
}

/// Brings the container's copy in step with the workspace; returns the
/// revision it now holds.
async fn push<'db, S: Sql, T: Transport>(
    db: &'db S,
    vfs: &impl Fn() -> Vfs<'db, S>,
    link: &Link<'_, T>,
    instance: &str,
    sent: &mut Transfer,
) -> Result<i64, ComputerError> {
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
    let body = link::json(&Push {
        instance: instance.to_string(),
        full,
        changes,
        ignore,
    });
    for _ in 0..2 {
        sent.manifest_bytes += body.bytes.len() as u64;
        let reply = link
            .bytes("push", Method::Post, "/v1/sync/apply", Some(body.clone()))
            .await?;
        let reply: ApplyReply =
            serde_json::from_slice(&reply).map_err(|e| ComputerError::Malformed {
                step: "push",
                reason: e.to_string(),
            })?;
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
    })
}

async fn send_chunks<T: Transport>(
    link: &Link<'_, T>,
    frames: Vec<u8>,
) -> Result<(), ComputerError> {
    link.bytes(
        "push",
        Method::Post,
        "/v1/sync/chunks",
        Some(link::frames(frames)),
    )
    .await
    .map(drop)
}

/// Output collected for the outcome, up to [`MAX_OUTPUT`] per stream.
struct Output {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    truncated: bool,
    encoding: OutputEncoding,
}

impl Output {
    fn new(encoding: OutputEncoding) -> Self {
        Output {
            stdout: Vec::new(),
            stderr: Vec::new(),
            truncated: false,
            encoding,
        }
    }

    fn keep(buffer: &mut Vec<u8>, data: &[u8], truncated: &mut bool) {
        let room = MAX_OUTPUT.saturating_sub(buffer.len());
        *truncated |= data.len() > room;
        buffer.extend_from_slice(&data[..data.len().min(room)]);
    }

    /// The exec outcome: output, how the command ended (`exit_code` `None`
    /// when it never finished), the workspace revision and what moved.
    fn into_outcome(
        self,
        status: ExecStatus,
        exit_code: Option<i32>,
        signal: Option<i32>,
        revision: i64,
        report: ComputerReport,
    ) -> ExecOutcome {
        ExecOutcome {
            backend: Backend::Computer,
            status,
            exit_code,
            signal,
            stdout: Captured::new(self.stdout, self.encoding),
            stderr: Captured::new(self.stderr, self.encoding),
            output_encoding: self.encoding,
            truncated: self.truncated,
            limit: None,
            revision,
            checkpoint: None,
            message: None,
            computer: Some(report),
        }
    }
}

/// Why an exec stream ended without an exit event.
struct Broken {
    reason: String,
    /// The container (or the way to it) is gone; otherwise it is alive
    /// and said why it could not report.
    computer_lost: bool,
}

impl Broken {
    fn lost(reason: impl Into<String>) -> Self {
        Broken {
            reason: reason.into(),
            computer_lost: true,
        }
    }
}

/// Runs the command, passing output on; `Err` when the stream ended before
/// the exit event.
async fn stream_exec<T: Transport>(
    link: &Link<'_, T>,
    spec: &ExecSpec,
    cancelled: &Cell<bool>,
    sink: &dyn OutputSink,
    output: &mut Output,
) -> Result<Exit, Broken> {
    let mut stream = link
        .stream("exec", "/v1/exec", spec)
        .await
        .map_err(|e| Broken::lost(e.to_string()))?;
    if cancelled.get() {
        // Cancelled while the request was on its way: the command runs now,
        // so it can be stopped (it reports `cancelled`).
        let _ = cancel_exec(link, &spec.id).await;
    }
    let mut pending: Vec<u8> = Vec::new();
    let b64 = base64::engine::general_purpose::STANDARD;
    while let Some(piece) = stream.next().await {
        pending.extend_from_slice(&piece.map_err(Broken::lost)?);
        while let Some(end) = pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            let event: ExecEvent = serde_json::from_slice(&line)
                .map_err(|e| Broken::lost(format!("bad event from the computer: {e}")))?;
            match event {
                ExecEvent::Stdout { data } => {
                    let data = b64.decode(data).map_err(|e| Broken::lost(e.to_string()))?;
                    sink.stdout(&data);
                    Output::keep(&mut output.stdout, &data, &mut output.truncated);
                }
                ExecEvent::Stderr { data } => {
                    let data = b64.decode(data).map_err(|e| Broken::lost(e.to_string()))?;
                    sink.stderr(&data);
                    Output::keep(&mut output.stderr, &data, &mut output.truncated);
                }
                ExecEvent::Exit(exit) => return Ok(exit),
                // The command ended but its changes could not be scanned:
                // they stay on the container's disk, unreported, so this
                // command's outcome is unknown, as when the stream breaks.
                ExecEvent::Error(error) => {
                    return Err(Broken {
                        reason: format!(
                            "the computer could not report the command's changes ({:?}): {}",
                            error.code, error.message
                        ),
                        computer_lost: false,
                    })
                }
            }
        }
    }
    Err(Broken::lost(
        "the output stream ended before the command did",
    ))
}

/// Fetches the content the workspace lacks, then applies every change in
/// one transaction.
async fn pull_and_apply<'db, S: Sql, T: Transport>(
    db: &'db S,
    vfs: &impl Fn() -> Vfs<'db, S>,
    link: &Link<'_, T>,
    (exec, before_apply): (&str, &dyn Fn() -> Result<Option<i64>, VfsError>),
    base: i64,
    changes: &[Change],
    received: &mut Transfer,
) -> Result<(stead_vfs::SyncOutcome, Option<i64>), ComputerError> {
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
                    Some(link::json(&request)),
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
        let checkpoint = match changes.is_empty() {
            true => None,
            false => before_apply()?,
        };
        let outcome = view.apply_sync(base, changes)?;
        Ok::<_, ComputerError>((before, outcome, checkpoint))
    }
    .await;
    vfs().abort_upload(staging)?;
    let (before, outcome, checkpoint) = staged?;
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
    Ok((outcome, checkpoint))
}
